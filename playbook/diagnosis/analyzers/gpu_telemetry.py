"""Analyzer: oscillation and per-GPU status on the GPU telemetry."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.analysis.gpu_limits import busy_power, sm_fill
from playbook.analysis.gpu_sharing import other_owners, per_gpu
from playbook.analysis.gpus import COLUMNS as GPU_COLUMNS
from playbook.analysis.gpus import UNUSED_MIB, analyze_gpus, fmt_span, job_gpus
from playbook.analysis.idle_windows import idle_windows
from playbook.analysis.intervals import telemetry_gaps
from playbook.analysis.oscillation.fleet import analyze_gpu_series
from playbook.analysis.series import gpu_series
from playbook.diagnosis.analyzers.base import Analyzer
from playbook.diagnosis.context import Run
from playbook.diagnosis.evidence import from_telemetry as telemetry
from playbook.model.schema import GPU_MODELS, median_interval_s


class GpuTelemetry(Analyzer):
    """Oscillation and per-GPU status on the telemetry (utilization, else DCGM SM activity)."""

    name = "telemetry"

    def analyze(self, run: Run) -> None:
        warnings, tele = run.warnings, run.bundle.telemetry
        signal = None
        if len(tele):
            if tele["util_pct"].notna().any():
                signal = "util_pct"
            elif "sm_active" in tele and tele["sm_active"].notna().any():
                tele = tele.assign(util_pct=tele["sm_active"] * 100.0)
                signal = "SM activity (DCGM)"
                warnings.append("telemetry has no utilization.gpu: the oscillation is measured on SM activity")
        if len(tele):
            warnings += _gap_warnings(tele, run.interval_s)
        if signal is not None:
            whole = gpu_series(tele, tuple(c for c in GPU_COLUMNS if c in tele), interval_s=run.interval_s,
                               models=run.bundle.meta.get(GPU_MODELS))  # the part each GPU is, where named
            others = other_owners(whole, per_gpu(run.bundle))  # another user's GPUs, by who holds their memory
            series, left = job_gpus(whole, run.bundle.events, others)
            if left:
                rows = pd.MultiIndex.from_arrays([tele["host"].astype(str), tele["gpu"]])
                tele = tele[rows.isin(list(zip(series.hosts, series.index, strict=True)))]
            if unused := [g for g in left if g not in others]:
                warnings.append(f"{', '.join(unused[:8])}{' …' if len(unused) > 8 else ''}: idle throughout with "
                                f"under {UNUSED_MIB / 1024:.0f} GiB of memory — not used by this job (left out)")
            warnings += [f"{g}: idle throughout, {others[g]} — another owner's GPU (a user's, a job's or the "
                         "desktop's), not this job's (left out)" for g in left if g in others][:8]
            run.series = series
            osc = analyze_gpu_series(series, "util_pct", signal=signal)
            run.osc, run.gpu_report = osc, analyze_gpus(tele, series=series, events=run.bundle.events)
            n_units = len(series.time_clusters()[0]) if len(series) else 0
            warnings += [w for w in osc.warnings if w not in warnings]
            warnings += run.gpu_report.warnings
            run.findings += telemetry.from_oscillation(osc, run.gpu_report.table, n_units,
                                                       models=run.bundle.meta.get(GPU_MODELS))
            run.findings += telemetry.from_gpus(run.gpu_report, osc)
            if signal == "util_pct" and not osc.detected and not osc.single_drop:
                run.idle_windows = idle_windows(series)
                run.findings += telemetry.from_idle_windows(run.idle_windows)
            if signal == "util_pct":
                fill = sm_fill(tele)
                run.findings += telemetry.from_sm_fill(fill)
                run.busy_power = busy_power(tele) if fill is None else None
            if not osc.detected and not osc.single_drop:
                span_s = (tele["time"].max() - tele["time"].min()).total_seconds()
                level = f", typical level {osc.high_pct:.0f}%" if np.isfinite(osc.high_pct) else ""
                run.healthy.append(f"no GPU swings between a high and a low level over the {span_s:.0f} s recorded"
                                   f"{level} (a swing would need two drops inside it: one slower than every "
                                   f"{span_s / 2:.0f} s needs a longer recording)")
            table = run.gpu_report.table
            ok = int((table["status"] == "ok").sum())
            if ok == len(table) and ok >= 2:  # one GPU has no peers: "ok relative to each other" says nothing
                run.healthy.append(f"all {ok} GPUs ok relative to each other")
        elif len(tele):  # GPUs seen, but none reported a usable value: list them (lost) all the same
            run.gpu_report = analyze_gpus(tele, interval_s=run.interval_s)
            warnings.append("telemetry holds no utilization values (all missing or errors)")
            _clocks_at_work(tele, run)
            run.findings += telemetry.from_gpus(run.gpu_report, None)


# Without utilization, a poll drawing at least half of the GPU's own high draw (its 95th percentile) is a poll at
# work: a GPU idles at 10-30% of its working draw (V100 ~40 of 250 W, GTX 1080 Ti ~10 of 250 W, MI300X ~140 of
# 750 W), so half of its high draw lies between the two, and a throttled GPU's lower draw (60-75% of it in
# tests/diagnosis/test_heldout14_mechanisms.py) stays above it.
WORK_POWER_SHARE = 0.5


def _clocks_at_work(tele: pd.DataFrame, run: Run) -> None:
    """Without utilization, the throttle tests on the polls each GPU draws working power (WORK_POWER_SHARE of its
    own 95th-percentile draw): a GPU they call throttled takes that status and its evidence in run.gpu_report —
    nothing else is read from the power (busy or idle stays unknown). Needs power, SM clock and temperature."""
    if not all(c in tele and tele[c].notna().any() for c in ("power_w", "sm_clock_mhz", "temp_c")):
        return
    high = tele.groupby([tele["host"].astype(str), tele["gpu"]])["power_w"].transform(lambda s: s.quantile(0.95))
    at_work = (tele["power_w"] >= WORK_POWER_SHARE * high) & (high > 0)
    clocks = analyze_gpus(tele.assign(util_pct=np.where(at_work, 100.0, np.nan)), interval_s=run.interval_s).table
    table = run.gpu_report.table
    for i in np.flatnonzero((clocks["status"] == "throttled").to_numpy()):
        row = table.index[table["id"] == clocks["id"].iloc[i]]
        found = clocks["evidence"].iloc[i].rsplit("; mean ", 1)[0]
        for col in clocks.columns.difference(["mean_util_pct", "median_util_pct", "busy_share"]):
            table.loc[row, col] = clocks[col].iloc[i]
        table.loc[row, "evidence"] = (f"{found}; judged on the polls drawing working power (≥ "
                                      f"{WORK_POWER_SHARE:.0%} of its high draw): no utilization recorded")


def _gap_warnings(tele, interval_s: float | None = None) -> list[str]:
    """One warning per source with stretches of no sample at all (analysis.intervals.telemetry_gaps), polled every
    `interval_s` (the table's median sampling interval when not given)."""
    out = []
    gaps = telemetry_gaps(tele, interval_s or tele.attrs.get("interval_s") or median_interval_s(tele))
    for src, (start, end) in gaps.items():
        i = int(np.argmax(end - start))
        when = pd.Timestamp(int(start[i]), tz="UTC").strftime("%Y-%m-%d %H:%M:%S UTC")
        more = f" (the longest of {len(start)} such gaps)" if len(start) > 1 else ""
        out.append(f"{src}: no sample from any GPU for {fmt_span((end[i] - start[i]) / 1e9)} from {when}{more}: "
                   "the logger stopped or the job was down; the accounting counts only the time recorded")
    return out
