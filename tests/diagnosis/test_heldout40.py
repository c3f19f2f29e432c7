"""The fortieth held-out round (tests/data/eval/heldout40/SOURCES.md): real inference-serving evidence pasted in
public threads with a stated cause — SGLang decode lines at a full KV cache with requests queued (the retraction that
followed collapsed throughput), decode lines stating `cuda graph: False` (the graph was not captured above a batch
threshold), two pasted runs whose speculative accept length collapsed with CUDA graphs on, and a table of sampled
running batches against the captured graph sizes. Each file's verdict (one of the accepted ids) and that none names a
rank or GPU (the fixes are tested apart: tests/readers/test_serving_metrics.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout40"

ACCEPTED = {
    "sglang26248_kv_full_before_retract.log": ("memory_pressure", "insufficient_data"),
    "fastrl4_decode_cuda_graph_false.log": ("launch_bound",),
    "sglang6081_mtp_cudagraph_accept_drop.log": ("pipeline_imbalance",),
    "sglang33483_running_req_over_graph_bs.txt": ("launch_bound",),
}
NOT_YET: dict[str, str] = {
    "sglang33483_running_req_over_graph_bs.txt":
        "the running batch sizes (median 67 against graphs up to 32) are in the reporter's summary table, whose "
        "header does not say what it counts (`| config | sampled iterations | median | p95 | max |`): the engine "
        "reads the capture line (graphs up to batch 32, admission limit 4096) and no decode batch, so it cannot see "
        "a batch above the graphs (insufficient_data); a configuration whose limit exceeds its graphs is no loss "
        "until the load exceeds them",
}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize("name", [n for n in ACCEPTED if n not in NOT_YET])
def test_no_rank_or_gpu_is_named(name):
    assert diagnose(read_paths([str(HERE / name)])).hypotheses[0]["names"] == []


def test_the_two_pasted_runs_are_told_apart():
    s = read_paths([str(HERE / "sglang6081_mtp_cudagraph_accept_drop.log")]).meta
    summary = next(v for k, v in s.items() if k.startswith("serving:"))
    assert summary["segments"] == 2
    assert [r["segment"] for r in summary["records"]] == [0, 0, 0, 1, 1]
    assert [r["accept_len"] for r in summary["records"]] == [3.64, 3.62, 3.69, 1.55, 2.12]  # the `_..._` dropped
