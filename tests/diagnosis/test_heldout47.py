"""The forty-seventh held-out round (tests/data/eval/heldout47/SOURCES.md): telemetry of accelerators other than
NVIDIA's as users paste it — rocm-smi's concise tables in four layouts, an amd-smi monitor line, an npu-smi table of
a hung service. Each file's verdict (one of the accepted ids); no idle GPU is called busy: a busy share its own memory
clock and draw contradict is read as idle and said so (the mechanisms are tested apart:
tests/analysis/test_busy_flag.py, tests/readers/test_heldout_vendors.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout47"

ACCEPTED = {
    "textgen4531_rocm_smi_idle_pegged.txt": ("insufficient_data",),
    "llamacpp5280_rocm_smi_idle_pegged.txt": ("insufficient_data",),
    "rocm1861_rocm_smi_stuck_busy.txt": ("insufficient_data", "hardware_fault"),
    "vllm_ascend8972_npu_smi_hung.txt": ("insufficient_data",),
    "rocmlibs9453_rocm_smi_idle_before_bench.txt": ("insufficient_data",),
    "devmetrics135_mi210_amd_smi_12pct.txt": ("insufficient_data",),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize(("name", "pinned"), [
    ("textgen4531_rocm_smi_idle_pegged.txt", [1]),
    ("llamacpp5280_rocm_smi_idle_pegged.txt", [0]),
    ("rocm1861_rocm_smi_stuck_busy.txt", [0]),
    ("rocmlibs9453_rocm_smi_idle_before_bench.txt", []),  # idle and saying so: nothing to contradict
    ("devmetrics135_mi210_amd_smi_12pct.txt", []),  # no memory clock recorded: no judgement
])
def test_no_idle_gpu_is_called_busy(name, pinned):
    d = diagnose(read_paths([str(HERE / name)]))
    assert not [g for g in d.gpus if g["status"] == "saturated"]
    notes = [w for w in d.warnings if "busy flag without work" in w]
    assert [int(w.split(":", 2)[1]) for w in notes] == pinned
    assert all(g["mean_util_pct"] == 0.0 for g in d.gpus if g["index"] in pinned)


def test_vram_share_is_not_the_memory_busy_share():
    for name in ("textgen4531_rocm_smi_idle_pegged.txt", "llamacpp5280_rocm_smi_idle_pegged.txt",
                 "rocm1861_rocm_smi_stuck_busy.txt", "rocmlibs9453_rocm_smi_idle_before_bench.txt"):
        tel = read_paths([str(HERE / name)]).telemetry
        assert "mem_util_pct" not in tel or tel["mem_util_pct"].isna().all(), name
    amd = read_paths([str(HERE / "devmetrics135_mi210_amd_smi_12pct.txt")]).telemetry
    assert amd["mem_util_pct"].tolist() == [0.0] and amd["mem_total_mib"].tolist() == [64.0 * 1024]
    npu = read_paths([str(HERE / "vllm_ascend8972_npu_smi_hung.txt")]).telemetry
    assert npu["mem_used_mib"].tolist() == [62768.0, 61757.0] and npu["util_pct"].tolist() == [0.0, 0.0]
