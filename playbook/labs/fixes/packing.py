"""Less padding: length-bucketed batches, and sequence packing with a block-diagonal (per-document) attention mask.

Dynamic padding pads every sequence of a batch to the batch's longest; with long-tailed lengths most of the compute
goes to padding, and the rank that drew the longest sequence makes every other rank wait at the all-reduce.

Two fixes, two different side effects on what the model is trained on:

* `LengthBucketedSampler` puts sequences of similar length into the same step (sorting inside windows of
  `window` global batches). Padding almost vanishes and ranks get equal shapes, but batch *composition* changes:
  short and long sequences no longer share a step, so per-step loss and gradient statistics depend on the bucket.
  Correct it by keeping windows small (the sort is local), shuffling the order of the batches (done here), and
  normalising the loss by tokens so a step's weight does not depend on its bucket.
* `pack` concatenates whole documents into fixed rows of `row_len` tokens (first-fit decreasing); the mask from
  `playbook.labs.fixes.shapes.packed_attention_mask` lets a token attend only to tokens of its own document (and, causal, not to later ones),
  and positions restart at 0 in each document, so every token sees exactly what it would see in a padded batch:
  per-token outputs are identical. What changes is *loss weighting*: a mean over the tokens of a packed row weights
  each document by its length, while the usual padded loss (mean per sequence, then mean over sequences) weights
  documents equally. `token_weights(doc_ids, "sequence")` restores per-sequence weighting; "token" gives the
  token-mean (then padding and packing agree without any correction).

    from playbook.labs.fixes.packing import pack, token_weights
    from playbook.labs.fixes.shapes import packed_attention_mask
    pb = pack(docs, row_len=512)                      # docs: list of 1-D LongTensors
    mask = packed_attention_mask(pb.doc_ids)          # bool [rows, 1, L, L], True = may attend
    logits = model(pb.tokens, positions=pb.positions, attn_mask=mask)
    loss = (token_loss(logits, targets) * token_weights(pb.doc_ids, "sequence")).sum()

Memory: the dense mask is rows × L × L booleans (16 MiB for 64 rows of 512); with flash-attention kernels use the
varlen form (cumulative sequence lengths, `pb.cu_seqlens()`) instead of a dense mask.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from playbook.labs.fixes.shapes import PAD_DOC, padding_waste


def positions_from_doc_ids(doc_ids: torch.Tensor) -> torch.Tensor:
    """Position of each token inside its document (restarting at 0 at every document start; 0 on padding)."""
    rows, width = doc_ids.shape
    idx = torch.arange(width, device=doc_ids.device).expand(rows, width)
    start = torch.ones_like(doc_ids, dtype=torch.bool)
    start[:, 1:] = doc_ids[:, 1:] != doc_ids[:, :-1]
    first = torch.where(start, idx, torch.zeros_like(idx)).cummax(dim=1).values
    return torch.where(doc_ids == PAD_DOC, torch.zeros_like(idx), idx - first)


# --------------------------------------------------------------------------------------------------------- bucketing
class LengthBucketedSampler:
    """Per-step indices for one rank, with sequences of similar length batched together.

    The dataset is shuffled, cut into windows of `window` global batches, each window sorted by length and cut into
    global batches of `batch_size × world_size`; the batches are shuffled, and each global batch (sorted by length)
    is dealt out like cards, rank r taking positions r, r + world, ... (similar lengths and nearly equal tokens on
    every rank → similar padded shapes → no rank waits for another).
    `window=1` gives random global batches (no bucketing; only the dealing inside a batch follows length); a
    window as large as the dataset is a global sort.
    Every sample is seen once per epoch either way; only which samples share a step changes.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, rank: int = 0, world_size: int = 1,
                 seed: int = 0, window: int = 32, drop_last: bool = True):
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside world size {world_size}")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size, self.rank, self.world_size = int(batch_size), int(rank), int(world_size)
        self.seed, self.window, self.drop_last = seed, max(1, int(window)), drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def global_batches(self) -> list[np.ndarray]:
        """Dataset indices of every global batch of this epoch (identical on all ranks)."""
        rng = np.random.default_rng([self.seed, self.epoch])
        perm = rng.permutation(len(self.lengths))
        gb = self.batch_size * self.world_size
        span = gb * self.window
        batches = []
        for w in range(0, len(perm), span):
            chunk = perm[w:w + span]
            chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            batches += [chunk[i:i + gb] for i in range(0, len(chunk), gb)]
        if self.drop_last:
            batches = [b for b in batches if len(b) == gb]
        order = rng.permutation(len(batches))
        return [batches[i] for i in order]

    def split(self, batch: np.ndarray) -> list[list[int]]:
        """Dataset indices per rank for one global batch (dealt out in length order)."""
        return [[int(i) for i in batch[r::self.world_size]] for r in range(self.world_size)]

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.global_batches():
            yield self.split(batch)[self.rank]

    def __len__(self) -> int:
        return len(self.global_batches())


