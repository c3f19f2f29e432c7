"""A cost every step pays cannot show in the run's own pace: a step log whose allocator reports retried mallocs at
each logged step (torch's num_alloc_retries, as torchtitan logs it) is memory pressure, not "healthy", although no
step is slower than the others. LABELED SYNTHETIC: the lines are written here in torchtitan's format."""

from __future__ import annotations

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
