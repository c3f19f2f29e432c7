"""A cost every step pays cannot show in the run's own pace: a step log whose allocator reports retried mallocs at
each logged step (torch's num_alloc_retries, as torchtitan logs it) is memory pressure, not "healthy", although no
step is slower than the others. LABELED SYNTHETIC: the lines are written here in torchtitan's format."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths


def _titan(path, retries: bool):
    lines = []
    for i in range(1, 31):
        stamp = f"2025-01-02 10:{i * 2 // 60:02d}:{i * 2 % 60:02d},000"
        if retries:
            lines.append(f"[rank0]:[titan] {stamp} - root - WARNING - {i + 3} CUDA memory allocation retries.")
        lines.append(f"[rank0]:[titan] {stamp} - root - INFO - step: {i:2d}  loss: {9 - i * 0.01:.4f}  "
                     "memory: 75.10GiB(94.90%)  tps: 4,100  tflops: 150.00  mfu: 15.00%")
    path.write_text("\n".join(lines) + "\n")
    return diagnose(read_paths([str(path)]))


def test_allocator_retries_in_every_step_are_memory_pressure_not_healthy(tmp_path):
    d = _titan(tmp_path / "train.log", retries=True)
    assert d.verdict["id"] == "memory_pressure"
    assert d.accounting["lost_share"] == 0.0  # the pace shows nothing: the allocator's own count is the evidence


def test_the_same_steady_steps_without_retries_are_healthy(tmp_path):
    assert _titan(tmp_path / "train.log", retries=False).verdict["id"] == "healthy"


def _steady_with_one(path, line: str, at: int = 30):
    """60 steady 0.5 s steps with one `line` logged after step `at` (LABELED SYNTHETIC)."""
    rng = np.random.default_rng(1)
    lines = []
    for s in range(1, 61):
        lines.append(f"step {s} loss {5 - s * 0.01:.4f} step_time {0.5 + rng.normal(0, 0.005):.3f}s")
        if s == at:
            lines.append(line)
    path.write_text("\n".join(lines) + "\n")
    return diagnose(read_paths([str(path)]))


@pytest.mark.parametrize("line", ["Caught CUDA out of memory at batch size 64, retrying with batch size 32",
                                  "1 CUDA memory allocation retries."])
def test_one_memory_event_in_a_steady_run_is_a_moment_not_a_cost_of_every_step(tmp_path, line):
    # the pace after it holds: once is what the pace would show if it cost anything, and it shows nothing
    assert _steady_with_one(tmp_path / "train.log", line).verdict["id"] == "healthy"


def test_one_allocator_retry_beside_gpus_busy_throughout_is_no_cause_the_telemetry_cannot_see(tmp_path):
    rng = np.random.default_rng(4)
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W], clocks.sm [MHz], temperature.gpu"]
    rows += [f"2025/01/01 00:{k // 60:02d}:{k % 60:02d}.000, {g}, {97 + rng.integers(0, 3)} %, "
             f"{640 + rng.normal(0, 5):.1f} W, 700.00 W, {1980 + 15 * rng.integers(-1, 2)} MHz, 65"
             for k in range(120) for g in range(2)]
    smi = tmp_path / "smi.csv"
    smi.write_text("\n".join(rows) + "\n")
    log = tmp_path / "train.log"
    _steady_with_one(log, "1 CUDA memory allocation retries.")
    assert diagnose(read_paths([str(smi), str(log)])).verdict["id"] == "healthy"
