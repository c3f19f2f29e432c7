"""Oscillation analysis on LABELED SYNTHETIC telemetry with known answers, and on the real 3-tick dflash poll."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playbook.analysis.oscillation.fleet import analyze_oscillation, fold_cycle, period_spectrum
from playbook.analysis.oscillation.levels import two_levels
from playbook.analysis.oscillation.spectrum import spectral_period, spectrum
from playbook.analysis.oscillation.swing import analyze_series
from playbook.labs.synthetic import simulate_telemetry
from playbook.model import schema

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dflash() -> pd.DataFrame:
    """The REAL 8-GPU poll (5 target GPUs, 3 drafters; 2 s apart; 3 complete ticks)."""
    from playbook.readers import read_paths

    bundle = read_paths([ROOT / "data/samples/dflash-8gpu/nvidia-smi-poll.txt"],
                        fields="index,utilization.gpu,memory.used", interval_s=2.0)
    return bundle.telemetry


VARIANTS = [
    {},
    {"noise_pct": 10.0},
    {"jitter": 0.4, "nan_frac": 0.05, "gaps": 2, "noise_pct": 6.0},
    {"interval_s": 0.1, "duration_s": 300.0, "period_s": 20.0},
    {"interval_s": 5.0, "duration_s": 1800.0},
    {"interval_s": 30.0, "duration_s": 9000.0, "period_s": 300.0},
    {"hosts": 1, "gpus_per_host": 1},
    {"hosts": 4, "gpus_per_host": 8, "duration_s": 600.0},
    {"period_jitter": 0.1, "duration_s": 3600.0},
    {"duty_cycle": 0.95, "duration_s": 1800.0},
    {"high_pct": 70.0, "low_pct": 45.0, "noise_pct": 4.0},
]


@pytest.mark.parametrize("kw", VARIANTS, ids=[",".join(f"{k}={v}" for k, v in kw.items()) or "default"
                                              for kw in VARIANTS])
def test_classic_oscillation_known_answers(kw):
    frame, truth = simulate_telemetry("oscillation", **kw)
    res = analyze_oscillation(frame)
    c = res.contract()
    assert c["detected"] and c["periodic"]
    assert c["period_s"] == pytest.approx(truth.period_s, rel=0.03)
    resolution = truth.interval_s / truth.period_s  # one sample in a cycle
    assert c["duty_cycle"] == pytest.approx(truth.duty_cycle, abs=max(0.04, resolution))
    assert c["high_pct"] == pytest.approx(truth.high_pct, abs=3)
    assert c["low_pct"] == pytest.approx(truth.low_pct, abs=3)
    n_gpus = frame.groupby(["host", "gpu"]).ngroups
    if n_gpus > 1:
        assert c["synchrony"] == "synchronized"
        assert sorted(c["groups"][0]) == sorted(truth.groups[0])


@pytest.mark.parametrize("seed", range(6))
def test_irregular_swings_are_not_called_periodic(seed):
    frame, _ = simulate_telemetry("irregular", seed=seed, duration_s=1200.0)
    res = analyze_oscillation(frame)
    assert res.detected and not res.periodic
    assert res.contract()["period_s"] is None
    assert res.synchrony == "synchronized"


def test_antiphase_groups_producer_consumer():
    frame, truth = simulate_telemetry("antiphase", hosts=2, gpus_per_host=4, noise_pct=5.0)
    res = analyze_oscillation(frame)
    assert res.synchrony == "groups"
    assert sorted(map(sorted, res.groups)) == sorted(map(sorted, truth.groups))
    assert len(res.antiphase) == 1
    assert res.periodic and res.period_s == pytest.approx(60.0, rel=0.03)


def test_independent_gpus_with_own_periods():
    rng = np.random.default_rng(3)
    rows = []
    for g, period in enumerate((37.0, 53.0, 71.0, 89.0)):
        t = np.arange(0, 1800.0, 1.0)
        high = ((t + rng.uniform(0, period)) % period) < 0.7 * period
        rows.append(pd.DataFrame({"time": pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(t, unit="s"),
                                  "host": "h", "gpu": g, "util_pct": np.where(high, 95.0, 10.0)
                                  + rng.normal(0, 2, len(t))}))
    frame = schema.telemetry_frame({c: pd.concat(rows)[c].to_numpy() for c in ("time", "host", "gpu", "util_pct")})
    res = analyze_oscillation(frame)
    assert res.synchrony == "independent"
    per = res.per_gpu.set_index("gpu")["period_s"]
    assert per.to_numpy() == pytest.approx([37.0, 53.0, 71.0, 89.0], rel=0.03)


@pytest.mark.parametrize("scenario", ["healthy", "throttled"])
def test_flat_utilization_is_not_an_oscillation(scenario):
    frame, _ = simulate_telemetry(scenario, noise_pct=4.0)
    c = analyze_oscillation(frame).contract()
    assert not c["detected"] and not c["periodic"]
    assert c["period_s"] is None and c["low_pct"] is None
    assert c["high_pct"] == pytest.approx(97, abs=2)


def test_straggler_only_one_gpu_swings():
    frame, truth = simulate_telemetry("straggler")
    res = analyze_oscillation(frame)
    assert res.swinging == truth.guilty
    assert res.periodic and res.period_s == pytest.approx(60.0, rel=0.03)
    assert res.synchrony is None


def test_two_levels_needs_a_real_gap():
    rng = np.random.default_rng(0)
    assert not two_levels(rng.normal(60, 10, 5000)).bimodal  # Gaussian: a 2-means split reaches only 2.65
    assert not two_levels(rng.uniform(0, 100, 5000)).bimodal  # uniform: 3.46
    assert not two_levels(np.r_[np.full(500, 97.0), np.full(500, 99.0)]).bimodal  # below the 15-point floor
    lv = two_levels(np.r_[rng.normal(90, 3, 750), rng.normal(20, 3, 250)])
    assert lv.bimodal and lv.high == pytest.approx(90, abs=1) and lv.low == pytest.approx(20, abs=1)
    assert lv.high_share == pytest.approx(0.75, abs=0.01)


def test_uneven_sampling_lomb_scargle():
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 1800, 900))  # Poisson-like polling, mean 2 s, gaps up to ~15 s
    x = np.where((t % 45.0) < 30.0, 90.0, 15.0) + rng.normal(0, 3, len(t))
    so = analyze_series(t, x)
    assert so.periodic and so.period_s == pytest.approx(45.0, rel=0.03)
    spec = spectrum(t, x)
    assert spec.method == "lomb-scargle"
    assert spectral_period(spec).period_s == pytest.approx(45.0, rel=0.03)


def test_aliasing_guard_band_starts_at_two_intervals():
    t = np.arange(0, 600.0, 3.0)
    x = np.sin(2 * np.pi * t / 40.0)
    spec = spectrum(t, x, 3.0)
    periods = 1.0 / spec.freq_hz[spec.in_band]
    assert periods.min() >= 6.0 - 1e-9
    assert periods.max() <= 200.0 + 1e-9  # at least three cycles in the span


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interval=st.floats(0.1, 30.0), cycles_per_sample=st.floats(0.02, 0.9), seed=st.integers(0, 10_000))
def test_never_reports_a_period_shorter_than_two_samples(interval, cycles_per_sample, seed):
    rng = np.random.default_rng(seed)
    n = 400
    t = np.arange(n) * interval + rng.uniform(-0.2, 0.2, n) * interval
    period = interval / cycles_per_sample  # includes periods below two samples: aliased input
    x = np.where((t % period) < 0.6 * period, 90.0, 20.0) + rng.normal(0, 3, n)
    so = analyze_series(t, x, interval)
    if so.periodic:
        assert so.period_s >= 2 * interval * 0.999


def test_too_few_samples_warns_and_reports_idle_gpus(dflash):
    res = analyze_oscillation(dflash)
    assert any("too few" in w for w in res.warnings)
    assert not res.periodic and res.synchrony is None
    means = res.per_gpu.set_index("gpu")["mean_pct"]
    assert means[5] < 10 and means[6] < 15 and means[7] > 95


def test_few_polls_duty_cycle_counts_every_poll(dflash):
    # GPU 0 reads 0, 100, 100, 21 %: high in 2 of its 4 polls, not "100% of the time" (with a handful of polls
    # the idle edges cannot be told from start-up / teardown, so every poll counts)
    res = analyze_oscillation(dflash)
    row = res.per_gpu.set_index("gpu").loc[0]
    assert row["swings"] and row["high_share"] == pytest.approx(0.5) and row["duty_cycle"] == pytest.approx(0.5)
    assert res.few_samples and res.contract()["duty_cycle"] == pytest.approx(0.5)
    assert res.lost_fraction > 0  # the polls spent low cost throughput


def test_handful_and_empty_inputs_do_not_crash():
    frame, _ = simulate_telemetry("oscillation", hosts=1, gpus_per_host=2, duration_s=5.0)
    res = analyze_oscillation(frame)
    assert not res.periodic
    empty = analyze_oscillation(schema.telemetry_frame())
    assert not empty.detected and empty.warnings


def test_separate_recordings_are_not_compared():
    a, _ = simulate_telemetry("oscillation", hosts=1, gpus_per_host=4, duration_s=900.0)
    b, _ = simulate_telemetry("healthy", hosts=1, gpus_per_host=2, duration_s=900.0, start="2026-03-01T00:00:00Z")
    b["host"] = "other"
    frame = schema.telemetry_frame({c: pd.concat([a, b])[c].to_numpy() for c in ("time", "host", "gpu", "util_pct")})
    res = analyze_oscillation(frame)
    assert any("separate time ranges" in w for w in res.warnings)
    assert res.synchrony == "synchronized" and res.period_s == pytest.approx(60.0, rel=0.03)


def test_spectrum_and_fold_frames_for_plots():
    frame, _ = simulate_telemetry("oscillation", duration_s=1200.0)
    spec = period_spectrum(frame)
    assert {"freq_hz", "period_s", "power", "null", "threshold", "p_value", "in_band"} <= set(spec.columns)
    peak = spec.loc[spec["in_band"]].sort_values("power").iloc[-1]
    assert peak["period_s"] == pytest.approx(60.0, rel=0.05)
    assert peak["power"] > peak["threshold"]
    fold = fold_cycle(frame)
    assert list(fold.columns) == ["phase", "time_in_cycle_s", "median", "q25", "q75", "n"]
    # phase 0 is the drop: the first quarter of the cycle is low, the rest high
    low_part = fold[fold["time_in_cycle_s"] < 13]["median"]
    high_part = fold[fold["time_in_cycle_s"] > 17]["median"]
    assert low_part.max() < 40 and high_part.min() > 70


def test_startup_restart_and_teardown_are_not_an_oscillation():
    rng = np.random.default_rng(0)
    t = np.arange(0, 7200.0, 1.0)
    u = np.clip(97 + rng.normal(0, 2, len(t)), 0, 100)
    u[t < 600] = 0.0  # loading
    u[(t > 3000) & (t < 3150)] = 0.0  # one restart
    u[t > 6900] = 0.0  # teardown
    so = analyze_series(t, u)
    assert so.levels.bimodal and not so.swings


def test_fold_with_a_given_period_starts_at_the_drop():
    frame, _ = simulate_telemetry("oscillation", duration_s=1200.0, seed=11)
    fold = fold_cycle(frame, 60.0)
    first, last = fold["median"].iloc[:3], fold["median"].iloc[-3:]
    assert first.max() < 40 and last.min() > 70


def test_very_noisy_samples_are_smoothed_before_splitting():
    frame, _ = simulate_telemetry("oscillation", duration_s=1800.0, noise_pct=25.0, hosts=1, gpus_per_host=2)
    c = analyze_oscillation(frame).contract()
    assert c["periodic"] and c["period_s"] == pytest.approx(60.0, rel=0.03)
    rng = np.random.default_rng(0)
    t = np.arange(3600.0)
    for x in (np.clip(97 + rng.normal(0, 25, len(t)), 0, 100), rng.uniform(0, 100, len(t)),
              np.clip(60 + np.cumsum(rng.normal(0, 2, len(t))) * 0.3, 0, 100)):
        assert not analyze_series(t, x).swings  # smoothing never invents two levels


def test_a_noisy_level_pinned_at_100_is_one_level_not_two():
    """A busy GPU reads 100% most polls and dips into the 80s now and then: the pile at the ceiling is censored,
    not a tight cluster, so the split must not call it bimodal; a real swing from that ceiling still is."""
    rng = np.random.default_rng(1)
    pinned = np.clip(np.round(97 + 15 * rng.standard_normal(2000)), 0, 100)
    assert (pinned == 100).mean() > 0.3 and not two_levels(pinned).bimodal
    swing = np.where(np.arange(2000) % 40 < 30, pinned, np.clip(40 + 5 * rng.standard_normal(2000), 0, 100))
    assert two_levels(swing).bimodal


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_noisy_healthy_fleet_pinned_at_100_is_healthy(seed):
    from playbook.diagnosis import diagnose
    from playbook.labs.synthetic import simulate_bundle

    bundle, _ = simulate_bundle("healthy", hosts=2, gpus_per_host=4, duration_s=600, interval_s=2.0,
                                noise_pct=15, seed=seed)
    assert diagnose(bundle).hypotheses[0]["id"] == "healthy"
