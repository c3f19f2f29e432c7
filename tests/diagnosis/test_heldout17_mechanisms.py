"""The accounting the seventeenth held-out round (tests/data/eval/heldout17/SOURCES.md) asked for, on inputs written
here apart from the round's own files: the polls before the job first works at half its busy level are warm-up
(analysis.accounting.gpu_time), so a job whose first poll catches the model loading at 10-30 % is not a drop."""

from __future__ import annotations

import numpy as np


def _log(path, head: list[int]) -> None:
    rng = np.random.default_rng(17)
    lines = ["timestamp, index, utilization.gpu [%]"]
    utils = head + [int(rng.integers(96, 101)) for _ in range(60)]
    for k, u in enumerate(utils):
        lines.append(f"2026/04/01 12:{k // 60:02d}:{k % 60:02d}.000, 0, {u} %")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_partly_busy_start_is_warm_up_not_a_loss(tmp_path):
    from playbook.diagnosis import diagnose
    from playbook.readers import read_paths

    _log(tmp_path / "start.csv", [22, 4, 31])
    acc = diagnose(read_paths([tmp_path / "start.csv"])).accounting
    assert acc["lost_s"] == 0
    assert acc["warmup_s"] > 1.5  # three polls short of work at the start


def test_a_drop_after_the_job_first_works_is_still_a_loss(tmp_path):
    from playbook.analysis.accounting.gpu_time import gpu_accounting
    from playbook.analysis.series import gpu_series
    from playbook.readers import read_paths

    _log(tmp_path / "later.csv", [97, 98, 22, 4, 31])
    tele = read_paths([tmp_path / "later.csv"]).telemetry
    acc = gpu_accounting(gpu_series(tele, ("util_pct",)))
    assert acc.lost_s > 1.5
    assert acc.warmup_s == 0


def _diagnose_text(tmp_path, name: str, text: str):
    from playbook.diagnosis import diagnose
    from playbook.readers import read_paths

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return diagnose(read_paths([path]))


def test_a_job_whose_gpu_never_rose_above_a_third_loses_the_rest(tmp_path):
    """seff's maximum bounds the job's busy time: never above 30% is at least 70% idle, and the figure names no
    cause (analysis.accounting.gpu_time.job_usage_accounting)."""
    res = _diagnose_text(tmp_path, "seff.txt", "Job ID: 5\nJob Wall-clock time: 02:00:00\nNumber of GPUs: 2\n"
                                               "Max GPU Utilization: 30%\nMax GPU Memory Utilized: 2.00 GiB\n")
    assert res.verdict["id"] == "unexplained_slowdown"
    assert abs(res.accounting["lost_share"] - 0.70) < 0.01
    assert res.accounting["wall_s"] == 2 * 3600 * 2


def test_a_job_averaging_a_fed_gpu_is_healthy_but_no_more_than_likely(tmp_path):
    res = _diagnose_text(tmp_path, "sacct.txt", "JobID|TRESUsageInAve\n9.batch|gres/gpumem=2G,gres/gpuutil=97\n")
    assert res.verdict["id"] == "healthy"
    assert res.verdict["confidence"] == "likely"
