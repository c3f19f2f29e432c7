"""Analyzer: timestamped events set against the utilization drops."""

from __future__ import annotations

import numpy as np

from playbook.analysis.coincidence import dips_vs_events
from playbook.diagnosis import ranking
from playbook.diagnosis.analyzers.base import Analyzer
from playbook.diagnosis.context import DERIVED_SIGNAL, Run
from playbook.diagnosis.evidence import from_coincidence as coincidence


class DipEvents(Analyzer):
    """Timestamped events set against the utilization drops."""

    name = "event coincidence"

    def analyze(self, run: Run) -> None:
        osc = run.osc
        if osc is None or not osc.detected or not len(run.bundle.events):
            return
        tol = osc.interval_s if np.isfinite(osc.interval_s) else 0.0
        coinc = dips_vs_events(osc.dips_s, osc.t0, run.bundle.events, tolerance_s=tol)
        label = "GPUs" if osc.signal != DERIVED_SIGNAL else "ranks"
        found, explained = coincidence.from_dip_events(coinc, osc.lost_fraction, label)
        run.findings = ranking.discount(run.findings, explained) + found
        run.detail["dip_events"] = coinc
