"""Synchrony (step 6 of the method in playbook.analysis.oscillation): which swinging GPUs go low together,
and which groups avoid each other (anti-phase).

Up to EXACT_MAX swinging GPUs are compared pairwise and grouped by average linkage (scipy's nearest-neighbour
chain: O(G²), the same groups as merging the best pair at a time). Above that, a spread sample of EXACT_MAX GPUs
is grouped so, every other GPU joins the sample group with the highest mean similarity to its members (the
average-linkage criterion, measured on the group's sampled members) when that mean reaches OVERLAP_MIN, and the
GPUs that join none are grouped the same way among themselves: O(G · EXACT_MAX · bins) per round.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from playbook.analysis.oscillation import ALPHA
from playbook.analysis.series import GAP_FACTOR, GpuSeries

OVERLAP_MIN = 0.5
EXACT_MAX = 512  # swinging GPUs grouped by all pairs; a fleet above this is grouped from a sample of this size
BLOCK_CELLS = 1 << 22  # pair matrices are built in row blocks of at most this many cells (bounds memory)


def _z_crit(alpha: float, tests: int) -> float:
    return NormalDist().inv_cdf(1 - alpha / max(tests, 1))


@dataclass
class Synchrony:
    label: str | None
    groups: list[list[int]]
    antiphase: list[tuple[int, int]]


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


def _pair_stats(low_r: np.ndarray, valid_r: np.ndarray, corr_r: np.ndarray, low_c: np.ndarray,
                valid_c: np.ndarray, corr_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(overlap coefficient, z of the phi coefficient) of every row series with every column series.

    low_* / valid_*: float32 0/1 rows over the common grid; corr_*: correlation times in bins."""
    both = valid_r @ valid_c.T
    co = low_r @ low_c.T
    low_i = low_r @ valid_c.T  # [i, j]: i low while j valid
    low_j = valid_r @ low_c.T
    with np.errstate(invalid="ignore", divide="ignore"):
        overlap = np.where(np.minimum(low_i, low_j) > 0, co / np.minimum(low_i, low_j), 0.0)
        pi, pj = low_i / both, low_j / both
        phi = (co / both - pi * pj) / np.sqrt(pi * (1 - pi) * pj * (1 - pj))
        z = phi * np.sqrt(both * _bartlett_factor(corr_r[:, None], corr_c[None, :]))
    return overlap, np.nan_to_num(z)


