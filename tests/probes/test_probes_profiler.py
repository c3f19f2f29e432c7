"""Profiler windows on CPU: schedule, triggers, trace files readable by json/gzip and playbook's Kineto reader."""

from __future__ import annotations

import gzip
import json
import time

import pytest

from playbook.probes.event_log import EventLog
from playbook.probes.profiler import ProfilerWindows
from playbook.probes.step_timer import StepTimer

torch = pytest.importorskip("torch")


def loop(timer: StepTimer, steps: int, data_s=lambda i: 0.0, fwd_s: float = 0.0) -> None:
    """Steps with a data phase of data_s(i) seconds and a tiny model (or, with fwd_s, a sleeping fwd)."""
    model = torch.nn.Linear(32, 32)
    x = torch.randn(8, 32)
    for i in range(steps):
        with timer.step(i):
            with timer.phase("data"):
                time.sleep(data_s(i))
            with timer.phase("fwd"):
                loss = model(x).sum()
                time.sleep(fwd_s)
            with timer.phase("bwd"):
                loss.backward()


def test_periodic_windows_write_readable_traces(tmp_path):
    timer = StepTimer(host="h", rank=2, cuda=False)
    events = EventLog(host="h", rank=2)
    prof = ProfilerWindows(tmp_path / "traces", timer=timer, events=events, rank=2, host="h", every=10,
                           warmup=1, active=2, min_gap_steps=5, max_windows=2)
    loop(timer, 35)
    assert [p.name for p in prof.traces] == ["h-rank2.step11-12.every.pt.trace.json.gz",
                                             "h-rank2.step21-22.every.pt.trace.json.gz"]
    trace = json.load(gzip.open(prof.traces[0]))
    assert trace["playbook_first_step"] == 11 and trace["playbook_trigger"] == "every"
    assert trace["playbook_rank"] == 2
    steps = sorted({e["name"] for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")})
    assert steps == ["ProfilerStep#1", "ProfilerStep#2"]  # warmup step 0 is not recorded
    assert any(e.get("name") == "aten::addmm" for e in trace["traceEvents"])
    ev = events.frame()
    assert list(ev["kind"]) == ["profiler", "profiler"] and list(ev["step"]) == [12, 22]
    try:
        from playbook.readers import kineto
    except ImportError:
        return
    bundle = kineto.read(tmp_path / "traces")
    names = set(bundle.trace["name"])
    assert "ProfilerStep#1" in names and "aten::addmm" in names


def test_busy_drop_triggers_a_window_once_per_gap(tmp_path):
    timer = StepTimer(cuda=False)
    prof = ProfilerWindows(tmp_path, timer=timer, trigger_busy=0.3, warmup=1, active=1, min_gap_steps=100,
                           max_windows=3)
    # starved from step 15: a 0.2 s data wait keeps the busy fraction under 0.3 unless compute takes > 0.08 s a
    # step, which a loaded machine can make the tiny model's forward + backward take (0.04 s once did)
    loop(timer, 30, data_s=lambda i: 0.2 if i >= 15 else 0.0, fwd_s=0.005)
    assert len(prof.traces) == 1
    first = int(prof.traces[0].name.split(".step")[1].split("-")[0])
    assert 15 < first < 26 and ".busy." in prof.traces[0].name


class FakeSampler:
    def __init__(self, values):
        self.values = list(values)

    def mean_util(self):
        return self.values.pop(0) if self.values else 95.0


def test_util_drop_from_the_live_sampler_and_manual_trigger(tmp_path):
    timer = StepTimer(cuda=False)
    prof = ProfilerWindows(tmp_path, timer=timer, sampler=FakeSampler([95, 96, 30]), trigger_util_pct=50,
                           warmup=1, active=1, min_gap_steps=0, max_windows=2)
    loop(timer, 6)
    prof.trigger("manual")
    loop(timer, 3)
    reasons = [p.name.split(".")[-5] for p in prof.traces]
    assert reasons == ["util", "manual"]
    assert prof.windows == 2


def test_a_broken_profiler_disables_windows_without_raising(tmp_path, monkeypatch):
    timer = StepTimer(cuda=False)
    prof = ProfilerWindows(tmp_path, timer=timer, every=2, min_gap_steps=0, activities=["nonsense"])
    loop(timer, 5)
    assert prof.disabled and prof.traces == []
