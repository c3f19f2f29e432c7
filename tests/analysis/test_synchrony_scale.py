"""Synchrony at scale (issue 31): the O(G²) linkage and the sampled grouping give today's answers.

The reference below is the former implementation (a greedy average linkage that rescans the G×G matrix on
every merge, O(G³)); the groups, labels and anti-phase pairs must match it on LABELED SYNTHETIC fleets small
enough for it to run, and the sampled path (forced here with a small exact_max) must match the pairwise one."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.analysis.oscillation import fleet
from playbook.analysis.oscillation import synchrony as S
from playbook.analysis.oscillation.fleet import analyze_oscillation
from playbook.labs.synthetic import simulate_telemetry


def _greedy_average_linkage(sim: np.ndarray, stop: float) -> list[list[int]]:
    """The former O(G³) implementation: merge the best pair while its mean similarity ≥ stop."""
    clusters = [[i] for i in range(sim.shape[0])]
    s = sim.astype(np.float64).copy()
    size = np.ones(len(clusters))
    alive = np.ones(len(clusters), dtype=bool)
    np.fill_diagonal(s, -np.inf)
    while alive.sum() > 1:
        masked = np.where(alive[:, None] & alive[None, :], s, -np.inf)
        i, j = divmod(int(np.argmax(masked)), s.shape[0])
        if masked[i, j] < stop:
            break
        new = (s[i] * size[i] + s[j] * size[j]) / (size[i] + size[j])
        s[i, :], s[:, i] = new, new
        s[i, i] = -np.inf
        alive[j] = False
        s[j, :], s[:, j] = -np.inf, -np.inf
        size[i] += size[j]
        clusters[i] = clusters[i] + clusters[j]
    return sorted((sorted(clusters[i]) for i in np.flatnonzero(alive)), key=lambda c: (-len(c), c[0]))


def _correlation_bins_row(row: np.ndarray) -> float:
    """The former per-row correlation time."""
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


@pytest.mark.parametrize("seed", range(6))
def test_linkage_matches_the_greedy_merge(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    block = rng.integers(0, 4, n)  # planted groups plus noise, thresholded like the real similarity
    sim = np.where(block[:, None] == block[None, :], rng.uniform(0.4, 1.0, (n, n)), rng.uniform(0, 0.6, (n, n)))
    sim = np.triu(sim, 1)
    sim = sim + sim.T
    sim = np.where(sim >= S.OVERLAP_MIN, sim, 0.0)
    np.fill_diagonal(sim, 1.0)
    assert S._average_linkage(sim, S.OVERLAP_MIN) == _greedy_average_linkage(sim, S.OVERLAP_MIN)


def test_vectorised_correlation_time_matches_the_row_formula():
    rng = np.random.default_rng(1)
    grid = (rng.random((30, 400)) < 0.7).astype(np.int8)
    grid[:, :5] = -1
    grid[rng.random(grid.shape) < 0.05] = -1
    grid[3] = 1  # never low
    grid[4] = -1  # never known
    grid[5, :] = -1
    grid[5, 7] = 0  # one known bin
    assert S.correlation_bins(grid) == pytest.approx([_correlation_bins_row(r) for r in grid])


FLEETS = [
    ("oscillation", {"hosts": 4, "gpus_per_host": 8, "duration_s": 900.0}),
    ("oscillation", {"hosts": 3, "gpus_per_host": 8, "duration_s": 900.0, "nan_frac": 0.05, "gaps": 2}),
    ("antiphase", {"hosts": 4, "gpus_per_host": 6, "duration_s": 900.0, "noise_pct": 5.0}),
    ("irregular", {"hosts": 3, "gpus_per_host": 8, "duration_s": 1200.0, "seed": 2}),
]


def _captured(monkeypatch, scenario, kw):
    """Run the oscillation analysis on a synthetic fleet; return (result, grid, corr) of its synchrony call."""
    seen = {}
    real = fleet.synchrony

    def spy(grid, corr, *a, **k):
        seen["grid"], seen["corr"] = grid, corr
        return real(grid, corr, *a, **k)

    monkeypatch.setattr(fleet, "synchrony", spy)
    frame, truth = simulate_telemetry(scenario, **kw)
    return analyze_oscillation(frame), seen["grid"], seen["corr"], truth


def _reference(grid, corr):
    """The former synchrony(): groups by the greedy linkage on the full G×G similarity."""
    low, valid = (grid == 0).astype(np.float32), (grid >= 0).astype(np.float32)
    g = len(grid)
    overlap, z = S._pair_stats(low, valid, corr, low, valid, corr)
    zc = S._z_crit(S.ALPHA, g * (g - 1) // 2)
    sim = np.where((z >= zc) & (overlap >= S.OVERLAP_MIN), overlap, 0.0)
    np.fill_diagonal(sim, 1.0)
    return _greedy_average_linkage(sim, S.OVERLAP_MIN)


@pytest.mark.parametrize("scenario,kw", FLEETS, ids=[f"{s}-{k['hosts']}x{k['gpus_per_host']}" for s, k in FLEETS])
def test_pairwise_and_sampled_groups_match_the_former_answer(monkeypatch, scenario, kw):
    res, grid, corr, truth = _captured(monkeypatch, scenario, kw)
    assert len(grid) >= 20
    exact = S.synchrony(grid, corr)
    assert exact.groups == _reference(grid, corr)
    assert exact.label == res.synchrony and exact.label == truth.synchrony
    for small in (4, 7, 16):  # the sampled path: several rounds of a sample plus joiners
        sampled = S.synchrony(grid, corr, exact_max=small)
        assert (sampled.label, sampled.groups, sampled.antiphase) == (exact.label, exact.groups, exact.antiphase)


def test_unrelated_swings_stay_apart_when_sampled():
    rng = np.random.default_rng(5)
    t = np.arange(1800)
    periods = rng.uniform(30, 120, 40)
    grid = (((t[None, :] + rng.uniform(0, 120, (40, 1))) % periods[:, None]) < 0.7 * periods[:, None])
    grid = grid.astype(np.int8)
    corr = S.correlation_bins(grid)
    exact = S.synchrony(grid, corr)
    assert exact.groups == _reference(grid, corr)
    assert max(len(c) for c in exact.groups) <= 4  # only GPUs with near-equal periods and phases pair up
    sampled = S.synchrony(grid, corr, exact_max=8)
    assert (sampled.label, sampled.groups) == (exact.label, exact.groups)


def test_a_small_out_of_phase_host_is_found_in_a_sampled_fleet():
    """64 GPUs low together, one host of 8 low half a cycle later: the sample (8 of 72) holds at most one of
    that host's GPUs, the others join it, and the two groups are anti-phase."""
    t = np.arange(1800)
    main = ((t % 60) < 45).astype(np.int8)
    other = (((t + 30) % 60) < 45).astype(np.int8)
    rng = np.random.default_rng(0)
    grid = np.vstack([np.tile(main, (64, 1)), np.tile(other, (8, 1))])
    grid = np.where(rng.random(grid.shape) < 0.02, 1 - grid, grid).astype(np.int8)
    corr = S.correlation_bins(grid)
    exact = S.synchrony(grid, corr)
    sampled = S.synchrony(grid, corr, exact_max=8)
    assert exact.groups == [list(range(64)), list(range(64, 72))] == sampled.groups
    assert exact.label == sampled.label == "groups"
    assert sampled.antiphase == exact.antiphase


