"""Review r7 of round 61's NCCL transport rules (playbook/analysis/nccl.py): healthy single-node logs written apart
from the round's excerpts."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

SINGLE_NODE_IPOIB = """\
gpu07:4101:4101 [0] NCCL INFO Bootstrap : Using ib0:10.12.0.7<0>
NCCL version 2.18.5+cuda12.2
gpu07:4101:4160 [0] NCCL INFO Failed to open libibverbs.so[.1]
gpu07:4101:4160 [0] NCCL INFO NET/Socket : Using [0]ib0:10.12.0.7<0> [1]eno1:192.168.3.7<0>
gpu07:4101:4160 [0] NCCL INFO Using network Socket
gpu07:4101:4160 [0] NCCL INFO comm 0x55a0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 7000 commId 0x77e1 - Init START
gpu07:4102:4161 [1] NCCL INFO comm 0x55b0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 8000 commId 0x77e1 - Init START
gpu07:4101:4160 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC
gpu07:4102:4161 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC
gpu07:4101:4160 [0] NCCL INFO Connected all rings
gpu07:4101:4160 [0] NCCL INFO comm 0x55a0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 7000 commId 0x77e1 - Init COMPLETE
"""


def test_a_socket_on_ipoib_in_a_job_whose_every_rank_is_on_this_host_is_no_fallback(tmp_path):
    # NCCL's default socket interface prefers ib*: a single-node job without verbs names ib0, and sends nothing
    # between nodes (both ranks of nranks 2 on gpu07, their channels P2P)
    p = tmp_path / "nccl.log"
    p.write_text(SINGLE_NODE_IPOIB)
    d = diagnose(read_paths([str(p)]))
    assert not any(h["id"] == "link_degradation" and h["score"] >= 0.3 for h in d.hypotheses)
    assert d.verdict["id"] != "link_degradation"


def test_the_same_lines_of_a_job_with_ranks_elsewhere_are_still_the_fallback(tmp_path):
    p = tmp_path / "nccl.log"
    p.write_text(SINGLE_NODE_IPOIB.replace("nranks 2", "nranks 16"))
    d = diagnose(read_paths([str(p)]))
    assert d.verdict["id"] == "link_degradation"
