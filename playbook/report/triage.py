"""What the triage notebook concludes from a diagnosis, as plain functions (the notebook stays thin).

The triage notebook tests one hypothesis: "this run has a utilization problem the playbook can name".
Verdict rule (`triage_verdict`), on the diagnosis JSON (issue 3's contract):
  confirmed     the top-ranked hypothesis is not `healthy` and its score is at least CONFIRM_SCORE (0.5: the
                diagnosis scores are 0-1 and 0.5 is where the evidence for a cause outweighs the evidence against it)
  refuted       the top-ranked hypothesis is `healthy`: nothing to fix
  inconclusive  otherwise: no hypothesis at all (too little data), or the best cause scores below the bar; the
                top hypothesis's `next_step` says what to measure next
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from playbook.report.catalog import NOTEBOOKS

CONFIRM_SCORE = 0.5


def _top(diagnosis: dict[str, Any]) -> dict[str, Any] | None:
    hyps = diagnosis.get("hypotheses") or []
    return max(hyps, key=lambda h: h.get("score") or 0.0) if hyps else None


def key_figures(diagnosis: dict[str, Any]) -> dict[str, Any]:
    """The figures a report shows for a diagnosis: GPUs seen and their statuses, the oscillation's shape, the top
    hypothesis and its score."""
    gpus = diagnosis.get("gpus") or []
    osc = diagnosis.get("oscillation") or {}
    top = _top(diagnosis) or {}
    statuses = pd.Series([g.get("status") for g in gpus], dtype="object").value_counts().to_dict()
    utils = [g["mean_util_pct"] for g in gpus if g.get("mean_util_pct") is not None]
    return {
        "gpus": len(gpus),
        "gpus_not_ok": int(sum(n for s, n in statuses.items() if s != "ok")),
        "mean_util_pct": round(float(sum(utils) / len(utils)), 1) if utils else None,
        "oscillation": bool(osc.get("detected")),
        "period_s": osc.get("period_s"),
        "duty_cycle": osc.get("duty_cycle"),
        "synchrony": osc.get("synchrony"),
        "top_hypothesis": top.get("id"),
        "top_score": top.get("score"),
        "warnings": len(diagnosis.get("warnings") or []),
    }


def triage_verdict(diagnosis: dict[str, Any]) -> tuple[str, str]:
    """(status, one-line summary) by the rule in the module docstring."""
    top = _top(diagnosis)
    if top is None:
        return "inconclusive", "no hypothesis could be scored from these inputs (see the warnings)"
    score = float(top.get("score") or 0.0)
    evidence = (top.get("evidence") or [""])[0]
    if top["id"] == "healthy":
        return "refuted", f"no utilization problem found: healthy ranks first (score {score:.2f})"
    if score >= CONFIRM_SCORE:
        return "confirmed", f"{top['id']} (score {score:.2f} >= {CONFIRM_SCORE}): {evidence}".rstrip(": ")
    return "inconclusive", (f"best guess {top['id']} scores {score:.2f} < {CONFIRM_SCORE}; next: "
                            f"{top.get('next_step') or 'collect more data'}")


def hypotheses_table(diagnosis: dict[str, Any]) -> pd.DataFrame:
    """Ranked hypotheses, one row each: id, score, evidence (joined), next_step, fix, notebook."""
    rows = [{"id": h.get("id"), "score": h.get("score"), "evidence": "; ".join(h.get("evidence") or []),
             "next_step": h.get("next_step"), "fix": h.get("fix"), "notebook": h.get("notebook")}
            for h in diagnosis.get("hypotheses") or []]
    frame = pd.DataFrame(rows, columns=["id", "score", "evidence", "next_step", "fix", "notebook"])
    return frame.sort_values("score", ascending=False, kind="stable").reset_index(drop=True)


def gpu_table(diagnosis: dict[str, Any]) -> pd.DataFrame:
    """The GPUs that are not ok first, then the rest: id, mean_util_pct, status, evidence."""
    frame = pd.DataFrame(diagnosis.get("gpus") or [],
                         columns=["id", "host", "index", "mean_util_pct", "status", "evidence"])
    frame["_ok"] = frame["status"].eq("ok")
    return frame.sort_values(["_ok", "id"], kind="stable").drop(columns="_ok").reset_index(drop=True)


def lab_pointer(diagnosis: dict[str, Any], notebooks_dir: str | Path = NOTEBOOKS) -> str:
    """Markdown naming the lab notebook for the top hypothesis (a link relative to notebooks/ when it exists)."""
    top = _top(diagnosis)
    if top is None:
        return "No hypothesis to follow up yet: record more of the run (see `playbook record --help`)."
    if top["id"] == "healthy":
        return "The run looks healthy: no lab to follow. `notebooks/00_onboarding.ipynb` shows what to watch."
    notebook = top.get("notebook")
    if not notebook:
        return f"No lab notebook covers `{top['id']}` yet; next step: {top.get('next_step') or 'n/a'}."
    name = Path(notebook).name
    exists = (Path(notebooks_dir) / name).is_file()
    link = f"[{name}]({name})" if exists else f"`{notebook}` (not written yet)"
    return (f"**Next: the lab for `{top['id']}`** — {link}. It reproduces this failure on a small real training "
            f"loop, measures it, and applies the fix. Confirm here first: {top.get('next_step') or 'n/a'}")
