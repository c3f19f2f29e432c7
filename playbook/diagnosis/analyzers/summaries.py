"""Analyzers that run an analysis module's `summarize(bundle)` (Kineto traces, cross-rank stragglers, NCCL logs,
nsys exports, flight-recorder dumps, links, torch.profiler tables, serving engines' scheduler records) and read its `findings`: one class, registered once per module."""

from __future__ import annotations

import importlib

import pandas as pd

from playbook.analysis import step_times as steps_analysis
from playbook.diagnosis.analyzers.base import Analyzer
from playbook.diagnosis.context import STEADY_BUSY_MIN, Run
from playbook.diagnosis.evidence import from_traces as traces
from playbook.knowledge import ids


class Summary(Analyzer):
    """playbook.analysis.<module>.summarize(bundle), its findings read as evidence labelled `label`; `name` keys
    the summary in Run.summaries and the JSON."""

    def __init__(self, name: str, module: str, label: str):
        self.name, self.module, self.label = name, module, label

    def analyze(self, run: Run) -> None:
        summary = importlib.import_module(f"playbook.analysis.{self.module}").summarize(run.bundle)
        if self.name == "stragglers" and summary:
            summary = _one_job(_same_roles(summary, run), run)
        if self.name == "links" and summary:
            summary = _lagging_links(summary, run)
        if self.name == "container_limits" and summary:
            summary = _limits_against_gpus(summary, run)
        run.summaries[self.name] = summary
        if summary:
            run.findings += traces.from_findings(summary.get("findings"), self.label)
            run.warnings += [w for w in summary.get("warnings") or [] if isinstance(w, str)]
            run.healthy += [h for h in summary.get("vouched") or [] if isinstance(h, str)]
            if self.name == "kineto":
                run.findings += traces.from_trace_idle(summary.get("gpu_idle"))


SUMMARIES = tuple(Summary(*args) for args in (
    ("kineto", "kineto", "trace"), ("stragglers", "rank_stragglers", ""), ("nccl", "nccl", "NCCL"),
    ("nsys", "nsys_profiles", ""), ("flight_recorder", "collective_hangs", ""), ("links", "links", "links"),
    ("profiler", "profiler_ops", ""), ("nccl_tests", "nccl_bench", "nccl-tests"), ("job_usage", "job_usage", ""),
    ("serving", "serving_load", "serving"), ("container_limits", "container_costs", "")))


def _lagging_links(links: dict, run: Run) -> dict:
    """A link stated degraded (lspci, at one moment) whose GPU the telemetry shows lagging its peers
    (analysis.gpus: underutilized) is measured to matter: its finding rises to high and says so."""
    report = run.gpu_report
    if report is None or report.table is None or report.table.empty:
        return links
    lagging = {str(r.id): str(r.evidence) for r in report.table.itertuples() if r.status == "underutilized"}
    found = []
    for f in links.get("findings") or []:
        lag = [g for g in f.get("gpus") or () if g in lagging]
        if f.get("stated") and lag:
            f = {**f, "level": "high", "evidence": f"{f['evidence']}; the telemetry shows {lag[0]} lagging its "
                                                   f"peers ({lagging[lag[0]]})"}
        found.append(f)
    return {**links, "findings": found}


def _limits_against_gpus(limits: dict, run: Run) -> dict:
    """A container's limits (a throttled CPU quota, a small /dev/shm) say what the job may use, not what it cost:
    beside GPUs measured at a fed loop's level (mean utilization ≥ STEADY_BUSY_MIN, as HostSaturated asks of a
    busy host) a limit cost no GPU time — its finding becomes a statement of health; beside GPUs below that level it
    stands, naming their level; beside step times without GPU telemetry (the loop measured, a limit's cost in it
    not) it is at most moderate; alone, as the limits say."""
    found = limits.get("findings") or []
    report = run.gpu_report
    table = report.table if report is not None else None
    util = (table["mean_util_pct"].astype(float).dropna() if table is not None and len(table)
            and "mean_util_pct" in table else None)
    if not found or not ((util is not None and len(util)) or run.steps_summary):
        return limits
    if util is not None and len(util):
        mean = float(util.mean())
        if mean >= STEADY_BUSY_MIN:
            return {**limits, "findings": [], "vouched": list(limits.get("vouched") or []) + [
                f"{f.get('told') or f['evidence']}: yet the GPUs ran at {mean:.0f}% on average (a fed loop's level): "
                "the limit cost no measured GPU time" for f in found]}
        return {**limits, "findings": [{**f, "evidence": f"{f['evidence']}; the GPUs ran at {mean:.0f}% on average"}
                                       for f in found]}
    return {**limits, "findings": [
        {**f, "level": "moderate", "anomaly": "moderate", "evidence": f"{f['evidence']} (a limit, not a measured "
         "loss: the step times beside it measure the loop, and what the limit cost them is not measured)"}
        for f in found]}


def _same_roles(stragglers: dict, run: Run) -> dict:
    """Straggler scores compare ranks doing the same work; ranks with different work phases are different roles
    (a producer and a consumer), so their step-based comparison says nothing about stragglers."""
    roles = _roles(run.bundle.steps)
    if len(roles) <= 1:
        return stragglers
    found = stragglers.get("findings") or []
    kept = [f for f in found if not (f.get("hypothesis") == ids.COLLECTIVE_STRAGGLER
                                     and str(f.get("evidence", "")).startswith("steps"))]
    if len(kept) < len(found):
        run.warnings.append("ranks play different roles (work phases " + "; ".join(
            f"{'/'.join(r)}: ranks {', '.join(map(str, ks[:6]))}" for r, ks in roles.items())
            + "): step-based straggler scores across roles are left out")
    return {**stragglers, "findings": kept}


def _one_job(stragglers: dict, run: Run) -> dict:
    """Traces whose ranks state different world sizes come from different jobs (a folder holding a control and a
    test run, say): comparing them as ranks of one job would name a straggler that is only another run."""
    meta = (run.bundle.meta or {}).get("kineto", {})
    worlds = {r: m.get("world_size") for r, m in meta.items() if isinstance(m, dict) and m.get("world_size")}
    if len(set(worlds.values())) <= 1:
        return stragglers
    found = stragglers.get("findings") or []
    kept = [f for f in found if not str(f.get("evidence", "")).startswith("trace")]
    run.warnings.append("the traces come from different jobs (world size " + ", ".join(
        f"{w} for rank {r}" for r, w in sorted(worlds.items())) + "): they are not compared as ranks of one job")
    return {**stragglers, "findings": kept}


def _roles(steps: pd.DataFrame) -> dict[tuple[str, ...], list[int]]:
    """Ranks grouped by the set of work phases they log (one group = one role)."""
    if steps is None or steps.empty:
        return {}
    work = set(steps_analysis.busy_phases_of(steps))
    roles: dict[tuple[str, ...], list[int]] = {}
    part = steps[steps["phase"].isin(work)]
    for rank, idx in part.groupby("rank", sort=True).indices.items():
        phases = tuple(sorted(set(part["phase"].iloc[idx].astype(str))))
        roles.setdefault(phases, []).append(int(rank))
    return roles

