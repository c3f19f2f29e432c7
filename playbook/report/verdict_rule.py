"""The triage verdict: what a diagnosis concludes, by one rule (used by the triage notebook and the headline).

The triage notebook tests one hypothesis: "this run has a utilization problem, and the playbook can name its
cause". The diagnosis puts its verdict first (the what-if accounting decides it: playbook.diagnosis.attribution);
the words follow the scores, with the thresholds of diagnosis.attribution.confidence_word (one place):
  refuted       `healthy` leads with a score above 0.5: nothing to fix
  confirmed     the leading cause scores at least CONFIRM_SCORE (0.8) and leads the runner-up cause by at least
                AMBIGUITY_MARGIN (0.2), so the cause is named, not just the problem
  inconclusive  otherwise: no hypothesis at all, `healthy` first but at most 0.5 (too little data to rule a problem
                out), a loss no input explains (unexplained_slowdown), or a cause below 0.8 or within the margin of
                the next (e.g. a periodic stall that a data-loader refill and a checkpoint would both explain); the
                leading hypothesis's `next_step` says which measurement tells them apart
"""

from __future__ import annotations

from typing import Any

from playbook.diagnosis.attribution import CONFIRM as CONFIRM_SCORE
from playbook.diagnosis.attribution import MARGIN as AMBIGUITY_MARGIN
from playbook.diagnosis.attribution import confidence_word
from playbook.knowledge import ids as cause_ids

__all__ = ["AMBIGUITY_MARGIN", "CONFIRM_SCORE", "HEALTHY_MIN", "ranked_causes", "top_hypothesis", "triage_verdict"]

HEALTHY_MIN = 0.5  # healthy is capped at 0.5 where the data cannot show a problem either way


def top_hypothesis(diagnosis: dict[str, Any]) -> dict[str, Any] | None:
    """The leading hypothesis: the first of the diagnosis (its verdict), or None."""
    hyps = diagnosis.get("hypotheses") or []
    return hyps[0] if hyps else None


def ranked_causes(diagnosis: dict[str, Any]) -> list[dict[str, Any]]:
    """The hypotheses other than healthy, highest score first."""
    hyps = [h for h in diagnosis.get("hypotheses") or [] if h.get("id") != cause_ids.HEALTHY]
    return sorted(hyps, key=lambda h: h.get("score") or 0.0, reverse=True)


def triage_verdict(diagnosis: dict[str, Any]) -> tuple[str, str]:
    """(status, one-line summary) by the rule in the module docstring."""
    top = top_hypothesis(diagnosis)
    if top is None:
        return "inconclusive", "no hypothesis could be scored from these inputs (see the warnings)"
    score = float(top.get("score") or 0.0)
    if top["id"] == cause_ids.HEALTHY:
        if score <= HEALTHY_MIN:
            return "inconclusive", (f"nothing found, but healthy scores only {score:.2f}: too little data to rule "
                                    "a problem out (see the warnings)")
        return "refuted", f"no utilization problem found: healthy leads (score {score:.2f})"
    if top["id"] in (cause_ids.UNEXPLAINED_SLOWDOWN, cause_ids.INSUFFICIENT_DATA):
        return "inconclusive", (f"{top['id']}: {(top.get('evidence') or [''])[0]}; next: "
                                f"{top.get('next_step') or 'collect more data'}").rstrip(": ")
    evidence = (top.get("evidence") or [""])[0]
    causes = [h for h in ranked_causes(diagnosis) if h is not top and h.get("id") not in
              (cause_ids.UNEXPLAINED_SLOWDOWN, cause_ids.INSUFFICIENT_DATA)]
    runner_up = causes[0] if causes else None
    second = float(runner_up.get("score") or 0.0) if runner_up else 0.0
    if confidence_word(score, second) == "confirmed":
        return "confirmed", f"{top['id']} (score {score:.2f}): {evidence}".rstrip(": ")
    if score < CONFIRM_SCORE:
        return "inconclusive", (f"best guess {top['id']} scores {score:.2f} < {CONFIRM_SCORE}; next: "
                                f"{top.get('next_step') or 'collect more data'}")
    return "inconclusive", (f"{top['id']} ({score:.2f}) or {runner_up['id']} ({second:.2f}): a problem, "
                            f"but the cause is not settled; next: {top.get('next_step') or 'n/a'}")
