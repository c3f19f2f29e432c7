"""Synchrony (step 6 of the method in playbook.analysis.oscillation): which swinging GPUs go low together,
and which groups avoid each other (anti-phase)."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from playbook.analysis.oscillation import ALPHA
from playbook.analysis.series import GAP_FACTOR, GpuSeries

OVERLAP_MIN = 0.5


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


def correlation_bins(row: np.ndarray) -> float:
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


STAGGER_PERIOD_TOL = 0.1  # the GPUs share one period within 10%


def staggered(dips: list[np.ndarray], periods: list[float], alpha: float = ALPHA) -> dict | None:
    """Pipeline bubbles: GPUs that swing with one period but each dips at its own phase, the phases stepping in
    order of the GPUs (stage k lags stage k-1 by a fixed share of the period). Each GPU's phase is the circular
    mean of its dip starts modulo the period; the residual phase_k − k·step, for the best of the steps ±1/G, is
    tested for concentration with the Rayleigh test (P(R ≥ r) ≈ exp(−G r²) for G independent uniform phases),
    Bonferroni over the two directions. Returns {period_s, step (share of a period), p_value, gpus} or None."""
    g = len(dips)
    ok = [i for i in range(g) if len(dips[i]) >= 2 and np.isfinite(periods[i])]
    if len(ok) < 3:
        return None
    period = float(np.median([periods[i] for i in ok]))
    if period <= 0 or any(abs(periods[i] - period) > STAGGER_PERIOD_TOL * period for i in ok):
        return None
    phase = np.array([np.angle(np.exp(2j * np.pi * (dips[i][:, 0] % period) / period).mean()) for i in ok])
    spread = np.abs(np.exp(1j * phase).mean())  # phases bunched together: synchronized, not staggered
    best = None
    for sign in (1.0, -1.0):
        step = sign * 2 * np.pi / len(ok)
        r = float(np.abs(np.exp(1j * (phase - step * np.arange(len(ok)))).mean()))
        p = min(1.0, 2 * float(np.exp(-len(ok) * r * r)))
        if best is None or p < best["p_value"]:
            best = {"period_s": period, "step": sign / len(ok), "p_value": p, "gpus": ok, "spread": float(spread)}
    if best["p_value"] >= alpha or best["spread"] > 0.5:
        return None
    return best
