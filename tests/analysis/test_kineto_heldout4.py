"""The fourth held-out round: nine real Kineto traces the engine had never seen (tests/data/kineto/heldout4,
SOURCES.md: where each comes from, what its run's problem was, and the expected answer written before the engine
ran). Each is read (no damage warning, GPU rows on their streams) and diagnosed end to end."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import kineto

HELDOUT = Path(__file__).resolve().parents[1] / "data" / "kineto" / "heldout4"

# file → (accepted verdicts, world size in the trace's distributedInfo or None)
EXPECTED = {
    # PyTorch 1.9 categories (Kernel/Runtime/Operator): DataLoader(num_workers=0), the TensorBoard tutorial's point
    "kineto_resnet50_nw0.pt.trace.json.gz": ({"data_starvation"}, None),
    # the same with num_workers=4: the loader is no longer the problem; ~1500 tiny kernels a step remain
    "kineto_resnet50_nw4.pt.trace.json.gz": ({"launch_bound", "healthy"}, None),
    # PyTorch 1.8 autograd profiler: no ProfilerStep marks, iterations read from the loader's next() calls
    "kineto_resnet50_autograd_nw0.pt.trace.json.gz": ({"data_starvation"}, None),
    # ROCm, caching allocator off: hipFree/hipMalloc between kernels (TraceLens' own test says so)
    "tracelens_mi300_resnet18_no_pool.json.gz": ({"memory_pressure"}, None),
    "tracelens_h100_bert_small.json.gz": ({"launch_bound"}, None),  # batch-1 inference, 61 ops of ~4 µs
    "tracelens_b200_vllm_eager.json.gz": ({"launch_bound"}, 8),  # eager decode, rank 0 of 8
    "tracelens_mi300_compile_triton.json.gz": ({"healthy"}, None),  # GPU busy ~100 %
    # one 463 ms synchronous hipMemcpyWithStream with the GPU idle
    "tracelens_mi300_sglang_decode.json.gz": ({"host_sync"}, 1),
}
GPU_ONLY = "tracelens_mi210_gpu_only.json.gz"  # GPU activity alone: no CPU op, annotation or Python frame


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_heldout4_trace_is_read_and_diagnosed(name):
    accepted, world = EXPECTED[name]
    bundle = kineto.read(HELDOUT / name)
    assert not bundle.warnings
    meta = bundle.meta["kineto"][0]
    assert meta["world_size"] == world
    gpu = bundle.trace[bundle.trace["stream"] != -1]
    assert len(gpu) and set(gpu["cat"].astype(str)) & {"kernel", "Kernel"}
    d = diagnose(bundle)
    assert d.hypotheses[0]["id"] in accepted, d.verdict


def test_heldout4_gpu_only_trace_asks_for_the_host_side():
    bundle = kineto.read(HELDOUT / GPU_ONLY)
    assert not bundle.warnings and set(bundle.trace["cat"].astype(str)) >= {"kernel", "cuda_runtime"}
    d = diagnose(bundle)
    # the host is not in the trace: no input-pipeline or GC reading is offered, and the next step records it
    ids = [h["id"] for h in d.hypotheses]
    assert "data_starvation" not in ids and "gc_pause" not in ids
    idle = next(h for h in d.hypotheses if any("GPU activity only" in e for e in h["evidence"]))
    assert "activities=[CPU, CUDA]" in idle["next_step"]


def test_heldout4_trace_cut_short_keeps_its_verdict(tmp_path):
    # a profiler killed mid-write: the first half of the num_workers=0 trace, unterminated
    raw = gzip.decompress((HELDOUT / "kineto_resnet50_nw0.pt.trace.json.gz").read_bytes())
    cut = tmp_path / "worker0.pt.trace.json"
    cut.write_bytes(raw[: len(raw) // 2])
    bundle = kineto.read(cut)
    assert len(bundle.warnings) == 1 and "ends before the traceEvents array closes" in bundle.warnings[0]
    assert diagnose(bundle).hypotheses[0]["id"] == "data_starvation"
