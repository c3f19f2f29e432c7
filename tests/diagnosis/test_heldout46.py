"""The forty-sixth held-out round (tests/data/eval/heldout46/SOURCES.md): real runs that are healthy — a DINO
author's reference stdout, Hugging Face Trainer per-step dicts between tqdm bars, a maintainer's nvidia-smi snapshot
of a training GPU, NeMo iteration lines, a JAX run whose first step compiles (elapsed in minutes), and two committed
results logs (DGL GraphSAGE epochs with eval passes, a ResNet-18 epoch log). None may be a false alarm: each verdict
is healthy or, where the file cannot tell, insufficient_data (the reader fixes are tested apart:
tests/readers/test_healthy_formats.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout46"

ACCEPTED = {
    "dino69_vits16_8gpu_reference.log": ("healthy", "insufficient_data"),
    "hf_msft7_step_runtime_tqdm.log": ("healthy", "insufficient_data"),
    "crnn3_p40_nvidia_smi.txt": ("insufficient_data", "healthy"),
    "bionemo740_nemo_iterations.log": ("healthy", "insufficient_data"),
    "jaxsandbox_jit_first_step.log": ("healthy",),
    "graphsage_multigpu_4gpu_epochs.log": ("healthy",),
    "noprop_cifar100_resnet18_epochs.log": ("healthy",),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_no_cause_is_named_and_nothing_is_lost(name):
    out = diagnose(read_paths([str(HERE / name)]))
    assert out.verdict["names"] == []
    assert (out.verdict.get("lost_share") or 0.0) < 0.01


def test_the_exact_per_step_runtime_is_read_not_the_bars_smoothed_rate():
    steps = read_paths([str(HERE / "hf_msft7_step_runtime_tqdm.log")]).steps
    assert sorted(round(x, 4) for x in steps["duration_s"]) == [0.6309, 0.6355, 0.641, 0.6715, 0.6717]


def test_minutes_of_the_elapsed_clock_are_read():
    steps = read_paths([str(HERE / "jaxsandbox_jit_first_step.log")]).steps
    assert len(steps) == 5 and abs(float(steps["duration_s"].median()) - 0.372) < 0.01  # 0.62 min per 100 steps
