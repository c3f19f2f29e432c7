"""Analyzer: fault events the logs state (Xid, ECC, a lost GPU, timeouts, OOM)."""

from __future__ import annotations

from playbook.diagnose.analyzers.base import Analyzer
from playbook.diagnose.context import Run
from playbook.diagnose.evidence import events as event_evidence


class FaultEvents(Analyzer):
    """Fault events the logs state (an Xid, an ECC error, a lost GPU, a watchdog timeout, OOM): a finding each
    kind, whatever time it cost (diagnose.evidence.events)."""

    name = "fault events"

    def analyze(self, run: Run) -> None:
        if len(run.bundle.events):
            run.findings += event_evidence.from_fault_events(run.bundle.events)
