"""The reading the sixty-sixth held-out round (tests/data/eval/heldout66/SOURCES.md) asked for, on logs written here
apart from the round's own files (LABELED SYNTHETIC):

- a data wait named verb first (`load_data_time`, `get_batch_time`, `next_batch_ms`, `fetch_data_s`) is the data
  phase, as `data_time` is; `batch_time`, `sample_time`, `load_model_time` stay what they were;
- a step time that leaves its data wait out: where a wait is longer than its step's time on some line (no part is
  longer than its whole), the step is the time plus the wait, with or without time stamps; a time that holds its
  wait (never shorter than it) is left alone.
"""

from __future__ import annotations

import numpy as np
import pytest

from playbook.readers import read_paths
from playbook.readers.step_log.columns import data_apart
from playbook.readers.step_log.vocab import classify


@pytest.mark.parametrize("key", ["load_data_time", "get_batch_time", "next_batch_time", "fetch_data_s",
                                 "loading_data_time", "read_input_ms", "wait_data"])
def test_a_wait_named_verb_first_is_the_data_phase(key):
    assert classify(key, None)[:2] == ("phase", "data")


@pytest.mark.parametrize(("key", "role"), [("batch_time", "dur"), ("sample_time", "dur"), ("train_step_time", "dur"),
                                           ("load_model_time", "phase"), ("get_time", "dur")])
def test_other_keys_keep_their_roles(key, role):
    got = classify(key, None)
    assert got[0] == role and got[1] != "data"


def test_a_part_never_longer_than_its_whole():
    nan = np.full(4, np.nan)
    step = np.array([0.5, 0.5, 0.5, 0.5])
    assert data_apart(step, np.array([0.001, 0.002, 4.0, 0.001]), nan)  # a 4 s wait beside a 0.5 s step
    assert not data_apart(step, np.array([0.1, 0.45, 0.5, 0.2]), nan)  # within the step: nothing to tell
    assert not data_apart(step, np.array([0.1, 0.55, 0.1, 0.1]), nan)  # 10% over: rounding, not apart
    assert not data_apart(np.array([0.001]), np.array([0.005]), np.full(1, np.nan))  # 4 ms over: under 10 ms


def _steps(tmp_path, text):
    path = tmp_path / "run.log"
    path.write_text(text)
    s = read_paths([str(path)]).steps
    return s[s["phase"] == "step"]["duration_s"].tolist(), s[s["phase"] == "data"]["duration_s"].tolist()


def test_a_spiking_wait_beside_a_compute_timer_is_added_to_its_step(tmp_path):
    """LABELED SYNTHETIC: `iter N | get_batch_time X ms | step_time Y ms` (the wait timed before the model's work,
    its own timer): one 7 s wait among 3 ms ones."""
    rows = [(3, 410), (2, 405), (7000, 412), (3, 408), (4, 409), (2, 407)]
    text = "".join(f"iter {i} | get_batch_time {d} ms | step_time {c} ms\n" for i, (d, c) in enumerate(rows, 1))
    steps, data = _steps(tmp_path, text)
    assert data == pytest.approx([d / 1000 for d, _ in rows])
    assert steps == pytest.approx([(d + c) / 1000 for d, c in rows])


def test_a_time_that_holds_its_wait_is_left_alone(tmp_path):
    """LABELED SYNTHETIC: mmcv-style `time` holds its `data_time` (never shorter): no sum."""
    rows = [(0.52, 0.02), (0.55, 0.04), (0.95, 0.45), (0.51, 0.01)]
    text = "".join(f"Epoch [1][{10 * i}/500]\tlr: 1.0e-02, time: {t:.3f}, data_time: {d:.3f}, loss: 1.2\n"
                   for i, (t, d) in enumerate(rows, 1))
    steps, _ = _steps(tmp_path, text)
    assert steps == pytest.approx([t for t, _ in rows])


def _epochs(tmp_path, text):
    path = tmp_path / "epochs.log"
    path.write_text(text)
    s = read_paths([str(path)]).steps
    s = s[s["phase"] == "step"]
    return s["step"].tolist(), s["duration_s"].tolist()


def test_an_epoch_time_given_at_a_point_is_a_clock_since_the_start(tmp_path):
    """LABELED SYNTHETIC, in neural-enhance's layout (`print('Epoch #{} at {:4.1f}s, lr=..'.format(epoch+1,
    time.time()-start, ..))`, `start` set once before the loop): each epoch is its clock less the one before; the
    first has no reading before it. Epochs that really grow show it in the differences."""
    text = "".join(f"Epoch #{e} at {t:.1f}s, lr=1.00e-04\n  - generator total=1.0e+05\n"
                   for e, t in [(1, 50.0), (2, 100.2), (3, 150.1), (4, 200.3)])
    assert _epochs(tmp_path, text) == ([2, 3, 4], pytest.approx([50.2, 49.9, 50.2]))
    text = "".join(f"epoch {e} after {t:.1f}s\n" for e, t in [(1, 10.0), (2, 30.0), (3, 70.0), (4, 150.0)])
    assert _epochs(tmp_path, text) == ([2, 3, 4], pytest.approx([20.0, 40.0, 80.0]))


def test_an_epoch_time_of_its_own_is_left_as_it_is(tmp_path):
    """LABELED SYNTHETIC: `Epoch #3 time 81.6s` times the epoch itself (no `at`): one row per epoch, as written."""
    text = "".join(f"Epoch #{e} time {t:.1f}s\n" for e, t in [(1, 81.6), (2, 81.5), (3, 81.4)])
    assert _epochs(tmp_path, text) == ([1, 2, 3], pytest.approx([81.6, 81.5, 81.4]))
