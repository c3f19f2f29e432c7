"""The job's start-up (analysis/accounting/gpu_time.py: drops only within the job's first quarter, none after, are
its warm-up; main's rule, which superseded heldout28's own `_lead`): sporadic start-up readings, a lone at-level poll
among them included, are warm-up, not lost, when the run never drops again; a run with the same stall mid-run keeps
its start as a drop. Series written here (LABELED SYNTHETIC): one GPU, 1 s polls; a start of 15 polls with sporadic
readings (loading, allocating, building an engine: 0-60%, and one lone poll at 99%), then 120 polls at 97-99%."""

from __future__ import annotations

from playbook.analysis.accounting import account
from playbook.readers import read_paths

START = [0, 30, 0, 0, 45, 0, 12, 99, 0, 0, 60, 0, 20, 0, 35]  # a lone 99% amid the loading is no start of work


def _account(tmp_path, body: list[int]):
    rows = [f"2025/01/01 00:{i // 60:02d}:{i % 60:02d}.000,0,{u}\n" for i, u in enumerate(START + body)]
    path = tmp_path / "run.csv"
    path.write_text("timestamp,index,utilization.gpu [%]\n" + "".join(rows))
    return account(read_paths([str(path)]))


def test_a_start_up_before_steady_work_is_warm_up(tmp_path):
    acc = _account(tmp_path, [97 + i % 3 for i in range(120)])
    assert acc.lost_share < 0.01
    assert acc.warmup_s > 10  # most of the 15 start polls' idle share


def test_a_run_that_drops_again_keeps_its_start_as_a_drop(tmp_path):
    body = [97 + i % 3 for i in range(120)]
    body[60:75] = [5, 30, 0, 10, 40, 0, 0, 25, 0, 50, 0, 10, 0, 0, 20]  # the same stall again mid-run
    acc = _account(tmp_path, body)
    assert acc.warmup_s < 1  # only the first poll (0%, before any work) is warm-up
    assert acc.lost_share > 0.12  # both stalls: ~2 × 12 of 135 GPU-s


# Past the first quarter (heldout62's mechanism): a start at rest with a desktop's blips (median poll idle) is still
# the start, however long against the work after it; a start at a steady partial level is a slow pace. Series
# LABELED SYNTHETIC: 60 polls of start-up, then 70 polls of work (the start is 46% of the recording).
LONG_REST = [0, 2, 8, 0, 1, 3, 0, 0, 22, 4, 0, 1, 0, 0, 12, 2, 0, 0, 1, 30] * 3


def _account_raw(tmp_path, series: list[int]):
    rows = [f"2025/01/01 00:{i // 60:02d}:{i % 60:02d}.000,0,{u}\n" for i, u in enumerate(series)]
    path = tmp_path / "run.csv"
    path.write_text("timestamp,index,utilization.gpu [%]\n" + "".join(rows))
    return account(read_paths([str(path)]))


def test_a_long_start_at_rest_before_the_work_is_warm_up(tmp_path):
    acc = _account_raw(tmp_path, LONG_REST + [96 + i % 4 for i in range(70)])
    assert acc.lost_share < 0.02
    assert acc.warmup_s > 45


def test_a_long_start_at_a_partial_level_is_a_drop(tmp_path):
    start = [0, 0] + [35 + i % 7 for i in range(58)]  # idle two polls, then a steady 35-41%: a slow pace
    acc = _account_raw(tmp_path, start + [96 + i % 4 for i in range(70)])
    assert acc.lost_share > 0.25


def test_a_starved_run_at_rest_but_for_spikes_is_no_warm_up(tmp_path):
    # a GPU idle but for its spikes for 100 polls, at its level only for the last 20: the rest is longer than the
    # steady work after it, a starved loop, not a start (the sweep's keras#7168 dmon and Cloud Monitoring T4)
    starved = [0, 0, 95, 0, 0, 0, 90, 0, 0, 0] * 10
    acc = _account_raw(tmp_path, starved + [96 + i % 4 for i in range(20)])
    assert acc.lost_share > 0.4
