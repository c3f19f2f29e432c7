"""Analyzer: fault events the logs state (Xid, ECC, a lost GPU, timeouts, OOM) and the restarts they state."""

from __future__ import annotations

from playbook.diagnosis.analyzers.base import Analyzer
from playbook.diagnosis.context import Run
from playbook.diagnosis.evidence import from_events as event_evidence
from playbook.diagnosis.evidence.from_restarts import restart_findings


class FaultEvents(Analyzer):
    """Fault events the logs state (an Xid, an ECC error, a lost GPU, a watchdog timeout, OOM): a finding each
    kind, whatever time it cost (diagnosis.evidence.from_events)."""

    name = "fault events"

    def analyze(self, run: Run) -> None:
        if len(run.bundle.events):
            run.findings += event_evidence.from_fault_events(run.bundle.events)
            steps = run.bundle.steps
            timed = bool(len(steps)) and bool(steps.loc[steps["phase"] == "step", "duration_s"].notna().any())
            run.findings += event_evidence.from_recompile_events(run.bundle.events, timed)
            run.findings += restart_findings(run.bundle.events, steps)  # resumes and worker restarts stated
            run.findings += event_evidence.timeout_after_save(run.bundle.events)
            run.findings += event_evidence.slow_callbacks(run.bundle.events, steps)  # Keras timing its callbacks
