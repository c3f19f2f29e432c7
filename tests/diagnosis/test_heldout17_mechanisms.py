"""The accounting the seventeenth held-out round (tests/data/eval/heldout17/SOURCES.md) asked for, on inputs written
here apart from the round's own files: a Slurm job's usage figures (sacct, seff) priced as the idle share they imply
(analysis.accounting.gpu_time.job_usage_accounting)."""

from __future__ import annotations


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
