"""The sixty-eighth held-out round (tests/data/eval/heldout68/SOURCES.md): real TensorRT `trtexec` performance
summaries — a healthy dynamic-batch engine, an enqueue-bound warning on a run whose copies fill the gap, a run the
enqueue rule flags while its GPU computes 98.8% of the walltime, a Jetson paste whose copies run in series with the
compute (its line breaks partly lost), TensorRT 7's trace lines alone. Each file's verdict (one of the accepted ids)
and the loss it prices (the mechanisms are tested apart: tests/readers/test_trtexec.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout68"

ACCEPTED = {
    "yolov7_329_trtexec_summary_healthy.log": ("healthy",),
    "sam3trt26_trtexec_enqueue_bound_warning.log": ("launch_bound", "h2d_copy"),
    "trt4177_trtexec_enqueue_warning_gpu_busy.log": ("healthy", "launch_bound"),
    "yolojetson4_trtexec_flattened_copies.txt": ("h2d_copy",),
    "trt1243_trtexec7_end_to_end_trace.log": ("healthy", "insufficient_data"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize(("name", "lost"), [
    ("yolojetson4_trtexec_flattened_copies.txt", 1 - 1.87796 / 3.05281),
    ("sam3trt26_trtexec_enqueue_bound_warning.log", 1 - 3.24255 / 3.36576),
    ("yolov7_329_trtexec_summary_healthy.log", 1 - 2.9833 / 3.00294),
])
def test_the_loss_is_the_walltime_the_gpu_did_not_compute(name, lost):
    acc = diagnose(read_paths([str(HERE / name)])).accounting
    assert acc["basis"] == "gpu"
    assert acc["lost_share"] == pytest.approx(lost, abs=0.002)


def test_no_guilty_gpu_or_rank_is_named():
    for name in ACCEPTED:
        d = diagnose(read_paths([str(HERE / name)]))
        assert d.hypotheses[0]["names"] == [], name
