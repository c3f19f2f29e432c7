"""Analyzer: step-time patterns (periodic slow steps, GC, creep, level shifts, recompiles, phase shares)."""

from __future__ import annotations

from playbook.analysis import step_times as steps_analysis
from playbook.diagnosis import ranking
from playbook.diagnosis.analyzers.base import Analyzer
from playbook.diagnosis.context import Run
from playbook.diagnosis.evidence import from_steps as step_evidence
from playbook.model import schema


class StepPatterns(Analyzer):
    """Step-time patterns: periodic slow steps, GC, creep, level shifts, recompiles, phase shares."""

    name = "steps"

    def analyze(self, run: Run) -> None:
        if not len(run.bundle.steps):
            return
        summary = steps_analysis.summarize(run.bundle.steps, run.bundle.events)
        if summary and schema.record_unit(run.bundle) == "epoch":
            summary["record"] = "epoch"  # what a row stands for (the page says epochs)
        run.steps_summary = summary
        # when the step log explains the slow steps, the dips' generic readings (e.g. "a synchronized drop could be
        # the input pipeline") lose the weight of what is explained
        run.findings = ranking.discount(run.findings, step_evidence.explained_by_steps(summary)) + step_evidence.from_steps(summary)
        benign = (summary.get("periodic_slow") or {}).get("benign") if summary else None
        if benign:
            run.healthy.append(benign)
        elif summary and not summary.get("periodic_slow") and summary.get("cadence_searched"):
            record = summary.get("record", "step")  # tested on enough records after warm-up (the search drops it)
            run.healthy.append(f"no slow {record}s recurring every N {record}s")
