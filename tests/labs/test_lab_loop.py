"""playbook.labs.workloads.loop: the labs' shared models, datasets, loop meter and variant bookkeeping."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from playbook.analysis.lab_verdict import paired
from playbook.labs.fixes.shapes import collate_padded
from playbook.labs.workloads import loop as m
from playbook.labs.workloads.models import MLP, TinyTransformer


def test_image_dataset_is_deterministic_and_learnable():
    a, b = m.ImageDataset(n=64, shape=(3, 4, 4), seed=1), m.ImageDataset(n=64, shape=(3, 4, 4), seed=1)
    assert torch.equal(a[5][0], b[5][0]) and a[5][1] == b[5][1] and a.features == 48
    net = MLP.for_dataset(a, hidden=32)
    opt = m.make_optimizer(net, lr=1e-2)
    x, y = a.bank, a.labels
    first = m.train_step(net, opt, x, y)
    for _ in range(60):
        last = m.train_step(net, opt, x, y)
    assert float(last) < 0.5 * float(first) and not last.requires_grad
    aug = m.ImageDataset(n=8, shape=(3, 4, 4), augment_passes=3, seed=1)
    assert not torch.equal(aug[0][0], a[0][0])
    with pytest.raises(ValueError):
        m.ImageDataset(n=0)


def test_sequences_are_skewed_short_and_padding_is_invisible_to_the_model():
    ds = m.SequenceDataset(n=400, min_len=8, max_len=64, seed=0)
    lengths = torch.tensor([len(s) for s, _ in (ds[i] for i in range(len(ds)))])
    assert lengths.min() >= 8 and lengths.max() <= 64 and lengths.float().median() < 36
    samples = [ds[i] for i in range(4)]
    tight, labels = collate_padded(samples)
    wide, _ = collate_padded(samples, 80)
    assert tight.shape[1] == max(len(s) for s, _ in samples) and wide.shape == (4, 80)
    net = TinyTransformer(max_len=128).eval()
    with torch.no_grad():
        assert torch.allclose(net(tight), net(wide), atol=1e-5)  # masked attention and pooling
    assert labels.shape == (4,)


def test_loop_meter_and_loss_curves():
    meter = m.LoopMeter("cpu").start()
    for i in range(3):
        meter.add(torch.tensor(float(3 - i)), 10)
    meter.stop()
    assert meter.samples == 30 and meter.steps == 3 and meter.throughput > 0
    assert meter.losses() == [3.0, 2.0, 1.0] and math.isnan(meter.peak_mem_mib())
    r = m.RunResult("fix", "d", 3, 30, 1.0, 30.0, 0.1, 0.2, 0.3, {"fwd": 0.5}, {"fwd": 0.5}, [2.0, 1.0], math.nan,
                    100.0, {"note": "x", "nested": {"a": 1}})
    row = r.row()
    assert row["share_fwd"] == 0.5 and row["final_loss"] == 1.0 and row["note"] == "x" and "nested" not in row
    curves = m.loss_curves([r, r])
    assert curves["repeat"].tolist() == [0, 0, 1, 1] and curves["loss"].tolist() == [2.0, 1.0, 2.0, 1.0]


def test_paired_ratios_divide_within_each_repeat():
    runs = pd.DataFrame({"variant": ["no_fault", "fix", "no_fault", "fix", "fix"], "repeat": [0, 0, 1, 1, 2],
                         "throughput": [100.0, 95.0, 50.0, 49.0, 10.0]})
    out = paired(runs)
    assert out["throughput_paired"].tolist()[:4] == [1.0, 0.95, 1.0, 0.98]
    assert math.isnan(out["throughput_paired"].iloc[4])  # no baseline in that repeat


def test_cpu_threads_is_restored():
    before = torch.get_num_threads()
    with m.cpu_threads(1, torch.device("cpu")):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
