"""Step-log key words abbreviated by dropping their vowels (readers/step_log/vocab.py reads a key by its words):
wav2letter++'s `bch(ms)` (the batch's time), `smp(ms)` (the wait for the next sample); `stp`, `btch`, `itr`, `smpl`
alike. An abbreviation keeps the word's first letter, then consonants only, in the word's order: a vowel-less word
of 3 to 5 letters that is such a subsequence of exactly one of the nouns below reads as that noun. `fwd` / `bwd`
(forward, backward) are known words already; `bs`, `lr` are too short to tell; `bsz`, `tps`, `wps`, `std` are
subsequences of none of the nouns and stay what they are."""

from __future__ import annotations

import re

# the nouns of a step's time and of its input, the words an abbreviation may stand for
NOUNS = ("batch", "step", "iter", "sample")
_VOWELS = frozenset("aeiou")
_WORD = re.compile(r"[a-z]+")


def _subsequence(short: str, word: str) -> bool:
    letters = iter(word)
    return all(ch in letters for ch in short)


def noun(word: str) -> str | None:
    """The noun a lower-case `word` abbreviates by dropping its vowels, or None."""
    if not 3 <= len(word) <= 5 or word in NOUNS or _VOWELS & set(word[1:]) or not _WORD.fullmatch(word):
        return None
    found = [n for n in NOUNS if n[0] == word[0] and _subsequence(word, n)]
    return found[0] if len(found) == 1 else None


def unabbreviate(key: str) -> str:
    """A snake-case key with each vowel-dropped word spelled out: `bch` -> `batch`, `smp_ms` -> `sample_ms`."""
    if not key:
        return key
    words = key.split("_")
    return "_".join(noun(w) or w for w in words)
