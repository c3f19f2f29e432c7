"""Lab: producer/consumer pipeline imbalance — one slow consumer holds the shared queue, and utilization turns spotty.

The real case: 5 GPUs produce hidden states into one shared bounded queue, 3 GPUs consume them. Items are routed
to consumers by a fixed rule (round-robin), one consumer is slower than the others, its items fill the shared
slots, producers block on the full queue, and two consumers sit nearly idle while one is saturated.

Here every worker is its own process (multiprocessing), its device work is simulated (`--work sleep`: the process
waits as a host waits on its GPU; `--work compute`: real matmuls on a CPU core) and every worker records its own
part of a run directory with phases "produce" / "consume" (busy) and "blocked" (waiting on the queue):

  fault   round-robin routing through one shared queue of `--capacity` slots (playbook.labs.fixes.dispatch.QueueSet
          with routing "round_robin" and a shared capacity)
  fix     per-consumer queues with least-loaded dispatch; queue depth from Little's law and the number of
          producers from the measured rates of the fault run (playbook.labs.fixes.dispatch.plan_pipeline)
  steal   round-robin routing into per-consumer queues, with work stealing by idle consumers

Run it (no torch.distributed: one machine, processes):

    python -m playbook.labs.workloads.pipeline_imbalance --producers 3 --consumers 3 --duration 4
    python -m playbook.labs.workloads.pipeline_imbalance --producers 5 --consumers 3 --duration 10   # the real case

How to read the result: items/s per variant, each worker's busy and blocked share, and the plan (producer and
consumer rates, the best balanced throughput, producers needed, queue depth). In the fault, producers are blocked
most of the time, the slow consumer is ~100% busy and the others mostly idle; throughput ≈ consumers × the slowest
consumer's rate. The fix reaches min(supply, demand). `playbook diagnose RUN_DIR/fault-r0` should find the
anti-phase groups (producers busy while consumers idle and back).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.errors import WorkloadError
from playbook.knowledge import ids as cause_ids
from playbook.labs.fixes.dispatch import PipelinePlan, QueueSet, plan_pipeline
from playbook.labs.workloads._harness import cli, config_kwargs, knob, lab_parser

VARIANTS = ("fault", "fix", "steal")
MODULE = "playbook.labs.workloads.pipeline_imbalance"
BUSY_PHASES = ("produce", "consume")


@dataclass
class PipelineConfig:
    """Knobs of the pipeline lab. Times in milliseconds per item of device work."""

    run_dir: str = knob("runs/pipeline_imbalance", "where the recordings go (one folder per variant and repeat)")
    variants: tuple[str, ...] = knob(VARIANTS, "comma-separated subset of the variants")
    producers: int = knob(3, "producer processes (the real case: 5)")
    consumers: int = knob(3, "consumer processes (the real case: 3)")
    produce_ms: float = knob(30.0, "producer work per item (ms)")
    consume_ms: float = knob(40.0, "healthy consumer work per item (ms)")
    slow_consumer: int = knob(0, "index of the slow consumer (-1: none)")
    slow_factor: float = knob(4.0, "the slow consumer takes this many times longer per item")
    jitter: float = knob(0.1, "relative std of work times (log-normal)")
    capacity: int = knob(6, "slots of the shared queue in the fault")
    duration_s: float = knob(3.0, "seconds each variant runs", flag="--duration")
    warmup_s: float = knob(
        0.5, "seconds at the start not counted in the throughput (queues filling; at most 1/4 run)")
    repeats: int = knob(2, "repeats of every variant (interleaved)")
    work: str = knob("sleep", "sleep (emulated device time) or compute (CPU matmuls)", choices=("sleep", "compute"))
    payload: int = knob(4096, "floats per item ('hidden states')")
    seed: int = knob(0, "random seed")
    sample_ms: float = knob(20.0, "queue-depth sampling interval, ms")
    plan_producers: bool = knob(
        True, "fix: use the producer count the plan derives from the measured rates (no: keep --producers)")

    def __post_init__(self):
        self.variants = tuple(self.variants)
        bad = [v for v in self.variants if v not in VARIANTS]
        if bad:
            raise WorkloadError(f"unknown variant(s) {bad}; choose from {', '.join(VARIANTS)}")
        if self.producers < 1 or self.consumers < 1 or self.capacity < 1:
            raise WorkloadError("need at least one producer, one consumer and one queue slot")
        if self.slow_consumer >= self.consumers:
            raise WorkloadError(f"slow consumer {self.slow_consumer} outside {self.consumers} consumers")
        if self.work not in ("sleep", "compute") or self.produce_ms <= 0 or self.consume_ms <= 0:
            raise WorkloadError("work must be sleep or compute, and work times > 0")

    def consume_ms_of(self, c: int) -> float:
        return self.consume_ms * (self.slow_factor if c == self.slow_consumer else 1.0)


CONFIG = PipelineConfig


# ----------------------------------------------------------------------------------------------------- workers
def _work(seconds: float, mode: str) -> None:
    """Device work of `seconds`: sleep (the host waits on its device) or busy CPU matmuls."""
    if mode == "sleep":
        time.sleep(seconds)
        return
    import torch

    a = torch.randn(128, 128)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        a = torch.tanh(a @ a)


def _draw(rng: np.random.Generator, ms: float, jitter: float) -> float:
    return ms / 1e3 * (float(rng.lognormal(-jitter**2 / 2, jitter)) if jitter > 0 else 1.0)


def _recorder(run_dir: str, rank: int, role: str, index: int):
    from playbook.labs.workloads.dist import rank_recorder

    return rank_recorder(run_dir, rank=rank, samplers=rank == 0, role=role, index=index)


def _single_thread(cfg: PipelineConfig) -> None:
    if cfg.work == "compute":
        import torch

        torch.set_num_threads(1)


def _producer(idx: int, qs: QueueSet, cfg: PipelineConfig, seed: int, run_dir: str, go: Any, stop: Any,
              ready: Any) -> None:
    _single_thread(cfg)
    rng = np.random.default_rng([seed, idx])
    rec = _recorder(run_dir, idx, "producer", idx).start()
    ready.put(idx)
    go.wait()
    i = 0
    while not stop.is_set():
        with rec.timer.step(i, tokens=1):
            with rec.timer.phase("produce"):
                _work(_draw(rng, cfg.produce_ms, cfg.jitter), cfg.work)
                # numpy, not a torch tensor: torch shares tensors between processes through file descriptors
                # that die with the producer, numpy arrays are copied through the pipe
                item = (idx, i, np.full(cfg.payload, i, dtype=np.float32), time.time())
            with rec.timer.phase("blocked"):
                qs.put(item, producer=idx)
        i += 1
    rec.close()


def _consumer(idx: int, rank: int, qs: QueueSet, cfg: PipelineConfig, seed: int, steal: bool, run_dir: str,
              go: Any, stop: Any, ready: Any, results: Any) -> None:
    _single_thread(cfg)
    rng = np.random.default_rng([seed, 1000 + idx])
    rec = _recorder(run_dir, rank, "consumer", idx).start()
    ready.put(rank)
    go.wait()
    done, latency = [], []
    i = 0
    while True:
        tok = rec.timer.begin_wait()
        item, _ = qs.get(idx, steal=steal)
        if item is None or stop.is_set():  # after the stop: drain without working (unblocks the producers)
            rec.timer.cancel_wait(tok)
            if item is None:
                break
            continue
        rec.timer.end_wait(tok, phase="blocked")
        with rec.timer.step(i, tokens=1):
            with rec.timer.phase("consume"):
                _work(_draw(rng, cfg.consume_ms_of(idx), cfg.jitter), cfg.work)
                float(item[2][0])  # touch the payload
        done.append(time.time())
        latency.append(done[-1] - item[3])
        i += 1
    rec.close()
    results.put((idx, done, latency))


# ----------------------------------------------------------------------------------------------------- one variant
def run_variant(cfg: PipelineConfig, variant: str, repeat: int = 0, producers: int | None = None,
                depth: int | None = None) -> dict[str, Any]:
    """Run one variant for cfg.duration_s; returns throughput, per-consumer counts, queue depth samples, run dir.

    producers / depth: override cfg.producers / the per-consumer queue depth (fix and steal).
    """
    from playbook.model import run_layout

    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    if ctx.get_start_method() == "fork":  # import once here, shared by every forked worker
        import pyarrow.parquet  # noqa: F401

        import playbook.probes.fingerprint  # noqa: F401
        import playbook.probes.recorder  # noqa: F401
        if cfg.work == "compute":
            import torch  # noqa: F401
    n_prod = int(producers or cfg.producers)
    per_consumer_depth = int(depth or max(1, cfg.capacity // cfg.consumers))
    if variant == "fault":
        qs = QueueSet(cfg.consumers, routing="round_robin", shared_capacity=cfg.capacity, ctx=ctx)
    elif variant == "fix":
        qs = QueueSet(cfg.consumers, depth=per_consumer_depth, routing="least_loaded", ctx=ctx)
    else:  # static routing into per-consumer queues; idle consumers steal
        qs = QueueSet(cfg.consumers, depth=per_consumer_depth, routing="round_robin", ctx=ctx)
    run_dir = str(Path(cfg.run_dir) / f"{variant}-r{repeat}")
    run_layout.init_run(run_dir, lab=cause_ids.PIPELINE_IMBALANCE, variant=variant, producers=n_prod,
                    consumers=cfg.consumers, queues=qs.describe())
    go, stop, ready, results = ctx.Event(), ctx.Event(), ctx.Queue(), ctx.Queue()
    seed = cfg.seed * 1000 + repeat  # new work-time jitter per repeat
    procs = [ctx.Process(target=_producer, args=(p, qs, cfg, seed, run_dir, go, stop, ready), daemon=True)
             for p in range(n_prod)]
    procs += [ctx.Process(target=_consumer, args=(c, n_prod + c, qs, cfg, seed, variant == "steal", run_dir, go,
                                                  stop, ready, results), daemon=True) for c in range(cfg.consumers)]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            ready.get(timeout=120)
        samples: list[tuple[float, list[int]]] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(cfg.sample_ms / 1e3):
                samples.append((time.time(), qs.depths()))

        t_start = time.time()
        go.set()
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        time.sleep(cfg.duration_s)
        t_stop = time.time()
        stop.set()
        for p in procs[:n_prod]:
            p.join(timeout=60)
        sampling.set()
        th.join()
        qs.close()
        per_consumer = _collect(results, procs[n_prod:], cfg.consumers)
        for p in procs[n_prod:]:
            p.join(timeout=30)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
    # steady state: items finished after the first `warm` seconds (the queues filling) and before the stop
    warm = min(cfg.warmup_s, (t_stop - t_start) / 4)
    counts = {c: sum(1 for t in per_consumer[c][0] if t_start + warm < t <= t_stop) for c in per_consumer}
    items = sum(counts.values())
    depth_df = pd.DataFrame(
        [{"time_s": t - t_start, "consumer": c, "depth": d} for t, ds in samples for c, d in enumerate(ds)])
    if len(depth_df):
        depth_df.to_parquet(Path(run_dir) / "queue_depth.parquet", index=False)
    lat = [x for c in per_consumer for x in per_consumer[c][1]]
    return {"variant": variant, "repeat": repeat, "producers": n_prod, "consumers": cfg.consumers,
            "depth": qs.depth if not qs.shared else math.nan, "capacity": qs.capacity, "items": items,
            "duration_s": t_stop - t_start - warm, "throughput": items / (t_stop - t_start - warm),
            "per_consumer": counts,
            "latency_p50_s": float(np.median(lat)) if lat else math.nan, "queue_depth": depth_df,
            "run_dir": run_dir, "t_start": t_start}


def _collect(results: Any, consumers: list, n: int, timeout_s: float = 120.0) -> dict[int, tuple[list, list]]:
    """Each consumer's (completion times, latencies); WorkloadError if one dies without reporting."""
    import queue as queue_mod

    out: dict[int, tuple[list, list]] = {}
    deadline = time.monotonic() + timeout_s
    while len(out) < n:
        try:
            c, done, lat = results.get(timeout=0.5)
            out[c] = (done, lat)
            continue
        except queue_mod.Empty:
            pass
        dead = [p for p in consumers if p.exitcode not in (None, 0)]
        if dead:
            raise WorkloadError(f"a consumer process failed (exit code {dead[0].exitcode}); see its traceback above")
        if time.monotonic() > deadline:
            raise WorkloadError(f"consumers did not finish within {timeout_s:.0f} s")
    return out


