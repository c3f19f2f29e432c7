"""Sharded-blob loader lab: does object-store latency starve training, and does prefetching win it back?

What it checks: a small classifier trains from zstd-compressed tar shards served over HTTP on loopback
(playbook.labs.workloads.objstore, in its own process) through DataLoader workers that decode shards (playbook.labs.fixes.shards).
Three variants, each repeated and interleaved (playbook.labs.workloads.common.measure_variants):
  no_fault  no injected latency, naive loader (one blocking whole-shard GET when a shard is needed)
  fault     `--latency-ms` time to first byte and a `--bandwidth-mib-s` per-connection cap, naive loader
  fix       the same faults, prefetching loader: `prefetch` shards in flight per worker (sized by Little's law
            from latency × bandwidth and the step rate; `range_parallel` range GETs per shard)
On CPU the accelerator's share of a step is emulated (`accel_ms` of sleep, phase "compute") after a real small
model's fwd/bwd/optimizer, because a GPU step leaves the host cores to the loader workers; see train_run.
Every run is recorded through playbook.probes.Recorder into RUN_DIR/<variant>-r<repeat>/ (steps with phases
data / fwd / bwd / optimizer, host samples), which `playbook diagnose` reads. Also measured: how fast each loader
delivers samples with no training at all (its capacity).

Run it:
    python -m playbook.labs.workloads.shard_loader --steps 60 --latency-ms 80 --repeats 3 --run-dir runs/shard_loader

Read the result: throughput (samples/s) and busy fraction (share of step time in fwd/bwd/optimizer, the
utilization-like signal on CPU) per variant; `fault` should lose throughput beyond the run-to-run noise and `fix`
should recover ≥ 90% of `no_fault` (verdict "confirmed"). A fix that does not recover means the loader is bound
by something prefetch does not hide: decode CPU, too few workers, or the aggregate bandwidth.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from playbook.core.errors import WorkloadError
from playbook.labs.fixes.shards import ShardStream, prefetch_depth
from playbook.labs.workloads._harness import cli, config_kwargs, knob, lab_parser
from playbook.labs.workloads.common import measure_variants, pick_device, seed_everything
from playbook.labs.workloads.models import MLP
from playbook.labs.workloads.objstore import ObjectStore, write_shards

VARIANTS = ("no_fault", "fault", "fix")
COMPUTE_PHASES = ("fwd", "bwd", "optimizer", "compute")


def synthetic_samples(n: int, shape=(3, 32, 32), classes: int = 10, seed: int = 0):
    """Image-like uint8 samples (a class-dependent gradient plus noise: compresses about 2×) with labels."""
    rng = np.random.default_rng(seed)
    c, h, w = shape
    ramp = np.linspace(0, 1, h * w, dtype=np.float32).reshape(1, h, w)
    for i in range(n):
        label = int(rng.integers(classes))
        img = 255 * (0.5 + 0.4 * np.sin(ramp * (label + 1) * 3 + np.arange(c).reshape(c, 1, 1)))
        img = np.clip(img + rng.normal(0, 8, shape), 0, 255).astype(np.uint8)
        yield {"__key__": f"sample{i:07d}", "npy": img, "cls": label}


def build_bucket(root: str | Path, samples: int = 2048, samples_per_shard: int = 64, shape=(3, 32, 32),
                 seed: int = 0) -> dict[str, Any]:
    """Write the lab's shards into `root` (see playbook.labs.workloads.objstore.write_shards); returns the index."""
    return write_shards(synthetic_samples(samples, shape, seed=seed), root, samples_per_shard=samples_per_shard)


def _loader(url: str, kind: str, batch: int, num_workers: int, prefetch: int, epoch: int, seed: int,
            pin: bool, range_parallel: int = 1) -> DataLoader:
    ds = ShardStream(url, prefetch=0 if kind == "naive" else prefetch,
                     range_parallel=1 if kind == "naive" else range_parallel,
                     shuffle_buffer=4 * batch, seed=seed, rank=0, world_size=1, epoch=epoch)
    return DataLoader(ds, batch_size=batch, num_workers=num_workers, pin_memory=pin,
                      persistent_workers=False, multiprocessing_context="fork" if num_workers else None)


