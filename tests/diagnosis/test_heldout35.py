"""The thirty-fifth held-out round (tests/data/eval/heldout35/SOURCES.md): real distributed-run evidence pasted in
public threads with a stated cause — an NCCL IB completion WARN (ACS breaking GPUDirect RDMA), a node-pair sweep of
nccl-tests busbw naming a slow node, an nccl-tests init on one host that hung (IOMMU), PyTorch watchdog lines wrapped
by the paste, c10d's monitored_barrier naming four ranks, and a healthy table's latency-bound rows. Each file's
verdict (one of the accepted ids) and the rank or host it names (the fixes are tested apart:
tests/readers/test_distributed_evidence.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout35"

ACCEPTED = {
    "nccl928_ib_error4_acs_warn.log": ("link_degradation",),
    "nccl_tests106_node644_pair_busbw.txt": ("link_degradation",),
    "nccl_tests115_a6000_iommu_hang.log": ("link_degradation", "insufficient_data"),
    "milabench269_reduce_watchdog_seq2070.log": ("insufficient_data", "collective_straggler"),
    "nccl849_monitored_barrier_ranks4to7.log": ("collective_straggler",),
    "nccl949_ring_after_acs_small_sizes.txt": ("healthy", "insufficient_data"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize(("name", "names"), [
    ("nccl849_monitored_barrier_ranks4to7.log", ["rank 4", "rank 5", "rank 6", "rank 7"]),
    ("nccl_tests106_node644_pair_busbw.txt", ["se02gn644"]),
    ("milabench269_reduce_watchdog_seq2070.log", []),  # the ranks shown all waited: none of them is the late one
])
def test_the_guilty_rank_or_node_is_named(name, names):
    assert diagnose(read_paths([str(HERE / name)])).hypotheses[0]["names"] == names


def test_the_wrapped_watchdog_lines_are_read_with_their_counters():
    rows = read_paths([str(HERE / "milabench269_reduce_watchdog_seq2070.log")]).nccl
    details = rows[rows["kind"] == "timeout"]["detail"].tolist()
    assert details[1] == "REDUCE seq=2070 ran_ms=600036 pg=0 done=2069 enq=2070"  # rank 12
