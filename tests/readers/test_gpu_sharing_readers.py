"""Who shares a GPU, as the tools print it (readers/nvidia_smi/processes.py, readers/gpustat_text.py,
readers/collected.py's quote marks): inputs written apart from tests/data/eval/heldout52 — other drivers' layouts
(535's GI / CI columns, C+G and N/A memory), other numbers, other wrappings."""

from __future__ import annotations

import pytest

from playbook.model import schema
from playbook.readers import read_paths

BANNER_535 = """\
Tue Apr  2 09:14:05 2024
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |
| N/A   33C    P0              62W / 400W |  40121MiB / 81920MiB |      0%   E. Process |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+
|   1  NVIDIA A100-SXM4-80GB          On  | 00000000:0F:00.0 Off |                    0 |
| N/A   35C    P0              64W / 400W |     12MiB / 81920MiB |      0%      Default |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+
"""
PROCESSES_535 = """\
+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    0   N/A  N/A    812345      C   python3                                   30100MiB |
|    0   N/A  N/A    812399    C+G   [Not Found]                               10000MiB |
|    1   N/A  N/A      2231      G   /usr/lib/xorg/Xorg                              N/A |
+---------------------------------------------------------------------------------------+
"""


def _sharing(bundle) -> dict:
    (section,) = [v for k, v in bundle.meta.items() if k.startswith(schema.GPU_SHARING)]
    return section


def test_the_535_processes_rows_are_read_with_their_type_name_and_memory(tmp_path):
    f = tmp_path / "smi.txt"
    f.write_text(BANNER_535 + "\n" + PROCESSES_535)
    b = read_paths([str(f)])
    rows = [(r["gpu"], r["pid"], r["type"], r["name"], r["mem_mib"]) for r in _sharing(b)["processes"]]
    assert rows == [(0, "812345", "C", "python3", 30100.0), (0, "812399", "C+G", "[Not Found]", 10000.0),
                    (1, "2231", "G", "/usr/lib/xorg/Xorg", None)]
    assert _sharing(b)["modes"] == {"0": "E. Process", "1": "Default"}
    assert b.meta[schema.GPU_PROCESSES] == {"smi:0": ["812345", "812399"], "smi:1": ["2231"]}
    assert len(b.telemetry) == 2  # the GPU rows read as before


def test_a_processes_section_alone_is_read_not_refused(tmp_path):
    f = tmp_path / "procs.txt"
    f.write_text(PROCESSES_535)
    b = read_paths([str(f)])
    assert not b.is_empty() and not len(b.telemetry)
    assert [r["pid"] for r in _sharing(b)["processes"]] == ["812345", "812399", "2231"]
    assert any("Processes section alone: 3 processes" in w for w in b.warnings)


def test_only_the_last_snapshots_processes_are_kept(tmp_path):
    later = PROCESSES_535.replace("    1   N/A  N/A      2231      G   /usr/lib/xorg/Xorg                              N/A |\n", "")
    f = tmp_path / "loop.txt"
    f.write_text(BANNER_535 + PROCESSES_535 + BANNER_535.replace("09:14:05", "09:14:07") + later)
    assert [r["pid"] for r in _sharing(read_paths([str(f)]))["processes"]] == ["812345", "812399"]


@pytest.mark.parametrize("quote", ["> ", ">  ", "    > "])
def test_a_quoted_table_reads_like_the_plain_one(tmp_path, quote):
    plain = BANNER_535 + PROCESSES_535
    f = tmp_path / "quoted.txt"
    # a quote's blank line is its marker alone
    f.write_text("\n".join((quote + ln) if ln.strip() else quote.rstrip() for ln in plain.split("\n")))
    g = tmp_path / "plain.txt"
    g.write_text(plain)
    a, b = read_paths([str(f)]), read_paths([str(g)])
    assert a.telemetry["util_pct"].tolist() == b.telemetry["util_pct"].tolist() == [0.0, 0.0]
    assert a.telemetry["mem_used_mib"].tolist() == [40121.0, 12.0]


MIG_510 = """\
+-----------------------------------------------------------------------------+
| MIG devices:                                                                |
+------------------+----------------------+-----------+-----------------------+
| GPU  GI  CI  MIG |         Memory-Usage |        Vol|         Shared        |
|      ID  ID  Dev |           BAR1-Usage | SM     Unc| CE  ENC  DEC  OFA  JPG|
|                  |                      |        ECC|                       |
|==================+======================+===========+=======================|
|  0    1   0   0  |   9000MiB /  9856MiB | 14      0 |  1   0    0    0    0 |
|                  |      2MiB / 16383MiB |           |                       |
+------------------+----------------------+-----------+-----------------------+
|  0    2   0   1  |   8800MiB /  9856MiB | 14      0 |  1   0    0    0    0 |
|                  |      2MiB / 16383MiB |           |                       |
+------------------+----------------------+-----------+-----------------------+
"""


def test_the_mig_devices_section_gives_each_slices_memory(tmp_path):
    f = tmp_path / "mig.txt"
    f.write_text(BANNER_535.split("|   1  NVIDIA")[0] + MIG_510)
    slices = _sharing(read_paths([str(f)]))["mig"]
    assert [(s["gpu"], s["gi"], s["mem_used_mib"], s["mem_total_mib"], s["sm"]) for s in slices] == [
        (0, 1, 9000.0, 9856.0, 14), (0, 2, 8800.0, 9856.0, 14)]


GPUSTAT_CP = """\
gpu-node-3                Mon Feb  5 08:00:01 2024  545.23.08
[0] NVIDIA RTX A6000 | 61°C,  97 % | 30511 / 49140 MB | alice:python/40112(30505M)
[1] NVIDIA RTX A6000 | 33°C,   0 % | 20233 / 49140 MB | bob:jupyter-lab/7781(20227M) alice:python/40112(4M)
"""


def test_gpustat_processes_with_command_and_pid(tmp_path):
    f = tmp_path / "gs.txt"
    f.write_text(GPUSTAT_CP)
    rows = _sharing(read_paths([str(f)]))["processes"]
    assert [(r["gpu"], r["user"], r["name"], r["pid"], r["mem_mib"]) for r in rows] == [
        (0, "alice", "python", "40112", 30505.0), (1, "bob", "jupyter-lab", "7781", 20227.0),
        (1, "alice", "python", "40112", 4.0)]


def test_gpustat_recast_as_a_markdown_table_reads_like_its_lines(tmp_path):
    lines = GPUSTAT_CP.strip().split("\n")[1:]
    table = ["| GPU | temp, util | memory | users |", "|:---|---:|:-:|---|"] + [f"| {ln} |" for ln in lines]
    f, g = tmp_path / "md.txt", tmp_path / "plain.txt"
    f.write_text("\n".join(table) + "\n")
    g.write_text("\n".join(lines) + "\n")
    a, b = read_paths([str(f)]), read_paths([str(g)])
    assert a.telemetry["util_pct"].tolist() == b.telemetry["util_pct"].tolist() == [97.0, 0.0]
    assert _sharing(a)["processes"] == _sharing(b)["processes"]
