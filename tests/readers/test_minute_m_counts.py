"""A lower-case `m` after a number is minutes only where the key names a time (`elapsed 0.49m`, `total time:
0.00m`): in training logs it is as often a million (`tokens 3.2m`, `consumed 1.5m`), a count of samples, metres or
a Kubernetes milli-CPU. Such a field must not become the step's time (a healthy run read 60x slow fakes a stall).
Inputs written apart from the fixtures."""

from __future__ import annotations

import pytest

from playbook.core.errors import UnknownFormatError
from playbook.readers import read_paths


def _durations(tmp_path, lines: list[str]):
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    try:
        steps = read_paths([str(p)]).steps
    except UnknownFormatError:
        return None  # no step time read: the honest answer for a log that states none
    return steps[steps["phase"] == "step"]["duration_s"].dropna().tolist()


def test_a_token_count_in_millions_does_not_outrank_the_stated_step_time(tmp_path):
    lines = [f"step {i} | loss 2.0 | tok {0.5 * i:.1f}m | time 0.4" for i in range(10, 40)]
    d = _durations(tmp_path, lines)
    assert d and all(abs(x - 0.4) < 1e-9 for x in d)


@pytest.mark.parametrize("fmt", [
    "step {i} | loss 3.1 | tokens {v:.2f}m",
    "iter {i} | consumed {v:.2f}m | lm loss 2.1",
    "step {i}: loss 1.2, seen {v:.2f}m samples",
    "step {i} ({v:.2f}m tokens) | loss 2.0",
    "step {i} dist {v:.2f}m reward 1.0",
])
def test_a_count_in_millions_is_no_clock_in_minutes(tmp_path, fmt):
    lines = [fmt.format(i=i, v=0.02 * i) for i in range(10, 40)]
    d = _durations(tmp_path, lines)
    assert not d, d  # no step time at all: a count growing by 0.02m a line is not 1.2 s a step


def test_a_time_key_in_minutes_still_reads(tmp_path):
    lines = [f"step {i:05d}/21400 | loss: 8.53 | total time: {0.01 * i:.2f}m" for i in range(10, 40)]
    d = _durations(tmp_path, lines)
    assert d and all(abs(x - 0.6) < 1e-6 for x in d)
