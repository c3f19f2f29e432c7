"""The sixty-fourth held-out round (tests/data/eval/heldout64/SOURCES.md): real excerpts pasted in public threads with
a stated cause — Detectron's json_stats with its minibatch queue empty, DeMoN's reader warning that its batch queue was
empty on every request, and a maintainer's healthy A100 nvidia-smi screen at 84-89 %. Each file's verdict (one of the
accepted ids) and what it reads (the fixes are tested apart: tests/readers/test_input_queue_statements.py)."""

from __future__ import annotations

from pathlib import Path

from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout64"

ACCEPTED = {
    "detectron408_mb_qsize0_json_stats.log": ("data_starvation", "insufficient_data"),
    "demon58_batch_queue_empty.log": ("data_starvation", "insufficient_data"),
    "spark8_a100_reference_nvidia_smi.txt": ("healthy", "insufficient_data"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def test_the_empty_minibatch_queue_is_read_beside_the_step():
    bundle = read_paths([str(HERE / "detectron408_mb_qsize0_json_stats.log")])
    d = diagnose(bundle)
    starved = next(h for h in d.hypotheses if h["id"] == "data_starvation")
    assert "mb_qsize" in " ".join(starved["evidence"]) and len(bundle.steps) == 1


def test_the_readers_waits_past_the_first_are_counted():
    d = diagnose(read_paths([str(HERE / "demon58_batch_queue_empty.log")]))
    assert d.verdict["id"] == "data_starvation"
    assert "200 batch requests past the first" in " ".join(d.hypotheses[0]["evidence"])
    assert d.hypotheses[0]["names"] == []
