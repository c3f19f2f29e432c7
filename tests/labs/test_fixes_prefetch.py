"""playbook.labs.fixes.prefetch: background prefetching, parallel reads, streaming shuffle, loader settings."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from playbook.labs.fixes import prefetch as pf


def test_thread_prefetcher_keeps_order_and_reiterates():
    pre = pf.ThreadPrefetcher(range(50), depth=3)
    assert list(pre) == list(range(50))
    assert list(pre) == list(range(50))  # a new pass each iter()
    assert len(pre) == 50


def test_thread_prefetcher_reraises_at_the_failing_position():
    def items():
        yield 1
        yield 2
        raise RuntimeError("decode failed")

    got = []
    with pytest.raises(RuntimeError, match="decode failed"):
        for x in pf.ThreadPrefetcher(items(), depth=4):
            got.append(x)
    assert got == [1, 2]


def test_thread_prefetcher_stops_its_thread_when_the_consumer_leaves():
    pre = pf.ThreadPrefetcher(iter(range(10**9)), depth=2, name="l1-test-prefetch")
    it = iter(pre)
    assert next(it) == 0
    it.close()  # leaving the loop early
    time.sleep(0.3)
    assert not any(t.name == "l1-test-prefetch" for t in threading.enumerate())


def test_thread_prefetcher_rejects_bad_depth():
    with pytest.raises(ValueError):
        pf.ThreadPrefetcher([], depth=0)


def test_parallel_map_is_ordered_and_concurrent():
    lock, live, peak = threading.Lock(), [0], [0]

    def slow_square(x):
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.02)
        with lock:
            live[0] -= 1
        return x * x

    assert list(pf.parallel_map(slow_square, range(24), threads=4)) == [x * x for x in range(24)]
    assert peak[0] >= 2  # reads overlapped
    assert peak[0] <= 4


class _Numbers:
    def __len__(self):
        return 37

    def __getitem__(self, i):
        return torch.tensor([float(i)]), torch.tensor(i)


def test_threaded_loader_covers_each_sample_once_and_is_deterministic():
    loader = pf.ThreadedLoader(_Numbers(), batch_size=5, threads=4, prefetch=2, seed=3)
    assert len(loader) == 7  # drop_last
    batches = list(loader)
    seen = torch.cat([y for _, y in batches]).tolist()
    assert len(seen) == 35 and len(set(seen)) == 35
    again = pf.ThreadedLoader(_Numbers(), batch_size=5, threads=2, prefetch=1, seed=3)
    assert torch.cat([y for _, y in again]).tolist() == seen  # same seed, same order, whatever the threads
    assert batches[0][0].shape == (5, 1)


def test_threaded_loader_keeps_a_short_last_batch_on_request():
    loader = pf.ThreadedLoader(_Numbers(), batch_size=5, shuffle=False, drop_last=False)
    sizes = [len(y) for _, y in loader]
    assert sizes == [5] * 7 + [2] and len(loader) == 8


def test_shuffle_buffer_streams_a_permutation_with_one_read_per_draw():
    reads = []

    def source():
        for i in range(100):
            reads.append(i)
            yield i

    out = []
    for x in pf.ShuffleBuffer(source(), size=10, seed=1):
        out.append((x, len(reads)))
    values = [x for x, _ in out]
    assert sorted(values) == list(range(100)) and values != list(range(100))
    # after the initial fill every emitted sample costs exactly one read (no bulk refills)
    assert [r for _, r in out[:90]] == list(range(11, 101))
    assert [x for x, _ in out] == [x for x in pf.ShuffleBuffer(range(100), size=10, seed=1)]


def test_batched_groups_and_drops_the_remainder():
    batches = list(pf.batched(((torch.tensor([i]), torch.tensor(i)) for i in range(7)), 3))
    assert len(batches) == 2 and batches[1][1].tolist() == [3, 4, 5]


def test_worker_budget_leaves_the_training_threads_their_cores():
    assert pf.worker_budget(cores=8, main_threads=2) == 6
    assert pf.worker_budget(cores=2, main_threads=2) == 1
    assert pf.worker_budget() >= 1


def test_dataloader_kwargs():
    assert pf.dataloader_kwargs(workers=0, pin_memory=False) == {"num_workers": 0, "pin_memory": False}
    kw = pf.dataloader_kwargs(workers=2, prefetch_factor=3, pin_memory=False)
    assert kw["persistent_workers"] is True and kw["prefetch_factor"] == 3
    assert kw["worker_init_fn"] is pf.single_thread_worker
    loader = torch.utils.data.DataLoader(_Numbers(), batch_size=4, **kw)
    assert sum(len(y) for _, y in loader) == 37
