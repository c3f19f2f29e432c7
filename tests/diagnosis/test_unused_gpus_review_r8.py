"""Review r8 of held-out round 63's unused GPU over a recording (diagnosis/analyzers/unused_gpus: a GPU idle at every
one of 10+ polls holding half its memory while its peers work at one level). Two roles that look like it and are
not a GPU the job never gives work: a producer-consumer pipeline's starved consumers (the project's seed case, 5
target GPUs feeding 3 drafters through one queue, one drafter holding the slot: the other two read 0-5 % at every
poll while their memory moves by tens of GB as hidden states arrive and go), and a rank hung in host code from the
start, its peers loading for a poll or two before their collective spins at 100 %. Polls written here (LABELED
SYNTHETIC): nvidia-smi --query-gpu CSV with memory.total, 2 s apart."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HEAD = "timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"


def _polls(tmp_path, util: list[list[int]], mem: list[list[int]]):
    rows = [HEAD]
    for k in range(len(util[0])):
        for g, (u, m) in enumerate(zip(util, mem, strict=True)):
            rows.append(f"2025/06/01 09:{2 * k // 60:02d}:{2 * k % 60:02d}.000, {g}, {u[k]} %, {m[k]} MiB, 97871 MiB")
    path = tmp_path / "poll.csv"
    path.write_text("\n".join(rows) + "\n")
    return diagnose(read_paths([str(path)]))


def _unused(d):
    return next((h for h in d.hypotheses if h["id"] == "unused_gpus"), None)


N = 15
TARGET = [100, 100, 0, 100, 100, 60, 100, 100, 100, 0, 100, 100, 60, 100, 100]  # blocked on a full queue at times
DRAFTER = [0, 3, 2, 5, 0, 4, 2, 0, 3, 5, 1, 0, 4, 2, 3]  # starved: the slot-holding drafter takes the queue


def test_starved_consumers_whose_memory_moves_are_a_pipeline_not_unused_gpus(tmp_path):
    util = [TARGET[i:] + TARGET[:i] for i in range(5)] + [DRAFTER, DRAFTER[::-1], [99] * N]
    mem = [[90000] * N] * 5 + [[52000 + 2000 * (k * 7 % 15) for k in range(N)]] * 2 + [[85000] * N]
    d = _polls(tmp_path, util, mem)
    assert _unused(d) is None and d.verdict["id"] != "unused_gpus"


def test_the_same_gpus_holding_a_steady_reservation_are_unused(tmp_path):
    util = [TARGET[i:] + TARGET[:i] for i in range(5)] + [[0] * N, [0] * N, [99] * N]
    mem = [[90000] * N] * 5 + [[52000] * N] * 2 + [[85000] * N]  # TensorFlow's reservation: flat
    assert _polls(tmp_path, util, mem).verdict["id"] == "unused_gpus"


def test_a_rank_hung_from_the_start_beside_spinning_peers_is_no_unused_gpu(tmp_path):
    peers = [[0, 30] + [100] * 20] * 3  # loading, then NCCL's kernels spinning on the stuck rank
    d = _polls(tmp_path, peers + [[0] * 22], [[60000] * 22] * 4)
    assert _unused(d) is None
