"""StepTimer, timed() and EventLog on CPU; the CUDA-event path against a fake event class (no device)."""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest

from playbook.analysis.step_times import phase_breakdown
from playbook.model import schema
from playbook.probes.event_log import EventLog, _is_recompile
from playbook.probes.loader import timed
from playbook.probes.step_timer import StepTimer


def slow_iter(n: int, wait_s: float):
    for i in range(n):
        time.sleep(wait_s)
        yield i


def test_steps_and_phases_on_cpu():
    timer = StepTimer(host="h", rank=3, cuda=False)
    assert not timer.cuda
    for i in range(4):
        with timer.step(i, tokens=128):
            with timer.phase("fwd"):
                time.sleep(0.004)
            with timer.phase("bwd"):
                time.sleep(0.006)
    df = timer.frame()
    assert list(df.columns) == list(schema.STEP_COLUMNS)
    assert str(df["time"].dtype) == "datetime64[ns, UTC]"
    assert (df["host"] == "h").all() and (df["rank"] == 3).all()
    steps = df[df["phase"] == "step"].set_index("step")
    assert list(steps.index) == [0, 1, 2, 3]
    assert (steps["tokens"] == 128).all()
    assert df[df["phase"] != "step"]["tokens"].isna().all()
    for i, g in df.groupby("step"):
        parts = g[g["phase"] != "step"]
        assert list(parts["phase"]) == ["fwd", "bwd"]
        assert parts["duration_s"].sum() <= steps.loc[i, "duration_s"]
        assert (parts["time"] >= steps.loc[i, "time"]).all()
        fwd, bwd = parts["duration_s"]
        assert fwd >= 0.004 and bwd >= 0.006
    assert timer.steps_done == 4
    # fwd and bwd are compute phases: busy is their share of the step times the frame holds (not a timing bound)
    compute = df.loc[df["phase"].isin(["fwd", "bwd"]), "duration_s"].sum()
    assert timer.busy_fraction() == pytest.approx(compute / steps["duration_s"].sum(), rel=1e-6)


def test_timed_records_data_waits_as_the_next_steps_phase():
    timer = StepTimer(cuda=False)
    loader = timed(slow_iter(5, 0.02), timer)
    for i, _ in enumerate(loader):
        with timer.step(i):
            with timer.phase("fwd"):
                time.sleep(0.002)
    df = timer.frame()
    data = df[df["phase"] == "data"].set_index("step")["duration_s"]
    steps = df[df["phase"] == "step"].set_index("step")
    assert list(data.index) == [0, 1, 2, 3, 4]
    assert (data >= 0.018).all()
    # the step row starts at its data wait and covers it: data + fwd <= step
    for i in range(5):
        g = df[(df["step"] == i) & (df["phase"] != "step")]
        assert g["duration_s"].sum() <= steps.loc[i, "duration_s"] + 1e-9
        assert steps.loc[i, "time"] == df[(df["step"] == i) & (df["phase"] == "data")]["time"].iloc[0]
    share = phase_breakdown(df).set_index("phase")["share"]
    assert share["data"] > 0.8  # a starved loop: the wait dominates


def test_timed_inside_a_step_and_len_preserved():
    timer = StepTimer(cuda=False)
    loader = timed([1, 2, 3], timer, phase="h2d")
    assert len(loader) == 3
    it = iter(loader)
    with timer.step(0):
        next(it)
    with timer.step(1):
        next(it)
        next(it)
    with pytest.raises(StopIteration):
        next(it)
    df = timer.frame()
    assert df[df["phase"] == "h2d"]["step"].tolist() == [0, 1, 1]


def test_phase_that_raises_is_still_recorded_and_exception_propagates():
    timer = StepTimer(cuda=False)
    with pytest.raises(ZeroDivisionError):
        with timer.step(0):
            with timer.phase("fwd"):
                1 / 0  # noqa: B018
    df = timer.frame()
    assert set(df["phase"]) == {"fwd", "step"}


def test_phase_outside_a_step_and_listener():
    timer = StepTimer(cuda=False)
    seen = []
    timer.on_step_end(seen.append)
    with timer.step(7):
        pass
    with timer.phase("checkpoint"):
        time.sleep(0.001)
    df = timer.frame()
    assert seen == [7]
    row = df[df["phase"] == "checkpoint"].iloc[0]
    assert row["step"] == 7 and row["duration_s"] >= 0.001


