"""Widgets: the explorer's view follows its controls, the live monitor collects from probes, headless skips."""

from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from playbook.model import schema
from playbook.plots import widgets  # noqa: E402


def _telemetry(seconds=300):
    t = pd.date_range("2025-01-01", periods=seconds, freq="1s", tz="UTC")
    cycle = np.where(np.arange(seconds) % 60 < 45, 90.0, 20.0)
    frames = []
    for h in ("a", "b"):
        for g in range(2):
            frames.append(pd.DataFrame({"time": t, "host": h, "gpu": g, "util_pct": cycle,
                                        "power_w": cycle * 4.0}))
    return schema.telemetry_frame({c: pd.concat(frames)[c].to_numpy() for c in frames[0].columns})


def test_explorer_view_windows_selects_and_smooths():
    tel = _telemetry()
    view = widgets.explorer_view(tel, "util_pct", window_s=(60.0, 119.0), units=["b:1"])
    assert len(view) == 60 and set(view["host"]) == {"b"} and set(view["gpu"]) == {1}
    assert view["util_pct"].tolist() == [90.0] * 45 + [20.0] * 15
    smooth = widgets.explorer_view(tel, "util_pct", window_s=(60.0, 119.0), units=["b:1"], smooth_s=60.0)
    # a trailing 60 s mean: after 60 samples it is the duty-cycle average
    assert smooth["util_pct"].iloc[-1] == pytest.approx((45 * 90 + 15 * 20) / 60)
    assert smooth["util_pct"].iloc[0] == 90.0
    assert len(widgets.explorer_view(tel, "util_pct")) == len(tel)


def test_explorer_controls_update_view_and_figure():
    ex = widgets.Explorer(_telemetry())
    assert ex.metric.value == "util_pct" and set(ex.metric.options) == {"util_pct", "power_w"}
    assert len(ex.units.options) == 4 and len(ex.view) == 4 * 300
    first = ex.figure
    ex.units.value = ("a:0",)
    assert set(widgets.timeline.unit_ids(ex.view, "gpu")) == {"a:0"} and ex.figure is not first
    ex.window.value = (0.0, 44.0)
    assert len(ex.view) == 45 and ex.view["util_pct"].eq(90.0).all()
    ex.metric.value = "power_w"
    assert ex.view["power_w"].eq(360.0).all()
    heat = ex.figure.axes[0]
    assert heat.collections[0].get_array().shape == (1, 45)


class _FakeGpuProbe:
    """A probe with the Poller interface returning two GPUs' utilization."""

    def __init__(self):
        self.t = pd.Timestamp("2025-01-01", tz="UTC")
        self.stopped = False

    def drain(self):
        self.t += pd.Timedelta(seconds=1)
        return [(self.t, 0, 80.0), (self.t, 1, 10.0)]

    def to_frame(self, rows):
        return schema.telemetry_frame({"time": [r[0] for r in rows], "host": "n0", "gpu": [r[1] for r in rows],
                                       "util_pct": [r[2] for r in rows]})

    def stop(self):
        self.stopped = True


class _Timer:
    def busy_fraction(self):
        return 0.25


def test_watch_collects_gpu_series_and_keeps_a_window():
    probe = _FakeGpuProbe()
    mon = widgets.LiveMonitor(probes=[probe], window_s=2.0)
    assert mon.source == "custom"
    for _ in range(5):
        samples = mon.poll()
    assert set(samples["series"]) == {"GPU n0:0 utilization", "GPU n0:1 utilization"}
    assert len(samples) == 6  # three seconds of two GPUs survive a 2 s window
    assert samples.groupby("series")["value"].mean().tolist() == [80.0, 10.0]
    png = mon.render()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    mon.close()
    assert probe.stopped


def test_watch_shows_the_step_timers_busy_fraction():
    mon = widgets.LiveMonitor(probes=[], step_timer=_Timer())
    samples = mon.poll()
    assert samples["series"].tolist() == ["training busy (step phases)"] and samples["value"].tolist() == [25.0]


def test_watch_falls_back_to_host_probe_without_nvml():
    mon = widgets.LiveMonitor(hz=20.0, refresh_s=0.05)
    try:
        if mon.source == "nvml":
            pytest.skip("a GPU answered NVML here; the fallback is exercised on CPU machines")
        assert mon.source == "host"
        box = mon.widget()
        mon.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not len(mon.samples):
            time.sleep(0.1)
        assert set(mon.samples["series"]) >= {"CPU (all cores)", "CPU (busiest core)"}
        assert box.children[1].value[:4] == b"\x89PNG"
    finally:
        mon.close()
    assert not mon._thread.is_alive()


def test_headless_runs_skip_widgets(monkeypatch):
    monkeypatch.setenv("PLAYBOOK_HEADLESS", "1")
    assert widgets.headless()
    note = widgets.explore(_telemetry())
    assert "skipped in a headless run" in note.data
    assert "skipped" in widgets.watch().data
    assert isinstance(widgets.explore(_telemetry(), force=True), widgets.Explorer)


def test_watch_reads_gpus_through_the_nvml_sampler():
    from playbook.probes import NvmlSampler, fake_nvml

    sampler = NvmlSampler(host="n0", hz=50.0, nvml=fake_nvml.scenario("oscillating", gpus=2),
                          util_samples=False)
    assert sampler.start()
    mon = widgets.LiveMonitor(probes=[sampler])
    try:
        assert mon.source == "nvml"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and mon.poll()["series"].nunique() < 2:
            time.sleep(0.05)
        assert set(mon.samples["series"]) == {"GPU n0:0 utilization", "GPU n0:1 utilization"}
        assert mon.samples["value"].between(0, 100).all()
    finally:
        mon.close()
    assert not sampler.running
