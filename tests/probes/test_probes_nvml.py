"""NVML sampler against the fake pynvml scenarios (real pynvml exception classes, real ctypes structures)."""

from __future__ import annotations

import math
import time

import numpy as np
import pynvml
import pytest

from playbook.model import schema
from playbook.probes import fake_nvml
from playbook.probes.nvml import SAMPLES_SOURCE, SOURCE, NvmlSampler


def run_ticks(nv, ticks: int = 5, slow: bool = True, **kw) -> tuple[NvmlSampler, object]:
    """Open a sampler on `nv` and take `ticks` fast samples (a slow round before each), no threads."""
    s = NvmlSampler("node1", hz=100.0, nvml=nv, **kw)
    assert s.open()
    for _ in range(ticks):
        if slow:
            s.sample_slow_once()
        s.sample_once()
        time.sleep(0.01)
    s.stop()
    return s, s.to_frame(s.drain())


def polled(df):
    return df[df["source"] == SOURCE]


def test_healthy_rows_units_and_schema():
    s, df = run_ticks(fake_nvml.scenario("healthy", gpus=3), ticks=4)
    assert list(df.columns) == list(schema.TELEMETRY_COLUMNS)
    assert str(df["time"].dtype) == "datetime64[ns, UTC]"
    p = polled(df)
    assert p.groupby("gpu").size().to_dict() == {0: 4, 1: 4, 2: 4}
    assert p["util_pct"].between(90, 100).all()
    assert np.allclose(p["mem_total_mib"], 81559.0, atol=1)
    assert np.allclose(p["power_w"], 650.0) and np.allclose(p["sm_clock_mhz"], 1980.0)
    assert (p["throttle_reasons"] == 0).all() and (p["temp_c"] == 62).all()
    # slow metrics appear in the row after they were measured: one measurement per slow round per GPU
    assert np.allclose(p["pcie_tx_mib_s"].dropna(), 900.0, rtol=1e-3)
    assert np.allclose(p["pcie_rx_mib_s"].dropna(), 2500.0, rtol=1e-3)
    assert (p["pcie_link_gen"].dropna() == 5).all() and (p["pcie_link_width"].dropna() == 16).all()
    assert np.allclose(p["power_limit_w"].dropna(), 700.0)
    # NVLink rate needs two counter readings: first round has none, later rounds ~120 GB/s per direction
    nvl = p["nvlink_tx_mib_s"].dropna()
    assert len(nvl) == 3 * 3 and np.allclose(nvl, 120_000.0, rtol=0.05)
    assert s.stats()["pcie_max"][0] == {"gen": 5, "width": 16}
    assert df.attrs["interval_s"] == pytest.approx(0.01)


def test_utilization_samples_are_deduplicated_by_timestamp():
    nv = fake_nvml.scenario("oscillating", gpus=2, period_s=0.2)
    s = NvmlSampler("node1", hz=100.0, nvml=nv)
    assert s.open()
    time.sleep(0.4)
    for _ in range(3):  # polling the buffer repeatedly must not duplicate samples
        s.sample_slow_once()
        time.sleep(0.05)
    s.stop()
    df = s.to_frame(s.drain())
    samp = df[df["source"] == SAMPLES_SOURCE]
    assert len(samp) >= 2 * 3
    for _gpu, g in samp.groupby("gpu"):
        assert g["time"].is_unique and g["time"].is_monotonic_increasing
        assert set(g["util_pct"].unique()) <= {0.0, 100.0}
    assert samp.drop(columns=["time", "host", "gpu", "util_pct", "source"]).isna().all().all()


