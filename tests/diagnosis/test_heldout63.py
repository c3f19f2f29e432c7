"""The sixty-third held-out round (tests/data/eval/heldout63/SOURCES.md): GPU metrics as a Grafana panel's
inspector downloads them — the "for Excel" form with epoch-ms times, a recording rule's node-level series beside the
per-GPU ones, nvidia_gpu_exporter's 0-1 ratio in the long layout, four GPUs of which three hold memory and never
compute. Each file's verdict (the fixes are tested apart: tests/readers/test_dashboard_series.py,
tests/diagnosis/test_unused_gpus.py)."""

from __future__ import annotations

from pathlib import Path

from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout63"

ACCEPTED = {
    "grafana_excel_epochms_lanedet15.csv": ("data_starvation",),
    "grafana_wide_gpustack5614_h200.csv": ("healthy",),
    "grafana_long_deepspeech1468_1070.csv": ("between_steps",),
    "grafana_wide_keras512_4gpu.csv": ("unused_gpus",),
}
NOT_YET = {
    "grafana_excel_epochms_lanedet15.csv": (
        "one GPU's utilization (15 s mixes of 0 % and 80 %) and a flat memory line: an input-bound loop, small "
        "kernels, host syncs and CPU work between steps all look alike in it; the engine prices the idle time "
        "(64%) and names no cause (unexplained_slowdown) rather than guess data loading from utilization alone"),
    "grafana_long_deepspeech1468_1070.csv": (
        "CPU-bound WER computation between the steps shows in utilization and power only as idle time (ratio mean "
        "0.42): nothing in the series separates it from a data loader that cannot keep up; 55% priced, no cause "
        "named (unexplained_slowdown)"),
}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def test_the_node_level_series_is_no_gpu_and_the_idle_gpus_are_named():
    gpustack = read_paths([str(HERE / "grafana_wide_gpustack5614_h200.csv")])
    assert sorted(gpustack.telemetry["gpu"].unique()) == [0, 1] and set(gpustack.telemetry["host"]) == {
        "gpustack-worker-1"}
    keras = diagnose(read_paths([str(HERE / "grafana_wide_keras512_4gpu.csv")]))
    assert sorted(n.rsplit(":", 1)[1] for n in keras.verdict["names"]) == ["1", "2", "3"]


def test_the_ratio_is_read_as_percent_and_the_epoch_ms_as_times():
    ratio = read_paths([str(HERE / "grafana_long_deepspeech1468_1070.csv")]).telemetry
    assert 35 < ratio["util_pct"].mean() < 50 and ratio["power_w"].max() < 200
    excel = read_paths([str(HERE / "grafana_excel_epochms_lanedet15.csv")]).telemetry
    span = (excel["time"].max() - excel["time"].min()).total_seconds()
    assert len(excel) == 160 and span == 159 * 15
