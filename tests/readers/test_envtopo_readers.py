"""Readers of machine facts, on inputs written for these tests (not the held-out pastes): `nvidia-smi topo -m`
(playbook.readers.topo_matrix), `lspci -vv` (playbook.readers.lspci), and the GPU Link Info of `nvidia-smi -q`
text. Formats are told from their structure; a line that does not parse is a counted warning."""

from __future__ import annotations

import math

from playbook.readers import detect, read_paths

# an old driver's matrix: SOC for the socket link, a NIC named by its device, CPU Affinity only; cells glued in
# one row, two cells lost in another, and a shell prompt pasted after it
TOPO_OLD = """\
        GPU0    GPU1    GPU2    mlx4_0  CPU Affinity
GPU0     X      NV2     SOC     PHB     0-9
GPU1    NV2      X      SOCSOC  0-9
GPU2    SOC     SOC
mlx4_0  PHB     SOC     SOC      X
user@node:~$
Legend:
  X   = Self
  SOC  = Connection traversing PCIe as well as the SMP link between CPU sockets(e.g. QPI)
  NV#  = Connection traversing a bonded set of # NVLinks
"""

LSPCI = """\
40:01.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge
\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM L1, Exit Latency L1 <64us
\t\tLnkSta:\tSpeed 8GT/s (downgraded), Width x16 (ok)
81:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 40GB] (rev a1)
\tNUMA node: 1
\tCapabilities: [78] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM not supported
\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+
\t\tLnkSta:\tSpeed 16GT/s (ok), Width x4 (downgraded)
\t\tLnkCap2: Supported Link Speeds: 2.5-16GT/s, Crosslink- Retimer+ 2Retimers+ DRS-
41:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 40GB] (rev a1)
\tNUMA node: 0
\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 16GT/s, Width x16, TrErr- Train- SlotClk+ DLActive-
c1:00.0 VGA compatible controller: NVIDIA Corporation GA102 (rev a1)
\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16
\t\tLnkSta:\tSpeed 8GT/s, Width x8, TrErr- Train-
\t\tLnkSta:\tSpeed ??, Width ??
"""


def _section(path):
    bundle = read_paths([path])
    (sec,) = [v for k, v in bundle.meta.items() if k.startswith("environment:")]
    return bundle, sec


def test_topo_matrix_is_read_by_its_path_grammar(tmp_path):
    f = tmp_path / "node7.txt"
    f.write_text(TOPO_OLD)
    assert detect.detect(f) == "topo_matrix"
    bundle, sec = _section(f)
    assert sec["format"] == "nvidia-smi topo -m" and sec["host"] == "node7" and sec["gpu_count"] == 3
    assert sec["pairs"] == {"0-1": "NV2", "0-2": "SOC", "1-2": "SOC"}  # glued SOCSOC read as two cells
    assert sec["gpus"]["0"] == {"cpu_affinity": "0-9", "numa": None, "nic_paths": {"mlx4_0": "PHB"}}
    assert sec["nics"] == {"mlx4_0": "mlx4_0"}
    assert sec["gpus"]["1"]["nic_paths"] == {"mlx4_0": "SOC"}
    # GPU2's row holds 2 paths for 4 devices: skipped and counted, like the prompt line
    (warning,) = bundle.warnings
    assert "skipped 2 of" in warning and "GPU2: 2 paths for 4 devices" in warning and "node7.txt" in warning


def test_topo_matrix_new_layout_affinity_columns(tmp_path):
    f = tmp_path / "topo.txt"
    f.write_text("\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
                 "GPU0\t X \tNODE\tPXB\t0-31\t0\t\tN/A\nGPU1\tNODE\t X \tSYS\t32-63\t1\t\tN/A\n"
                 "NIC0\tPXB\tSYS\t X \t\t\t\t\n\nNIC Legend:\n\n  NIC0: mlx5_4\n")
    bundle, sec = _section(f)
    assert bundle.warnings == []
    assert sec["pairs"] == {"0-1": "NODE"} and sec["nics"] == {"NIC0": "mlx5_4"}
    assert (sec["gpus"]["1"]["cpu_affinity"], sec["gpus"]["1"]["numa"]) == ("32-63", "1")


def test_lspci_links_per_gpu_in_bus_order(tmp_path):
    f = tmp_path / "gpu-node.txt"
    f.write_text(LSPCI)
    assert detect.detect(f) == "lspci"
    bundle, sec = _section(f)
    gpus = sec["gpus"]
    assert [gpus[g]["bus_id"] for g in ("0", "1", "2")] == ["41:00.0", "81:00.0", "c1:00.0"]
    assert (gpus["0"]["downgraded"], gpus["0"]["gen"], gpus["0"]["width"]) == (False, 4, 16)
    assert gpus["1"]["downgraded"] and gpus["1"]["why"] == ["width"] and gpus["1"]["numa"] == "1"
    assert (gpus["1"]["gen"], gpus["1"]["width"], gpus["1"]["max_gen"], gpus["1"]["max_width"]) == (4, 4, 4, 16)
    # an lspci without the (ok)/(downgraded) verdicts: compared with LnkCap
    assert gpus["2"]["downgraded"] and gpus["2"]["why"] == ["speed", "width"] and gpus["2"]["gen"] == 3
    assert sec["other_devices"] == 1 and sec["devices"] == []  # the bridge is counted, not a GPU
    (warning,) = bundle.warnings
    assert "skipped 1 of" in warning and "LnkSta states no speed or width" in warning


def test_lspci_grepped_lines_without_a_header(tmp_path):
    f = tmp_path / "lnk.txt"
    f.write_text("\tLnkCap:\tPort #8, Speed 32GT/s, Width x16\n\tLnkSta:\tSpeed 32GT/s (ok), Width x8 (downgraded)\n")
    _, sec = _section(f)
    (dev,) = sec["devices"]
    assert sec["gpus"] == {} and dev["downgraded"] and (dev["gen"], dev["max_gen"], dev["width"]) == (5, 5, 8)


def test_ordinary_logs_are_not_machine_facts(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("GPU0 step 10 loss 2.31\nGPU0 step 11 loss 2.29\nLnkSta mentioned in a comment\n")
    csv = tmp_path / "gpu.csv"
    csv.write_text("timestamp, index, utilization.gpu [%]\n2025/01/01 00:00:00.000, 0, 97 %\n")
    assert detect.detect(log) not in ("topo_matrix", "lspci")
    assert detect.detect(csv) not in ("topo_matrix", "lspci")


def test_smi_q_link_info_generation_and_maxima(tmp_path):
    f = tmp_path / "q.txt"
    f.write_text("==============NVSMI LOG==============\n\nTimestamp                                 : "
                 "Tue Mar  4 10:00:00 2025\n\nGPU 00000000:41:00.0\n    Minor Number                          : 3\n"
                 "    PCI\n        GPU Link Info\n            PCIe Generation\n"
                 "                Max                       : 5\n                Current                   : 2\n"
                 "                Device Current            : 2\n                Device Max                : 5\n"
                 "                Host Max                  : 5\n            Link Width\n"
                 "                Max                       : 16x\n                Current                   : 8x\n"
                 "    Utilization\n        Gpu                               : 91 %\n")
    bundle = read_paths([f])
    row = bundle.telemetry.iloc[0]
    assert int(row["gpu"]) == 3 and row["pcie_link_gen"] == 2.0 and row["pcie_link_width"] == 8.0
    assert not math.isnan(row["util_pct"])
    (sec,) = [v for k, v in bundle.meta.items() if k.startswith("environment:")]
    assert sec["gpus"] == {"3": {"max_gen": 5, "max_width": 16}}
