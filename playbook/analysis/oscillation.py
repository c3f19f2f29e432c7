"""Oscillation analysis: does utilization swing between two levels, with what period, duty cycle and synchrony?

Pure functions on the tidy telemetry table (schema.TELEMETRY_COLUMNS); no thresholds tuned to fixtures. Method:

1. Levels. Per GPU, the optimal two-cluster split of its utilization values (Otsu = exact 1-D 2-means on a
   histogram). The split is "bimodal" when the clusters are separated by at least SEPARATION_MIN pooled robust
   standard deviations (IQR/1.349, floored at the counter's resolution) — a unimodal distribution's 2-means split
   never reaches that (Gaussian 2.65, uniform 3.46) — and by at least MIN_AMPLITUDE_PCT points (smaller swings
   are not worth diagnosing). A cluster piled at the counter's bound (100% busy) is censored there: it takes the
   other cluster's spread, so a noisy level pinned at 100% is not mistaken for two.
   When the raw samples are too noisy to split, the same test runs on a moving median of 3, 5, then 9 samples
   (a median filter cannot turn a unimodal distribution bimodal; it only removes noise shorter than its window).
2. States and episodes. Samples are labelled high/low with hysteresis (the middle third between the levels keeps
   the previous state, so noise does not fake transitions). Sampling gaps longer than GAP_FACTOR intervals split
   the series into segments; an episode touching a segment edge is incomplete.
3. Swings. A GPU swings when it is bimodal, drops at least twice between busy stretches (the swing recurs; idle
   time before the first and after the last busy stretch — start-up, teardown — does not count) and its minority
   state holds ≥ 1% of the busy span. A series too short for that (< MIN_SAMPLES_PERIOD samples) swings with
   two transitions.
4. Period. Two tests at ALPHA, either suffices:
   a. spectrum: a Lomb-Scargle periodogram (computed with FFTs, so gaps, jitter and uneven sampling are handled)
      against its local noise background: the median of the surrounding ordinates (±max(4.5/span, 20% of f)),
      which follows any smooth noise spectrum — white, red, the Lorentzian of a random telegraph signal (i.e.
      irregular swings) — while a narrow line stands out. The p-value accounts exactly for the noise in that
      median (order statistics of exponential ordinates) and is Šidák-corrected over the independent frequencies
      searched. The search covers periods from two sampling intervals (the aliasing guard: nothing shorter is
      ever reported) to a third of the span (three cycles at least). The fundamental is the lowest significant
      subharmonic of the strongest peak.
   b. regularity: the coefficient of variation of the intervals between successive drops, against its
      distribution when high and low dwell times are exponential with the observed means (memoryless swings).
   The reported period is the mean interval between drops (within ±25% of their median) when the drops are
   regular, else the spectral fundamental (refined by parabolic interpolation).
5. Duty cycle: the share of complete cycles spent high (episodes weighted by their duration).
6. Synchrony. Swinging GPUs' states on a common grid; two GPUs "go low together" when most of their low time
   coincides (overlap coefficient ≥ 0.5) and the association is significant (phi coefficient; its n deflated by
   the telegraph autocorrelation of both series, Bartlett; Bonferroni over pairs). Average-linkage clustering on that overlap gives the groups;
   a pair of groups whose lows avoid each other significantly (phi < 0) is anti-phase (producer/consumer).

Scales to millions of rows: one vectorised pass per GPU and a G×G matrix product for synchrony.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
import pandas as pd

from playbook import schema

ALPHA = 0.01
SEPARATION_MIN = 4.0
MIN_AMPLITUDE_PCT = 15.0
MIN_MINORITY_SHARE = 0.01
GAP_FACTOR = 3.0
MIN_SAMPLES_PERIOD = 12  # three cycles of four samples: fewer cannot support a period estimate
MAX_GRID = 1 << 18  # bins per series for the FFT path (coarser bins beyond)
OVERLAP_MIN = 0.5
MEDIAN_WINDOW_MAX = 401  # ordinates per background median (wider windows are thinned)
RESOLUTION_PCT = 1.0  # utilization.gpu is reported in whole percent
SMOOTHING = (3, 5, 9)  # moving-median windows (samples) tried when the raw samples are too noisy to split


# ---------------------------------------------------------------------------------------------------------------
# Per-GPU series


@dataclass
class GpuSeries:
    """Telemetry split per GPU: seconds since `t0` and metric arrays, concatenated with `offsets` (G+1)."""

    ids: list[str]
    hosts: list[str]
    index: list[int]
    t0: pd.Timestamp | None
    offsets: np.ndarray
    t: np.ndarray
    values: dict[str, np.ndarray]
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def get(self, g: int, column: str = "util_pct", dropna: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(t_s, x) for GPU number g; NaN values dropped unless `dropna` is False."""
        a, b = self.offsets[g], self.offsets[g + 1]
        t, x = self.t[a:b], self.values[column][a:b]
        if dropna:
            ok = np.isfinite(x)
            if not ok.all():
                return t[ok], x[ok]
        return t, x

    def interval(self, g: int) -> float:
        """Median sampling interval of GPU g in seconds (NaN with < 2 samples)."""
        cache = self.__dict__.setdefault("_intervals", {})
        if g not in cache:
            a, b = self.offsets[g], self.offsets[g + 1]
            dt = np.diff(self.t[a:b])
            dt = dt[dt > 0]
            cache[g] = float(np.median(dt)) if len(dt) else float("nan")
        return cache[g]

    @property
    def span(self) -> tuple[float, float]:
        return (float(self.t.min()), float(self.t.max())) if len(self.t) else (0.0, 0.0)

    def subset(self, gpus: list[int]) -> GpuSeries:
        """The same series restricted to GPU numbers `gpus` (in that order)."""
        parts = [np.arange(self.offsets[g], self.offsets[g + 1]) for g in gpus]
        idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        offsets = np.r_[0, np.cumsum([len(p) for p in parts])].astype(np.int64)
        return GpuSeries([self.ids[g] for g in gpus], [self.hosts[g] for g in gpus], [self.index[g] for g in gpus],
                         self.t0, offsets, self.t[idx], {c: v[idx] for c, v in self.values.items()}, [])

    def time_clusters(self) -> list[list[int]]:
        """GPUs grouped by overlapping time spans (separate recordings), largest group first."""
        spans = []
        for g in range(len(self)):
            a, b = self.offsets[g], self.offsets[g + 1]
            if b > a:
                spans.append((float(self.t[a]), float(self.t[b - 1]), g))
        spans.sort()
        clusters: list[list[int]] = []
        end = -math.inf
        for lo, hi, g in spans:
            tol = GAP_FACTOR * (self.interval(g) if np.isfinite(self.interval(g)) else 1.0)
            if clusters and lo <= end + tol:
                clusters[-1].append(g)
                end = max(end, hi)
            else:
                clusters.append([g])
                end = hi
        empty = [g for g in range(len(self)) if self.offsets[g + 1] == self.offsets[g]]
        if empty:
            (clusters[0] if clusters else clusters.append([]) or clusters[0]).extend(empty)
        return sorted((sorted(c) for c in clusters), key=lambda c: (-len(c), c[0]))


