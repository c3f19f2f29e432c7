"""Statistics behind `playbook compare` (playbook.analysis.stats): block length, block bootstrap, Cliff's delta,
Student t, per-run log-ratio intervals and bootstrap p-values — checked against known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from playbook.analysis import stats


def _ar1(n: int, phi: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(n)
    x = np.zeros(n)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


def test_block_length_short_for_white_noise_long_for_autocorrelated_series():
    white = stats.optimal_block_length(np.random.default_rng(0).standard_normal(1000))
    red = stats.optimal_block_length(_ar1(1000, 0.8, 1))
    assert white <= 3
    assert red >= 10
    assert stats.optimal_block_length(np.ones(50)) == 1
    assert stats.optimal_block_length(np.arange(5.0)) == 1


def test_block_bootstrap_recovers_the_long_run_standard_error_of_an_ar1_mean():
    n, phi = 4000, 0.7
    x = _ar1(n, phi, 2)
    rng = np.random.default_rng(3)
    block = stats.optimal_block_length(x)
    sums, rows = stats.block_bootstrap_sums(x, block, 2000, rng)
    se = float(np.std(sums[:, 0] / rows))
    theory = 1 / (1 - phi) / math.sqrt(n)  # long-run sd of the mean for unit innovations
    naive = float(np.std(x) / math.sqrt(n))
    assert 0.7 * theory < se < 1.3 * theory
    assert se > 1.5 * naive  # an i.i.d. bootstrap would have said this


def test_block_bootstrap_sums_keep_the_columns_together_and_indices_wrap():
    x = np.column_stack([np.arange(10.0), 2 * np.arange(10.0)])
    sums, rows = stats.block_bootstrap_sums(x, 3, 50, np.random.default_rng(0))
    assert rows == 12 and sums.shape == (50, 2)
    np.testing.assert_allclose(sums[:, 1], 2 * sums[:, 0])
    idx = stats.block_bootstrap_indices(10, 3, 20, np.random.default_rng(0))
    assert idx.shape == (20, 10) and idx.min() >= 0 and idx.max() <= 9
    steps = np.diff(idx[:, :3], axis=1) % 10
    assert (steps == 1).all()  # consecutive within a block, wrapping around


def test_cliffs_delta_matches_the_normal_shift_and_deflates_for_autocorrelation():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(4000), rng.standard_normal(4000) + 1.0
    delta, p = stats.cliffs_delta(a, b)
    expected = 2 * 0.7602499 - 1  # 2·Φ(1/√2) − 1
    assert abs(delta - expected) < 0.03 and p < 1e-10
    d0, p0 = stats.cliffs_delta(rng.standard_normal(40), rng.standard_normal(40) + 0.6)
    _, p_corr = stats.cliffs_delta(rng.standard_normal(40), rng.standard_normal(40) + 0.6, 0.8, 0.8)
    assert p_corr > p0 or math.isnan(p_corr)
    assert stats.cliffs_delta(np.array([]), b)[0] != stats.cliffs_delta(np.array([]), b)[0]  # NaN


@pytest.mark.parametrize(("df", "q975"), [(1, 12.7062), (2, 4.3027), (5, 2.5706), (30, 2.0423), (1000, 1.9623)])
def test_student_t_quantiles(df, q975):
    assert stats.t_quantile(0.975, df) == pytest.approx(q975, rel=1e-3)
    assert stats.t_sf(stats.t_quantile(0.9, df), df) == pytest.approx(0.1, abs=1e-6)


def test_binomial_and_hypergeometric_tails_match_exact_sums():
    assert stats.binom_sf(1, 2, 0.5) == pytest.approx(0.75)
    assert stats.binom_sf(3, 3, 0.5) == pytest.approx(0.125)
    assert stats.binom_sf(0, 5, 0.3) == 1.0 and stats.binom_sf(6, 5, 0.3) == 0.0
    assert stats.binom_sf(2, 5, 0.0) == 0.0 and stats.binom_sf(2, 5, 1.0) == 1.0
    exact = sum(math.comb(10, i) * 0.1 ** i * 0.9 ** (10 - i) for i in range(3, 11))
    assert stats.binom_sf(3, 10, 0.1) == pytest.approx(exact, rel=1e-12)
    assert stats.binom_two_sided(3, 10, 0.5) == pytest.approx(2 * 176 / 1024)  # P(X ≤ 3) = 176/1024, doubled
    # 3 drawn of 10 with 4 marked: P(X ≥ 2) = (C(4,2)·C(6,1) + C(4,3)) / C(10,3) = 40/120
    assert stats.hypergeom_sf(2, 10, 4, 3) == pytest.approx(1 / 3)
    assert stats.hypergeom_sf(0, 10, 4, 3) == 1.0 and stats.hypergeom_sf(4, 10, 4, 3) == 0.0


def test_kolmogorov_tail_and_effective_n():
    # the Kolmogorov series 2·Σ (−1)^(j−1) exp(−2 j² x²): the 5% critical value is 1.358
    assert stats.kolmogorov_sf(1.358) == pytest.approx(0.05, abs=2e-4)
    assert stats.kolmogorov_sf(1.0) == pytest.approx(2 * sum((-1) ** (j - 1) * math.exp(-2 * j * j) for j in range(1, 50)))
    assert stats.kolmogorov_sf(0.01) == pytest.approx(1.0)  # (the truncated series read 0.87 here)
    assert stats.effective_n(100, 0.5) == pytest.approx(100 / 3)
    assert stats.effective_n(100, -0.3) == 100 and stats.effective_n(100, math.nan) == 100
    assert stats.effective_n(10, 0.999, floor=3.0) == 3.0


def test_log_ratio_t_is_wide_with_few_runs_and_tight_with_many():
    few = stats.log_ratio_t(np.array([100.0, 90.0]), np.array([50.0, 55.0]))
    assert few["ratio"] == pytest.approx(math.sqrt(50 * 55) / math.sqrt(100 * 90))
    assert few["ratio_lo"] < few["ratio"] < few["ratio_hi"] < 1
    assert few["df"] == 2
    welch = stats.log_ratio_t(np.array([100.0, 90.0]), np.array([50.0, 55.0]), equal_var=False)
    assert welch["ratio_hi"] - welch["ratio_lo"] > few["ratio_hi"] - few["ratio_lo"]
    same = stats.log_ratio_t(np.array([100.0, 104, 97, 101]), np.array([99.0, 103, 100, 98]))
    assert same["ratio_lo"] < 1 < same["ratio_hi"] and same["p_value"] > 0.05
    assert stats.log_ratio_t(np.array([1.0]), np.array([2.0, 3.0])) is None
    assert stats.log_ratio_t(np.array([1.0, 1.0]), np.array([2.0, 2.0])) is None


def test_bootstrap_p_agrees_with_the_percentile_interval():
    rng = np.random.default_rng(5)
    reps = rng.normal(1.0, 0.5, 4000)
    p = stats.bootstrap_p(1.0, reps)
    assert p == pytest.approx(2 * np.mean(reps <= 0), abs=1e-9)
    far = stats.bootstrap_p(10.0, rng.normal(10.0, 0.5, 2000))
    assert 0 <= far <= 1 / 2000
    assert stats.bootstrap_p(0.0, np.zeros(100)) == 1.0
    assert math.isnan(stats.bootstrap_p(1.0, np.array([1.0, 2.0])))


def test_widened_block_bootstrap_keeps_the_false_alarm_rate_near_nominal():
    """200 pairs of same-distribution AR(1) runs (φ = 0.7, 150 steps): the 95% interval of the mean ratio excludes
    1 for under a tenth of them once widened (nominal 5%: short, strongly autocorrelated runs remain hard), the
    plain block bootstrap for more."""
    rng = np.random.default_rng(7)
    alarms = {"plain": 0, "widened": 0}
    for _ in range(200):
        reps = {}
        for side in ("a", "b"):
            x = np.exp(0.1 * _ar1(150, 0.7, int(rng.integers(1 << 30))) * math.sqrt(1 - 0.49))
            block = stats.optimal_block_length(x)
            sums, rows = stats.block_bootstrap_sums(x, block, 600, rng)
            means = sums[:, 0] / rows
            f = stats.block_bootstrap_widening(x, block)
            reps[side] = (means, x.mean() + f * (means - x.mean()))
        for i, name in enumerate(("plain", "widened")):
            lo, hi = np.percentile(reps["b"][i] / reps["a"][i], [2.5, 97.5])
            alarms[name] += not lo <= 1 <= hi
    assert alarms["widened"] <= 22, alarms  # ≤ 11% (nominal 5%; 9.5% with this seed)
    assert alarms["plain"] > alarms["widened"], alarms
