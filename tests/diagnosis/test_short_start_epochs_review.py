"""Review r6 of held-out round 57's short-log start-up (analysis/step_times.warmup_steps, START_STEPS): a jitted
step compiles on its first call and maybe its second, so the first one or two STEPS of a short log from the run's
start are warm-up. An epoch is hundreds of steps: a first epoch (or two) far slower than the rest is no compile of
one step, and a short per-epoch history whose first epochs lose a third of the run is no healthy run. Logs written
here (LABELED SYNTHETIC): TensorFlow tutorials' `Time for epoch N is S sec` and an `epoch N | ... | epoch_time Ss`
wording; the step logs beside them keep their start-up."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_file

HEALTHY = ("healthy", "insufficient_data")


@pytest.mark.parametrize("text", [
    "".join(f"Time for epoch {i} is {s} sec\n" for i, s in enumerate([95.3, 31.2, 30.4, 31.0, 30.6], 1)),
    "".join(f"Time for epoch {i} is {s} sec\n" for i, s in enumerate([95.3, 60.1, 30.4, 31.0, 30.6, 30.2], 1)),
    "".join(f"epoch {i} | train_loss 0.{50 - i} | epoch_time {s}s\n" for i, s in enumerate([95.0, 31, 30, 31, 30])),
])
def test_a_short_epoch_history_whose_first_epochs_are_slow_is_not_healthy(tmp_path, text):
    path = tmp_path / "train.log"
    path.write_text(text)
    assert diagnose(read_file(path)).verdict["id"] not in HEALTHY


def test_the_same_times_as_steps_stay_a_start_up(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("".join(f"step {i} | loss 6.9 | time/step {s}s\n"
                            for i, s in enumerate([95.3, 60.1, 30.4, 31.0, 30.6, 30.2], 1)))
    assert diagnose(read_file(path)).verdict["id"] in HEALTHY


def test_a_second_row_that_stands_for_many_steps_is_no_second_compile():
    # step 1 alone (0.35 s over the pace), then the window of steps 2-100 at 3x the pace: 20 s over it, no second
    # compile of one step (a start-up falls: each row costs no more than the one before)
    from playbook.analysis import step_times as sa
    d = np.array([0.45, 0.30, 0.10, 0.101, 0.099, 0.10])
    assert sa.warmup_steps(d, np.array([1, 100, 200, 300, 400, 500])) == 0
    assert sa.warmup_steps(d, np.arange(1, 7)) == 2  # the same times step by step: compile, compile again


def test_a_short_log_whose_second_window_loses_the_most_is_not_healthy(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("".join(f"step {s} | loss 3.2 | step_time {t:.4f}s\n"
                            for s, t in zip([1, 100, 200, 300, 400, 500], [0.45, 0.30, 0.10, 0.101, 0.099, 0.10],
                                            strict=True)))
    assert diagnose(read_file(path)).verdict["id"] not in HEALTHY
