"""Observability lab: what each rung of the measurement ladder costs a training step, and a profiler window that
catches the low phase of an oscillation.

What it checks
  1. Overhead, side by side in one process: the same small CPU training loop (an MLP on a fixed batch, one torch
     thread) runs under each variant, interleaved and rotated (labs.workloads.common.measure_variants), and the mean
     step time (ms, measured by the loop itself with perf_counter, identical for every variant) is compared with
     the loop without any probe (analysis.lab_verdict.variant_summary: ratio with a 95% interval):
       none            no probe at all (the baseline)
       timer           StepTimer phases (fwd / bwd / optimizer) only
       probes_1hz      the full Recorder: step timer, GC/compile watch, NVML sampler on a fake 8-GPU NVML and the
       probes_10hz     host probe (psutil, at min(rate, 2) Hz), writing a run directory — at 1, 10 and 100 Hz.
       probes_100hz    The fake NVML is pure Python and holds the GIL through every call (pynvml's ctypes calls
                       release it): an upper bound of the samplers' cost to a GIL-bound loop.
       profiler        the step timer plus a torch.profiler window (CPU activities) over half of the timed steps:
                       its row is the steps inside the window (the cost while a window is open; the trace is not
                       exported), and window_cpu_ratio compares them with the other half of the same run —
                       a paired figure that drift and other processes affect far less
  2. A profiler window on demand of the live signal: the data-starvation loop with a bulk-refilled shuffle buffer
     (a long data wait every `shuffle_buffer` steps) records through the Recorder with
     `rec.profiler(trigger_busy=...)`; when the step timer's busy fraction drops, the next steps are profiled and
     the Chrome trace lands in RUN_DIR/<host>-rank<R>/traces/, readable by `playbook diagnose` and Perfetto.

The exact command
  python -m playbook.labs.workloads.observability --repeats 4 --steps 40 --out runs/observability
  python -m playbook.labs.workloads.observability --busy-demo --out runs/observability   # then:
  playbook diagnose runs/observability/busy_drop runs/observability/busy_drop/*/traces

How to read the result
  One row per variant: mean step ms, ratio to `none` and its 95% interval; a ratio whose interval contains 1.00 is
  within run-to-run noise. Then the CPU the probes' own threads used, as a % of the loop thread's CPU: the direct
  cost, robust when other processes share the machine. The rule the notebook applies (`overhead_verdict`): the
  10 Hz recorder is "confirmed" cheap when its threads use ≤ 5% of the loop's CPU and the step-time ratio's lower
  bound is ≤ 1.05 (no cost beyond 5% shows); "refuted" when either exceeds the budget. On a shared machine the
  wall-clock intervals are wide; the CPU share is the figure to trust there.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from playbook.core.errors import WorkloadError
from playbook.labs.workloads._harness import (
    RunOptions,
    config_kwargs,
    defaults,
    fields,
    help_text,
    knob,
    lab_parser,
    resolve_knobs,
)

VARIANTS: dict[str, dict[str, Any]] = {
    "none": {},
    "timer": {"timer": True},
    "probes_1hz": {"timer": True, "recorder_hz": 1.0},
    "probes_10hz": {"timer": True, "recorder_hz": 10.0},
    "probes_100hz": {"timer": True, "recorder_hz": 100.0},
    "profiler": {"timer": True, "profiler": True},
}
TOLERANCE = 0.05  # the always-on probe's budget: at most 5% of a step (the field guide's rule of thumb)
MODULE = "playbook.labs.workloads.observability"


@dataclass
class ObservabilityConfig:
    """The knobs of one overhead run, and the notebook's demo knobs (no flag)."""

    steps: int = knob(40, "timed training steps per overhead run")
    warmup_steps: int = knob(5, "untimed steps first")
    batch_size: int = knob(32, "samples per step")
    hidden: int = knob(128, "MLP width")
    gpus: int = knob(8, "GPUs of the fake NVML the samplers poll")
    seed: int = knob(0, "random seed")
    torch_threads: int = knob(1, "torch intra-op threads (one: the loop the probes share a core with)")
    tolerance: float = knob(TOLERANCE, "overhead budget: an always-on probe may cost at most this share of step time",
                            cli=False)
    demo_steps: int = knob(40, "steps of the busy-drop profiler-window demo", cli=False)
    shuffle_buffer: int = knob(8, "demo: batches per bulk shuffle-buffer refill (one long data wait every N steps)",
                               cli=False)


