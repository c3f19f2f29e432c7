"""The fifty-first held-out round (tests/data/eval/heldout51/SOURCES.md): GPU time lost to failures and restarts,
real excerpts with their causes stated — a transformers resume replaying 660,000 batches, a Lightning resume of
22,534 s that ends in rank 0's watchdog timeout, a checkpoint save followed by a 20-minute timeout, detectron2's and
torchtitan's counts restarting below the checkpoint they loaded, a torchelastic worker-group restart on a node
joining, and two Megatron launches pasted together (healthy). Each file's verdict (one of the accepted ids) and who it
names (the reading is tested apart: tests/readers/test_restart_lines.py, tests/diagnosis/test_restart_loss.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout51"

ACCEPTED = {
    "ace851_save_then_nccl_timeout.log": ("periodic_stall", "collective_straggler", "restart_loss"),
    "hf11284_resume_skip_660k_batches.log": ("restart_loss", "data_starvation"),
    "lightning19377_resume_skip_nccl_timeout.log": ("restart_loss", "collective_straggler", "data_starvation"),
    "ut23_d2_resume_iter_from_zero.log": ("restart_loss", "unexplained_slowdown"),
    "torchtitan571_second_resume_step26.log": ("restart_loss", "unexplained_slowdown"),
    "megatron1570_two_launches.log": ("healthy",),
    "lightning3029_elastic_new_node_restart.log": ("restart_loss", "insufficient_data"),
}
NOT_YET = {
    "megatron1570_two_launches.log": "the second launch's iterations 1-3 supersede the first's (3 steps read, not 6: "
                                     "a fraction-pair counter going back to 1 with the clock 11 minutes on is two "
                                     "runs), and step lines stating TFLOP/s without a device peak leave the verdict "
                                     "insufficient_data by design",
}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def _top(name: str) -> dict:
    return diagnose(read_paths([str(HERE / name)])).hypotheses[0]


@pytest.mark.parametrize("name", ["lightning19377_resume_skip_nccl_timeout.log", "ace851_save_then_nccl_timeout.log",
                                  "ut23_d2_resume_iter_from_zero.log", "torchtitan571_second_resume_step26.log"])
def test_no_rank_is_named_guilty(name):
    assert not _top(name).get("names")


@pytest.mark.parametrize(("name", "words"), [
    ("hf11284_resume_skip_660k_batches.log", "fast-forwards 660000 batches"),
    ("lightning19377_resume_skip_nccl_timeout.log", "the resume took 22534.1 s"),
    ("torchtitan571_second_resume_step26.log", "20 steps computed again"),
    ("ut23_d2_resume_iter_from_zero.log", "39981 steps computed again"),
    ("lightning3029_elastic_new_node_restart.log", "a node joined"),
])
def test_the_restart_and_its_cost_are_the_evidence(name, words):
    top = _top(name)
    assert top["id"] == "restart_loss" and words in top["evidence"][0]


def test_the_steps_computed_again_are_priced_at_the_runs_pace():
    top = _top("ut23_d2_resume_iter_from_zero.log")
    assert top["restart_s"] == pytest.approx(39981 * 1.5645, rel=0.01)  # the median of 1.5732 and 1.5558 s
