"""The twenty-fifth held-out round (tests/data/eval/heldout25/SOURCES.md): profiler texts of the host people paste
instead of telemetry — py-spy dumps, torch's export_stacks folded stacks, line_profiler rows, a tfprof op table.
Each file's verdict against its label; what the engine does not reach yet would be a strict xfail with its reason
(the mechanisms are tested apart, on texts written there: tests/readers/test_stack_samples.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import cases

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout25"

LABELS = {
    "bigscience_tr11_eval_dataloader_deadlock.txt": "data_starvation",
    "bigscience_tr11_eval_hang_node48.txt": "data_starvation",
    "returnn_1811_copy_to_device_hang.txt": "insufficient_data",
    "pytorch_100253_export_stacks_cpu.txt": "insufficient_data",
    "styletts2_217_line_profiler_main_loop.txt": "insufficient_data",
    "tf_benchmarks_208_tfprof_op_view.txt": "insufficient_data",
}
NOT_YET: dict[str, str] = {}


def _diagnosis(name: str):
    return diagnose(read_paths([str(HERE / name)]))


@pytest.mark.parametrize(("name", "label"), cases(LABELS, NOT_YET))
def test_verdict(name, label):
    assert _diagnosis(name).verdict["id"] == label


def test_the_rank_waiting_for_data_is_told_from_its_waiting_peers():
    evidence = " ".join(_diagnosis("bigscience_tr11_eval_hang_node48.txt").hypotheses[0]["evidence"])
    assert "1 of 8 main threads is in the DataLoader" in evidence and "7 other main threads wait" in evidence
