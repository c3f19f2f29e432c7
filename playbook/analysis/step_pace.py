"""A rank's pace for the wall-time accounting (playbook.analysis.accounting): the local steady step time, the lattice
of its slow steps, the phrases that describe them, and the resolution of its timestamps (seconds throughout)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from playbook.analysis import step_times as sa


def local_pace(d: np.ndarray, slow: np.ndarray) -> np.ndarray:
    """The rolling-median step time (as the slow-step test uses) of the steps that are not slow, carried across the
    slow ones; the plain median when there are too few steps (seconds)."""
    if len(d) < 5:
        return np.full(len(d), float(np.median(d)))
    if not slow.any() or slow.all():
        return sa._rolling_baseline(d)
    kept = np.flatnonzero(~slow)
    pace = sa._rolling_baseline(d[kept])
    return pace[np.clip(np.searchsorted(kept, np.arange(len(d))), 0, len(kept) - 1)]


def slow_lattice(d: np.ndarray, step: np.ndarray, slow: np.ndarray) -> np.ndarray:
    """Steps on the lattice of the slow steps' period (analysis.step_times.periodic_slow_steps), if one is found."""
    fleet = pd.DataFrame({"step": step, "duration_s": d, "time": pd.NaT})
    per = sa.periodic_slow_steps(fleet) if slow.sum() >= 3 else None
    if not per or not per["periodic"]:
        return np.zeros(len(d), dtype=bool)
    return (step % per["every_n_steps"]) == per["residue"]


def every_phrase(d, step, on, base) -> str:
    if not on.any():
        return ""
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


def stretch_phrase(d, step, mask, best, lo, n) -> str:
    k = len(lo)
    where = f"from step {int(step[lo[0]])} on" if k == 1 and lo[0] + n[0] == len(d) else \
        f"{k} stretch{'es' if k > 1 else ''} of {int(mask.sum())} steps"
    return f"steps slower than the run's best pace ({best:.3g} s) {where}, up to {d[mask].max() / best:.2f}×"


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
