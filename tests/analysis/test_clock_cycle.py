"""Stalls on a cycle of wall time rather than of steps (a logger flushing every few seconds, a host job on a timer:
wandb#8666), on LABELED SYNTHETIC step logs: the step lattice misses them, the regularity of their starts in time
does not; stalls at random times stay stalls."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.analysis import step_times as sa
from playbook.analysis.accounting import step_accounting
from playbook.analysis.stats import regularity_p
from playbook.model import schema


def test_regular_gaps_are_told_from_random_ones():
    rng = np.random.default_rng(3)
    assert regularity_p(5.0 * np.exp(0.1 * rng.standard_normal(12))) < 0.01  # a 5 s cycle with 10% jitter
    random = [regularity_p(rng.exponential(5.0, 12)) for _ in range(1000)]  # a Poisson process
    assert 0.003 <= np.mean(np.array(random) < 0.01) <= 0.02  # the test's size is about its level (10 of 1000)
    assert regularity_p([1.0, 1.0, 1.0]) == 1.0  # too few gaps to tell


def _timer_log(stall_at, n=3000, seed=0, stall_s=1.0):
    """Steps of ~25 ms whose pace wanders between 20 and 32 ms (so a fixed time holds a varying number of steps), a
    `stall_s` stall on the first step after each time in `stall_at` (seconds)."""
    rng = np.random.default_rng(seed)
    pace = 0.026 * np.exp(0.12 * np.sin(np.arange(n) / 97.0)) * np.exp(0.03 * rng.standard_normal(n))
    t, d, k = 0.0, [], 0
    for i in range(n):
        extra = 0.0
        if k < len(stall_at) and t >= stall_at[k]:
            extra, k = stall_s, k + 1
        d.append(pace[i] + extra)
        t += d[-1]
    d = np.array(d)
    ends = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(np.cumsum(d), unit="s")
    return schema.steps_frame({"time": ends, "step": np.arange(n), "phase": "step", "duration_s": d, "rank": 0})


def test_stalls_every_few_seconds_of_wall_time_are_periodic():
    rng = np.random.default_rng(8)
    at = np.cumsum(6.0 * np.exp(0.08 * rng.standard_normal(14)))  # every ~6 s
    steps = _timer_log(at[at < 70])
    ps = sa.periodic_slow_steps(sa.fleet_steps(steps))
    assert ps["periodic"] and ps["clock"], ps
    assert abs(ps["clock_period_s"] - 6.0) < 0.6  # the timer's cycle, stalls included
    acc = step_accounting(steps)
    kinds = {b.kind: b for b in acc.buckets}
    assert "recurring_slow" in kinds and "stalls" not in kinds, kinds
    assert "about every" in kinds["recurring_slow"].detail


def test_stalls_at_random_times_are_not_a_cycle():
    rng = np.random.default_rng(9)
    at = np.sort(rng.uniform(0, 70, 11))  # the same count of stalls, at random times
    ps = sa.periodic_slow_steps(sa.fleet_steps(_timer_log(at)))
    assert not (ps and ps["periodic"]), ps


def test_a_loop_slow_most_of_each_cycle_is_no_timer_stall():
    # 12 s of waiting in each ~14 s cycle: work waiting on bursts of input (the loop mostly waits), not a timer
    # interrupting it (the rule the telemetry applies to a GPU low most of each cycle)
    rng = np.random.default_rng(8)
    at = np.cumsum(14.0 * np.exp(0.05 * rng.standard_normal(12)))
    ps = sa.periodic_slow_steps(sa.fleet_steps(_timer_log(at[at < 160], stall_s=12.0)))
    assert not (ps and ps.get("clock")), ps


def test_windows_without_stamps_count_every_step_a_line_stands_for():
    # a line every 10 steps of 0.1 s (1 s a line) without times, one 3 s stall on the line of step 500: its window
    # starts ~50 s into the run (was ~5 s: the lines' own times added up without the steps they stand for)
    step = np.arange(10, 1001, 10)
    d = np.full(len(step), 0.1)
    d[step == 500] = 0.4
    acc = step_accounting(schema.steps_frame({"step": step, "phase": "step", "duration_s": d}))
    (stall,) = [b for b in acc.buckets if b.kind == "stalls"]
    (a, z), = stall.windows
    assert 48.0 <= a <= 50.0 and 52.0 <= z <= 54.0, stall.windows
