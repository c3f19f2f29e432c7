"""LABELED SYNTHETIC telemetry, steps and events with known answers, for tutorials, tests and benchmarks.

Nothing here is a measurement: every frame's `source` is "synthetic:<scenario>"; CSV files written by
`write_nvidia_smi_csv` are named `<host>.synthetic.csv` unless told otherwise (nvidia-smi output has no comment
syntax), run directories carry `"synthetic": true` in meta.json, and the command-line tool writes a README.md saying
SYNTHETIC beside its CSVs. Each generator returns the data *and* its `Truth` (the answers a correct diagnosis must
find).

Scenarios (telemetry):
  healthy       every GPU busy (~97%), no swings
  oscillation   the classic: all GPUs at `high_pct` for duty*period, then `low_pct`, in step (synchronized)
  irregular     synchronized swings at random times (exponential dwell times with the same means)
  antiphase     producer/consumer: the first half of the GPUs is high while the second half is low, and back
  straggler     one GPU drops low every period (rank 0 writing a checkpoint) while its peers keep reading high
                utilization at low power (NCCL kernels spinning while they wait for it)
  throttled     one GPU busy at a low SM clock with HW-thermal / HW-slowdown clock-event bits set
  lost          one GPU stops reporting (after a few "[Unknown Error]" rows) at 60% of the run

    python -m playbook.labs.synthetic --scenario oscillation --hosts 8 --gpus 8 --duration 600 --interval 5 \\
        --out data/samples/synthetic-64gpu

writes one nvidia-smi `--query-gpu=... --format=csv` file per host plus a README.md that says SYNTHETIC, gives the
exact command and holds the truth (README files are passed over by the readers).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from playbook.knowledge import ids as cause_ids
from playbook.knowledge.causes import cause
from playbook.model import schema

GC_KINDS = cause(cause_ids.GC_PAUSE).event_kinds  # event kinds of a garbage-collection pause (the cause catalog's)
SCENARIOS: tuple[str, ...] = ("healthy", "oscillation", "irregular", "antiphase", "straggler", "throttled", "lost")

# Board characteristics of the simulated GPU (an H100-SXM-like part).
POWER_IDLE_W = 90.0
POWER_BUSY_W = 650.0
POWER_SPIN_W = 230.0  # utilization reads 100% while an NCCL kernel spins waiting for a peer
POWER_LIMIT_W = 700.0
SM_CLOCK_BUSY_MHZ = 1980.0
SM_CLOCK_IDLE_MHZ = 345.0
SM_CLOCK_THROTTLED_MHZ = 1290.0
MEM_TOTAL_MIB = 81559.0

DEFAULT_FIELDS: tuple[str, ...] = (
    "timestamp", "index", "utilization.gpu", "utilization.memory", "memory.used", "memory.total", "power.draw",
    "clocks.sm", "temperature.gpu", "clocks_event_reasons.active",
)
_FIELD_UNITS = {
    "utilization.gpu": "%", "utilization.memory": "%", "memory.used": "MiB", "memory.total": "MiB",
    "power.draw": "W", "clocks.sm": "MHz",
}
_FIELD_COLUMN = {
    "utilization.gpu": "util_pct", "utilization.memory": "mem_util_pct", "memory.used": "mem_used_mib",
    "memory.total": "mem_total_mib", "power.draw": "power_w", "clocks.sm": "sm_clock_mhz",
    "temperature.gpu": "temp_c", "clocks_event_reasons.active": "throttle_reasons",
}


@dataclass
class Truth:
    """The answers a correct diagnosis of the generated data must find."""

    scenario: str
    source: str
    interval_s: float
    period_s: float | None = None
    duty_cycle: float | None = None
    high_pct: float | None = None
    low_pct: float | None = None
    synchrony: str | None = None
    groups: list[list[str]] = field(default_factory=list)
    guilty: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)
    hypothesis: str = "healthy"
    every_n_steps: int | None = None
    notes: str = ""

    @property
    def cause(self):
        """The catalog record (playbook.knowledge.causes) of the cause a correct diagnosis names."""
        from playbook.knowledge.causes import cause

        return cause(self.hypothesis)

    def to_dict(self) -> dict:
        return asdict(self)


def _ids(hosts: int, gpus_per_host: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    names = [f"node{h:02d}" for h in range(hosts)]
    host = np.repeat(np.array(names, dtype=object), gpus_per_host)
    gpu = np.tile(np.arange(gpus_per_host), hosts)
    return [schema.gpu_id(h, g) for h, g in zip(host, gpu, strict=True)], host, gpu


def _cycles(span_s: float, period_s: float, offset_s: float = 0.0, period_jitter: float = 0.0,
            rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Cycle start times and lengths covering [-period, span + period]; lengths jittered by `period_jitter` (sd)."""
    n = int(span_s / period_s) + 4
    lengths = np.full(n, float(period_s))
    if period_jitter > 0 and rng is not None:
        lengths = period_s * np.clip(1 + period_jitter * rng.standard_normal(n), 0.5, 1.5)
    starts = np.concatenate([[0.0], np.cumsum(lengths)[:-1]]) + offset_s % period_s - period_s
    return starts, lengths