class FakeEvent:
    """Stands in for torch.cuda.Event: a device running `lag` events behind the host (an event is complete once
    `lag` later events were recorded); elapsed time from a fake clock."""

    clock = 0.0
    recorded = 0
    lag = 6
    syncs = 0

    created = 0

    def __init__(self, enable_timing: bool = True):
        self.t = None
        self.seq = -1
        FakeEvent.created += 1

    def record(self):
        FakeEvent.clock += 0.001
        FakeEvent.recorded += 1
        self.t, self.seq = FakeEvent.clock, FakeEvent.recorded

    def query(self):
        return FakeEvent.recorded - self.seq >= FakeEvent.lag

    def synchronize(self):
        FakeEvent.syncs += 1

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3  # ms


class FakeTorch:
    class cuda:  # noqa: N801 - mimics torch.cuda
        Event = FakeEvent


def test_cuda_path_resolves_events_without_synchronising_in_the_loop():
    timer = StepTimer(cuda=False, nvtx=False)
    timer._torch, timer.cuda = FakeTorch, True
    FakeEvent.syncs = FakeEvent.created = 0
    for i in range(6):
        with timer.step(i):
            with timer.phase("fwd"):
                pass
    assert FakeEvent.syncs == 0  # nothing waited for the device in the hot path
    resolved = timer.drain()
    assert 0 < len(resolved) < 12  # some steps resolved by query() already, the newest still in flight
    rest = timer.frame()
    assert FakeEvent.syncs > 0  # only frame()/close() synchronise
    assert len(rest) == 12
    steps = rest[rest["phase"] == "step"]
    assert steps["duration_s"].gt(0).all()
    assert FakeEvent.recorded >= 24 and FakeEvent.created <= 14  # 4 events a step, recycled once resolved


def test_nvtx_is_a_noop_without_cuda():
    timer = StepTimer()  # torch may or may not be imported; no CUDA here
    assert timer._nvtx_push is None or timer.cuda


def test_gc_pauses_become_events():
    log = EventLog(host="h", rank=0, gc_min_s=0.0, step_of=lambda: 42)
    log.watch_gc()
    try:
        junk = [[i] * 10 for i in range(50_000)]
        for a, b in zip(junk, junk[1:], strict=False):
            a.append(b)
        del junk
        gc.collect()
    finally:
        log.unwatch_gc()
    df = log.frame()
    gcs = df[df["kind"] == "gc"]
    assert len(gcs) >= 1
    assert gcs["detail"].str.contains("generation 2").any()
    assert (gcs["step"] == 42).all() and (gcs["duration_s"] > 0).all()
    stats = log.gc_stats()
    assert stats["collections"] >= len(gcs) and stats["recorded"] == len(gcs)


def test_gc_pauses_below_threshold_are_only_counted():
    log = EventLog(gc_min_s=10.0)
    log.watch_gc()
    gc.collect()
    log.close()
    assert len(log.frame()) == 0
    assert log.gc_stats()["below_min"] >= 1


def test_event_and_event_span():
    log = EventLog(host="h", rank=1)
    log.event("eval", step=3, duration_s=1.5, detail="val loss 2.3")
    with pytest.raises(RuntimeError):
        with log.event_span("checkpoint", step=4):
            time.sleep(0.003)
            raise RuntimeError("disk full")
    df = log.frame()
    assert list(df["kind"]) == ["eval", "checkpoint"]
    assert df["duration_s"].iloc[0] == 1.5 and df["duration_s"].iloc[1] >= 0.003
    assert list(df["step"]) == [3, 4]
    assert df["time"].iloc[1] <= df["time"].iloc[0] + np.timedelta64(10, "s")


def test_recompile_ids():
    assert not _is_recompile("0/0") and _is_recompile("0/1") and _is_recompile("3/2_1")
    assert _is_recompile("!0/1/2") and not _is_recompile("") and not _is_recompile("x")


def test_torch_compile_recompilation_is_recorded_with_its_reason():
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    log = EventLog(host="h", rank=0)
    assert log.watch_compile()

    def f(x):
        return (x * 2).sum()

    fc = torch.compile(f, backend="eager", dynamic=False)
    try:
        fc(torch.ones(3))
        fc(torch.ones(3))  # cached: no event
        fc(torch.ones(5))  # shape change -> recompile
    finally:
        log.unwatch_compile()
        torch._dynamo.reset()
    df = log.frame()
    kinds = list(df["kind"])
    assert kinds.count("compile") == 1 and kinds.count("recompile") == 1
    rec = df[df["kind"] == "recompile"].iloc[0]
    assert "compile_id 0/1" in rec["detail"]
    assert "reason:" in rec["detail"] and "size" in rec["detail"].lower()
    assert rec["duration_s"] > 0
    assert log.compile_stats()["recompile"] == 1