# ----------------------------------------------------------------------------------------------------- the lab
@dataclass
class PipelineRun:
    """Every variant run (`runs`, one row per variant × repeat), the plan derived from the fault, and details."""

    runs: pd.DataFrame
    plan: PipelinePlan | None
    depth: dict[tuple[str, int], pd.DataFrame]
    config: dict[str, Any]

    def recording(self, variant: str, repeat: int = 0) -> str:
        return str(self.runs.set_index(["variant", "repeat"]).loc[(variant, repeat), "run_dir"])


def measured_plan(steps: pd.DataFrame, n_producers: int | None = None) -> PipelinePlan:
    """plan_pipeline from a recording: producer item times (phase "produce"), each consumer's median item time."""
    prod = steps.loc[steps["phase"] == "produce", "duration_s"].to_numpy()
    cons = steps[steps["phase"] == "consume"].groupby("rank")["duration_s"].median().to_numpy()
    if not len(prod) or not len(cons):
        raise WorkloadError("the recording holds no produce/consume phases to measure rates from")
    return plan_pipeline(prod, cons, n_producers=n_producers)


def run(cfg: PipelineConfig, progress: bool | None = False) -> PipelineRun:
    """fault → plan from its measured rates → fix (and steal), interleaved over `repeats`. `progress`: see
    labs.workloads.common.Progress."""
    from playbook.labs.workloads.common import Progress
    from playbook.readers import rundir

    rows, depth, plan = [], {}, None
    shown = Progress(cfg.repeats * len(cfg.variants), show=progress)
    for rep in range(cfg.repeats):
        for variant in cfg.variants:
            kwargs: dict[str, Any] = {}
            if variant != "fault":
                if plan is None:
                    raise WorkloadError("fix and steal are sized from the fault's measured rates: run fault first")
                kwargs = {"producers": plan.producers_needed if cfg.plan_producers else cfg.producers,
                          "depth": plan.depth}
            res = run_variant(cfg, variant, rep, **kwargs)
            if variant == "fault" and plan is None:
                plan = measured_plan(rundir.read_run(res["run_dir"]).steps)
            depth[(variant, rep)] = res.pop("queue_depth")
            res["per_consumer"] = ",".join(f"{res['per_consumer'][c]}" for c in sorted(res["per_consumer"]))
            rows.append(res)
            shown.step(f"{variant} r{rep}: {res['throughput']:.1f} items/s (producers {res['producers']}, "
                       f"depth {res['depth']}, per consumer {res['per_consumer']})")
    shown.close()
    return PipelineRun(pd.DataFrame(rows), plan, depth, asdict(cfg))


