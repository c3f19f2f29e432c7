"""The idle tail of a recording that outlived its job (analysis/accounting/gpu_time._job_end): the mirror of the
warm-up. Series written here (LABELED SYNTHETIC): two GPUs at 98-100% for 200 polls, then idle to the end of the
recording; the tail is no GPU time of the job's when the memory is let go (or not recorded), and lost when the
memory stays held (a job hung at its end)."""

from __future__ import annotations

from playbook.analysis.accounting import account
from playbook.readers import read_paths


def _write(tmp_path, tail_mem: int | None):
    head = "timestamp,index,utilization.gpu [%]" + (",memory.used [MiB]" if tail_mem is not None else "") + "\n"
    rows = []
    for i in range(260):
        busy = i < 200
        for g in (0, 1):
            util = (98 + (i + g) % 3) if busy else 0
            mem = "" if tail_mem is None else f",{30000 if busy else tail_mem}"
            rows.append(f"2025/01/01 00:{i // 60:02d}:{i % 60:02d}.000,{g},{util}{mem}\n")
    path = tmp_path / "run.csv"
    path.write_text(head + "".join(rows))
    return account(read_paths([str(path)]))


def test_the_tail_after_the_job_is_not_lost_time(tmp_path):
    acc = _write(tmp_path, tail_mem=None)
    assert acc.lost_share < 0.01
    assert abs(acc.wall_s - 2 * 200) < 2 * 2  # the basis ends with the job's last work (2 GPUs × 200 s)


def test_the_tail_with_memory_released_is_not_lost_time(tmp_path):
    assert _write(tmp_path, tail_mem=400).lost_share < 0.01  # a CUDA context's worth left: the job exited


def test_the_tail_with_memory_held_is_a_hang(tmp_path):
    acc = _write(tmp_path, tail_mem=30000)
    assert acc.lost_share > 0.15  # 60 of 260 s idle while the job still holds its memory
