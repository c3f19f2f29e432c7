"""Step logs of trainers the grammar had not seen (tests/data/steplogs11: SOURCES.md cites each print statement,
expected.json the truth, computed by make_steplogs11.py from the numbers written; every file LABELED SYNTHETIC)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_file, read_paths

CASES = Path(__file__).resolve().parents[1] / "data" / "steplogs11"
EXPECTED = json.loads((CASES / "expected.json").read_text())
NOT_YET: dict[str, str] = {}  # read wrongly still (the report says why); strict: a fix turns them into passes


def _case(name: str) -> pytest.param:
    marks = [pytest.mark.xfail(strict=True, reason=NOT_YET[name])] if name in NOT_YET else []
    return pytest.param(name, marks=marks, id=name)


def _expected_rows(want: dict) -> tuple[list[int], list[float]]:
    """(step labels, seconds per step) a right reading gives: one row per printed step, or per epoch where only the
    epoch is timed (its row at the epoch's last step)."""
    if "printed_steps" in want:
        steps = want["printed_steps"]
        return steps, [want.get("step_s_after", want["step_s"]) if s >= want.get("slow_from", 10**9) + 20 else
                       want["step_s"] for s in steps]
    if "per_step_by_epoch_s" in want:
        per = want["per_step_by_epoch_s"]
        n = want["steps_total"] // len(per)
        return [n * (k + 1) for k in range(len(per))], per
    if "shift_at_step" in want:  # MindSpore's six epochs of 50: the epoch line closes each
        return [50 * (k + 1) for k in range(6)], [want["step_s_before"]] * 3 + [want["step_s_after"]] * 3
    steps = list(range(1, want["steps_total"] + 1))
    return steps, [want["step_s"] + (want["stall_s"] if s % want["stall_every"] == 0 else 0) for s in steps]


@pytest.mark.parametrize("name", [_case(n) for n in EXPECTED])
def test_each_new_trainer_reads_its_steps_and_step_times(name):
    want = EXPECTED[name]
    s = read_file(CASES / name).steps
    whole = s[s["phase"] == "step"]
    steps, seconds = _expected_rows(want)
    assert whole["step"].tolist() == steps
    got = whole["duration_s"].to_numpy()
    if "stall_every" in want and "printed_steps" in want:  # a stall shows in its printed window's mean: off it,
        calm = [i for i, st in enumerate(steps) if st % want["stall_every"] >= 10 or st == 0]  # the steady time
        assert got[calm] == pytest.approx([seconds[i] for i in calm], rel=0.05)
    elif "printed_steps" in want:  # the window that straddles the change of pace is a mix: not asked about
        keep = [i for i, st in enumerate(steps) if not want["slow_from"] <= st < want["slow_from"] + 20]
        assert got[keep] == pytest.approx([seconds[i] for i in keep], rel=0.05)
    else:
        assert got == pytest.approx(seconds, rel=0.05)
    if "data_s" in want:
        assert "data" in set(s["phase"])


@pytest.mark.parametrize("name", [n for n in EXPECTED if "verdict" in EXPECTED[n]])
def test_each_known_slowdown_gets_its_verdict(name):
    assert diagnose(read_paths([str(CASES / name)])).verdict["id"] == EXPECTED[name]["verdict"]


# --- round steplogs11: a span's total beside its per-step time (inputs written apart from the fixtures) ---------

def test_a_line_with_a_span_total_and_a_per_step_time_covers_total_over_per_step_steps(tmp_path):
    """`total time: 600.0 s, per step time: 0.5 s` and no step named: the line stands for 1200 steps, so the
    next such line ends 1200 steps later (not at the next single step)."""
    p = tmp_path / "spans.log"
    p.write_text("".join(f"total time: {600.0 + 30 * (k == 2):.1f} s, per step time: {(600.0 + 30 * (k == 2)) / 1200:.4f} s\n"
                         for k in range(4)))
    s = read_file(p).steps
    whole = s[s["phase"] == "step"]
    assert whole["step"].tolist() == [1200, 2400, 3600, 4800]
    assert whole["duration_s"].tolist() == pytest.approx([0.5, 0.5, 0.525, 0.5], rel=1e-3)


def test_a_span_line_after_step_lines_that_counted_it_ends_at_the_last_step_named(tmp_path):
    """Step lines without a time count the span themselves: the span line ends at the last of them."""
    p = tmp_path / "counted.log"
    rows = []
    for ep in range(1, 4):
        rows += [f"epoch {ep} step {s} loss 1.{s}\n" for s in (20, 40)]
        rows.append("epoch time: 8000.0 ms, per step time: 200.0 ms\n")
    p.write_text("".join(rows))
    s = read_file(p).steps
    whole = s[s["phase"] == "step"]
    assert whole["step"].tolist() == [40, 80, 120]
    assert whole["duration_s"].tolist() == pytest.approx([0.2, 0.2, 0.2])


def test_a_bare_time_only_on_the_line_closing_each_epoch_of_a_bar_is_the_epochs_time(tmp_path):
    """A bar's updates state no time; the line closing each epoch states `20.0s`: 20 s over its 40 steps."""
    p = tmp_path / "bar.log"
    rows = []
    for ep, total in ((1, 20.0), (2, 20.0), (3, 48.0)):
        rows += [f"Epoch {ep}/3 - batch {b}/40 - loss 0.{b:02d}\n" for b in range(1, 41)]
        rows.append(f"Epoch {ep}/3 - batch 40/40 - loss 0.40 - {total:.1f}s\n")
    p.write_text("".join(rows))
    s = read_file(p).steps
    whole = s[s["phase"] == "step"]
    assert whole["step"].tolist() == [40, 80, 120]
    assert whole["duration_s"].tolist() == pytest.approx([0.5, 0.5, 1.2])
