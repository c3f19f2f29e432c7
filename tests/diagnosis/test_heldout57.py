"""The fifty-seventh held-out round (tests/data/eval/heldout57/SOURCES.md): real JAX / XLA excerpts pasted in public
threads with a stated cause — XLA's constant-folding alarm in two versions' wording, a short MaxText log whose first
two steps compile, jax_log_compiles' absl wording, a reporter's table of compile vs run times, and the start of a
Levanter multi-host checkpoint save that then stalled. Each file's verdict (one of the accepted ids), what is read,
and that no host is named (the fixes are tested apart: tests/readers/test_xla_alarms.py,
tests/readers/test_compile_tables.py, tests/readers/test_levanter_prefix.py, tests/analysis/test_short_start_up.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.analysis.accounting import account
from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout57"

ACCEPTED = {
    "jax12789_constant_folding_dus.log": ("recompilation", "insufficient_data"),
    "jax24707_rankdata_constant_folding.log": ("recompilation", "insufficient_data"),
    "maxtext1956_unblocked_step_times.log": ("healthy", "insufficient_data"),
    "jax8931_absl_log_compiles_unrolled_loop.log": ("recompilation", "insufficient_data"),
    "jaxgcm592_compile_vs_steady_chunk.md": ("recompilation", "insufficient_data"),
    "levanter486_multihost_checkpoint_save_start.log": ("insufficient_data", "collective_straggler"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize(("name", "seconds"), [
    ("jax12789_constant_folding_dus.log", [2.216622055]),
    ("jax24707_rankdata_constant_folding.log", [6.728977]),
    ("jax8931_absl_log_compiles_unrolled_loop.log", [2.244359254837036 + 1.267568826675415]),
    ("jaxgcm592_compile_vs_steady_chunk.md", [469.0, 641.0, 1331.0, 1067.0, 1746.0, 2886.0, 343.0, 596.0]),
])
def test_the_compile_time_is_read(name, seconds):
    rows = read_paths([str(HERE / name)]).events
    assert rows["kind"].tolist() == ["compile"] * len(seconds)
    assert rows["duration_s"].tolist() == pytest.approx(seconds)


def test_the_start_up_steps_are_warm_up_not_a_loss():
    acc = account(read_paths([str(HERE / "maxtext1956_unblocked_step_times.log")]))
    assert acc.warmup_s == pytest.approx(18.665 + 9.720) and acc.lost_share == 0.0


def test_the_levanter_process_indices_are_read_and_none_is_named():
    bundle = read_paths([str(HERE / "levanter486_multihost_checkpoint_save_start.log")])
    assert sorted(set(bundle.events["rank"])) == [-1, 1, 3, 7, 8]  # line 1's date is cut: its process unread
    assert diagnose(bundle).hypotheses[0]["names"] == []
