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


SMI_4090 = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0 Off |                  Off |
| 30%   55C    P2            310W /  450W |   20110MiB /  24564MiB |     97%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
|   1  NVIDIA GeForce RTX 4090        Off |   00000000:02:00.0 Off |                  Off |
| 30%   54C    P2            305W /  450W |   20090MiB /  24564MiB |     96%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""
P2P_OFF_LINES = """\
box:2001:2001 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1
box:2001:2001 [0] NCCL INFO comm 0x5e1a rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xabc - Init START
box:2001:2001 [0] NCCL INFO comm 0x5e1a rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xabc - Init COMPLETE
"""
SHM_LINES = P2P_OFF_LINES.replace("- Init COMPLETE", "- Init COMPLETE\nbox:2001:2001 [0] NCCL INFO Channel 00/0 : "
                                  "0[0] -> 1[1] via SHM/direct/direct")


def test_p2p_off_on_geforce_rtx_40_gpus_loses_nothing(tmp_path):
    # GeForce RTX 40-series GPUs have no peer-to-peer (the driver reports none; accelerate sets NCCL_P2P_DISABLE=1
    # for them): NCCL goes through host memory whatever the setting — no degraded link
    for lines in (P2P_OFF_LINES, SHM_LINES):
        (tmp_path / "smi.txt").write_text(SMI_4090)
        (tmp_path / "nccl.log").write_text(lines)
        d = diagnose(read_paths([str(tmp_path / "smi.txt"), str(tmp_path / "nccl.log")]))
        assert not any(h["id"] == "link_degradation" and h["score"] >= 0.3 for h in d.hypotheses)
    a100 = SMI_4090.replace("GeForce RTX 4090     ", "A100-SXM4-40GB       ")
    (tmp_path / "smi.txt").write_text(a100)
    (tmp_path / "nccl.log").write_text(P2P_OFF_LINES)
    d = diagnose(read_paths([str(tmp_path / "smi.txt"), str(tmp_path / "nccl.log")]))
    assert any(h["id"] == "link_degradation" for h in d.hypotheses)


def test_only_geforce_rtx_40_parts_count_as_without_p2p():
    from playbook.analysis.nccl import p2p_less
    assert p2p_less(["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4060 Ti"])
    # professional cards of the same numbers peer over PCIe: not these
    assert not p2p_less(["NVIDIA RTX 4000 Ada Generation"]) and not p2p_less(["Quadro RTX 4000"])
    assert not p2p_less(["NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB"]) and not p2p_less([])
