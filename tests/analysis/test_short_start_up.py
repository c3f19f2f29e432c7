"""A short step log that holds the run's first step tells its start-up (analysis/step_times.warmup_steps, held-out
round 57): at most START_STEPS leading steps, falling toward the pace, with START_PACE_ROWS after them and no slow
step among those, are warm-up (a jitted step compiles on its first call and may compile again on its second); a short
excerpt from mid-run, a rising second step, or a slow step after the start keep their cost. Logs written here (LABELED SYNTHETIC) in MaxText's 2023
wording (`completed step: N, seconds: S, TFLOP/s: T, loss: L`) and a `step N | ... | time/step Ss` wording, apart from
tests/data/eval/heldout57/maxtext1956."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.analysis import step_times as sa
from playbook.diagnosis import diagnose
from playbook.readers import read_file

PACE = [2.167, 2.164, 2.166, 2.165]


def _maxtext(first: int, seconds: list[float]) -> str:
    return "".join(f"completed step: {first + i}, seconds: {s:.3f}, TFLOP/s: {36.7 * 2.166 / s:.3f}, loss: 9.5\n"
                   for i, s in enumerate(seconds))


@pytest.mark.parametrize(("steps", "d", "warm"), [
    ([0, 1, 2, 3, 4], [18.7, 9.7, 0.96, 0.83, 0.95], 2),  # compile, compile again, then the pace
    ([1, 2, 3, 4, 5], [27.3, 0.52, 0.51, 0.52, 0.51], 1),  # one compile
    ([0, 1, 2, 3, 4], [9.7, 18.7, 0.96, 0.83, 0.95], 0),  # the second slower than the first: slow after the start
    ([0, 1, 2, 3, 4, 5], [30.0, 20.0, 10.0, 1.0, 1.0, 1.0], 0),  # a third slow step: the start is not alone
    ([0, 10, 20, 30, 40], [12.03, 0.562, 0.560, 1.510, 0.561], 0),  # slow again later (a checkpoint): a stall
    ([240, 241, 242, 243, 244], [18.7, 9.7, 0.96, 0.83, 0.95], 0),  # an excerpt from mid-run
    ([0, 1, 2, 3], [18.7, 9.7, 0.96, 0.83], 0),  # too few rows after the start to know the pace
])
def test_a_short_log_from_the_run_start_keeps_its_falling_first_steps_as_warm_up(steps, d, warm):
    assert sa.warmup_steps(np.array(d), np.array(steps)) == warm


def test_a_long_log_keeps_its_quarter_rule():
    d = np.r_[np.full(10, 3.0), np.full(38, 1.0)]
    assert sa.warmup_steps(d) == 10
    assert sa.warmup_steps(d, np.arange(48)) == 10


@pytest.mark.parametrize("text", [
    _maxtext(0, [42.113, 21.406] + PACE),
    "".join(f"step {i} | loss 6.9 | time/step {s}s\n" for i, s in enumerate([27.31, 0.52, 0.51, 0.52, 0.51], 1)),
])
def test_a_short_run_whose_only_slow_steps_are_its_start_is_no_loss(tmp_path, text):
    path = tmp_path / "train.log"
    path.write_text(text)
    assert diagnose(read_file(path)).verdict["id"] in ("healthy", "insufficient_data")


def test_the_same_slow_steps_in_a_mid_run_excerpt_are_still_a_loss(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(_maxtext(240, [42.113, 21.406] + PACE))
    assert diagnose(read_file(path)).verdict["id"] not in ("healthy", "insufficient_data")
