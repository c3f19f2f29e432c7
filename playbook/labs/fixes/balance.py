"""Token-balanced batching: give every data-parallel rank the same amount of work per step.

With variable-length samples, a random split of the global batch gives one rank more tokens than the others; every
other rank then waits for it inside the gradient all-reduce (a *software* straggler that moves from rank to rank
with the data). Splitting each global batch by tokens instead of by sample count removes that wait without changing
what the step trains on: the same samples are in the step, only their rank differs.

    from playbook.labs.fixes.balance import TokenBalancedSampler

    sampler = TokenBalancedSampler(lengths, global_batch=64, rank=rank, world_size=world, seed=0)
    for step, indices in enumerate(sampler):      # this rank's share of global batch `step`
        batch = collate([dataset[i] for i in indices])
        loss_sum = token_losses(batch).sum()
        (loss_sum / sampler.global_tokens(step)).backward()   # normalise by the GLOBAL token count, see below

Convergence: ranks now hold different numbers of samples, so averaging per-rank *mean* losses (DDP's default,
which averages gradients over ranks) would weight a token by 1/(world × tokens on its rank). Normalise each rank's
summed loss by the global token count of the step (known to every rank without communication, or all-reduced)
and the gradient is exactly the random split's gradient of the token-mean loss: the loss curve does not change.

No torch import here: indices and lengths are plain Python / numpy.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence

import numpy as np


def balance_by_tokens(lengths: Sequence[int], n_parts: int, cost_power: float = 1.0) -> list[list[int]]:
    """Split sample positions 0..len-1 into `n_parts` lists with nearly equal summed cost (LPT greedy).

    Cost of a sample is length**cost_power (1: token-bound work such as MLPs; 2 approximates attention-bound work).
    Longest-processing-time-first: sort by cost, give each sample to the currently lightest part. The largest part
    is within 4/3 of the optimum (Graham 1969), and within one sample's cost of the mean. Each part keeps its
    samples in their original order. Parts may hold different numbers of samples.
    """
    if n_parts < 1:
        raise ValueError(f"n_parts must be >= 1, not {n_parts}")
    cost = np.asarray(lengths, dtype=float) ** cost_power
    order = np.argsort(-cost, kind="stable")
    heap = [(0.0, p) for p in range(n_parts)]
    parts: list[list[int]] = [[] for _ in range(n_parts)]
    for i in order:
        load, p = heapq.heappop(heap)
        parts[p].append(int(i))
        heapq.heappush(heap, (load + float(cost[i]), p))
    return [sorted(p) for p in parts]


def split_evenly(n: int, n_parts: int) -> list[list[int]]:
    """The usual split by sample count: consecutive slices of (nearly) equal size, ignoring lengths."""
    bounds = np.linspace(0, n, n_parts + 1).round().astype(int)
    return [list(range(bounds[p], bounds[p + 1])) for p in range(n_parts)]


def imbalance(loads: Sequence[float]) -> float:
    """max ÷ mean of per-part loads (1.0 = perfectly balanced; NaN when the mean is 0).

    In a synchronous data-parallel step every rank waits for the busiest, so 1 - 1/imbalance is the share of the
    step the average rank spends waiting when compute is proportional to load.
    """
    a = np.asarray(loads, dtype=float)
    m = a.mean() if a.size else 0.0
    return float(a.max() / m) if m > 0 else float("nan")


def part_loads(lengths: Sequence[int], parts: Sequence[Sequence[int]], cost_power: float = 1.0) -> list[float]:
    """Summed cost (length**cost_power) of each part."""
    cost = np.asarray(lengths, dtype=float) ** cost_power
    return [float(cost[list(p)].sum()) if len(p) else 0.0 for p in parts]


class TokenBalancedSampler:
    """Per-step indices for one rank: each global batch is drawn at random, then split across ranks by tokens.

    Every rank builds the same global batches from the same seed, so no communication is needed. With
    `balanced=False` the global batch is split by sample count instead (the usual DistributedSampler behaviour),
    which is the baseline the fix is measured against: both modes see exactly the same samples in each step.

    lengths: token count of every sample in the dataset. global_batch: samples per step over all ranks.
    epoch: reshuffles (set_epoch). drop_last: the last incomplete global batch is dropped.
    """

    def __init__(self, lengths: Sequence[int], global_batch: int, rank: int = 0, world_size: int = 1,
                 seed: int = 0, balanced: bool = True, cost_power: float = 1.0, drop_last: bool = True):
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside world size {world_size}")
        if global_batch < world_size:
            raise ValueError(f"global_batch {global_batch} smaller than world size {world_size}")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.global_batch, self.rank, self.world_size = int(global_batch), int(rank), int(world_size)
        self.seed, self.balanced, self.cost_power, self.drop_last = seed, balanced, cost_power, drop_last
        self.epoch = 0
        self._cache: tuple[int, list[np.ndarray]] | None = None

    def set_epoch(self, epoch: int) -> None:
        """A new shuffle of the dataset (same on every rank)."""
        self.epoch = int(epoch)

    def global_batches(self) -> list[np.ndarray]:
        """The dataset indices of every global batch of this epoch (identical on all ranks)."""
        if self._cache is not None and self._cache[0] == self.epoch:
            return self._cache[1]
        rng = np.random.default_rng([self.seed, self.epoch])
        perm = rng.permutation(len(self.lengths))
        n = len(perm) // self.global_batch if self.drop_last else -(-len(perm) // self.global_batch)
        batches = [perm[i * self.global_batch:(i + 1) * self.global_batch] for i in range(n)]
        self._cache = (self.epoch, batches)
        return batches

    def split(self, batch: np.ndarray) -> list[list[int]]:
        """Dataset indices per rank for one global batch."""
        if self.balanced:
            parts = balance_by_tokens(self.lengths[batch], self.world_size, self.cost_power)
        else:
            parts = split_evenly(len(batch), self.world_size)
        return [[int(batch[i]) for i in p] for p in parts]

    def global_tokens(self, step: int) -> int:
        """Total tokens of global batch `step` (the loss normaliser that keeps gradients split-independent)."""
        return int(self.lengths[self.global_batches()[step]].sum())

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.global_batches():
            yield self.split(batch)[self.rank]

    def __len__(self) -> int:
        return len(self.global_batches())
