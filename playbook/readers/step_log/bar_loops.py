"""Which tqdm bar is the training loop: a log shows several (`Loading checkpoint shards: 100%|##| 2/2`, datasets'
`Map: 100%|##| 1000/1000`, the trainer's own bar), and a step series of all of them at once mixes their counts and
clocks (a bar of 2 loaded shards read as the training's step 2, its elapsed clock differenced against step 10's).

A bar's loop is named by its description, the text before its `NN%|...|` (digits as `#`: `Epoch 3:` and `Epoch 4:`
are one loop, so is ultralytics' `1/100  3.77G  1.234 ...`). tqdm redraws a bar on a clock (every `mininterval`,
0.1 s by default, or every `miniters`), so the loop redrawn most is the one the run spends its time in: its records
are the steps, the other loops' are dropped (a tie goes to the loop of the larger total). Evaluation bars are not
records and take no part: a bar inside an evaluation section is the evaluation's (in_eval_section).

Only while its iterations are faster than that clock: a slower loop is redrawn once an iteration (a training at
2 s/it, 50 redraws in 100 s, against 300 of a 30 s tokenizer at 166 it/s). The time a loop's elapsed clocks
(`[01:40<...`) add up to decides first; the redraws between loops of about as much time (an outer epoch bar's
clock runs with its inner batch bar's) or when no bar shows one.
"""

from __future__ import annotations

import re
from array import array

import numpy as np

FIRST_KIND = 16  # kind codes of bar loops (StepLines.kind: 0 position, 1 keyword, 2 other progress bars)
SPENT_TIE = 0.8  # of the most time a loop's clocks show: as much (nested bars' clocks run together), redraws decide
MAX_LOOPS = 100  # loops told apart; later descriptions share the last code (int8 kinds)
_BAR = re.compile(r"\s*\d{1,3}%\s*\|[^|\n]{0,400}\|\s*$")
_DIGITS = re.compile(r"\d+")
_COUNT = re.compile(r"(\d+)/(\d+)")
# a description a training loop's bar may have (the Trainer's has none): `Epoch 3`, `Training`, `train`, `Steps`
_TRAINING = re.compile(r"^$|\b(?:train\w*|epochs?|steps?|iter\w*|batch\w*)\b")
# the bars of a run's setup, redrawn or not (transformers' `Loading checkpoint shards`, huggingface_hub's `Fetching 4
# files` / `Downloading ...`, datasets' `Map`, `Filter`, `Generating train split`, `Resolving data files`)
_SETUP = re.compile(r"^(?:loading checkpoint shards|loading (?:dataset )?shards|fetching # files|downloading|"
                    r"resolving data files|generating \w+ split|map|filter|tokeniz\w*|running tokenizer)\b")
_ELAPSED = re.compile(r"(?:\[\s*|\s)(?:(\d{1,4}):)?(\d{1,4}):(\d\d)\s*(?:<|•|,)")  # `[01:40<`, `0:01:40 •`


