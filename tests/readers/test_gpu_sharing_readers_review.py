"""Review of round 52's readers on inputs written apart: a job's log that printed an nvidia-smi Processes section
(no GPU rows) before its step lines keeps its step lines."""

from __future__ import annotations

from playbook.readers import read_paths

_SECTION = """\
+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|        ID   ID                                                   Usage      |
|=============================================================================|
|    0   N/A  N/A     21877      C   python3                         30211MiB |
|    1   N/A  N/A     21878      C   python3                         30211MiB |
+-----------------------------------------------------------------------------+
"""


def test_a_logs_processes_section_leaves_its_step_lines_read(tmp_path):
    steps = "".join(f"2024-03-02 09:{i // 60:02d}:{i % 60:02d} | epoch 1 | step {i} | loss {3.1 - i / 1000:.3f} | "
                    f"{410 + i % 7} ms/step\n" for i in range(200))
    f = tmp_path / "job_1234.out"
    f.write_text(_SECTION + steps)
    g = tmp_path / "job_1235.out"
    g.write_text(steps)
    with_section, plain = read_paths([str(f)]), read_paths([str(g)])
    assert len(plain.steps) > 100
    assert len(with_section.steps) == len(plain.steps)
    assert any(k.startswith("gpu_sharing:") for k in with_section.meta)


def test_gpustat_processes_belong_to_the_host_whose_header_they_follow(tmp_path):
    # one gpustat query per host, one after the other (a loop over ssh): each host's processes are its own
    f = tmp_path / "cluster.txt"
    f.write_text("gpu-a.cluster.local      Mon Feb  5 08:00:01 2024  545.23.08\n"
                 "[0] NVIDIA L40S | 70°C, 99 % | 40000 / 46068 MB | alice(39990M)\n"
                 "[1] NVIDIA L40S | 30°C,  0 % | 30000 / 46068 MB | alice(29990M)\n"
                 "gpu-b.cluster.local      Mon Feb  5 08:00:02 2024  545.23.08\n"
                 "[0] NVIDIA L40S | 70°C, 99 % | 40000 / 46068 MB | alice(39990M)\n"
                 "[1] NVIDIA L40S | 30°C,  0 % | 30000 / 46068 MB | bob(29990M)\n")
    b = read_paths([str(f)])
    hosts = sorted(b.telemetry["host"].astype(str).unique())
    from playbook.analysis.gpu_sharing import per_gpu
    held = {gid: sorted(r["user"] for r in e["processes"]) for gid, e in per_gpu(b).items()}
    assert held == {f"{hosts[0]}:0": ["alice"], f"{hosts[0]}:1": ["alice"], f"{hosts[1]}:0": ["alice"],
                    f"{hosts[1]}:1": ["bob"]}