KNOBS: dict[str, Any] = defaults(ObservabilityConfig)
CONFIG = ObservabilityConfig


def overhead_run(out_dir: str | Path, variant: str = "none", repeat: int = 0, **overrides: Any) -> dict[str, Any]:
    """One run of the loop under `variant`; returns {step_ms (mean wall ms of the timed steps), step_median_ms,
    step_p90_ms, cpu_ms (process CPU ms per step: every thread), main_cpu_ms (the loop thread's), other_cpu_pct
    (the other threads' CPU, % of the loop thread's), throughput (samples/s), steps, window_wall_ratio,
    window_cpu_ratio}. Knobs: KNOBS.

    `profiler`: the timed steps are split in halves and one half runs inside a profiler window (the first half in
    even repeats, the second in odd ones, so drift cancels): step_ms and the CPU figures are those of the window's
    steps, and window_wall_ratio / window_cpu_ratio compare them with the other half of the same run (NaN for the
    other variants)."""
    import torch

    from playbook.labs.workloads.loop import cpu_threads, make_optimizer, train_step
    from playbook.labs.workloads.models import MLP

    k = _overhead_knobs(variant, overrides)
    spec = VARIANTS[variant]
    torch.manual_seed(k["seed"])
    x = torch.randn(k["batch_size"], 3 * 32 * 32)
    y = torch.randint(0, 10, (k["batch_size"],))
    model = MLP(x.shape[1], 10, hidden=k["hidden"])
    opt = make_optimizer(model)
    total = k["warmup_steps"] + k["steps"]
    half = k["warmup_steps"] + k["steps"] // 2
    window = range(k["warmup_steps"], half) if repeat % 2 == 0 else range(half, total)
    step_s: list[float] = []
    cpu_s: list[float] = []
    main_s: list[float] = []
    prof = None
    device = torch.device("cpu")
    with cpu_threads(k["torch_threads"], device):
        rec, timer = _variant_probes(out_dir, variant, k)
        try:
            for i in range(total):
                if spec.get("profiler") and i == window.start:
                    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
                    prof.start()
                if prof is not None and i == window.stop:
                    prof.stop()
                    prof = None
                t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
                if timer is not None:
                    with timer.step(i, tokens=k["batch_size"]):
                        train_step(model, opt, x, y, timer)
                else:
                    train_step(model, opt, x, y)
                if prof is not None:
                    prof.step()
                if i >= k["warmup_steps"]:
                    step_s.append(time.perf_counter() - t0)
                    cpu_s.append(time.process_time() - c0)
                    main_s.append(time.thread_time() - m0)
                if timer is not None and rec is None and i % 16 == 15:
                    timer.drain()
        finally:
            if prof is not None:
                prof.stop()
            if rec is not None:
                rec.close()
    return _overhead_figures(pd.DataFrame({"wall": step_s, "cpu": cpu_s, "main": main_s}) * 1e3, spec, window, k)


