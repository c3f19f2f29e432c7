"""Assertions on the verdict a lab notebook recorded (notebooks 10-14), shared by the tests/test_lab_*.py files."""

from __future__ import annotations


def assert_fault_then_fix(rec: dict) -> None:
    """The notebook recorded a verdict that agrees with its own figures: confirmed only when the intervals separate
    the fix from the fault and the fix recovers ≥ 95%; inconclusive says why, with the intervals; every ratio inside
    its own positive interval.

    `rec` is what the notebook recorded: its "verdict", its paired "summary" per variant and its "rounds" (each
    run's throughput ÷ the no-fault run of the same round). How much the fault costs, whether the fix recovers it,
    and even their direction in a round are timing results: a fresh-clone CI run beside four other jobs on 2 cores
    measured lab 13's fault at 1.02× no-fault in one round of three (the direction, round by round, had been asserted
    here as something that "holds under heavy load"). They are measured with the defaults, side by side, by
    benchmarks/labs.py; the rounds are only checked for being there.
    """
    verdict, summary, rounds = rec["verdict"], rec["summary"], rec["rounds"]
    figures = verdict["figures"]
    assert verdict["status"] in ("confirmed", "inconclusive"), verdict
    assert set(rounds) >= {"fault", "fix", "no_fault"} and len(rounds["fault"]) >= 2, rounds
    assert all(v == 1.0 for v in rounds["no_fault"].values()), rounds  # each round's own baseline
    if verdict["status"] == "confirmed":
        assert figures["fix_ratio"] >= 0.95 and summary["ratio_lo"]["fix"] > summary["ratio_hi"]["fault"], verdict
    else:  # too few repeats, short of the bar, or the runs' Student-t intervals (wide with 3 loaded runs) cannot tell
        separated = summary["ratio_hi"]["fault"] < 1.0 and summary["ratio_lo"]["fix"] > summary["ratio_hi"]["fault"]
        too_few = min(summary["n"].values()) < 3
        assert too_few or figures["fix_ratio"] < 0.95 or not separated, (verdict, summary)
        assert ("too few repeats" in verdict["summary"]) == too_few, verdict
        assert "interval" in verdict["summary"], verdict
    # a ratio of positive rates has a positive interval around it (on the log scale), never a negative bound
    for variant, ratio in summary["ratio"].items():
        assert 0 < summary["ratio_lo"][variant] <= ratio <= summary["ratio_hi"][variant], (variant, summary)


def _median(values) -> float:
    xs = sorted(values)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def assert_status_follows(verdict: dict, refuted: bool, checks: dict[str, bool], named: bool = True) -> None:
    """The recorded status is the one the lab's own rule gives for the figures it recorded: refuted when
    `refuted`, else confirmed exactly when every check holds, else inconclusive (naming a failed check in its
    summary when `named`: the labs' checks are named as dist.checked_verdict prints them).

    Which of the three it is may depend on how fast a loaded machine ran (the checks that compare timing
    intervals); that it agrees with the printed figures does not. The timing claims themselves are measured by
    benchmarks/lab_verdicts.py.
    """
    expected = "refuted" if refuted else "confirmed" if all(checks.values()) else "inconclusive"
    assert verdict["status"] == expected, (verdict["status"], checks, verdict["summary"])
    if expected == "inconclusive" and named:
        assert any(name in verdict["summary"] for name, ok in checks.items() if not ok), verdict["summary"]


def assert_diagnosed(cause_id: str) -> None:
    """The notebook ran the diagnosis on its own recording and recorded a cause of the catalog. Which cause ranks
    first on a timed run is a timing-based verdict (a loaded CI machine changes it): benchmarks/lab_verdicts.py
    prints it beside the cause the lab injects."""
    from playbook.knowledge.causes import CAUSES

    assert cause_id in CAUSES, cause_id
