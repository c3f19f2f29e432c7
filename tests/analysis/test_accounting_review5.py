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
