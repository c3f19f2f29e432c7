"""Per-consumer queues, least-loaded dispatch, work stealing and sizing (playbook.labs.fixes.dispatch), in one process."""

from __future__ import annotations

import multiprocessing as mp
import queue
import threading
import time

import pytest

from playbook.labs.fixes.dispatch import QueueSet, littles_law_depth, plan_pipeline


def _blocks(fn, wait_s=0.3) -> bool:
    """True when fn() is still blocked after wait_s (it finishes in a daemon thread later)."""
    done = threading.Event()
    threading.Thread(target=lambda: (fn(), done.set()), daemon=True).start()
    return not done.wait(wait_s)


def test_shared_queue_fills_with_the_slow_consumers_items():
    qs = QueueSet(3, routing="round_robin", shared_capacity=3, ctx=mp.get_context("fork"))
    # consumers 1 and 2 take everything addressed to them at once; consumer 0 takes nothing (the slow one)
    for _ in range(6):
        c, _ = qs.put("x", producer=0)
        if c != 0:
            assert qs.get(c, timeout=1)[0] == "x"
    assert qs.depths() == [2, 0, 0]
    qs.put("x", producer=0)  # the 7th item goes to consumer 0 and takes the last shared slot
    assert qs.depths() == [3, 0, 0]
    # every slot now holds an item of the slow consumer: the next put (for a fast consumer!) blocks
    assert _blocks(lambda: qs.put("y", producer=0))
    qs.get(0, timeout=1)
    time.sleep(0.2)
    assert sum(qs.depths()) == 3


def test_least_loaded_sends_items_where_there_is_room():
    qs = QueueSet(3, depth=2, routing="least_loaded", ctx=mp.get_context("fork"))
    for _ in range(6):
        qs.put("x")
    assert qs.depths() == [2, 2, 2]
    assert _blocks(lambda: qs.put("late"))
    assert qs.get(1, timeout=1)[0] == "x"
    time.sleep(0.3)
    assert qs.depths()[1] == 2  # the blocked put went to the consumer that made room
    qs2 = QueueSet(2, depth=4, routing="least_loaded", ctx=mp.get_context("fork"))
    for _ in range(4):
        qs2.put("x")
    assert qs2.depths() == [2, 2]


def test_work_stealing_and_stop_markers():
    qs = QueueSet(2, depth=4, routing="round_robin", ctx=mp.get_context("fork"))
    qs.put("a", producer=0)  # → consumer 0
    qs.put("b", producer=0)  # → consumer 1
    qs.put("c", producer=0)  # → consumer 0
    assert qs.get(1, timeout=1)[0] == "b"
    item, _ = qs.get(1, steal=True, timeout=1)  # consumer 1 is idle: steals from consumer 0
    assert item in ("a", "c") and qs.depths() == [1, 0]
    with pytest.raises(queue.Empty):
        qs.get(1, timeout=0.1)
    qs.close()
    assert qs.get(0, timeout=1)[0] in ("a", "c")
    assert qs.get(0, timeout=1)[0] is None  # the stop marker is never stolen or counted
    assert qs.get(1, steal=True, timeout=1)[0] is None


def test_plan_from_measured_rates():
    plan = plan_pipeline([0.030] * 50, [0.160, 0.040, 0.040], n_producers=5)
    assert plan.demand == pytest.approx(1 / 0.16 + 2 / 0.04)
    assert plan.static_capacity == pytest.approx(3 / 0.16)  # what round-robin routing can reach at most
    assert plan.producers_needed == 2 and plan.bottleneck == "consumers"
    assert plan.capacity == pytest.approx(plan.demand)
    assert plan.depth == littles_law_depth(25.0, 0.06) == 2
    with pytest.raises(ValueError):
        plan_pipeline([], [0.1])
    with pytest.raises(ValueError):
        littles_law_depth(0, 1)
