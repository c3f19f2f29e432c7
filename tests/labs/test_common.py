"""Interleaved repeated measurement: every variant runs once per repeat, in a balanced order."""

from __future__ import annotations

import pytest

from playbook.analysis.lab_verdict import lab_verdict, variant_summary
from playbook.labs.workloads.common import measure_variants


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
    rows = [{"variant": v, "repeat": r, "throughput": t + (-1) ** r * 1}
            for r in range(4) for v, t in [("no_fault", 100), ("fault", 99.5), ("fix", 100)]]
    assert lab_verdict(variant_summary(pd.DataFrame(rows))).status == "refuted"  # no cost, a 5% one ruled out
    rows = [{"variant": v, "repeat": r, "throughput": t + (-1) ** r * 20}
            for r in range(4) for v, t in [("no_fault", 100), ("fault", 98), ("fix", 100)]]
    assert lab_verdict(variant_summary(pd.DataFrame(rows))).status == "inconclusive"  # ±20%: cannot tell


def test_two_runs_that_cannot_separate_fix_from_fault_are_inconclusive():
    import pandas as pd

    # the quick lab 12 case: 2 runs a side, the fix's point estimate high but its t interval wide
    tp = {"no_fault": (100, 104), "fault": (80, 90), "fix": (86, 126)}
    rows = [{"variant": v, "repeat": r, "throughput": t[r]} for v, t in tp.items() for r in range(2)]
    summary = variant_summary(pd.DataFrame(rows))
    v = lab_verdict(summary)
    assert v.status == "inconclusive" and "interval" in v.summary
    assert summary.loc["fix", "ratio_hi"] - summary.loc["fix", "ratio_lo"] > 0.5  # t with ~1 df, not ±1.96 se
    assert "too few repeats" in v.summary and (summary["note"].drop("no_fault") != "").all()
    assert (summary["ratio_lo"] > 0).all()  # a t-interval on the ratio itself reached -0.47 here; the log one cannot
    one = variant_summary(pd.DataFrame([{"variant": k, "repeat": 0, "throughput": t[0]} for k, t in tp.items()]))
    assert lab_verdict(one).status == "inconclusive"


def test_a_period_is_named_only_when_significant():
    from playbook.analysis.lab_verdict import period_text

    assert period_text({"every_n_steps": 3, "p_value": 1.0}) == (None, "no period found (best candidate every 3 "
                                                                      "steps, p = 1)")
    assert period_text({"every_n_steps": 20, "p_value": 1e-4})[0] == 20
    assert period_text(None) == (None, "no period found")


def test_ratio_intervals_are_symmetric_factors_on_the_log_scale():
    import numpy as np
    import pandas as pd

    rows = [{"variant": v, "repeat": r, "throughput": t * (1 + 0.05 * (-1) ** r)}
            for r in range(4) for v, t in [("no_fault", 100.0), ("fault", 40.0)]]
    s = variant_summary(pd.DataFrame(rows))
    r, lo, hi = s.loc["fault", ["ratio", "ratio_lo", "ratio_hi"]]
    assert r == pytest.approx(0.4) and lo > 0 and hi / r == pytest.approx(r / lo)  # the same factor each way
    assert np.log(hi / lo) > 0 and s.loc["fault", "note"] == ""
    assert "throughput is 40% of no-fault's" in lab_verdict(s, fix="fault").summary
    assert "loop efficiency is 40%" in lab_verdict(s, fix="fault", quantity="loop efficiency").summary
