"""InfiniBand counters from fake sysfs trees (tests/data/sysfs) and link health from IB + NVML telemetry."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from playbook.analysis.links import link_status
from playbook.model.schema import IB_COLUMNS
from playbook.probes import fake_nvml
from playbook.probes.interconnect import IbProbe, find_ports, parse_rate
from playbook.probes.nvml import NvmlSampler


@pytest.fixture
def sysfs(tmp_path, data_dir):
    def copy(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(data_dir / "sysfs" / name, dest)
        return dest
    return copy


def bump(root: Path, dev: str, counter: str, by: int) -> None:
    path = root / "class" / "infiniband" / dev / "ports" / "1" / "counters" / counter
    path.write_text(str(int(path.read_text()) + by))


def two_samples(root: Path, between, wait_s: float = 0.2) -> tuple[IbProbe, object]:
    probe = IbProbe("node1", root=root)
    assert probe.open()
    probe.sample_once()
    between()
    time.sleep(wait_s)
    probe.sample_once()
    probe.stop()
    return probe, probe.to_frame(probe.drain())


def test_parse_rate():
    assert parse_rate("400 Gb/sec (4X NDR)") == (400.0, "4X")
    assert parse_rate("2.5 Gb/sec (1X SDR)") == (2.5, "1X")
    assert parse_rate("100 Gb/sec") == (100.0, "")
    assert np.isnan(parse_rate("garbage")[0])


def test_ports_found_and_absent(sysfs, tmp_path):
    assert [(d, p) for d, p, _ in find_ports(sysfs("healthy"))] == [
        ("mlx5_0", 1), ("mlx5_1", 1), ("mlx5_2", 1), ("mlx5_3", 1), ("mlx5_4", 1)]
    assert IbProbe("n", root=tmp_path / "nothing").start() is False  # no IB: not an error, no thread


def test_rates_from_counter_deltas(sysfs):
    root = sysfs("healthy")
    words = 2 * 1024**3 // 4  # 2 GiB in 4-byte words

    probe, df = two_samples(root, lambda: bump(root, "mlx5_0", "port_xmit_data", words))
    assert list(df.columns) == list(IB_COLUMNS)
    assert str(df["time"].dtype) == "datetime64[ns, UTC]"
    first, second = df.iloc[:5], df.iloc[5:].set_index("device")
    assert first["tx_mib_s"].isna().all()  # a rate needs two readings
    dt = (df["time"].iloc[5] - df["time"].iloc[0]).total_seconds()
    assert second.loc["mlx5_0", "tx_mib_s"] == pytest.approx(2048 / dt, rel=0.25)
    assert second.loc["mlx5_1", "tx_mib_s"] == 0.0
    assert second.loc["mlx5_0", "rate_gbps"] == 400 and second.loc["mlx5_4", "link_layer"] == "Ethernet"
    assert (second["errors_per_s"] == 0).all() and (second["state"] == "ACTIVE").all()
    assert link_status(ib=df).set_index("link").loc["mlx5_1/1", "status"] == "ok"


def test_saturated_link_is_not_degraded(sysfs):
    root = sysfs("healthy")
    # ~45 GiB/s for 0.2 s: about 95 % of a 400 Gb/s (47.7 GiB/s) port
    probe, df = two_samples(root, lambda: bump(root, "mlx5_0", "port_xmit_data", int(45 * 1024**3 * 0.2 / 4)))
    status = link_status(ib=df).set_index("link")
    assert status.loc["mlx5_0/1", "status"] == "saturated"
    assert "utilization" in status.loc["mlx5_0/1", "evidence"]


def test_degraded_links_rising_errors_lower_rate_and_down_port(sysfs):
    root = sysfs("degraded")
    probe, df = two_samples(root, lambda: bump(root, "mlx5_1", "symbol_error", 5))
    last = df.groupby("device").last()
    assert last.loc["mlx5_1", "errors_per_s"] > 0
    assert last.loc["mlx5_2", "rate_gbps"] == 200 and last.loc["mlx5_2", "width"] == "2X"
    assert last.loc["mlx5_3", "state"] == "DOWN" and last.loc["mlx5_3", "phys_state"] == "Disabled"
    status = link_status(ib=df).set_index("link")
    assert status.loc["mlx5_0/1", "status"] == "ok"
    assert status.loc["mlx5_1/1", "status"] == "degraded" and "symbol_error +5" in status.loc["mlx5_1/1", "evidence"]
    assert status.loc["mlx5_2/1", "status"] == "degraded" and "below peers" in status.loc["mlx5_2/1", "evidence"]
    assert status.loc["mlx5_3/1", "status"] == "degraded"


def test_counter_reset_gives_no_negative_rate(sysfs):
    root = sysfs("healthy")
    path = root / "class/infiniband/mlx5_0/ports/1/counters/port_rcv_data"
    probe, df = two_samples(root, lambda: path.write_text("5"))
    assert np.isnan(df.groupby("device").last().loc["mlx5_0", "rx_mib_s"])


def test_unreadable_counter_reads_nan(sysfs):
    root = sysfs("healthy")
    (root / "class/infiniband/mlx5_0/ports/1/counters/symbol_error").unlink()
    probe, df = two_samples(root, lambda: None, wait_s=0.05)
    assert np.isnan(df.groupby("device").last().loc["mlx5_0", "symbol_error"])
    assert not probe.warnings


def nvml_telemetry(name: str):
    s = NvmlSampler("node1", hz=100.0, nvml=fake_nvml.scenario(name, gpus=2, bad_gpu=1))
    assert s.open()
    for _ in range(4):
        s.sample_slow_once()
        s.sample_once()
        time.sleep(0.02)
    s.stop()
    pcie_max = {("node1", g): v for g, v in s.pcie_max.items()}
    return s.to_frame(s.drain()), pcie_max


def test_pcie_degraded_vs_healthy_and_nvlink_saturation():
    tel, pcie_max = nvml_telemetry("pcie_degraded")
    status = link_status(telemetry=tel, pcie_max=pcie_max).set_index("link")
    assert status.loc["gpu1/pcie", "status"] == "degraded"
    assert "gen3 x8" in status.loc["gpu1/pcie", "evidence"] and "replays" in status.loc["gpu1/pcie", "evidence"]
    assert status.loc["gpu0/pcie", "status"] == "ok"

    tel, _ = nvml_telemetry("nvlink_saturated")
    status = link_status(telemetry=tel, nvlink_capacity_mib_s=450_000.0).set_index("link")
    assert (status.loc[["gpu0/nvlink", "gpu1/nvlink"], "status"] == "saturated").all()
    tel, _ = nvml_telemetry("healthy")
    status = link_status(telemetry=tel, nvlink_capacity_mib_s=450_000.0).set_index("link")
    assert (status["status"] == "ok").all()
