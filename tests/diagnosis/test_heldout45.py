"""The forty-fifth held-out round (tests/data/eval/heldout45/SOURCES.md): PyTorch/XLA's own statements of lost time
pasted in public pytorch/xla threads with a stated cause — metrics reports whose compilations grow step after step
(two), device scalars read ~100 times a step, an op without an XLA lowering (pt-xla-profiler lines), and two reports
whose compilations are a one-off warm-up. Each file's verdict (one of the accepted ids) and what it names (the
mechanisms are tested apart: tests/readers/test_xla_metrics.py)."""

from __future__ import annotations

from pathlib import Path

from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout45"

ACCEPTED = {
    "xla2511_lars_recompiles_step5.txt": ("recompilation",),
    "xla1368_compile_per_step_dynamic_shape.txt": ("recompilation",),
    "xla1412_item_calls_local_scalar_dense.txt": ("host_sync",),
    "xla3080_sgn_out_not_lowered.txt": ("host_sync",),
    "xla1155_two_compiles_healthy.txt": ("healthy", "insufficient_data"),
    "xla3354_compile_stable_step69.txt": ("insufficient_data", "healthy"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def _top(name: str) -> dict:
    return diagnose(read_paths([str(HERE / name)])).hypotheses[0]


def test_the_unlowered_op_is_named():
    top = _top("xla3080_sgn_out_not_lowered.txt")
    assert "aten::sgn_out" in top["evidence"][0] and "3.9 per step" in top["evidence"][0]


def test_the_scalar_reads_per_step_are_counted():
    assert "102 per step" in _top("xla1412_item_calls_local_scalar_dense.txt")["evidence"][0]


def test_the_recompilations_are_counted_against_the_warm_up():
    assert "496 of them between 5 and 6 steps" in _top("xla2511_lars_recompiles_step5.txt")["evidence"][0]
    assert "77% of that time" in _top("xla1368_compile_per_step_dynamic_shape.txt")["evidence"][0]
