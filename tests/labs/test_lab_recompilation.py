"""Lab 14: the recompilation workload's knobs, the thread-safe serving pattern and the notebook's verdict."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from labverdicts import assert_diagnosed, assert_fault_then_fix
from nbrun import run_notebook

from playbook.core.errors import WorkloadError
from playbook.labs.workloads import recompilation as lab
from playbook.readers.rundir import read_run

SMALL = dict(steps=12, batch_size=4, max_len=32, buckets=2, d_model=16, sample_hz=2.0)


def test_own_length_padding_recompiles_in_the_loop_and_buckets_do_not(tmp_path):
    fault = lab.run(tmp_path / "fault", "fault", **SMALL)
    ev = read_run(fault.run_dir).events
    rc = ev[ev["kind"] == "recompile"]
    assert fault.extra["recompiles"] >= 3 and len(rc) >= 3
    assert rc["detail"].str.contains("size mismatch").any()  # dynamo's guard-failure reason
    assert fault.extra["distinct_shapes"] >= 4
    fix = lab.run(tmp_path / "fix", "fix", **SMALL)
    assert fix.extra["recompiles"] == 0 and fix.extra["compiles"] == 0 and fix.extra["warmup_compile_s"] > 0
    assert fix.extra["distinct_shapes"] <= 2
    no_fault = lab.run(tmp_path / "nf", "no_fault", **SMALL)
    assert fix.extra["padding_waste"] < no_fault.extra["padding_waste"]
    assert fault.throughput < fix.throughput  # direction; how much is benchmarks/labs.py's figure
    with pytest.raises(WorkloadError):
        lab.run(tmp_path / "x", "eager", **SMALL, dynamic="sometimes")


@contextlib.contextmanager
def compiles_by_thread(monkeypatch):
    """Every dynamo compile while inside, as (thread that started it, thread that ended it, start and end order).

    dynamo's compile callbacks are process-global and fire once per outermost compile (a process-wide counter):
    two compiles overlapping in two threads give one start in the first thread and one end in the second. So a
    compile whose start and end ran in different threads, or whose interval overlaps another's, means two
    threads compiled at once. The thread names are the fact asserted, not the times: a count of compiles over the
    whole process (what thread_demo reports) also counts any other thread's compile in the same process, which
    is how a fully warmed-up run once counted 1 compile "in the threads" inside a full suite.
    """
    from torch._dynamo.callback import callback_handler

    seen: list[dict] = []
    open_: dict[str, tuple[str, int]] = {}

    def on_start(args) -> None:
        open_[str(args.compile_id)] = (threading.current_thread().name, time.perf_counter_ns())

    def on_end(args) -> None:
        started_in, t0 = open_.pop(str(args.compile_id), ("?", -1))
        seen.append({"id": str(args.compile_id), "started_in": started_in, "ended_in": threading.current_thread().name,
                     "t0": t0, "t1": time.perf_counter_ns()})

    def build_model(*args, **kwargs):
        out = original(*args, **kwargs)  # resets dynamo, which also drops every registered compile callback
        callback_handler.register_start_callback(on_start)
        callback_handler.register_end_callback(on_end)
        return out

    original = lab.build_model
    with monkeypatch.context() as m:
        m.setattr(lab, "build_model", build_model)
        try:
            yield seen
        finally:
            if on_start in callback_handler.start_callbacks:
                callback_handler.remove_start_callback(on_start)
            if on_end in callback_handler.end_callbacks:
                callback_handler.remove_end_callback(on_end)


@contextlib.contextmanager
def thread_count_set_elsewhere():
    """A side thread sets another intra-op thread count, as an earlier lab in the same process can: new threads
    then start with it while this thread keeps its own (dynamo guards on the count: a fresh clone's CI once saw a
    serving thread recompile a warmed-up graph this way). Restored after."""
    import torch

    mine = torch.get_num_threads()
    side = threading.Thread(target=torch.set_num_threads, args=(2 if mine == 1 else 1,))
    side.start()
    side.join()
    try:
        yield
    finally:
        torch.set_num_threads(mine)


def test_threads_never_compile_concurrently(monkeypatch):
    with compiles_by_thread(monkeypatch) as warm_compiles, thread_count_set_elsewhere():
        warm = lab.thread_demo(threads=3, requests=3, mode="warm", max_len=32, buckets=2)
    with compiles_by_thread(monkeypatch) as guarded_compiles:
        guarded = lab.thread_demo(threads=3, requests=3, mode="guarded", max_len=32, buckets=2)
    assert warm["errors"] == 0 and guarded["errors"] == 0
    # warm: both buckets compiled up front in this thread; no serving thread compiles
    assert len([c for c in warm_compiles if c["started_in"] == threading.current_thread().name]) == 2, warm_compiles
    assert not [c for c in warm_compiles if c["started_in"].startswith("serve-")], warm_compiles
    # guarded: the serving threads compile the buckets themselves, one at a time
    served = [c for c in guarded_compiles if c["started_in"].startswith("serve-")]
    assert 1 <= len(served) <= 2 and guarded["compiles_in_threads"] >= len(served), guarded_compiles
    assert all(c["started_in"] == c["ended_in"] for c in guarded_compiles), guarded_compiles
    spans = sorted((c["t0"], c["t1"]) for c in guarded_compiles)
    # no two compiles overlap
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), guarded_compiles
    assert guarded["lock_wait_s"] >= 0
    with pytest.raises(WorkloadError):
        lab.thread_demo(mode="racy")


def test_notebook_confirms_recompilation_and_the_fix(tmp_path):
    rec = run_notebook("14_recompilation.ipynb", tmp_path, steps=24, repeats=2, threads_demo=False,
                       out_dir=str(tmp_path / "runs"))
    assert_fault_then_fix(rec)
    assert rec["fault_recompiles"] >= 3
    assert_diagnosed(rec["diagnosis_top"])