class BarLoops:
    """Kind codes for the bars of a file by their loop, and the loop whose records are the steps."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.totals: dict[int, int] = {}  # kind -> the largest total its bars showed
        self.clock: dict[tuple, int] = {}  # (kind, rank) -> the elapsed clock its last bar on the rank showed (s)
        self.rank = -1  # the rank of the line being read (set by the step scanner)
        self.spent: dict[tuple, int] = {}  # (kind, rank) -> the seconds its clocks went forward, all bars together
        self.most: dict[int, int] = {}  # kind -> the most seconds its clocks went forward on one rank
        self.shown: dict[int, int] = {}  # kind -> its bar lines
        self.done: set[int] = set()  # kinds whose first bar line showed the bar at its end (`2/2`)
        self.setups: set[int] = set()  # kinds described as a setup loop's (_SETUP)

    def kind(self, head: str, total: int | None, bar: str = "") -> int:
        """The kind code of a bar printed after `head` (the line's text before its `i/N`), of total `total`, `bar`
        the text from its `i/N` on."""
        key = _DIGITS.sub("#", _BAR.sub("", head[-400:])).strip().rstrip(":").strip().lower()
        code = self.codes.get(key)
        if code is None:
            code = self.codes[key] = FIRST_KIND + min(len(self.codes), MAX_LOOPS - 1)
            if _SETUP.match(key):
                self.setups.add(code)
        self.totals[code] = max(self.totals.get(code, 0), total or 0)
        self.shown[code] = self.shown.get(code, 0) + 1
        if self.shown[code] == 1 and (m := _COUNT.match(bar)) and m[1] == m[2] and not _TRAINING.search(key):
            self.done.add(code)
        if (m := _ELAPSED.search(bar[:80])):  # a bar that starts again (the next epoch's) restarts its clock
            now = int(m[1] or 0) * 3600 + int(m[2]) * 60 + int(m[3])
            key = (code, self.rank)  # each rank's bars on their own clock; the loop's time is its longest rank's
            last = self.clock.get(key, 0)
            self.spent[key] = self.spent.get(key, 0) + (now - last if now >= last else now)
            self.clock[key] = now
            self.most[code] = max(self.most.get(code, 0), self.spent[key])
        return code

    def setup(self, kind: int) -> bool:
        """Whether bars of kind `kind` are a setup loop's: described as one (_SETUP), or so far one bar shown once,
        at its end, naming no training (keep)."""
        return kind in self.setups or (kind in self.done and self.shown[kind] == 1)

    def keep(self, kind: np.ndarray, timed: np.ndarray) -> np.ndarray | None:
        """Which records to keep (a mask over `kind`), or None when all are kept. `timed`: the records that state
        a time or a rate: a bar loop timing fewer records than the step lines that are no bars' (a checkpoint's
        shard bar above mmengine's `Epoch(train) [1][10/500] time: 0.5`, tacotron2's `Train loss 0 ... 5.71s/it`)
        is no loop of theirs either; nor is a bar shown once, at its end, whose description names no training (a
        checkpoint's `Loading checkpoint shards: 100%|##| 2/2 [00:03<00:00, 1.52s/it]` above a cProfile table or an
        NCCL log: a setup step, no series of steps; the Trainer's bar has no description, its last line stays), nor
        a setup loop's bars redrawn (`Loading checkpoint shards` of a 30-shard model: 30 redraws, 5 s each)."""
        other = kind < FIRST_KIND
        lone = np.isin(kind, [k for k in self.done | self.setups if self.setup(k)])
        bars = ~other & ~lone
        loops, counts = np.unique(kind[bars & timed], return_counts=True)
        if not len(loops):
            return ~lone if lone.any() else None
        most = max(self.most.get(k, 0) for k in loops.tolist())  # an outer epoch bar's clock ties its inner's
        count, main = max(((c, k) for c, k in zip(counts.tolist(), loops.tolist(), strict=True)
                           if self.most.get(k, 0) >= SPENT_TIE * most), key=lambda c: (c[0], self.totals.get(c[1], 0)))
        if int((timed & other).sum()) > count:
            return other
        if len(np.unique(kind[bars])) < 2:
            return ~lone if lone.any() else None
        return other | (kind == main)


def timed_records(lines) -> np.ndarray:
    """Which records of a StepLines state a time or a rate."""
    timed = np.zeros(len(lines.kind), dtype=bool)
    for name, role in lines.field_role.items():
        if role[0] in ("dur", "rate"):
            timed |= np.isfinite(lines._column(name))
    return timed


def in_eval_section(sections: dict, c, rank: int) -> bool:
    """Whether a counter inside `rank`'s open evaluation section (`sections`: rank -> the total of the section's
    first bar, None before it) is the evaluation's: a progress bar without a keyword, and with the total of the
    section's first bar (a bar of another total is training again, and closes the section)."""
    if c.keyword or not c.progress:
        return False
    total = sections[rank]
    if total is None or total == c.n:
        sections[rank] = c.n
        return True
    del sections[rank]
    return False


def drop_records(lines, keep: np.ndarray) -> None:
    """Keep only the records `keep` marks in a StepLines' per-record columns (arrays padded lazily: each column's
    own length is cut the same way)."""
    for name in ("step", "rank", "time", "line", "keyword", "kind", "pos"):
        old = getattr(lines, name)
        setattr(lines, name, array(old.typecode, np.frombuffer(old, dtype=_DTYPE[old.typecode])[keep[:len(old)]]))
    for store in (lines.fields, lines.avg_cols):
        for name, col in store.items():
            store[name] = array("d", np.frombuffer(col, dtype=np.float64)[keep[:len(col)]]) if len(col) else col


_DTYPE = {"q": np.int64, "b": np.int8, "d": np.float64}
