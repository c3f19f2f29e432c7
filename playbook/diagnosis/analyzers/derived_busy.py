"""Analyzer: without GPU utilization, the oscillation of each rank's busy share derived from its step phases."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.analysis import step_times as steps_analysis
from playbook.analysis.oscillation.fleet import OscillationResult, analyze_oscillation
from playbook.diagnosis.analyzers.base import Analyzer
from playbook.diagnosis.context import DERIVED_SIGNAL, Run
from playbook.diagnosis.evidence import from_telemetry as telemetry
from playbook.model import schema


class DerivedBusy(Analyzer):
    """Without GPU utilization: the oscillation of each rank's busy share derived from its step phases."""

    name = "derived busy share"

    def analyze(self, run: Run) -> None:
        steps = run.bundle.steps
        if run.osc is not None:  # the GPUs' own signal was usable
            return
        if not (len(steps) and steps["time"].notna().any() and (steps["phase"] != "step").any()):
            return
        osc, n_units = _derived_oscillation(steps)
        if osc is None:
            return
        run.osc, run.osc_derived = osc, True
        work = ", ".join(p for p in steps_analysis.busy_phases_of(steps) if p in set(steps["phase"].astype(str)))
        run.warnings.append(f"no usable GPU utilization: the oscillation is measured on each rank's busy share "
                            f"(time in {work or 'work'} phases) — " + DERIVED_SIGNAL)
        run.warnings += [w for w in osc.warnings if w not in run.warnings]
        run.findings += telemetry.from_oscillation(osc, None, n_units, label="ranks")
        if not osc.detected:
            run.healthy.append("no rank's busy share swings between a high and a low level")


def _derived_oscillation(steps: pd.DataFrame) -> tuple[OscillationResult | None, int]:
    """Oscillation of each rank's busy share (analysis.step_times.busy_timeline), ids "host:rankR"."""
    # bins of ~4 steps, start to start (a step's duration can be far shorter than the time between steps):
    # shorter bins would split steps into their busy and idle parts and show that as a swing
    st = steps_analysis.step_times(steps)
    gaps = st.sort_values(["rank", "time"]).groupby("rank")["time"].diff().dt.total_seconds()
    every = float(gaps.median()) if gaps.notna().any() else float(st["duration_s"].median())
    bin_s = 4 * every if np.isfinite(every) and every > 0 else None
    busy = steps_analysis.busy_timeline(steps, bin_s=bin_s, busy_phases=steps_analysis.busy_phases_of(steps))
    if busy.empty:
        return None, 0
    pseudo = schema.telemetry_frame({"time": busy["time"], "host": busy["host"], "gpu": busy["rank"],
                                     "util_pct": busy["busy_frac"] * 100.0, "source": "derived:steps"},
                                    interval_s=bin_s)
    res = analyze_oscillation(pseudo, "util_pct", signal=DERIVED_SIGNAL)

    def rename(i: str) -> str:
        host, rank = i.rsplit(":", 1)
        return f"{host}:rank{rank}"

    res.groups = [[rename(i) for i in g] for g in res.groups]
    res.swinging = [rename(i) for i in res.swinging]
    res.antiphase = [([rename(i) for i in a], [rename(i) for i in b]) for a, b in res.antiphase]
    if res.turns:
        res.turns = {**res.turns, "gpus": [rename(i) for i in res.turns["gpus"]]}
    if len(res.per_gpu):
        res.per_gpu["id"] = [rename(i) for i in res.per_gpu["id"]]
    return res, int(busy.groupby(["host", "rank"]).ngroups)
