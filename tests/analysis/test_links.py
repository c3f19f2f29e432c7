"""Link health for diagnose: saturated vs degraded PCIe / NVLink / InfiniBand links, from a real Recorder run
against a fake NVML and a fake sysfs tree, and from hand-built telemetry with known answers."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from playbook.analysis import links
from playbook.model import schema
from playbook.probes import fake_nvml
from playbook.probes.recorder import Hooks, Rates, Recorder
from playbook.readers import rundir


def bump(root, dev: str, counter: str, by: int) -> None:
    path = root / "class" / "infiniband" / dev / "ports" / "1" / "counters" / counter
    path.write_text(str(int(path.read_text()) + by))


@pytest.fixture(scope="module")
def degraded_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("links")
    shutil.copytree(Path(__file__).parent.parent / "data" / "sysfs" / "degraded", tmp / "sys")
    hooks = Hooks(nvml_module=fake_nvml.scenario("pcie_degraded", gpus=2), sysfs_root=tmp / "sys", sample_here=True)
    with Recorder(tmp / "run", host="node7", rates=Rates(sample_hz=20), host_probe=False, gc=False, compile=False,
                  cuda=False, hooks=hooks):
        for _ in range(3):  # three 1 Hz IB samples; symbol errors keep rising on mlx5_2, traffic on mlx5_0
            bump(tmp / "sys", "mlx5_2", "symbol_error", 5)
            bump(tmp / "sys", "mlx5_0", "port_xmit_data", 10**9)
            time.sleep(1.05)
    return rundir.read_run(tmp / "run")


def test_recorded_links_degraded_and_ok(degraded_run):
    s = links.summarize(degraded_run)
    json.dumps(s)
    table = {row["link"]: row for row in s["links"]}
    assert table["mlx5_0/1"]["status"] == "ok" and table["gpu1/pcie"]["status"] == "ok"
    assert set(s["degraded"]) == {"node7:mlx5_2/1", "node7:mlx5_3/1", "node7:gpu0/pcie"}
    f = {x["link"]: x for x in s["findings"]}
    assert set(f) == {"mlx5_2/1", "mlx5_3/1", "gpu0/pcie"}
    assert all(x["hypothesis"] == "link_degradation" and x["hosts"] == ["node7"] for x in f.values())
    assert f["mlx5_2/1"]["level"] == "high" and "symbol_error +" in f["mlx5_2/1"]["evidence"]
    assert "200 Gb/s below peers' 400 Gb/s" in f["mlx5_2/1"]["evidence"]
    assert f["gpu0/pcie"]["level"] == "high" and "gen3 x8 under load, expected gen5 x16" in f["gpu0/pcie"]["evidence"]
    assert "PCIe replays +" in f["gpu0/pcie"]["evidence"]
    assert f["mlx5_3/1"]["level"] == "moderate" and "unused port" in f["mlx5_3/1"]["evidence"]


def test_pcie_max_comes_from_the_part_metadata(degraded_run):
    pm = links.pcie_max(degraded_run.meta)
    assert pm == {("node7", 0): (5.0, 16.0), ("node7", 1): (5.0, 16.0)}


def test_pcie_capacity():
    assert links.pcie_capacity_mib_s(4, 16) == pytest.approx(1.969e9 * 16 / 2**20)
    assert links.pcie_capacity_mib_s(5, 16) == pytest.approx(2 * links.pcie_capacity_mib_s(4, 16), rel=0.01)
    assert np.isnan(links.pcie_capacity_mib_s(np.nan, 16)) and np.isnan(links.pcie_capacity_mib_s(4, 0))


def tele(rows: dict[tuple[str, int], dict], n: int = 20) -> pd.DataFrame:
    """Telemetry with n samples per (host, gpu); values constant or arrays of length n."""
    t0 = pd.Timestamp("2025-01-01", tz="UTC")
    cols: dict[str, list] = {}
    for (host, gpu), metrics in rows.items():
        cols.setdefault("time", []).extend(t0 + pd.to_timedelta(np.arange(n) * 0.1, unit="s"))
        cols.setdefault("host", []).extend([host] * n)
        cols.setdefault("gpu", []).extend([gpu] * n)
        for k, v in metrics.items():
            cols.setdefault(k, []).extend(np.broadcast_to(v, n))
    return schema.telemetry_frame(cols)


def test_saturated_pcie_is_reported_as_a_copy_bottleneck_not_a_fault():
    cap = links.pcie_capacity_mib_s(4, 16)
    t = tele({
        ("a", 0): {"util_pct": 90.0, "pcie_link_gen": 4, "pcie_link_width": 16, "pcie_rx_mib_s": 0.9 * cap,
                   "pcie_tx_mib_s": 500.0, "pcie_replay_count": 3.0},
        ("a", 1): {"util_pct": 90.0, "pcie_link_gen": 4, "pcie_link_width": 16, "pcie_rx_mib_s": 0.2 * cap,
                   "pcie_tx_mib_s": 0.2 * cap, "pcie_replay_count": 3.0},
    })
    s = links.summarize(schema.Bundle(telemetry=t))
    assert s["saturated"] == ["a:gpu0/pcie"] and s["degraded"] == []
    (f,) = s["findings"]
    assert (f["hypothesis"], f["level"], f["hosts"]) == ("h2d_copy", "moderate", ["a"])
    assert "90% of its gen4 x16 capacity" in f["evidence"]


def test_idle_gpu_trained_down_is_only_moderate_busy_one_is_high():
    t = tele({
        ("b", 0): {"util_pct": 0.0, "pcie_link_gen": 1, "pcie_link_width": 16},  # idle: power saving
        ("b", 1): {"util_pct": 95.0, "pcie_link_gen": 3, "pcie_link_width": 16},  # busy and below its peers
        ("b", 2): {"util_pct": 95.0, "pcie_link_gen": 5, "pcie_link_width": 16},
    })
    s = links.summarize(schema.Bundle(telemetry=t))
    levels = {f["link"]: f["level"] for f in s["findings"]}
    assert levels == {"gpu0/pcie": "moderate", "gpu1/pcie": "high"}
    assert "never busy" in next(f["evidence"] for f in s["findings"] if f["link"] == "gpu0/pcie")


def test_a_link_read_without_utilization_is_not_called_idle_or_busy():
    # nvtop's or nvidia-smi -q's link line alone (tests/data/eval/heldout38): the gen is read, the load is not
    t = tele({("d", 0): {"pcie_link_gen": 3, "pcie_link_width": 16}, ("d", 1): {"pcie_link_gen": 1, "pcie_link_width": 16}})
    s = links.summarize(schema.Bundle(telemetry=t))
    (f,) = s["findings"]
    assert (f["link"], f["level"]) == ("gpu1/pcie", "moderate")
    assert "whether the GPU was busy is not known" in f["evidence"] and "never busy" not in f["evidence"]


def test_nvlink_saturation_needs_a_capacity():
    t = tele({("c", 0): {"util_pct": 99.0, "nvlink_tx_mib_s": 420_000.0, "nvlink_rx_mib_s": 410_000.0}})
    b = schema.Bundle(telemetry=t)
    assert links.summarize(b)["saturated"] == []
    s = links.summarize(b, nvlink_capacity_mib_s=450e9 / 2**20)
    assert s["saturated"] == ["c:gpu0/nvlink"] and s["findings"] == []  # busy, not broken: no blame


def test_no_link_data_no_summary():
    t = tele({("d", 0): {"util_pct": 50.0}})
    assert links.summarize(schema.Bundle(telemetry=t)) is None
    assert links.summarize(schema.Bundle()) is None


def test_diagnose_names_the_degraded_links_host(degraded_run):
    from playbook.diagnosis import diagnose

    d = diagnose(degraded_run)
    link = next(h for h in d.hypotheses if h["id"] == "link_degradation")
    assert any(e.startswith("links: node7 mlx5_2/1") for e in link["evidence"])
    assert "node7" in link["next_step"]
    assert d.detail["links"]["degraded"]
