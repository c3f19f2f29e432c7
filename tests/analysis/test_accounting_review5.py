"""Fresh-eyes review of the accounting as a new user meets it (review5; LABELLED SYNTHETIC logs written here with
a known truth): each case failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def _stamped_log(path, step_s: np.ndarray) -> str:
    """A log line per step stamped in whole seconds (`%Y-%m-%d %H:%M:%S`, no fraction): steps shorter than a
    second share stamps, and the reader folds each second's lines into one window."""
    ends = np.cumsum(step_s)
    path.write_text("\n".join(f"2026-12-03 {10 + int(t) // 3600:02d}:{int(t) // 60 % 60:02d}:{int(t) % 60:02d} INFO "
                              f"step {i} loss {2.5 - i / 1e4:.4f}" for i, t in enumerate(ends)) + "\n")
    return str(path)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_whole_second_stamps_on_sub_second_steps_are_no_stalls(tmp_path, seed):
    """0.3 s steps (3% jitter) stamped in whole seconds: a second holds 3 or 4 of them, so a window's mean step reads
    0.25 or 0.33 s — one stamp's tick over the window's steps apart. First try (review5): 'Loses 16% of wall time in
    117 stalls, up to 1.3x the steady step' on a run that lost nothing."""
    rng = np.random.default_rng(seed)
    d = diagnose(read_paths([_stamped_log(tmp_path / "run.log", 0.3 * (1 + rng.normal(0, 0.03, 600)))]))
    assert d.verdict["id"] == ids.HEALTHY and d.accounting["lost_share"] < d.accounting["noise_floor_share"]


def test_stalls_between_whole_second_stamps_are_still_counted(tmp_path):
    """The same run with a 2 s stall on every 20th step: many ticks over the pace, each stall stays counted."""
    rng = np.random.default_rng(3)
    step_s = 0.3 * (1 + rng.normal(0, 0.03, 600))
    step_s[10::20] += 2.0
    truth = 2.0 * len(step_s[10::20]) / step_s.sum()
    d = diagnose(read_paths([_stamped_log(tmp_path / "run.log", step_s)]))
    assert d.verdict["id"] != ids.HEALTHY
    assert d.accounting["lost_share"] == pytest.approx(truth, abs=0.04)


def _clock_log(path, fmt: str, elapsed: np.ndarray) -> str:
    path.write_text("\n".join(fmt.format(i=i, c=c) for i, c in enumerate(elapsed)) + "\n")
    return str(path)


@pytest.mark.parametrize("fmt", ["step {i} loss 2.5 time:{c:.1f}s", "step {i} | loss 2.5 | time {c:.1f}s",
                                 "step {i}/400 loss 2.5 time {c:.2f}"])
def test_an_elapsed_clock_printed_on_every_step_is_no_step_time(tmp_path, fmt):
    """A field named only 'time' that counts the seconds since the start, printed once a step (2.4 s steps, 3%
    jitter): its values rise by a step's time on every line from near zero. First try (review5): read as each step's
    own time, a step 'creeping' from 2.4 s to 960 s — 'Loses 80% of wall time ... throttling' on a healthy run."""
    rng = np.random.default_rng(2)
    elapsed = np.cumsum(2.4 * (1 + rng.normal(0, 0.03, 400)))
    b = read_paths([_clock_log(tmp_path / "train.log", fmt, elapsed)])
    assert float(b.steps["duration_s"].median()) == pytest.approx(2.4, rel=0.05)
    d = diagnose(b)
    assert d.verdict["id"] == ids.HEALTHY


def test_an_elapsed_clock_keeps_its_stalls_and_its_restart(tmp_path):
    """The same clock with a 60 s stall every 50 steps and the clock restarting at 0 on a resume at line 200 (a
    restart: one drop): the stalls are the loss (truth 33%), the restart no step of its own."""
    rng = np.random.default_rng(4)
    step_s = 2.4 * (1 + rng.normal(0, 0.03, 400))
    step_s[25::50] += 60.0
    elapsed = np.cumsum(step_s)
    elapsed[200:] -= elapsed[199]
    truth = 60.0 * len(step_s[25::50]) / step_s.sum()
    d = diagnose(read_paths([_clock_log(tmp_path / "train.log", "step {i} loss 2.5 time:{c:.1f}s", elapsed)]))
    assert d.accounting["lost_share"] == pytest.approx(truth, abs=0.03)


@pytest.mark.parametrize("stall_s, truth", [(0.0, 0.0), (600.0, 600.0 * 8 / (400 * 240.0 + 8 * 600.0))])
def test_an_elapsed_time_past_a_day_keeps_its_days(tmp_path, stall_s, truth):
    """Python's str(timedelta) past 24 h: `elapsed 23:58:54` then `elapsed 1 day, 0:02:55` (4-minute steps, 3%
    jitter; 10-minute stalls every 50 steps in the second case). First try (review5): the clock after 'day,' was
    dropped as an estimate's rest, the steps past a day read 0 s, and with stalls 'Loses 99% of wall time'."""
    import datetime as dt

    rng = np.random.default_rng(2)
    step_s = 240.0 * (1 + rng.normal(0, 0.03, 400))
    step_s[25::50] += stall_s
    b = read_paths([_clock_log(tmp_path / "train.log", "step {i} loss 2.5 elapsed {c}",
                               [str(dt.timedelta(seconds=int(c))) for c in np.cumsum(step_s)])])
    steps = b.steps[b.steps["phase"] == "step"]
    assert float(steps["duration_s"].iloc[-40:].median()) == pytest.approx(240.0, rel=0.05)
    d = diagnose(b)
    assert d.accounting["lost_share"] == pytest.approx(truth, abs=0.02)