def _square_state(t: np.ndarray, cycles: tuple[np.ndarray, np.ndarray], duty: float,
                  shift_s: float = 0.0) -> np.ndarray:
    """1 (high) for the first duty*length of every cycle, 0 after; `shift_s` delays this GPU's cycles."""
    starts, lengths = cycles
    starts = starts + shift_s
    k = np.clip(np.searchsorted(starts, t, side="right") - 1, 0, len(starts) - 1)
    return ((t - starts[k]) < duty * lengths[k]).astype(float)


def _telegraph_state(t: np.ndarray, mean_high_s: float, mean_low_s: float, rng: np.random.Generator) -> np.ndarray:
    """A random telegraph signal: exponential dwell times with the given means (irregular swings)."""
    span = float(t.max() - t.min()) if len(t) else 0.0
    n = int(2 * span / (mean_high_s + mean_low_s)) + 16
    dwell = np.empty(2 * n)
    dwell[0::2] = rng.exponential(mean_high_s, n)
    dwell[1::2] = rng.exponential(mean_low_s, n)
    edges = t.min() + np.concatenate([[0.0], np.cumsum(dwell)])
    k = np.searchsorted(edges, t, side="right") - 1
    return (k % 2 == 0).astype(float)


@dataclass
class _Profile:
    """What each GPU does in a scenario before noise: arrays over (gpu,) or (gpu, sample)."""

    state: np.ndarray  # (gpu, sample): 1 = doing work
    util_hi: np.ndarray  # (gpu,): utilization (%) while working
    util_lo: np.ndarray  # (gpu,): utilization (%) while not
    spinning: np.ndarray  # (gpu, sample): utilization high but waiting (low power)
    clock_busy: np.ndarray  # (gpu,): SM clock (MHz) while busy
    harmful: np.ndarray  # (gpu,): throttle-reason bits set while busy
    lost_at: np.ndarray  # (gpu,): seconds after which the GPU stops reporting

    @classmethod
    def busy(cls, n_gpu: int, n_t: int, high_pct: float, low_pct: float) -> _Profile:
        """Every GPU working all the time at `high_pct`, at the full clock, never lost."""
        return cls(state=np.ones((n_gpu, n_t)), util_hi=np.full(n_gpu, high_pct), util_lo=np.full(n_gpu, low_pct),
                   spinning=np.zeros((n_gpu, n_t), dtype=bool), clock_busy=np.full(n_gpu, SM_CLOCK_BUSY_MHZ),
                   harmful=np.zeros(n_gpu, dtype=np.int64), lost_at=np.full(n_gpu, np.inf))