def batch_composition(batches: Sequence[Sequence[int]], lengths: Sequence[int]) -> pd.DataFrame:
    """One row per batch: n, tokens, mean_len, max_len, padded_tokens (n × max) and waste (0-1 padding share)."""
    lens = np.asarray(lengths)
    rows = []
    for b, idx in enumerate(batches):
        ls = lens[list(idx)]
        rows.append({"batch": b, "n": len(ls), "tokens": int(ls.sum()), "mean_len": float(ls.mean()),
                     "max_len": int(ls.max()), "padded_tokens": int(len(ls) * ls.max()),
                     "waste": padding_waste(ls)})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------------------- packing
@dataclass
class PackedBatch:
    """Documents packed into rows: tokens, doc_ids (PAD_DOC on padding) and positions, each [rows, row_len].

    doc_ids index `docs` (the input order), so `unpack` can return per-document outputs in that order.
    """

    tokens: torch.Tensor
    doc_ids: torch.Tensor
    positions: torch.Tensor
    lengths: list[int]
    rows: list[list[int]]

    @property
    def n_tokens(self) -> int:
        return int((self.doc_ids != PAD_DOC).sum())

    @property
    def efficiency(self) -> float:
        """Share of row slots holding real tokens (0-1)."""
        return self.n_tokens / max(1, self.doc_ids.numel())

    def cu_seqlens(self) -> torch.Tensor:
        """Cumulative document lengths in row order (int32 [docs + 1]) for varlen flash-attention kernels, which
        take the real tokens concatenated without padding (`tokens[doc_ids != PAD_DOC]`)."""
        lens = [self.lengths[d] for row in self.rows for d in row]
        return torch.tensor([0, *np.cumsum(lens).tolist()], dtype=torch.int32)


def plan_packing(lengths: Sequence[int], row_len: int) -> list[list[int]]:
    """Which documents go into which row: first-fit decreasing bin packing; rows keep input order inside.

    A document longer than `row_len` raises ValueError (split it beforehand: its chunks can no longer attend to
    each other, which is a modelling choice the caller has to make).
    """
    lens = np.asarray(lengths, dtype=np.int64)
    if lens.size and lens.max() > row_len:
        raise ValueError(f"a document of {int(lens.max())} tokens does not fit a row of {row_len}")
    rows: list[list[int]] = []
    free: list[int] = []
    for i in np.argsort(-lens, kind="stable"):
        need = int(lens[i])
        for r, space in enumerate(free):
            if space >= need:
                rows[r].append(int(i))
                free[r] -= need
                break
        else:
            rows.append([int(i)])
            free.append(row_len - need)
    return [sorted(r) for r in rows]


def pack(docs: Sequence[torch.Tensor], row_len: int, pad_id: int = 0,
         rows: list[list[int]] | None = None) -> PackedBatch:
    """Pack 1-D token tensors into rows of `row_len` (plan from `plan_packing` unless `rows` is given)."""
    lengths = [len(d) for d in docs]
    rows = plan_packing(lengths, row_len) if rows is None else rows
    tokens = torch.full((len(rows), row_len), pad_id, dtype=torch.long)
    doc_ids = torch.full((len(rows), row_len), PAD_DOC, dtype=torch.long)
    for r, members in enumerate(rows):
        at = 0
        for d in members:
            n = lengths[d]
            tokens[r, at:at + n] = docs[d]
            doc_ids[r, at:at + n] = d
            at += n
    return PackedBatch(tokens, doc_ids, positions_from_doc_ids(doc_ids), lengths, rows)