def gpu_series(telemetry: pd.DataFrame, columns: tuple[str, ...] = ("util_pct",),
               interval_s: float | None = None) -> GpuSeries:
    """Split `telemetry` per GPU (id "host:index"), times as float seconds since the first sample.

    Rows without a time are dropped with a warning — unless no row has one, in which case samples are placed
    `interval_s` apart (1 s when not given) in their order within each GPU, also with a warning.
    """
    warnings: list[str] = []
    n = len(telemetry)
    if n == 0:
        return GpuSeries([], [], [], None, np.zeros(1, dtype=np.int64), np.zeros(0),
                         {c: np.zeros(0) for c in columns}, warnings)
    host_codes, host_names = pd.factorize(telemetry["host"].astype(str), sort=True)
    gpu = telemetry["gpu"].to_numpy(dtype=np.int64)
    key = host_codes.astype(np.int64) * (int(gpu.max()) + 2) + (gpu + 1)
    times = telemetry["time"]
    has_time = times.notna().to_numpy()
    t0 = None
    if has_time.any():
        ns = times.dt.as_unit("ns").astype("int64").to_numpy() if has_time.all() else \
            np.where(has_time, times.dt.as_unit("ns").astype("int64").fillna(0).to_numpy(), 0)
        t0_ns = int(ns[has_time].min())
        t0 = pd.Timestamp(t0_ns, unit="ns", tz="UTC")
        t = (ns - t0_ns) / 1e9
        if not has_time.all():
            warnings.append(f"telemetry: {int((~has_time).sum())} of {n} samples have no timestamp and were left "
                            "out of the time analyses")
    else:
        step = interval_s if interval_s and interval_s > 0 else 1.0
        order_in_gpu = pd.Series(np.arange(n)).groupby(key).cumcount().to_numpy()
        t = order_in_gpu * step
        warnings.append(f"telemetry has no timestamps: samples placed {step:g} s apart in file order"
                        + ("" if interval_s else " (pass --interval to set the polling interval)"))
    keep = has_time if (has_time.any() and not has_time.all()) else np.ones(n, dtype=bool)
    in_order = bool(keep.all() and np.all(key[1:] >= key[:-1])
                    and np.all((t[1:] >= t[:-1]) | (key[1:] != key[:-1])))
    if in_order:  # schema.telemetry_frame sorts by host, gpu, time: usually nothing to do
        order = np.arange(n)
    else:
        idx = np.flatnonzero(keep)
        order = idx[np.lexsort((t[idx], key[idx]))]
    key_s, t_s = (key, t) if in_order else (key[order], t[order])
    starts = np.flatnonzero(np.r_[True, key_s[1:] != key_s[:-1]])
    offsets = np.r_[starts, len(order)].astype(np.int64)
    first = order[starts]
    hosts = [str(host_names[host_codes[i]]) for i in first]
    index = [int(gpu[i]) for i in first]
    values = {}
    for c in columns:
        col = telemetry[c].to_numpy(dtype=np.float64, na_value=np.nan) if c in telemetry else np.full(n, np.nan)
        values[c] = col if in_order else col[order]
    return GpuSeries([schema.gpu_id(h, g) for h, g in zip(hosts, index, strict=True)], hosts, index, t0,
                     offsets, np.asarray(t_s, dtype=np.float64), values, warnings)


# ---------------------------------------------------------------------------------------------------------------
# Levels, states, episodes


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


# ---------------------------------------------------------------------------------------------------------------
# Spectrum and period


def _fast_len(n: int) -> int:
    """Smallest 2^a 3^b 5^c ≥ n (FFT-friendly)."""
    best = 1 << max(int(n - 1).bit_length(), 0)
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            v = p35
            while v < n:
                v *= 2
            best = min(best, v)
            p35 *= 3
        p5 *= 5
    return max(best, 1)


