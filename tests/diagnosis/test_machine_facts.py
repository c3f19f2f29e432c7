"""Machine facts in the diagnosis (inputs written for these tests): a PCIe link lspci states as trained below its
capability is `link_degradation` evidence naming the GPU — high when the telemetry shows that GPU lagging, a
moderate fact otherwise, and without telemetry a stated fact beside an insufficient_data verdict; a GPU topology
crossing the CPUs without NVLink is context for a collective verdict only, never a cause."""

from __future__ import annotations

import numpy as np

from playbook import diagnose
from playbook.commands import info
from playbook.commands.diagnose import render
from playbook.diagnosis import answer
from playbook.knowledge import ids
from playbook.readers import read_paths

LSPCI = """\
1b:00.0 3D controller: NVIDIA Corporation GV100GL [Tesla V100 PCIe 32GB] (rev a1)
\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 8GT/s (ok), Width x16 (ok)
3b:00.0 3D controller: NVIDIA Corporation GV100GL [Tesla V100 PCIe 32GB] (rev a1)
\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x4 (downgraded)
"""
TOPO_SYS = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tSYS\t0-19\t0\nGPU1\tSYS\t X \t20-39\t1\n"
TOPO_NV = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-19\t0\nGPU1\tNV4\t X \t0-19\t0\n"


def _telemetry(path, lag: bool) -> None:
    """Two GPUs polled each second for 4 minutes; GPU 1 at ~55% while GPU 0 sits at ~95% when `lag`."""
    rng = np.random.default_rng(7)
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W]"]
    for t in range(240):
        for gpu in (0, 1):
            level = 55.0 if (lag and gpu == 1) else 95.0
            u = float(np.clip(level + rng.normal(0, 2), 0, 100))
            rows.append(f"2025/03/04 10:{t // 60:02d}:{t % 60:02d}.000, {gpu}, {u:.0f} %, {2.5 * u + 50:.1f} W")
    path.write_text("\n".join(rows) + "\n")


def _link_findings(d) -> list[dict]:
    return [f for f in (d.detail.get("links") or {}).get("findings", []) if f["hypothesis"] == ids.LINK_DEGRADATION]


def test_downgraded_link_of_a_lagging_gpu_is_high_and_named(tmp_path):
    _telemetry(tmp_path / "node1.csv", lag=True)
    (tmp_path / "lspci.txt").write_text(LSPCI)
    d = diagnose(read_paths([tmp_path / "node1.csv", tmp_path / "lspci.txt"]))
    (f,) = _link_findings(d)
    assert f["level"] == "high" and f["gpus"] == ["node1:1"]  # the lspci paste describes the telemetry's one host
    assert "trained at 2.5 GT/s (gen1) x4, capable of 8 GT/s (gen3) x16" in f["evidence"] and "lagging" in f["evidence"]
    h = next(h for h in d.hypotheses if h["id"] == ids.LINK_DEGRADATION)
    assert "node1:1" in h["names"]


def test_downgraded_link_of_a_gpu_that_keeps_up_is_moderate(tmp_path):
    _telemetry(tmp_path / "node1.csv", lag=False)
    (tmp_path / "lspci.txt").write_text(LSPCI)
    (f,) = _link_findings(diagnose(read_paths([tmp_path / "node1.csv", tmp_path / "lspci.txt"])))
    assert f["level"] == "moderate" and "lagging" not in f["evidence"]


def test_lspci_alone_states_the_fact_beside_insufficient_data(tmp_path):
    (tmp_path / "lspci.txt").write_text(LSPCI)
    d = diagnose(read_paths([tmp_path / "lspci.txt"]))
    assert d.hypotheses[0]["id"] == ids.INSUFFICIENT_DATA and d.hypotheses[0]["lost_share"] is None
    link = next(h for h in d.hypotheses if h["id"] == ids.LINK_DEGRADATION)
    assert link["lost_share"] is None and any("gen1" in e for e in link["evidence"])
    text = render(d)
    assert "Machine (lspci -vv" in text and "gpu1/pcie: degraded" in text
    (machine,) = info.summarize(read_paths([tmp_path / "lspci.txt"]))["machine"]
    assert (machine["format"], machine["gpus"], machine["degraded"]) == ("lspci -vv", 2, 1)


def test_topology_is_context_for_a_collective_verdict_only(tmp_path):
    (tmp_path / "sys.txt").write_text(TOPO_SYS)
    (tmp_path / "nv.txt").write_text(TOPO_NV)
    alone = diagnose(read_paths([tmp_path / "sys.txt"]))
    assert alone.hypotheses[0]["id"] == ids.INSUFFICIENT_DATA
    assert not any(h["id"] in answer.COLLECTIVE_BOUND for h in alone.hypotheses)  # never a cause alone
    links = alone.detail["links"]
    straggler = {"id": ids.COLLECTIVE_STRAGGLER, "score": 0.7, "evidence": ["rank 3 is late"]}
    (got,) = answer.topology_context([straggler], links)
    assert got["score"] == 0.7 and "0-1" in got["evidence"][1] and "SYS" in got["evidence"][1]
    other = {"id": ids.DATA_STARVATION, "score": 0.7, "evidence": ["loader waits"]}
    assert answer.topology_context([other], links) == [other]
    nvlink = diagnose(read_paths([tmp_path / "nv.txt"])).detail["links"]
    assert answer.topology_context([straggler], nvlink) == [straggler]


def test_telemetry_reading_the_link_at_capability_outweighs_lspci(tmp_path):
    """lspci read GPU 1 idle at gen1 x4; the telemetry reads it at gen3 x16 throughout: not a degraded link."""
    _telemetry(tmp_path / "node1.csv", lag=False)
    rows = (tmp_path / "node1.csv").read_text().splitlines()
    rows = [rows[0] + ", pcie.link.gen.current, pcie.link.width.current"] + [r + ", 3, 16" for r in rows[1:]]
    (tmp_path / "node1.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "lspci.txt").write_text(LSPCI)
    d = diagnose(read_paths([tmp_path / "node1.csv", tmp_path / "lspci.txt"]))
    assert _link_findings(d) == []
    row = next(r for r in d.detail["links"]["links"] if r["link"] == "gpu1/pcie")
    assert row["status"] == "ok" and "reads it at its capability" in row["evidence"]
