"""Step and phase analyses on the steps table (schema.STEP_COLUMNS).

A device's "busy" time is the time spent in compute phases. Without a GPU counter this busy fraction over time is
the utilization-like signal the labs plot and `diagnose` analyses (labelled as derived from step phases).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.analysis.stats import (
    binom_sf,
    effective_n,
    few_runs_p,
    hypergeom_sf,
    kolmogorov_sf,
    lag1,
    regularity_p,
)
from playbook.knowledge import ids as cause_ids
from playbook.knowledge.causes import cause

COMPUTE_PHASES: tuple[str, ...] = ("fwd", "bwd", "optimizer", "compute")
# Phases that wait on something else (input, transfers, peers, storage, a queue); every other named phase is work.
WAIT_PHASES: tuple[str, ...] = ("data", "h2d", "d2h", "collective", "checkpoint", "eval", "log", "blocked", "wait",
                                "waiting", "idle", "queue", "queue_wait", "sync", "barrier",
                                # work handed between GPU roles: weights synced, memory swapped (handoff.py); a
                                # batch waiting on its slowest sample (sample_tail.py)
                                "handoff", "tail")
QUEUE_PHASES: tuple[str, ...] = ("blocked", "wait", "waiting", "idle", "queue", "queue_wait")
COLLECTIVE_PHASES: tuple[str, ...] = ("collective", "barrier")  # waits on the other ranks


def busy_phases_of(steps: pd.DataFrame) -> tuple[str, ...]:
    """The work phases present in `steps`: the standard compute phases, plus any other phase that is neither a
    whole step nor a known waiting phase (e.g. a pipeline lab's "produce" / "consume")."""
    present = set(steps["phase"].astype(str).unique()) - {"step", "other"}
    extra = sorted(p for p in present if p not in WAIT_PHASES and p not in COMPUTE_PHASES)
    return tuple(COMPUTE_PHASES) + tuple(extra)


def phase_breakdown(steps: pd.DataFrame) -> pd.DataFrame:
    """Seconds and share of step time per (rank, phase); the remainder of each step is phase "other".

    Returns columns rank, phase, seconds, share (0-1 of that rank's summed step time).
    """
    whole = steps[steps["phase"] == "step"]
    parts = steps[steps["phase"] != "step"]
    by = parts.groupby(["rank", "phase"], sort=False)["duration_s"].sum().rename("seconds").reset_index()
    if len(whole):
        total = whole.groupby("rank")["duration_s"].sum()
        other = (total - parts.groupby("rank")["duration_s"].sum().reindex(total.index, fill_value=0.0))
        other = other.clip(lower=0.0).rename("seconds").reset_index().assign(phase="other")
        by = pd.concat([by, other[["rank", "phase", "seconds"]]], ignore_index=True)
    else:
        total = by.groupby("rank")["seconds"].sum()
    by["share"] = by["seconds"] / by["rank"].map(total).where(lambda s: s > 0)
    return by.sort_values(["rank", "seconds"], ascending=[True, False]).reset_index(drop=True)


def busy_timeline(steps: pd.DataFrame, bin_s: float | None = None,
                  busy_phases: tuple[str, ...] = COMPUTE_PHASES) -> pd.DataFrame:
    """Fraction of each time bin that a rank spent in `busy_phases` (0-1), from phases with start times.

    `bin_s` defaults to about four median steps. Returns columns time (UTC bin start), host, rank, busy_frac.
    Rows with no start time are ignored. Overlapping intervals add up (then clip at 1).
    """
    ph = steps[steps["phase"].isin(busy_phases) & steps["time"].notna()]
    if ph.empty:
        return pd.DataFrame(columns=["time", "host", "rank", "busy_frac"])
    if bin_s is None:
        med = steps.loc[steps["phase"] == "step", "duration_s"].median()
        bin_s = float(4 * med) if np.isfinite(med) and med > 0 else 1.0
    t0 = ph["time"].min()
    start = (ph["time"] - t0).dt.total_seconds().to_numpy()
    end = start + ph["duration_s"].fillna(0).clip(lower=0).to_numpy()
    rows = []
    for (host, rank), idx in ph.groupby(["host", "rank"], sort=True).indices.items():
        a, b = np.sort(start[idx]), np.sort(end[idx])
        nbins = int(np.ceil(b.max() / bin_s)) or 1
        edges = np.arange(nbins + 1) * bin_s
        # busy time before t: sum over intervals of clip(t - a, 0, b - a) = Σ_{a<t}(t - a) - Σ_{b<t}(t - b)
        ca, cb = np.r_[0.0, np.cumsum(a)], np.r_[0.0, np.cumsum(b)]
        na, nb = np.searchsorted(a, edges), np.searchsorted(b, edges)
        covered = (na * edges - ca[na]) - (nb * edges - cb[nb])
        busy = np.diff(covered)
        rows.append(pd.DataFrame({
            "time": t0 + pd.to_timedelta(edges[:-1], unit="s"),
            "host": host, "rank": rank, "busy_frac": np.clip(busy / bin_s, 0.0, 1.0),
        }))
    return pd.concat(rows, ignore_index=True)


# ---------------------------------------------------------------------------------------------------------------
# Step-time patterns for diagnose: periodic slow steps, GC spikes, creep, recompilation, per-rank stragglers.
#
# Slow steps are robust outliers of log step time against a rolling median (modified z > 3.5, Iglewicz-Hoaglin)
# that are also ≥ SLOW_FACTOR times that median. "Every N steps" is tested against slow steps placed at random
# among the logged steps: the best residue class r modulo N holds Binomial(k, share of logged steps ≡ r) of the k
# slow steps under that null (Bonferroni over the residues present and the candidate N). GC spikes: slow steps off that lattice vs steps holding a GC event
# (hypergeometric test). Creep: Spearman correlation of step time with step number, its n deflated by the lag-1
# autocorrelation of the residuals, with a Theil-Sen slope for the size.

ALPHA = 0.01
SLOW_Z = 3.5
SLOW_FACTOR = 1.2
CREEP_MIN = 0.05  # a trend must add ≥ 5% to the step time over the run to matter
# steps after warm-up a search for slow steps every N steps needs: 3 slow ones on a lattice of N ≥ 2 within a third
# of the run (periodic_slow_steps); fewer, and "no slow steps recur" is untested, not found
PERIODIC_MIN_STEPS = 10
WARMUP_MIN_ROWS = 8  # rows warmup_steps needs to tell a warm-up (at most a quarter of them) from the pace
# a shorter log that holds the run's first step (numbered 0 or 1) still tells its start-up: at most START_STEPS
# leading steps, falling toward the pace, with START_PACE_ROWS rows after them. A jitted step compiles on its first
# call and may compile once more on the second, whose inputs are the first's outputs (weak types become strong,
# shardings settle: jax-ml/jax#4274 "will compile f twice ... a gotcha for training loops")
START_STEPS = 2
START_PACE_ROWS = 3
GC_KINDS = cause(cause_ids.GC_PAUSE).event_kinds  # event kinds of a garbage-collection pause
STALL_EVENT_KINDS = cause(cause_ids.PERIODIC_STALL).event_kinds  # scheduled loop stalls


def step_times(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per (rank, step): host, time (start, NaT if unknown), duration_s, work (the step's stated tokens,
    input size, sequence length or batch size: schema's `work`; NaN unknown); whole-step rows (phase "step") when
    present, else the sum of the phases."""
    if steps.empty:
        return pd.DataFrame(columns=["rank", "step", "host", "time", "duration_s", "work"])
    # a restarted run logs some step numbers twice: the later record supersedes the earlier one
    steps = steps.drop_duplicates(["rank", "step", "phase"], keep="last")
    if "work" not in steps:
        steps = steps.assign(work=np.nan)
    whole = steps[steps["phase"] == "step"]
    if whole.empty:
        g = steps.groupby(["rank", "step"], sort=True)
        out = pd.DataFrame({"host": g["host"].first(), "time": g["time"].min(), "duration_s": g["duration_s"].sum(),
                            "work": g["work"].max()})
        return out.reset_index()
    out = whole.groupby(["rank", "step"], sort=True).agg(host=("host", "first"), time=("time", "min"),
                                                          duration_s=("duration_s", "sum"), work=("work", "max"))
    return out.reset_index()


WORK_RHO, WORK_P, WORK_MIN_STEPS = 0.5, 1e-3, 20


def work_scale(durations: np.ndarray, work: np.ndarray) -> tuple[np.ndarray, float | None]:
    """How much longer each step is because of its own stated work (multi-scale input sizes, variable-length
    batches): per step the factor (work / median work) ** b, and b; ones and None when the step time does not
    follow the work. Time that follows the step's work is work, not loss: the what-if of a step is the steady pace
    scaled by this factor. The test: at least WORK_MIN_STEPS steps with the work varying by ≥ 10%, Spearman's rho
    of step time against work ≥ WORK_RHO (the work orders the step times, rather than a few of them) at p <
    WORK_P; b is the Theil-Sen slope of log time on log work (robust to the stalls the accounting looks for: a
    stall is an outlier of the fit, not its slope), clipped to [0, 3] (more work never makes a step faster; no
    step's cost grows faster than cubically in its size)."""
    d, w = np.asarray(durations, dtype=np.float64), np.asarray(work, dtype=np.float64)
    ones = np.ones(len(d))
    ok = np.isfinite(d) & np.isfinite(w) & (d > 0) & (w > 0)
    if ok.sum() < WORK_MIN_STEPS or w[ok].max() < 1.1 * w[ok].min():
        return ones, None
    from scipy.stats import spearmanr, theilslopes

    x, y = np.log(w[ok]), np.log(d[ok])
    rho, p = spearmanr(x, y)
    if not (np.isfinite(rho) and rho >= WORK_RHO and p < WORK_P):
        return ones, None
    b = float(np.clip(theilslopes(y, x).slope, 0.0, 3.0))
    scale = ones.copy()
    scale[ok] = np.exp(b * (x - np.median(x)))
    return scale, b


def fleet_steps(steps: pd.DataFrame) -> pd.DataFrame:
    """Per step across ranks: time (earliest start), duration_s and work (medians over ranks), ranks."""
    st = step_times(steps)
    if st.empty:
        return pd.DataFrame(columns=["step", "time", "duration_s", "work", "ranks"])
    g = st.groupby("step", sort=True)
    return pd.DataFrame({"time": g["time"].min(), "duration_s": g["duration_s"].median(),
                         "work": g["work"].median(), "ranks": g["rank"].nunique()}).reset_index()


ROLL_WINDOW = 51  # steps in the rolling median of the local pace


def _rolling_baseline(d: np.ndarray, window: int = ROLL_WINDOW) -> np.ndarray:
    """The rolling median of `d` (geometric), centred over `window` steps; a log no longer than the window has its own
    median throughout (pandas would truncate the window at both ends: in a 5-row log the second row's baseline was the
    mean of a 12 s compile step and a 1.5 s checkpoint step's neighbours)."""
    if len(d) <= window:
        return np.full(len(d), float(np.exp(np.median(np.log(np.clip(d, 1e-9, None))))) if len(d) else 1.0)
    s = pd.Series(np.log(np.clip(d, 1e-9, None)))
    return np.exp(s.rolling(min(window, max(len(d), 1)), center=True, min_periods=1).median().to_numpy())


def slow_steps(durations: np.ndarray) -> np.ndarray:
    """Boolean mask of robustly slow steps (see the section comment): outliers against the rolling median, and the
    slow mode of a step time that alternates between two levels (`interleaved_slow_mode`)."""
    d = np.asarray(durations, dtype=np.float64)
    if len(d) < 5:
        return np.zeros(len(d), dtype=bool)
    base = _rolling_baseline(d)
    r = np.log(np.clip(d, 1e-9, None)) - np.log(base)
    mad = float(np.median(np.abs(r - np.median(r))))
    scale = max(1.4826 * mad, 1e-3)
    return (((r - np.median(r)) / scale > SLOW_Z) & (d >= SLOW_FACTOR * base)) | interleaved_slow_mode(d)


SPLIT_D = 4.5  # two levels' separation in pooled sds of the 1-D two-means split: past any one level's own split


def interleaved_slow_mode(durations: np.ndarray) -> np.ndarray:
    """The steps of the slower of two step-time levels that interleave (every other step slow, an eval or an
    optimizer step every few): a rolling median cannot flag them once they are near half the steps, since it then
    sits between the levels or on the slow one.

    Log step times are split in two at the cut that minimises the within-group sum of squares (1-D two-means). The
    split is a slow mode when the groups are cleanly apart (Ashman's D of the two groups > SPLIT_D: a split's halves
    are truncated, so one unimodal level split at its best cut already reads D ~2.7 for normal jitter, ~3.5 for
    uniform, up to ~4.4 over 60 steps, where two normal components are bimodal from D > 2), the slow level is ≥ SLOW_FACTOR × the fast one, the fast level holds ≥ 10% of
    the steps (the accounting's best pace is the 10th percentile) and the slow steps are not clustered in time (a
    Wald-Wolfowitz runs test, one-sided at ALPHA: clustered slow steps are a level shift or a slow stretch, which
    other tests name). All-False otherwise."""
    d = np.asarray(durations, dtype=np.float64)
    n = len(d)
    out = np.zeros(n, dtype=bool)
    ok = np.isfinite(d) & (d > 0)
    if ok.sum() < 5:
        return out
    x = np.log(d[ok])
    order = np.argsort(x, kind="stable")
    xs = x[order]
    m = len(xs)
    c1, c2 = np.cumsum(xs), np.cumsum(xs * xs)
    k = np.arange(2, m - 1)  # the fast group is xs[:k]: at least 2 in each group
    if not len(k):
        return out
    sse_lo = c2[k - 1] - c1[k - 1] ** 2 / k
    hi_sum, hi_sq = c1[-1] - c1[k - 1], c2[-1] - c2[k - 1]
    sse_hi = hi_sq - hi_sum ** 2 / (m - k)
    cut = int(k[np.argmin(sse_lo + sse_hi)])
    lo, hi = xs[:cut], xs[cut:]
    if cut < max(2, 0.1 * m) or hi.mean() - lo.mean() < np.log(SLOW_FACTOR):
        return out
    spread = max(np.sqrt(lo.var() + hi.var()), 1e-3)  # a 0.1% floor: identical printed times have no variance
    if np.sqrt(2.0) * (hi.mean() - lo.mean()) / spread <= SPLIT_D:
        return out
    slow = np.zeros(m, dtype=bool)
    slow[order[cut:]] = True
    if few_runs_p(slow) < ALPHA:
        return out  # fewer runs than chance: the slow steps come in blocks
    out[np.flatnonzero(ok)] = slow
    return out


def warmup_steps(durations: np.ndarray, steps: np.ndarray | None = None, marked=(),
                 waiting: np.ndarray | None = None, epochs: bool = False) -> int:
    """How many leading steps are warm-up (compilation, autotuning, allocator growth): the prefix before the first
    step within SLOW_FACTOR of the median of the rest, at most a quarter of the steps; in a log shorter than
    WARMUP_MIN_ROWS, at most START_STEPS, each costing no more than the one before (its excess over the pace times the
    steps it stands for: a start-up falls toward the pace; a window of 99 steps after step 1 is no second compile), only
    when it holds the run's first step and no step after them is slow (none in other short logs, nor in a short log
    whose rows are `epochs`: an epoch is hundreds of steps, its slowness no compile of one). Warm-up is a one-time, silent
    cost: when an event that measures a cause (`marked`: step numbers, e.g. a recompile or a checkpoint line) is
    numbered inside that prefix after its first step (an event takes the number of the step line before it, or its
    own), the slow steps after the first are that event's cost (a compile cache churning: torch's "hit
    config.cache_size_limit (8)" closes 8 compiles), not warm-up: only the first step stays warm-up. An event at the
    first step itself (nanoGPT's evaluation at step 0) leaves the warm-up alone — unless that first row is not the run's
    first (its number past one row's spacing: a log cut from mid-run), where the event is the slow row's cost. Likewise when the step timer's own
    input phase (`waiting`: seconds per step spent waiting for data) holds at least half of the prefix's excess:
    compiling and autotuning run as work, so steps slow because they wait for input (a first epoch read from a slow
    disk before the page cache holds it) are starvation, not warm-up — all of them when later steps wait as long."""
    d = np.asarray(durations, dtype=np.float64)
    short = len(d) < WARMUP_MIN_ROWS
    if not short:
        limit = len(d) // 4
    elif not epochs and steps is not None and len(d) >= START_STEPS + START_PACE_ROWS and 0 <= int(steps[0]) <= 1:
        limit = START_STEPS  # a short log from the run's start: its first steps' compilation, if they fall
    else:
        return 0
    ref = float(np.median(d[limit:]))
    cost = (d - ref) * (np.clip(np.r_[1, np.diff(np.asarray(steps, dtype=np.float64))], 1, None) if short else 1)
    k = 0
    while k < limit and d[k] >= SLOW_FACTOR * ref and not (short and k and cost[k] > cost[k - 1]):
        k += 1
    if short and (d[k:] >= SLOW_FACTOR * ref).any():
        return 0  # slow again after its start: the start may be the same stall (as a GPU's start-up, gpu_time.py)
    if k and waiting is not None:
        wait = np.nan_to_num(np.asarray(waiting, dtype=np.float64))
        if wait[:k].sum() >= 0.5 * np.clip(d[:k] - ref, 0.0, None).sum():
            if len(wait) > k and wait[k:].max() >= 0.5 * wait[:k].max():
                return 0  # the same input wait recurs later: starved from the first step on, no start-up
            if k > 1:
                return 1
    if k and steps is not None and len(marked):
        st = np.asarray(steps, dtype=np.int64)
        m = np.asarray(sorted(marked), dtype=np.int64)
        if k > 1 and ((m > st[0]) & (m <= st[k - 1])).any():
            return 1
        if st[0] > st[1] - st[0] >= 1 and (m == st[0]).any():
            return 0  # the first row is not the run's first (step 249, a step apart: an excerpt from mid-run) and an
            # event there measures a cause (traiNNer#72's validation inside epoch 249): its cost, not a warm-up
    return k


def periodic_slow_steps(fleet: pd.DataFrame, events: pd.DataFrame | None = None,
                        steps: pd.DataFrame | None = None) -> dict | None:
    """Slow steps recurring every N steps: N, the first one, the period in seconds, hits and misses, p-value,
    and the events (checkpoint, eval, ...) logged at the same steps. None when there are < 3 slow steps.
    Warm-up steps at the start are left out. `benign` marks a cadence tied to the optimizer step (gradient
    accumulation): an optimizer phase logged only on the slow steps, or an exact short period (≤ ACCUM_MAX_N
    steps, every lattice step slow) with a constant slow/normal ratio and no stall event there."""
    if len(fleet) < PERIODIC_MIN_STEPS:
        return None
    warm = warmup_steps(fleet["duration_s"].to_numpy(dtype=np.float64))
    fleet = fleet.iloc[warm:]
    if len(fleet) < PERIODIC_MIN_STEPS:
        return None
    d = fleet["duration_s"].to_numpy(dtype=np.float64)
    step = fleet["step"].to_numpy(dtype=np.int64)
    slow = slow_steps(d)
    idx = step[slow]
    if len(idx) < 3:
        return None
    diffs = np.diff(idx)
    vals, counts = np.unique(diffs[diffs > 0], return_counts=True)
    cands = set(vals[np.argsort(-counts)][:5].tolist())
    if len(cands) > 1:
        top = int(vals[np.argmax(counts)])
        cands |= {int(np.gcd(top, int(v))) for v in vals[np.argsort(-counts)][:5]}
    cands = {c for c in cands if 2 <= c <= (step.max() - step.min() + 1) // 3}
    best = None
    for n_every in sorted(cands):
        res = idx % n_every
        r_vals, r_counts = np.unique(res, return_counts=True)
        r = int(r_vals[np.argmax(r_counts)])
        hits = int(r_counts.max())
        # null: slow steps fall on logged steps at random; a residue's chance is its share of the logged steps
        # (not 1/N: logs every k steps only ever show residues that are multiples of k)
        logged = np.unique(step % n_every, return_counts=True)
        share = float(logged[1][logged[0] == r].sum() / len(step))
        p = min(1.0, len(logged[0]) * len(cands) * binom_sf(hits, len(idx), share))
        if best is None or p < best["p_value"]:
            lattice = step[(step % n_every) == r]
            best = {"every_n_steps": int(n_every), "residue": r, "hits": hits, "lattice_steps": int(len(lattice)),
                    "slow_steps": int(len(idx)), "p_value": p}
    if best is None or best["p_value"] >= ALPHA:  # no step lattice: the stalls may keep a wall-clock cycle
        best = _clock_cycle(fleet, d, step, slow) or best
    if best is None or best["hits"] < 3:
        return None
    n_every, r = best["every_n_steps"], best["residue"]
    on = slow.copy() if best.get("clock") else slow & ((step % n_every) == r)  # a clock cycle: every slow step
    best["first_step"] = int(step[on][0])
    best["hit_rate"] = best["hits"] / max(best["lattice_steps"], 1)
    best["median_step_s"] = float(np.median(d[~slow])) if (~slow).any() else float(np.median(d))
    best["median_slow_s"] = float(np.median(d[on]))
    best["extra_s"] = best["median_slow_s"] - best["median_step_s"]
    times = fleet["time"]
    if times.notna().all():
        t = (times - times.iloc[0]).dt.total_seconds().to_numpy()
        best["period_s"] = float(np.median(np.diff(t[on]))) if on.sum() >= 2 else float("nan")
    else:
        best["period_s"] = float(d.sum() / len(d) * n_every)
    best["lost_fraction"] = float((d[on] - best["median_step_s"]).clip(min=0).sum() / d.sum())
    best["periodic"] = bool(best["p_value"] < ALPHA)
    best["events"] = _events_at(events, step[on])
    best["slow_step_numbers"] = [int(x) for x in step[on][:8]]
    # a collection triggered by the same allocations every step recurs at a fixed step period too: when GC pauses
    # sit on most lattice steps (and outnumber any checkpoint/eval/log event there), the lattice is the GC's
    gc_hits = sum(n for k, n in best["events"].items() if k.lower() in GC_KINDS)
    other_hits = max([n for k, n in best["events"].items() if k.lower() in STALL_EVENT_KINDS] or [0])
    best["gc_lattice"] = bool(2 * gc_hits >= best["hits"] and gc_hits > other_hits)
    best["warmup_steps"] = warm
    best["benign"] = None
    if not other_hits and not best["gc_lattice"]:
        optim = _optimizer_only_on(steps, step[on], step[~on])
        ratio = d[on] / best["median_step_s"] if best["median_step_s"] > 0 else np.array([np.nan])
        cv = float(np.std(ratio) / np.mean(ratio)) if np.all(np.isfinite(ratio)) and np.mean(ratio) > 0 else np.inf
        if optim:
            best["benign"] = ("an optimizer phase is logged on the slow steps only: the optimizer step of gradient "
                              f"accumulation over {n_every} micro-batches, not a stall")
        elif n_every <= ACCUM_MAX_N and best["hit_rate"] >= 0.95 and cv <= ACCUM_CV:
            # a constant cadence fits gradient accumulation, but a checkpoint or eval every N steps is as regular:
            # without an optimizer phase (or another marker) in the inputs it is a possibility, not a verdict
            best["cadence"] = (f"every {n_every}th step, without exception, is {np.mean(ratio):.2f}× the others "
                               f"(ratio varies {cv:.1%}): gradient accumulation over {n_every} micro-batches "
                               "would look like this — log the optimizer step to tell it from a stall")
    return best


# A stall interrupts work: on a cycle where the slow steps take most of the time the loop mostly waits (input arriving
# in bursts), as evidence/from_telemetry.MOSTLY_LOW_DUTY reads a GPU low most of each cycle
MINORITY_SLOW = 0.5


def _clock_cycle(fleet: pd.DataFrame, d: np.ndarray, step: np.ndarray, slow: np.ndarray) -> dict | None:
    """The slow steps as a cycle of wall time rather than of steps (a logger flushing every few seconds, a host job on
    a timer: wandb#8666): episodes of consecutive slow lines whose starts are more regular than stalls at random
    times (stats.regularity_p < ALPHA). The time is the lines' stamps, else the steps' own durations added up. A dict
    like the step lattice's (`clock`: True, `clock_period_s`, `every_n_steps`: the median steps between the episodes'
    starts; every slow step is on it), or None."""
    spent = d * np.r_[1, np.clip(np.diff(step), 1, None)]  # each line's time, the steps it stands for included
    if spent[slow].sum() > MINORITY_SLOW * spent.sum():
        return None  # slow most of each cycle: work waiting on bursts of input, not a timer interrupting it
    times = fleet["time"]
    t = (times - times.iloc[0]).dt.total_seconds().to_numpy() if times.notna().all() else np.cumsum(spent)
    starts = np.flatnonzero(slow & ~np.r_[False, slow[:-1]])
    p = regularity_p(np.diff(t[starts]))
    if p >= ALPHA:
        return None
    return {"every_n_steps": max(1, int(np.median(np.diff(step[starts])))), "residue": -1, "hits": int(len(starts)),
            "lattice_steps": int(len(starts)), "slow_steps": int(slow.sum()), "p_value": p, "clock": True,
            "clock_period_s": float(np.median(np.diff(t[starts])))}


ACCUM_MAX_N = 32  # gradient accumulation runs over a few to a few dozen micro-batches
ACCUM_CV = 0.05  # the optimizer step costs the same every time; stalls (I/O, evaluation) vary by more


def _optimizer_only_on(steps: pd.DataFrame | None, on: np.ndarray, off: np.ndarray) -> bool:
    """True when an optimizer phase is logged on (nearly) all `on` steps and (nearly) none of the `off` ones."""
    if steps is None or steps.empty or "optimizer" not in set(steps["phase"].astype(str)):
        return False
    opt = set(steps.loc[steps["phase"].astype(str) == "optimizer", "step"].astype(np.int64))
    on_share = np.mean([x in opt for x in on]) if len(on) else 0.0
    off_share = np.mean([x in opt for x in off]) if len(off) else 0.0
    return bool(on_share >= 0.9 and off_share <= 0.1)


def level_shift(fleet: pd.DataFrame, min_steps: int = 20) -> dict | None:
    """A step-time level shift (the step time jumps and stays): the single change point in log step time that
    maximises the two-sample statistic (CUSUM), its p-value from the Kolmogorov limit of the Brownian bridge with
    n deflated by the lag-1 autocorrelation of the residuals, the step it happens at and its size. Warm-up and slow
    steps are left out. `shifted` when p < ALPHA, |size| ≥ CREEP_MIN and a step fits better than a linear trend.
    Needs `min_steps` steps; below 20 the asymptotic p is conservative (a discrete bridge's maximum is smaller)."""
    d_all = fleet["duration_s"].to_numpy(dtype=np.float64)
    warm = warmup_steps(d_all)
    d_all, st_all = d_all[warm:], fleet["step"].to_numpy(dtype=np.int64)[warm:]
    keep = ~slow_steps(d_all) & (d_all > 0)
    d, st = d_all[keep], st_all[keep]
    n = len(d)
    if n < max(min_steps, 8):
        return None
    y = np.log(d)
    c = np.cumsum(y - y.mean())[:-1]
    k = int(np.argmax(np.abs(c))) + 1
    # the edge guard counts steps, not lines: a side needs 3 steps, and a line that stands for many (tensorpack's
    # epoch line, 2000 steps) is their mean, no single step's noise
    per = np.diff(st, append=st[-1] + (int(np.median(np.diff(st))) if n > 1 else 1)).clip(1, None)
    if k < 1 or k > n - 1 or per[:k].sum() < 3 or per[k:].sum() < 3 or (k < 3 or k > n - 3) and per.min() < 3:
        return None
    a, b = y[:k], y[k:]
    resid = np.r_[a - a.mean(), b - b.mean()]
    sd = float(np.std(resid, ddof=2))
    if sd <= 0:
        sd = 1e-6
    n_eff = effective_n(n, lag1(resid), floor=3.0)
    x = float(np.abs(c).max() / (sd * np.sqrt(n)) * np.sqrt(n_eff / n))
    p = kolmogorov_sf(x)
    size = float(np.exp(b.mean() - a.mean()) - 1)
    # a step change against a linear trend: residual sums of squares
    tt = np.arange(n, dtype=np.float64)
    coef = np.polyfit(tt, y, 1)
    rss_lin = float(np.sum((y - np.polyval(coef, tt)) ** 2))
    rss_step = float(np.sum(resid ** 2))
    return {"step": int(st[k]), "before_s": float(np.exp(a.mean())), "after_s": float(np.exp(b.mean())),
            "relative_change": size, "p_value": p, "steps_after": int(n - k), "warmup_steps": warm,
            "lost_fraction": float(max(size, 0.0) / (1 + max(size, 0.0)) * (n - k) / n),
            "shifted": bool(p < ALPHA and abs(size) >= CREEP_MIN and rss_step < rss_lin)}


def _events_at(events: pd.DataFrame | None, at_steps: np.ndarray, tolerance: int = 1) -> dict[str, int]:
    """How many of `at_steps` have an event of each kind logged within ±tolerance steps."""
    if events is None or events.empty or len(at_steps) == 0:
        return {}
    ev = events[events["step"] >= 0]
    out = {}
    for kind, part in ev.groupby("kind", sort=True):
        logged = np.unique(part["step"].to_numpy(dtype=np.int64))
        pos = np.searchsorted(logged, at_steps)
        near = np.zeros(len(at_steps), dtype=bool)
        for off in (-1, 0):
            j = np.clip(pos + off, 0, len(logged) - 1)
            near |= np.abs(logged[j] - at_steps) <= tolerance
        if near.any():
            out[str(kind)] = int(near.sum())
    return out


def gc_spikes(fleet: pd.DataFrame, events: pd.DataFrame | None, exclude: np.ndarray | None = None) -> dict | None:
    """Slow steps (off the periodic lattice: `exclude`) against steps holding a GC pause long enough to make a
    step slow (≥ (SLOW_FACTOR - 1) × the median step): counts, pause time, hypergeometric p-value. None without
    GC events."""
    if events is None or events.empty:
        return None
    gc = events[events["kind"].astype(str).str.lower().isin(GC_KINDS)]
    if gc.empty or len(fleet) < 5:
        return None
    step = fleet["step"].to_numpy(dtype=np.int64)
    d = fleet["duration_s"].to_numpy(dtype=np.float64)
    slow = slow_steps(d)
    if exclude is not None:
        slow &= ~np.isin(step, exclude)
    base = float(np.median(d[~slow])) if (~slow).any() else float(np.median(d))
    known = gc[gc["step"] >= 0]
    # only a pause long enough to make a step slow by itself can explain a slow step (all GC events when the
    # pauses are not timed)
    per_step = known.groupby("step")["duration_s"].sum(min_count=1)
    if per_step.notna().any():
        candidates = per_step.index[per_step.fillna(0.0) >= (SLOW_FACTOR - 1.0) * base].to_numpy(dtype=np.int64)
    else:
        candidates = per_step.index.to_numpy(dtype=np.int64)
    has_gc = np.isin(step, candidates)
    # a slow step counts as explained when its pause covers at least half of its extra time
    pause_at = per_step.reindex(step).fillna(0.0).to_numpy(dtype=np.float64)
    explained = slow & has_gc & (pause_at >= 0.5 * (d - base))
    k = int(explained.sum())
    p = hypergeom_sf(k, len(step), int(has_gc.sum()), int(slow.sum())) if slow.any() else 1.0
    pause = gc["duration_s"].dropna()
    return {"gc_events": int(len(gc)), "steps_with_gc": int(np.isin(step, per_step.index).sum()),
            "steps_with_long_gc": int(has_gc.sum()), "slow_steps": int(slow.sum()), "slow_with_gc": k,
            "p_value": p, "median_pause_s": float(pause.median()) if len(pause) else None,
            "max_pause_s": float(pause.max()) if len(pause) else None,
            "pause_share": float(per_step.sum() / d.sum()) if per_step.notna().any() else None,
            "extra_s": float(np.median(d[explained]) - base) if k else None,
            "coincide": bool(k >= 2 and p < ALPHA)}


def step_creep(fleet: pd.DataFrame) -> dict | None:
    """Monotonic trend of step time with step number: Spearman rho, p-value, Theil-Sen slope, relative change."""
    if len(fleet) < 20:
        return None
    d = fleet["duration_s"].to_numpy(dtype=np.float64)
    keep = ~slow_steps(d)
    d = d[keep]
    x = fleet["step"].to_numpy(dtype=np.float64)[keep]
    n = len(d)
    if n < 20 or np.std(d) == 0:
        return None
    rx = pd.Series(x).rank().to_numpy()
    ry = pd.Series(d).rank().to_numpy()
    if np.std(rx) == 0 or np.std(ry) == 0:
        return None
    rho = float(np.corrcoef(rx, ry)[0, 1])
    # Theil-Sen slope on up to 20 000 random pairs
    rng = np.random.default_rng(0)
    i = rng.integers(0, n, 20000)
    j = rng.integers(0, n, 20000)
    ok = x[i] != x[j]
    slope = float(np.median((d[j][ok] - d[i][ok]) / (x[j][ok] - x[i][ok]))) if ok.any() else 0.0
    resid = d - (np.median(d - slope * x) + slope * x)
    n_eff = effective_n(n, lag1(resid), floor=3.0)
    from statistics import NormalDist

    z = rho * np.sqrt(n_eff - 1)
    p = float(1 - NormalDist().cdf(z))
    med = float(np.median(d))
    change = slope * (x.max() - x.min()) / med if med > 0 else 0.0
    times = fleet["time"]
    span = float((times.max() - times.min()).total_seconds()) if times.notna().all() else float(d.sum())
    return {"spearman_rho": rho, "p_value": p, "slope_s_per_step": slope, "relative_change": float(change),
            "span_s": span,
            "first_s": float(np.median(d[: max(n // 10, 3)])), "last_s": float(np.median(d[-max(n // 10, 3):])),
            "creeping": bool(p < ALPHA and change >= CREEP_MIN)}


def recompiles(fleet: pd.DataFrame, events: pd.DataFrame | None) -> dict | None:
    """Recompilation events: count, the steps they fall on (`steps`, of `run_steps`), total time, and how many
    coincide with slow steps. None without any."""
    if events is None or events.empty:
        return None
    rc = events[events["kind"].astype(str).str.lower().isin(["recompile", cause_ids.RECOMPILATION, "compile"])]
    if rc.empty:
        return None
    step = fleet["step"].to_numpy(dtype=np.int64) if len(fleet) else np.zeros(0, dtype=np.int64)
    d = fleet["duration_s"].to_numpy(dtype=np.float64) if len(fleet) else np.zeros(0)
    slow = slow_steps(d) if len(d) else np.zeros(0, dtype=bool)
    # compilation before the first step is warm-up, not recompilation
    first_step = int(step.min()) if len(step) else 0
    rc = rc[rc["step"] >= first_step] if len(step) else rc
    if rc.empty:
        return None
    rc_steps = np.unique(rc["step"].to_numpy(dtype=np.int64))
    on_slow = int(np.isin(step[slow], rc_steps).sum()) if len(step) else 0
    per_step = rc.groupby("step")["duration_s"].max()
    total = float(per_step.sum()) if per_step.notna().any() else None
    return {"events": int(len(rc)), "steps": int(len(rc_steps)), "run_steps": int(len(np.unique(step))),
            "slow_steps_with_recompile": on_slow,
            "seconds": total, "share": (total / float(d.sum())) if total and len(d) and d.sum() > 0 else None,
            "details": sorted(set(rc["detail"].astype(str)) - {""})[:3]}


def summarize(steps: pd.DataFrame, events: pd.DataFrame | None = None) -> dict:
    """The `steps` object of the diagnose JSON: statistics, phase shares and the patterns above ({} without
    step data)."""
    if steps is None or steps.empty:
        return {}
    fleet = fleet_steps(steps)
    d = fleet["duration_s"].to_numpy(dtype=np.float64)
    out: dict = {"ranks": int(steps["rank"].nunique()), "steps": int(len(fleet))}
    if len(d):
        out.update({"median_step_s": float(np.median(d)), "p90_step_s": float(np.percentile(d, 90)),
                    "max_step_s": float(d.max()), "steps_per_s": float(1 / np.median(d)) if np.median(d) > 0 else None,
                    "slow_steps": int(slow_steps(d).sum())})
    pb = phase_breakdown(steps) if (steps["phase"] != "step").any() else pd.DataFrame()
    if len(pb):
        share = pb.groupby("phase")["seconds"].sum()
        total = share.sum()
        out["phase_share"] = {str(k): float(v / total) for k, v in share.sort_values(ascending=False).items()
                              if total > 0}
    busy = rank_busy(steps)
    if busy:
        out["rank_busy"] = busy
    periodic = periodic_slow_steps(fleet, events, steps)
    out["periodic_slow"] = periodic if periodic and periodic["periodic"] else None
    out["warmup_steps"] = warmup_steps(d) if len(d) else 0
    out["cadence_searched"] = len(d) - out["warmup_steps"] >= PERIODIC_MIN_STEPS  # as periodic_slow_steps does
    lattice = None
    if periodic and periodic["periodic"] and not periodic["gc_lattice"]:
        st = fleet["step"].to_numpy(dtype=np.int64)
        lattice = st[slow_steps(d) if periodic.get("clock") else  # a wall-clock cycle holds every slow step
                     (st % periodic["every_n_steps"]) == periodic["residue"]]
    out["gc"] = gc_spikes(fleet, events, exclude=lattice)
    out["creep"] = step_creep(fleet.iloc[out["warmup_steps"]:])
    shift = level_shift(fleet) if len(fleet) >= 20 else None
    out["level_shift"] = shift if shift and shift["shifted"] else None
    if out["level_shift"] and out["creep"]:
        out["creep"]["creeping"] = False  # a jump, not a trend: the shift explains the rise better
    out["recompiles"] = recompiles(fleet, events)
    return out


def rank_busy(steps: pd.DataFrame) -> list[dict]:
    """Per rank: share of its step time in work phases (busy_phases_of), in queue waits (QUEUE_PHASES) and in
    other waits (WAIT_PHASES: input, collectives, checkpoints...). [] without named phases or with one rank."""
    parts = steps[steps["phase"] != "step"]
    if parts.empty or steps["rank"].nunique() < 2:
        return []
    pb = phase_breakdown(steps)
    busy = set(busy_phases_of(steps))
    out = []
    for rank, g in pb.groupby("rank", sort=True):
        share = g.set_index("phase")["share"].fillna(0.0)
        out.append({"rank": int(rank), "host": str(steps.loc[steps["rank"] == rank, "host"].iloc[0]),
                    "busy_share": float(share[share.index.isin(busy)].sum()),
                    "queue_wait_share": float(share[share.index.isin(QUEUE_PHASES)].sum()),
                    "other_wait_share": float(share[share.index.isin(set(WAIT_PHASES) - set(QUEUE_PHASES))].sum()),
                    "steps": int((steps["rank"] == rank).sum())})
    return out
