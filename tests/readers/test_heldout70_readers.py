"""The reading the seventieth held-out round (tests/data/eval/heldout70/SOURCES.md) asked for, on logs written here
apart from the round's own files (LABELED SYNTHETIC):

- a count of steps in brackets after a time's key (`Time(1000 iters): 5.4s`, `time (100 steps): 12.1 s`,
  `Elapsed[50 batches] = 3.2s`) numbers the steps the time covers: the count is no time, the time a window of those
  steps, read per step.
"""

from __future__ import annotations

import pytest

from playbook.readers import read_paths
from playbook.readers.step_log.window_count import bracket_count


def _steps(tmp_path, text):
    path = tmp_path / "run.log"
    path.write_text(text)
    s = read_paths([str(path)]).steps
    return s[s["phase"] == "step"]["duration_s"].tolist()


@pytest.mark.parametrize(("line", "per_step"), [
    ("[HUGECTR][INFO]: Iter: {i} Time(1000 iters): {t}s Loss: 0.12 lr:24.0", 1000),
    ("step {i} | time (1000 steps): {t} s | loss 0.5", 1000),
    ("iteration={i} Elapsed[1000 batches] = {t}s", 1000),
])
def test_a_bracketed_count_makes_the_time_a_window_of_those_steps(tmp_path, line, per_step):
    """LABELED SYNTHETIC: every 1000 steps a line with the time those 1000 took; one window 20% slower."""
    times = [5.0, 5.1, 5.0, 6.0, 5.05, 5.0]
    text = "".join(line.format(i=1000 * k, t=t) + "\n" for k, t in enumerate(times, 1))
    got = _steps(tmp_path, text)
    # the first line has no line before it to count from; the others are their window over its 1000 steps
    assert got == pytest.approx([t / per_step for t in times[1:]], rel=1e-6)
    assert max(got) < 0.01  # never the count (1000) read as seconds


@pytest.mark.parametrize(("segs", "want"), [
    ([" Time(", "", " iters): ", "s"], True),
    ([" time [", "", " steps] = ", "s"], True),
    ([" Time(", "", " iters): ", "s", " Loss: ", ""], True),
    ([" Time(", "s", " iters): ", "s"], False),  # a unit of its own: a time, not a count
    ([" loss(", "", " iters): ", "s"], False),  # no time's word before the bracket
    ([" Time(", "", " images): ", "s"], False),  # counts no steps
    ([" Time(", ""], False),  # nothing after it
])
def test_bracket_count(segs, want):
    assert bracket_count(segs, 0) is want


def test_a_time_in_brackets_is_still_a_time(tmp_path):
    """LABELED SYNTHETIC: `time (0.52 s)` after a step counter: a bracketed time of its own, not a count."""
    text = "".join(f"step {i} loss 0.4 time ({t} s)\n" for i, t in enumerate([0.52, 0.50, 0.51, 0.53], 1))
    assert _steps(tmp_path, text) == pytest.approx([0.52, 0.50, 0.51, 0.53])
