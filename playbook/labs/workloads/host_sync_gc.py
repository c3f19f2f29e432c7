"""Host sync and GC lab: the host stops every step to read a metric, and every few dozen steps to collect garbage.

What it reproduces
  An MLP trains while the process holds a large long-lived Python heap (`heap_objects` objects: a dataset index,
  tokenizer tables, metadata) and each step keeps `step_objects` Python objects alive for its duration (batch
  bookkeeping) — an allocation rate that triggers CPython's collector, whose full collections walk the whole heap.
  Fault knobs:
    gc_mode=default       automatic GC with default thresholds: a long pause every few dozen steps ("gc" events)
    log_every=1           `.item()` of loss / accuracy and a flushed log line every step (a host sync on GPUs)
    cycles=True           the step's objects form reference cycles (only the collector can free them)
  Fix knobs (playbook.labs.fixes.gc / playbook.labs.fixes.sync):
    gc_mode=freeze        gc.freeze() after setup + raised thresholds (gc_tuned)
    gc_mode=scheduled     automatic GC off, gc.collect() every `collect_every` steps between steps (ScheduledGC)
    log_every=N           MetricAccumulator: metrics summed on the device, read once every N steps
  gc_mode=off disables automatic GC (the no-fault reference; with cycles=True memory grows without bound).

The exact command
  python -m playbook.labs.workloads.host_sync_gc --variants no_fault,fault,fix --repeats 3
  python -m playbook.labs.workloads.host_sync_gc --variants no_fault,sync_only --device cuda    # the sync on a GPU
  playbook diagnose runs/host_sync_gc/fault-r0

How to read the result
  Under the fault, a few steps take hundreds of milliseconds: each coincides with a "gc" event (generation 2) in
  the events table, and the phase breakdown shows the time as "other" (outside fwd/bwd/optimizer). The fix removes
  them: throughput ≥ 95% of no_fault. The per-step sync costs nothing measurable on CPU (there is no device queue to
  drain); on a GPU, sync_only vs no_fault measures it. RSS (peak_rss_mib) shows the memory cost of each GC policy.
"""

from __future__ import annotations

import gc
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playbook.core.errors import WorkloadError
from playbook.labs.workloads._harness import LoopKnobs, defaults, knob, resolve_knobs, variant_cli


@dataclass
class HostSyncGCConfig(LoopKnobs):
    """The knobs of one run (defaults; a variant's preset in VARIANTS overrides them)."""

    steps: int = knob(60, "timed training steps per run")
    warmup_steps: int = knob(3, "untimed steps first")
    batch_size: int = knob(32, "samples per step")
    hidden: int = knob(512, "MLP width")
    heap_objects: int = knob(500_000, "long-lived Python objects allocated at setup (a dataset index, metadata)")
    step_objects: int = knob(30_000, "Python objects each step keeps alive while it runs (batch bookkeeping)")
    cycles: bool = knob(False, "make the step's objects cyclic")
    gc_mode: str = knob("default", "default | freeze | scheduled | off")
    gc_threshold0: int = knob(200_000, "generation-0 threshold for gc_mode=freeze")
    collect_every: int = knob(20, "steps between collections for gc_mode=scheduled")
    log_every: int = knob(20, "the fix reads and logs metrics every N steps (the fault: every step)")
    check_cycles: bool = knob(
        True, "notebook appendix: memory growth of each GC policy when the step's objects are cyclic", cli=False)


KNOBS: dict[str, Any] = defaults(HostSyncGCConfig)
CONFIG = HostSyncGCConfig
VARIANTS: dict[str, dict[str, Any]] = {
    "no_fault": {"gc_mode": "off"},
    "fault": {"gc_mode": "default", "log_every": 1},
    "fix": {"gc_mode": "freeze"},
    "scheduled": {"gc_mode": "scheduled"},
    "gc_only": {"gc_mode": "default"},
    "sync_only": {"gc_mode": "off", "log_every": 1},
}

_HEAP: list[Any] = []


def long_lived_heap(n: int) -> list[Any]:
    """`n` small tracked Python objects (one-element lists), built once per process and reused across runs."""
    if len(_HEAP) < n:
        _HEAP.extend([i] for i in range(len(_HEAP), n))
    return _HEAP[:n] if n < len(_HEAP) else _HEAP


class _Record:
    __slots__ = ("owner", "fields", "tags")

    def __init__(self, owner: Any, i: int):
        self.owner = owner  # the step's batch dict when cyclic, else None
        self.fields = {"index": i}
        self.tags = [i]


