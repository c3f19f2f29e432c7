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
