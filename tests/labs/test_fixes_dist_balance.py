"""Token-balanced batching (playbook.labs.fixes.balance), tested directly without spawning ranks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from playbook.labs.fixes.balance import (
    TokenBalancedSampler,
    balance_by_tokens,
    imbalance,
    part_loads,
    split_evenly,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 500), min_size=1, max_size=60), st.integers(1, 6))
def test_lpt_is_a_partition_within_one_item_of_the_mean(lengths, parts):
    split = balance_by_tokens(lengths, parts)
    assert sorted(i for p in split for i in p) == list(range(len(lengths)))
    loads = part_loads(lengths, split)
    # LPT guarantee: the fullest part exceeds the mean by at most the largest item
    assert max(loads) <= np.mean(loads) + max(lengths) + 1e-9


def test_lpt_beats_a_count_split_on_long_tailed_lengths():
    rng = np.random.default_rng(3)
    worse = 0
    for _ in range(50):
        lengths = np.clip(rng.lognormal(3.5, 1.0, 16).round(), 4, 512)
        even = imbalance(part_loads(lengths, split_evenly(16, 4)))
        lpt = imbalance(part_loads(lengths, balance_by_tokens(lengths, 4)))
        worse += lpt > even + 1e-12
    assert worse == 0


def test_sampler_splits_the_same_global_batches_either_way():
    lengths = np.random.default_rng(0).integers(4, 300, 200)
    world = 4
    bal = [TokenBalancedSampler(lengths, 16, r, world, seed=5) for r in range(world)]
    cnt = [TokenBalancedSampler(lengths, 16, r, world, seed=5, balanced=False) for r in range(world)]
    for step, parts in enumerate(zip(*[iter(s) for s in bal], strict=True)):
        gb = bal[0].global_batches()[step]
        assert sorted(i for p in parts for i in p) == sorted(gb.tolist())
        assert sum(lengths[i] for p in parts for i in p) == bal[0].global_tokens(step)
    a = [sorted(i for s in bal for i in s.split(gb)[s.rank]) for gb in bal[0].global_batches()]
    b = [sorted(i for s in cnt for i in s.split(gb)[s.rank]) for gb in cnt[0].global_batches()]
    assert a == b  # same samples in every step; only their rank differs
    loads_bal = [imbalance([sum(lengths[i] for i in s.split(gb)[s.rank]) for s in bal])
                 for gb in bal[0].global_batches()]
    loads_cnt = [imbalance([sum(lengths[i] for i in s.split(gb)[s.rank]) for s in cnt])
                 for gb in cnt[0].global_batches()]
    assert np.median(loads_bal) < np.median(loads_cnt)


def test_sampler_reshuffles_per_epoch_and_validates():
    s = TokenBalancedSampler(range(1, 65), 8, 0, 2, seed=1)
    first = [b.tolist() for b in s.global_batches()]
    s.set_epoch(1)
    assert [b.tolist() for b in s.global_batches()] != first
    assert len(s) == 8
    with pytest.raises(ValueError):
        TokenBalancedSampler([1, 2], 1, 0, 2)
    with pytest.raises(ValueError):
        TokenBalancedSampler([1, 2], 2, 2, 2)
