"""The thirty-seventh held-out round (tests/data/eval/heldout37/SOURCES.md): real phase / section timer output of
training frameworks pasted in public threads with a stated cause — DeepSpeed's wall_clock_breakdown with a CPU-Adam
optimizer step of 22.9 s, Megatron-LM's iteration lines at 130 TFLOP/s per H100 (an MoE layout a maintainer calls
too slow), nanoGPT's steady steps (healthy), a Lightning SimpleProfiler report of a framework regression, GPT-NeoX's
pipeline timers with communication at 85%, and an EfficientDet data_time spike. Each file's verdict (one of the
accepted ids) and what it must (not) name (the fixes are tested apart: tests/readers/test_stated_efficiency.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout37"

ACCEPTED = {
    "deepspeed_1635_cpu_adam_step.log": ("insufficient_data", "unexplained_slowdown", "launch_bound"),
    "megatron_756_mixtral_130tflops.log": ("insufficient_data", "unexplained_slowdown"),
    "nanogpt_110_grad_accum_healthy.log": ("healthy", "insufficient_data"),
    "lightning_9304_fit_profiler.txt": ("launch_bound", "insufficient_data", "unexplained_slowdown"),
    "neox_126_pipe_comms_breakdown.log": ("collective_straggler", "link_degradation"),
    "efficientdet_322_data_time_spike.log": ("data_starvation", "periodic_stall"),
}
NOT_YET = {
    "neox_126_pipe_comms_breakdown.log": (
        "one rank's pipeline timers: pipe_send_output + pipe_recv_grad (19%) read as the stage waiting on its "
        "neighbour (pipeline_imbalance, as heldout30's ds2264 stage 0 is labelled), reduce_grads (34%) as a "
        "collective's transfer on one rank (no loss); the thread names communication as the bottleneck, which "
        "needs the links' rate or every stage's timers to tell from a pipeline bubble"),
}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_no_rank_or_host_is_named(name):
    assert diagnose(read_paths([str(HERE / name)])).hypotheses[0]["names"] == []


def test_the_megatron_throughput_is_read_and_named_as_why_health_is_unproven():
    d = diagnose(read_paths([str(HERE / "megatron_756_mixtral_130tflops.log")]))
    assert "130.1 TFLOP/s per device" in " ".join(d.hypotheses[0]["evidence"])


def test_the_cpu_adam_step_is_the_optimizer_phase():
    steps = read_paths([str(HERE / "deepspeed_1635_cpu_adam_step.log")]).steps
    opt = steps.loc[steps["phase"] == "optimizer", "duration_s"].sum()
    whole = steps.loc[steps["phase"] == "step", "duration_s"].sum()
    assert opt == pytest.approx(22.88087) and opt / whole > 0.9