@pytest.mark.parametrize("scenario", ["oscillation", "antiphase", "irregular"])
def test_diagnosis_is_the_same_when_synchrony_is_sampled(monkeypatch, scenario):
    """The whole diagnosis (top cause, synchrony groups, GPU statuses) of a 48-GPU fleet, pairwise against a
    sample of 8 GPUs per round: what a fleet above EXACT_MAX gets."""
    from playbook.diagnosis import diagnose
    from playbook.labs.synthetic import simulate_bundle

    def answer():
        bundle, _ = simulate_bundle(scenario, hosts=6, gpus_per_host=8, duration_s=900.0, seed=4)
        d = diagnose(bundle)
        return d.hypotheses[0]["id"], d.oscillation["synchrony"], d.oscillation["groups"], \
            [(g["id"], g["status"]) for g in d.gpus]

    pairwise = answer()
    monkeypatch.setattr(S, "EXACT_MAX", 8)
    assert answer() == pairwise
    assert pairwise[1] == ("groups" if scenario == "antiphase" else "synchronized")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_percentile_is_numpys_percentile_row_by_row(dtype):
    from playbook.analysis.series import row_percentile, row_quantiles

    rng = np.random.default_rng(7)
    for trial in range(40):
        x = (rng.random((rng.integers(1, 12), rng.integers(1, 200))) * 100).astype(dtype)
        if trial % 2:
            x = np.round(x)  # ties
        keep = rng.random(x.shape) < rng.random()
        keep[0] = False  # a row that keeps nothing
        for q in (0, 5, 25, 50, 90, 95, 100):
            got = row_percentile(x, keep, q)
            ref = [np.percentile(x[r][keep[r]], q) if keep[r].any() else np.nan for r in range(len(x))]
            np.testing.assert_array_equal(got, np.array(ref, dtype=got.dtype))  # the same floats, NaN for NaN
        got = row_quantiles(x, keep, ("median",))[0]
        ref = [np.median(x[r][keep[r]]) if keep[r].any() else np.nan for r in range(len(x))]
        np.testing.assert_array_equal(got, np.array(ref, dtype=got.dtype))


