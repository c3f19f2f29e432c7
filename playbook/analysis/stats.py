"""Statistics, one definition each: Student-t and binomial tails (scipy.stats), lag-1 autocorrelation, Cliff's
delta, paired and circular block bootstraps, log-ratio t intervals.

scipy is imported inside the functions: `import scipy.stats` costs about a second, which a CLI start or a probe
that never reaches a test should not pay.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np
import pandas as pd


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom (df may be fractional, e.g. Welch's)."""
    from scipy import stats

    return float(stats.t.sf(t, df))


def t_quantile(q: float, df: float) -> float:
    """The q-quantile of Student's t."""
    from scipy import stats

    return float(stats.t.ppf(q, df))


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X ≥ k), X ~ Binomial(n, p) (1 for k ≤ 0, 0 for k > n)."""
    from scipy import stats

    return float(stats.binom.sf(int(k) - 1, int(n), float(p)))


def binom_two_sided(k: int, n: int, p: float) -> float:
    """Exact two-sided binomial test of k successes in n at rate p (doubling the smaller tail); NaN for n ≤ 0."""
    if n <= 0:
        return math.nan
    return float(min(1.0, 2 * min(binom_sf(k, n, p), 1.0 - binom_sf(k + 1, n, p))))


def hypergeom_sf(k: int, total: int, marked: int, drawn: int) -> float:
    """P(X ≥ k) when `drawn` items are taken without replacement from `total` of which `marked` are marked."""
    from scipy import stats

    return float(stats.hypergeom.sf(int(k) - 1, int(total), int(marked), int(drawn)))


def lag1(x: np.ndarray) -> float:
    """Lag-1 autocorrelation of the finite values of `x` (0 for a constant or too short series)."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if len(x) < 3 or np.std(x[:-1]) == 0 or np.std(x[1:]) == 0:
        return 0.0
    r = float(np.corrcoef(x[:-1], x[1:])[0, 1])
    return r if np.isfinite(r) else 0.0


def kolmogorov_sf(x: float) -> float:
    """P(K > x) for the Kolmogorov distribution (the limit of √n · the KS statistic; also of a CUSUM's maximum)."""
    from scipy import special

    return float(special.kolmogorov(x))


def few_runs_p(marks: np.ndarray) -> float:
    """One-sided p of as few runs (maximal blocks of equal values) in a boolean sequence as observed, if the True
    values were placed at random (Wald-Wolfowitz runs test, normal approximation); 1.0 when one kind is absent."""
    marks = np.asarray(marks, dtype=bool)
    m, n1 = len(marks), int(marks.sum())
    n2 = m - n1
    if n1 == 0 or n2 == 0 or m < 2:
        return 1.0
    runs = 1 + int(np.count_nonzero(marks[1:] != marks[:-1]))
    mean = 1.0 + 2.0 * n1 * n2 / m
    var = 2.0 * n1 * n2 * (2.0 * n1 * n2 - m) / (m * m * (m - 1))
    if var <= 0:
        return 1.0
    return 0.5 * math.erfc(-((runs - mean) / math.sqrt(var)) / math.sqrt(2.0))


def effective_n(n: float, r1: float, floor: float = 1.0) -> float:
    """n·(1 − r1)/(1 + r1): the number of independent values n values with lag-1 autocorrelation r1 are worth
    (r1 read as 0 when NaN, clipped to [0, 0.99]; at least `floor`)."""
    r1 = min(max(r1 if np.isfinite(r1) else 0.0, 0.0), 0.99)
    return max(n * (1 - r1) / (1 + r1), floor)


def sidak(p: np.ndarray | float, m: float) -> np.ndarray:
    """Family-wise p-value of the smallest of m independent tests with p-value(s) `p`: 1 − (1 − p)^m (Šidák)."""
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    return -np.expm1(max(m, 1.0) * np.log1p(-np.minimum(p, 1 - 1e-16)))


