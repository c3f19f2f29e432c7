"""The twenty-sixth held-out round (tests/data/eval/heldout26/SOURCES.md): real GPU telemetry files committed in
public repositories, labelled from the repositories' own text. Each file's verdict (one of the accepted ids); what
the engine does not reach yet is a strict xfail with its reason (the fixes are tested apart, on tables written
there: tests/readers/test_heldout26_readers.py, tests/analysis/test_job_end.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout26"

ACCEPTED = {
    "nanogpt_firefly_8h100_baseline_gpu01.csv": ("healthy",),
    "dcconv_knn_profile_train.csv": ("launch_bound", "host_sync"),
    "marian_mt_t4_batch1_inference.csv": ("launch_bound", "host_sync"),
    "yue_hijaz_l4_inference_gpu.csv": ("between_steps", "unexplained_slowdown"),
    "omoknuni_mcts_selfplay_3060ti.log": ("data_starvation", "pipeline_imbalance"),
    "slowfast_nvidia_sh_gpu2_util.csv": ("healthy",),
}
NOT_YET = {
    "dcconv_knn_profile_train.csv": "a steady 21% with no clock column and the power cells damaged: telemetry alone "
                                    "cannot tell host-issued small kernels from an input-bound loop "
                                    "(unexplained_slowdown, 80% lost)",
    "marian_mt_t4_batch1_inference.csv": "utilization and memory only: a steady 45% busy level that telemetry alone "
                                         "cannot tell from an input-bound loop (unexplained_slowdown, 57% lost)",
    "omoknuni_mcts_selfplay_3060ti.log": "read now (readers/aligned_table.py), but a steady ~9% at 71 W: telemetry "
                                         "alone cannot tell a GPU waiting for the host's tree search from small "
                                         "kernels (unexplained_slowdown, 88% lost)",
}


test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize("name", ["dcconv_knn_profile_train.csv", "yue_hijaz_l4_inference_gpu.csv",
                                  "omoknuni_mcts_selfplay_3060ti.log"])
def test_read_now(name):
    """Refused first; read now (an `elapsed_sec` clock and a damaged power cell; GPU readings alone; a space-aligned
    table)."""
    assert len(read_paths([str(HERE / name)]).telemetry) > 100
