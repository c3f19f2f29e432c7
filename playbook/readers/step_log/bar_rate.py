"""A tqdm bar's smoothed rate back to each refresh's own time, checked against the bar's elapsed clock.

tqdm prints `n/N [elapsed<remaining, rate]`. Its rate is EMA(dn) / EMA(dt) over the refreshes it prints (tqdm/std.py
`update`: both EMAs take the refresh's dn and dt, smoothing a = 0.3 by default; the bias corrections cancel in the
ratio), so a stall's time is spread over the refreshes after it. With smoothing=0 (Lightning's training bar) the rate
is n / elapsed since the bar started. Both invert when every refresh is printed: with a, EDN_k = (1 - a) EDN_k-1 +
a dn_k, EDT_k = EDN_k / rate_k and dt_k = (EDT_k - (1 - a) EDT_k-1) / a (from a steady state at a bar's first
line: its error fades as 0.7^k); with 0, T_k = n_k / rate_k and dt_k = T_k - T_k-1.

The elapsed clock (whole seconds) is too coarse to time a refresh, but not a run of them: a reading holds when its
running total stays within the clock's resolution of the printed elapsed (plus 1% of it) at every line and no
refresh takes less than nothing beyond the rate's rounding (2 decimals). Of the rate as printed and the smoothings
a and 0, the one that keeps closest to the clock gives the per-step times; the printed rate stays when it does, or
when no smoothing holds (a bar whose refreshes are not all printed: line_clock.py's line clock may still apply).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.signal import lfilter

SMOOTHINGS = (0.3, 0.0)  # tqdm's default; Lightning's smoothing=0 (the average since the bar started)
ROUNDING = 0.005  # tqdm prints `{rate:5.2f}it/s`, or `{1/rate:5.2f}s/it` below 1 it/s
DRIFT = 0.01  # of the elapsed span: the printed rate's rounding summed over a run of refreshes
MIN_LINES = 12
RESOLVE = 40  # a window of an average-rate bar spans 40x its rounding (its time known to 2.5%, under CREEP_MIN)
BURN_IN = 8  # refreshes before a steady-state start is trusted (0.7^8: 6% of its error left)


def _segments(step, rank, pos, rate, clock) -> tuple[list[tuple[np.ndarray, int]], np.ndarray, np.ndarray]:
    """Each bar run: its row indices (a rank's rows in step order, cut where the bar restarts: its count falls, or its
    clock), at least MIN_LINES rows holding a rate and a clock, and the first refresh to trust (0 when the bar's
    start, a count of 0, is the line before the run: tqdm's EMA is known from its first refresh; else BURN_IN); and
    the rows that redraw the count of the row before them (tqdm's close() prints its last count again) with the rows
    they repeat."""
    ok = np.isfinite(rate) & np.isfinite(clock) & (rate > 0) & (pos >= 0)
    out, again, first = [], [], []
    for r in np.unique(rank[ok]):
        every = np.flatnonzero(rank == r)
        every = every[np.argsort(step[every], kind="stable")]
        idx = every[ok[every]]
        redraw = np.r_[False, (np.diff(pos[idx]) == 0) & (np.diff(clock[idx]) >= 0)]
        again.append(idx[redraw])
        first.append(idx[np.flatnonzero(redraw) - 1])  # a redraw repeats the row before it (redraws in a row: chained)
        idx = idx[~redraw]
        cut = np.flatnonzero((np.diff(pos[idx]) < 0) | (np.diff(clock[idx]) < 0)) + 1
        where = {int(row): k for k, row in enumerate(every)}
        for part in np.split(idx, cut):
            k = where[int(part[0])]
            fresh = k > 0 and pos[every[k - 1]] == 0
            if len(part) >= MIN_LINES:
                out.append((part, 0 if fresh else BURN_IN))
    return out, np.concatenate(again) if again else np.empty(0, int), np.concatenate(first) if first else np.empty(0, int)


def _refresh_times(n: np.ndarray, rate: np.ndarray, a: float, fresh: bool) -> tuple[np.ndarray, np.ndarray]:
    """(seconds of each refresh after the first, the rounding each may carry) under smoothing `a`; the EMAs start
    empty at the bar's count 0 when `fresh`, else in a steady state at the first line (its error fades as 0.7^k)."""
    rel = ROUNDING * np.minimum(1 / rate, rate)  # relative rounding of the printed rate (it/s or s/it)
    if a == 0.0:
        total = n / rate
        return np.diff(total), (total * rel)[1:] + (total * rel)[:-1]
    # EDN_k = (1 - a) EDN_k-1 + a dn_k as a linear filter (no Python loop)
    if fresh:
        edn = lfilter([a], [1.0, a - 1.0], np.diff(np.r_[0.0, n]))
    else:
        dn = np.diff(n)
        edn = np.r_[dn[0], lfilter([a], [1.0, a - 1.0], dn, zi=[(1 - a) * dn[0]])[0]]
    edt = edn / rate
    dt = (edt[1:] - (1 - a) * edt[:-1]) / a
    return dt, ((edt * rel)[1:] + (1 - a) * (edt * rel)[:-1]) / a


def _resolved(dt: np.ndarray, slack: np.ndarray, dn: np.ndarray) -> np.ndarray:
    """Seconds a step of each refresh from the bar's time since it started (`dt`: its rises, each known to its
    `slack`): the rises of a run of refreshes telescope, so their sum is known to one refresh's slack; each refresh
    takes the mean of the fewest refreshes in a row whose time is RESOLVE x that slack (late in a long bar, the rate's
    2 decimals leave ~0.1% of the bar's whole time: more than one refresh of it), except a refresh beyond its
    window's typical one by more than twice its slack (a stall), which keeps its own time, the rest sharing the
    remainder."""
    credit = np.cumsum(np.clip(dt, 0.0, None) / (RESOLVE * np.maximum(slack, 1e-12)))
    group = np.r_[0, np.floor(credit[:-1] + 1e-9).astype(np.int64)]  # a window closes once its credit reaches 1
    group = np.unique(group, return_inverse=True)[1]
    typical = pd.Series(dt).groupby(group).transform("median").to_numpy()
    alone = (dt > typical + 2.0 * slack) & (dn > 0)  # (a refresh without progress shares its window's time)
    rest = np.bincount(group, weights=np.where(alone, 0.0, dt)) / np.maximum(
        np.bincount(group, weights=np.where(alone, 0.0, dn)), 1e-12)
    own = np.divide(dt, dn, out=np.zeros_like(dt, dtype=np.float64), where=alone)
    return np.where(alone, own, np.clip(rest, 0.0, None)[group])


def _misfit(dt: np.ndarray, slack: np.ndarray, clock: np.ndarray, res: float, start: int) -> float:
    """How far refresh times `dt` (from refresh `start` on) stray from the clock: the largest gap between their
    running total and the clock's printed rise, over what its resolution (and DRIFT of the span) allows (at most 1:
    they keep to it); inf when one takes less than nothing beyond its `slack`."""
    dt, slack = dt[start:], slack[start:]
    if (dt < -slack - 1e-9).any():
        return np.inf
    rise = clock[start + 1:] - clock[start]
    return float((np.abs(np.cumsum(dt) - rise) / (res + DRIFT * rise)).max())


def unsmoothed(step, rank, pos, per_step: np.ndarray, clock: np.ndarray, res: float) -> tuple[np.ndarray, str] | None:
    """Per-step seconds (each row: its refresh's time over the steps since the line before) from a bar's rate read as
    `per_step` (s a step) and its elapsed `clock` (s, printed to `res` s), with how: the smoothing whose refresh
    times keep to the clock, and more closely than the printed rate does; None when none does."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = 1.0 / per_step
    segments, again, first = _segments(step, rank, pos, rate, clock)
    res = max(res, 1e-3)
    if not segments:
        return None
    best = max(_misfit(np.diff(pos[s]) / rate[s][1:], np.zeros(len(s) - 1), clock[s], res, k)
               for s, k in segments), None
    for a in SMOOTHINGS:
        out, worst = per_step.astype(np.float64, copy=True), 0.0
        for s, k in segments:
            n = pos[s].astype(np.float64)
            dt, slack = _refresh_times(n, rate[s], a, k == 0)
            worst = max(worst, _misfit(dt, slack, clock[s], res, k))
            out[s[1 + k:]] = _resolved(dt[k:], slack[k:], np.diff(n)[k:]) if a == 0.0 else \
                np.maximum(dt[k:], 0.0) / np.diff(n)[k:]
        if worst <= 1.0 and worst < best[0]:
            best = worst, (out, a)
    if best[1] is None:
        return None
    out, a = best[1]
    for row, before in zip(again, first, strict=True):  # in line order: a chain of redraws takes the first's time
        out[row] = out[before]
    how = ("n / rate is the bar's time since it started" if a == 0.0 else
           f"tqdm's smoothing {a} undone over every refresh printed")
    return out, f"{how}; their running total keeps to the bar's elapsed clock"