def step_bookkeeping(n_objects: int, cycles: bool) -> dict[str, Any]:
    """About `n_objects` Python objects describing a step's batch (records with a dict and a list each); with
    `cycles` every record points back at the batch that holds it."""
    batch: dict[str, Any] = {"records": []}
    owner = batch if cycles else None
    batch["records"] = [_Record(owner, i) for i in range(max(n_objects // 3, 1))]
    return batch


def _gc_policy(k: dict[str, Any]):
    import contextlib

    from playbook.labs.fixes.gc import ScheduledGC, gc_disabled, gc_tuned

    mode = k["gc_mode"]
    if mode == "default":
        return contextlib.nullcontext()
    if mode == "freeze":
        return gc_tuned(freeze=True, threshold=(k["gc_threshold0"], 20, 100))
    if mode == "scheduled":
        return ScheduledGC(every=k["collect_every"])
    if mode == "off":
        return gc_disabled()
    raise WorkloadError(f"gc_mode must be default, freeze, scheduled or off, not {mode!r}")


def run(run_dir: str | Path, variant: str = "fault", **overrides: Any):
    """Train with the variant's GC policy and logging cadence; record into `run_dir`; return a RunResult
    (extra: gc_events / gc_max_s (pauses ≥ 2 ms), gc_collections, gc_total_s, metric_reads, rss_growth_mib,
    cyclic_garbage: unreachable objects left for a collection after the steps)."""
    import torch

    from playbook.labs.fixes.sync import MetricAccumulator
    from playbook.labs.workloads.common import pick_device, seed_everything
    from playbook.labs.workloads.loop import (
        ImageDataset,
        LoopMeter,
        cpu_threads,
        current_rss_mib,
        finish_run,
        make_optimizer,
        train_step,
    )
    from playbook.labs.workloads.models import MLP
    from playbook.probes import Rates, Recorder

    k = resolve_knobs(VARIANTS, variant, KNOBS, overrides)
    if k["steps"] < 1 or k["log_every"] < 1 or k["collect_every"] < 1:
        raise WorkloadError("steps, log_every and collect_every must be >= 1")
    seed_everything(k["seed"])
    device = pick_device(k["device"])
    heap = long_lived_heap(k["heap_objects"])
    data = ImageDataset(n=512, seed=k["seed"])
    model = MLP.for_dataset(data, hidden=k["hidden"]).to(device)
    opt = make_optimizer(model)
    metrics = MetricAccumulator(every=k["log_every"])
    total = k["steps"] + k["warmup_steps"]
    meter = LoopMeter(device)
    run_dir = Path(run_dir)
    meta = {"lab": "host_sync_gc", "variant": variant, "tokens_unit": "samples", "knobs": k}
    gc.collect()  # every variant starts from the same collector state
    rss0 = current_rss_mib()
    with cpu_threads(k["torch_threads"], device), Recorder(run_dir, rates=Rates(sample_hz=k["sample_hz"]), meta=meta) as rec:
        log_file = open(run_dir / "train.log", "w")  # noqa: SIM115 - closed below
        gen = torch.Generator().manual_seed(k["seed"])
        with _gc_policy(k) as policy:
            for i in range(total):
                if i == k["warmup_steps"]:
                    gc0 = rec.events.gc_stats()
                    meter.start()
                idx = torch.randint(0, len(data.bank), (k["batch_size"],), generator=gen)
                with rec.timer.step(i, tokens=k["batch_size"]):
                    books = step_bookkeeping(k["step_objects"], k["cycles"])
                    with rec.timer.phase("h2d"):
                        x, y = data.bank[idx].to(device), data.labels[idx].to(device)
                    loss = train_step(model, opt, x, y, rec.timer)
                    with rec.timer.phase("log"):
                        means = metrics.add(i, loss=loss, samples=len(books["records"]))
                        if means:
                            log_file.write(json.dumps({"step": i, **means}) + "\n")
                            log_file.flush()
                    del books
                    if hasattr(policy, "step"):  # the scheduled collection, at the end of the step
                        with rec.timer.phase("gc"):
                            policy.step(i)
                if i >= k["warmup_steps"]:
                    meter.add(loss, len(x))
            meter.stop()
            gc1 = rec.events.gc_stats()
            rss1 = current_rss_mib()
            # what no collector freed during the steps: unreachable objects a collection finds now (counted, not
            # sampled like RSS, which an allocator reusing freed pages can leave flat)
            garbage = gc.collect()
        log_file.close()
    del heap
    return finish_run(variant, run_dir, meter, first_step=k["warmup_steps"], metric_reads=metrics.reads,
                      gc_collections=gc1["collections"] - gc0["collections"],
                      gc_total_s=gc1["total_s"] - gc0["total_s"],
                      rss_growth_mib=rss1 - rss0, cyclic_garbage=garbage, gc_mode=k["gc_mode"],
                      log_every=k["log_every"],
                      cycles=k["cycles"])


def main(argv: list[str] | None = None) -> int:
    return variant_cli("host_sync_gc", __doc__, run, VARIANTS, HostSyncGCConfig, argv)


if __name__ == "__main__":
    sys.exit(main())
