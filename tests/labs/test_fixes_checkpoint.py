"""playbook.labs.fixes.checkpoint: snapshots, atomic and asynchronous saves, throttled storage, background eval."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from playbook.labs.fixes import checkpoint as ck


def _state(v=1.0):
    return {"model": {"w": torch.full((64, 64), v)}, "optim": {"state": [torch.zeros(3)], "lr": 0.1}, "step": 7}


def test_snapshot_is_a_deep_host_copy_that_can_reuse_buffers():
    state = _state()
    snap = ck.snapshot_state(state)
    state["model"]["w"].add_(5)
    assert snap["model"]["w"].eq(1).all() and snap["step"] == 7 and snap["optim"]["lr"] == 0.1
    again = ck.snapshot_state(state, into=snap)
    assert again["model"]["w"].data_ptr() == snap["model"]["w"].data_ptr()  # buffer reused
    assert again["model"]["w"].eq(6).all()
    assert ck.state_bytes(state) == 64 * 64 * 4 + 3 * 4


def test_atomic_save_writes_whole_files_or_nothing(tmp_path):
    path = ck.atomic_save(_state(), tmp_path / "a" / "c.pt")
    assert torch.load(path)["step"] == 7

    def broken(obj, f):
        f.write(b"partial")
        raise OSError("disk full")

    with pytest.raises(OSError):
        ck.atomic_save(_state(), tmp_path / "b.pt", save_fn=broken)
    assert not (tmp_path / "b.pt").exists()
    assert not list(tmp_path.glob(".*.tmp"))


def test_async_checkpointer_saves_the_state_at_call_time(tmp_path):
    state = _state()
    with ck.AsyncCheckpointer(max_pending=2) as saver:
        for step in range(3):
            state["model"]["w"].fill_(step)
            state["step"] = step
            saver.save(state, tmp_path / f"s{step}.pt")
            state["model"]["w"].fill_(-1)  # training goes on while the write is pending
    for step in range(3):
        loaded = torch.load(tmp_path / f"s{step}.pt")
        assert loaded["step"] == step and loaded["model"]["w"].eq(step).all()
    assert saver.stats["saves"] == 3 and saver.stats["bytes"] > 0


def test_async_checkpointer_applies_back_pressure_and_reports_errors(tmp_path):
    release = threading.Event()

    def slow_save(obj, f):
        release.wait(5)
        torch.save(obj, f)

    saver = ck.AsyncCheckpointer(max_pending=1, save_fn=slow_save)
    saver.save(_state(), tmp_path / "1.pt")
    second = threading.Thread(target=saver.save, args=(_state(), tmp_path / "2.pt"))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # blocked: the first write is still in flight
    release.set()
    second.join(5)
    saver.close()
    assert (tmp_path / "2.pt").exists() and saver.stats["wait_s"] > 0

    def failing(obj, f):
        raise OSError("storage gone")

    bad = ck.AsyncCheckpointer(save_fn=failing)
    bad.save(_state(), tmp_path / "3.pt")
    with pytest.raises(OSError, match="storage gone"):
        bad.close()


def test_throttled_file_writes_everything_no_faster_than_its_rate(tmp_path):
    data = bytes(range(256)) * 4096  # 1 MiB
    t0 = time.perf_counter()
    with ck.ThrottledFile(tmp_path / "x", mib_s=8.0, chunk_mib=0.25) as f:
        assert f.write(data) == len(data)
    assert time.perf_counter() - t0 >= 1 / 8 * 0.9
    assert (tmp_path / "x").read_bytes() == data
    ck.atomic_save(_state(), tmp_path / "t.pt", opener=ck.throttled_opener(1000.0))
    assert torch.load(tmp_path / "t.pt")["step"] == 7
    with pytest.raises(ValueError):
        ck.ThrottledFile(tmp_path / "y", mib_s=0)


def test_background_evaluator_evaluates_snapshots_and_drops_stale_requests():
    model = torch.nn.Linear(2, 1)
    gate = threading.Event()
    seen = []

    def eval_fn(m):
        gate.wait(5)
        value = float(m.weight.detach().sum())
        seen.append(value)
        return value

    ev = ck.BackgroundEvaluator(lambda: torch.nn.Linear(2, 1), eval_fn)
    with torch.no_grad():
        model.weight.fill_(1.0)
    ev.submit(10, model)          # starts running (blocked on the gate)
    time.sleep(0.1)
    with torch.no_grad():
        model.weight.fill_(2.0)
    ev.submit(20, model)          # queued
    with torch.no_grad():
        model.weight.fill_(3.0)
    ev.submit(30, model)          # replaces the queued one
    gate.set()
    ev.close()
    assert [s for s, _ in ev.results] == [10, 30] and seen == [2.0, 6.0]
    assert ev.stats["skipped"] == 1 and ev.stats["submitted"] == 3


def test_background_evaluator_surfaces_errors():
    ev = ck.BackgroundEvaluator(lambda: torch.nn.Linear(2, 1), lambda m: 1 / 0)
    ev.submit(1, torch.nn.Linear(2, 1))
    with pytest.raises(ZeroDivisionError):
        ev.close()


def test_dcp_async_available_is_a_bool():
    assert isinstance(ck.dcp_async_available(), bool)
