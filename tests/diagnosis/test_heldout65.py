"""The sixty-fifth held-out round (tests/data/eval/heldout65/SOURCES.md): real excerpts from recent threads, any tool —
three runs the thread says were fine (prime-diloco's MFU log, Megatron-DeepSpeed's iter time, two finetrainers
progress bars at batch 4 and 1), an aphrodite server with and without `--enforce-eager`, a PaddleClas epoch-time
table per batch size. Each file's verdict (one of the accepted ids) and what it reads (the fixes are tested apart:
tests/readers/test_serving_graph_state.py, tests/readers/test_variant_sweep.py)."""

from __future__ import annotations

from pathlib import Path

from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout65"

ACCEPTED = {
    "prime_diloco25_mfu_step_log.log": (ids.HEALTHY, ids.INSUFFICIENT_DATA),
    "deepspeed5175_megatron_ds_iter_time.log": (ids.HEALTHY, ids.INSUFFICIENT_DATA),
    "finetrainers111_bs4_vs_bs1_tqdm.log": (ids.HEALTHY, ids.WORKLOAD_CHANGE, ids.INSUFFICIENT_DATA),
    "sonar1114_aphrodite_eager_tp2.log": (ids.LAUNCH_BOUND, ids.INSUFFICIENT_DATA),
    "paddleclas123_batch_size_epoch_time.txt": (ids.DATA_STARVATION, ids.INSUFFICIENT_DATA),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def test_the_eager_run_is_compared_with_the_graphed_one():
    d = diagnose(read_paths([str(HERE / "sonar1114_aphrodite_eager_tp2.log")]))
    assert d.verdict["id"] == ids.LAUNCH_BOUND and d.hypotheses[0]["names"] == []
    assert "eager loses 46%" in " ".join(d.hypotheses[0]["evidence"])


def test_the_batch_size_table_is_read_and_its_cost_stated():
    d = diagnose(read_paths([str(HERE / "paddleclas123_batch_size_epoch_time.txt")]))
    assert d.verdict["id"] == ids.INSUFFICIENT_DATA
    assert "Batch Size=1024 takes 110.5 s against 68.5 s" in d.verdict["sentence"]
