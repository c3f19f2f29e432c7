"""playbook.labs.fixes.gc: frozen heap with raised thresholds, scheduled collections, restore on exit."""

from __future__ import annotations

import gc

import pytest

from playbook.labs.fixes.gc import ScheduledGC, gc_disabled, gc_tuned


def test_gc_tuned_freezes_and_restores():
    before = gc.get_threshold()
    keep = [[i] for i in range(1000)]
    with gc_tuned(threshold=(123_456, 7, 8)):
        assert gc.get_threshold() == (123_456, 7, 8)
        assert gc.get_freeze_count() >= len(keep)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_scheduled_gc_collects_only_on_schedule_and_restores():
    was = gc.isenabled()
    with ScheduledGC(every=3) as sgc:
        assert not gc.isenabled()
        spent = [sgc.step(i) for i in range(9)]
        assert [i for i, s in enumerate(spent) if s > 0] == [2, 5, 8]
        assert sgc.stats["collections"] == 3
    assert gc.isenabled() == was and gc.get_freeze_count() == 0
    with pytest.raises(ValueError):
        ScheduledGC(every=0)


def test_scheduled_collection_frees_cycles_that_automatic_gc_would():
    class Node:
        def __init__(self):
            self.me = self

    with ScheduledGC(every=1, freeze=False) as sgc:
        for _ in range(100):
            Node()
        before = sum(type(o) is Node for o in gc.get_objects())
        sgc.step(0)
        after = sum(type(o) is Node for o in gc.get_objects())
    assert before >= 100 and after == 0


def test_gc_disabled_restores():
    was = gc.isenabled()
    with gc_disabled():
        assert not gc.isenabled()
    assert gc.isenabled() == was
