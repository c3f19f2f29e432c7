"""A rank's pace for the wall-time accounting (playbook.analysis.accounting): the local steady step time, the lattice
of its slow steps, the phrases that describe them, and the resolution of its timestamps (seconds throughout)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd

from playbook.analysis import step_times as sa
from playbook.analysis.stats import lag1
from playbook.knowledge.causes import cause_of_event
from playbook.model import schema

PACE_WINDOWS = (sa.ROLL_WINDOW, 25, 11, 5)  # rolling-median widths tried, widest first (steps)
MATERIAL = 0.01  # a narrower pace is followed when it moves ≥ 1% of the steps' time (accounting.MIN_FLOOR)


def steps_per_line(stepno: np.ndarray) -> tuple[np.ndarray, float]:
    """(steps each logged line stands for, the typical gap k): a line logged every k steps stands for the k steps
    since the line before (its time is their mean or the last one's); the first line for min(k, its step number),
    as there is no window before step 1."""
    stepno = np.asarray(stepno, dtype=np.float64)
    gaps = np.diff(stepno)
    k = float(np.median(gaps)) if len(gaps) and np.median(gaps) > 0 else 1.0
    return np.clip(np.r_[min(k, stepno[0]), gaps], 1, None) if len(stepno) else np.zeros(0), k


def local_pace(d: np.ndarray, slow: np.ndarray) -> np.ndarray:
    """The rolling-median step time of the steps that are not slow, carried across the slow ones; the plain median
    when there are too few steps (seconds).

    The window narrows from PACE_WINDOWS[0] while two things hold: the residuals (log step time over the pace) are
    lag-1 autocorrelated (Bartlett: r1 > z(ALPHA)/√n), and the next narrower pace departs from this one by more
    than CREEP_MIN on steps holding ≥ MATERIAL of the time. Jitter is independent from step to step, or too small to
    matter; a pace that moves faster than the window (a swing of about the window's period, a shift in the last
    steps) leaves runs of same-signed residuals and a narrower pace that differs (a step-time oscillation of period
    50 had read "healthy", its swing taken for jitter)."""
    if len(d) < 5:
        return np.full(len(d), float(np.median(d)))
    kept = np.flatnonzero(~slow) if slow.any() and not slow.all() else np.arange(len(d))
    x = d[kept]
    crit = NormalDist().inv_cdf(1 - sa.ALPHA) / math.sqrt(len(kept))
    pace = sa._rolling_baseline(x, window=PACE_WINDOWS[0])
    for w in PACE_WINDOWS[1:]:
        if lag1(np.log(np.clip(x, 1e-9, None) / pace)) <= crit:
            break
        narrow = sa._rolling_baseline(x, window=w)
        apart = np.abs(np.log(narrow / pace)) > math.log1p(sa.CREEP_MIN)
        if np.abs(narrow - pace)[apart].sum() < MATERIAL * x.sum():
            break
        pace = narrow
    return pace[np.clip(np.searchsorted(kept, np.arange(len(d))), 0, len(kept) - 1)]


ZERO_SHARE = 0.25  # a quarter of the steps printed as 0 s: the log's resolution is coarser than its steps


def below_resolution(d: np.ndarray) -> bool:
    """True when at least ZERO_SHARE of the step times (s) read exactly 0: no step takes no time, so the log prints
    them coarser than they run (0.000 / 0.001 s steps of milliseconds printed in seconds to 3 decimals), and their
    ratios measure the rounding (a 0.001 s step read "1,000,000x the steady step"), not the run."""
    x = np.asarray(d, dtype=np.float64)
    x = x[np.isfinite(x)]
    return bool(len(x) and np.mean(x == 0) >= ZERO_SHARE)


def row_waits(steps: pd.DataFrame, rank, stepno: np.ndarray) -> np.ndarray:
    """Seconds per step of the waiting phases (step_times.WAIT_PHASES) logged for each of `stepno` on `rank` beyond
    their own local level (a rolling median as wide as the pace's): the part of a step's excess over the local pace
    that its waits explain. The wait's usual level is inside the pace already; subtracting it too would erase the
    step's own jitter (a 0.02 s loader wait on every 1 s step had cut a 2.5% noise floor to 1.9%)."""
    part = steps[(steps["rank"] == rank) & steps["phase"].astype(str).isin(sa.WAIT_PHASES)]
    if part.empty:
        return np.zeros(len(stepno))
    per = part.groupby("step")["duration_s"].sum().reindex(stepno, fill_value=0.0).fillna(0.0)
    # the level as the pace's (local_pace): a plain median under 5 steps (a rolling one at the last of 3 lines sat
    # between its 0.011 s and 0.4 s waits, and half the 0.4 s wait read as jitter: detectron2's floor 1% -> 10%)
    level = per.median() if len(per) < 5 else per.rolling(PACE_WINDOWS[0], center=True, min_periods=1).median()
    return np.clip((per - level).to_numpy(dtype=np.float64), 0.0, None)


def run_restarts(events: pd.DataFrame) -> pd.Series:
    """Per event: a restart at a step — a step counter that went back (the run restarted into its log,
    readers/step_log). Its time is between two runs (accounting.wall_time._rank_runs), no step's and no cause's
    (a telemetry logger's restart, or torchrun's "restarting workers", names no step)."""
    return (events["kind"].astype(str) == "restart") & (events["step"] >= 0)


def stated_waits(events: pd.DataFrame | None, t0: pd.Timestamp | None) -> np.ndarray:
    """(start, seconds) of the events that state their own duration and measure a cause ("Finished saving the
    checkpoint ... in 391.42 seconds"), seconds since `t0`; empty without times."""
    if events is None or events.empty or t0 is None or "duration_s" not in events:
        return np.zeros((0, 2))
    ev = events[events["time"].notna() & (events["duration_s"] > 0) & events["kind"].map(cause_of_event).notna()
                & ~run_restarts(events)]
    return np.c_[(ev["time"] - t0).dt.total_seconds().to_numpy(), ev["duration_s"].to_numpy(dtype=np.float64)]


def restart_times(events: pd.DataFrame | None, t0: pd.Timestamp | None, rank) -> np.ndarray:
    """Seconds since `t0` of the run restarts (run_restarts) logged for `rank`; rank -1: the whole run's."""
    if events is None or events.empty or t0 is None:
        return np.zeros(0)
    ev = events[run_restarts(events) & events["time"].notna() & events["rank"].isin((rank, -1))]
    return (ev["time"] - t0).dt.total_seconds().to_numpy(dtype=np.float64)


def measured_warmup(warm: int, times: np.ndarray | None, d: np.ndarray, per_row: np.ndarray,
                    waits: np.ndarray | None) -> int:
    """Warm-up is a one-time cost nothing measures: when events inside the slow prefix's span state durations that
    hold at least half its excess over the steady step, the prefix is their cost (a checkpoint saved right after
    step 1, inside the first window of a log that prints every 10 steps), and only a first single step stays
    warm-up. `warm` rows of step times `d` (s) standing for `per_row` steps each, at `times` (s)."""
    if warm == 0 or times is None or waits is None or not len(waits):
        return warm
    span = d[:warm] * per_row[:warm]
    lo, hi = times[0] - span[0], times[warm - 1] + span[-1]  # a line's time is its window's start or end
    excess = float(np.clip(d[:warm] - np.median(d[warm:]), 0.0, None) @ per_row[:warm]) if warm < len(d) else 0.0
    inside = (waits[:, 0] >= lo) & (waits[:, 0] + waits[:, 1] <= hi)
    if excess <= 0 or waits[inside, 1].sum() < 0.5 * excess:
        return warm
    return 1 if warm > 1 and per_row[0] == 1 else 0


FEW_ROWS = 3  # the fewest step rows on a rank that show a steady pace: of two that disagree, either may be the off one
SLOW_TEST_ROWS = 5  # the fewest rows the slow-step test runs on (step_times.slow_steps: a median and its MAD)


def no_steady_pace(steps: pd.DataFrame, unit: str = "step") -> str | None:
    """Why the step rows (each one `unit`: "step" or "epoch", schema.record_unit) cannot show a steady pace, or None. On any rank, fewer than FEW_ROWS timed rows that
    disagree by more than CREEP_MIN (Megatron-LLM#22's 11.1 s then 14.6 s per iteration, the thread's rise: either may
    be the steady pace, and against their spread as the noise floor nothing reads as lost); or, on any rank, fewer
    than SLOW_TEST_ROWS, too few for the slow-step test, whose rows after the first disagree by SLOW_FACTOR (the test's own
    factor: three epochs of 450, 440 and 900 ms a step are a stall or a slow pace, the rows cannot tell, and their
    spread as the noise floor read "healthy"). The first row is left out of that comparison: alone off the others, it
    is the warm-up it usually is (maxtext#4847's 0.631 s then 10.2 and 10.3 s). One timed row per rank (a timer
    summary's single line, a paste of one iteration) shows no pace at all, unless its waiting phases measure a loss
    by themselves (at least MATERIAL of its time)."""
    st = steps[(steps["phase"].astype(str) == "step") & steps["duration_s"].notna()]
    if st.empty:
        return None
    per = st.groupby("rank")["duration_s"]
    # with one rank a collective waits for no peer: its time is its transfer (accounting's rank_waits), no loss
    waits = set(sa.WAIT_PHASES) - (set(sa.COLLECTIVE_PHASES) if st["rank"].nunique() < 2 else set())
    waited = steps.loc[steps["phase"].astype(str).isin(waits), "duration_s"].sum()
    if (per.size() < 2).all() and waited < MATERIAL * st["duration_s"].sum():  # one step per rank shows no pace
        d = st["duration_s"]
        return (f"one step time{'' if len(d) == 1 else ' per rank'} ({d.min():.3g} s{'' if len(d) == 1 else f' to {d.max():.3g} s'}"
                f"{_most_of(steps, float(d.sum()))}): no pace to compare it with, so nothing can read as lost")
    apart = (per.max() > per.min() * (1 + sa.CREEP_MIN)) & (per.size() < FEW_ROWS)  # per rank, as below
    if apart.any():
        rank = apart.index[apart.argmax()]
        d = per.get_group(rank)
        return (f"{len(d)} {unit} times{_on_rank(rank, per)}, {d.min():.3g} s to {d.max():.3g} s: too few "
                "to tell the steady pace from a slow one")
    st = st.sort_values(["rank", "step"], kind="stable")  # the first row is the first step (rows from files or
    # ranks merged out of order, a rotated log passed after the current one)
    later = st[st.groupby("rank").cumcount() > 0].groupby("rank")["duration_s"]  # each rank's rows after its first
    # per rank: another rank's many steady rows do not test this rank's few (its slow step is never tried)
    few = (later.max() >= later.min() * sa.SLOW_FACTOR) & (per.size() < SLOW_TEST_ROWS).reindex(later.max().index)
    if few.any():
        rank = few.index[few.argmax()]
        d = later.get_group(rank)
        return (f"{per.size()[rank]} {unit} times{_on_rank(rank, per)}, {d.min():.3g} s to {d.max():.3g} s after the first: "
                f"too few to tell a stall from a slow pace (the slow-step test needs {SLOW_TEST_ROWS})")
    return None


# the model-FLOP utilization under which a run's own stated MFU is itself a loss: its model's arithmetic uses under a
# tenth of the device's peak every step (karpathy/nanoGPT#178's GPT-2 124M, healthy, states 16.6%; well-fed
# transformer training states 30-55%; PrimeIntellect-ai/prime-rl#1599 on TCP sockets 0.2%)
MFU_FLOOR = 0.10
# the highest dense BF16 peak of a training device in service, TFLOP/s per device (NVIDIA B200 2,250, AMD MI355X about
# 2,500): a stated rate of MFU_FLOOR of it or more is above the floor whatever the device, no peak needed to place it
TOP_PEAK_TFLOPS = 2500.0


def unplaced_efficiency(meta: dict) -> str | None:
    """Why step times that show a steady pace still cannot vouch for health, from what the step lines state of the
    device's efficiency (schema.STATED_EFFICIENCY, readers/step_log/columns.stated_efficiency), or None. Step times
    measure the run against its own pace, blind to a cost every step pays; a stated model-FLOP utilization measures
    that cost against the device's peak: under MFU_FLOOR it is a loss the step times cannot place. A stated rate in
    TFLOP/s per device without the MFU needs the device's peak to mean anything (130 TFLOP/s is 42% of an A100's
    dense BF16 peak, 13% of an H100's), which no step line states: the one measure of that cost in the inputs cannot
    be read, so finding nothing is no evidence of health — unless the rate is above the floor even of the fastest
    device's peak (TOP_PEAK_TFLOPS)."""
    stated = schema.meta_sections(meta, schema.STATED_EFFICIENCY)
    mfus = [(float(s["mfu"]), s) for _, s in stated if s.get("mfu") is not None]
    if mfus:
        low, s = min(mfus, key=lambda m: m[0])
        if low >= MFU_FLOOR:
            return None
        return (f"the step lines state a model-FLOP utilization of {low:.2%} (`{s['fields'][-1]}`, the median of "
                f"{s.get('rows', 0)} rows): the model's arithmetic uses under {MFU_FLOOR:.0%} of the device's peak "
                "every step, a cost every step pays that the step times cannot show or place")
    rates = [(float(s["tflops"]), s) for _, s in stated if s.get("tflops") is not None]
    if not rates:
        return None
    rate, s = min(rates, key=lambda r: r[0])
    if rate >= MFU_FLOOR * TOP_PEAK_TFLOPS:  # 452 TFLOP/s is 18% of the fastest peak, more of any other's
        return None
    return (f"the step lines state {rate:.4g} TFLOP/s per device (`{s['fields'][0]}`, the median of {s.get('rows', 0)} "
            "rows) and no device peak to hold it against: its model-FLOP utilization, the one measure in them of a "
            "cost every step pays, is unknown (log the MFU, or record GPU utilization beside the steps)")


def _most_of(steps: pd.DataFrame, total: float) -> str:
    """"; its own timers put 95% of it in the optimizer" when one named phase holds at least half of the steps' time
    (DeepSpeed#1635's CPU-Adam step: 22.9 s of 24.1 s), else "": where a lone step's time went, said beside it."""
    parts = steps[~steps["phase"].astype(str).isin(("step", "other"))].groupby("phase", observed=True)["duration_s"].sum()
    if total <= 0 or not len(parts) or parts.max() < 0.5 * total:
        return ""
    return f"; its own timers put {parts.max() / total:.0%} of it in the {parts.idxmax()} phase"


def _on_rank(rank, per) -> str:
    """" on rank N" where the rows name several ranks; "" for one rank or ranks unknown (-1)."""
    return f" on rank {rank}" if per.ngroups > 1 and rank >= 0 else ""


SHORT_SHIFT_STEPS = 8  # a shift is tested from 8 steps: 3 on each side (level_shift's edge guard) and some to spare


def pace_levels(body: np.ndarray, step: np.ndarray, roll: np.ndarray) -> tuple[np.ndarray, float]:
    """The local pace and the run's best sustained pace (s): `roll` (the rolling median) and its 10th percentile; but
    when the rolling window spans more than half the steps (a log of a few dozen lines: epochs, or windows of many
    steps) it straddles a level shift and its percentile sits between the levels (kubeflow#68: 37.6 s where the
    first epochs ran at 25-29 s), so a significant shift (step_times.level_shift) gives the two levels instead, and
    a significant creep (step_times.step_creep) its Theil-Sen line, the best pace its 10th percentile as on long
    logs (a 30% creep over 30 lines had read 4% lost against 9-10% over 200 lines)."""
    best = float(np.percentile(roll, 10))
    if len(body) > 2 * sa.ROLL_WINDOW:
        return roll, best
    frame = pd.DataFrame({"step": step, "duration_s": body, "time": pd.NaT})
    shift = sa.level_shift(frame, min_steps=SHORT_SHIFT_STEPS)
    if shift and shift["shifted"]:
        levels = np.where(step >= shift["step"], shift["after_s"], shift["before_s"])
        return levels, float(min(shift["before_s"], shift["after_s"]))
    creep = sa.step_creep(frame)
    if not (creep and creep["creeping"]):
        return roll, best
    line = creep["first_s"] + creep["slope_s_per_step"] * (step - step[0])
    line = np.clip(line + float(np.median(body - line)), 1e-9, None)  # through the steps, as Theil-Sen's intercept
    return line, float(np.percentile(line, 10))


def duration_tick(d: np.ndarray) -> float:
    """The printed resolution of step times `d` (s): the coarsest of 1 s, 0.1 s, 0.01 s, 1 ms that every value is a
    multiple of (time_resolution of the values), 1 µs for unrounded ones."""
    x = np.asarray(d, dtype=np.float64)
    x = x[np.isfinite(x)]
    return time_resolution(np.r_[0.0, x]) if len(x) else 1e-6


def stamp_tick(d: np.ndarray, per_row: np.ndarray, times: np.ndarray | None) -> np.ndarray:
    """Per row, the resolution (s) of a step time read off the lines' timestamps: where a row's `d` × its steps
    (`per_row`) is the time since the line before, it is the stamps' resolution over those steps (whole-second stamps
    on 0.3 s steps: windows of 3 or 4 steps read 0.33 or 0.25 s, a 1.3x 'stall' on every third window); 0 for rows
    timed otherwise, or without times."""
    if times is None or len(times) < 2:
        return np.zeros(len(d))
    gap = np.r_[np.nan, np.diff(times)]
    from_stamps = np.abs(d * per_row - gap) <= 1e-6 + 1e-9 * np.abs(gap)
    return np.where(from_stamps, time_resolution(times) / per_row, 0.0)


def resolved_pace(body: np.ndarray, step: np.ndarray, slow: np.ndarray, tick) -> tuple:
    """The slow steps, local pace, best pace and slow-stretch mask of step times `body` (s) whose printed resolution
    is `tick` (s; per step or one value). Two printed values a tick apart may be one time rounded both ways: a step
    flagged slow (step_times.slow_steps) is slow only beyond one tick over its local pace, and a stretch only beyond
    one tick over the best pace (0.15 s steps printed as 0.1 / 0.2 had read a third of the run 'stalls', 2x the
    steady step; whole seconds on 1.4 s steps a 10-15% loss)."""
    tol = np.asarray(tick, dtype=np.float64) * (1 + 1e-6)
    roll = local_pace(body, slow)
    rounding = slow & (body - roll <= tol)
    if rounding.any():
        slow = slow & ~rounding
        roll = local_pace(body, slow)
    roll, best = pace_levels(body, step, roll)
    stretch = (roll > best * (1.0 + sa.CREEP_MIN)) & (roll - best > tol) & ~slow
    return slow, roll, best, stretch


MOVED_RESIDUAL = 0.1  # a pair whose sum misses twice the pace by under a tenth of the slow step's excess


def moved_time(body: np.ndarray, roll: np.ndarray, slow: np.ndarray) -> np.ndarray:
    """Per step (s, <= 0): the shortfall of an adjacent, not slow step credited to a slow step whose excess over the
    local pace `roll` it cancels, the pair's sum within MOVED_RESIDUAL of the excess of twice their pace; 0 elsewhere.
    The clock read the boundary between the two late: asynchronous dispatch (XLA, CUDA without a sync) times work
    one step queued in the next, so the pair took two steps' time and lost none (litgpt#519 on a TPU: 0.95 s then
    5.79 s beside 3.37 s steps, the pairs 0.01% and 0.04% of the excess off; a stall with a jittery neighbour
    keeps ~all its excess)."""
    ex = body - roll
    credit = np.zeros(len(body))
    for nb, nb_slow in ((np.r_[np.nan, ex[:-1]], np.r_[True, slow[:-1]]),  # the step before
                        (np.r_[ex[1:], np.nan], np.r_[slow[1:], True])):  # the step after
        hit = slow & ~nb_slow & (nb < 0) & (np.abs(ex + nb) <= MOVED_RESIDUAL * ex) & (credit == 0)
        credit[hit] = nb[hit]
    return credit


def slow_lattice(d: np.ndarray, step: np.ndarray, slow: np.ndarray) -> tuple[np.ndarray, float | None]:
    """(steps on the lattice of the slow steps' period, None) when analysis.step_times.periodic_slow_steps finds one;
    (the slow steps, the cycle in seconds) when the stalls keep a cycle of wall time instead; no steps otherwise."""
    fleet = pd.DataFrame({"step": step, "duration_s": d, "time": pd.NaT})
    per = sa.periodic_slow_steps(fleet) if slow.sum() >= 3 else None
    if not per or not per["periodic"]:
        return np.zeros(len(d), dtype=bool), None
    if per.get("clock"):  # a cycle of wall time, not of steps: its episodes hold every slow step
        return slow.copy(), per["clock_period_s"]
    return (step % per["every_n_steps"]) == per["residue"], None


def every_phrase(d, step, on, base, clock_s: float | None = None) -> str:
    if not on.any():
        return ""
    if clock_s:
        return f"slow steps about every {clock_s:.3g} s of wall time, {np.median(d[on]) / base:.1f}× the steady step"
    n = int(np.median(np.diff(step[on]))) if on.sum() > 1 else 0
    return (f"slow steps every {n} steps, {np.median(d[on]) / base:.1f}× the steady step" if n else
            "slow steps on a lattice")


def stall_phrase(d, mask, base) -> str:
    if not mask.any():
        return ""
    k = int(mask.sum())
    worst = float(d[mask].max() / base) if base > 0 else math.inf
    # no claim about their timing: the step-lattice test could not call them periodic, yet a few stalls at a
    # checkpoint and validation cadence (Marian's 1500, 2000, 3000) are — the events at their steps say which
    return f"{k} stall{'s' if k > 1 else ''}, up to {worst:.1f}× the steady step"


RECUR_CV = 0.2  # stretch starts this regular (coefficient of variation of their spacing) recur on a cycle


def stretch_phrase(d, step, mask, best, lo, n) -> str:
    k = len(lo)
    where = f"from step {int(step[lo[0]])} on" if k == 1 and lo[0] + n[0] == len(d) else \
        f"{k} stretch{'es' if k > 1 else ''} of {int(mask.sum())} steps"
    starts = np.diff(step[np.asarray(lo)]) if k >= 3 else np.zeros(0)
    if len(starts) and starts.mean() > 0 and starts.std() <= RECUR_CV * starts.mean():
        where += f", one every ~{float(np.median(starts)):.0f} steps"  # a cycle: a periodic job, heat, a schedule
    return f"steps slower than the run's best pace ({best:.3g} s): {where}, up to {d[mask].max() / best:.2f}×"


def time_resolution(times: np.ndarray) -> float:
    """The timestamps' resolution in seconds: the coarsest of 1 s, 0.1 s, 0.01 s, 1 ms that every time is a
    multiple of (relative to the first), else 1 µs."""
    rel = times - times[0]
    for tick in (1.0, 0.1, 0.01, 0.001):
        if np.all(np.abs(rel / tick - np.round(rel / tick)) < 1e-3):
            return tick
    return 1e-6


def untimed_gaps(times: np.ndarray, d: np.ndarray, step: np.ndarray, warm: int) -> tuple[np.ndarray, np.ndarray]:
    """Per gap between consecutive lines, the seconds its start-to-start time exceeds the steps that explain it
    (time the step timer does not see: `rest`), and the part of it beyond the run's own typical rest where that
    stands out (`unusual`, 0 elsewhere). Both 0 in the warm-up and where the clock is too coarse to show them. A gap
    between lines logged every k steps covers k steps (seconds; len(times) − 1 values each)."""
    rest, unusual = np.zeros(max(len(times) - 1, 0)), np.zeros(max(len(times) - 1, 0))
    if len(times) < 4:
        return rest, unusual
    k = np.clip(np.diff(step), 1, None).astype(np.float64)
    # a line's time may be its step's start or its end: the longer of the two neighbours keeps a slow step's own
    # excess out of this bucket
    outside = np.clip(np.diff(times) - np.maximum(d[:-1], d[1:]) * k, 0.0, None)[warm:]
    if not len(outside) or not np.isfinite(outside).all():
        return rest, unusual
    # what the timer misses routinely (a logging line, the loop's own overhead) is part of the healthy pace: the
    # 10th percentile, so that stretches covering half the run still stand out
    extra = np.clip(outside - float(np.percentile(outside, 10)), 0.0, None)
    scale = float(np.median((d[1:] * k)[warm:]))  # the typical gap the timer explains
    # a line's time is its step's start or, when the reader took it back from the printed end, end − duration:
    # the coarser of the two resolutions is the clock's; a clock coarser than a quarter of the typical gap (whole
    # seconds on sub-second steps logged every step) cannot show time outside the timer
    tick = max(time_resolution(times), time_resolution(times + d))
    if not np.isfinite(scale) or scale <= 0 or tick > 0.25 * scale:
        return rest, unusual
    rest[warm:] = outside
    unusual[warm:] = np.where(extra > max(0.05 * scale, 2 * tick), extra, 0.0)
    return rest, unusual


def untimed_beside(untimed: np.ndarray, waits: np.ndarray) -> tuple[np.ndarray, int]:
    """Where a log timed its lines' wait phases outside the step (a loader timed before the step timer starts), the
    untimed rest of the gap that holds each line's waits: the gap after the line (its time is the step's start) or
    the one before it (the step's end), whichever shares more with the waits. The waits count as outside only when
    that gap's rest tracks them: the seconds the two have in common (per line the lesser) are most of the larger
    total (over half), else the rest is other untimed time (logging, evaluation) and the waits lie inside their
    steps. Returns per line the rest it may draw on (len(waits) values, all 0 for waits inside) and the gap's offset
    from the line (0 after, -1 before); `waits` in seconds per line, `untimed` per gap (untimed_gaps' rest)."""
    none = np.zeros(len(waits)), 0
    if not len(untimed) or not untimed.any() or not waits.any():
        return none
    best = max(((np.r_[untimed, 0.0], 0), (np.r_[0.0, untimed], -1)),
               key=lambda c: float(np.minimum(waits, c[0]).sum()))
    common = float(np.minimum(waits, best[0]).sum())
    return best if common > 0.5 * max(float(waits.sum()), float(best[0].sum())) else none


# a wait may exceed the step it is nested in only by the log's rounding: beyond 10% (and 10 ms) it was timed apart
_NESTED_SLACK, _NESTED_TICK_S = 1.10, 0.01


def waits_beside_timer(steps: pd.DataFrame, rank, stepno: np.ndarray, d: np.ndarray, warm: int) -> np.ndarray:
    """Without a clock fine enough to show the gaps between lines: the waits a log timed apart from its step (a
    loader timed before the step timer starts, as mozilla/TTS's `LoaderTime` beside `StepTime` and lerobot's
    `data_s` beside `updt_s`), per gap between lines (seconds; the wait of the line after the gap, as a loader
    feeds the step after it). A wait nested in its step cannot outlast it: the waits count as apart when they do,
    beyond rounding, on at least 3 lines and 5% of the lines after warm-up, and in total; zeros otherwise (nested
    waits, as imagenet's `Data` inside `Time`, stay the step's own time)."""
    none = np.zeros(max(len(d) - 1, 0))
    part = steps[(steps["rank"] == rank) & steps["phase"].isin(sa.WAIT_PHASES)]
    if part.empty or len(d) < 4:
        return none
    waits = part.groupby("step")["duration_s"].sum().reindex(stepno, fill_value=0.0).to_numpy(dtype=np.float64)
    waits = np.nan_to_num(waits)
    over = (waits > d * _NESTED_SLACK + _NESTED_TICK_S)[warm:]
    # a running mean printed as the step time (CenterNet's `Net`) lags its own data waits on a few lines, but over
    # the run the waits it holds still sum to less than it: waits apart outlast their steps in total too
    if over.sum() < max(3, 0.05 * len(over)) or waits[warm:].sum() <= d[warm:].sum():
        return none
    k = np.clip(np.diff(stepno), 1, None).astype(np.float64)  # a line every k steps stands for k waits
    return waits[1:] * k
