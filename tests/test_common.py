"""Interleaved repeated measurement: every variant runs once per repeat, in a balanced order."""

from __future__ import annotations

from playbook.analysis.compare import lab_verdict, variant_summary
from playbook.workloads.common import measure_variants


def test_variants_are_interleaved_and_each_follows_each_other_variant():
    calls = []
    runs = measure_variants(lambda v, r: calls.append((v, r)) or {"throughput": 1.0}, ["a", "b", "c"], repeats=4)
    assert len(runs) == 12 and sorted(runs.groupby("variant").size().tolist()) == [4, 4, 4]
    assert [v for v, r in calls if r == 0] == ["a", "b", "c"] and [v for v, r in calls if r == 1] == ["a", "c", "b"]
    predecessors = {(calls[i - 1][0], calls[i][0]) for i in range(1, len(calls)) if calls[i - 1][1] == calls[i][1]}
    assert {("a", "b"), ("b", "a"), ("b", "c"), ("c", "b")} <= predecessors


def test_lab_verdict_reads_fault_and_fix_against_the_noise():
    import pandas as pd

    rows = [{"variant": v, "repeat": r, "throughput": t}
            for r in range(4) for v, t in [("no_fault", 100 + r), ("fault", 50 + r), ("fix", 99 + r)]]
    verdict = lab_verdict(variant_summary(pd.DataFrame(rows)))
    assert verdict.status == "confirmed" and 0.48 < verdict.fault_ratio < 0.52 and verdict.fix_ratio > 0.95
    rows = [{"variant": v, "repeat": r, "throughput": t + (-1) ** r * 20}
            for r in range(4) for v, t in [("no_fault", 100), ("fault", 98), ("fix", 100)]]
    assert lab_verdict(variant_summary(pd.DataFrame(rows))).status == "refuted"