# ----------------------------------------------------------------------------------------------------- analyses
def worker_shares(steps: pd.DataFrame, parts: dict[str, Any] | None = None) -> pd.DataFrame:
    """Per worker (rank): role, busy share (produce/consume) and blocked share of its recorded time, items done."""
    by = steps[steps["phase"] != "step"].groupby(["rank", "phase"])["duration_s"].sum().unstack(fill_value=0.0)
    for col in ("produce", "consume", "blocked"):
        if col not in by:
            by[col] = 0.0
    total = by[["produce", "consume", "blocked"]].sum(axis=1)
    out = pd.DataFrame({
        "role": np.where(by["produce"] > 0, "producer", "consumer"),
        "busy": (by["produce"] + by["consume"]) / total,
        "blocked": by["blocked"] / total,
        "items": steps[steps["phase"] == "step"].groupby("rank").size().reindex(by.index, fill_value=0),
    }, index=by.index)
    return out.reset_index()


def role_busy_timeline(steps: pd.DataFrame, bin_s: float = 0.25) -> pd.DataFrame:
    """Busy fraction (0-1) per worker per time bin — the utilization-like timeline — with each worker's role."""
    from playbook.analysis.step_times import busy_timeline

    tl = busy_timeline(steps, bin_s=bin_s, busy_phases=BUSY_PHASES)
    roles = worker_shares(steps).set_index("rank")["role"]
    tl["role"] = tl["rank"].map(roles)
    return tl


