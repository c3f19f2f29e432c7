"""The seventieth held-out round (tests/data/eval/heldout70/SOURCES.md): real excerpts from multi-stage pipelines and
data-heavy workloads — a Ray Data progress snapshot whose read ran ahead of a GPU stage on 1 of 40 GPUs, a Ray ingest
benchmark spilling its object store, HugeCTR's `Time(1000 iters)` lines with evaluations, a DLRM `ms/it` log, a DGL
user's sample / transfer / training split, a TorchRec two-node slowdown in prose. Each file's verdict (one of the
accepted ids) and what it reads (the fixes are tested apart: tests/readers/test_heldout70_readers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout70"

ACCEPTED = {
    "ray64352_backpressure_read_ran_ahead.log": ("pipeline_imbalance", "unused_gpus"),
    "ray33307_bulk_ingest_spilling.log": ("memory_pressure", "data_starvation"),
    "hugectr186_terabyte_64k_with_evals.log": ("healthy", "periodic_stall"),
    "dlrm206_dlrm_jax_ms_per_it.log": ("healthy", "insufficient_data"),
    "dgl4821_epoch_time_sample_transfer_train.txt": ("data_starvation", "h2d_copy"),
    "torchrec356_two_node_sparse_data_dist.txt": ("link_degradation", "insufficient_data"),
}
NOT_YET = {
    "torchrec356_two_node_sparse_data_dist.txt": "refused: prose that compares two configurations (`18 it/s` on "
    "one node, `3 it/s` on two over a 100Gb/s NIC) and one stage's milliseconds in each (`sparse_data_dist` 28 ms "
    "against 246 / 254 ms) — reading it needs a comparison of configurations in free text, which no reader does",
}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def _diag(name):
    return diagnose(read_paths([str(HERE / name)]))


def test_the_gpu_stage_is_named_the_bottleneck_and_no_host():
    d = _diag("ray64352_backpressure_read_ran_ahead.log")
    ev = " ".join(d.hypotheses[0]["evidence"])
    assert "MapBatches(Infer)" in ev and "1 of the 40 GPUs" in ev and "9,078 blocks" in ev
    assert d.hypotheses[0]["names"] == []


def test_hugectr_windows_are_read_per_iteration():
    steps = read_paths([str(HERE / "hugectr186_terabyte_64k_with_evals.log")]).steps
    s = steps[steps["phase"] == "step"]
    assert s["duration_s"].median() == pytest.approx(0.00539, rel=0.01)  # 5.39 s per 1000 iterations
    d = _diag("hugectr186_terabyte_64k_with_evals.log")
    if d.verdict["id"] == "periodic_stall":
        assert "eval" in " ".join(d.hypotheses[0]["evidence"])  # the evaluation, not a cause of its own


def test_the_dgl_split_is_the_input_side():
    d = _diag("dgl4821_epoch_time_sample_transfer_train.txt")
    assert d.hypotheses[0]["lost_share"] == pytest.approx(25 / 27, abs=0.01)  # 10+0 of 11 s, 5+10 of 16 s
