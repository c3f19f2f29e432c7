"""Checkpoint / evaluation stall lab: training stops every N steps to save, and every M steps to evaluate.

What it reproduces
  An MLP (Adam: the checkpoint holds weights + two moment buffers) trains; knobs:
    ckpt_mode=sync        torch.save(model + optimizer state) inside the loop every `ckpt_every` steps, to storage
                          throttled to `storage_mib_s` MiB/s (a network file system; 0 = local disk speed)
    eval_mode=inline      `eval_batches` validation batches every `eval_every` steps, each read with
                          `eval_read_ms` latency (validation data on remote storage) plus its forward pass
  Fixes (playbook.labs.fixes.checkpoint):
    ckpt_mode=async       AsyncCheckpointer: snapshot to host memory (phase "checkpoint"), write in a thread
    eval_mode=background  BackgroundEvaluator: copy the weights, evaluate in a thread while training continues
  "off" disables either. The defaults keep the model small (a 1.2 MB checkpoint, so the snapshot and the
  background serialisation cost little CPU) and the batch large (so the steps between checkpoints outlast the
  write): the stalls are storage and read latency, which the fix can hide even on a machine without idle cores.
  Events: "checkpoint" / "eval" (blocking), "checkpoint_write" / "eval_background" (the
  background work, which does not block training).

The exact command
  python -m playbook.labs.workloads.checkpoint_stalls --variants no_fault,fault,fix --repeats 3 --steps 80
  playbook diagnose runs/checkpoint_stalls/fault-r0

How to read the result
  Under the fault the step-time series has spikes exactly on the steps where a checkpoint or an eval ran:
  `stalls_by_kind()` lists, per event kind, the interval between its events (steps) and the extra seconds its
  steps took compared with ordinary steps — the stall period equals the configured interval. The fix keeps only
  the snapshot (a memory copy, milliseconds) in the loop: throughput ≥ 95% of no_fault, at the price of host memory
  for one snapshot (`snapshot_mib`) and a checkpoint that lands on disk a little later. Eval offloading needs spare
  compute: here the eval is mostly read latency; a compute-bound eval on a saturated machine must be scheduled less
  often or moved to another device/job instead.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playbook.core.errors import WorkloadError
from playbook.labs.workloads._harness import LoopKnobs, defaults, knob, resolve_knobs, variant_cli


@dataclass
class CheckpointConfig(LoopKnobs):
    """The knobs of one run (defaults; a variant's preset in VARIANTS overrides them)."""

    steps: int = knob(80, "timed training steps per run")
    warmup_steps: int = knob(3, "untimed steps first")
    batch_size: int = knob(1024, "samples per step (sets the compute between checkpoints)")
    hidden: int = knob(32, "MLP width: sets the checkpoint size (weights + 2 Adam moments, ≈ 1.2 MB at 32)")
    ckpt_every: int = knob(20, "steps between checkpoints")
    ckpt_mode: str = knob("sync", "sync | async | off")
    storage_mib_s: float = knob(10.0, "checkpoint storage write speed (MiB/s; 0: unthrottled local disk)")
    eval_every: int = knob(40, "steps between evaluations")
    eval_mode: str = knob("inline", "inline | background | off")
    eval_batches: int = knob(1, "validation batches per evaluation (of ≤ 256 samples)")
    eval_read_ms: float = knob(200.0, "read latency of the validation batch (ms)")
    ckpt_dir: str = knob("", "where checkpoints go (default RUN_DIR/ckpt)")


KNOBS: dict[str, Any] = defaults(CheckpointConfig)
CONFIG = CheckpointConfig
EVAL_BATCH = 256  # samples per validation batch (at most): evaluation is read latency plus a small forward pass

VARIANTS: dict[str, dict[str, Any]] = {
    "no_fault": {"ckpt_mode": "off", "eval_mode": "off"},
    "fault": {"ckpt_mode": "sync", "eval_mode": "inline"},
    "fix": {"ckpt_mode": "async", "eval_mode": "background"},
    "ckpt_only": {"ckpt_mode": "sync", "eval_mode": "off"},
    "eval_only": {"ckpt_mode": "off", "eval_mode": "inline"},
}


def _check(k: dict[str, Any]) -> None:
    if k["ckpt_mode"] not in ("sync", "async", "off"):
        raise WorkloadError(f"ckpt_mode must be sync, async or off, not {k['ckpt_mode']!r}")
    if k["eval_mode"] not in ("inline", "background", "off"):
        raise WorkloadError(f"eval_mode must be inline, background or off, not {k['eval_mode']!r}")
    if k["steps"] < 1 or k["ckpt_every"] < 1 or k["eval_every"] < 1 or k["eval_batches"] < 1:
        raise WorkloadError("steps, ckpt_every, eval_every and eval_batches must be >= 1")


def run(run_dir: str | Path, variant: str = "fault", **overrides: Any):
    """Train with the variant's checkpoint and eval strategy; record into `run_dir`; return a RunResult
    (extra: snapshot_mib, ckpt_saves, ckpt_wait_s, ckpt_write_s, evals, last_val_loss)."""
    import torch

    from playbook.labs.workloads.common import pick_device, seed_everything
    from playbook.labs.workloads.loop import (
        ImageDataset,
        LoopMeter,
        cpu_threads,
        finish_run,
        make_optimizer,
        train_step,
    )
    from playbook.labs.workloads.models import MLP
    from playbook.probes import Rates, Recorder

    k = resolve_knobs(VARIANTS, variant, KNOBS, overrides)
    _check(k)
    seed_everything(k["seed"])
    device = pick_device(k["device"])
    total = k["steps"] + k["warmup_steps"]
    data = ImageDataset(n=512, seed=k["seed"])
    eval_fn = _eval_fn(k, device)
    model = MLP.for_dataset(data, hidden=k["hidden"]).to(device)
    opt = make_optimizer(model)
    stalls = _Stalls(k, model, opt, Path(k["ckpt_dir"] or Path(run_dir) / "ckpt"), eval_fn)
    meter = LoopMeter(device)
    meta = {"lab": "checkpoint_stalls", "variant": variant, "tokens_unit": "samples", "knobs": k}
    with cpu_threads(k["torch_threads"], device), Recorder(run_dir, rates=Rates(sample_hz=k["sample_hz"]), meta=meta) as rec:
        g = torch.Generator().manual_seed(k["seed"])
        for i in range(total):
            if i == k["warmup_steps"]:
                meter.start()
            idx = torch.randint(0, len(data.bank), (k["batch_size"],), generator=g)
            x, y = data.bank[idx], data.labels[idx]
            with rec.timer.step(i, tokens=len(x)):
                with rec.timer.phase("h2d"):
                    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                loss = train_step(model, opt, x, y, rec.timer)
                stalls.after_step(rec, i)
            if i >= k["warmup_steps"]:
                meter.add(loss, len(x))
        meter.stop()
        stalls.close(rec)
    return finish_run(variant, run_dir, meter, first_step=k["warmup_steps"], **stalls.extra())


def _eval_fn(k: dict[str, Any], device: Any):
    """evaluate(model) -> validation loss over `eval_batches` batches, each read with `eval_read_ms` latency."""
    from playbook.labs.workloads.loop import ImageDataset, evaluate

    vb = min(k["batch_size"], EVAL_BATCH)
    val = ImageDataset(n=k["eval_batches"] * vb, seed=k["seed"] + 1)
    val_batches = [(val.bank[i:i + vb], val.labels[i:i + vb]) for i in range(0, k["eval_batches"] * vb, vb)]

    def read_val():  # validation data behind read latency
        for x, y in val_batches:
            time.sleep(k["eval_read_ms"] / 1e3)
            yield x, y

    def eval_fn(m: Any) -> float:
        return evaluate(m, read_val(), device)

    return eval_fn


class _Stalls:
    """The run's checkpoints and evaluations between steps: sync or async saves (to storage throttled to
    `storage_mib_s`), inline or background evals, and what they cost (`extra`)."""

    def __init__(self, k: dict[str, Any], model: Any, opt: Any, ckpt_dir: Path, eval_fn: Any) -> None:
        import copy

        from playbook.labs.fixes.checkpoint import AsyncCheckpointer, BackgroundEvaluator, throttled_opener

        self.k, self.model, self.opt, self.ckpt_dir, self.eval_fn = k, model, opt, ckpt_dir, eval_fn
        self.opener = throttled_opener(k["storage_mib_s"]) if k["storage_mib_s"] > 0 else None
        self.saver = AsyncCheckpointer(max_pending=1, opener=self.opener) if k["ckpt_mode"] == "async" else None
        self.evaluator = BackgroundEvaluator(lambda: copy.deepcopy(model), eval_fn) \
            if k["eval_mode"] == "background" else None
        self.snapshot_bytes = 0
        self.evals: list[tuple[int, float]] = []

    def after_step(self, rec: Any, i: int) -> None:
        """Inside step `i`: checkpoint and evaluate when their intervals say so (phases and events in `rec`)."""
        k = self.k
        if k["ckpt_mode"] != "off" and (i + 1) % k["ckpt_every"] == 0:
            self._checkpoint(rec, i)
        if k["eval_mode"] != "off" and (i + 1) % k["eval_every"] == 0:
            with rec.timer.phase("eval"), rec.event_span("eval", step=i, detail=k["eval_mode"]):
                if self.evaluator is not None:
                    self.evaluator.submit(i, self.model)
                else:
                    self.evals.append((i, self.eval_fn(self.model)))

    def _checkpoint(self, rec: Any, i: int) -> None:
        from playbook.labs.fixes.checkpoint import atomic_save, state_bytes

        state = {"model": self.model.state_dict(), "optim": self.opt.state_dict(), "step": i}
        self.snapshot_bytes = state_bytes(state)
        path = self.ckpt_dir / f"step{i + 1:06d}.pt"
        with rec.timer.phase("checkpoint"), rec.event_span("checkpoint", step=i,
                                                           detail=f"{self.k['ckpt_mode']} {path.name}"):
            if self.saver is not None:
                self.saver.save(state, path).add_done_callback(
                    lambda f, step=i: rec.event("checkpoint_write", step=step,
                                                duration_s=f.result()[1] if not f.exception() else None,
                                                detail="background write"))
            else:
                atomic_save(state, path, opener=self.opener)

    def close(self, rec: Any) -> None:
        """After the loop: wait for background writes, collect background evals (as events)."""
        if self.saver is not None:
            with rec.event_span("checkpoint_write", detail="final wait for background writes"):
                self.saver.close()
        if self.evaluator is not None:
            self.evaluator.close()
            self.evals = list(self.evaluator.results)
            for step, value in self.evals:
                rec.event("eval_background", step=step, detail=f"val loss {value:.4f}")

    def extra(self) -> dict[str, Any]:
        """The RunResult's extra columns (see `run`)."""
        saver, evals = self.saver, self.evals
        return {
            "snapshot_mib": self.snapshot_bytes / 2**20,
            "ckpt_saves": saver.stats["saves"] if saver else sum(1 for _ in self.ckpt_dir.glob("*.pt")),
            "ckpt_wait_s": saver.stats["wait_s"] if saver else math.nan,
            "ckpt_snapshot_s": saver.stats["snapshot_s"] if saver else math.nan,
            "ckpt_write_s": saver.stats["write_s"] if saver else math.nan,
            "evals": len(evals), "last_val_loss": evals[-1][1] if evals else math.nan,
            "ckpt_every": self.k["ckpt_every"], "eval_every": self.k["eval_every"],
        }


def stalls_by_kind(steps: Any, events: Any, kinds: tuple[str, ...] = ("checkpoint", "eval")) -> Any:
    """Per event kind: events, the interval between them (median, steps), the median duration of the steps they
    ran in vs the median of steps without any of `kinds` (s), and the extra seconds per stall.

    `steps` / `events`: the tidy tables of one run (schema.STEP_COLUMNS / EVENT_COLUMNS).
    """
    import numpy as np
    import pandas as pd

    whole = steps[steps["phase"] == "step"].set_index("step")["duration_s"]
    blocking = events[events["kind"].isin(kinds)]
    quiet = whole.drop(index=blocking["step"].unique(), errors="ignore")
    base = float(quiet.median()) if len(quiet) else math.nan
    rows = []
    for kind in kinds:
        at = np.sort(blocking.loc[blocking["kind"] == kind, "step"].unique())
        durations = whole.reindex(at).dropna()
        med = float(durations.median()) if len(durations) else math.nan
        rows.append({"kind": kind, "events": len(at),
                     "interval_steps": float(np.median(np.diff(at))) if len(at) > 1 else math.nan,
                     "stall_step_s": med, "ordinary_step_s": base, "extra_s": med - base})
    return pd.DataFrame(rows)


def loop_efficiency(steps: Any, events: Any, first_step: int = 0,
                    kinds: tuple[str, ...] = ("checkpoint", "eval")) -> float:
    """The share of one run's loop time that ordinary steps would take (1 = no stalls; 0.7 = 30% lost), from its
    per-step times, robust to load from other processes by design.

    The timed steps (≥ `first_step`) are grouped by the blocking event kinds they hold (none, checkpoint, eval,
    both). Each group's time is its size × its median step time (a stratified median: a stall that recurs at every
    checkpoint counts in full, a step another job slowed at a random moment moves no median), and the result is
    (all steps × the ordinary median) ÷ Σ group times. Dividing by the run's own ordinary step removes the load
    the run ran under, which on a shared machine changes a CPU step's time 2-3× from one run to the next while a
    run lasts seconds. What it leaves out: a fix's cost on the ordinary steps themselves (a background thread
    taking CPU between events) — the wall-clock throughput shows that. NaN without ordinary steps.
    """
    whole = steps[(steps["phase"] == "step") & (steps["step"] >= first_step)].drop_duplicates("step")
    held = events[events["kind"].isin(kinds) & events["step"].isin(whole["step"])]
    label = held.groupby("step")["kind"].agg(lambda k: "+".join(sorted(set(k))))
    group = [label.get(step, "") for step in whole["step"]]  # "" = ordinary (no blocking event)
    seconds = whole.groupby(group)["duration_s"].agg(["size", "median"])
    if "" not in seconds.index or not seconds.loc["", "median"] > 0:
        return math.nan
    return float(len(whole) * seconds.loc["", "median"] / (seconds["size"] * seconds["median"]).sum())


def add_loop_efficiency(runs: Any, warmup_steps: int = KNOBS["warmup_steps"]) -> Any:
    """`runs` (one row per run with `run_dir`, as from model.run_variants) with a column `loop_efficiency`
    (of each run's recorded steps and events; see loop_efficiency)."""
    from playbook.readers import rundir

    out = runs.copy()
    values = []
    for path in out["run_dir"]:
        b = rundir.read_run(path)
        values.append(loop_efficiency(b.steps, b.events, first_step=warmup_steps))
    out["loop_efficiency"] = values
    return out


def main(argv: list[str] | None = None) -> int:
    return variant_cli("checkpoint_stalls", __doc__, run, VARIANTS, CheckpointConfig, argv)


if __name__ == "__main__":
    sys.exit(main())