def assess(res: PipelineRun) -> dict[str, Any]:
    """The lab's verdict and figures (items/s; shares 0-1).

    confirmed: the fault shows the signature (the slow consumer saturated, the other consumers and the producers
      mostly waiting), and the fix is faster than the fault beyond run-to-run noise (95% interval of the ratio of
      means above 1) while reaching ≥ 85% of the balanced capacity predicted from the measured rates.
    refuted: the fix is not faster than the fault (the interval of the ratio reaches down to 1 or below and its
      mean is ≤ 1): dispatch is not what limits this pipeline.
    inconclusive: otherwise.
    """
    from playbook.analysis.lab_verdict import variant_summary
    from playbook.readers import rundir

    summ = variant_summary(res.runs, "throughput", baseline="fault")
    shares = worker_shares(rundir.read_run(res.recording("fault", 0)).steps)
    cfg = res.config
    cons = shares[shares["role"] == "consumer"].reset_index(drop=True)
    slow = cfg["slow_consumer"]
    others = cons.drop(index=slow) if 0 <= slow < len(cons) else cons
    plan = res.plan
    fix_tp = float(summ.loc["fix", "mean"])
    figures = {
        "throughput_fault": float(summ.loc["fault", "mean"]), "throughput_fix": fix_tp,
        "throughput_steal": float(summ.loc["steal", "mean"]) if "steal" in summ.index else None,
        "fix_vs_fault": float(summ.loc["fix", "ratio"]), "fix_vs_fault_lo": float(summ.loc["fix", "ratio_lo"]),
        "predicted_capacity": plan.capacity, "round_robin_limit": plan.static_capacity,
        "fix_vs_capacity": fix_tp / plan.capacity, "producers_needed": plan.producers_needed,
        "producers_used_in_fault": cfg["producers"], "queue_depth": plan.depth,
        "slow_consumer_busy": float(cons.loc[slow, "busy"]) if 0 <= slow < len(cons) else None,
        "other_consumers_busy": float(others["busy"].mean()),
        "producers_blocked": float(shares.loc[shares["role"] == "producer", "blocked"].mean()),
    }
    signature = bool((figures["slow_consumer_busy"] or 0) >= 0.9 and figures["other_consumers_busy"] <= 0.6
                     and figures["producers_blocked"] >= 0.5)
    checks = {"fault signature (saturated slow consumer, idle others, blocked producers)": signature,
              "fix faster than fault beyond noise": bool(summ.loc["fix", "ratio_lo"] > 1.0),
              "fix reaches >= 85% of the predicted capacity": bool(figures["fix_vs_capacity"] >= 0.85)}
    from playbook.labs.workloads.dist import checked_verdict

    refuted = ("balanced dispatch is not faster: dispatch does not limit this pipeline"
               if summ.loc["fix", "ratio"] <= 1.0 else None)
    return checked_verdict(checks, figures, refuted, lambda: (
        f"round-robin through a shared queue runs at {figures['throughput_fault']:.1f} items/s "
        f"(limit {plan.static_capacity:.1f}); least-loaded dispatch with {plan.producers_needed} producers "
        f"and depth {plan.depth} reaches {fix_tp:.1f} items/s ({figures['fix_vs_fault']:.1f}×, "
        f"{figures['fix_vs_capacity']:.0%} of the predicted {plan.capacity:.1f})"))


