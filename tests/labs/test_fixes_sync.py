"""playbook.labs.fixes.sync: metrics accumulated on the device, read every N steps."""

from __future__ import annotations

import pytest
import torch

from playbook.labs.fixes.sync import MetricAccumulator, sync_debug


def test_accumulator_reads_once_every_n_steps_with_the_means():
    acc = MetricAccumulator(every=4)
    outs = [acc.add(step, loss=torch.tensor(float(step)), correct=step % 2) for step in range(10)]
    assert [i for i, o in enumerate(outs) if o] == [3, 7]
    assert outs[3] == {"loss": 1.5, "correct": 0.5} and outs[7]["loss"] == 5.5
    assert acc.reads == 2
    assert acc.flush() == {"loss": 8.5, "correct": 0.5} and acc.reads == 3
    assert acc.flush() is None


def test_accumulator_keeps_tensors_detached_and_validates():
    acc = MetricAccumulator(every=100)
    w = torch.ones(1, requires_grad=True)
    acc.add(0, loss=(w * 2).sum())
    assert not acc._sums["loss"].requires_grad
    with pytest.raises(ValueError):
        MetricAccumulator(every=0)


def test_sync_debug_is_harmless_without_cuda():
    with sync_debug("warn"):
        assert torch.tensor(3.0).item() == 3.0