def _similarity(low: np.ndarray, valid: np.ndarray, corr: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                zc: float) -> np.ndarray:
    """Linkage similarity of GPUs `rows` with GPUs `cols`: the overlap where it is ≥ OVERLAP_MIN and the
    association significant (z ≥ zc), else 0; float32, built in row blocks."""
    out = np.zeros((len(rows), len(cols)), dtype=np.float32)
    step = max(1, BLOCK_CELLS // max(len(cols), 1))
    for a in range(0, len(rows), step):
        r = rows[a:a + step]
        overlap, z = _pair_stats(low[r], valid[r], corr[r], low[cols], valid[cols], corr[cols])
        out[a:a + step] = np.where((z >= zc) & (overlap >= OVERLAP_MIN), overlap, 0.0)
    return out


def synchrony(grid: np.ndarray, corr_bins: np.ndarray, alpha: float = ALPHA,
              exact_max: int | None = None) -> Synchrony:
    """Group rows of a state grid (1/0/-1) by shared low time; see the module docstring.

    corr_bins: each row's correlation time in bins (a random telegraph signal with mean dwell times d_high and
    d_low has autocorrelation exp(-k / tau) with 1 / tau = 1 / d_high + 1 / d_low); it sets the effective
    number of independent samples behind each phi coefficient. exact_max: default EXACT_MAX.
    """
    g = grid.shape[0]
    low = (grid == 0).astype(np.float32)
    valid = (grid >= 0).astype(np.float32)
    corr_bins = np.asarray(corr_bins, dtype=np.float64)
    zc = _z_crit(alpha, g * (g - 1) // 2)  # Bonferroni over every pair, however the pairs are visited
    clusters = _groups(low, valid, corr_bins, zc, max(int(exact_max or EXACT_MAX), 2))
    sizes = [len(c) for c in clusters]
    if g < 2:
        label = None
    elif max(sizes) == 1:
        label = "independent"
    elif sum(s >= 2 for s in sizes) == 1 and max(sizes) >= 0.75 * g:
        label = "synchronized"
    else:
        label = "groups"
    return Synchrony(label, clusters, _antiphase(low, valid, corr_bins, clusters, alpha))


def _groups(low: np.ndarray, valid: np.ndarray, corr: np.ndarray, zc: float, exact_max: int) -> list[list[int]]:
    """Synchrony groups (lists of row numbers, largest first): all pairs up to `exact_max` rows, else rounds of
    a spread sample grouped by all pairs that the other rows join (see the module docstring)."""
    remaining = np.arange(low.shape[0])
    clusters: list[np.ndarray] = []
    while len(remaining):
        pick = np.unique(np.linspace(0, len(remaining) - 1, min(exact_max, len(remaining))).round().astype(int))
        sample = remaining[pick]
        sim = _similarity(low, valid, corr, sample, sample, zc)
        np.fill_diagonal(sim, 1.0)
        found = [sample[c] for c in _average_linkage(sim, OVERLAP_MIN)]
        rest = np.delete(remaining, pick)
        if len(rest):
            member = np.zeros((len(sample), len(found)), dtype=np.float32)
            where = {int(s): i for i, s in enumerate(sample)}
            for k, c in enumerate(found):
                member[[where[int(s)] for s in c], k] = 1.0 / len(c)
            score = _similarity(low, valid, corr, rest, sample, zc) @ member  # mean similarity to each group
            best = score.argmax(1)
            joins = score[np.arange(len(rest)), best] >= OVERLAP_MIN
            found = [np.concatenate([c, rest[joins & (best == k)]]) for k, c in enumerate(found)]
            rest = rest[~joins]
        clusters += found
        remaining = rest
    out = [sorted(int(i) for i in c) for c in clusters]
    return sorted(out, key=lambda c: (-len(c), c[0]))


def _antiphase(low: np.ndarray, valid: np.ndarray, corr: np.ndarray, clusters: list[list[int]],
               alpha: float) -> list[tuple[int, int]]:
    """Pairs (i < j) of groups whose lows avoid each other significantly (z of phi ≤ −z_crit, Bonferroni over
    the pairs of groups); each group is its members' majority state per bin."""
    if len(clusters) < 2:
        return []
    gl = np.stack([(low[c].mean(0) > 0.5) & (valid[c].mean(0) > 0.5) for c in clusters]).astype(np.float32)
    gv = np.stack([valid[c].mean(0) > 0.5 for c in clusters]).astype(np.float32)
    gd = np.array([corr[c].mean() for c in clusters])
    zc = _z_crit(alpha, len(clusters) * (len(clusters) - 1) // 2)
    anti: list[tuple[int, int]] = []
    step = max(1, BLOCK_CELLS // len(clusters))
    for a in range(0, len(clusters), step):
        _, gz = _pair_stats(gl[a:a + step], gv[a:a + step], gd[a:a + step], gl, gv, gd)
        i, j = np.nonzero(gz <= -zc)
        anti += [(int(x) + a, int(y)) for x, y in zip(i, j, strict=True) if y > x + a]
    return sorted(anti)


def _average_linkage(sim: np.ndarray, stop: float) -> list[list[int]]:
    """Agglomerative clustering, average linkage on similarity; merge while the best pair's mean ≥ `stop`.

    scipy's nearest-neighbour chain on the distance 1 − similarity (average linkage is reducible, so the
    hierarchy is the one that merging the best pair each time builds), cut at 1 − `stop`."""
    n = sim.shape[0]
    if n < 2:
        return [[i] for i in range(n)]
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    dist = 1.0 - np.clip(sim.astype(np.float64), 0.0, 1.0)
    dist = (dist + dist.T) / 2
    np.fill_diagonal(dist, 0.0)
    label = fcluster(linkage(squareform(dist, checks=False), method="average"), t=1.0 - stop + 1e-9,
                     criterion="distance")
    order = np.argsort(label, kind="stable")
    cuts = np.flatnonzero(np.diff(label[order])) + 1
    out = [sorted(int(i) for i in part) for part in np.split(order, cuts)]
    return sorted(out, key=lambda c: (-len(c), c[0]))


def correlation_bins(grid: np.ndarray) -> np.ndarray:
    """Correlation time (bins) of each row of a state grid (1/0/-1) read as a random telegraph signal; the
    unknown bins (-1) are skipped, as if the row's known states were consecutive."""
    grid = np.atleast_2d(grid)
    n_rows, n_bins = grid.shape
    known = grid >= 0
    n = known.sum(1)
    last = np.maximum.accumulate(np.where(known, np.arange(n_bins), 0), axis=1)
    filled = np.take_along_axis(grid, last, axis=1)  # the latest known state (-1 before the first)
    prev = filled[:, :-1]
    changes = (known[:, 1:] & (prev >= 0) & (grid[:, 1:] != prev)).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_high = (grid == 1).sum(1) / n
        d_high = p_high * n / (changes / 2 + 0.5)
        d_low = (1 - p_high) * n / (changes / 2 + 0.5)
        tau = d_high * d_low / (d_high + d_low)
    flat = (changes == 0) | (p_high == 0) | (p_high == 1)
    out = np.where(flat, n.astype(np.float64), tau)
    return np.where(n < 2, 1.0, out)


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