def _binned(t: np.ndarray, x: np.ndarray, dt: float) -> tuple[np.ndarray, float]:
    """Means of x on a uniform grid of width dt starting at t[0] (NaN where empty); coarsened to MAX_GRID bins."""
    span = float(t[-1] - t[0]) if len(t) else 0.0
    factor = max(1, int(math.ceil((span / dt + 1) / MAX_GRID)))
    dt = dt * factor
    k = np.floor((t - t[0]) / dt + 0.5).astype(np.int64)
    nb = int(k[-1]) + 1
    s = np.bincount(k, weights=x, minlength=nb)
    c = np.bincount(k, minlength=nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(c > 0, s / np.maximum(c, 1), np.nan)
    return y, dt


@dataclass
class Spectrum:
    """A Lomb-Scargle periodogram (in units of the series variance) with its local noise background.

    `null` is the background level (the running median of nearby ordinates ÷ ln 2, i.e. their mean under the
    null), `window` the number of independent ordinates that median used. Under the null hypothesis (a smooth
    noise spectrum, no narrow line) power / null is Exp(1) up to the noise in the median, which the p-values
    account for exactly. `in_band` marks the frequencies that may be reported (aliasing guard, ≥ 3 cycles).
    """

    freq_hz: np.ndarray
    power: np.ndarray
    null: np.ndarray
    window: np.ndarray
    in_band: np.ndarray
    n_independent: float
    method: str
    interval_s: float
    resolution_hz: float = math.nan  # 1 / span: the width of a spectral line

    @property
    def ratio(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.null > 0, self.power / self.null, 0.0)

    def p_single(self, idx: np.ndarray | None = None) -> np.ndarray:
        """P(one ordinate ≥ its observed ratio) under the null (at positions `idx`, default all)."""
        idx = np.arange(len(self.power)) if idx is None else np.asarray(idx)
        return _median_ratio_tail(self.ratio[idx], self.window[idx])

    def p_values(self) -> np.ndarray:
        """Family-wise p-value of each ordinate (Šidák over the independent frequencies in band)."""
        return _sidak(self.p_single(), self.n_independent)

    def threshold(self, alpha: float = ALPHA) -> np.ndarray:
        """Power an ordinate must exceed to be significant at `alpha` (family-wise over the band)."""
        target = -np.expm1(np.log1p(-alpha) / max(self.n_independent, 1.0))
        sizes, inverse = np.unique(self.window, return_inverse=True)
        lo, hi = np.zeros(len(sizes)), np.full(len(sizes), 1e4)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            above = _median_ratio_tail(mid, sizes) > target
            lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
        return self.null * hi[inverse]

    def frame(self, alpha: float = ALPHA) -> pd.DataFrame:
        safe = np.where(self.freq_hz > 0, self.freq_hz, 1.0)
        period = np.where(self.freq_hz > 0, 1.0 / safe, np.inf)
        return pd.DataFrame({"freq_hz": self.freq_hz, "period_s": period, "power": self.power,
                             "null": self.null, "threshold": self.threshold(alpha), "p_value": self.p_values(),
                             "in_band": self.in_band})


_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _median_ratio_tail(ratio: np.ndarray, window: np.ndarray) -> np.ndarray:
    """P(X ≥ r · M / ln 2) for X ~ Exp(1) and M the median of m independent Exp(1).

    The Rényi representation of order statistics gives E[exp(-c X_(k))] = Π_{i<k} (m - i) / (m - i + c)
    = Γ(m+1) Γ(m-k+1+c) / (Γ(m-k+1) Γ(m+1+c)), with k = (m + 1) / 2 and c = r / ln 2.
    """
    r = np.asarray(ratio, dtype=np.float64)
    m = np.clip(np.asarray(window, dtype=np.int64), 1, MEDIAN_WINDOW_MAX)
    m = (m + (m % 2 == 0)).astype(np.float64)  # odd window: the median is an order statistic
    c = np.clip(r, 0, None) / math.log(2.0)
    m, c = np.broadcast_arrays(m, c)
    if m.size == 0:
        return np.zeros(m.shape)
    k = (m + 1) // 2
    log_tail = _lgamma(m + 1) - _lgamma(m - k + 1) + _lgamma(m - k + 1 + c) - _lgamma(m + 1 + c)
    return np.exp(np.minimum(log_tail, 0.0))


def _sidak(p: np.ndarray, m: float) -> np.ndarray:
    """Family-wise p-value of the smallest of m independent tests."""
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    return -np.expm1(max(m, 1.0) * np.log1p(-np.minimum(p, 1 - 1e-16)))


def _empty_spectrum(dt: float = math.nan) -> Spectrum:
    z = np.zeros(0)
    return Spectrum(z, z, z, z.astype(np.int64), z.astype(bool), 1.0, "", dt)


def spectrum(t: np.ndarray, x: np.ndarray, interval_s: float | None = None,
             min_period_s: float | None = None, max_period_s: float | None = None) -> Spectrum | None:
    """Lomb-Scargle periodogram of (t, x) computed with FFTs (Press & Rybicki), and its local noise background.

    Samples are placed on a grid of the sampling interval (a quarter of it when sampling is uneven: interval CV >
    0.1) and summed per cell — gaps and jitter are handled exactly up to that timing resolution — and the sums
    Lomb-Scargle needs come from two FFTs (values and sampling pattern), zero-padded 2× in frequency. The
    background at each frequency is the median of the ordinates within ±max(4.5 / span, 20% of f) — at least nine
    independent ordinates — so any smooth noise spectrum (white, red, a random telegraph's Lorentzian) is
    followed while a narrow line stands out. The band: periods ≥ max(2 × interval, min_period_s) — the aliasing
    guard — and ≤ min(span / 3, max_period_s). None when the band is empty or there are fewer than 4 samples.
    """
    t = np.asarray(t, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(t)
    t, x = t[ok], x[ok]
    if len(t) < 4:
        return None
    d = np.diff(t)
    d = d[d > 0]
    if len(d) == 0:
        return None
    dt = float(interval_s) if interval_s and interval_s > 0 else float(np.median(d))
    span = float(t[-1] - t[0])
    p_min = max(2.0 * dt, min_period_s or 0.0)
    p_max = min(span / 3.0, max_period_s or math.inf)
    if not p_max > p_min:
        return None
    uneven = float(np.std(d) / np.mean(d)) > 0.1
    gdt = dt / 4.0 if uneven else dt
    n_grid = int(span / gdt) + 1
    if n_grid > 4 * MAX_GRID:
        gdt *= math.ceil(n_grid / (4 * MAX_GRID))
        n_grid = int(span / gdt) + 1
    y = x - x.mean()
    var = float(y.var())
    if not var > 0:
        return None
    k = np.floor((t - t[0]) / gdt + 0.5).astype(np.int64)
    nfft = _fast_len(2 * n_grid)
    yf = np.fft.rfft(np.bincount(k, weights=y, minlength=nfft))
    mf = np.fft.rfft(np.bincount(k, minlength=nfft).astype(np.float64))
    freq = np.fft.rfftfreq(nfft, gdt)
    f_hi = min(1.0 / p_min, 1.0 / (2.0 * gdt))
    top = int(np.searchsorted(freq, f_hi, side="right"))
    idx = np.arange(1, min(max(top, 2), len(freq)))
    if len(idx) < 3:
        return None
    j = (2 * idx) % nfft  # the 2ω terms, folded back into the rfft range (M(fs - f) = conj M(f))
    fold = j > nfft // 2
    m2 = np.where(fold, np.conj(mf[np.where(fold, nfft - j, 0)]), mf[np.where(fold, 0, j)])
    yc, ysn = yf.real[idx], -yf.imag[idx]
    c2, s2 = m2.real, -m2.imag
    h = np.hypot(c2, s2)
    wt = 0.5 * np.arctan2(s2, c2)
    cw, sw = np.cos(wt), np.sin(wt)
    n = float(len(t))
    cc = 0.5 * (n + h)
    ss = 0.5 * (n - h)
    with np.errstate(divide="ignore", invalid="ignore"):
        power = 0.5 * ((yc * cw + ysn * sw) ** 2 / cc + (ysn * cw - yc * sw) ** 2 / ss) / var
    power = np.where((ss > 1e-9 * n) & (cc > 1e-9 * n), power, 0.0)
    f = freq[idx]
    band = (f >= 1.0 / p_max) & (f <= f_hi)
    null, window = _background(f, power, span)
    n_ind = max((f_hi - 1.0 / p_max) * span, 1.0)
    return Spectrum(f, power, null, window, band, n_ind, "lomb-scargle" if uneven else "periodogram", dt,
                    1.0 / span)


def _background(f: np.ndarray, p: np.ndarray, span: float, min_independent: int = 9,
                rel_width: float = 0.2, anchors_per_decade: int = 24,
                max_values: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Running median ÷ ln 2 of p over ±max(min_independent/2 / span, rel_width · f), and the number of
    independent ordinates in each window; evaluated at anchor frequencies and interpolated in log-log."""
    half_abs = 0.5 * min_independent / span
    knee = half_abs / rel_width
    low = f[f <= knee][::2]
    high_anchors = np.geomspace(max(knee, f[0]), f[-1], max(int(np.log10(f[-1] / max(knee, f[0])) *
                                                               anchors_per_decade), 1) + 1) if f[-1] > knee else []
    anchors = np.unique(np.r_[low, high_anchors])
    half = np.maximum(half_abs, rel_width * anchors)
    a = np.searchsorted(f, anchors - half, side="left")
    b = np.searchsorted(f, anchors + half, side="right")
    level = np.empty(len(anchors))
    indep = np.empty(len(anchors))
    max_values = max_values or MEDIAN_WINDOW_MAX
    for i, (lo, hi) in enumerate(zip(a, b, strict=True)):
        step = max(1, (hi - lo) // max_values)
        level[i] = np.median(p[lo:hi:step]) / math.log(2.0)
        indep[i] = min(max((f[hi - 1] - f[lo]) * span, 1.0), len(range(lo, hi, step)))
    level = np.maximum(level, 1e-12)
    if len(anchors) == 1:
        return np.full(len(f), level[0]), np.full(len(f), int(indep[0]))
    null = np.exp(np.interp(np.log(f), np.log(anchors), np.log(level)))
    window = np.interp(np.log(f), np.log(anchors), indep).astype(np.int64)
    return null, np.maximum(window, 1)


@dataclass
class SpectralPeak:
    period_s: float
    p_value: float
    ratio: float
    harmonic: int  # the strongest peak was this harmonic of the reported fundamental


def spectral_period(spec: Spectrum, alpha: float = ALPHA, max_harmonic: int = 20,
                    candidates: int = 32) -> SpectralPeak | None:
    """The most significant in-band peak and its fundamental (lowest significant subharmonic), or None."""
    idx = np.flatnonzero(spec.in_band & (spec.freq_hz > 0))
    if len(idx) == 0:
        return None
    ratio = spec.ratio
    top = idx[np.argpartition(ratio[idx], -candidates)[-candidates:]] if len(idx) > candidates else idx
    p_top = _median_ratio_tail(ratio[top], spec.window[top])
    k = int(top[np.argmin(p_top)])
    p = float(_sidak(np.array([p_top.min()]), spec.n_independent)[0])
    f_peak = spec.freq_hz[k]
    df = spec.resolution_hz if np.isfinite(spec.resolution_hz) else f_peak
    f_lo = spec.freq_hz[idx[0]]
    best_k = k
    tested = max(min(max_harmonic, int(f_peak / max(f_lo, 1e-300))) - 1, 1)
    band_f = spec.freq_hz[idx]
    for m in range(2, max_harmonic + 1):
        fm = f_peak / m
        if fm < f_lo - df:
            break
        a, b = np.searchsorted(band_f, [fm - df, fm + df], side="left")
        win = idx[a:max(b, a)]
        if len(win) == 0:
            continue
        km = int(win[np.argmax(ratio[win])])
        pm = float(_sidak(_median_ratio_tail(ratio[km], spec.window[km]), 2 * tested))
        if pm < alpha:
            best_k = km
    period = 1.0 / _refine_peak(spec.freq_hz, spec.power, best_k)
    return SpectralPeak(period, p, float(ratio[k]), int(round(f_peak * period)))


def _refine_peak(freq: np.ndarray, power: np.ndarray, k: int) -> float:
    """Parabolic interpolation of log power around bin k."""
    if 0 < k < len(freq) - 1 and power[k - 1] > 0 and power[k] > 0 and power[k + 1] > 0:
        a, b, c = np.log(power[k - 1]), np.log(power[k]), np.log(power[k + 1])
        den = a - 2 * b + c
        if den < 0:
            shift = 0.5 * (a - c) / den
            if abs(shift) <= 1:
                return float(freq[k] + shift * (freq[k + 1] - freq[k]))
    return float(freq[k])


@functools.lru_cache(maxsize=512)
def _null_cv_quantiles(n: int, high_fraction: float, sims: int = 600) -> np.ndarray:
    """Sorted CVs of n cycle lengths when high and low dwell times are exponential (memoryless swings)."""
    rng = np.random.default_rng(12345 + n)
    a = rng.exponential(high_fraction, (sims, n)) + rng.exponential(1.0 - high_fraction, (sims, n))
    return np.sort(a.std(axis=1, ddof=1) / a.mean(axis=1))


def regularity_p(intervals: np.ndarray, mean_high_s: float, mean_low_s: float) -> float:
    """P(cycle lengths at least this regular | memoryless high/low dwell times with the observed means)."""
    n = len(intervals)
    if n < 3 or not (mean_high_s > 0 and mean_low_s > 0):
        return 1.0
    if n > 200:
        intervals = intervals[np.linspace(0, n - 1, 200).astype(int)]
        n = 200
    cv = float(np.std(intervals, ddof=1) / np.mean(intervals))
    hf = round(mean_high_s / (mean_high_s + mean_low_s), 2)
    hf = min(max(hf, 0.01), 0.99)
    null = _null_cv_quantiles(n, hf)
    return float((1 + np.searchsorted(null, cv, side="right")) / (1 + len(null)))


def lagged_correlation(t: np.ndarray, x: np.ndarray, lag_s: float, interval_s: float) -> float:
    """Autocorrelation of x at `lag_s` (binned on `interval_s`, gaps excluded)."""
    y, dt = _binned(t, x, interval_s)
    k = int(round(lag_s / dt))
    if k <= 0 or k >= len(y) - 2:
        return math.nan
    m = np.isfinite(y)
    y0 = np.where(m, y - np.nanmean(y), 0.0)
    both = m[:-k] & m[k:]
    a, b = y0[:-k][both], y0[k:][both]
    den = math.sqrt(float((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / den) if den > 0 else math.nan


# ---------------------------------------------------------------------------------------------------------------
# One series


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
    lv = two_levels(x, value_range, min_amplitude, resolution)
    smoothed = 0
    # (noise only widens a split: a raw amplitude below the floor cannot pass after smoothing either)
    if not lv.bimodal and n >= 10 * SMOOTHING[0] and lv.amplitude >= min_amplitude:
        # very noisy samples can hide two levels that dwell for several samples: a moving median (the denoiser
        # for piecewise-constant signals) cannot make a unimodal distribution bimodal, so it is safe to retry
        for w in SMOOTHING:
            xs = pd.Series(x).rolling(w, center=True, min_periods=1).median().to_numpy()
            lv_s = two_levels(xs, value_range, min_amplitude, resolution)
            if lv_s.bimodal:
                x, lv, smoothed = xs, lv_s, w
                break
    res = SeriesOscillation(n=n, interval_s=dt, span_s=span, levels=lv, smoothed=smoothed)
    if n == 0:
        return res
    if not lv.bimodal:
        res.high_share = float(np.mean(x > lv.threshold)) if np.isfinite(lv.threshold) else math.nan
        return res
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
    drop = (ep.state == 0) & ~ep.first_in_segment
    onsets, onset_seg = ep.t_start[drop], ep.segment[drop]
    res.onsets = onsets
    in_dip = inside & (ep.state == 0)
    res.dips_s = np.c_[ep.t_start[in_dip], ep.t_end[in_dip]]
    if not (with_period and res.swings) or few:
        if few and res.swings:
            res.note = f"{n} samples: too few to estimate a period (needs ≥ {MIN_SAMPLES_PERIOD})"
        return res
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
    return res


# ---------------------------------------------------------------------------------------------------------------
# Synchrony


def _z_crit(alpha: float, tests: int) -> float:
    return NormalDist().inv_cdf(1 - alpha / max(tests, 1))


@dataclass
class Synchrony:
    label: str | None
    groups: list[list[int]]
    antiphase: list[tuple[int, int]]
    overlap: np.ndarray
    phi: np.ndarray


def state_grid(series: GpuSeries, members: list[int], states: dict[int, np.ndarray], dt: float,
               t_start: float, n_bins: int) -> np.ndarray:
    """States (1 high, 0 low, -1 unknown) of `members` on a common grid: the latest sample, if recent enough."""
    centers = t_start + (np.arange(n_bins) + 0.5) * dt
    out = np.full((len(members), n_bins), -1, dtype=np.int8)
    for r, g in enumerate(members):
        t, _ = series.get(g)
        st = states[g]
        if len(t) == 0:
            continue
        ig = series.interval(g)
        limit = GAP_FACTOR * (ig if np.isfinite(ig) else dt)
        k = np.searchsorted(t, centers, side="right") - 1
        ok = (k >= 0) & (centers - t[np.maximum(k, 0)] <= max(limit, dt))
        out[r, ok] = st[k[ok]]
    return out


def _bartlett_factor(tau_a, tau_b):
    """n_eff / n for the correlation of two series with exponential autocorrelations (correlation times in
    bins): 1 / Σ_k ρ_a(k) ρ_b(k) (Bartlett)."""
    q = np.exp(-(1.0 / np.maximum(tau_a, 1e-9) + 1.0 / np.maximum(tau_b, 1e-9)))
    return (1 - q) / (1 + q)


def synchrony(grid: np.ndarray, corr_bins: np.ndarray, alpha: float = ALPHA) -> Synchrony:
    """Group rows of a state grid (1/0/-1) by shared low time; see the module docstring.

    corr_bins: each row's correlation time in bins (a random telegraph signal with mean dwell times d_high and
    d_low has autocorrelation exp(-k / tau) with 1 / tau = 1 / d_high + 1 / d_low); it sets the effective
    number of independent samples behind each phi coefficient.
    """
    g = grid.shape[0]
    low = (grid == 0).astype(np.float32)
    valid = (grid >= 0).astype(np.float32)
    both = valid @ valid.T
    co = low @ low.T
    low_i = low @ valid.T  # [i, j]: i low while j valid
    low_j = low_i.T
    with np.errstate(invalid="ignore", divide="ignore"):
        overlap = np.where(np.minimum(low_i, low_j) > 0, co / np.minimum(low_i, low_j), 0.0)
        pi, pj = low_i / both, low_j / both
        phi = (co / both - pi * pj) / np.sqrt(pi * (1 - pi) * pj * (1 - pj))
        z = phi * np.sqrt(both * _bartlett_factor(corr_bins[:, None], corr_bins[None, :]))
    phi = np.nan_to_num(phi)
    z = np.nan_to_num(z)
    zc = _z_crit(alpha, g * (g - 1) // 2)
    sim = np.where((z >= zc) & (overlap >= OVERLAP_MIN), overlap, 0.0).astype(np.float64)
    np.fill_diagonal(sim, 1.0)
    clusters = _average_linkage(sim, OVERLAP_MIN)
    sizes = [len(c) for c in clusters]
    if g < 2:
        label = None
    elif max(sizes) == 1:
        label = "independent"
    elif sum(s >= 2 for s in sizes) == 1 and max(sizes) >= 0.75 * g:
        label = "synchronized"
    else:
        label = "groups"
    anti: list[tuple[int, int]] = []
    if len(clusters) >= 2:
        gl = np.stack([(low[c].mean(0) > 0.5) & (valid[c].mean(0) > 0.5) for c in clusters]).astype(np.float32)
        gv = np.stack([valid[c].mean(0) > 0.5 for c in clusters]).astype(np.float32)
        gb = gv @ gv.T
        gco = gl @ gl.T
        gli = gl @ gv.T
        gd = np.array([corr_bins[c].mean() for c in clusters])
        with np.errstate(invalid="ignore", divide="ignore"):
            a, b = gli / gb, gli.T / gb
            gphi = (gco / gb - a * b) / np.sqrt(a * (1 - a) * b * (1 - b))
            gz = gphi * np.sqrt(gb * _bartlett_factor(gd[:, None], gd[None, :]))
        gz = np.nan_to_num(gz)
        zc2 = _z_crit(alpha, len(clusters) * (len(clusters) - 1) // 2)
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                if gz[i, j] <= -zc2:
                    anti.append((i, j))
    return Synchrony(label, clusters, anti, overlap, phi)


def _average_linkage(sim: np.ndarray, stop: float) -> list[list[int]]:
    """Agglomerative clustering, average linkage on similarity; merge while the best pair's mean ≥ `stop`."""
    clusters = [[i] for i in range(sim.shape[0])]
    s = sim.astype(np.float64).copy()
    size = np.ones(len(clusters))
    alive = np.ones(len(clusters), dtype=bool)
    np.fill_diagonal(s, -np.inf)
    while alive.sum() > 1:
        masked = np.where(alive[:, None] & alive[None, :], s, -np.inf)
        k = int(np.argmax(masked))
        i, j = divmod(k, s.shape[0])
        if masked[i, j] < stop:
            break
        new = (s[i] * size[i] + s[j] * size[j]) / (size[i] + size[j])
        s[i, :], s[:, i] = new, new
        s[i, i] = -np.inf
        alive[j] = False
        s[j, :], s[:, j] = -np.inf, -np.inf
        size[i] += size[j]
        clusters[i] = clusters[i] + clusters[j]
    out = [sorted(clusters[i]) for i in np.flatnonzero(alive)]
    return sorted(out, key=lambda c: (-len(c), c[0]))


# ---------------------------------------------------------------------------------------------------------------
# The fleet


@dataclass
class OscillationResult:
    """The oscillation verdict for a set of GPUs (or ranks), plus per-series detail for reports."""

    detected: bool = False
    periodic: bool = False
    period_s: float = math.nan
    duty_cycle: float = math.nan
    high_pct: float = math.nan
    low_pct: float = math.nan
    synchrony: str | None = None
    groups: list[list[str]] = field(default_factory=list)
    antiphase: list[tuple[list[str], list[str]]] = field(default_factory=list)
    p_value: float = math.nan
    method: str = ""
    signal: str = "util_pct"
    interval_s: float = math.nan
    lost_fraction: float = 0.0
    swinging: list[str] = field(default_factory=list)
    per_gpu: pd.DataFrame = field(default_factory=pd.DataFrame)
    group_detail: list[SeriesOscillation] = field(default_factory=list)
    reference_onset_s: float = math.nan
    dips_s: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # the main unit's drops (s since t0)
    t0: pd.Timestamp | None = None
    warnings: list[str] = field(default_factory=list)
    few_samples: bool = False  # too few samples per series to test for a period or synchrony
    # when nothing swings: one drop shared by the GPUs (a stall, or one cycle of a swing slower than the recording)
    # {gpus, of, start_s, end_s (s since t0), high_pct, low_pct, lost_fraction}; None otherwise
    single_drop: dict | None = None

    def contract(self) -> dict:
        """The `oscillation` object of the diagnose JSON contract (NaN → None)."""

        def num(v, nd=3):
            return None if v is None or not np.isfinite(v) else round(float(v), nd)

        return {
            "detected": bool(self.detected),
            "periodic": bool(self.periodic),
            "period_s": num(self.period_s, 2) if self.periodic else None,
            "duty_cycle": num(self.duty_cycle, 3) if self.detected else None,
            "high_pct": num(self.high_pct, 1),
            "low_pct": num(self.low_pct, 1) if self.detected else None,
            "synchrony": self.synchrony,
            "groups": [list(g) for g in self.groups],
        }


def _single_drop(per: dict[int, SeriesOscillation], table: pd.DataFrame) -> dict | None:
    """One drop inside the busy span on at least half of the GPUs (and at least one), all overlapping in time.

    A swing needs two drops (analyze_series); a single shared drop is still time lost — a one-off stall, or one
    cycle of a swing slower than the recording. Its lost fraction is computed as for a swing."""
    once = [g for g, so in per.items() if so.levels.bimodal and len(so.dips_s) == 1
            and min(so.high_share, 1.0 - so.high_share) >= MIN_MINORITY_SHARE]
    if not once or 2 * len(once) < len(per):
        return None
    spans = np.array([per[g].dips_s[0] for g in once])
    start, end = float(spans[:, 0].max()), float(spans[:, 1].min())
    if end <= start:  # not all at once: separate one-off events, not a shared stall
        return None
    sub = table.iloc[once]
    amp = ((sub["high_pct"] - sub["low_pct"]) / sub["high_pct"].clip(lower=1)).clip(0, 1)
    return {"gpus": len(once), "of": len(per), "start_s": float(np.median(spans[:, 0])),
            "end_s": float(np.median(spans[:, 1])), "high_pct": float(np.nanmedian(sub["high_pct"])),
            "low_pct": float(np.nanmedian(sub["low_pct"])),
            "lost_fraction": float(((1 - sub["high_share"]) * amp).sum() / len(per))}


def _series_of(series: GpuSeries, g: int, column: str):
    return series.get(g, column)


def analyze_oscillation(telemetry: pd.DataFrame, column: str = "util_pct", interval_s: float | None = None,
                        signal: str | None = None) -> OscillationResult:
    """Levels, swings, period, duty cycle and synchrony of `column` across all GPUs of `telemetry`."""
    series = gpu_series(telemetry, (column,), interval_s=interval_s)
    return analyze_gpu_series(series, column, signal=signal or column)


def analyze_gpu_series(series: GpuSeries, column: str = "util_pct", signal: str | None = None) -> OscillationResult:
    """analyze_oscillation on an already split GpuSeries.

    GPUs whose recordings do not overlap in time (e.g. two runs passed together) are analysed as separate sets;
    the summary is the largest set's, with the other sets' groups appended and a warning."""
    clusters = series.time_clusters()
    if len(clusters) > 1:
        parts = [_analyze_one(series.subset(c), column, signal) for c in clusters]
        main = parts[0]
        main.warnings = list(series.warnings) + [
            f"the inputs cover {len(clusters)} separate time ranges ({', '.join(str(len(c)) for c in clusters)} "
            "GPUs): GPUs are compared only within their own range; the summary is the largest range's"] + \
            [w for p in parts for w in p.warnings if w not in series.warnings]
        main.per_gpu = pd.concat([p.per_gpu for p in parts], ignore_index=True)
        main.swinging = [i for p in parts for i in p.swinging]
        main.groups = [g for p in parts for g in p.groups]
        main.warnings = list(dict.fromkeys(main.warnings))
        return main
    return _analyze_one(series, column, signal)


def _analyze_one(series: GpuSeries, column: str = "util_pct", signal: str | None = None) -> OscillationResult:
    res = OscillationResult(signal=signal or column, t0=series.t0, warnings=list(series.warnings))
    if len(series) == 0:
        res.warnings.append("no telemetry samples: nothing to analyse for oscillation")
        return res
    rows, per, states = [], {}, {}
    for g in range(len(series)):
        t, x = series.get(g, column)
        so = analyze_series(t, x, series.interval(g))
        per[g] = so
        if so.levels.bimodal and len(t):
            states[g] = hysteresis_states(x, so.levels)
        rows.append({
            "id": series.ids[g], "host": series.hosts[g], "gpu": series.index[g], "samples": so.n,
            "interval_s": so.interval_s, "mean_pct": float(np.mean(x)) if len(x) else math.nan,
            "high_pct": so.levels.high, "low_pct": so.levels.low, "separation": so.levels.separation,
            "bimodal": so.levels.bimodal, "transitions": so.transitions, "swings": so.swings, "dips": so.dips,
            "high_share": so.high_share, "duty_cycle": so.duty_cycle if so.swings else math.nan,
            "periodic": so.periodic, "period_s": so.period_s, "p_value": so.p_value, "method": so.method,
            "acf_at_period": so.acf_at_period, "group": -1,
        })
    table = pd.DataFrame(rows)
    intervals = table["interval_s"].to_numpy(dtype=float)
    res.interval_s = float(np.nanmedian(intervals)) if np.isfinite(intervals).any() else math.nan
    swinging = [g for g in range(len(series)) if per[g].swings]
    res.swinging = [series.ids[g] for g in swinging]
    median_n = float(np.median(table["samples"])) if len(table) else 0.0
    few = median_n < MIN_SAMPLES_PERIOD
    res.few_samples = few
    if few:
        res.warnings.append(
            f"only {int(median_n)} sample{'s' if int(median_n) != 1 else ''} per GPU ({'' if not np.isfinite(res.interval_s) else f'{res.interval_s:g} s apart, '}"
            f"{median_n * (res.interval_s if np.isfinite(res.interval_s) else 0):.0f} s): too few to estimate a period "
            f"or synchrony (needs ≥ {MIN_SAMPLES_PERIOD}); reporting levels and which GPUs sit idle or busy only")
    notes = sorted({per[g].note for g in swinging if per[g].note and not few})
    res.warnings += notes[:3]
    res.detected = bool(swinging)
    res.per_gpu = table
    if not swinging:
        busy = table["high_pct"].where(table["bimodal"], table["mean_pct"])
        res.high_pct = float(np.nanmedian(busy)) if busy.notna().any() else math.nan
        if not few:
            res.single_drop = _single_drop(per, table)
        return res
    sub = table.iloc[swinging]
    res.high_pct = float(np.nanmedian(sub["high_pct"]))
    res.low_pct = float(np.nanmedian(sub["low_pct"]))
    res.duty_cycle = float(np.nanmedian(sub["duty_cycle"]))
    amp_loss = ((sub["high_pct"] - sub["low_pct"]) / sub["high_pct"].clip(lower=1)).clip(0, 1)
    res.lost_fraction = float(((1 - sub["high_share"]) * amp_loss).sum() / len(series))
    res.dips_s = max((per[g].dips_s for g in swinging), key=len)
    for g in per:
        per[g].spectrum = None  # keep memory flat: the per-GPU periodograms are not needed any more
    if few or len(swinging) < 2:
        res.groups = [[series.ids[g]] for g in swinging] if not few else []
        res.synchrony = None
        _fleet_period(res, [per[g] for g in swinging])
        return res
    lo, hi = series.span
    dt = max(float(np.nanmedian(intervals[swinging])), 1e-6)
    nb = int((hi - lo) / dt) + 1
    if nb > MAX_GRID:
        dt *= math.ceil(nb / MAX_GRID)
        nb = int((hi - lo) / dt) + 1
    grid = state_grid(series, swinging, states, dt, lo, nb)
    corr = np.array([_correlation_bins(grid[r]) for r in range(len(swinging))])
    sync = synchrony(grid, corr)
    res.synchrony = sync.label
    res.groups = [[series.ids[swinging[r]] for r in c] for c in sync.groups]
    for gi, c in enumerate(sync.groups):
        table.loc[[swinging[r] for r in c], "group"] = gi
    res.antiphase = [(res.groups[i], res.groups[j]) for i, j in sync.antiphase]
    # the dominant group: most members, then most time lost; its mean signal carries the period
    main = sync.groups[0]
    if len(main) >= 2:
        t_mean, x_mean = _group_mean(series, [swinging[r] for r in main], column, dt, lo, nb)
        gso = analyze_series(t_mean, x_mean, dt, min_amplitude=MIN_AMPLITUDE_PCT / 2, with_spectrum=True)
        res.group_detail.append(gso)
        if len(gso.dips_s):
            res.dips_s = gso.dips_s
        member = [per[swinging[r]] for r in main]
        if gso.periodic:
            res.periodic, res.period_s, res.p_value, res.method = True, gso.period_s, gso.p_value, gso.method
            res.reference_onset_s = float(gso.onsets[0]) if len(gso.onsets) else math.nan
        else:
            _fleet_period(res, member)
        res.high_pct = float(np.nanmedian([m.levels.high for m in member]))
        res.low_pct = float(np.nanmedian([m.levels.low for m in member]))
        res.duty_cycle = float(np.nanmedian([m.duty_cycle for m in member]))
    else:
        _fleet_period(res, [per[g] for g in swinging])
    return res


def _fleet_period(res: OscillationResult, members: list[SeriesOscillation]) -> None:
    """Periodic when most members are; the period is the median of theirs."""
    periodic = [m for m in members if m.periodic]
    if members and len(periodic) * 2 > len(members):
        res.periodic = True
        res.period_s = float(np.median([m.period_s for m in periodic]))
        res.p_value = float(np.median([m.p_value for m in periodic]))
        res.method = periodic[0].method
        on = [m.onsets[0] for m in periodic if len(m.onsets)]
        res.reference_onset_s = float(np.median(on)) if on else math.nan
    else:
        res.periodic = False
        res.p_value = float(np.median([m.p_value for m in members])) if members else math.nan


def _correlation_bins(row: np.ndarray) -> float:
    """Correlation time (bins) of a binary state row read as a random telegraph signal."""
    r = row[row >= 0]
    if len(r) < 2:
        return 1.0
    changes = int(np.count_nonzero(r[1:] != r[:-1]))
    p_high = float(np.mean(r == 1))
    if changes == 0 or p_high in (0.0, 1.0):
        return float(len(r))
    d_high = p_high * len(r) / (changes / 2 + 0.5)
    d_low = (1 - p_high) * len(r) / (changes / 2 + 0.5)
    return d_high * d_low / (d_high + d_low)


def _group_mean(series: GpuSeries, members: list[int], column: str, dt: float, t_start: float,
                n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the members' values on the common grid (bins with no member sample dropped)."""
    s = np.zeros(n_bins)
    c = np.zeros(n_bins)
    for g in members:
        t, x = series.get(g, column)
        k = np.clip(np.floor((t - t_start) / dt).astype(np.int64), 0, n_bins - 1)
        s += np.bincount(k, weights=x, minlength=n_bins)
        c += np.bincount(k, minlength=n_bins)
    ok = c > 0
    centers = t_start + (np.arange(n_bins) + 0.5) * dt
    return centers[ok], s[ok] / c[ok]


# ---------------------------------------------------------------------------------------------------------------
# Frames for plots


def period_spectrum(telemetry: pd.DataFrame, column: str = "util_pct", gpus: list[str] | None = None,
                    interval_s: float | None = None) -> pd.DataFrame:
    """Periodogram of the mean of `column` over `gpus` (default all), with its red-noise null and the
    significance threshold: columns freq_hz, period_s, power, null, threshold, p_value, in_band. Empty when the
    series is too short for any period."""
    series = gpu_series(telemetry, (column,), interval_s=interval_s)
    members = [i for i, g in enumerate(series.ids) if gpus is None or g in gpus]
    if not members:
        return _empty_spectrum().frame()
    dt = float(np.nanmedian([series.interval(g) for g in members]))
    lo, hi = series.span
    nb = int((hi - lo) / dt) + 1 if np.isfinite(dt) and dt > 0 else 0
    if nb < 4:
        return _empty_spectrum().frame()
    if nb > MAX_GRID:
        dt *= math.ceil(nb / MAX_GRID)
        nb = int((hi - lo) / dt) + 1
    t, x = _group_mean(series, members, column, dt, lo, nb)
    spec = spectrum(t, x, dt)
    if spec is None:
        return _empty_spectrum(dt).frame()
    frame = spec.frame()
    return frame[frame["freq_hz"] > 0].reset_index(drop=True)


def fold_cycle(telemetry: pd.DataFrame, period_s: float | None = None, column: str = "util_pct",
               bins: int | None = None, gpus: list[str] | None = None,
               reference_s: float | None = None) -> pd.DataFrame:
    """Utilization folded on the oscillation period: columns phase (0-1), time_in_cycle_s, median, q25, q75, n.

    Without `period_s` the period (and the reference: the first drop of the dominant group) comes from
    analyze_oscillation; empty when no period was found. Phase 0 is a drop from high to low (without
    `reference_s`, the steepest fall of the folded median).
    """
    cols = ["phase", "time_in_cycle_s", "median", "q25", "q75", "n"]
    ref = reference_s
    if period_s is None:
        res = analyze_oscillation(telemetry, column)
        if not res.periodic:
            return pd.DataFrame(columns=cols)
        period_s = res.period_s
        ref = res.reference_onset_s if ref is None else ref
    series = gpu_series(telemetry, (column,))
    members = [i for i, g in enumerate(series.ids) if gpus is None or g in gpus]
    if not members or not (period_s and period_s > 0):
        return pd.DataFrame(columns=cols)
    t = np.concatenate([series.get(g, column)[0] for g in members])
    x = np.concatenate([series.get(g, column)[1] for g in members])
    dt = float(np.nanmedian([series.interval(g) for g in members]))
    if bins is None:
        bins = int(np.clip(round(period_s / dt) if np.isfinite(dt) and dt > 0 else 24, 8, 120))
    if ref is None or not np.isfinite(ref):
        # align on the data: fold once, then start the cycle at the steepest drop of the folded median
        k0 = np.minimum((((t / period_s) % 1.0) * bins).astype(np.int64), bins - 1)
        sums = np.bincount(k0, weights=x, minlength=bins)
        counts = np.bincount(k0, minlength=bins)
        prof = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        prof = pd.Series(prof).interpolate(limit_direction="both").to_numpy()
        drop = prof - np.roll(prof, -1)  # fall from bin b to b+1
        ref = (int(np.nanargmax(drop)) + 1) / bins * period_s if np.isfinite(drop).any() else 0.0
    phase = ((t - ref) / period_s) % 1.0
    k = np.minimum((phase * bins).astype(np.int64), bins - 1)
    order = np.lexsort((x, k))
    ks, xs = k[order], x[order]
    starts = np.searchsorted(ks, np.arange(bins))
    ends = np.searchsorted(ks, np.arange(bins), side="right")
    out = []
    for b in range(bins):
        v = xs[starts[b]:ends[b]]
        q = np.percentile(v, [25, 50, 75]) if len(v) else [math.nan] * 3
        out.append(((b + 0.5) / bins, (b + 0.5) / bins * period_s, q[1], q[0], q[2], len(v)))
    return pd.DataFrame(out, columns=cols)


def dips_vs_events(dips_s: np.ndarray, t0: pd.Timestamp | None, events: pd.DataFrame,
                   tolerance_s: float = 0.0) -> list[dict]:
    """For each event kind with timestamps: how many drops overlap an event of that kind (± tolerance), against
    chance — a binomial tail with the per-drop chance = share of the span within reach of such an event. One dict
    per kind: kind, dips, hits, events, chance, p_value (sorted by p)."""
    if events is None or events.empty or t0 is None or len(dips_s) == 0:
        return []
    ev = events[events["time"].notna()]
    if ev.empty:
        return []
    from playbook.analysis.stats import binom_sf

    start = (ev["time"] - t0).dt.total_seconds().to_numpy()
    end = start + ev["duration_s"].fillna(0.0).clip(lower=0).to_numpy()
    span = float(dips_s[:, 1].max() - dips_s[:, 0].min()) or 1.0
    lo, hi = float(dips_s[:, 0].min()), float(dips_s[:, 1].max())
    out = []
    for kind in sorted(set(ev["kind"].astype(str))):
        m = (ev["kind"].astype(str) == kind).to_numpy() & (end >= lo - tolerance_s) & (start <= hi + tolerance_s)
        if not m.any():
            continue
        a, b = start[m] - tolerance_s, end[m] + tolerance_s
        hit = ((a[None, :] <= dips_s[:, 1:2]) & (b[None, :] >= dips_s[:, 0:1])).any(axis=1)
        # chance that a drop of mean length d overlaps one of the events: (event length + d) per event, merged
        d = float(np.mean(dips_s[:, 1] - dips_s[:, 0]))
        chance = min(max(_union_length(a - d, b) / (span + d), 1e-9), 1.0)
        k, n = int(hit.sum()), len(dips_s)
        out.append({"kind": kind, "dips": n, "hits": k, "events": int(m.sum()), "chance": chance,
                    "p_value": binom_sf(k, n, chance) if chance < 1 else 1.0})
    return sorted(out, key=lambda r: r["p_value"])


def _union_length(a: np.ndarray, b: np.ndarray) -> float:
    """Total length of the union of intervals [a_i, b_i] (analysis.kineto's interval merge)."""
    from playbook.analysis.kineto import _merge

    starts, ends = _merge(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    return float((ends - starts).sum())


def host_during_dips(host: pd.DataFrame, dips_s: np.ndarray, t0: pd.Timestamp | None,
                     columns: tuple[str, ...] = ("write_mib_s", "read_mib_s", "cpu_pct", "cpu_max_core_pct",
                                                 "net_rx_mib_s", "net_tx_mib_s")) -> list[dict]:
    """Host-probe metrics during the utilization drops against the busy stretches between them.

    Per metric: the mean during each drop and during each gap between drops; `ratio` = median over drops ÷
    median over gaps, and a sign test (binomial) that drops exceed the median gap more often than half the time.
    One dict per metric with data: metric, during, between, ratio, higher, drops, p_value."""
    if host is None or host.empty or t0 is None or len(dips_s) < 3:
        return []
    h = host[host["time"].notna()]
    if h.empty:
        return []
    from playbook.analysis.stats import binom_sf

    t = (h["time"] - t0).dt.total_seconds().to_numpy()
    order = np.argsort(t)
    t = t[order]
    step = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    # the busy stretches between drops, one host sample clear of each edge
    gaps = np.c_[dips_s[:-1, 1] + step, dips_s[1:, 0] - step]
    gaps = gaps[gaps[:, 1] > gaps[:, 0]]
    out = []
    for col in columns:
        if col not in h:
            continue
        x = h[col].to_numpy(dtype=np.float64)[order]
        ok = np.isfinite(x)
        if ok.sum() < 6:
            continue
        during = _interval_means(t[ok], x[ok], dips_s)
        between = _interval_means(t[ok], x[ok], gaps)
        if len(during) < 3 or len(between) < 3:
            continue
        base = float(np.median(between))
        k = int((during > base).sum())
        out.append({"metric": col, "during": float(np.median(during)), "between": base,
                    "ratio": float(np.median(during) / base) if base > 0 else math.inf,
                    "higher": k, "drops": len(during), "p_value": binom_sf(k, len(during), 0.5)})
    return sorted(out, key=lambda r: r["p_value"])


def _interval_means(t: np.ndarray, x: np.ndarray, intervals: np.ndarray) -> np.ndarray:
    """Mean of x over the samples inside each [start, end] (intervals without samples left out)."""
    cs = np.r_[0.0, np.cumsum(x)]
    a = np.searchsorted(t, intervals[:, 0], side="left")
    b = np.searchsorted(t, intervals[:, 1], side="right")
    n = b - a
    return ((cs[b] - cs[a]) / np.where(n > 0, n, 1))[n > 0]