def loader_capacity(url: str, kind: str, batches: int = 20, batch: int = 32, num_workers: int = 2,
                    prefetch: int = 4, seed: int = 0) -> float:
    """Samples per second a loader delivers with no training at all (first batch excluded)."""
    n, t0 = 0, None
    for i, b in enumerate(_loader(url, kind, batch, num_workers, prefetch, 0, seed, pin=False)):
        if i == 0:
            t0 = time.perf_counter()
        else:
            n += len(b["cls"])
        if i >= batches:
            break
    return n / (time.perf_counter() - t0) if t0 and n else math.nan


def train_run(url: str, kind: str, run_dir: str | Path, steps: int = 60, batch: int = 32, num_workers: int = 2,
              prefetch: int = 4, warmup: int = 5, hidden: int = 128, accel_ms: float = 40.0, epoch: int = 0,
              seed: int = 0, device: str = "auto", range_parallel: int = 1) -> dict[str, float]:
    """Train `steps` steps from the store with loader `kind` (naive | prefetch), recorded into `run_dir`.

    Each step runs the real model (phases fwd / bwd / optimizer) and then waits `accel_ms` (phase "compute"):
    the emulated accelerator time. A GPU step leaves the host's cores to the loader; a CPU model big enough to
    stand in for it would take them from the loader workers instead, so on CPU the accelerator is emulated.
    With CUDA, accel_ms=0 times the real model alone.

    Returns throughput (samples/s), busy (share of step time in compute phases) and data_wait_share, over the
    steps after `warmup`, computed from the recorded steps table.
    """
    from playbook.probes import Recorder
    from playbook.readers.rundir import read_run

    dev = pick_device(device)
    seed_everything(seed)
    model = None
    opt = None
    threads = torch.get_num_threads()
    if dev.type == "cpu":  # one intra-op thread: no OpenMP barrier stalls when the cores are shared
        torch.set_num_threads(1)
    loader = _loader(url, kind, batch, num_workers, prefetch, epoch, seed, pin=dev.type == "cuda",
                     range_parallel=range_parallel)
    with Recorder(run_dir, rank=0, nvml=dev.type == "cuda", interconnect=False, compile=False,
                  meta={"lab": "shard_loader", "loader": kind}) as rec:
        for step, b in enumerate(rec.timed(loader)):
            if step >= steps:
                break
            x = b["npy"].to(dev, non_blocking=True)
            y = b["cls"].to(dev, non_blocking=True)
            if model is None:
                model = MLP(int(np.prod(x.shape[1:])), 10, hidden, depth=2, input_scale=1 / 255).to(dev)
                opt = torch.optim.SGD(model.parameters(), lr=0.01)
            with rec.step(step, tokens=len(y)):
                with rec.phase("fwd"):
                    loss = F.cross_entropy(model(x), y)
                with rec.phase("bwd"):
                    loss.backward()
                with rec.phase("optimizer"):
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                if accel_ms > 0:
                    with rec.phase("compute"):
                        time.sleep(accel_ms / 1e3)
    del loader
    torch.set_num_threads(threads)
    return step_metrics(read_run(run_dir).steps, warmup)


