"""The eighteenth held-out round (tests/data/eval/heldout18/SOURCES.md): multi-rank logs where the question is
which rank or host is guilty. Each file's verdict and the rank it names; what the engine does not reach yet is a
strict xfail with its reason (the mechanisms are tested apart, on logs written there:
tests/readers/test_guilty_rank.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import cases

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout18"

LABELS = {
    "horovod_1012_docker_missing_rank1.log": "collective_straggler",
    "horovod_215_keras_ready_ranks_32.log": "collective_straggler",
    "horovod_1442_stalled_ranks_bert.log": "collective_straggler",
    "horovod_469_mpirun_rank7_sigkill.log": "insufficient_data",
    "bridge_llm_1_torchrun_root_cause_rank1.log": "insufficient_data",
    "flagscale_938_straggler_report_healthy.log": "healthy",
    "nccl_1730_ras_one_rank_watchdog.log": "insufficient_data",
}
NOT_YET = {
    "flagscale_938_straggler_report_healthy.log": "read now (one rank_timings event: optimizer on six ranks "
                                                  "within 1.10x), but one report of one 10 ms section is too "
                                                  "little to vouch for health: insufficient_data",
    "nccl_1730_ras_one_rank_watchdog.log": "a watchdog timeout is collective_straggler evidence by itself (events "
                                           "0.7); one rank's view now names no rank and says rank 118 is not "
                                           "behind, but the verdict stays collective_straggler (likely)",
}
# the rank (and host) each file's diagnosis must name as the one to look at
STALLED = {"horovod_1012_docker_missing_rank1.log": "rank 1", "horovod_215_keras_ready_ranks_32.log": "rank 16",
           "horovod_1442_stalled_ranks_bert.log": "rank 4"}
DIED = {"horovod_469_mpirun_rank7_sigkill.log": (7, "HOSTNAME"),
        "bridge_llm_1_torchrun_root_cause_rank1.log": (1, "user-Rack-Server")}


def _diagnosis(name: str):
    return diagnose(read_paths([str(HERE / name)]))


@pytest.mark.parametrize(("name", "label"), cases(LABELS, NOT_YET))
def test_verdict(name, label):
    assert _diagnosis(name).verdict["id"] == label


@pytest.mark.parametrize("name", list(STALLED))
def test_the_stalled_rank_is_named(name):
    assert _diagnosis(name).hypotheses[0]["names"] == [STALLED[name]]


@pytest.mark.parametrize("name", list(DIED))
def test_the_dead_rank_and_its_host_are_named(name):
    verdict = _diagnosis(name).verdict
    rank, host = DIED[name]
    assert (verdict["ended"]["rank"], verdict["ended"]["host"]) == (rank, host)
    assert f"on rank {rank} of {host}" in verdict["sentence"]


def test_the_straggler_report_is_read():
    ev = read_paths([str(HERE / "flagscale_938_straggler_report_healthy.log")]).events
    assert ev["detail"].tolist() == ["line 10: optimizer per rank (6 ranks): slowest rank 1 10.12 ms, fastest rank 4 "
                                     "9.17 ms (1.10x)"]


def test_one_ranks_watchdog_blames_no_rank():
    diagnosis = _diagnosis("nccl_1730_ras_one_rank_watchdog.log")
    assert "logged by rank 118 (a rank that waited)" in diagnosis.verdict["sentence"]
    top = diagnosis.hypotheses[0]
    assert top["names"] == [] and not any("never reported" in e for e in top["evidence"])
    assert any("rank 118 completed every collective before #2398459 and enqueued 119 more" in e
               for e in top["evidence"])