def queue_depth_total(res: PipelineRun, variant: str, repeat: int = 0) -> pd.DataFrame:
    """Items queued over time (all consumers together and per consumer), from the parent's samples."""
    d = res.depth[(variant, repeat)]
    return d.pivot_table(index="time_s", columns="consumer", values="depth").assign(
        total=lambda x: x.sum(axis=1)).reset_index()


# ----------------------------------------------------------------------------------------------------- CLI
def _parser() -> argparse.ArgumentParser:
    p = lab_parser(MODULE, __doc__, [
        "python -m playbook.labs.workloads.pipeline_imbalance --producers 3 --consumers 3 --duration 4",
        "python -m playbook.labs.workloads.pipeline_imbalance --producers 5 --consumers 3 --duration 10",
        "python -m playbook.labs.workloads.pipeline_imbalance --work compute --produce-ms 20 --consume-ms 25"],
        "playbook diagnose runs/pipeline_imbalance/fault-r0", PipelineConfig)
    p.add_argument("--keep-producers", dest="plan_producers", action="store_false",
                   help="fix: keep --producers instead of the count derived from the measured rates")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cfg = PipelineConfig(**config_kwargs(PipelineConfig, args))
    print(f"{cfg.producers} producers → {cfg.consumers} consumers, {cfg.duration_s:g} s per variant, "
          f"{cfg.repeats} repeats", flush=True)
    res = run(cfg, progress=True)
    from playbook.readers import rundir

    print("\nitems/s per variant:")
    print(res.runs.groupby("variant", sort=False)["throughput"].agg(["mean", "std"]).round(2).to_string())
    if res.plan is not None:
        pl = res.plan
        print(f"\nplan from the fault's measured rates: producer {pl.producer_rate:.1f}/s, consumers "
              f"{', '.join(f'{r:.1f}' for r in pl.consumer_rates)}/s → best balanced {pl.capacity:.1f}/s, "
              f"round-robin limit {pl.static_capacity:.1f}/s; producers needed {pl.producers_needed} "
              f"({pl.ratio:.2f} per consumer), queue depth {pl.depth}")
    for variant in res.runs["variant"].unique():
        steps = rundir.read_run(res.recording(variant)).steps
        print(f"\n{variant} r0, share of each worker's time:")
        print(worker_shares(steps).round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    cli(main)
