"""Batch shapes: bucket lengths, right-padding, the padding mask and how much of a padded batch is padding.

One definition of each, shared by training (playbook.labs.fixes.compile's BucketPadder, playbook.labs.fixes.packing) and
serving (playbook.labs.fixes.serving_parity):

    from playbook.labs.fixes.shapes import bucket_length, pad_batch, padded_attention_mask, padding_waste
    L = bucket_length(longest, [32, 64, 128], strict=True)   # serving: an oversize request is an error
    tokens, lengths = pad_batch(seqs, L)                     # [B, L] int64, [B]
    mask = padded_attention_mask(lengths, L)                 # bool [B, 1, L, L], True = may attend
    padding_waste(lengths, L)                                # share of the B × L positions that are padding

Masks are boolean with True = "may attend" (torch.nn.functional.scaled_dot_product_attention's convention). A
padded batch is a packed batch with one document per row, so both share `packed_attention_mask`'s rule. torch is
imported inside the functions (bucketing and waste need none).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from playbook.core.errors import InputError

PAD_DOC = -1  # doc id of padding positions


def pow2_buckets(max_len: int, min_len: int = 16) -> list[int]:
    """Sequence-length buckets min_len, 2·min_len, ... up to and including max_len (tokens)."""
    if min_len < 1 or max_len < min_len:
        raise InputError(f"buckets: need 1 ≤ min_len ≤ max_len, got min_len={min_len}, max_len={max_len}")
    out, b = [], min_len
    while b < max_len:
        out.append(b)
        b *= 2
    out.append(max_len)
    return out


def even_buckets(max_len: int, count: int = 4, multiple: int = 8) -> list[int]:
    """`count` bucket lengths evenly spaced up to `max_len`, each rounded up to a multiple of `multiple`."""
    if max_len < 1 or count < 1 or multiple < 1:
        raise InputError(f"buckets: max_len, count and multiple must be >= 1, got {max_len}, {count}, {multiple}")
    out = sorted({-(-round(max_len * (i + 1) / count) // multiple) * multiple for i in range(count)})
    return out


def bucket_length(n: int, buckets: Sequence[int], strict: bool = False) -> int:
    """The smallest bucket ≥ n tokens. Beyond the largest bucket: that bucket when not `strict` (training: the
    caller truncates), an InputError when `strict` (serving rejects a request, it never cuts one)."""
    ordered = sorted(int(b) for b in buckets)
    if not ordered:
        raise ValueError("need at least one bucket")
    if n > ordered[-1] and strict:
        raise InputError(f"request of {n} tokens exceeds the largest bucket ({ordered[-1]} tokens)")
    return ordered[min(bisect.bisect_left(ordered, n), len(ordered) - 1)]


def padding_waste(lengths: Iterable[int], padded_to: int | Iterable[int] | None = None) -> float:
    """Share of computed positions that are padding (0-1): 1 − Σ real tokens / Σ padded positions.

    `padded_to`: one padded length per sequence, or one width for all (default: the longest). A sequence longer
    than its padded length was truncated (all its positions are real). nan for an empty batch."""
    real = np.asarray(list(lengths), dtype=float)
    if real.size == 0:
        return float("nan")
    if padded_to is None:
        padded = np.full(real.size, real.max())
    elif np.ndim(padded_to) == 0:
        padded = np.full(real.size, float(padded_to))  # type: ignore[arg-type]
    else:
        padded = np.asarray(list(padded_to), dtype=float)  # type: ignore[arg-type]
        if padded.size != real.size:
            raise ValueError(f"{real.size} lengths but {padded.size} padded lengths")
    total = padded.sum()
    return float(1.0 - np.minimum(real, padded).sum() / total) if total > 0 else float("nan")


def pad_batch(seqs: Sequence[Any], length: int | None = None, pad_id: int = 0, truncate: bool = False):
    """(tokens [B, L] int64, lengths [B]) from 1-D token sequences, right-padded with `pad_id` to `length`
    (default: the longest). A longer sequence is cut to `length` when `truncate`, else an InputError."""
    import torch

    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    longest = int(lengths.max()) if len(seqs) else 0
    L = longest if length is None else int(length)
    if longest > L and not truncate:
        raise InputError(f"pad_batch: a sequence of {longest} tokens does not fit length {L}")
    lengths = lengths.clamp(max=L)
    out = torch.full((len(seqs), L), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : int(lengths[i])] = torch.as_tensor(s)[:L]
    return out, lengths


def collate_padded(samples: Sequence[tuple[Any, Any]], length: int | None = None):
    """A collate_fn: (tokens [B, L], labels [B]) from (token sequence, label) samples, padded with 0 (or cut) to
    `length` (default: the batch's longest)."""
    import torch

    seqs, labels = zip(*samples, strict=True)
    tokens, _ = pad_batch(seqs, length, truncate=True)
    return tokens, torch.stack(list(labels))


def padded_doc_ids(lengths, length: int):
    """Doc ids [B, L] of a right-padded batch: the row index on real tokens, PAD_DOC on padding."""
    import torch

    lengths = torch.as_tensor(lengths)
    rows = torch.arange(len(lengths))[:, None].expand(-1, length)
    return torch.where(torch.arange(length)[None] < lengths[:, None], rows, PAD_DOC)


def packed_attention_mask(doc_ids, causal: bool = True):
    """Block-diagonal boolean mask [rows, 1, L, L] (True = may attend): same document only, and k ≤ q if causal.

    Works for padded batches too (doc ids from `padded_doc_ids`). A padding position attends to itself only, so
    no row of the mask is empty (an empty row makes softmax return NaN).
    """
    import torch

    same = doc_ids[:, :, None] == doc_ids[:, None, :]
    pad = doc_ids == PAD_DOC
    width = doc_ids.shape[1]
    eye = torch.eye(width, dtype=torch.bool, device=doc_ids.device)
    mask = same & ~pad[:, :, None]
    if causal:
        mask &= torch.ones(width, width, dtype=torch.bool, device=doc_ids.device).tril()
    mask |= eye & pad[:, :, None]
    return mask[:, None, :, :]


def padded_attention_mask(lengths, length: int, causal: bool = True):
    """Bool mask [B, 1, L, L] of a right-padded batch: a query attends the real tokens of its row (earlier ones if
    causal); `packed_attention_mask` with one document per row."""
    return packed_attention_mask(padded_doc_ids(lengths, length), causal)


def padded_inputs(seqs: Sequence[Any], length: int | None = None, batch_size: int | None = None, device=None):
    """(tokens, mask, lengths) of a padded batch on `device`; `batch_size` also pads the batch dimension with
    one-token dummy rows (a fixed compiled batch shape)."""
    if batch_size is not None and len(seqs) < batch_size:
        seqs = list(seqs) + [seqs[0][:1]] * (batch_size - len(seqs))
    tokens, lengths = pad_batch(seqs, length)
    mask = padded_attention_mask(lengths, tokens.shape[1])
    return tokens.to(device), mask.to(device), lengths