def sign_test(d: np.ndarray) -> tuple[float | None, float]:
    """One-sided sign-test p-value that the differences lean the way their mean does, and n_eff.

    n_eff deflates the number of non-zero differences by their lag-1 autocorrelation. With n_eff ≥ 5 the normal
    approximation on n_eff is used; below that the exact binomial tail on the raw count (which then overstates
    the evidence: the caller treats it as untested)."""
    nz = d[d != 0]
    n = len(nz)
    if n == 0:
        return None, 0.0
    rho = max(lag1(np.sign(nz)), 0.0)
    n_eff = n * (1 - rho) / (1 + rho)
    k = int((nz < 0).sum()) if d.mean() < 0 else int((nz > 0).sum())
    if n_eff < 5:
        return binom_sf(k, n, 0.5), n_eff
    z = (k - n / 2) / math.sqrt(n / 4) * math.sqrt(n_eff / n)
    return float(1 - NormalDist().cdf(z)), n_eff


def sign_tests(d: np.ndarray, keep: np.ndarray) -> dict[str, np.ndarray]:
    """sign_test of every row of `d` (G × n differences) over its `keep` entries at once: p (object, None where
    a row has no non-zero difference), n_eff, and per row the mean, the counts below / above zero and kept.

    Each row's non-zero signs, in order, form one run of a flat int8 array; the lag-1 autocorrelation of a row
    pairs each sign with the next one of its run (sums of ±1 per run: exact, a few bytes per poll). Rows with
    n_eff < 5 take the exact binomial tail, as sign_test does."""
    g_count = d.shape[0]
    kept = keep.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(kept > 0, np.add.reduce(d, axis=1, where=keep, initial=0.0) / np.maximum(kept, 1), np.nan)
    nz = keep & (d != 0)
    above = (nz & (d > 0)).sum(1)
    n = nz.sum(1)
    below = n - above
    sign = (d > 0)[nz].view(np.int8) * np.int8(2) - np.int8(1)  # ±1, row after row
    rows = np.flatnonzero(n > 0)
    starts = (np.cumsum(n) - n)[rows]
    m = np.zeros(g_count)
    sa, sb, sab = np.zeros(g_count), np.zeros(g_count), np.zeros(g_count)
    if len(rows):
        total = np.add.reduceat(sign, starts, dtype=np.int64)
        first, last = sign[starts], sign[starts + n[rows] - 1]
        pairs = np.r_[sign[1:] * sign[:-1], np.int8(0)]  # pair j: sign j and sign j + 1 (across rows at run ends)
        across = np.r_[pairs[starts[1:] - 1], 0]  # the pair joining a run's last sign to the next run's first
        m[rows] = n[rows] - 1
        sa[rows], sb[rows] = total - last, total - first
        sab[rows] = np.add.reduceat(pairs, starts, dtype=np.int64) - across
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (sab - sa * sb / m) / np.sqrt((m - sa * sa / m) * (m - sb * sb / m))  # Pearson on ±1 values
    constant = (n < 3) | (np.abs(sa) == m) | (np.abs(sb) == m)
    rho = np.maximum(np.where(constant | ~np.isfinite(rho), 0.0, rho), 0.0)
    n_eff = n * (1 - rho) / (1 + rho)
    k = np.where(mean < 0, below, above)
    p = np.full(g_count, None, dtype=object)
    for g in rows:  # scalar tails only
        if n_eff[g] < 5:
            p[g] = binom_sf(int(k[g]), int(n[g]), 0.5)
        else:
            z = (k[g] - n[g] / 2) / math.sqrt(n[g] / 4) * math.sqrt(n_eff[g] / n[g])
            p[g] = float(1 - NormalDist().cdf(z))
    return {"p": p, "n_eff": np.where(n > 0, n_eff, 0.0), "mean": mean, "below": below, "above": above,
            "kept": kept}


REGULARITY_SIMS = 4000  # p resolution 1/4001, well below the ALPHA (0.01) it is compared with
REGULARITY_MAX_GAPS = 400  # beyond it the simulated CVs of 400 gaps are used: narrower spread needs more gaps, so
# the p-value is conservative


def regularity_p(gaps: np.ndarray) -> float:
    """P-value that gaps between events this regular (their coefficient of variation this low) come from events at
    random times: a Poisson process has exponential gaps (CV 1), a cycle with jitter has CV well below 1. From
    REGULARITY_SIMS seeded simulations of as many exponential gaps (deterministic). 1.0 with < 4 gaps."""
    x = np.asarray(gaps, dtype=np.float64)
    if len(x) < 4 or not np.all(x > 0):
        return 1.0
    sims = _exponential_cvs(min(len(x), REGULARITY_MAX_GAPS))
    return float((np.searchsorted(sims, x.std() / x.mean(), side="right") + 1) / (len(sims) + 1))


