"""Fresh-eyes review of the step accounting (review4; LABELED SYNTHETIC: step tables generated here with a known
truth): each case failed before its fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from playbook.analysis.accounting import step_accounting
from playbook.model import schema


def _table(d: np.ndarray, phases: dict[str, np.ndarray] | None = None, work: np.ndarray | None = None) -> pd.DataFrame:
    """One rank's line per step (durations `d`, s; each step starts when the last ends) and a row per phase."""
    t = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(np.r_[0.0, np.cumsum(d)[:-1]], unit="s")
    n, phases = len(d), phases or {}
    cols = {"time": list(t) * (1 + len(phases)), "rank": [0] * n * (1 + len(phases)),
            "step": list(range(n)) * (1 + len(phases)),
            "phase": ["step"] * n + [p for p in phases for _ in range(n)],
            "duration_s": list(d) + [x for v in phases.values() for x in v]}
    if work is not None:
        cols["work"] = list(work) + [np.nan] * n * len(phases)
    return schema.steps_frame(cols)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_steady_wait_on_every_step_leaves_the_steps_jitter_as_the_noise_floor(seed):
    """A 0.02 s loader wait inside every 1 s step (5% step-to-step jitter of its own) is inside the local pace
    already: only a wait's excess over its usual level explains a step's excess. Subtracting the whole wait from
    every step's excess had cut the noise floor from 2.4-2.9% to 1.6-2.1% and called the 2% wait significant."""
    d = 1.0 + 0.05 * np.random.default_rng(seed).standard_normal(600)
    bare, waited = step_accounting(_table(d)), step_accounting(_table(d, {"data": np.full(600, 0.02)}))
    assert waited.noise_floor_share == pytest.approx(bare.noise_floor_share, abs=0.002)
    assert [b.kind for b in waited.buckets] == ["phase:data"] and waited.lost_share == pytest.approx(0.02, abs=0.002)
    assert not waited.significant


def test_a_wait_that_makes_its_step_slow_is_still_not_jitter():
    """The case the subtraction exists for: the step time is 0.9 s of work plus a loader wait that varies
    (0.1 ± 0.05 s): the step's jitter is the wait's, charged to phase:data, so the floor stays at its minimum."""
    w = np.clip(0.1 + 0.05 * np.random.default_rng(4).standard_normal(600), 0.0, None)
    acc = step_accounting(_table(0.9 + w, {"data": w}))
    assert acc.noise_floor_share == pytest.approx(0.01, abs=0.002)
    assert acc.lost_share == pytest.approx(w.sum() / (0.9 * 600 + w.sum()), abs=0.005)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_wait_is_charged_its_own_seconds_when_step_times_follow_their_work(seed):
    """Step times follow the stated work (a fifth of the batches 4x the size), and a 0.2 s loader wait sits inside
    every step: the wait's share is its seconds over the wall time (11%). The phase bucket weighted the wait's
    seconds by the step's work factor (4 on the big batches), which only work-normalised step times need: 16.7%."""
    rng = np.random.default_rng(seed)
    work = np.where(rng.random(600) < 0.2, 4.0, 1.0)
    d = work * (1 + 0.03 * rng.standard_normal(600)) + 0.2
    acc = step_accounting(_table(d, {"data": np.full(600, 0.2)}, work=work))
    assert [b.kind for b in acc.buckets] == ["phase:data"]
    assert acc.lost_share == pytest.approx(0.2 * 600 / d.sum(), abs=0.003)


@pytest.mark.parametrize(("step_s", "decimals"), [(0.15, 1), (0.015, 2), (1.4, 0)])
def test_step_times_printed_coarser_than_their_jitter_are_not_stalls(step_s, decimals):
    """Steps of 0.15 s ± 13% printed to one decimal read 0.1 or 0.2: two printed values a tick apart may be one time
    rounded both ways, so neither is a stall nor a slow stretch. Before: a third of the run 'stalls', 2x the
    steady step (whole seconds on 1.4 s steps: 10-15%)."""
    for seed in range(2):
        raw = step_s * (1 + 0.13 * np.random.default_rng(seed).standard_normal(500))
        acc = step_accounting(_table(np.round(np.clip(raw, 1e-6, None), decimals)))
        assert not acc.significant and acc.lost_share < 0.01, (seed, [(b.kind, b.share) for b in acc.buckets])


def test_a_stall_in_whole_seconds_is_still_a_stall():
    """Whole seconds on 1.4 s steps (5% jitter) with a 10 s stall every 60 steps: the stalls, many ticks above the
    pace, stay (10 of 11% of the wall time; before the rounding counted too: 17.5%)."""
    raw = 1.4 * (1 + 0.05 * np.random.default_rng(0).standard_normal(600))
    raw[::60] += 10.0
    acc = step_accounting(_table(np.round(raw)))
    assert [b.kind for b in acc.buckets] == ["stalls"] and acc.significant
    assert acc.lost_share == pytest.approx(10 * 9 / raw.sum(), abs=0.03)


def test_a_creep_over_a_short_log_costs_what_it_costs_over_a_long_one():
    """Step time creeping 30% over the run (2% jitter): against the best sustained pace a 200-line log loses 9-10%;
    over 30 lines the rolling window spans the whole log and its percentile sat mid-creep (3.6-4.6%). The creep's
    line gives a short log the long log's figure."""
    for seed in range(2):
        long, short = (step_accounting(_table(np.linspace(1.0, 1.3, n) * (
            1 + 0.02 * np.random.default_rng(seed).standard_normal(n)))) for n in (200, 30))
        assert [b.kind for b in short.buckets] == ["slow_stretches"]
        assert short.lost_share == pytest.approx(long.lost_share, abs=0.015), (short.lost_share, long.lost_share)


def test_a_wait_on_a_three_line_log_is_measured_against_its_typical_level():
    """detectron2's three lines (0.49, 0.51, 0.90 s; data 0.010, 0.011, 0.400 s): the slow line's excess is its
    wait's. The wait's level is taken as the pace is, a plain median under 5 lines; a rolling median sat between
    0.011 and 0.4 at the last line and read half the wait as jitter (floor 10%)."""
    from pathlib import Path

    from playbook.readers import read_paths

    b = read_paths([str(Path(__file__).resolve().parents[1] / "data" / "formats" / "detectron2.log")])
    acc = step_accounting(b.steps, events=b.events)
    assert acc.noise_floor_share < 0.015 and [k.kind for k in acc.buckets] == ["phase:data"]