def step_metrics(steps: pd.DataFrame, warmup: int = 5) -> dict[str, float]:
    """From a steps table, after warmup: samples/s (tokens column = samples), busy share, data-wait share,
    median step and compute-only time per step (ms)."""
    whole = steps[(steps["phase"] == "step") & (steps["step"] >= warmup)]
    s = steps[steps["step"].isin(whole["step"])]  # a wait for a batch that was never trained on is left out
    total = float(whole["duration_s"].sum())
    if total <= 0 or whole.empty:
        raise WorkloadError(f"no steps recorded after warmup ({warmup}): run more steps")
    busy = float(s.loc[s["phase"].isin(COMPUTE_PHASES), "duration_s"].sum())
    wait = float(s.loc[s["phase"] == "data", "duration_s"].sum())
    compute = s[s["phase"].isin(COMPUTE_PHASES)].groupby("step")["duration_s"].sum()
    return {"throughput": float(whole["tokens"].sum()) / total, "busy": busy / total,
            "data_wait_share": wait / total, "step_ms": 1e3 * float(whole["duration_s"].median()),
            "compute_ms": 1e3 * float(compute.median()), "steps": int(len(whole))}


def run_variants(store: ObjectStore, run_dir: str | Path, variants=VARIANTS, repeats: int = 3, *,
                 latency_ms: float = 80.0, bandwidth_mib_s: float | None = 16.0, prefetch: int = 4,
                 range_parallel: int = 1, steps: int = 60, batch: int = 32, num_workers: int = 2,
                 accel_ms: float = 40.0, hidden: int = 128, device: str = "auto", seed: int = 0,
                 progress: bool = False) -> pd.DataFrame:
    """Run `variants` (no_fault | fault | fix) `repeats` times, interleaved, each recorded into
    RUN_DIR/<variant>-r<repeat>; the store's injected faults are set per variant. One row per run."""
    from playbook.model.run_layout import is_run_dir

    faults = {"latency_s": latency_ms / 1e3, "bandwidth_mib_s": bandwidth_mib_s}
    settings = {"no_fault": ("naive", {"latency_s": 0.0, "bandwidth_mib_s": None}),
                "fault": ("naive", faults), "fix": ("prefetch", faults)}
    unknown = set(variants) - set(settings)
    if unknown:
        raise WorkloadError(f"unknown variant(s) {sorted(unknown)}; choose from {', '.join(settings)}")

    def run_one(variant: str, rep: int) -> dict[str, Any]:
        kind, f = settings[variant]
        store.configure(**f)
        part = Path(run_dir) / f"{variant}-r{rep}"
        if is_run_dir(part):  # this lab's own earlier recording: replace it
            shutil.rmtree(part)
        return train_run(store.url, kind, part, steps, batch, num_workers, prefetch, hidden=hidden,
                         accel_ms=accel_ms, epoch=rep, device=device, seed=seed, range_parallel=range_parallel)

    return measure_variants(run_one, list(variants), repeats=repeats, progress=progress)


def size_prefetch(calibration: dict[str, float], batch: int, samples_per_shard: int, num_workers: int,
                  latency_ms: float, bandwidth_mib_s: float | None, shard_bytes: float,
                  range_parallel: int = 1) -> dict[str, float]:
    """Little's law for this lab: the trainer's demand (samples/s when it never waits, from a calibration run's
    compute time per step), what one naive worker can deliver, and the prefetch depth per worker."""
    demand = batch / (calibration["compute_ms"] / 1e3)
    fetch_s = latency_ms / 1e3 + (shard_bytes / (bandwidth_mib_s * 2**20) if bandwidth_mib_s else 0.0)
    depth = prefetch_depth(latency_ms / 1e3, bandwidth_mib_s * 2**20 if bandwidth_mib_s else None,
                           shard_bytes / range_parallel, demand / samples_per_shard / num_workers, headroom=2.0)
    return {"demand_samples_s": demand, "fetch_s": fetch_s,
            "naive_bound_samples_s": num_workers * samples_per_shard / fetch_s, "prefetch": depth}


