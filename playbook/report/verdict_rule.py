"""The triage verdict: what a diagnosis concludes, by one rule (used by the triage notebook and the headline).

The triage notebook tests one hypothesis: "this run has a utilization problem, and the playbook can name its
cause". Verdict rule (`triage_verdict`) on the diagnosis, whose scores are 0-1 with
`healthy` = 1 - P(something is wrong), so a cause outranks `healthy` roughly when it scores above 0.5:
  refuted       `healthy` ranks first with a score above 0.5: nothing to fix
  confirmed     the top cause scores at least CONFIRM_SCORE (0.5: its evidence outweighs "healthy") and leads the
                runner-up cause by at least AMBIGUITY_MARGIN (0.1), so the cause is named, not just the problem
  inconclusive  otherwise: no hypothesis at all, `healthy` first but at most 0.5 (too little data to rule a problem
                out: the diagnosis caps it there), or two causes within the margin of each
                other (e.g. a periodic stall that a data-loader refill and a checkpoint would both explain); the
                top hypothesis's `next_step` says which measurement tells them apart
"""

from __future__ import annotations

from typing import Any

CONFIRM_SCORE = 0.5
AMBIGUITY_MARGIN = 0.1


def top_hypothesis(diagnosis: dict[str, Any]) -> dict[str, Any] | None:
    """The highest-scoring hypothesis (healthy included), or None."""
    hyps = diagnosis.get("hypotheses") or []
    return max(hyps, key=lambda h: h.get("score") or 0.0) if hyps else None


def ranked_causes(diagnosis: dict[str, Any]) -> list[dict[str, Any]]:
    """The hypotheses other than healthy, highest score first."""
    hyps = [h for h in diagnosis.get("hypotheses") or [] if h.get("id") != "healthy"]
    return sorted(hyps, key=lambda h: h.get("score") or 0.0, reverse=True)


def triage_verdict(diagnosis: dict[str, Any]) -> tuple[str, str]:
    """(status, one-line summary) by the rule in the module docstring."""
    top = top_hypothesis(diagnosis)
    if top is None:
        return "inconclusive", "no hypothesis could be scored from these inputs (see the warnings)"
    score = float(top.get("score") or 0.0)
    if top["id"] == "healthy":
        if score <= CONFIRM_SCORE:  # healthy is capped at 0.5 where the data cannot show a problem either way
            return "inconclusive", (f"nothing found, but healthy scores only {score:.2f}: too little data to rule "
                                    "a problem out (see the warnings)")
        return "refuted", f"no utilization problem found: healthy ranks first (score {score:.2f})"
    evidence = (top.get("evidence") or [""])[0]
    causes = ranked_causes(diagnosis)
    runner_up = causes[1] if len(causes) > 1 else None
    second = float(runner_up.get("score") or 0.0) if runner_up else 0.0
    if score < CONFIRM_SCORE:
        return "inconclusive", (f"best guess {top['id']} scores {score:.2f} < {CONFIRM_SCORE}; next: "
                                f"{top.get('next_step') or 'collect more data'}")
    if runner_up is not None and score - second < AMBIGUITY_MARGIN:
        return "inconclusive", (f"{top['id']} ({score:.2f}) or {runner_up['id']} ({second:.2f}): a problem, "
                                f"but the cause is not settled; next: {top.get('next_step') or 'n/a'}")
    return "confirmed", f"{top['id']} (score {score:.2f}): {evidence}".rstrip(": ")
