"""Levels, states and episodes of one series (steps 1-2 of the method in playbook.analysis.oscillation): the
two-level split and its bimodality test, hysteresis states, gap-free segments and runs of equal state."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from playbook.analysis.series import GAP_FACTOR

SEPARATION_MIN = 4.0
MIN_AMPLITUDE_PCT = 15.0
RESOLUTION_PCT = 1.0  # utilization.gpu is reported in whole percent


@dataclass
class Levels:
    """The two-level (2-means) description of a set of values."""

    high: float
    low: float
    threshold: float
    separation: float  # |high - low| / pooled robust sd of the two clusters
    high_share: float  # share of samples above the threshold
    bimodal: bool

    @property
    def amplitude(self) -> float:
        return self.high - self.low


def two_levels(x: np.ndarray, value_range: tuple[float, float] | None = (0.0, 100.0),
               min_amplitude: float = MIN_AMPLITUDE_PCT, resolution: float = RESOLUTION_PCT,
               bins: int = 256) -> Levels:
    """Optimal two-cluster split of `x` (Otsu on a `bins`-bin histogram) and whether it is genuinely bimodal.

    Cluster medians and quartiles come from a 4× finer histogram (0.1 point for utilization)."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return Levels(math.nan, math.nan, math.nan, 0.0, math.nan, False)
    lo, hi = value_range if value_range is not None else (float(x.min()), float(x.max()))
    if not hi > lo:
        hi = lo + 1.0
    fine = 4 * bins
    width = (hi - lo) / fine
    k = np.clip(((x - lo) / width).astype(np.int64), 0, fine - 1)
    fcounts = np.bincount(k, minlength=fine).astype(np.float64)
    counts = fcounts.reshape(bins, 4).sum(1)
    edges = lo + np.arange(bins + 1) * (4 * width)
    centers = 0.5 * (edges[:-1] + edges[1:])
    total = float(len(x))
    w0 = np.cumsum(counts)[:-1]
    w1 = total - w0
    m0 = np.cumsum(counts * centers)[:-1]
    mt = float((counts * centers).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        between = w0 * w1 * (m0 / w0 - (mt - m0) / w1) ** 2
    between = np.where((w0 > 0) & (w1 > 0), between, -1.0)
    if between.max() <= 0:
        v = float(np.median(x))
        return Levels(v, v, v, 0.0, 1.0, False)
    kk = int(np.argmax(between))
    thr = float(edges[kk + 1])
    split = 4 * (kk + 1)
    lower_c, upper_c = fcounts[:split], fcounts[split:]
    n_lo, n_hi = float(lower_c.sum()), float(upper_c.sum())
    if n_lo == 0 or n_hi == 0:
        v = float(np.median(x))
        return Levels(v, v, v, 0.0, 1.0, False)
    q_lo = _hist_quantiles(lower_c, lo, width, (0.25, 0.5, 0.75))
    q_hi = _hist_quantiles(upper_c, lo + split * width, width, (0.25, 0.5, 0.75))
    floor = max(resolution, 4 * width)
    s_hi = max((q_hi[2] - q_hi[0]) / 1.349, floor)
    s_lo = max((q_lo[2] - q_lo[0]) / 1.349, floor)
    # a counter pinned at its bound (a busy GPU reads 100% most polls) censors the cluster there: its IQR is cut
    # short and says nothing of the spread, so a noisy unimodal level would look like a tight cluster far from
    # its own tail. When one cluster is piled at a bound (its quartile sits in the end bin), it borrows the other's
    # spread; when both are (a 0 ↔ 100% swing), the split is plainly two levels and the floors stand.
    if value_range is not None:
        at_top, at_bottom = q_hi[2] >= hi - width, q_lo[0] <= lo + width
        if at_top and not at_bottom:
            s_hi = max(s_hi, s_lo)
        elif at_bottom and not at_top:
            s_lo = max(s_lo, s_hi)
    amp = float(q_hi[1] - q_lo[1])
    sep = amp / math.sqrt((s_hi ** 2 + s_lo ** 2) / 2)
    bimodal = bool(sep >= SEPARATION_MIN and amp >= min_amplitude and min(n_lo, n_hi) >= 2)
    return Levels(float(q_hi[1]), float(q_lo[1]), thr, float(sep), n_hi / total, bimodal)


def _hist_quantiles(counts: np.ndarray, start: float, width: float, qs: tuple[float, ...]) -> list[float]:
    """Quantiles of values binned in `counts` (bins of `width` from `start`): the centre of the bin where the
    cumulative count reaches q·n (resolution: half a bin)."""
    cum = np.cumsum(counts)
    idx = np.minimum(np.searchsorted(cum, np.asarray(qs) * cum[-1], side="left"), len(counts) - 1)
    return [float(start + (i + 0.5) * width) for i in idx]


def hysteresis_states(x: np.ndarray, levels: Levels) -> np.ndarray:
    """1 = high, 0 = low; values in the middle third between the levels keep the previous state."""
    third = (levels.high - levels.low) / 3.0
    decided = np.where(x >= levels.high - third, 1, np.where(x <= levels.low + third, 0, -1)).astype(np.int8)
    pos = np.where(decided >= 0, np.arange(len(x)), -1)
    pos = np.maximum.accumulate(pos) if len(pos) else pos
    first = np.flatnonzero(decided >= 0)
    if len(first) == 0:
        return (x > levels.threshold).astype(np.int8)
    pos = np.where(pos < 0, first[0], pos)
    return decided[pos]


@dataclass
class Episodes:
    """Runs of equal state within gap-free segments; times are boundaries halfway between samples."""

    state: np.ndarray
    start: np.ndarray  # first sample index
    stop: np.ndarray  # last sample index (inclusive)
    t_start: np.ndarray
    t_end: np.ndarray
    segment: np.ndarray
    first_in_segment: np.ndarray
    last_in_segment: np.ndarray

    @property
    def duration(self) -> np.ndarray:
        return self.t_end - self.t_start

    @property
    def interior(self) -> np.ndarray:
        return ~(self.first_in_segment | self.last_in_segment)


def segments(t: np.ndarray, interval_s: float, gap_factor: float = GAP_FACTOR) -> np.ndarray:
    """Segment number of each sample: a new segment starts after a gap > gap_factor × interval."""
    if len(t) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.r_[0, np.cumsum(np.diff(t) > gap_factor * interval_s)].astype(np.int64)


def episodes(t: np.ndarray, state: np.ndarray, seg: np.ndarray) -> Episodes:
    """Runs of equal `state` that never cross a segment boundary."""
    n = len(t)
    if n == 0:
        e = np.zeros(0, dtype=np.int64)
        return Episodes(e, e, e, e.astype(float), e.astype(float), e, e.astype(bool), e.astype(bool))
    change = np.r_[True, (state[1:] != state[:-1]) | (seg[1:] != seg[:-1])]
    start = np.flatnonzero(change)
    stop = np.r_[start[1:] - 1, n - 1]
    mid = np.r_[t[0], 0.5 * (t[1:] + t[:-1]), t[-1]]  # boundary before sample i is mid[i]
    seg_start = np.r_[True, seg[1:] != seg[:-1]]
    seg_end = np.r_[seg[1:] != seg[:-1], True]
    t_start = np.where(seg_start[start], t[start], mid[start])
    t_end = np.where(seg_end[stop], t[stop], mid[stop + 1])
    return Episodes(state[start], start, stop, t_start, t_end, seg[start], seg_start[start], seg_end[stop])