def assignment_check(n_shards: int, ranks: int = 2, workers: int = 2, epochs: int = 2,
                     seed: int = 0) -> pd.DataFrame:
    """Per epoch: are the shard sets of all ranks × workers disjoint, do they cover every shard, and does the
    order differ from the previous epoch? One row per epoch, plus the shards of consumer 0."""
    from playbook.labs.fixes.shards import assign_shards

    rows, prev = [], None
    consumers = ranks * workers
    for epoch in range(epochs):
        sets = [assign_shards(n_shards, epoch, seed, c, consumers) for c in range(consumers)]
        flat = [s for part in sets for s in part]
        rows.append({"epoch": epoch, "consumers": consumers, "disjoint": len(flat) == len(set(flat)),
                     "covers_all": set(flat) == set(range(n_shards)), "new_order": flat != prev,
                     "shards_per_consumer": f"{min(map(len, sets))}-{max(map(len, sets))}",
                     "consumer0_shards": sets[0][:6]})
        prev = flat
    return pd.DataFrame(rows)


def resume_check(url: str, stop_after: int = 5, batch: int = 16, num_workers: int = 2, shuffle_buffer: int = 64,
                 epoch: int = 1, seed: int = 0) -> dict[str, Any]:
    """Consume `stop_after` batches, save the LoaderState, start a new loader from it and read the rest.

    Returns counts and the checks: nothing repeated, nothing lost, and each worker's order unchanged compared
    with an uninterrupted epoch.
    """
    from playbook.labs.fixes.shards import LoaderState

    def loader(resume=None):
        ds = ShardStream(url, shuffle_buffer=shuffle_buffer, seed=seed, rank=0, world_size=1, epoch=epoch,
                         resume=resume)
        return DataLoader(ds, batch_size=batch, num_workers=num_workers)

    full = [(w, k) for b in loader() for w, k in zip(b["__worker__"].tolist(), b["__key__"], strict=True)]
    state, first = LoaderState(), []
    for i, b in enumerate(loader()):
        if i == stop_after:
            break
        state.update(b)
        first += list(zip(b["__worker__"].tolist(), b["__key__"], strict=True))
    saved = state.state_dict()
    rest = [(w, k) for b in loader(saved) for w, k in zip(b["__worker__"].tolist(), b["__key__"], strict=True)]
    keys_first, keys_rest = [k for _, k in first], [k for _, k in rest]
    by_worker = {w: [k for ww, k in full if ww == w] for w, _ in full}
    resumed_by_worker = {w: [k for ww, k in first + rest if ww == w] for w in by_worker}
    return {"state": saved, "consumed": len(first), "remaining": len(rest), "epoch_samples": len(full),
            "no_repeats": not set(keys_first) & set(keys_rest),
            "nothing_lost": sorted(keys_first + keys_rest) == sorted(k for _, k in full),
            "worker_order_kept": resumed_by_worker == by_worker}


