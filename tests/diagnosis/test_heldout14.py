"""The fourteenth held-out round (tests/data/eval/heldout14/SOURCES.md): GPU telemetry in formats other than
`--query-gpu` CSV, from public threads that state a cause. Each file's reading and its labelled verdict; what the
engine does not reach yet is a strict xfail with its reason (the mechanisms are tested apart, on inputs written
there: tests/readers/test_heldout14_readers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import cases

from playbook.commands import info
from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout14"

LABELS = {
    "yolov5_2491_v100_hang.txt": "collective_straggler",
    "amdsmi_130_mi300x_monitor.txt": "healthy",
    "rocm564_pro_duo_thermal.txt": "throttling",
    "barc_9_gpustat_watch.log": "data_starvation",
    "deit_81_dcgm_query_range.json": "data_starvation",
    "tf_11022_pmon_two_procs.txt": "healthy",
}
NOT_YET = {
    "yolov5_2491_v100_hang.txt": "one poll: the engine asks for 20 polls before naming a cause (a GPU at 100% on a "
                                 "fifth of its power beside idle ones is a spin, but one poll cannot tell a hang "
                                 "from a moment; heldout4's pytorch_36285_one_snapshot is the same table labelled "
                                 "insufficient_data)",
    "amdsmi_130_mi300x_monitor.txt": "two polls: read right now (GFX% 96-97, 2106 MHz, 293-305 W), too few to vouch "
                                     "for health (insufficient_data)",
}


@pytest.mark.parametrize(("name", "label"), cases(LABELS, NOT_YET))
def test_verdict(name, label):
    assert diagnose(read_paths([str(HERE / name)])).verdict["id"] == label


def test_readings():
    hang = read_paths([str(HERE / "yolov5_2491_v100_hang.txt")]).telemetry.sort_values("gpu")
    assert list(hang["util_pct"]) == [0, 100, 0] and list(hang["power_w"]) == [44, 46, 25]
    assert list(hang["power_limit_w"]) == [250, 250, 250]
    amd = read_paths([str(HERE / "amdsmi_130_mi300x_monitor.txt")]).telemetry
    assert list(amd["util_pct"]) == [97, 96] and list(amd["power_w"]) == [305, 293]
    assert list(amd["sm_clock_mhz"]) == [2106, 2106] and list(amd["temp_c"]) == [49, 49]
    rocm = read_paths([str(HERE / "rocm564_pro_duo_thermal.txt")]).telemetry
    assert rocm["gpu"].nunique() == 6 and len(rocm) == 6 * 480
    assert rocm["sm_clock_mhz"].min() == 910 and rocm["temp_c"].max() >= 84
    pmon = read_paths([str(HERE / "tf_11022_pmon_two_procs.txt")])
    assert pmon.telemetry["util_pct"].between(80, 100).all()  # two processes' sm summed per sample
    assert "is shared by 2 processes (pids 23145, 23188)" in info.render(info.summarize(pmon))
    dcgm = read_paths([str(HERE / "deit_81_dcgm_query_range.json")]).telemetry
    assert dcgm["gpu"].nunique() == 8 and dcgm["power_w"].notna().all()


def test_losing_runs_are_not_called_healthy():
    for name, label in LABELS.items():
        if label != "healthy":
            assert diagnose(read_paths([str(HERE / name)])).verdict["id"] != "healthy", name
