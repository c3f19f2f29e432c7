"""The mechanisms the eighth held-out round (tests/data/eval/heldout8/SOURCES.md) asked for, each on inputs written
here (LABELED SYNTHETIC), apart from the round's own files."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def test_a_step_that_took_a_duration_is_a_step_time(tmp_path):
    # `<step word> took <duration>` without a counter (openmmtools' `Iteration took 32.709 s.`): the next step of
    # its rank; a step time that doubles half-way is a loss, not a healthy run
    lines = [f"[2024-03-02 10:{i // 60:02d}:{i % 60:02d}] INFO Step took {1.2 if i < 60 else 2.4:.3f} s"
             for i in range(120)]
    (tmp_path / "run.log").write_text("\n".join(lines) + "\n")
    bundle = read_paths([str(tmp_path / "run.log")])
    assert len(bundle.steps) == 120
    assert abs(float(bundle.steps["duration_s"].iloc[-1]) - 2.4) < 1e-9
    d = diagnose(bundle)
    assert d.verdict["id"] != ids.HEALTHY, d.verdict