@functools.cache
def _exponential_cvs(n: int) -> np.ndarray:
    """Sorted coefficients of variation of REGULARITY_SIMS samples of `n` exponential gaps."""
    x = np.random.default_rng(n).exponential(size=(REGULARITY_SIMS, n))
    return np.sort(x.std(axis=1) / x.mean(axis=1))


def wilson_lower(k: int, n: int, z: float = 1.96) -> float:
    """Lower end of the Wilson score interval of a proportion k/n (z = 1.96: the 95% two-sided bound); 0 for n = 0."""
    if n == 0:
        return 0.0
    p = k / n
    den = 1 + z * z / n
    centre = p + z * z / (2 * n)
    return max((centre - z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / den, 0.0)


def paired_bootstrap(a: np.ndarray | pd.Series, b: np.ndarray | pd.Series, stat: str = "ratio", n_boot: int = 2000, seed: int = 0) -> dict[str, float]:
    """Median of a/b (stat "ratio") or a−b ("difference") over paired observations (e.g. the same step of two
    variants on the same data), with a bootstrap 95% interval of that median. NaN pairs are dropped.

    Pairing removes what the two share (the data of the step, the step index); the median and the resampling
    keep a few steps disturbed by other processes from deciding the result.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & ((y > 0) if stat == "ratio" else True)
    x, y = x[ok], y[ok]
    if stat not in ("ratio", "difference"):
        raise ValueError(f"stat must be 'ratio' or 'difference', not {stat!r}")
    if len(x) == 0:
        return {"median": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": 0}
    d = x / y if stat == "ratio" else x - y
    boot = np.median(np.random.default_rng(seed).choice(d, size=(n_boot, len(d))), axis=1)
    return {"median": float(np.median(d)), "lo": float(np.percentile(boot, 2.5)),
            "hi": float(np.percentile(boot, 97.5)), "n": int(len(d))}


# ---------------------------------------------------------------------------------------------------------------
# Run-to-run and within-run noise for autocorrelated per-step series (used by `playbook compare`).
#
# Step times are not independent: a slow phase of the machine, a periodic stall or a warm-up trend make
# neighbouring steps alike, so an i.i.d. bootstrap (or a plain Mann-Whitney test) understates the noise. The
# circular block bootstrap (Politis & Romano 1992) resamples blocks of consecutive steps; its block length is
# chosen from the data by the Politis & White (2004) rule with the Patton, Politis & White (2009) correction.
# With several runs per side, runs are resampled first (hierarchical bootstrap), so run-to-run variance enters the
# interval too.


def _flat_top(t: np.ndarray) -> np.ndarray:
    """The flat-top lag window of Politis & Romano: 1 up to |t| = 1/2, then linearly down to 0 at |t| = 1."""
    a = np.abs(t)
    return np.where(a <= 0.5, 1.0, np.where(a <= 1.0, 2.0 * (1.0 - a), 0.0))


def optimal_block_length(x: np.ndarray) -> int:
    """Circular-block-bootstrap block length for the mean of series `x` (Politis-White 2004, Patton et al. 2009).

    1 for an uncorrelated series; longer when neighbouring values are alike. Capped at min(3·√n, n/3).
    """
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = len(x)
    if n < 8 or np.std(x) == 0:
        return 1
    x = x - x.mean()
    kn = max(5, int(math.ceil(math.sqrt(math.log10(n)))))
    m_max = int(math.ceil(math.sqrt(n))) + kn
    b_max = int(math.ceil(min(3 * math.sqrt(n), n / 3)))
    m_max = min(m_max, n - 1)
    f = np.fft.rfft(x, 2 * n)
    acov = np.fft.irfft(f * np.conj(f))[: m_max + 1] / n
    rho = acov / acov[0]
    crit = 2.0 * math.sqrt(math.log10(n) / n)
    insignificant = np.abs(rho[1:]) < crit  # lag k at index k-1
    m_hat = m_max
    for m in range(0, m_max - kn + 1):
        if insignificant[m:m + kn].all():
            m_hat = m
            break
    big_m = min(2 * max(m_hat, 1), m_max)
    k = np.arange(-big_m, big_m + 1)
    lam = _flat_top(k / big_m)
    r = acov[np.abs(k)]
    g = float(np.sum(lam * np.abs(k) * r))
    s0 = float(np.sum(lam * r))
    if s0 <= 0 or g == 0:
        return 1
    d_cb = 4.0 / 3.0 * s0 ** 2
    b = (2.0 * g ** 2 / d_cb) ** (1 / 3) * n ** (1 / 3)
    return int(min(max(round(b), 1), max(b_max, 1)))


def block_bootstrap_sums(x: np.ndarray, block: int, n_boot: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Column sums of `n_boot` circular block bootstrap resamples of the rows of `x` (n × m).

    Each resample strings together ceil(n / block) blocks of `block` consecutive rows (wrapping around), so it
    holds n' = blocks × block rows; returns (sums: n_boot × m, n'). Computed as (draw counts per block) @ (block
    sums): O(n_boot × n × m) multiply-adds in BLAS, memory bounded by chunks of replicates.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    n = len(x)
    block = int(min(max(block, 1), n))
    blocks = int(math.ceil(n / block))
    ext = np.vstack([x, x[: block - 1]]) if block > 1 else x
    csum = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(ext, axis=0)])
    block_sums = csum[block: block + n] - csum[:n]  # row i: sum of rows i .. i+block-1 (circular)
    out = np.empty((n_boot, x.shape[1]))
    chunk = max(1, int(4e6 // max(n, blocks)))  # bounded memory for long runs
    for a in range(0, n_boot, chunk):
        c = min(a + chunk, n_boot) - a
        starts = rng.integers(0, n, size=(c, blocks)) + (np.arange(c) * n)[:, None]
        counts = np.bincount(starts.ravel(), minlength=c * n).reshape(c, n).astype(np.float64)
        out[a:a + c] = counts @ block_sums  # how often each block was drawn, times its sums
    return out, blocks * block


def block_bootstrap_indices(n: int, block: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Row indices (n_boot × n) of circular block bootstrap resamples, for statistics that are not sums."""
    block = int(min(max(block, 1), n))
    blocks = int(math.ceil(n / block))
    starts = rng.integers(0, n, size=(n_boot, blocks))
    idx = (starts[:, :, None] + np.arange(block)[None, None, :]) % n
    return idx.reshape(n_boot, -1)[:, :n]


def bootstrap_p(estimate: float, replicates: np.ndarray, null: float = 0.0) -> float:
    """Two-sided bootstrap p-value of `estimate` against `null`: 2 × the share of replicates on the far side of
    `null` (the smallest level at which the percentile interval excludes it). When no replicate reaches `null`,
    the normal approximation on the replicates' spread, capped at 1/B, gives the resolution the count lacks.

    NaN when the replicates carry no spread information (fewer than 3 finite values)."""
    r = np.asarray(replicates, dtype=np.float64)
    r = r[np.isfinite(r)]
    if len(r) < 3 or not np.isfinite(estimate):
        return math.nan
    p = float(min(1.0, 2 * min(np.mean(r <= null), np.mean(r >= null))))
    if p > 0:
        return p
    sd = float(np.std(r, ddof=1))
    if sd == 0:
        return 1.0 if estimate == null else 1.0 / len(r)
    z = abs(estimate - null) / sd
    return float(min(1.0 / len(r), 2 * (1 - NormalDist().cdf(z))))


def cliffs_delta(a: np.ndarray, b: np.ndarray, lag1_a: float = 0.0, lag1_b: float = 0.0) -> tuple[float, float]:
    """Cliff's delta P(b > a) − P(b < a) (−1..1; the Mann-Whitney effect size) and its two-sided p-value.

    The p-value is the Mann-Whitney normal approximation with each sample's size deflated to its effective size
    n·(1 − r1)/(1 + r1) for lag-1 autocorrelation r1 ≥ 0 (autocorrelated steps carry less information)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    na, nb = len(a), len(b)
    if na == 0 or nb == 0:
        return math.nan, math.nan
    ranks = pd.Series(np.concatenate([a, b])).rank().to_numpy()
    u_b = ranks[na:].sum() - nb * (nb + 1) / 2
    delta = float(2 * u_b / (na * nb) - 1)

    ea, eb = effective_n(na, lag1_a), effective_n(nb, lag1_b)
    if ea + eb < 4:
        return delta, math.nan
    sd = math.sqrt((ea + eb + 1) / (3 * ea * eb))
    return delta, float(min(1.0, 2 * (1 - NormalDist().cdf(abs(delta) / sd))))


def log_ratio_t(good: np.ndarray, bad: np.ndarray, level: float = 0.95, equal_var: bool = True) -> dict | None:
    """Ratio of geometric means bad/good over per-run values (e.g. throughputs), with a t interval on the logs:
    the runs are the independent units. equal_var=True (Student, pooled variance, df = n_good + n_bad − 2) assumes
    the run-to-run noise is the same multiplicative size on both sides — true of noise from the machine, and the
    only usable choice with two or three runs a side, where Welch's df falls toward 1. equal_var=False: Welch.
    None with fewer than two runs on a side or no spread at all."""
    lg = np.log(np.asarray(good, dtype=np.float64))
    lb = np.log(np.asarray(bad, dtype=np.float64))
    lg, lb = lg[np.isfinite(lg)], lb[np.isfinite(lb)]
    ng, nb = len(lg), len(lb)
    if ng < 2 or nb < 2:
        return None
    if equal_var:
        pooled = (((ng - 1) * lg.var(ddof=1)) + ((nb - 1) * lb.var(ddof=1))) / (ng + nb - 2)
        se2, df = pooled * (1 / ng + 1 / nb), float(ng + nb - 2)
    else:
        vg, vb = lg.var(ddof=1) / ng, lb.var(ddof=1) / nb
        se2 = vg + vb
        df = se2 ** 2 / ((vg ** 2 / (ng - 1)) + (vb ** 2 / (nb - 1))) if se2 > 0 else math.nan
    if not se2 > 0:
        return None
    diff = float(lb.mean() - lg.mean())
    se = math.sqrt(se2)
    tq = t_quantile(0.5 + level / 2, df)
    return {"ratio": math.exp(diff), "ratio_lo": math.exp(diff - tq * se), "ratio_hi": math.exp(diff + tq * se),
            "p_value": float(min(1.0, 2 * t_sf(abs(diff) / se, df))), "df": float(df)}


def circular_block_variance(x: np.ndarray, block: int) -> float:
    """Exact circular-block-bootstrap variance of the mean of `x` with blocks of `block` (no resampling needed)."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    block = int(min(max(block, 1), n))
    ext = np.r_[x, x[: block - 1]] if block > 1 else x
    csum = np.r_[0.0, np.cumsum(ext)]
    sums = csum[block: block + n] - csum[:n]
    blocks = int(math.ceil(n / block))
    return float(np.var(sums) / (blocks * block ** 2))


def block_variance_inflation(x: np.ndarray, block: int, cap: float = 2.0) -> float:
    """Factor (≥ 1, ≤ cap) by which to widen block-bootstrap deviations of means of `x`.

    The block bootstrap's variance of a mean is biased low by about c/block (Künsch 1989; Lahiri 1999) — badly
    so for short, strongly autocorrelated series. The bias is removed to first order by Richardson extrapolation
    over two block lengths, V ≈ 2·V(2b) − V(b); the factor is √(V / V(b))."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = len(x)
    if n < 8 or 2 * block > n // 2:
        return 1.0
    v1 = circular_block_variance(x, block)
    v2 = circular_block_variance(x, 2 * block)
    if v1 <= 0:
        return 1.0
    return float(min(max(math.sqrt(max(2 * v2 - v1, 0.0) / v1), 1.0), cap))


def block_bootstrap_widening(x: np.ndarray, block: int, level: float = 0.95) -> float:
    """Total factor by which to widen block-bootstrap deviations of a mean of `x` for a `level` interval:
    block_variance_inflation (the variance's bias) × t(df)/z (the variance estimate's own noise), with
    df = 1.5·n/block − 1 — the chi-square degrees of freedom of an overlapping-block (Bartlett) variance estimate,
    whose relative variance is (4/3)·block/n. Calibrated on AR(1) series in tests/analysis/test_regression_stats.py."""
    x = np.asarray(x, dtype=np.float64)
    n = int(np.isfinite(x).sum())
    if n < 4:
        return 1.0
    df = max(1.5 * n / max(block, 1) - 1, 1.0)
    q = 0.5 + level / 2
    return block_variance_inflation(x, block) * t_quantile(q, df) / NormalDist().inv_cdf(q)
