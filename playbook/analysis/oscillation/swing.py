"""One series (steps 3-5 of the method in playbook.analysis.oscillation): does it swing, how often does it
drop, with what duty cycle and period?"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from playbook.analysis.oscillation import ALPHA, MIN_SAMPLES_PERIOD
from playbook.analysis.oscillation.levels import (
    MIN_AMPLITUDE_PCT,
    RESOLUTION_PCT,
    Levels,
    episodes,
    hysteresis_states,
    segments,
    two_levels,
)
from playbook.analysis.oscillation.spectrum import (
    Spectrum,
    lagged_correlation,
    regularity_p,
    spectral_period,
    spectrum,
)

MIN_MINORITY_SHARE = 0.01
SMOOTHING = (3, 5, 9)  # moving-median windows (samples) tried when the raw samples are too noisy to split


@dataclass
class SeriesOscillation:
    """What one utilization series does (a GPU, a group mean, or a rank's busy fraction)."""

    n: int
    interval_s: float
    span_s: float
    levels: Levels
    transitions: int = 0
    swings: bool = False
    high_share: float = math.nan
    duty_cycle: float = math.nan
    dips: int = 0
    periodic: bool = False
    period_s: float = math.nan
    p_value: float = math.nan
    method: str = ""
    spectral_period_s: float = math.nan
    interval_period_s: float = math.nan
    regularity_p: float = math.nan
    acf_at_period: float = math.nan
    onsets: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dips_s: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # (start, end) of drops in the busy span
    spectrum: Spectrum | None = None
    note: str = ""
    smoothed: int = 0  # > 0: levels and states found on a moving median of this many samples (noisy input)


def analyze_series(t: np.ndarray, x: np.ndarray, interval_s: float | None = None, *,
                   value_range: tuple[float, float] | None = (0.0, 100.0),
                   min_amplitude: float = MIN_AMPLITUDE_PCT, resolution: float = RESOLUTION_PCT,
                   with_period: bool = True, with_spectrum: bool = False) -> SeriesOscillation:
    """Levels, swings, duty cycle and period of one series (t in s, NaN-free and sorted).

    The spectrum is computed when the drops are not significantly regular (or always with `with_spectrum`).
    """
    t = np.asarray(t, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    n = len(t)
    d = np.diff(t)
    d = d[d > 0]
    dt = float(interval_s) if interval_s and interval_s > 0 else (float(np.median(d)) if len(d) else math.nan)
    span = float(t[-1] - t[0]) if n else 0.0
    x, lv, smoothed = _levels(x, value_range, min_amplitude, resolution)
    res = SeriesOscillation(n=n, interval_s=dt, span_s=span, levels=lv, smoothed=smoothed)
    if n == 0:
        return res
    if not lv.bimodal:
        res.high_share = float(np.mean(x > lv.threshold)) if np.isfinite(lv.threshold) else math.nan
        return res
    ep, few = _swings(res, t, x, dt)
    if not (with_period and res.swings) or few:
        if few and res.swings:
            res.note = f"{n} samples: too few to estimate a period (needs ≥ {MIN_SAMPLES_PERIOD})"
        return res
    _period(res, t, x, ep, with_spectrum)
    return res


def _levels(x: np.ndarray, value_range: tuple[float, float] | None, min_amplitude: float,
            resolution: float) -> tuple[np.ndarray, Levels, int]:
    """(series, its two levels, moving-median width or 0): the raw series, or a smoothed one when only smoothing
    shows two levels."""
    lv = two_levels(x, value_range, min_amplitude, resolution)
    # (noise only widens a split: a raw amplitude below the floor cannot pass after smoothing either)
    if not lv.bimodal and len(x) >= 10 * SMOOTHING[0] and lv.amplitude >= min_amplitude:
        # very noisy samples can hide two levels that dwell for several samples: a moving median (the denoiser
        # for piecewise-constant signals) cannot make a unimodal distribution bimodal, so it is safe to retry
        for w in SMOOTHING:
            xs = pd.Series(x).rolling(w, center=True, min_periods=1).median().to_numpy()
            lv_s = two_levels(xs, value_range, min_amplitude, resolution)
            if lv_s.bimodal:
                return xs, lv_s, w
    return x, lv, 0


def _swings(res: SeriesOscillation, t: np.ndarray, x: np.ndarray, dt: float):
    """Fill `res`'s transitions, high share, swings, duty cycle, dips and onsets from the high/low episodes of
    a bimodal series; returns (episodes, whether there are too few samples for a period)."""
    n, lv = res.n, res.levels
    state = hysteresis_states(x, lv)
    seg = segments(t, dt if np.isfinite(dt) else 1.0)
    ep = episodes(t, state, seg)
    res.transitions = int(len(ep.state) - (ep.segment[-1] + 1 if len(ep.state) else 0))
    dur = ep.duration
    # the busy span: first high episode to last; idle time before and after (start-up, teardown) is not a swing
    high_idx = np.flatnonzero(ep.state == 1)
    inside = np.zeros(len(ep.state), dtype=bool)
    if len(high_idx):
        inside[high_idx[0]:high_idx[-1] + 1] = True
    total = float(dur[inside].sum())
    few = n < MIN_SAMPLES_PERIOD
    if few:
        # a handful of polls cannot tell start-up / teardown from a swing: every poll counts
        res.high_share = float(np.mean(state))
    else:
        res.high_share = float(dur[inside & (ep.state == 1)].sum() / total) if total > 0 else float(np.mean(state))
    minority = min(res.high_share, 1.0 - res.high_share)
    dips_inside = int((inside & (ep.state == 0)).sum())
    # a swing recurs: at least two drops between busy stretches (one drop is a restart or a single stall)
    res.swings = bool(res.transitions >= 2 and few) or bool(dips_inside >= 2 and minority >= MIN_MINORITY_SHARE)
    interior = ep.interior
    hi_int = interior & (ep.state == 1)
    lo_int = interior & (ep.state == 0)
    # complete cycles: a complete low episode followed by a complete high one in the same segment
    pair = lo_int[:-1] & hi_int[1:] & (ep.segment[:-1] == ep.segment[1:])
    cyc_hi, cyc_lo = dur[1:][pair], dur[:-1][pair]
    cyc = float(cyc_hi.sum() + cyc_lo.sum())
    # the share of complete cycles spent high; without one complete cycle, the share of time high (every poll
    # when there are only a handful, the busy span otherwise)
    res.duty_cycle = float(cyc_hi.sum() / cyc) if cyc > 0 else res.high_share
    res.dips = int(lo_int.sum())
    res.onsets = ep.t_start[(ep.state == 0) & ~ep.first_in_segment]
    in_dip = inside & (ep.state == 0)
    res.dips_s = np.c_[ep.t_start[in_dip], ep.t_end[in_dip]]
    return ep, few


def _period(res: SeriesOscillation, t: np.ndarray, x: np.ndarray, ep, with_spectrum: bool) -> None:
    """Fill `res`'s period (from regular drop intervals, else a significant spectral peak), its p-value and the
    aliasing note, for a series that swings."""
    dt, span, dur = res.interval_s, res.span_s, ep.duration
    hi_int = ep.interior & (ep.state == 1)
    lo_int = ep.interior & (ep.state == 0)
    drop = (ep.state == 0) & ~ep.first_in_segment
    onsets, onset_seg = ep.t_start[drop], ep.segment[drop]
    same = onset_seg[1:] == onset_seg[:-1]
    intervals = np.diff(onsets)[same]
    mean_hi = float(dur[hi_int].mean()) if hi_int.any() else math.nan
    mean_lo = float(dur[lo_int].mean()) if lo_int.any() else math.nan
    res.regularity_p = regularity_p(intervals, mean_hi, mean_lo)
    if len(intervals):
        med = float(np.median(intervals))
        near = intervals[np.abs(intervals - med) <= 0.25 * med]
        res.interval_period_s = float(near.mean()) if len(near) else med
    guard = 2.0 * dt
    regular = res.regularity_p < ALPHA and np.isfinite(res.interval_period_s) and res.interval_period_s >= guard \
        and res.interval_period_s <= span / 2
    spec = spectrum(t, x, dt) if (not regular or with_spectrum) else None
    res.spectrum = spec
    peak = spectral_period(spec) if spec is not None else None
    p_spec = peak.p_value if peak is not None else 1.0
    if peak is not None:
        res.spectral_period_s = peak.period_s
    spectral = peak is not None and p_spec < ALPHA
    if regular:
        res.period_s, res.method = res.interval_period_s, "drop intervals"
    elif spectral:
        period, method = peak.period_s, "spectrum"
        ip = res.interval_period_s
        if np.isfinite(ip) and ip >= guard:
            m = round(ip / period)
            if m >= 2 and abs(ip / period - m) < 0.15:
                period, method = ip, "drop intervals"
        res.period_s, res.method = period, method
    res.periodic = bool((regular or spectral) and np.isfinite(res.period_s) and res.period_s >= guard)
    res.p_value = float(min(res.regularity_p, p_spec))
    if not res.periodic:
        res.period_s = math.nan
    else:
        if with_spectrum:
            res.acf_at_period = lagged_correlation(t, x, res.period_s, dt)
        if res.period_s < 4 * dt:
            res.note = (f"period {res.period_s:.3g} s is within 4 sampling intervals ({dt:.3g} s): sample faster "
                        "to rule out aliasing")
