"""playbook.labs.fixes.pinned: pinned copies and the side-stream prefetcher (CPU pass-through; CUDA paths marked gpu)."""

from __future__ import annotations

import math

import pytest
import torch

from playbook.labs.fixes import pinned


def _batches(n=5):
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(4, 3, generator=g), {"y": torch.arange(4) + i, "name": f"b{i}"}) for i in range(n)]


def test_map_and_to_device_keep_structure_and_values_on_cpu():
    b = _batches(1)[0]
    moved = pinned.to_device(b, "cpu")
    assert isinstance(moved, tuple) and moved[1]["name"] == "b0"
    assert torch.equal(moved[0], b[0]) and torch.equal(moved[1]["y"], b[1]["y"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU fallback")
def test_without_cuda_everything_is_a_pass_through():
    b = _batches(1)[0]
    assert pinned.pin(b) is b
    out = list(pinned.CudaPrefetcher(_batches(), "cpu"))
    assert len(out) == 5 and all(torch.equal(o[0], s[0]) for o, s in zip(out, _batches(), strict=True))
    assert math.isnan(pinned.copy_bandwidth(1.0)) and math.isnan(pinned.pin_cost_s(1.0))


def test_host_copy_bandwidth_is_measured():
    fresh = pinned.host_copy_bandwidth(4.0, fresh=True, repeats=3)
    reused = pinned.host_copy_bandwidth(4.0, fresh=False, repeats=3)
    assert fresh > 0 and reused > 0 and math.isfinite(fresh)


@pytest.mark.gpu
def test_cuda_prefetcher_delivers_every_batch_on_the_device_intact():
    src = _batches(20)
    out = list(pinned.CudaPrefetcher(src, "cuda", pin=True))
    assert len(out) == 20
    for o, s in zip(out, src, strict=True):
        assert o[0].is_cuda and torch.equal(o[0].cpu(), s[0])
        assert torch.equal(o[1]["y"].cpu(), s[1]["y"]) and o[1]["name"] == s[1]["name"]


@pytest.mark.gpu
def test_pinning_and_copy_bandwidth_on_cuda():
    b = pinned.pin(_batches(1)[0])
    assert b[0].is_pinned()
    assert pinned.copy_bandwidth(8.0, pinned=True) > 0 and pinned.copy_bandwidth(8.0, pinned=False) > 0
    assert pinned.pin_cost_s(8.0) > 0
