"""Analyzer: host-probe activity (disk, CPU, network) during the utilization drops."""

from __future__ import annotations

from playbook.analysis.coincidence import host_during_dips
from playbook.diagnosis.analyzers.base import Analyzer
from playbook.diagnosis.context import Run
from playbook.diagnosis.evidence import from_coincidence as coincidence


class HostInDips(Analyzer):
    """Host-probe activity (disk, CPU, network) during the utilization drops."""

    name = "host-probe comparison"

    def analyze(self, run: Run) -> None:
        osc = run.osc
        if osc is None or not osc.detected or not len(run.bundle.host):
            return
        metrics = host_during_dips(run.bundle.host, osc.dips_s, osc.t0)
        evidence = coincidence.from_host(metrics, osc.lost_fraction)
        run.findings += evidence
        run.detail["host_in_dips"] = metrics
        run.detail["drop_causes"] = sorted({e.hypothesis for e in evidence})  # measured at the drops themselves