def test_gpu_lost_mid_run_other_gpus_keep_reporting():
    nv = fake_nvml.scenario("gpu_lost_mid_run", gpus=4, lost_gpu=2, lost_after=30)
    s, df = run_ticks(nv, ticks=8)
    p = polled(df)
    assert p.groupby("gpu").size().to_dict() == {0: 8, 1: 8, 2: 8, 3: 8}  # the lost GPU keeps its NaN rows
    lost = p[p["gpu"] == 2]
    assert lost["util_pct"].notna().iloc[0] and lost["util_pct"].isna().iloc[-1]
    assert p[p["gpu"] != 2]["util_pct"].notna().all()
    assert s.stats()["lost"] == [2]
    assert sum("GPU 2 lost" in w for w in s.warnings) == 1
    events = s.drain_events()
    assert [(gpu, kind) for _, gpu, kind, _ in events] == [(2, "gpu_lost")]
    assert nv.calls[2] == 31  # the call that raised GpuIsLost was the last one made on that GPU


def test_unsupported_fields_read_nan_and_are_not_queried_again():
    nv = fake_nvml.scenario("unsupported_fields", gpus=2)
    s, df = run_ticks(nv, ticks=6)
    p = polled(df)
    for col in ("power_w", "power_limit_w", "sm_clock_mhz", "mem_clock_mhz", "throttle_reasons", "pcie_tx_mib_s",
                "pcie_replay_count", "nvlink_tx_mib_s"):
        assert p[col].isna().all(), col
    assert p["util_pct"].notna().all() and p["mem_used_mib"].notna().all()
    assert (df["source"] == SAMPLES_SOURCE).sum() == 0
    assert nv.fn_calls[fake_nvml.POWER] == 2  # asked once per GPU, then never again
    assert nv.fn_calls[fake_nvml.PCIE_TP] == 4  # TX and RX are separate metrics: each asked once per GPU
    assert not s.warnings  # NotSupported is normal: no warning spam
    assert "power" in s.stats()["unsupported"][0]


@pytest.mark.parametrize("name, error", [("no_driver", "LibraryNotFound"), ("driver_not_loaded", "DriverNotLoaded")])
def test_no_driver_says_so_once_and_does_not_start(name, error):
    s = NvmlSampler("node1", hz=10.0, nvml=fake_nvml.scenario(name))
    assert s.start() is False
    assert not s.running
    assert len(s.warnings) == 1 and error in s.warnings[0] and "host metrics only" in s.warnings[0]
    s.stop()
    assert s.drain() == []


def test_throttled_gpu_reports_hw_slowdown_bits():
    _, df = run_ticks(fake_nvml.scenario("throttled", gpus=2, bad_gpu=1), ticks=3)
    p = polled(df)
    bad = p[p["gpu"] == 1]["throttle_reasons"].iloc[0]
    assert schema.throttle_names(bad) == ["hw_slowdown", "hw_thermal"]
    assert int(bad) & schema.THROTTLE_HARMFUL
    assert (p[p["gpu"] == 0]["throttle_reasons"] == 0).all()
    assert p[p["gpu"] == 1]["sm_clock_mhz"].max() < p[p["gpu"] == 0]["sm_clock_mhz"].min()


def test_old_bindings_fall_back_to_throttle_reasons():
    nv = fake_nvml.scenario("old_bindings", gpus=1)
    assert not hasattr(nv, "nvmlDeviceGetCurrentClocksEventReasons")
    _, df = run_ticks(nv, ticks=2)
    assert (polled(df)["throttle_reasons"] == 0x4).all()


def test_pcie_degraded_link_and_rising_replays():
    _, df = run_ticks(fake_nvml.scenario("pcie_degraded", gpus=2, bad_gpu=0), ticks=4)
    p = polled(df)
    bad, good = p[p["gpu"] == 0], p[p["gpu"] == 1]
    assert (bad["pcie_link_gen"].dropna() == 3).all() and (bad["pcie_link_width"].dropna() == 8).all()
    replays = bad["pcie_replay_count"].dropna()
    assert replays.iloc[-1] > replays.iloc[0]
    assert (good["pcie_replay_count"].dropna() == 0).all()


def test_flaky_metric_reads_nan_only_when_it_fails():
    s, df = run_ticks(fake_nvml.scenario("flaky", gpus=2, bad_gpu=0), ticks=9, slow=False)
    p = polled(df)
    power = p[p["gpu"] == 0]["power_w"]
    assert power.isna().sum() >= 2 and power.notna().sum() >= 4
    assert "power" not in s.stats()["unsupported"].get(0, [])  # transient: still queried