def _overhead_knobs(variant: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """KNOBS with `overrides` (None: the default); WorkloadError for an unknown variant or knob or a bad value."""
    if variant not in VARIANTS:
        raise WorkloadError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    unknown = set(overrides) - set(KNOBS)
    if unknown:
        raise WorkloadError(f"unknown knob(s) {', '.join(sorted(unknown))}; knobs: {', '.join(KNOBS)}")
    k = {**KNOBS, **{key: v for key, v in overrides.items() if v is not None}}
    if k["steps"] < 2 or k["warmup_steps"] < 0 or k["batch_size"] < 1:
        raise WorkloadError("steps must be >= 2, warmup_steps >= 0, batch_size >= 1")
    return k


def _variant_probes(out_dir: str | Path, variant: str, k: dict[str, Any]) -> tuple[Any, Any]:
    """(started Recorder or None, step timer or None) that `variant` runs the loop under: the full Recorder on a
    fake NVML at its rate, a bare StepTimer, or neither."""
    from playbook.probes import fake_nvml
    from playbook.probes.recorder import Hooks, Rates, Recorder
    from playbook.probes.step_timer import StepTimer

    spec = VARIANTS[variant]
    if spec.get("recorder_hz"):
        rec = Recorder(Path(out_dir), rank=0, host="observability",
                       rates=Rates(sample_hz=spec["recorder_hz"], flush_s=3600.0), interconnect=False,
                       cuda=False, meta={"lab": "observability", "variant": variant},
                       hooks=Hooks(nvml_module=fake_nvml.scenario("healthy", gpus=k["gpus"]), sample_here=True))
        return rec.start(), rec.timer
    if spec.get("timer"):
        return None, StepTimer(host="observability", rank=0, cuda=False, keep=False)
    return None, None


def _overhead_figures(t: pd.DataFrame, spec: dict[str, Any], window: range, k: dict[str, Any]) -> dict[str, Any]:
    """overhead_run's figures from the timed steps' wall / process-CPU / loop-thread-CPU ms (`t`)."""
    ratios = {"window_wall_ratio": math.nan, "window_cpu_ratio": math.nan}
    if spec.get("profiler"):
        inside = t.index.isin([i - k["warmup_steps"] for i in window])
        ratios = {"window_wall_ratio": t.loc[inside, "wall"].mean() / t.loc[~inside, "wall"].mean(),
                  "window_cpu_ratio": t.loc[inside, "main"].mean() / t.loc[~inside, "main"].mean()}
        t = t[inside]
    return {"step_ms": float(t["wall"].mean()), "step_median_ms": float(t["wall"].median()),
            "step_p90_ms": float(t["wall"].quantile(0.9)), "cpu_ms": float(t["cpu"].mean()),
            "main_cpu_ms": float(t["main"].mean()),
            "other_cpu_pct": 100.0 * (t["cpu"].sum() - t["main"].sum()) / max(t["main"].sum(), 1e-9),
            "throughput": k["batch_size"] / (float(t["wall"].mean()) / 1e3), "steps": len(t), **ratios}


def measure_overheads(out_dir: str | Path, variants: list[str] | None = None, repeats: int = 3,
                      progress: bool = False, **knobs: Any) -> pd.DataFrame:
    """Every variant `repeats` times, interleaved and rotated; one row per run (overhead_run's keys + variant,
    repeat, wall_s). Run directories of the recorder variants go to OUT/<variant>-r<k>."""
    from playbook.labs.workloads.common import measure_variants

    variants = list(variants or VARIANTS)
    for v in variants:
        if v not in VARIANTS:
            raise WorkloadError(f"unknown variant {v!r}; choose from {', '.join(VARIANTS)}")
    if repeats < 2:
        raise WorkloadError("repeats must be >= 2 (run-to-run variance is part of the answer)")
    out = Path(out_dir)
    overhead_run(out / "warmup", "none", **{**knobs, "steps": 4})  # first-run allocations, imports, caches
    return measure_variants(lambda v, rep: overhead_run(out / f"{v}-r{rep}", v, repeat=rep, **knobs), variants,
                            repeats=repeats, progress=progress)


def sampler_cpu_pct(runs: pd.DataFrame, variant: str) -> float:
    """CPU the probes' own threads used during the timed loop, % of the loop thread's CPU: the median over the
    variant's runs of (process CPU - main-thread CPU) / main-thread CPU, minus the same for `none` (the
    process's other threads: the notebook kernel's, torch's idle pools)."""
    med = runs.groupby("variant")["other_cpu_pct"].median()
    return float(med.get(variant, math.nan) - med.get("none", 0.0))


def overhead_verdict(runs: pd.DataFrame, variant: str = "probes_10hz", tolerance: float = TOLERANCE
                     ) -> tuple[str, str, dict[str, float]]:
    """(status, one-line summary, figures) for the claim "`variant` costs at most `tolerance` of step time".

    Two measurements from the same interleaved runs (measure_overheads): the direct cost, the CPU the probe
    threads used as a share of the loop's CPU (sampler_cpu_pct; robust to other processes on the machine, and
    what a GIL-bound loop can lose to them at most), and the side-by-side wall-clock step-time ratio to `none`
    with its 95% interval (variant_summary). confirmed: direct cost ≤ tolerance and the ratio's lower bound
    ≤ 1 + tolerance (no cost beyond the budget shows in step time); refuted: either exceeds the budget;
    inconclusive: a figure could not be measured.
    """
    from playbook.analysis.lab_verdict import variant_summary

    summ = variant_summary(runs, "step_ms", baseline="none")
    r, lo, hi = (float(summ.loc[variant, c]) for c in ("ratio", "ratio_lo", "ratio_hi"))
    cpu = sampler_cpu_pct(runs, variant)
    figures = {"step_time_ratio": r, "ratio_lo": lo, "ratio_hi": hi, "sampler_cpu_pct": cpu,
               "noise_cv": float(summ.loc["none", "cv"]), "tolerance": tolerance}
    budget = 100.0 * tolerance
    wall = f"step time {r:.2f}× no probe (95% interval {lo:.2f}-{hi:.2f})"
    if not (math.isfinite(cpu) and math.isfinite(lo)):
        return "inconclusive", f"{variant}: the probe cost could not be measured ({wall})", figures
    if cpu > budget or lo > 1.0 + tolerance:
        why = (f"its threads used {cpu:.1f}% of the loop's CPU" if cpu > budget
               else f"the step time is longer by more than {tolerance:.0%}")
        return "refuted", f"{variant} costs more than the {tolerance:.0%} budget: {why} ({wall})", figures
    within = "within noise of no probe" if lo <= 1.0 else f"measurably slower, within the {tolerance:.0%} budget"
    return "confirmed", (f"probe overhead at {variant.removeprefix('probes_').replace('hz', ' Hz')} is {within}: "
                         f"the sampler threads used {cpu:.1f}% of the loop's CPU (budget {budget:.0f}%), and the "
                         f"side-by-side {wall}, with run-to-run cv {figures['noise_cv']:.0%} here, shows no cost "
                         f"beyond the budget"), figures


def busy_drop_window(run_dir: str | Path, steps: int = 40, shuffle_buffer: int = 8, decode_ms: float = 1.0,
                     batch_size: int = 32, trigger_busy: float = 0.5, active: int | None = None, seed: int = 0
                     ) -> dict[str, Any]:
    """The data-starvation loop with a bulk-refilled shuffle buffer, recorded with a profiler window that opens
    when the step timer's busy fraction falls below `trigger_busy` and records `active` steps (default: one
    refill period plus one step, so that the trace holds the next stall whatever the phase). Returns {run_dir,
    part, traces [paths], windows, first_steps, profiled_steps, slow_steps (steps whose data wait is at least half
    the step), caught (the slow steps inside a window)}."""
    import torch

    from playbook.labs.workloads.data_starvation import KNOBS as DS_KNOBS
    from playbook.labs.workloads.data_starvation import VARIANTS as DS_VARIANTS
    from playbook.labs.workloads.data_starvation import build_loader
    from playbook.labs.workloads.loop import (
        ImageDataset,
        cpu_threads,
        make_optimizer,
        stop_loader,
        train_step,
    )
    from playbook.labs.workloads.models import MLP
    from playbook.probes.recorder import Rates, Recorder
    from playbook.readers import rundir

    if steps < 2 * shuffle_buffer:
        raise WorkloadError("steps must cover at least two shuffle-buffer refills (steps >= 2 * shuffle_buffer)")
    active = shuffle_buffer + 1 if active is None else active
    torch.manual_seed(seed)
    data = ImageDataset(n=(steps + 1) * batch_size, decode_ms=decode_ms, seed=seed)
    model = MLP.for_dataset(data, hidden=256)
    opt = make_optimizer(model)
    k = resolve_knobs(DS_VARIANTS, "buffer_fault", DS_KNOBS, {"batch_size": batch_size, "decode_ms": decode_ms,
                                                               "shuffle_buffer": shuffle_buffer, "seed": seed})
    loader = build_loader(data, k)
    with cpu_threads(1, torch.device("cpu")), Recorder(run_dir, rank=0, rates=Rates(sample_hz=10), nvml=False,
                                                       cuda=False, meta={"lab": "observability",
                                                                         "variant": "busy_drop"}) as rec:
        windows = rec.profiler(trigger_busy=trigger_busy, wait=0, warmup=1, active=active,
                               min_gap_steps=steps, max_windows=1)
        source = iter(loader)
        batches = iter(rec.timed(source))
        for i in range(steps):
            x, y = next(batches)
            with rec.timer.step(i, tokens=len(x)):
                train_step(model, opt, x, y, rec.timer)
        stop_loader(source)
        part = rec.part
    steps_t = rundir.read_run(run_dir).steps
    piv = steps_t.pivot_table(index="step", columns="phase", values="duration_s", aggfunc="sum")
    slow = [int(s) for s in piv.index if "data" in piv and piv.loc[s, "data"] >= 0.5 * piv.loc[s, "step"]]
    spans = [tuple(int(x) for x in p.name.split(".step")[1].split(".")[0].split("-")) for p in windows.traces]
    profiled = sorted({s for a, b in spans for s in range(a, b + 1)})
    return {"run_dir": str(run_dir), "part": str(part), "traces": [str(p) for p in windows.traces],
            "windows": windows.windows, "first_steps": [a for a, _ in spans], "profiled_steps": profiled,
            "slow_steps": slow, "caught": sorted(set(slow) & set(profiled))}


def link_demo(run_dir: str | Path, sysfs_root: str | Path, seconds: float = 1.3, gpus: int = 2) -> Any:
    """A short Recorder run (no training) against a fake NVML whose GPU 0 trained down to PCIe gen3 x8 with rising
    replays ("pcie_degraded") and the InfiniBand counters under `sysfs_root` (1 Hz); returns the run's Bundle."""
    from playbook.probes import fake_nvml
    from playbook.probes.recorder import Hooks, Rates, Recorder
    from playbook.readers import rundir

    hooks = Hooks(nvml_module=fake_nvml.scenario("pcie_degraded", gpus=gpus), sysfs_root=sysfs_root,
                  sample_here=True)
    with Recorder(run_dir, rank=0, host="node1", rates=Rates(sample_hz=10), host_probe=False, gc=False,
                  compile=False, cuda=False, meta={"lab": "observability", "variant": "links"}, hooks=hooks):
        time.sleep(seconds)
    return rundir.read_run(run_dir)


def main(argv: list[str] | None = None) -> int:
    from playbook.analysis.lab_verdict import variant_summary

    parser = lab_parser(MODULE, __doc__, [
        "python -m playbook.labs.workloads.observability --repeats 4 --steps 40",
        "python -m playbook.labs.workloads.observability --busy-demo --out runs/observability"],
        "playbook diagnose runs/observability/probes_10hz-r0", ObservabilityConfig)
    opts = {f.name: help_text(f) for f in fields(RunOptions)}
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"{opts['variants']}; default all")
    parser.add_argument("--repeats", type=int, default=4, help=f"{opts['repeats']} (default 4)")
    parser.add_argument("--out", default="runs/observability", help=f"{opts['out_dir']} (default %(default)s)")
    parser.add_argument("--busy-demo", action="store_true",
                        help="run the busy-drop profiler window demo instead of the overhead table")
    args = parser.parse_args(argv)
    try:
        if args.busy_demo:
            res = busy_drop_window(Path(args.out) / "busy_drop", steps=max(args.steps, 16))
            print(f"profiler window(s) opened at step(s) {res['first_steps']} (slow steps {res['slow_steps']}):")
            for t in res["traces"]:
                print(f"  {t}")
            print(f"next: playbook diagnose {res['run_dir']} {Path(res['part']) / 'traces'}")
            return 0
        runs = measure_overheads(args.out, [v.strip() for v in args.variants.split(",") if v.strip()],
                                 repeats=args.repeats, progress=True,
                                 **config_kwargs(ObservabilityConfig, args))
    except WorkloadError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    summary = variant_summary(runs, "step_ms", baseline="none")
    print("\nmean step time (ms) per variant, ratio to no probe:")
    print(summary.round(3).to_string())
    print("\nprobe threads' CPU, % of the loop thread's CPU (minus no probe's):")
    for v in summary.index:
        print(f"  {v:>13}: {sampler_cpu_pct(runs, v):6.2f}%")
    if "probes_10hz" in summary.index and "none" in summary.index:
        status, text, _ = overhead_verdict(runs)
        print(f"\n{status}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
