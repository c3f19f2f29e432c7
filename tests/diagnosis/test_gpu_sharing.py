"""What sharing a GPU means for the job (analysis.gpu_sharing, diagnosis/analyzers/held_memory.py), on inputs written
apart from tests/data/eval/heldout52: another user's idle GPU is left out of the job (a rank of the job that waits is
not); memory held by a process the driver cannot name is memory_pressure on its GPU; memory held on an idle GPU while
nothing works names that GPU as memory_pressure's, too weakly to decide a verdict (a starved or hung job polled in
its wait looks the same); a busy GPU beside it makes the idle one the other analyses' business."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def _gpustat(tmp_path, rows: list[str]):
    f = tmp_path / "node9.txt"
    f.write_text("node9                     Mon Feb  5 08:00:01 2024  545.23.08\n" + "\n".join(rows) + "\n")
    return diagnose(read_paths([str(f)]))


BUSY = [f"[{i}] NVIDIA L40S | 70°C, 99 % | 40000 / 46068 MB | carol({39990}M)" for i in range(3)]


def test_another_users_idle_gpu_is_left_out_of_the_job(tmp_path):
    d = _gpustat(tmp_path, BUSY + ["[3] NVIDIA L40S | 30°C,   0 % | 30000 / 46068 MB | dave(29990M) carol(0M)"])
    assert any("node9:3: idle throughout" in w and "dave 29990 MiB" in w and "another owner's GPU" in w
               for w in d.warnings)
    assert [g["id"] for g in d.gpus] == ["node9:0", "node9:1", "node9:2"]
    assert "node9:3" not in d.hypotheses[0].get("names", [])


def test_an_idle_gpu_the_job_holds_memory_on_stays_the_jobs(tmp_path):
    d = _gpustat(tmp_path, BUSY + ["[3] NVIDIA L40S | 30°C,   0 % | 30000 / 46068 MB | carol(29990M)"])
    assert "node9:3" in [g["id"] for g in d.gpus]
    assert not any("another owner's GPU" in w for w in d.warnings)


def test_an_idle_gpu_without_a_working_peer_listing_processes_is_not_judged_by_owner(tmp_path):
    rows = [ln.replace(" | carol(39990M)", "") for ln in BUSY]  # the working GPUs list no processes
    d = _gpustat(tmp_path, rows + ["[3] NVIDIA L40S | 30°C,   0 % | 30000 / 46068 MB | dave(29990M)"])
    assert not any("another owner's GPU" in w for w in d.warnings)


DEAD = """\
+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    2   N/A  N/A     55120      C   [Not Found]                               22000MiB |
|    3   N/A  N/A     55121      C   python                                    21000MiB |
+---------------------------------------------------------------------------------------+
"""


def test_memory_held_by_a_process_the_driver_cannot_name_is_memory_pressure_on_its_gpu(tmp_path):
    f = tmp_path / "box.txt"
    f.write_text(DEAD)
    d = diagnose(read_paths([str(f)]))
    assert d.hypotheses[0]["id"] == ids.MEMORY_PRESSURE
    assert d.hypotheses[0]["names"] == ["box:2"]


SNAPSHOT = """\
Mon Jan 15 10:23:45 2024
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  NVIDIA RTX A5000    Off  | 00000000:3B:00.0 Off |                  Off |
| 30%   41C    P2    64W / 230W |  {m0}MiB / 24256MiB |      {u0}%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
|   1  NVIDIA RTX A5000    Off  | 00000000:AF:00.0 Off |                  Off |
| 30%   38C    P8    19W / 230W |      5MiB / 24256MiB |      0%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
"""


def _snapshot(tmp_path, m0: int, u0: int):
    f = tmp_path / "ws.txt"
    f.write_text(SNAPSHOT.format(m0=f"{m0:5d}", u0=f"{u0:2d}"))
    return diagnose(read_paths([str(f)]))


def test_most_memory_held_on_an_idle_gpu_while_nothing_works_names_that_gpu_but_one_poll_decides_nothing(tmp_path):
    d = _snapshot(tmp_path, 20100, 0)  # a leftover, or a starved or hung job polled in its wait: one poll cannot say
    assert d.verdict["id"] == ids.INSUFFICIENT_DATA
    held = [h for h in d.hypotheses if h["id"] == ids.MEMORY_PRESSURE]
    assert held and held[0]["names"] == ["ws:0"]


def test_little_memory_on_an_idle_gpu_is_no_finding(tmp_path):
    d = _snapshot(tmp_path, 3000, 0)
    assert all(h["id"] != ids.MEMORY_PRESSURE for h in d.hypotheses)


def test_a_working_gpu_is_not_memory_held_without_work(tmp_path):
    d = _snapshot(tmp_path, 20100, 96)
    assert all(h["id"] != ids.MEMORY_PRESSURE for h in d.hypotheses)


def test_several_idle_gpus_holding_memory_are_one_observation_not_a_verdict(tmp_path):
    f = tmp_path / "ws.txt"  # both GPUs idle with most memory held: the same doubt twice is not twice the evidence
    f.write_text(SNAPSHOT.format(m0="20100", u0=" 0").replace("      5MiB / 24256MiB", "  19000MiB / 24256MiB"))
    d = diagnose(read_paths([str(f)]))
    assert d.verdict["id"] == ids.INSUFFICIENT_DATA
    assert [h["names"] for h in d.hypotheses if h["id"] == ids.MEMORY_PRESSURE] == [["ws:0", "ws:1"]]
