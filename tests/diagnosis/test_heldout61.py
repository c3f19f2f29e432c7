"""The sixty-first held-out round (tests/data/eval/heldout61/SOURCES.md): GPU time lost to where the work or the
data travels — IB channels without GPUDirect RDMA (nccl-tests at 33 of 93 GB/s), NCCL on sockets over an IPoIB
interface (no verbs library), P2P turned off by NCCL_P2P_LEVEL=LOC on an A100 box whose NVLinks `nvidia-smi nvlink
-s` lists, and two hand-written tables of runs with and without CPU offload. Each file's verdict (one of the
accepted ids) and what it names (the fixes are tested apart: tests/readers/test_transport_offload.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout61"

OFFLOAD = ("slower_compute", "h2d_copy", "unexplained_slowdown", "insufficient_data")
ACCEPTED = {
    "nccl1412_ib_no_gdrdma.log": ("link_degradation",),
    "deepspeed6695_offload_ab_table.txt": ("h2d_copy",) + tuple(x for x in OFFLOAD if x != "h2d_copy"),
    "sglang1427_socket_on_ib0.log": ("link_degradation",),
    "nccl_tests228_p2p_level_loc.log": ("link_degradation",),
    "nemorl3628_offload_fraction_steps.md": ("insufficient_data",) + OFFLOAD[:3],
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def _top(name: str) -> dict:
    return diagnose(read_paths([str(HERE / name)])).hypotheses[0]


@pytest.mark.parametrize(("name", "says"), [
    ("nccl1412_ib_no_gdrdma.log", ("GPUDirect RDMA is not used", "33.3227 GB/s")),
    ("sglang1427_socket_on_ib0.log", ("IPoIB interface ib0", "libibverbs")),
    ("nccl_tests228_p2p_level_loc.log", ("NCCL_P2P_LEVEL=LOC", "12 links x 25 GB/s")),
    # the offloaded rows are the slow side, the phases that grew are named, the forward is not
    ("deepspeed6695_offload_ab_table.txt", ("ZeRO Offload=true takes 490 s", "ADAM TIME 16 → 310 s")),
    ("nemorl3628_offload_fraction_steps.md", ("Case=100%, overlap takes 1.678 s against 0.752 s with Case=Disabled",)),
])
def test_the_evidence_names_the_path_and_the_slow_side(name, says):
    text = " ".join(_top(name)["evidence"])
    assert all(s in text for s in says), text


@pytest.mark.parametrize("name", ["nccl1412_ib_no_gdrdma.log", "sglang1427_socket_on_ib0.log",
                                  "nccl_tests228_p2p_level_loc.log", "deepspeed6695_offload_ab_table.txt"])
def test_no_rank_is_named(name):
    assert not any(n.startswith("rank ") for n in _top(name)["names"])