def _sample_times(n_gpu: int, n_t: int, interval_s: float, jitter: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The nominal polling grid (s) and each GPU's jittered, sorted sample times (gpu, sample)."""
    base = np.arange(n_t) * interval_s
    t = base[None, :] + (rng.uniform(-jitter / 2, jitter / 2, (n_gpu, n_t)) * interval_s if jitter > 0 else 0.0)
    t = t + np.zeros((n_gpu, 1))
    return base, np.sort(t, axis=1)  # jitter may not reorder a GPU's own samples


def _fleet_swings(scenario: str, p: _Profile, truth: Truth, ids: list[str], t: np.ndarray, base: np.ndarray,
                  phase0: float, rng: np.random.Generator, *, duration_s: float, period_s: float,
                  duty_cycle: float, high_pct: float, low_pct: float, period_jitter: float, skew_s: float) -> None:
    """Set `p` and `truth` for the scenarios where the whole fleet swings: oscillation, irregular, antiphase."""
    n_gpu = len(ids)
    truth.duty_cycle, truth.high_pct, truth.low_pct = duty_cycle, high_pct, low_pct
    truth.statuses = dict.fromkeys(ids, "ok")
    if scenario == "oscillation":
        cycles = _cycles(duration_s, period_s, phase0, period_jitter, rng)  # one fleet-wide cycle sequence
        shift = skew_s * rng.standard_normal(n_gpu)
        p.state = np.stack([_square_state(t[i], cycles, duty_cycle, shift[i]) for i in range(n_gpu)])
        truth.period_s = period_s
        truth.synchrony, truth.groups = "synchronized", [ids]
        truth.hypothesis = cause_ids.PERIODIC_STALL
    elif scenario == "irregular":
        shared = _telegraph_state(base, duty_cycle * period_s, (1 - duty_cycle) * period_s, rng)
        p.state = np.stack([np.interp(t[i], base, shared) >= 0.5 for i in range(n_gpu)]).astype(float)
        truth.synchrony, truth.groups = "synchronized", [ids]
        truth.hypothesis = cause_ids.DATA_STARVATION
    elif scenario == "antiphase":
        half = n_gpu // 2
        cycles = _cycles(duration_s, period_s, phase0, period_jitter, rng)
        shift = skew_s * rng.standard_normal(n_gpu)
        for i in range(n_gpu):
            s = _square_state(t[i], cycles, duty_cycle, shift[i])
            p.state[i] = s if i < half else 1.0 - s
        truth.period_s = period_s
        truth.synchrony, truth.groups = "groups", [ids[:half], ids[half:]]
        truth.hypothesis = cause_ids.PIPELINE_IMBALANCE
        # the consumers are busy (1 - duty) of the time: clearly less than their producers when duty > 0.6
        truth.statuses = {i: ("underutilized" if k >= half and duty_cycle >= 0.6 else "ok")
                          for k, i in enumerate(ids)}


def _one_gpu_at_fault(scenario: str, p: _Profile, truth: Truth, ids: list[str], t: np.ndarray, phase0: float,
                      rng: np.random.Generator, *, g: int, duration_s: float, period_s: float,
                      duty_cycle: float, low_pct: float, period_jitter: float) -> None:
    """Set `p` and `truth` for healthy and where GPU `g` alone is at fault: straggler, throttled, lost."""
    p.util_hi[:] = 97.0
    truth.statuses = dict.fromkeys(ids, "ok")
    if scenario == "healthy":
        truth.hypothesis = "healthy"
        return
    truth.guilty = [ids[g]]
    if scenario == "straggler":
        s = _square_state(t[g], _cycles(duration_s, period_s, phase0, period_jitter, rng), duty_cycle)
        p.state[g] = s
        for i in range(len(ids)):
            if i != g:  # peers wait in a collective whenever the guilty GPU is off doing something else
                p.spinning[i] = np.interp(t[i], t[g], s) < 0.5
        p.util_hi[:] = 98.0
        truth.period_s, truth.duty_cycle = period_s, duty_cycle
        truth.high_pct, truth.low_pct = 98.0, low_pct
        truth.groups = [[ids[g]]]
        truth.hypothesis = cause_ids.COLLECTIVE_STRAGGLER
        truth.statuses[ids[g]] = "underutilized"
    elif scenario == "throttled":
        p.clock_busy[g] = SM_CLOCK_THROTTLED_MHZ
        p.harmful[g] = schema.THROTTLE_BITS["hw_thermal"] | schema.THROTTLE_BITS["hw_slowdown"]
        truth.hypothesis = cause_ids.THROTTLING
        truth.statuses[ids[g]] = "throttled"
    elif scenario == "lost":
        p.lost_at[g] = 0.6 * duration_s
        truth.hypothesis = cause_ids.HARDWARE_FAULT
        truth.statuses[ids[g]] = "lost"


def _readings(p: _Profile, noise_pct: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Noisy nvidia-smi readings (gpu, sample) from a profile, keyed by telemetry column."""
    shape = p.state.shape
    work = p.state * (~p.spinning)
    level = np.where(p.state > 0.5, p.util_hi[:, None], p.util_lo[:, None])
    level = np.where(p.spinning, 100.0, level)
    util = np.clip(np.round(level + noise_pct * rng.standard_normal(shape)), 0, 100)
    power = POWER_IDLE_W + (POWER_BUSY_W - POWER_IDLE_W) * work * (util / 100.0)
    power = np.where(p.spinning, POWER_SPIN_W, power) + 8.0 * rng.standard_normal(shape)
    busy = util >= 50
    sm_clock = np.where(busy, p.clock_busy[:, None], SM_CLOCK_IDLE_MHZ) + 5.0 * rng.standard_normal(shape)
    throttle = np.where(busy, 0, schema.THROTTLE_BITS["gpu_idle"]).astype(np.int64)
    throttle = np.where(busy & (power > 0.9 * POWER_BUSY_W), throttle | schema.THROTTLE_BITS["sw_power_cap"],
                        throttle)
    throttle = np.where(busy, throttle | p.harmful[:, None], throttle)
    mem_used = 61000.0 + 40.0 * rng.standard_normal(shape)
    mem_util = np.clip(np.round(0.55 * util * work + 2 * rng.standard_normal(shape)), 0, 100)
    temp = np.round(38 + 30 * np.clip(power / POWER_BUSY_W, 0, 1) + 0.5 * rng.standard_normal(shape))
    return {"util_pct": util.astype(float), "mem_util_pct": mem_util, "mem_used_mib": mem_used, "power_w": power,
            "sm_clock_mhz": sm_clock, "temp_c": temp, "throttle_reasons": throttle}


def _lose_samples(r: dict[str, np.ndarray], t: np.ndarray, lost_at: np.ndarray, rng: np.random.Generator, *,
                  interval_s: float, nan_frac: float, gaps: int, gap_s: float | None, period_s: float,
                  duration_s: float) -> np.ndarray:
    """Blank lost GPUs' readings and `nan_frac` of utilization in `r` (in place); the mask of the rows that remain
    once lost GPUs fall silent and the polling outages (`gaps`) are cut."""
    keep = np.ones(t.shape, dtype=bool)
    for i in np.flatnonzero(np.isfinite(lost_at)):
        dead = t[i] >= lost_at[i]
        err = dead & (t[i] < lost_at[i] + 3 * interval_s)  # a few error rows, then nothing
        for col in ("util_pct", "power_w", "sm_clock_mhz", "mem_used_mib", "mem_util_pct", "temp_c"):
            r[col][i, err] = np.nan
        keep[i] = ~dead | err
    if nan_frac > 0:
        r["util_pct"][rng.random(t.shape) < nan_frac] = np.nan
    if gaps > 0:
        length = gap_s if gap_s is not None else min(3 * period_s, duration_s / (4 * gaps))
        for a in rng.uniform(0.1 * duration_s, 0.9 * duration_s - length, gaps):
            keep &= ~((t >= a) & (t < a + length))
    return keep


def _telemetry_table(r: dict[str, np.ndarray], t: np.ndarray, keep: np.ndarray, host_of: np.ndarray,
                     gpu_of: np.ndarray, start: str, source: str, interval_s: float) -> pd.DataFrame:
    """The kept samples as a schema.telemetry_frame (times to the millisecond after `start`)."""
    n_t, n = t.shape[1], int(keep.sum())
    times = pd.Timestamp(start) + pd.to_timedelta(np.round(t[keep] * 1e3).astype(np.int64), unit="ms")
    return schema.telemetry_frame({
        "time": times,
        "host": np.repeat(host_of[:, None], n_t, axis=1)[keep],
        "gpu": np.repeat(gpu_of[:, None], n_t, axis=1)[keep],
        "util_pct": r["util_pct"][keep], "mem_util_pct": r["mem_util_pct"][keep],
        "mem_used_mib": np.round(r["mem_used_mib"][keep]), "mem_total_mib": np.full(n, MEM_TOTAL_MIB),
        "power_w": np.round(r["power_w"][keep], 2), "power_limit_w": np.full(n, POWER_LIMIT_W),
        "sm_clock_mhz": np.round(r["sm_clock_mhz"][keep]), "temp_c": r["temp_c"][keep],
        "throttle_reasons": r["throttle_reasons"][keep].astype(float),
        "source": np.full(n, source, dtype=object),
    }, interval_s=interval_s)


def simulate_telemetry(scenario: str = "oscillation", *, hosts: int = 2, gpus_per_host: int = 4,
                       duration_s: float = 900.0, interval_s: float = 1.0, period_s: float = 60.0,
                       duty_cycle: float = 0.75, high_pct: float = 90.0, low_pct: float = 20.0,
                       noise_pct: float = 3.0, jitter: float = 0.0, nan_frac: float = 0.0, gaps: int = 0,
                       gap_s: float | None = None, period_jitter: float = 0.0, skew_s: float = 0.5,
                       guilty_gpu: int = 0, seed: int = 0,
                       start: str = "2026-01-15T10:00:00Z") -> tuple[pd.DataFrame, Truth]:
    """A LABELED SYNTHETIC telemetry table (schema.telemetry_frame) for `scenario`, and its Truth.

    interval_s: polling interval (s); jitter: sampling-time jitter as a fraction of it (uniform ±);
    noise_pct: sd of utilization noise (percentage points); nan_frac: share of utilization values lost (NaN);
    gaps: number of polling outages (all GPUs) of `gap_s` seconds (default 3 periods... capped); period_jitter: sd of
    cycle-length variation (fraction of the period); skew_s: sd of per-GPU timing offsets within a synchronized
    fleet; guilty_gpu: flat index of the GPU that straggles / throttles / is lost.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose from {', '.join(SCENARIOS)}")
    rng = np.random.default_rng(seed)  # draw order: jitter, phase, scenario, readings, NaNs, gaps
    ids, host_of, gpu_of = _ids(hosts, gpus_per_host)
    n_t = max(int(round(duration_s / interval_s)), 1)
    base, t = _sample_times(len(ids), n_t, interval_s, jitter, rng)
    source = f"synthetic:{scenario}"
    truth = Truth(scenario=scenario, source=source, interval_s=interval_s)
    profile = _Profile.busy(len(ids), n_t, high_pct, low_pct)
    phase0 = rng.uniform(0, period_s)
    cycle = {"duration_s": duration_s, "period_s": period_s, "duty_cycle": duty_cycle, "low_pct": low_pct,
             "period_jitter": period_jitter}
    if scenario in ("oscillation", "irregular", "antiphase"):
        _fleet_swings(scenario, profile, truth, ids, t, base, phase0, rng, high_pct=high_pct, skew_s=skew_s,
                      **cycle)
    else:
        _one_gpu_at_fault(scenario, profile, truth, ids, t, phase0, rng, g=guilty_gpu, **cycle)
    readings = _readings(profile, noise_pct, rng)
    keep = _lose_samples(readings, t, profile.lost_at, rng, interval_s=interval_s, nan_frac=nan_frac, gaps=gaps,
                         gap_s=gap_s, period_s=period_s, duration_s=duration_s)
    return _telemetry_table(readings, t, keep, host_of, gpu_of, start, source, interval_s), truth


_PHASE_SHARES = {"data": 0.01, "h2d": 0.01, "fwd": 0.32, "bwd": 0.50, "collective": 0.10, "optimizer": 0.06}


@dataclass
class _StepPlan:
    """When every step runs (s) and what it pays beyond compute."""

    compute: np.ndarray  # (rank, step): compute seconds
    stall: np.ndarray  # (step,): rank 0 stalls at the end of this step
    gc_steps: np.ndarray  # steps with a GC pause, sorted
    rec: np.ndarray  # steps that recompile
    step_time: np.ndarray  # (step,): wall seconds (the slowest rank's compute plus the extras)
    starts: np.ndarray  # (step,): start seconds


def _plan_steps(rng: np.random.Generator, *, ranks: int, steps: int, step_s: float, noise: float,
                stall_every: int | None, stall_s: float, gc_count: int, gc_pause_s: float, creep: float,
                recompile_steps: tuple[int, ...], recompile_s: float, slow_rank: int | None,
                slow_factor: float) -> _StepPlan:
    """Draw compute times and GC steps and lay out the steps (see simulate_steps)."""
    base = step_s * (1 + creep * np.arange(steps) / max(steps - 1, 1))
    compute = base[None, :] * np.exp(noise * rng.standard_normal((ranks, steps)))
    if slow_rank is not None:
        compute[slow_rank] *= slow_factor
    extra = np.zeros(steps)
    stall = np.zeros(steps, dtype=bool)
    if stall_every:
        stall[stall_every - 1::stall_every] = True
        extra[stall] += stall_s
    gc_steps = np.sort(rng.choice(np.flatnonzero(~stall), size=min(gc_count, int((~stall).sum())), replace=False))
    extra[gc_steps] += gc_pause_s
    rec = np.array([s for s in recompile_steps if 0 <= s < steps], dtype=int)
    extra[rec] += recompile_s
    step_time = compute.max(axis=0) + extra  # the collective makes every rank as slow as the slowest
    starts = np.concatenate([[0.0], np.cumsum(step_time)[:-1]])
    return _StepPlan(compute, stall, gc_steps, rec, step_time, starts)


def _phase_rows(plan: _StepPlan, *, ranks_per_host: int, stall_s: float, stall_kind: str, gc_pause_s: float,
                recompile_s: float) -> dict[str, list]:
    """The steps table's columns (times in seconds from the start): a "step" row and its phases per rank and step."""
    rows: dict[str, list] = {k: [] for k in ("time", "host", "rank", "step", "phase", "duration_s")}

    def add(r, s, phase, at, dur):
        for k, v in zip(rows, (at, f"node{r // ranks_per_host:02d}", r, s, phase, dur), strict=True):
            rows[k].append(v)

    ranks, steps = plan.compute.shape
    starts, step_time = plan.starts, plan.step_time
    for r in range(ranks):
        for s in range(steps):
            at = starts[s]
            add(r, s, "step", at, step_time[s])
            c = plan.compute[r, s]
            for phase in ("data", "h2d", "fwd", "bwd"):
                add(r, s, phase, at, c * _PHASE_SHARES[phase])
                at += c * _PHASE_SHARES[phase]
            if plan.stall[s] and r == 0:
                add(r, s, stall_kind, at, stall_s)
                at += stall_s
            if s in plan.gc_steps:
                at += gc_pause_s
            if s in plan.rec:
                at += recompile_s
            wait = step_time[s] - (at - starts[s]) - c * _PHASE_SHARES["optimizer"]
            add(r, s, "collective", at, max(wait, c * _PHASE_SHARES["collective"]))
            at = starts[s] + step_time[s] - c * _PHASE_SHARES["optimizer"]
            add(r, s, "optimizer", at, c * _PHASE_SHARES["optimizer"])
    return rows


def _step_events(plan: _StepPlan, *, ranks: int, ranks_per_host: int, stall_s: float, stall_kind: str,
                 gc_pause_s: float, recompile_s: float) -> dict[str, list]:
    """The events table's columns (times in s): rank 0's stalls, then every rank's GC pauses and recompiles."""
    events: dict[str, list] = {k: [] for k in ("time", "host", "rank", "step", "kind", "duration_s", "detail")}

    def add(*values):
        for k, v in zip(events, values, strict=True):
            events[k].append(v)

    for s in np.flatnonzero(plan.stall):
        add(plan.starts[s] + plan.step_time[s] - stall_s, "node00", 0, int(s), stall_kind, stall_s, "synthetic")
    for kind, where, dur in (("gc", plan.gc_steps, gc_pause_s), ("recompile", plan.rec, recompile_s)):
        for s in where:
            for r in range(ranks):
                add(plan.starts[s] + 0.2 * plan.step_time[s], f"node{r // ranks_per_host:02d}", r, int(s), kind, dur,
                    "synthetic gen2" if kind == "gc" else "synthetic guard failure")
    return events


def _steps_truth(plan: _StepPlan, source: str, *, steps: int, stall_every: int | None, stall_kind: str,
                 gc_count: int, creep: float, slow_rank: int | None) -> Truth:
    """The cause a correct diagnosis of simulate_steps' tables names (the first that applies, in this order)."""
    truth = Truth(scenario="steps", source=source, interval_s=float(np.median(plan.step_time)))
    if stall_every:
        truth.every_n_steps = stall_every
        truth.period_s = float(plan.step_time.sum() / steps * stall_every)
        truth.hypothesis = cause_ids.GC_PAUSE if stall_kind in GC_KINDS else cause_ids.PERIODIC_STALL
    elif gc_count:
        truth.hypothesis = cause_ids.GC_PAUSE
    elif creep:
        truth.hypothesis = cause_ids.THROTTLING
    elif len(plan.rec):
        truth.hypothesis = cause_ids.RECOMPILATION
    elif slow_rank is not None:
        truth.hypothesis = cause_ids.COLLECTIVE_STRAGGLER
        truth.guilty = [f"rank{slow_rank}"]
    else:
        truth.hypothesis = "healthy"
    return truth


def _with_time(columns: dict[str, list], start: str, source: str) -> dict[str, list]:
    """`columns` with "time" (seconds) turned into timestamps to the microsecond after `start`, and a source."""
    secs = np.asarray(columns["time"], dtype=float)
    time = pd.Timestamp(start) + pd.to_timedelta(np.round(secs * 1e6).astype(np.int64), unit="us")
    return {**columns, "time": time, "source": [source] * len(columns["step"])}


def simulate_steps(*, ranks: int = 4, ranks_per_host: int = 8, steps: int = 400, step_s: float = 1.5,
                   noise: float = 0.05, stall_every: int | None = 40, stall_s: float = 6.0,
                   stall_kind: str = "checkpoint", gc_count: int = 0, gc_pause_s: float = 1.2,
                   creep: float = 0.0, recompile_steps: tuple[int, ...] = (), recompile_s: float = 8.0,
                   slow_rank: int | None = None, slow_factor: float = 1.3, seed: int = 0,
                   start: str = "2026-01-15T10:00:00Z") -> tuple[pd.DataFrame, pd.DataFrame, Truth]:
    """LABELED SYNTHETIC step/phase and event tables for a data-parallel run, and their Truth.

    Every rank runs the same steps (a collective ends each step, so a slow rank slows all). Phases per step:
    data, h2d, fwd, bwd, collective, optimizer; every `stall_every` steps (at steps N-1, 2N-1, ...) rank 0 adds a
    `stall_kind` phase of `stall_s` seconds that the other ranks wait out in `collective`. `gc_count` random
    steps get a GC pause (a "gc" event); `creep` is the relative step-time increase from first to last step;
    `recompile_steps` pay `recompile_s` of recompilation (a "recompile" event). `slow_rank` computes
    `slow_factor` times slower (the others wait for it in the collective).
    """
    rng = np.random.default_rng(seed)
    source = "synthetic:steps"
    plan = _plan_steps(rng, ranks=ranks, steps=steps, step_s=step_s, noise=noise, stall_every=stall_every,
                       stall_s=stall_s, gc_count=gc_count, gc_pause_s=gc_pause_s, creep=creep,
                       recompile_steps=recompile_steps, recompile_s=recompile_s, slow_rank=slow_rank,
                       slow_factor=slow_factor)
    extras = {"ranks_per_host": ranks_per_host, "stall_s": stall_s, "stall_kind": stall_kind,
            "gc_pause_s": gc_pause_s, "recompile_s": recompile_s}
    steps_df = schema.steps_frame(_with_time(_phase_rows(plan, **extras), start, source))
    events_df = schema.events_frame(_with_time(_step_events(plan, ranks=ranks, **extras), start, source))
    truth = _steps_truth(plan, source, steps=steps, stall_every=stall_every, stall_kind=stall_kind,
                         gc_count=gc_count, creep=creep, slow_rank=slow_rank)
    return steps_df, events_df, truth


def simulate_bundle(scenario: str = "oscillation", **kwargs) -> tuple[schema.Bundle, Truth]:
    """A Bundle holding simulate_telemetry(scenario, **kwargs), ready for playbook.diagnosis.diagnose."""
    frame, truth = simulate_telemetry(scenario, **kwargs)
    return schema.Bundle(inputs=[truth.source], telemetry=frame), truth


def _fmt(column: str, values: np.ndarray) -> np.ndarray:
    if column == "throttle_reasons":
        out = np.array([f"0x{int(v):016X}" if np.isfinite(v) else "[Unknown Error]" for v in values], dtype=object)
        return out
    if column in ("power_w",):
        txt = np.char.mod("%.2f", np.nan_to_num(values))
    else:
        txt = np.char.mod("%d", np.round(np.nan_to_num(values)).astype(np.int64))
    return np.where(np.isfinite(values), txt, "[Unknown Error]").astype(object)


def write_nvidia_smi_csv(telemetry: pd.DataFrame, out_dir: str | Path,
                         fields: tuple[str, ...] = DEFAULT_FIELDS, units: bool = False,
                         suffix: str = ".synthetic.csv") -> list[Path]:
    """Write `telemetry` as nvidia-smi `--query-gpu=FIELDS --format=csv[,nounits]` logs, one file per host.

    Files are named `<host><suffix>` so the host name comes from the file stem ("node00.synthetic" → use a
    suffix like ".csv" to keep the bare host name). Rows are ordered by time; NaN prints as "[Unknown Error]".
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    header = []
    for f in fields:
        unit = _FIELD_UNITS.get(f)
        header.append(f"{f} [{unit}]" if unit else f)
    paths = []
    for host, part in telemetry.groupby("host", sort=True):
        part = part.sort_values(["time", "gpu"], kind="stable")
        cols = []
        for f in fields:
            if f == "timestamp":
                cols.append(part["time"].dt.strftime("%Y/%m/%d %H:%M:%S.%f").str[:-3].to_numpy(dtype=object))
            elif f == "index":
                cols.append(part["gpu"].astype(str).to_numpy(dtype=object))
            else:
                column = _FIELD_COLUMN[f]
                txt = _fmt(column, part[column].to_numpy(dtype=float))
                if units and f in _FIELD_UNITS:
                    unit = _FIELD_UNITS[f]
                    txt = np.where(np.char.startswith(txt.astype(str), "["), txt, txt + f" {unit}").astype(object)
                cols.append(txt)
        lines = [", ".join(row) for row in zip(*cols, strict=True)]
        path = out / f"{host}{suffix}"
        path.write_text(", ".join(header) + "\n" + "\n".join(lines) + "\n")
        paths.append(path)
    return paths


def write_run_dir(run_dir: str | Path, telemetry: pd.DataFrame | None = None, steps: pd.DataFrame | None = None,
                  events: pd.DataFrame | None = None) -> Path:
    """Write synthetic tables as a playbook run directory (one part per (host, rank) of the steps table)."""
    from playbook.model import run_layout

    run = run_layout.init_run(run_dir, command="playbook.labs.synthetic (SYNTHETIC)", synthetic=True)
    if telemetry is not None and len(telemetry):
        for host, part in telemetry.groupby("host", sort=True):
            p = run_layout.init_part(run, host=str(host), rank=None, synthetic=True)
            run_layout.write_table(p, "telemetry", part.reset_index(drop=True))
    if steps is not None and len(steps):
        for (host, rank), part in steps.groupby(["host", "rank"], sort=True):
            p = run_layout.init_part(run, host=str(host), rank=int(rank), synthetic=True)
            run_layout.write_table(p, "steps", part.reset_index(drop=True))
            if events is not None and len(events):
                ev = events[(events["host"] == host) & (events["rank"] == rank)]
                if len(ev):
                    run_layout.write_table(p, "events", ev.reset_index(drop=True))
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m playbook.labs.synthetic",
        description="Write LABELED SYNTHETIC nvidia-smi logs (one CSV per host) with a truth.json of the answers.",
        epilog="example:\n  python -m playbook.labs.synthetic --scenario oscillation --hosts 8 --gpus 8 --duration 600 "
               "--interval 5 --out data/samples/synthetic-64gpu",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=SCENARIOS, default="oscillation")
    parser.add_argument("--hosts", type=int, default=8, help="hosts (default 8)")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per host (default 8)")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of telemetry (default 600)")
    parser.add_argument("--interval", type=float, default=5.0, help="polling interval, s (default 5)")
    parser.add_argument("--period", type=float, default=60.0, help="oscillation period, s (default 60)")
    parser.add_argument("--duty", type=float, default=0.75, help="share of each period spent high (default 0.75)")
    parser.add_argument("--noise", type=float, default=3.0, help="utilization noise sd, points (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fields", default="timestamp,index,utilization.gpu,power.draw",
                        help="nvidia-smi --query-gpu fields to write (default: %(default)s)")
    parser.add_argument("--nounits", action="store_true", help="write values without units (--format=csv,nounits)")
    parser.add_argument("--out", required=True, help="output folder")
    args = parser.parse_args(argv)
    frame, truth = simulate_telemetry(args.scenario, hosts=args.hosts, gpus_per_host=args.gpus,
                                      duration_s=args.duration, interval_s=args.interval, period_s=args.period,
                                      duty_cycle=args.duty, noise_pct=args.noise, seed=args.seed)
    fields = tuple(f.strip() for f in args.fields.split(",") if f.strip())
    paths = write_nvidia_smi_csv(frame, args.out, fields=fields, units=not args.nounits, suffix=".csv")
    out = Path(args.out)
    command = "python -m playbook.labs.synthetic " + " ".join(argv if argv is not None else sys.argv[1:])
    truth_json = json.dumps({"SYNTHETIC": True, **truth.to_dict()}, indent=1)
    (out / "README.md").write_text(
        f"# SYNTHETIC telemetry: {args.scenario}, {args.hosts} hosts x {args.gpus} GPUs\n\n"
        f"SYNTHETIC — not a measurement. Generated by `playbook.labs.synthetic` with:\n\n    {command}\n\n"
        f"Files: one nvidia-smi `--query-gpu={','.join(fields)} --format=csv{',nounits' if args.nounits else ''}` "
        f"log per host (the host name is the file name). The answers a correct diagnosis must find:\n\n"
        f"```json\n{truth_json}\n```\n")
    print(f"wrote {len(paths)} SYNTHETIC nvidia-smi logs ({len(frame)} rows) and README.md (with the truth) to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
