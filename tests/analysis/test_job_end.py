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


def _run(tmp_path, util_of, name="run.csv"):
    rows = [f"2025/01/01 00:{i // 60:02d}:{i % 60:02d}.000,{g},{util_of(i)}\n" for i in range(240) for g in (0, 1)]
    (tmp_path / name).write_text("timestamp,index,utilization.gpu [%]\n" + "".join(rows))
    return account(read_paths([str(tmp_path / name)]))


def test_one_time_start_up_and_shut_down_are_not_losses_but_a_mid_run_stall_is(tmp_path):
    # idle 10 s, a 4 s evaluation at step 0, 5 s of compiling at 0%, work to 220 s, a 3 s last save at 0% with a
    # 12% teardown blip, then idle: the edges are one-time costs; the same 5 s at 0% mid-run is a stall
    def util(i, stall_at):
        if i < 10 or i > 224:
            return 12 if i == 226 else 0
        if 14 <= i < 19 and stall_at == "start" or 120 <= i < 125 and stall_at == "middle" or 220 <= i <= 224:
            return 0
        return 98 + i % 2

    start = _run(tmp_path, lambda i: util(i, "start"), "start.csv")
    assert start.lost_s < 1.0 and start.warmup_s > 2 * 5 * 0.9
    middle = _run(tmp_path, lambda i: util(i, "middle"), "middle.csv")
    assert 2 * 5 * 0.9 < middle.lost_s < 2 * 5 * 1.1  # the mid-run stall only: the shut-down is still no loss


def test_a_recording_that_begins_mid_run_shows_no_start_up(tmp_path):
    # no idle poll before the GPUs first work at their level: the recording holds no start of the job, so a drop in
    # its first quarter is a drop (review1: these read healthy, the whole drop "warm-up")
    stall = _run(tmp_path, lambda i: 0 if 20 <= i < 50 else 98 + i % 2, "stall.csv")  # 30 s at 0%, 20 s in
    assert stall.warmup_s < 1.0 and stall.lost_s > 2 * 30 * 0.9
    starved = _run(tmp_path, lambda i: 30 + i % 3 * 10 if i < 48 else 98 + i % 2, "starved.csv")  # 30-50% first
    assert starved.warmup_s < 1.0 and starved.lost_s > 2 * 48 * 0.5
    # the same stall after 10 idle polls (the job's start is in the recording) is its start-up
    started = _run(tmp_path, lambda i: 0 if i < 10 or 20 <= i < 50 else 98 + i % 2, "started.csv")
    assert started.lost_s < 1.0 and started.warmup_s > 2 * 30 * 0.9


def test_a_slow_stretch_before_the_idle_tail_is_no_shut_down(tmp_path):
    # 50 s at 30% before the GPUs go idle (no memory column): work at a slower pace, not a save or a teardown,
    # which leave the GPUs idle (review1: this read healthy, the stretch "shut-down")
    slow = _run(tmp_path, lambda i: 98 + i % 2 if i < 180 else 30 if i < 230 else 0, "slow.csv")
    assert slow.lost_s > 2 * 50 * 0.6
    save = _run(tmp_path, lambda i: 98 + i % 2 if i < 180 else 0 if i < 200 else 12 if i == 201 else 0, "save.csv")
    assert save.lost_s < 1.0  # 20 s at 0% (a last save), a teardown blip, then idle: the job's shut-down


def test_a_start_at_a_steady_partial_level_is_a_slow_pace_not_a_start_up(tmp_path):
    # 10 idle polls (the job's start is in the recording), then 48 s at a steady 40%, never idle: a starved or cold
    # input pipeline at work, not loading or compiling, which are the host's work (review1: warm-up, healthy)
    slow = _run(tmp_path, lambda i: 0 if i < 10 else 40 if i < 58 else 98 + i % 2, "slow_start.csv")
    assert slow.warmup_s < 2 * 10 * 1.1 and slow.lost_s > 2 * 48 * 0.5
