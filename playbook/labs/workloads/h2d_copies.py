"""Host-to-device copy lab: every step waits for its batch to cross PCIe, instead of overlapping the copy.

What it reproduces
  An MLP trains on large image-like batches that sit in host memory (data loading itself is free here, so the
  copy is the only cost outside compute). Knobs:
    memory=pageable, non_blocking=False     the fault: a synchronous copy from pageable memory every step
    memory=pinned, non_blocking=True        page-locked batches, asynchronous copy (no overlap without a stream)
    memory=pinned, prefetcher=True          the fix: playbook.labs.fixes.pinned.CudaPrefetcher copies batch k+1 on a
                                            side stream while batch k trains
    memory=device                           no fault: the batches are on the device before the loop starts

The exact command
  python -m playbook.labs.workloads.h2d_copies --variants no_fault,fault,fix --repeats 3        # on a CUDA machine
  playbook diagnose runs/h2d_copies/fault-r0

How to read the result
  With CUDA: the fault's throughput is below no_fault by roughly the copy time per step (phase "h2d" in the
  steps table, GPU time from CUDA events); the fix brings it back to ≥ 95% of no_fault when a step's compute is
  longer than its copy (raise `hidden` when it is not). Without CUDA there is no host-to-device copy: every variant
  runs the same code path on CPU and the lab is inconclusive by construction — `host_bandwidth()` reports what the
  CPU can measure (host copy throughput into fresh vs reused buffers, the bytes each step would move).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playbook.core.errors import WorkloadError
from playbook.labs.workloads._harness import LoopKnobs, defaults, knob, resolve_knobs, variant_cli


@dataclass
class H2DConfig(LoopKnobs):
    """The knobs of one run (defaults; a variant's preset in VARIANTS overrides them)."""

    steps: int = knob(40, "timed training steps per run")
    warmup_steps: int = knob(3, "untimed steps first")
    batch_size: int = knob(0, "samples per step (0: 32 on CPU, 256 on CUDA)")
    image_size: int = knob(0, "samples are 3 × image_size × image_size float32 (0: 32 on CPU, 64 on CUDA)")
    bank_batches: int = knob(4, "distinct host batches cycled through")
    memory: str = knob("pageable", "pageable | pinned | device")
    non_blocking: bool = knob(False, "copy with non_blocking=True")
    prefetcher: bool = knob(False, "copy one batch ahead on a side CUDA stream")
    hidden: int = knob(0, "MLP width (0: 256 on CPU, 4096 on CUDA, so compute can cover the copy)")
    depth: int = knob(2, "hidden layers")
    bandwidth_mib: float = knob(64.0, "notebook: buffer size of the copy-bandwidth measurements (MiB)", cli=False)


KNOBS: dict[str, Any] = defaults(H2DConfig)
CONFIG = H2DConfig
VARIANTS: dict[str, dict[str, Any]] = {
    "no_fault": {"memory": "device"},
    "fault": {"memory": "pageable", "non_blocking": False},
    "pinned": {"memory": "pinned", "non_blocking": True},
    "fix": {"memory": "pinned", "non_blocking": True, "prefetcher": True},
}


def auto_size(k: dict[str, Any], device: Any) -> dict[str, Any]:
    """Fill batch_size / hidden / image_size left at 0: small on CPU; on CUDA 256 × 48 KiB samples (12 MiB per
    batch) and a model whose step takes longer than the copy, so that the copy can be hidden."""
    cuda = device.type == "cuda"
    k = dict(k)
    k["batch_size"] = k["batch_size"] or (256 if cuda else 32)
    k["hidden"] = k["hidden"] or (4096 if cuda else 256)
    k["image_size"] = k["image_size"] or (64 if cuda else 32)
    return k


def run(run_dir: str | Path, variant: str = "fault", **overrides: Any):
    """Train with the variant's copy strategy; record into `run_dir`; return a RunResult (extra: batch_mib,
    copy_gib_s = bytes moved ÷ summed h2d phase time, cuda)."""
    import torch

    from playbook.labs.fixes.pinned import CudaPrefetcher, pin, to_device
    from playbook.labs.workloads.common import pick_device, seed_everything
    from playbook.labs.workloads.loop import LoopMeter, cpu_threads, finish_run, make_optimizer, train_step
    from playbook.labs.workloads.models import MLP
    from playbook.probes import Rates, Recorder

    k = resolve_knobs(VARIANTS, variant, KNOBS, overrides)
    if k["memory"] not in ("pageable", "pinned", "device"):
        raise WorkloadError(f"memory must be pageable, pinned or device, not {k['memory']!r}")
    if k["steps"] < 1 or k["bank_batches"] < 1:
        raise WorkloadError("steps and bank_batches must be >= 1")
    seed_everything(k["seed"])
    device = pick_device(k["device"])
    k = auto_size(k, device)
    if k["prefetcher"] and device.type == "cuda" and k["memory"] != "pinned":
        raise WorkloadError("prefetcher=True overlaps only pinned copies: use memory=pinned")
    shape = (k["batch_size"], 3, k["image_size"], k["image_size"])
    g = torch.Generator().manual_seed(k["seed"])
    bank = [(torch.randn(shape, generator=g), torch.randint(0, 10, (k["batch_size"],), generator=g))
            for _ in range(k["bank_batches"])]
    if k["memory"] == "pinned":
        bank = [pin(b) for b in bank]  # pinned once, up front: never pin inside the loop
    elif k["memory"] == "device":
        bank = [to_device(b, device, non_blocking=False) for b in bank]
    batch_mib = sum(t.numel() * t.element_size() for t in bank[0]) / 2**20
    model = MLP(3 * k["image_size"] ** 2, 10, hidden=k["hidden"], depth=k["depth"]).to(device)
    opt = make_optimizer(model)
    total = k["steps"] + k["warmup_steps"]
    source: Any = (bank[i % len(bank)] for i in range(total))
    if k["prefetcher"]:
        source = CudaPrefetcher(source, device, pin=False)
    meter = LoopMeter(device)
    meta = {"lab": "h2d_copies", "variant": variant, "tokens_unit": "samples", "knobs": k, "batch_mib": batch_mib}
    with cpu_threads(k["torch_threads"], device), Recorder(run_dir, rates=Rates(sample_hz=k["sample_hz"]), meta=meta) as rec:
        for i, (x, y) in enumerate(rec.timed(source)):
            if i == k["warmup_steps"]:
                meter.start()
            with rec.timer.step(i, tokens=len(x)):
                with rec.timer.phase("h2d"):
                    x, y = to_device((x, y), device, non_blocking=k["non_blocking"])
                loss = train_step(model, opt, x, y, rec.timer)
            if i >= k["warmup_steps"]:
                meter.add(loss, len(x))
        meter.stop()
    result = finish_run(variant, run_dir, meter, first_step=k["warmup_steps"], batch_mib=batch_mib,
                        bank_mib=batch_mib * len(bank),
                        cuda=device.type == "cuda", memory=k["memory"], prefetcher=k["prefetcher"])
    h2d_s = result.phase_s.get("h2d", math.nan)
    cuda = device.type == "cuda"
    result.extra["copy_gib_s"] = batch_mib / 1024 * result.steps / h2d_s if cuda and h2d_s > 0 else math.nan
    return result


def needed_gib_s(result: Any) -> float:
    """Host→device bandwidth (GiB/s) the run's loop consumed: bytes per batch × steps per second."""
    if not result.wall_s or result.wall_s <= 0:
        return math.nan
    return result.extra["batch_mib"] / 1024 * result.steps / result.wall_s


def host_bandwidth(batch_mib: float = 64.0, repeats: int = 5) -> dict[str, float]:
    """What a machine without CUDA can measure about copies (GiB/s): host copies into fresh buffers (page faults,
    like a pageable copy's staging) and into a reused buffer; with CUDA also pageable / pinned H2D and pin cost."""
    from playbook.labs.fixes.pinned import copy_bandwidth, host_copy_bandwidth, pin_cost_s

    return {
        "batch_mib": batch_mib,
        "host_fresh_gib_s": host_copy_bandwidth(batch_mib, fresh=True, repeats=repeats),
        "host_reused_gib_s": host_copy_bandwidth(batch_mib, fresh=False, repeats=repeats),
        "h2d_pageable_gib_s": copy_bandwidth(batch_mib, pinned=False, repeats=repeats),
        "h2d_pinned_gib_s": copy_bandwidth(batch_mib, pinned=True, repeats=repeats),
        "pin_cost_s": pin_cost_s(batch_mib, repeats=max(1, repeats // 2)),
    }


def verdict(summary: Any, cuda: bool, recover: float = 0.95) -> Any:
    """lab_verdict on CUDA; on CPU an honest 'inconclusive' (no host-to-device copy exists to measure)."""
    from playbook.analysis.lab_verdict import LabVerdict, lab_verdict

    if cuda:
        return lab_verdict(summary, recover=recover)
    fr = float(summary.loc["fault", "ratio"])
    xr = float(summary.loc["fix", "ratio"]) if "fix" in summary.index else math.nan
    return LabVerdict("inconclusive", "no CUDA device: there is no host-to-device copy to slow or overlap, all "
                      f"variants run the same CPU code (fault {fr:.0%}, fix {xr:.0%} of no-fault: noise only)",
                      fr, xr, float(summary["cv"].max()))


def main(argv: list[str] | None = None) -> int:
    return variant_cli("h2d_copies", __doc__, run, VARIANTS, H2DConfig, argv)


if __name__ == "__main__":
    sys.exit(main())