def run_lab(run_dir: str | Path, steps: int = 60, batch: int = 32, num_workers: int = 2, latency_ms: float = 80.0,
            bandwidth_mib_s: float = 16.0, samples: int = 2048, samples_per_shard: int = 16, repeats: int = 3,
            accel_ms: float = 40.0, range_parallel: int = 1, hidden: int = 128, device: str = "auto", seed: int = 0,
            progress: bool = False) -> dict[str, Any]:
    """Build the bucket, serve it, calibrate, size the prefetch, run every variant `repeats` times, measure the
    loaders' capacity; returns runs, sizing, capacity and the store's counters."""
    if steps <= 5 or batch < 1 or num_workers < 1 or repeats < 1:
        raise WorkloadError("need steps > 5, batch ≥ 1, num_workers ≥ 1, repeats ≥ 1")
    run_dir = Path(run_dir)
    common = {"batch": batch, "num_workers": num_workers, "accel_ms": accel_ms, "hidden": hidden,
              "device": device, "seed": seed}
    with tempfile.TemporaryDirectory(prefix="pb-bucket-") as bucket:
        index = build_bucket(bucket, samples, samples_per_shard, seed=seed)
        shard_bytes = float(np.mean([s["bytes"] for s in index["shards"]]))
        with ObjectStore(bucket) as store:
            calibration = train_run(store.url, "naive", run_dir / "calibration", steps=min(steps, 20), **common)
            sizing = size_prefetch(calibration, batch, samples_per_shard, num_workers, latency_ms,
                                   bandwidth_mib_s, shard_bytes, range_parallel)
            runs = run_variants(store, run_dir, VARIANTS, repeats, latency_ms=latency_ms,
                                bandwidth_mib_s=bandwidth_mib_s, prefetch=sizing["prefetch"],
                                range_parallel=range_parallel, steps=steps, progress=progress, **common)
            store.configure(latency_s=latency_ms / 1e3, bandwidth_mib_s=bandwidth_mib_s)
            capacity = {kind: loader_capacity(store.url, kind, batch=batch, num_workers=num_workers,
                                              prefetch=sizing["prefetch"], seed=seed) for kind in ("naive", "prefetch")}
            stats = store.stats()
    return {"runs": runs, "capacity": capacity, "sizing": sizing, "prefetch_depth": sizing["prefetch"],
            "shard_bytes": shard_bytes, "shards": len(index["shards"]), "calibration": calibration,
            "store_stats": stats,
            "settings": {"latency_ms": latency_ms, "bandwidth_mib_s": bandwidth_mib_s, "batch": batch,
                         "num_workers": num_workers, "steps": steps, "samples_per_shard": samples_per_shard,
                         "accel_ms": accel_ms, "range_parallel": range_parallel}}


@dataclass
class ShardLoaderConfig:
    """The knobs of the sharded-blob lab (run_lab's arguments). Times in ms, sizes in samples."""

    run_dir: str = knob("runs/shard_loader", "where each run is recorded")
    steps: int = knob(60, "training steps per run")
    batch: int = knob(32, "samples per batch")
    num_workers: int = knob(2, "DataLoader worker processes (they fetch and decode shards)", flag="--workers")
    latency_ms: float = knob(80.0, "injected time to first byte of every GET, ms")
    bandwidth_mib_s: float = knob(16.0, "injected bandwidth cap per connection, MiB/s")
    samples: int = knob(2048, "samples in the bucket")
    samples_per_shard: int = knob(16, "samples per shard")
    repeats: int = knob(3, "runs per variant, interleaved")
    accel_ms: float = knob(40.0, "emulated accelerator time per step, ms (on a GPU: 0, the real model alone)")
    range_parallel: int = knob(1, "parallel range requests per shard")
    hidden: int = knob(128, "model width")
    device: str = knob("auto", "auto | cpu | cuda")
    seed: int = knob(0, "seed of the data, the shuffles and the model")


CONFIG = ShardLoaderConfig


def main(argv: list[str] | None = None) -> int:
    from playbook.analysis.lab_verdict import lab_verdict, variant_summary

    p = lab_parser("playbook.labs.workloads.shard_loader", __doc__, [
        "python -m playbook.labs.workloads.shard_loader --steps 60 --latency-ms 80 --repeats 3 --run-dir runs/shard_loader"],
        "playbook diagnose runs/shard_loader/fault-r0", ShardLoaderConfig)
    p.add_argument("--out", help="write the per-run table as JSON here")
    args = p.parse_args(argv)
    res = run_lab(**config_kwargs(ShardLoaderConfig, args), progress=True)
    summary = variant_summary(res["runs"], "throughput", baseline="no_fault")
    print(summary.to_string(float_format=lambda v: f"{v:.3g}"))
    print("busy:", res["runs"].groupby("variant")["busy"].mean().round(3).to_dict(),
          "| loader capacity (samples/s):", {k: round(v) for k, v in res["capacity"].items()},
          "| prefetch depth:", res["prefetch_depth"])
    v = lab_verdict(summary, recover=0.9)
    print(f"verdict: {v.status}: {v.summary}")
    if args.out:
        Path(args.out).write_text(json.dumps(res["runs"].to_dict("records"), indent=1))
    return 0


if __name__ == "__main__":
    cli(main)
