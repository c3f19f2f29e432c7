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


def test_the_polls_the_job_starts_and_ends_in_are_not_drops(tmp_path):
    # a poll reads its interval's average: the job's first poll (it started 0.6 s into it) and its last (it ended
    # 0.4 s into it) read 40%; a mid-run poll at 40% between busy ones stays a drop
    def acc(mid_dip: bool):
        rows = []
        for i in range(120):
            util = 0 if i < 10 or i > 110 else 40 if i in (10, 110) or (mid_dip and i == 60) else 98 + i % 2
            rows += [f"2025/01/01 00:{i // 60:02d}:{i % 60:02d}.000,{g},{util}\n" for g in (0, 1)]
        path = tmp_path / f"edges{mid_dip}.csv"
        path.write_text("timestamp,index,utilization.gpu [%]\n" + "".join(rows))
        return account(read_paths([str(path)]))

    assert acc(False).lost_s < 1.0  # was 2 GPUs x 2 edge polls x ~0.59 s
    assert 2 * 0.5 < acc(True).lost_s < 2 * 0.7  # the mid-run poll: 2 GPUs x 0.585 s