def test_metric_failing_every_time_is_disabled_with_one_warning():
    nv = fake_nvml.scenario("healthy", gpus=1)
    nv.gpus[0].flaky = {fake_nvml.POWER: 1}  # NVMLError_Unknown on every call
    s, df = run_ticks(nv, ticks=15, slow=False)
    assert polled(df)["power_w"].isna().all()
    assert nv.fn_calls[fake_nvml.POWER] == 10
    assert sum("power" in w for w in s.warnings) == 1


def test_threaded_sampler_keeps_rate_and_stops_cleanly():
    nv = fake_nvml.scenario("healthy", gpus=2)
    s = NvmlSampler("node1", hz=50.0, nvml=nv, slow_hz=10.0)
    assert s.start()
    time.sleep(0.5)
    s.stop()
    assert not s.running
    df = s.to_frame(s.drain())
    n = polled(df).groupby("gpu").size()
    assert (n >= 10).all() and (n <= 30).all()
    assert nv.inits == 0  # nvmlShutdown balanced the init
    assert polled(df)["pcie_tx_mib_s"].notna().sum() >= 2


def test_bounded_buffer_drops_oldest_rows():
    s = NvmlSampler("node1", hz=100.0, nvml=fake_nvml.scenario("healthy", gpus=2), max_rows=5)
    assert s.open()
    for _ in range(5):
        s.sample_once()
    s.stop()
    rows = s.drain()
    assert len(rows) == 5 and s.dropped == 5
    assert rows[-1][0] >= rows[0][0]


def test_fake_raises_the_real_pynvml_classes():
    nv = fake_nvml.scenario("unsupported_fields", gpus=1)
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        nv.nvmlDeviceGetPowerUsage(h)
    with pytest.raises(pynvml.NVMLError):
        nv.nvmlDeviceGetHandleByIndex(7)
    nv.nvmlShutdown()
    with pytest.raises(ValueError, match="unknown fake NVML scenario"):
        fake_nvml.scenario("nope")


def test_mean_util_is_the_live_signal():
    s = NvmlSampler("node1", hz=100.0, nvml=fake_nvml.scenario("healthy", gpus=2))
    assert math.isnan(s.mean_util())
    assert s.open()
    s.sample_once()
    s.stop()
    assert 90 <= s.mean_util() <= 100


def test_processes_on_each_gpu_with_user_command_and_memory():
    import getpass
    import os
    import subprocess
    import sys

    nv = fake_nvml.scenario("healthy", gpus=2)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        nv.gpus[1].processes = [(child.pid, 512.0), (2 ** 22 + 7, None)]  # a second process, gone or not visible
        s = NvmlSampler("node1", hz=100.0, nvml=nv)
        assert s.open()
        procs = {(p["gpu"], p["pid"]): p for p in s.processes()}
    finally:
        child.kill()
        child.wait()
    s.stop()
    mine = procs[(0, os.getpid())]
    assert mine["user"] == getpass.getuser() and mine["gpu_mem_mib"] == pytest.approx(61000.0)
    assert "python" in mine["command"] or "pytest" in mine["command"]
    other = procs[(1, child.pid)]
    assert other["gpu_mem_mib"] == pytest.approx(512.0) and "time.sleep(30)" in other["command"]
    hidden = procs[(1, 2 ** 22 + 7)]
    assert math.isnan(hidden["gpu_mem_mib"]) and hidden["user"] == hidden["command"] == "?"
    assert len(procs) == 3


def test_processes_where_nvml_cannot_list_them_is_an_empty_list():
    s = NvmlSampler("node1", hz=100.0, nvml=fake_nvml.scenario("unsupported_fields", gpus=2))
    assert s.open()
    assert s.processes() == [] and s.processes() == []  # asked once, then never again
    assert nv_calls(s) == 2
    s.stop()


def nv_calls(s: NvmlSampler) -> int:
    return s._nvml.fn_calls.get(fake_nvml.PROCESSES, 0)
