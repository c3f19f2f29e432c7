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
