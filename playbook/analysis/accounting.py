"""What-if accounting: every second of a run set against the same work at the run's own healthy pace.

    from playbook.analysis.accounting import account
    acc = account(bundle)          # Accounting | None
    acc.lost_share, [(b.kind, b.seconds) for b in acc.buckets]

Lost time = actual − what-if, split into buckets that add up to `lost_s`. The basis is the input's own time axis:
- **GPU time** (telemetry with utilization, or SM activity): G GPUs × the recorded span. The what-if GPU is busy at
  the level the same GPUs reach at work (the 90th percentile over time of the peers' median, the run's "busy
  level"); a GPU's shortfall is cut into buckets by where it sits: all GPUs below the busy level at the same
  moments (`fleet_drops`), one GPU below its peers at the same moments (`idle_gpu` when it idles throughout,
  `underused_gpu` when its deficit is significant, else jitter), a GPU that stops reporting while its peers report
  (`lost_gpu`), a steady level far below what a fed GPU reads (`steady_idle`: the busy level itself under
  STEADY_FED_PCT), polls at ≥ 90% utilization at under half the power the same GPU draws at work (`busy_wait`: a
  kernel spinning in a collective, not work) and busy polls at a clock well below the clock the same GPU reaches
  (`slow_clock`).
  The buckets partition the basis: a GPU-second (one GPU, one grid bin) is its busy part (its utilization) and its
  idle part (the rest; all of it without a reading). `busy_wait` and `slow_clock` charge only work missing from the
  busy part (and never the same poll); every other bucket claims the idle part, and each cell's idle part is charged
  once, to the first claim in this order, later claims getting what is left: `lost_gpu` (nothing else is measured on
  a GPU that stopped), warm-up, `fleet_drops`, the GPU's own shortfall against its peers (`gpu_drops`, `idle_gpu`,
  `underused_gpu`), `steady_idle` last, as the run-wide level is what remains once the moments are explained. So
  ideal + warm-up + buckets == the basis, and the lost share is at most 1.
- **Wall time** (step logs without GPU telemetry), per rank: the what-if step is the rank's robust steady step
  time (the median of its steps after warm-up, the faster side of a level shift). Excess over it is cut into
  slow steps on a lattice (`recurring_slow`), other slow steps (`stalls`), the steps after a level shift
  (`level_shift`), time between steps the step timer does not see (`outside_timer`: start-to-start gaps against
  the durations), time in waiting phases of ordinary steps (`phase:data`, `phase:collective`, ...; waits are not
  work) and, for a loop of several named work stages, the idle time a pipeline of those stages would have
  (`stage_imbalance`: 1 − mean stage ÷ slowest stage). Ranks whose own timers leave out the wait for a persistent
  straggler (analysis/rank_waits.py) get that wait as their `phase:collective`, and the straggler's steady excess
  over its peers on the same work is `slow_rank`. Warm-up/compile is shown apart (`warmup_s`), not lost.
  These partition the basis too: a slow step's or a stretch's excess is at most the step's own time, an ordinary
  step's waits are charged at most its own time (in the order logged) and the stage imbalance at most what they
  left, and `outside_timer` per gap at most what the timed steps leave of it (a rank's wall time is its timed steps
  plus those untimed rests, at least its span). Waits a log timed outside the step (a loader timed before the step
  timer starts: the gaps' untimed rest tracks them) are charged to their phase from that rest, not to the step's
  time nor again to `outside_timer`.

The noise floor is the run's own jitter: the share of the basis that ordinary polls/steps spend below the busy
level / above the steady step while nothing is flagged (GPU time: OK GPUs' deficit against their peers; wall time:
unflagged steps' excess over the steady step), with a minimum of MIN_FLOOR. Nothing here names a cause: buckets
carry names, windows and the evidence a diagnosis attributes them with (playbook.diagnosis.attribution).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from playbook.analysis import step_pace as sp
from playbook.analysis import step_times as sa
from playbook.analysis.gpu_limits import POWER_PINNED, sm_basis, sm_wording, sustained_peak
from playbook.analysis.gpus import job_gpus
from playbook.analysis.intervals import true_runs
from playbook.analysis.rank_waits import COLLECTIVE_PHASES, collective_waits, late_ranks, straggler_waits
from playbook.analysis.series import GpuSeries, gpu_series, row_percentile
from playbook.knowledge import ids
from playbook.knowledge.causes import cause
from playbook.model import schema
from playbook.readers.profiler_table import META_PREFIX as PROFILER_META

# A loss under 1% of the basis is within the run-to-run repeatability of a training job's throughput (repeated
# runs of the same job on the same nodes vary by 1-2%): below it no loss is called, whatever the jitter says.
MIN_FLOOR = 0.01
BUSY_Q = 90  # the busy level: the 90th percentile over time of the peers' median utilization
STEADY_FED_PCT = 80.0  # a GPU kept fed reads >= 90% utilization; a busy level under 80% leaves >= 20% idle
SPIN_UTIL = 90.0  # busy-waiting: >= 90% utilization ...
SPIN_POWER = 0.5  # ... at under half the power the same GPU draws at work
WORK_POWER_FLOOR = 0.5  # "at work" is >= half the power limit (training draws 60-100% of it) in a multi-GPU job
# whose ranks spin from the first poll (QwenLM/Qwen#970): busy under a quarter of the limit is spinning
SLOW_CLOCK = 0.7  # busy at under 70% of the clock the same GPU reaches while busy (DVFS alone costs <= ~25%)
IDLE_PCT = 5.0  # idle throughout: 95% of polls at or below this
MAX_WINDOWS = 8


@dataclass
class Bucket:
    """One slice of the lost time: `kind`, seconds (GPU-seconds on the GPU basis, wall-seconds on the wall
    basis), share of the basis (0-1), the GPUs/ranks involved, time windows (seconds since the run's start),
    the steps involved (step-based buckets) and a short phrase saying what it is."""

    kind: str
    seconds: float
    share: float = 0.0
    names: list[str] = field(default_factory=list)
    windows: list[tuple[float, float]] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    detail: str = ""
    cause: str = "unexplained"
    evidence: str = ""
    direct: bool = False  # the cause is measured on the bucket itself (its phase, events at it), not inferred

    def to_dict(self) -> dict:
        """The bucket as the JSON contract's object."""
        return {"kind": self.kind, "seconds": round(self.seconds, 3), "share": round(self.share, 4),
                "cause": self.cause, "names": list(self.names[:16]),
                "windows": [[round(a, 1), round(b, 1)] for a, b in self.windows[:MAX_WINDOWS]],
                "steps": list(self.steps[:16]), "detail": self.detail, "evidence": self.evidence}


@dataclass
class Accounting:
    """The run's time: `basis` "gpu" (GPU-seconds) or "wall" (rank wall-seconds), the total, the what-if
    (`ideal_s` = wall − lost − warm-up), the buckets, the noise floor (share, 0-1) and how it was measured."""

    basis: str
    wall_s: float
    buckets: list[Bucket]
    noise_floor_share: float
    noise_floor: str
    warmup_s: float = 0.0
    span_s: float = 0.0
    units: int = 1
    t0: pd.Timestamp | None = None  # the time windows count from (UTC), None without timestamps
    interval_s: float = 0.0  # the grid's or the steps' resolution: how near an event must be to a window
    step_gap: int = 1  # steps a logged step line stands for (the median gap between logged step numbers)

    @property
    def lost_s(self) -> float:
        return float(sum(b.seconds for b in self.buckets))

    @property
    def lost_share(self) -> float:
        return float(self.lost_s / self.wall_s) if self.wall_s > 0 else 0.0

    @property
    def ideal_s(self) -> float:
        return max(self.wall_s - self.lost_s - self.warmup_s, 0.0)

    @property
    def significant(self) -> bool:
        """True when the loss is above the noise floor."""
        return self.lost_share > self.noise_floor_share

    def to_dict(self) -> dict:
        """The `accounting` object of the JSON contract."""
        return {"basis": self.basis, "wall_s": round(self.wall_s, 3), "ideal_s": round(self.ideal_s, 3),
                "lost_s": round(self.lost_s, 3), "lost_share": round(self.lost_share, 4),
                "noise_floor_share": round(self.noise_floor_share, 4), "noise_floor": self.noise_floor,
                "warmup_s": round(self.warmup_s, 3), "span_s": round(self.span_s, 3), "units": self.units,
                "buckets": [b.to_dict() for b in sorted(self.buckets, key=lambda b: -b.seconds)]}


def account(bundle: schema.Bundle, interval_s: float | None = None,
            series: GpuSeries | None = None, marked_steps=()) -> Accounting | None:
    """The accounting of `bundle` on its best time axis: GPU telemetry, else step times; None without either.
    `marked_steps`: steps where an event that measures a cause was logged (step_times.warmup_steps); GPU time is
    counted on SM activity where gpu_limits.sm_basis says so."""
    tele = bundle.telemetry
    if len(tele):
        tele, on_sm = sm_basis(tele)
        series = None if tele is not bundle.telemetry else series  # (re)built on the basis counted
        if tele["util_pct"].notna().any():
            if series is None:
                cols = tuple(c for c in ("util_pct", "power_w", "power_limit_w", "sm_clock_mhz") if c in tele)
                series = gpu_series(tele, cols, interval_s=interval_s)
            acc = gpu_accounting(series, bundle.events)
            if acc is not None and on_sm:
                sm_wording(acc, on_sm)
            if acc is not None:
                return acc
    if len(bundle.steps):
        return step_accounting(bundle.steps, marked_steps, bundle.events)
    return profile_accounting(bundle)


# ---------------------------------------------------------------- profiled steps (torch.profiler tables)

# A fed training loop still leaves its GPU idle a few percent of a step (launch gaps, the optimizer's small kernels,
# the step boundary): the TensorFlow profiler calls host-side waits "moderate" from 5% of the step, the threshold
# the trace and table findings use. Below it a table's idle time is not called a loss.
PROFILE_FLOOR = 0.05


def profile_accounting(bundle: schema.Bundle) -> Accounting | None:
    """GPU-time accounting of torch.profiler tables (no time axis, only totals): the profiled steps' wall time on the
    host (ProfilerStep* CPU total; without steps, the table's self CPU time, which is at most the window: the idle
    share a lower bound) against the GPU's kernel time (Self CUDA time total), one GPU per table; the idle rest is
    one `profile_idle` bucket. None without a table that has both."""
    wall = busy = 0.0
    names = []
    for key, t in (bundle.meta or {}).items():
        if isinstance(key, str) and key.startswith(PROFILER_META) and isinstance(t, dict):
            steps_s = float(t.get("steps_s") or 0.0) or float(t.get("self_cpu_total_s") or 0.0)
            device_s = float(t.get("self_device_total_s") or 0.0)
            if steps_s > 0 and device_s > 0:
                wall, busy = wall + steps_s, busy + min(device_s, steps_s)
                names.append(key[len(PROFILER_META):].rsplit("/", 1)[-1])
    if wall <= 0:
        return None
    idle = wall - busy
    bucket = Bucket("profile_idle", idle, share=idle / wall, names=names if len(names) > 1 else [],  # one: the input
                    detail=f"the GPU idle {idle / wall:.0%} of the profiled steps (kernel time {busy:.3f} s of "
                           f"{wall:.3f} s)")
    return Accounting("gpu", wall, [bucket] if idle > 0 else [], PROFILE_FLOOR,
                      f"a fed loop's idle time between kernels (under {PROFILE_FLOOR:.0%} of a step, the "
                      "TensorFlow profiler's 'moderate' threshold)", span_s=wall)


# ---------------------------------------------------------------- GPU time


def gpu_accounting(series: GpuSeries, events: pd.DataFrame | None = None) -> Accounting | None:
    """GPU-time accounting of per-GPU utilization (see the module docstring); None with < 2 polls. `events`: the
    run's events, whose fault events keep an idle failing GPU in (analysis.gpus.job_gpus)."""
    if not len(series) or len(series.t) < 2:
        return None
    series = job_gpus(series, events)[0]
    dt, lo, n_bins = series.common_grid()
    if n_bins < 2:
        return None
    util = np.clip(series.grid_means("util_pct", dt, lo, n_bins).astype(np.float64), 0.0, 100.0)
    valid = np.isfinite(util)
    g_count = len(series)
    seen = valid.any(axis=1)
    first = np.where(seen, valid.argmax(axis=1), n_bins)
    active = np.arange(n_bins)[None, :] >= first[:, None]  # a GPU counts from its first reading on
    peers_any = valid.sum(axis=0) > 0
    active &= peers_any[None, :]
    total = float(active.sum() * dt)
    if total <= 0:
        return None
    with warnings.catch_warnings():  # bins where no GPU reported: NaN, by design
        warnings.simplefilter("ignore", RuntimeWarning)
        # a GPU idle throughout while peers work is its own bucket (idle_gpu), not part of the fleet's level: in a
        # small fleet it would drag the median (2 GPUs at 97% and 0%: a "busy level" of 48%)
        idle_all = np.nanpercentile(np.where(valid, util, np.nan), 95, axis=1) <= IDLE_PCT
        level_of = valid & ~idle_all[:, None] if (~idle_all).any() else valid
        med = np.nanmedian(np.where(level_of, util, np.nan), axis=0) if g_count > 1 else util[0]
    med = np.where(np.isfinite(med), med, np.nan)
    busy = float(np.nanpercentile(med, BUSY_Q)) if np.isfinite(med).any() else 100.0
    busy = max(busy, 1.0)
    ids = series.ids
    buckets: list[Bucket] = []
    # lost GPUs: no reading from some point on while peers report
    last = np.where(seen, n_bins - 1 - valid[:, ::-1].argmax(axis=1), -1)
    peers_last = int(np.flatnonzero(peers_any).max()) if peers_any.any() else -1
    gone = [g for g in range(g_count) if g_count > 1 and seen[g] and peers_last - last[g] >= max(3, n_bins // 20)]
    gone_mask = np.zeros_like(valid)
    for g in gone:
        gone_mask[g, last[g] + 1:peers_last + 1] = True
    gone_mask &= active
    working = active & ~gone_mask
    # each cell's idle part (GPU-seconds), charged below once, in the docstring's precedence order
    room = np.where(valid, (100.0 - util) / 100.0, 1.0) * dt * active
    if gone:
        secs = float(_charge(room, busy / 100.0 * dt, gone_mask).sum())
        buckets.append(Bucket("lost_gpu", secs, names=[ids[g] for g in gone],
                              windows=[(float((last[g] + 1) * dt), float((peers_last + 1) * dt)) for g in gone],
                              detail=f"{len(gone)} GPU{'s' if len(gone) > 1 else ''} stopped reporting while "
                                     "peers worked"))
    # fleet-wide drops: the peers' median below the busy level at the same moments
    drop = np.where(np.isfinite(med), np.clip(busy - med, 0.0, None), 0.0) / 100.0
    dipping = drop * 100.0 >= max(10.0, 0.25 * busy)
    # the GPUs idle from the first poll until the job first works (loading the model, indexing data): warm-up
    lead = ~np.isfinite(med) | (med <= IDLE_PCT)  # (a bin without a reading says nothing either way)
    lead = lead.argmin() if not lead.all() else 0
    in_lead = np.arange(n_bins) < lead
    warmup = float(_charge(room, drop * dt, working & in_lead[None, :]).sum())
    dipping[:lead] = False
    fleet_secs = float(_charge(room, drop * dt, working & dipping[None, :]).sum())
    jitter_fleet = float((drop * working.sum(axis=0) * dt)[lead:][~dipping[lead:]].sum())
    if fleet_secs > 0:
        start, length = true_runs(dipping)
        windows = [(float(s * dt), float((s + n) * dt)) for s, n in zip(start, length, strict=True)]
        buckets.append(Bucket("fleet_drops", fleet_secs, names=["all GPUs"] if g_count > 1 else [ids[0]],
                              windows=windows, detail=f"{len(windows)} drop{'s' if len(windows) != 1 else ''} of "
                              f"the GPUs' median below their busy level {busy:.0f}%"))
    # below peers: each GPU against the peers' median (capped at the busy level) at the same moments
    ref = np.minimum(np.where(np.isfinite(med), med, busy), busy)[None, :]
    deficit = np.where(valid, np.clip(ref - util, 0.0, None), 0.0) / 100.0 * dt
    deep_bin = deficit * 100.0 / dt >= max(10.0, 0.25 * busy)  # a drop of its own, as deep as a fleet drop
    kind_of, jitter = _below_peers(util, med, valid, deficit, deep_bin, busy, set(gone))
    jitter += jitter_fleet
    own_drops = np.array([k == "gpu_drops" for k in kind_of])
    charged = np.where(own_drops[:, None], deep_bin, np.array([k is not None for k in kind_of])[:, None])
    per_gpu = _charge(room, deficit, charged).sum(axis=1)
    deep = deep_bin[own_drops].any(axis=0)
    del deficit, deep_bin, charged  # (G × bins each: not held through the device buckets)
    for kind, what in (("gpu_drops", "dropping below their peers on their own schedules"),
                       ("idle_gpu", "idle throughout while peers worked"),
                       ("underused_gpu", "below their peers at the same moments")):
        rows = [g for g in range(g_count) if kind_of[g] == kind]
        rows = rows if kind == "gpu_drops" else sorted(rows, key=lambda g: -per_gpu[g])
        secs = float(sum(per_gpu[g] for g in rows))
        if secs > 0:
            start, length = true_runs(deep) if kind == "gpu_drops" else ([0], [n_bins])
            buckets.append(Bucket(kind, secs, names=[ids[g] for g in rows],
                                  windows=[(float(a * dt), float((a + n) * dt)) for a, n in zip(start, length,
                                                                                               strict=True)],
                                  detail=f"{len(rows)} GPU{'s' if len(rows) > 1 else ''} {what}"))
    # a steady level far below what a fed GPU reads
    if busy < STEADY_FED_PCT:
        secs = float(_charge(room, (100.0 - busy) / 100.0 * dt, working).sum())
        buckets.append(Bucket("steady_idle", secs, names=["all GPUs"] if g_count > 1 else [ids[0]],
                              windows=[(0.0, float(n_bins * dt))],
                              detail=f"the GPUs' busy level is {busy:.0f}%: idle {100 - busy:.0f}% of the time "
                                     "even at work"))
    del room
    buckets += _device_buckets(series, util, valid, dt, lo, n_bins)
    for b in buckets:
        b.share = b.seconds / total
    floor = max(jitter / total, MIN_FLOOR)
    t0 = series.t0 + pd.Timedelta(seconds=lo) if series.t0 is not None else None
    return Accounting("gpu", total, _merged([b for b in buckets if b.seconds > 0], dt), floor,
                      f"the jitter of GPUs that no bucket flags, below the busy level {busy:.0f}% or their peers "
                      f"({jitter / total:.1%} of GPU time; at least {MIN_FLOOR:.0%})",
                      warmup_s=warmup, span_s=float(n_bins * dt), units=g_count, t0=t0, interval_s=dt)


def _merged(buckets: list[Bucket], tol: float) -> list[Bucket]:
    """The buckets with touching windows (within `tol` s) merged into stretches, at most MAX_WINDOWS kept (the
    longest)."""
    for b in buckets:
        out: list[list[float]] = []
        for a, z in sorted(b.windows):
            if out and a <= out[-1][1] + tol:
                out[-1][1] = max(out[-1][1], z)
            else:
                out.append([a, z])
        out.sort(key=lambda w: w[0] - w[1])
        b.windows = sorted((float(a), float(z)) for a, z in out[:MAX_WINDOWS])
    return buckets


def _charge(room: np.ndarray, claim, where: np.ndarray) -> np.ndarray:
    """Charge `claim` (GPU-seconds per cell, broadcast to `room`'s G × bins) on the cells `where`, each at most what
    the cell has left in `room`, which is reduced in place: no cell is charged twice. The charge per cell."""
    got = np.where(where, np.minimum(claim, room), 0.0)
    room -= got
    return got


def _below_peers(util, med, valid, deficit, deep_bin, busy: float, gone: set) -> tuple[list, float]:
    """Per GPU, the bucket its deficit against its peers goes to (`idle_gpu`, `underused_gpu`, `gpu_drops` for its
    deep drops only, None: jitter), and the jitter (GPU-seconds) of the GPUs no bucket flags."""
    g_count = len(util)
    p95 = row_percentile(util, valid, 95)
    below = _significantly_below(util, med, valid)
    d_own = np.add.reduce(deficit, axis=1, where=deep_bin, initial=0.0)
    d_rest = np.add.reduce(deficit, axis=1, where=~deep_bin, initial=0.0)
    n_own = deep_bin.sum(axis=1)
    any_valid = valid.any(axis=1)
    kinds: list[str | None] = []
    jitter = 0.0
    for g in range(g_count):  # scalar bookkeeping only: the row sums above hold the work
        kind = None
        if g_count < 2 or g in gone or not any_valid[g]:
            pass
        elif p95[g] <= IDLE_PCT and busy > 2 * IDLE_PCT:
            kind = "idle_gpu"
        elif below[g]:
            kind = "underused_gpu"
        else:  # a drop of its own is lost time; the shallow rest is the GPU's jitter
            jitter += float(d_rest[g])
            if n_own[g] >= 2:
                kind = "gpu_drops"
            else:
                jitter += float(d_own[g])
        kinds.append(kind)
    return kinds, jitter


def _significantly_below(u: np.ndarray, med: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Per GPU (rows of `u`, G × bins): below its peers' median by >= 10 points on average, in >= 2/3 of the polls
    where it reports (and at least 3 of them)."""
    m = ok & np.isfinite(med)[None, :]
    n = m.sum(axis=1)
    diff = np.where(m, med[None, :] - u, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = diff.sum(axis=1) / n
        share = (m & (diff > 0)).sum(axis=1) / n
    return (n >= 3) & (mean >= 10.0) & (share >= 2 / 3)


def _device_buckets(series: GpuSeries, util: np.ndarray, valid: np.ndarray, dt: float, lo: float,
                    n_bins: int) -> list[Bucket]:
    """Busy-waiting (utilization high at low power) and slow clocks at work, against the same GPU's own work."""
    out = []
    taken = np.zeros_like(valid)  # polls already counted as a slow clock: a capped GPU draws little power too
    for col, kind in (("sm_clock_mhz", "slow_clock"), ("power_w", "busy_wait")):
        if col not in series.values or not np.isfinite(series.values[col]).any():
            continue
        x = series.grid_means(col, dt, lo, n_bins)  # float32: the percentiles below upcast what they compute
        busy = valid & (util >= SPIN_UTIL) & np.isfinite(x) & (x > 0)
        # what a GPU draws / clocks at work: its own 90th percentile while busy, or its peers' median of theirs
        # when that is higher (a GPU capped or spinning all along never shows its own working level)
        own = np.where(busy.sum(1) >= 5, row_percentile(x, busy, 90), np.nan)
        peers = float(np.nanmedian(own)) if np.isfinite(own).any() else np.nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = seen = np.fmax(own, peers)  # NaN only when both are
            lim = series.values.get("power_limit_w") if kind == "busy_wait" and len(series) > 1 else None
            if lim is not None and np.isfinite(lim).any():  # (per GPU, its samples' median limit: no grid)
                ref = np.fmax(ref, WORK_POWER_FLOOR * series.quantiles("power_limit_w", ("median",), lim > 0)[0])
        counted = busy.sum(1) >= 5
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = x / ref[:, None]
            if kind == "slow_clock":  # or the clock it held at work for a few polls (gpu_limits.sustained_peak)
                held = x / sustained_peak(x, busy)[:, None]
                ratio = np.where(busy & ~_at_power_limit(series, dt, lo, n_bins) & (held < ratio), held, ratio)
        ratio[~(ref > 0)] = 1.0
        low = busy & (ratio < (SPIN_POWER if kind == "busy_wait" else SLOW_CLOCK)) & ~taken & counted[:, None]
        taken |= low
        named = low.sum(1) >= 3
        # what the GPU did not do: the share of work missing from its busy polls (in place: one G × bins array)
        np.subtract(1.0, ratio, out=ratio)
        ratio *= util
        ratio /= 100.0
        missing = np.add.reduce(ratio, axis=1, where=low, initial=0.0) * dt
        secs = float(sum(missing[named].tolist(), 0.0))
        names = [series.ids[g] for g in np.flatnonzero(named)]
        steps_on = low[named].any(0)
        if secs > 0:
            start, length = true_runs(steps_on)
            order = np.argsort(-length)[:MAX_WINDOWS]
            floored = " (or a quarter of its power limit)" if (ref[named] > np.nan_to_num(seen[named])).any() else ""
            what = ("at >= 90% utilization but under half the power the same GPU draws at work" + floored +
                    " (a kernel spinning while it waits, not work)" if kind == "busy_wait" else
                    f"busy at under {SLOW_CLOCK:.0%} of the SM clock the same GPU reaches at work")
            out.append(Bucket(kind, secs, names=names,
                              windows=[(float(start[i] * dt), float((start[i] + length[i]) * dt)) for i in order],
                              detail=f"{len(names)} GPU{'s' if len(names) > 1 else ''} {what}"))
    return out


def _at_power_limit(series: GpuSeries, dt: float, lo: float, n_bins: int) -> np.ndarray:
    """G × bins: drawing within 5% of the enforced power limit (there a lower clock is the limit's trade)."""
    if not {"power_w", "power_limit_w"} <= set(series.values):
        return np.zeros((len(series), n_bins), dtype=bool)
    p, lim = (series.grid_means(c, dt, lo, n_bins).astype(np.float64) for c in ("power_w", "power_limit_w"))
    with np.errstate(invalid="ignore"):
        return np.isfinite(p) & np.isfinite(lim) & (p >= POWER_PINNED * lim)


# ---------------------------------------------------------------- wall time (steps)


def step_accounting(steps: pd.DataFrame, marked_steps=(), events: pd.DataFrame | None = None) -> Accounting | None:
    """Wall-time accounting of a step table, per rank (see the module docstring); None without step times.
    `marked_steps` as in `account`; `events`: the run's, for the durations they state."""
    st = sa.step_times(steps)
    st = st[np.isfinite(st["duration_s"].astype(np.float64)) & (st["duration_s"] >= 0)]
    if st.empty:
        return None
    t0 = st["time"].min() if st["time"].notna().all() else None
    steps = collective_waits(steps)
    st, steps, lag = straggler_waits(st, steps)  # the ranks' waits for a straggler their own timers leave out
    per_rank = [_rank_account(g.sort_values("step"), steps, rank, t0, marked_steps, sp.stated_waits(events, t0))
                for rank, g in st.groupby("rank", sort=True) if len(g) >= 1]
    per_rank = [r for r in per_rank if r is not None]
    if not per_rank:
        return None
    total = sum(r["wall_s"] for r in per_rank)
    merged: dict[str, Bucket] = {}
    by_name: dict[str, dict[str, float]] = {}
    for r in per_rank:
        for b in r["buckets"]:
            m = merged.setdefault(b.kind, Bucket(b.kind, 0.0, detail=b.detail))
            m.seconds += b.seconds
            for n in b.names:
                by_name.setdefault(b.kind, {})[n] = by_name.get(b.kind, {}).get(n, 0.0) + b.seconds
            m.windows += b.windows
            m.steps = sorted(set(m.steps) | set(b.steps))
    if lag and lag["seconds"] > 0:  # the straggler's own time beyond its peers' on the same work
        merged["slow_rank"] = Bucket("slow_rank", lag["seconds"], steps=lag["steps"],
                                     detail="the late rank's own time beyond its peers' for the same work")
        by_name["slow_rank"] = {f"rank {lag['rank']}": lag["seconds"]}
    buckets = [b for b in merged.values() if b.seconds > 0]
    many, ranks = len(per_rank) > 1, sorted(int(r) for r in st["rank"].unique())
    for b in buckets:
        b.share = b.seconds / total if total > 0 else 0.0
        # the ranks that carry the bucket: each at least a tenth of it, largest first (a rank whose loader waits
        # 0.17 s is named, its peers at 2 ms are not)
        parts = sorted(by_name.get(b.kind, {}).items(), key=lambda kv: -kv[1])
        b.names = [n for n, sec in parts if sec >= 0.1 * b.seconds]
        if b.kind in tuple(f"phase:{p}" for p in COLLECTIVE_PHASES) and many and (late := late_ranks(by_name.get(b.kind, {}), ranks)):
            b.names, b.detail = late, "the other ranks waiting in the collective for the late rank"
    jitter = sum(r["jitter_s"] for r in per_rank)
    floor = max(jitter / total if total > 0 else 0.0, MIN_FLOOR)
    tick = float(np.median([r["step_s"] for r in per_rank]))
    return Accounting("wall", float(total), _merged(buckets, 0.5 * tick), floor,
                      f"the jitter of unflagged steps above the steady step time ({jitter / total:.1%} of wall "
                      f"time; at least {MIN_FLOOR:.0%})" if total > 0 else "no time",
                      warmup_s=float(sum(r["warmup_s"] for r in per_rank)),
                      span_s=float(max(r["wall_s"] for r in per_rank)), units=len(per_rank) if many else 1,
                      t0=t0, interval_s=tick, step_gap=max(1, int(np.median([r["gap"] for r in per_rank]))))


def _rank_account(g: pd.DataFrame, steps: pd.DataFrame, rank, t0: pd.Timestamp | None, marked=(),
                  waits: np.ndarray | None = None) -> dict | None:
    """One rank's buckets, warm-up, jitter and steady step (wall-seconds); windows in seconds since `t0`."""
    d = g["duration_s"].to_numpy(dtype=np.float64)
    stepno = g["step"].to_numpy(dtype=np.int64)
    name = f"rank {rank}" if int(rank) >= 0 else ""  # a log without ranks is one process: nothing to name
    t = g["time"]
    times = (t - t0).dt.total_seconds().to_numpy() if t0 is not None and len(t) > 1 else None
    per_row, k_typ = sp.steps_per_line(stepno)
    warm = sp.measured_warmup(sa.warmup_steps(d, stepno, marked, _input_wait(steps, rank, stepno)), times, d, per_row,
                              waits)
    real, bstep = d[warm:], stepno[warm:]
    if len(real) == 0 or sp.below_resolution(real):
        return None
    # a step's what-if is the steady pace times its own work's factor (1 unless the step time follows the stated
    # work): the analysis below runs on work-normalised times, and `w` turns them back into seconds
    work = g["work"].to_numpy(dtype=np.float64) if "work" in g else np.full(len(d), np.nan)
    scale, _ = sa.work_scale(real, work[warm:])
    body, w = real / scale, per_row[warm:] * scale
    slow = sa.slow_steps(body) if len(body) >= 5 else np.zeros(len(body), dtype=bool)
    # the local pace (rolling median, as the slow-step test uses) and the run's best sustained pace (its 10th
    # percentile): a slow step's excess is over the local pace; the local pace's excess over the best one is a slow
    # stretch (a level shift, a creep, a recurring slow phase) once it exceeds CREEP_MIN, jitter below that
    # the local pace leaves the slow steps out: where they are near half the steps, a rolling median over them sits
    # between the two levels, and their fast neighbours would look like a slow stretch; within a printed tick, rounding
    tick = np.maximum(sp.duration_tick(real), sp.stamp_tick(d, per_row, times))[warm:] / scale
    slow, roll, best, stretch = sp.resolved_pace(body, bstep, slow, tick)
    # a stretch's loss on a step is the local pace's excess over the best one, but never more than the step itself
    # lost (a fast step inside a slow stretch lost nothing)
    drift = np.minimum(np.clip(roll - best, 0.0, None), np.clip(body - best, 0.0, None))
    start = (lambda i: float(times[warm + i])) if times is not None else \
        (lambda i: float(d[:warm + i].sum()))
    buckets: list[Bucket] = []
    excess = np.clip(body - roll, 0.0, None)
    lattice = sp.slow_lattice(body, bstep, slow)
    on = slow & lattice
    for kind, mask, detail in (("recurring_slow", on, sp.every_phrase(body, bstep, on, best)),
                               ("stalls", slow & ~lattice, sp.stall_phrase(body, slow & ~lattice, best))):
        if mask.any():
            idx = np.flatnonzero(mask)
            buckets.append(Bucket(kind, float(((excess[mask] + drift[mask]) * w[mask]).sum()),
                                  names=[name] if name else [],
                                  windows=[(start(i), start(i) + float(real[i])) for i in idx],
                                  steps=[int(bstep[i]) for i in idx], detail=detail))
    if stretch.any():
        lo, n = true_runs(stretch)
        buckets.append(Bucket("slow_stretches", float((drift * w)[stretch].sum()), names=[name] if name else [],
                              windows=[(start(int(a)), start(int(a + k - 1)) + float(real[a + k - 1]))
                                       for a, k in zip(lo, n, strict=True)],
                              steps=[int(bstep[i]) for i in np.flatnonzero(stretch)],
                              detail=sp.stretch_phrase(body, bstep, stretch, best, lo, n)))
    wall = float((d * per_row).sum())
    ordinary = ~slow & ~stretch
    if times is not None:
        # the timed steps plus, per gap between lines, what the steps at either end leave of it (a line's time is
        # its step's start or end; the most the outside-timer bucket claims there): the span, or more where the
        # lines' steps overrun their gaps
        untimed = float(np.clip(np.diff(times) - np.maximum(d[:-1], d[1:]) * per_row[1:], 0.0, None).sum())
        wall = max(float(times[-1] - times[0] + d[-1]), wall + untimed)
    rest, gaps_out = sp.untimed_gaps(times, d, stepno, warm) if times is not None else \
        (np.zeros(max(len(d) - 1, 0)),) * 2
    if not rest.any() and (apart := sp.waits_beside_timer(steps, rank, stepno, d, warm)).any():
        rest, gaps_out = apart, apart.copy()  # no clock shows the gaps: the waits timed apart fill them
        wall = max(wall, float((d * per_row).sum() + apart.sum()))
    on = bstep[ordinary].tolist()
    phases, gaps_out = _phase_buckets(steps, rank, dict(zip(on, per_row[warm:][ordinary].tolist(), strict=True)), name, dict(
        zip(on, (real * per_row[warm:])[ordinary].tolist(), strict=True)), stepno, rest, gaps_out)
    buckets += _outside_timer(times, stepno, gaps_out, name) + phases
    # a step's excess that its own waiting phases measure is theirs (charged above), not jitter
    own = np.clip(excess * w - sp.row_waits(steps, rank, bstep) * per_row[warm:], 0.0, None)  # waits: seconds
    jitter = float(own[ordinary].sum() + (drift * w)[~stretch & ~slow].sum())
    return {"wall_s": wall, "buckets": buckets, "jitter_s": jitter, "warmup_s": float((d * per_row)[:warm].sum()),
            "step_s": best, "gap": k_typ}


def _outside_timer(times, step: np.ndarray, gaps_out: np.ndarray, name: str) -> list[Bucket]:
    """The gaps between lines longer than the steps they hold (sp.untimed_gaps), less the waits the log timed there
    (which _phase_buckets charges to their phase)."""
    flagged = gaps_out > 1e-9
    if times is None or not flagged.any():
        return []
    idx = np.flatnonzero(flagged)
    return [Bucket("outside_timer", float(gaps_out[flagged].sum()), names=[name] if name else [],
                   windows=[(float(times[i]), float(times[i + 1])) for i in idx],
                   steps=[int(step[i]) for i in idx],
                   detail=f"{len(idx)} gap{'s' if len(idx) > 1 else ''} between steps longer than "
                          "the step timer measured (time spent outside the timed step)")]


def _input_wait(steps: pd.DataFrame, rank, stepno: np.ndarray) -> np.ndarray | None:
    """Seconds each of `stepno` spent in the phases that wait for input (the catalog's data_starvation phases) on
    `rank`, 0 where none is logged; None when the table has no such phase."""
    wait = steps[steps["phase"].astype(str).isin(cause(ids.DATA_STARVATION).phases) & (steps["rank"] == rank)]
    if wait.empty:
        return None
    per = wait.groupby("step")["duration_s"].sum()
    return per.reindex(stepno).fillna(0.0).to_numpy(dtype=np.float64)


def _phase_buckets(steps: pd.DataFrame, rank, ordinary: dict[int, float], name: str, room: dict[int, float],
                   stepno: np.ndarray, rest: np.ndarray, gaps_out: np.ndarray) -> tuple[list[Bucket], np.ndarray]:
    """Waiting phases of the ordinary steps (each weighted by the steps its line stands for), and the imbalance
    between named work stages; returns them and the outside-timer gaps (`gaps_out`) less the waits charged there.
    A step's waits are drawn, in the order the phases were logged, first from the untimed rest of the gap beside its
    line (`rest`, per gap between lines: a wait timed outside the step, sp.untimed_beside), then from the step's own
    time (`room`, wall-seconds per step); the imbalance gets at most what the waits left of the steps' time. No
    second is charged twice, to a phase and to the outside-timer bucket."""
    part = steps[(steps["rank"] == rank) & (steps["phase"] != "step") & steps["step"].isin(ordinary)]
    if part.empty:
        return [], gaps_out
    weighted = part["duration_s"] * part["step"].map(ordinary).astype(np.float64)
    phase_of = part["phase"].astype(str)
    secs = weighted.groupby(phase_of).sum()
    wait = phase_of.isin(sa.WAIT_PHASES) & (weighted > 0)
    wt, at = weighted[wait], part.loc[wait, "step"]
    per_line = wt.groupby(at).sum().reindex(stepno, fill_value=0.0).to_numpy(dtype=np.float64)
    beside, shift = sp.untimed_beside(rest, per_line)
    room_out = at.map(dict(zip(stepno.tolist(), beside.tolist(), strict=True))).astype(np.float64)
    cum = wt.groupby(at).cumsum()
    outside = np.minimum(cum, room_out) - np.minimum(cum - wt, room_out)  # the part of each wait in the gap
    inside = wt - outside
    cum = inside.groupby(at).cumsum()
    cap = at.map(room).astype(np.float64)
    got = np.minimum(cum, cap) - np.minimum(cum - inside, cap)  # the part of each wait under its step's time
    charged = (got + outside).groupby(phase_of[wait]).sum()
    left = max(sum(room.values()) - float(got.sum()), 0.0)
    used = outside.groupby(at).sum()
    used = used[used > 0]
    if len(used):
        gaps_out = gaps_out.copy()
        np.subtract.at(gaps_out, np.searchsorted(stepno, used.index.to_numpy()) + shift, used.to_numpy())
        gaps_out = np.clip(gaps_out, 0.0, None)
    out = []
    for phase, s in charged.items():
        if s > 0:
            what = ("waiting in the collective for the last rank (beyond the fastest rank's transfer)"
                    if phase in COLLECTIVE_PHASES else f"time in the {phase} phase of ordinary steps (waiting, not work)")
            out.append(Bucket(f"phase:{phase}", float(s), names=[name] if name else [], steps=sorted(ordinary)[:16],
                              detail=what))
    stages = secs[[p for p in secs.index if p not in sa.WAIT_PHASES and p not in sa.COMPUTE_PHASES
                   and p != "other"]]
    stages = stages[stages > 0]
    if len(stages) >= 2:
        top = str(stages.idxmax())
        # a pipeline of k stages runs at the slowest one's pace: the others idle 1 - mean/max of the time
        lost = min(float(stages.sum() * (1.0 - stages.mean() / stages.max())), left)
        share = float(stages.max() / secs.sum()) if secs.sum() > 0 else 0.0
        out.append(Bucket("stage_imbalance", lost, names=[name] if name else [], steps=sorted(ordinary)[:16],
                          detail=f"the {top} stage takes {share:.0%} of every step by its own timers: in a "
                                 f"pipeline of the {len(stages)} stages the others idle while it runs"))
    return out, gaps_out