def test_series_quantiles_of_ragged_gpus_match_numpy():
    from playbook.analysis.series import GpuSeries

    rng = np.random.default_rng(2)
    offsets = np.array([0, 5, 5, 12, 40, 41])  # 5, 0, 7, 28 and 1 samples
    v = rng.random(41) * 100
    v[rng.random(41) < 0.2] = np.nan
    s = GpuSeries(list("abcde"), ["h"] * 5, list(range(5)), None, offsets, np.arange(41.0), {"u": v})
    median, p95 = s.quantiles("u", ("median", 95))
    for g in range(5):
        x = s.get(g, "u")[1]
        np.testing.assert_array_equal([median[g], p95[g]],
                                      [np.median(x), np.percentile(x, 95)] if len(x) else [np.nan, np.nan])


def test_row_sign_tests_match_the_one_row_sign_test():
    from playbook.analysis.stats import sign_test, sign_tests

    rng = np.random.default_rng(11)
    for trial in range(30):
        g, n = int(rng.integers(1, 9)), int(rng.integers(1, 300))
        d = np.round(rng.normal(rng.normal(0, 2), 5, (g, n)))  # ties with zero, runs of one sign
        d[:, : int(rng.integers(0, n))] = np.sign(rng.normal(size=1))  # a long constant stretch in some trials
        keep = rng.random((g, n)) < rng.uniform(0.05, 1.0)
        keep[0, :] = trial % 3 != 0  # a row that keeps nothing now and then
        got = sign_tests(d, keep)
        for r in range(g):
            row = d[r, keep[r]]
            p, n_eff = sign_test(row) if len(row) else (None, 0.0)
            assert (got["p"][r] is None) == (p is None)
            if p is not None:
                assert got["p"][r] == pytest.approx(p, rel=1e-9, abs=1e-12)
            assert got["n_eff"][r] == pytest.approx(n_eff, rel=1e-9, abs=1e-12)
            assert (got["below"][r], got["above"][r], got["kept"][r]) == ((row < 0).sum(), (row > 0).sum(), len(row))
            if len(row):
                assert got["mean"][r] == pytest.approx(row.mean(), rel=1e-12)
            else:
                assert np.isnan(got["mean"][r])


def test_grid_means_are_the_bincount_means():
    """Every path of GpuSeries.grid_means (a full grid, one sample per bin, runs of samples per bin, NaN values)
    gives the bin means np.bincount gives."""
    from playbook.analysis.series import GpuSeries

    rng = np.random.default_rng(3)
    cases = ((0.0, 0.0, 1, 50), (0.0, 0.1, 1, 50), (0.0, 0.0, 1, 0), (0.4, 0.0, 1, 0), (0.4, 0.05, 1, 0),
             (0.0, 0.0, 12, 0))  # (time jitter, NaN share, samples per bin, equal lengths or 0 for ragged)
    for jitter, nan_share, per_bin, equal in cases:
        lengths = np.full(5, equal) if equal else rng.integers(40, 60, 5)
        t = np.concatenate([np.sort(np.arange(n) / per_bin + rng.uniform(0, jitter, n)) for n in lengths])
        offsets = np.r_[0, np.cumsum(lengths)]
        x = rng.random(len(t)) * 100
        x[rng.random(len(t)) < nan_share] = np.nan
        s = GpuSeries(list("abcde"), ["h"] * 5, list(range(5)), None, offsets, t, {"u": x})
        n_bins = int(t.max()) + 1
        got = s.grid_means("u", 1.0, 0.0, n_bins)
        g_of = np.repeat(np.arange(5), lengths)
        key = g_of * n_bins + np.clip(t.astype(np.int64), 0, n_bins - 1)
        ok = np.isfinite(x)
        with np.errstate(invalid="ignore", divide="ignore"):
            want = (np.bincount(key[ok], x[ok], 5 * n_bins) / np.bincount(key[ok], minlength=5 * n_bins))
        np.testing.assert_array_equal(got, want.astype(np.float32).reshape(5, n_bins))
