"""Data starvation lab: the loader cannot keep up, so the accelerator waits for every batch (or every Nth).

What it reproduces
  A small MLP trains on image-like samples whose "decode" costs `decode_ms` per sample (a read from remote or disk
  storage, or a decoder that releases the GIL). Fault knobs:
    loader=serial         samples decoded in the training loop (DataLoader num_workers=0): every step waits
    pipeline=stream       a stream read through a shuffle buffer of N batches refilled in bulk: one long wait
                          every N steps — the periodic busy/idle cycle (e.g. 45 s busy / 15 s idle)
    loader=workers, workers > cores with augment_passes > 0: CPU-bound decode oversubscribing the cores
  Fix knobs (playbook.labs.fixes.prefetch):
    loader=threads        ThreadedLoader: a thread pool reads samples `prefetch` batches ahead
    loader=workers        DataLoader worker processes, prefetch_factor, persistent workers, one thread each
    refill=streaming      a streaming ShuffleBuffer read by threads and produced by a ThreadPrefetcher

The exact command
  python -m playbook.labs.workloads.data_starvation --variants no_fault,fault,fix --repeats 3
  python -m playbook.labs.workloads.data_starvation --variants buffer_fault,buffer_fix --steps 64 --shuffle-buffer 8
  playbook diagnose runs/data_starvation/fault-r0

How to read the result
  throughput (samples/s) per variant and its ratio to no_fault: the fault runs at a fraction of no_fault, the fix
  recovers ≥ 95% of it. In the recording, phase "data" (time blocked in next()) takes a large share of each step
  under the fault; with buffer_fault the step times spike every `shuffle_buffer` steps and the busy fraction
  (playbook.analysis.step_times.busy_timeline) oscillates with that period. On a GPU, the same shows as utilization
  dropping while "data" grows. The decode cost is latency-bound (sleep) on purpose: that is what threads and
  processes can hide on any machine; CPU-bound decode can only be hidden with cores to spare (augment_passes).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playbook.core.errors import WorkloadError
from playbook.knowledge import ids as cause_ids
from playbook.labs.workloads._harness import LoopKnobs, defaults, knob, resolve_knobs, variant_cli


@dataclass
class DataStarvationConfig(LoopKnobs):
    """The knobs of one run (defaults; a variant's preset in VARIANTS overrides them)."""

    steps: int = knob(40, "timed training steps per run")
    warmup_steps: int = knob(3, "untimed steps first (loader start-up, allocations)")
    batch_size: int = knob(32, "samples per step")
    decode_ms: float = knob(1.0, "simulated read/decode latency per sample (ms; a sleep: I/O-like, releases the GIL)")
    augment_passes: int = knob(0, "CPU-bound augmentation rounds per sample")
    loader: str = knob("serial", "serial | workers | threads")
    workers: int = knob(16, "loader processes (workers) or threads (threads)")
    prefetch: int = knob(4, "batches ready ahead")
    pipeline: str = knob("map", "map: random access by index; stream: sequential reads through a shuffle buffer")
    shuffle_buffer: int = knob(8, "batches per bulk refill of the shuffle buffer (periodic-stall demo)")
    refill: str = knob("bulk", "shuffle buffer refill: bulk | streaming")
    hidden: int = knob(512, "MLP width (compute per step)")
    threads: int = knob(16, "reader threads of the fix (the notebook sets workers of the fix variants)", cli=False)
    check_workers: bool = knob(
        True, "notebook appendix: time worker processes and CPU-bound oversubscription", cli=False)


KNOBS: dict[str, Any] = defaults(DataStarvationConfig)
CONFIG = DataStarvationConfig
VARIANTS: dict[str, dict[str, Any]] = {
    "no_fault": {"decode_ms": 0.0, "loader": "serial"},
    "fault": {"loader": "serial"},
    "fix": {"loader": "threads"},
    "fix_workers": {"loader": "workers", "workers": 2},
    "buffer_fault": {"pipeline": "stream", "refill": "bulk", "loader": "serial"},
    "buffer_fix": {"pipeline": "stream", "refill": "streaming", "loader": "threads", "prefetch": 8},
    "oversubscribed": {"decode_ms": 0.0, "augment_passes": 20, "loader": "workers", "workers": 8},
    "budgeted": {"decode_ms": 0.0, "augment_passes": 20, "loader": "workers", "workers": -1},
}


def bulk_shuffle(samples: Iterable[Any], size: int, seed: int = 0) -> Iterator[Any]:
    """The fault: fill a buffer of `size` samples, shuffle, drain it completely, refill — reads come in bursts."""
    rng, buf = random.Random(seed), []
    for s in samples:
        buf.append(s)
        if len(buf) == size:
            rng.shuffle(buf)
            yield from buf
            buf = []
    rng.shuffle(buf)
    yield from buf


def build_loader(data: Any, k: dict[str, Any]) -> Iterable[Any]:
    """The batch iterable the knobs describe (see the module docstring)."""
    from torch.utils.data import DataLoader

    from playbook.labs.fixes import prefetch as pf

    bs = k["batch_size"]
    if k["pipeline"] not in ("map", "stream"):
        raise WorkloadError(f"pipeline must be map or stream, not {k['pipeline']!r}")
    if k["pipeline"] == "stream":
        if k["shuffle_buffer"] < 1:
            raise WorkloadError("shuffle_buffer must be >= 1")
        size = k["shuffle_buffer"] * bs
        reads: Iterable[Any] = (data[i] for i in range(len(data)))
        if k["loader"] == "threads":
            reads = pf.parallel_map(data.__getitem__, range(len(data)), threads=max(k["workers"], 1))
        elif k["loader"] != "serial":
            raise WorkloadError("pipeline=stream works with loader=serial or loader=threads")
        if k["refill"] == "bulk":
            shuffled: Iterable[Any] = bulk_shuffle(reads, size, k["seed"])
        elif k["refill"] == "streaming":
            shuffled = pf.ShuffleBuffer(reads, size, k["seed"])
        else:
            raise WorkloadError(f"refill must be bulk or streaming, not {k['refill']!r}")
        batches = pf.batched(shuffled, bs)
        return pf.ThreadPrefetcher(batches, depth=k["prefetch"]) if k["loader"] == "threads" else batches
    if k["loader"] == "serial":
        return DataLoader(data, batch_size=bs, shuffle=True, num_workers=0, drop_last=True)
    if k["loader"] == "threads":
        return pf.ThreadedLoader(data, bs, threads=max(k["workers"], 1), prefetch=k["prefetch"], seed=k["seed"])
    if k["loader"] == "workers":
        workers = pf.worker_budget() if k["workers"] < 0 else k["workers"]
        if workers == 0:
            raise WorkloadError("loader=workers needs workers >= 1 (or -1 for worker_budget())")
        return DataLoader(data, batch_size=bs, shuffle=True, drop_last=True,
                          **pf.dataloader_kwargs(workers, prefetch_factor=k["prefetch"]))
    raise WorkloadError(f"loader must be serial, workers or threads, not {k['loader']!r}")


def run(run_dir: str | Path, variant: str = "fault", **overrides: Any):
    """Train `steps` (+ `warmup_steps`) steps with the variant's knobs; record into `run_dir`; return a RunResult.

    Knobs: see KNOBS (defaults) and VARIANTS (presets); explicit keyword arguments override the preset.
    """
    from playbook.labs.workloads.common import pick_device, seed_everything
    from playbook.labs.workloads.loop import (
        ImageDataset,
        LoopMeter,
        cpu_threads,
        finish_run,
        make_optimizer,
        stop_loader,
        train_step,
    )
    from playbook.labs.workloads.models import MLP
    from playbook.probes import Rates, Recorder

    k = resolve_knobs(VARIANTS, variant, KNOBS, overrides)
    if k["steps"] < 1 or k["batch_size"] < 1 or k["warmup_steps"] < 0:
        raise WorkloadError("steps and batch_size must be >= 1, warmup_steps >= 0")
    seed_everything(k["seed"])
    device = pick_device(k["device"])
    total = k["steps"] + k["warmup_steps"]
    data = ImageDataset(n=total * k["batch_size"], decode_ms=k["decode_ms"], augment_passes=k["augment_passes"],
                        seed=k["seed"])
    model = MLP.for_dataset(data, hidden=k["hidden"]).to(device)
    opt = make_optimizer(model)
    loader = build_loader(data, k)
    meter = LoopMeter(device)
    meta = {"lab": cause_ids.DATA_STARVATION, "variant": variant, "tokens_unit": "samples", "knobs": k}
    with cpu_threads(k["torch_threads"], device), Recorder(run_dir, rates=Rates(sample_hz=k["sample_hz"]), meta=meta) as rec:
        source = iter(loader)
        batches = iter(rec.timed(source))
        for i in range(total):
            if i == k["warmup_steps"]:
                meter.start()
            try:
                x, y = next(batches)
            except StopIteration:
                raise WorkloadError(f"the loader ran out after {i} steps") from None
            with rec.timer.step(i, tokens=len(x)):
                with rec.timer.phase("h2d"):
                    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                loss = train_step(model, opt, x, y, rec.timer)
            if i >= k["warmup_steps"]:
                meter.add(loss, len(x))
        meter.stop()
        stop_loader(source)
    return finish_run(variant, run_dir, meter, first_step=k["warmup_steps"], decode_ms=k["decode_ms"],
                      loader=k["loader"], pipeline=k["pipeline"], refill=k["refill"])


def main(argv: list[str] | None = None) -> int:
    return variant_cli(cause_ids.DATA_STARVATION, __doc__, run, VARIANTS, DataStarvationConfig, argv)


if __name__ == "__main__":
    sys.exit(main())
