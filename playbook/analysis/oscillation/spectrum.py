"""Spectrum and period (step 4 of the method in playbook.analysis.oscillation): a Lomb-Scargle periodogram
against its local noise background, the fundamental of its strongest peak, and the regularity test of the
intervals between drops."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from playbook.analysis.oscillation import ALPHA
from playbook.analysis.series import MAX_GRID, binned_means
from playbook.analysis.stats import sidak

MEDIAN_WINDOW_MAX = 401  # ordinates per background median (wider windows are thinned)


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
        return sidak(self.p_single(), self.n_independent)

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
    from scipy.special import gammaln  # imported here: scipy costs a second at start-up

    log_tail = gammaln(m + 1) - gammaln(m - k + 1) + gammaln(m - k + 1 + c) - gammaln(m + 1 + c)
    return np.exp(np.minimum(log_tail, 0.0))


def empty_spectrum(dt: float = math.nan) -> Spectrum:
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
    p = float(sidak(np.array([p_top.min()]), spec.n_independent)[0])
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
        pm = float(sidak(_median_ratio_tail(ratio[km], spec.window[km]), 2 * tested))
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
    y, dt = binned_means(t, x, interval_s)
    k = int(round(lag_s / dt))
    if k <= 0 or k >= len(y) - 2:
        return math.nan
    m = np.isfinite(y)
    y0 = np.where(m, y - np.nanmean(y), 0.0)
    both = m[:-k] & m[k:]
    a, b = y0[:-k][both], y0[k:][both]
    den = math.sqrt(float((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / den) if den > 0 else math.nan
