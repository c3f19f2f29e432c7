"""Events logged every 2nd or 3rd step, exactly at the slow steps of a short log, name the stalls: a ±1-step window
around them covers every line, which had read as "an event beside every line, no evidence" (nanoGPT PR #673's
evaluation + checkpoint every eval_interval = 2 iterations: tests/data/eval/heldout48). Their exact step numbers
tell them apart from events beside every line, which still explain nothing. Layouts other than nanoGPT's
(`step N | loss .. | step_time ..s` with checkpoint / validation lines). LABELED SYNTHETIC logs."""

from __future__ import annotations

import numpy as np

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def _log(path, steps: int, slow: set[int], event_at: set[int], line: str) -> None:
    rng = np.random.default_rng(3)
    out = []
    for s in range(1, steps + 1):
        if s in event_at:
            out.append(line.format(s=s))
        t = 0.5 * (1 + 0.01 * rng.standard_normal()) + (6.0 if s in slow else 0.0)
        out.append(f"step {s} | loss {2.5 - 0.01 * s:.3f} | step_time {t:.3f}s")
    path.write_text("\n".join(out) + "\n")


def _verdict(path) -> dict:
    return diagnose(read_paths([path])).verdict


def test_a_checkpoint_every_second_step_names_its_stalls(tmp_path):
    f = tmp_path / "train.log"
    _log(f, 8, {2, 4, 6, 8}, {2, 4, 6, 8}, "Saving checkpoint to /ckpt/step_{s}.pt")
    v = _verdict(f)
    assert v["id"] == ids.PERIODIC_STALL, v["sentence"]


def test_a_validation_every_third_step_names_its_stalls(tmp_path):
    f = tmp_path / "train.log"
    _log(f, 9, {3, 6, 9}, {3, 6, 9}, "Running validation at step {s}")
    assert _verdict(f)["id"] == ids.PERIODIC_STALL


def test_an_event_numbered_by_the_line_before_the_slow_step_names_it(tmp_path):
    f = tmp_path / "train.log"  # validation after steps 1, 3, 5, 7 (numbered by them) slows steps 2, 4, 6, 8
    _log(f, 8, {2, 4, 6, 8}, {1, 3, 5, 7}, "Running validation at step {s}")
    assert _verdict(f)["id"] == ids.PERIODIC_STALL


def test_events_beside_every_line_still_explain_nothing(tmp_path):
    f = tmp_path / "train.log"
    _log(f, 8, {2, 4, 6, 8}, set(range(1, 9)), "Saving checkpoint to /ckpt/step_{s}.pt")
    assert _verdict(f)["id"] == ids.UNEXPLAINED_SLOWDOWN


def test_events_every_second_step_off_the_slow_steps_explain_nothing(tmp_path):
    f = tmp_path / "train.log"  # slow 2, 3, 6, 7: no single offset puts the events on 3 of the 4
    _log(f, 8, {2, 3, 6, 7}, {2, 4, 6, 8}, "Saving checkpoint to /ckpt/step_{s}.pt")
    assert _verdict(f)["id"] == ids.UNEXPLAINED_SLOWDOWN


def test_random_stalls_half_of_which_follow_a_validation_every_third_step_explain_nothing(tmp_path):
    """8 stalls of 20 steps, 4 of them right after a validation (every 3rd step) and 4 elsewhere: random stalls sit
    that well on the validations' lines 1 time in 6 (hypergeometric: 4 or more of the 8 on the 6 lines after a
    validation, of 19 lines) — no evidence that the validations cost them."""
    f = tmp_path / "train.log"
    _log(f, 20, {2, 3, 4, 6, 7, 10, 11, 16}, {3, 6, 9, 12, 15, 18}, "Running validation at step {s}")
    assert _verdict(f)["id"] == ids.UNEXPLAINED_SLOWDOWN
