"""Review of round 52's sharing rules on inputs written apart: a containerised job's own processes, which nvidia-smi
lists as '[Not Found]' (the driver gives host PIDs that the container's /proc does not hold), are not a dead run's
leftovers; a data-parallel job's own idle rank (its own `python` process, another PID) is not another user's GPU."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths

_TOP = """\
Mon Jan 15 10:23:{s:02d} 2024
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
"""
_PROCS = """
+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
"""
_END = "+---------------------------------------------------------------------------------------+\n"


def _gpu(i: int, mem: int, util: int) -> str:
    return (f"|   {i}  NVIDIA A100-SXM4-80GB          On  | 00000000:{i + 7:02d}:00.0 Off |                    0 |\n"
            f"| N/A   45C    P0             300W / 400W |  {mem:5d}MiB / 81559MiB |    {util:3d}%      Default |\n"
            "|                                         |                      |             Disabled |\n"
            "+-----------------------------------------+----------------------+----------------------+\n")


def _proc(g: int, pid: int, name: str, mem: int) -> str:
    return f"|    {g}   N/A  N/A    {pid:6d}      C   {name:<40s}{mem:>6d}MiB |\n"


def _table(path, gpus: list[tuple[int, int]], procs: list[tuple[int, int, str, int]], polls: int = 1):
    text = "".join(_TOP.format(s=s) + "".join(_gpu(i, m, u) for i, (m, u) in enumerate(gpus)) + _PROCS
                   + "".join(_proc(*p) for p in procs) + _END for s in range(polls))
    path.write_text(text)
    return diagnose(read_paths([str(path)]))


def test_a_busy_containerised_jobs_not_found_processes_are_no_memory_pressure(tmp_path):
    d = _table(tmp_path / "pod.txt", [(70000, 99), (70000, 98)],
               [(0, 3712004, "[Not Found]", 69990), (1, 3712005, "[Not Found]", 69990)])
    assert d.hypotheses[0]["id"] != ids.MEMORY_PRESSURE
    assert not any(h["id"] == ids.MEMORY_PRESSURE for h in d.hypotheses)


def test_a_containerised_jobs_processes_alone_are_no_dead_run(tmp_path):
    # every process the input lists is unresolved: the PID-namespace view, not one dead process among live ones
    f = tmp_path / "pod_procs.txt"
    f.write_text(_PROCS.lstrip("\n") + _proc(0, 3712004, "[Not Found]", 69990) + _proc(1, 3712005, "[Not Found]", 69990)
                 + _END)
    d = diagnose(read_paths([str(f)]))
    assert not any(h["id"] == ids.MEMORY_PRESSURE for h in d.hypotheses)


def test_a_dead_process_among_named_ones_is_still_memory_pressure(tmp_path):
    d = _table(tmp_path / "box.txt", [(22010, 0), (21010, 0)],
               [(0, 55120, "[Not Found]", 22000), (1, 55121, "python", 21000)])
    assert d.hypotheses[0]["id"] == ids.MEMORY_PRESSURE and "box:0" in d.hypotheses[0]["names"]


def test_a_data_parallel_jobs_own_idle_rank_is_not_another_users_gpu(tmp_path):
    busy = [(40000, 97), (40000, 98), (40000, 96)]
    d = _table(tmp_path / "ddp.txt", busy + [(30000, 0)],
               [(g, 100 + g, "python", 39990) for g in range(3)] + [(3, 103, "python", 29990)], polls=20)
    assert not any("another owner's GPU" in w for w in d.warnings)
    assert "ddp:3" in [g["id"] for g in d.gpus]
    assert d.hypotheses[0]["id"] != ids.HEALTHY


def test_another_programs_idle_gpu_is_still_left_out(tmp_path):
    busy = [(40000, 97), (40000, 98), (40000, 96)]
    d = _table(tmp_path / "shared.txt", busy + [(30000, 0)],
               [(g, 100 + g, "python", 39990) for g in range(3)] + [(3, 9001, "/opt/blender/blender", 29990)],
               polls=20)
    assert any("ddp" not in w and "another owner's GPU" in w for w in d.warnings)
    assert "shared:3" not in [g["id"] for g in d.gpus]


def test_gpustat_of_two_hosts_leaves_out_only_the_other_users_gpu(tmp_path):
    f = tmp_path / "cluster.txt"
    f.write_text("nodeA                     Mon Feb  5 08:00:01 2024  545.23.08\n"
                 "[0] NVIDIA L40S | 70°C, 99 % | 40000 / 46068 MB | alice(39990M)\n"
                 "[1] NVIDIA L40S | 30°C,  0 % | 30000 / 46068 MB | alice(29990M)\n"
                 "nodeB                     Mon Feb  5 08:00:02 2024  545.23.08\n"
                 "[0] NVIDIA L40S | 70°C, 99 % | 40000 / 46068 MB | alice(39990M)\n"
                 "[1] NVIDIA L40S | 30°C,  0 % | 30000 / 46068 MB | bob(29990M)\n")
    d = diagnose(read_paths([str(f)]))
    assert sorted(g["id"] for g in d.gpus) == ["nodeA:0", "nodeA:1", "nodeB:0"]


def test_a_busy_gpu_whose_only_process_is_unresolved_is_no_dead_run(tmp_path):
    # one name resolved on the host (a PID that the container happens to hold too), the other GPU's process not:
    # a dead process computes nothing, so the busy GPU's only process is alive
    d = _table(tmp_path / "pod2.txt", [(70000, 99), (70000, 98)],
               [(0, 3712004, "[Not Found]", 69990), (1, 1611, "python", 69990)])
    assert not any(h["id"] == ids.MEMORY_PRESSURE for h in d.hypotheses)
