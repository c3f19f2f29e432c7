"""The forty-first held-out round (tests/data/eval/heldout41/SOURCES.md): real hand-offs between GPU roles in RL
post-training, pasted in public threads with a stated cause — a colocated trainer and engine swapping the GPU's
memory every step (vime#442), an async trainer waiting on its rollouts (NeMo-RL#1052), a generation that dominates a
step (verl#6747), a batch held by its slowest sample (verl#7412); and, not reached yet, DeepSpeed's hybrid-engine
line whose generation fell outside its timer, a two-setting table of exposed generation, and a healthy table of
four configurations. Each file's verdict (one of the accepted ids) and the stage it names (the fixes are tested
apart: tests/readers/test_rl_handoff.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout41"

ACCEPTED = {
    "vime442_colocate_sleep_wake_breakdown.txt": ("pipeline_imbalance", "h2d_copy"),
    "ds4954_mistral_hybrid_engine_e2e.log": ("between_steps", "unexplained_slowdown"),
    "nemorl1052_async_timing_block.log": ("pipeline_imbalance",),
    "nemorl3278_exposed_generation_kv.txt": ("pipeline_imbalance", "insufficient_data"),
    "verl6747_ascend_gen_72pct.log": ("pipeline_imbalance", "insufficient_data"),
    "nemorl959_8b_rows_healthy.txt": ("healthy", "insufficient_data"),
    "verl7412_agent_loop_slowest_sample.log": ("pipeline_imbalance", "padding_imbalance"),
}
NOT_YET: dict[str, str] = {
    "ds4954_mistral_hybrid_engine_e2e.log": "refused: DeepSpeed's hybrid-engine line (`|E2E latency=..s |Generate "
    "time=..s (..%) |Others=..`) is no step record yet: an end-to-end latency names no step, and `Others` (the "
    "step less its timers, unitless) would need reading as time no timer covers",
    "nemorl3278_exposed_generation_kv.txt": "refused: a table of metrics by setting (rows `Exposed generation time`, "
    "columns `0.80` / `0.88`) names no step and no run; a before/after of two settings is not read from one table",
}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def _buckets(name: str) -> dict[str, float]:
    d = diagnose(read_paths([str(HERE / name)]))
    return {b["kind"]: b["seconds"] for b in d.accounting["buckets"]}


def test_the_colocated_hand_off_is_the_loss_and_the_rest_is_the_no_offload_step():
    # sleep 11.228 + wake_up 3.773 s, "what disappears" with --no-offload-train (15.0 s of 18.9 s); the trainer's
    # wait (17.425 s) holds them: left out. update_weights (0.534 s) is a stage as read: weights updated are no
    # hand-off by their words (a supervised run's optimizer updates weights too: handoff.py), and the label names it
    # no loss. The ideal left, 3.85 s, is the step less the hand-off (the thread's --no-offload-train step: 3.316 s)
    d = diagnose(read_paths([str(HERE / "vime442_colocate_sleep_wake_breakdown.txt")]))
    kinds = {b["kind"]: b["seconds"] for b in d.accounting["buckets"]}
    assert kinds["phase:handoff"] == pytest.approx(15.001) and "phase:wait" not in kinds
    assert d.accounting["ideal_s"] == pytest.approx(18.853 - 15.001, abs=0.01)


def test_the_async_trainer_waits_on_its_rollouts_not_on_the_weight_sync():
    kinds = _buckets("nemorl1052_async_timing_block.log")
    assert kinds["phase:wait"] == pytest.approx(32.52) and kinds["phase:handoff"] == pytest.approx(0.13)
    assert "stage_imbalance" not in kinds


def test_the_batch_waits_on_its_slowest_sample():
    kinds = _buckets("verl7412_agent_loop_slowest_sample.log")
    assert kinds["phase:tail"] == pytest.approx(539.5414 - 266.6393, abs=0.01)
