"""The forty-eighth held-out round (tests/data/eval/heldout48/SOURCES.md): real step logs of LLM pre-training and
fine-tuning tools — nanoGPT's evaluation + checkpoint every 2 iterations (PR #673), a healthy nanoGPT 4090 run
(PR #225), a LitGPT maintainer's reference run (#1607), LitGPT's optimizer step every 2nd iteration (#689) and a Tinker
SFT client's fluctuating remote steps (tinker-cookbook#418), and a parameter-golf trainer's cumulative train_time
with ~4 s stalls every 150-200 steps (openai/parameter-golf#839). The mechanism is tested apart in
tests/diagnosis/test_events_every_other_step.py."""

from __future__ import annotations

from pathlib import Path

from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout48"

ACCEPTED = {
    "nanogpt_pr673_eval_ckpt_every2.log": ("periodic_stall", "between_steps"),
    "nanogpt_pr225_4090_grad_accum_fixed.log": ("healthy", "insufficient_data"),
    "litgpt_1607_gpt2_repro_final.log": ("healthy", "insufficient_data"),
    "litgpt_689_optimizer_step_every2.log": ("healthy", "insufficient_data"),
    "tinker418_sft_lora_remote_steps.log": ("unexplained_slowdown", "insufficient_data"),
    "parametergolf839_step_avg_windows.log": ("unexplained_slowdown", "periodic_stall", "insufficient_data"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def test_the_stalls_are_the_evaluation_and_checkpoint_iterations():
    out = diagnose(read_paths([str(HERE / "nanogpt_pr673_eval_ckpt_every2.log")]))
    assert out.verdict["names"] == []  # one process's log of a 4-GPU run: no rank to blame
    ev = " ".join(out.hypotheses[0]["evidence"])
    assert "checkpoint/eval events at 4 of 4 slow steps" in ev
    assert abs(out.verdict["lost_share"] - 0.70) < 0.03


def test_no_rank_host_or_gpu_is_named():
    for name in ACCEPTED:
        assert diagnose(read_paths([str(HERE / name)])).verdict["names"] == [], name


def test_the_cumulative_train_time_is_read_as_its_differences():
    steps = read_paths([str(HERE / "parametergolf839_step_avg_windows.log")]).steps
    assert len(steps) == 14
    assert abs(float(steps["duration_s"].median()) - 0.0443) < 0.001  # 2.21 s per 50 steps, not step_avg's 65 ms