def pack_balanced(lengths: Sequence[int], n_parts: int, row_len: int) -> list[list[list[int]]]:
    """Pack one global batch for `n_parts` data-parallel ranks so that every rank gets the SAME number of rows.

    Documents are first split across ranks by tokens (LPT, playbook.labs.fixes.balance), then each rank's documents go
    into R rows of `row_len` by first-fit decreasing, with R = the fewest rows that hold the fullest rank (grown
    by one until every rank's documents fit). Equal row counts mean equal compute per rank: nobody waits at the
    all-reduce for a rank that got one row more. Returns, per rank, its rows as lists of indices into `lengths`.
    """
    from playbook.labs.fixes.balance import balance_by_tokens

    lens = np.asarray(lengths, dtype=np.int64)
    if lens.size and lens.max() > row_len:
        raise ValueError(f"a document of {int(lens.max())} tokens does not fit a row of {row_len}")
    parts = balance_by_tokens(lens, n_parts)
    n_rows = max(1, max(-(-int(lens[p].sum()) // row_len) for p in parts))
    while True:
        packed = [_first_fit(lens, p, n_rows, row_len) for p in parts]
        if all(rows is not None for rows in packed):
            return packed
        n_rows += 1


def _first_fit(lens: np.ndarray, members: list[int], n_rows: int, row_len: int) -> list[list[int]] | None:
    """Members into exactly `n_rows` rows (first-fit decreasing); None when they do not fit."""
    rows: list[list[int]] = [[] for _ in range(n_rows)]
    free = [row_len] * n_rows
    for i in sorted(members, key=lambda m: -lens[m]):
        for r in range(n_rows):
            if free[r] >= lens[i]:
                rows[r].append(int(i))
                free[r] -= int(lens[i])
                break
        else:
            return None
    return [sorted(r) for r in rows]


def next_token_targets(tokens: torch.Tensor, doc_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(targets, valid) for causal LM training on padded or packed rows: the target of a token is the next token
    of the SAME document; a document's last token (and padding) has none (`valid` False). Shifting a packed row
    naively would train each document's last token to predict the next document's first token."""
    targets = torch.zeros_like(tokens)
    targets[:, :-1] = tokens[:, 1:]
    valid = torch.zeros_like(doc_ids, dtype=torch.bool)
    valid[:, :-1] = (doc_ids[:, :-1] == doc_ids[:, 1:]) & (doc_ids[:, :-1] != PAD_DOC)
    return targets, valid


def unpack(values: torch.Tensor, doc_ids: torch.Tensor, n_docs: int | None = None) -> list[torch.Tensor]:
    """Per-document slices of `values` [rows, L, ...] in document-id order (works for padded and packed)."""
    n = int(doc_ids.max()) + 1 if n_docs is None else n_docs
    flat_ids = doc_ids.flatten()
    flat = values.reshape(flat_ids.numel(), *values.shape[2:])
    return [flat[flat_ids == d] for d in range(n)]


def token_weights(doc_ids: torch.Tensor, mode: str = "token", valid: torch.Tensor | None = None,
                  n_docs: int | None = None, n_tokens: int | None = None) -> torch.Tensor:
    """Per-token loss weights (0 on padding and where `valid` is False) summing to 1: `(token_loss * w).sum()`.

    mode "token": every counted token weighs 1/n_tokens (token-mean loss; the same for padded and packed batches).
    mode "sequence": a token of document d weighs 1/(n_docs × counted tokens of d) (mean per sequence, then mean
    over sequences: what a padded loss `(loss * mask).sum(1) / mask.sum(1)` averaged over the batch computes).
    valid: which positions carry a loss (e.g. from `next_token_targets`); default every real token. Pass `n_docs`
    / `n_tokens` as GLOBAL counts (all ranks) in data-parallel training so the weights sum to 1 over the step.
    """
    counted = doc_ids != PAD_DOC if valid is None else valid & (doc_ids != PAD_DOC)
    if mode == "token":
        total = int(counted.sum()) if n_tokens is None else int(n_tokens)
        return counted.to(torch.float32) / max(1, total)
    if mode == "sequence":
        ids = torch.where(counted, doc_ids, torch.zeros_like(doc_ids))
        size = int(doc_ids.max()) + 1 if doc_ids.numel() else 1
        counts = torch.bincount(ids[counted], minlength=max(1, size)).to(torch.float32)
        docs = int((counts > 0).sum()) if n_docs is None else int(n_docs)
        w = 1.0 / (counts[ids].clamp(min=1) * max(1, docs))
        return torch.where(counted, w, torch.zeros_like(w))
    raise ValueError(f"mode must be 'token' or 'sequence', not {mode!r}")


def document_weight_share(doc_ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Total loss weight each document receives (index = doc id): shows how a weighting treats long documents."""
    real = doc_ids != PAD_DOC
    size = int(doc_ids[real].max()) + 1 if real.any() else 0
    return torch.zeros(size).index_add_(0, doc_ids[real], weights[real].to(torch.float32))
