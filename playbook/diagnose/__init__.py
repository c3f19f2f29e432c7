"""Diagnose: `diagnose(bundle) -> Diagnosis`, the object behind `playbook diagnose`.

    from playbook.readers import read_paths
    from playbook.diagnose import diagnose
    d = diagnose(read_paths(["logs/"]))
    d.hypotheses[0]["id"], d.to_json()

Runs every analyzer of ANALYZERS (an explicit, ordered list) that has data — oscillation and GPU status on the
telemetry (or, without GPU utilization, the oscillation of each rank's busy share derived from its step phases),
timestamped events and host-probe activity set against the utilization drops, step patterns, Kineto breakdowns,
cross-rank stragglers, NCCL transports — states what each found as Findings (diagnose.findings, through the
adapters of diagnose.evidence) and ranks them (diagnose.ranking). One error guard around each analyzer: one that
fails on odd input leaves a warning instead of stopping the others.
`Diagnosis.detail` keeps the objects behind the JSON for reports and notebooks: "oscillation" (OscillationResult:
per_gpu table, dips, spectra of the main group), "gpus" (GpuReport), "kineto", "stragglers", "nccl", "nsys",
"flight_recorder", "links" (their summarize() dicts), "dip_events" and "host_in_dips" (when events / host data
exist).

The JSON contract (`Diagnosis.to_dict()`; NaN → null):
  inputs       [str]
  warnings     [str]
  gpus         [{id "host:index", host, index, mean_util_pct, status ok|underutilized|saturated|throttled|lost,
                 evidence}]
  oscillation  {detected, periodic, period_s, duty_cycle, high_pct, low_pct,
                 synchrony synchronized|groups|independent|null, groups [[id, ...], ...]}
  steps        {} or analysis.steps.summarize(): ranks, steps, median/p90/max_step_s, steps_per_s, slow_steps,
               phase_share {phase: 0-1}, periodic_slow {every_n_steps, period_s, first_step, hits, p_value,
               events, ...} | null, gc {...} | null, creep {...} | null, recompiles {...} | null
  ranks        [] or one entry per rank: {rank, source, straggler_score (median rank's compute ÷ this rank's;
               < 0.75 flags a straggler), flagged, median_compute_ms, collective_wait_ms, last_arrivals,
               collective_skew_ms, slowest (the modal slowest rank), persistence persistent|rotating|
               undetermined, persistence_p, idle_pct, compute_pct, non_compute_pct, host_wait_pct,
               kernel_wait_pct} — keys without data are left out
  hypotheses   [{id, score 0-1, evidence [str], next_step, fix, notebook, command (runs the lab),
                 lost_share (share of GPU time the evidence costs, 0-1, or null), names (GPUs / ranks /
                 hosts)}], causes highest score first; ids are playbook.knowledge.causes ids, including the verdicts
                 healthy and insufficient_data (the inputs cannot answer: next_step names what to record), which
                 never lead while P(something is wrong) ≥ 0.5
  verdict      {id, score, title, names, lost_share, gpus (the observed scale), gpu_hours_per_day, sentence}:
                 the top hypothesis in one sentence, impact first
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from playbook import schema
from playbook.analysis import steps as steps_analysis
from playbook.analysis.accounting import Accounting, account
from playbook.analysis.coincidence import dips_vs_events, host_during_dips
from playbook.analysis.gpus import COLUMNS as GPU_COLUMNS
from playbook.analysis.gpus import GpuReport, analyze_gpus
from playbook.analysis.oscillation.fleet import OscillationResult, analyze_gpu_series, analyze_oscillation
from playbook.analysis.series import gpu_series
from playbook.diagnose import attribution, ranking
from playbook.diagnose.evidence import coincidence, telemetry, traces
from playbook.diagnose.evidence import events as event_evidence
from playbook.diagnose.evidence import steps as step_evidence
from playbook.jsonable import to_jsonable
from playbook.knowledge import causes, ids

DERIVED_SIGNAL = "busy fraction derived from step phases"
# utilization.gpu counts any resident kernel, so a loop that keeps its GPUs fed sits at ≥ 90%; steadily below 80%
# the GPUs idle ≥ 20% of the time without a swing, a drop or a device finding: telemetry alone cannot say why
STEADY_BUSY_MIN = 80.0


@dataclass
class Diagnosis:
    """The result of `diagnose`: the JSON contract's sections, plus the analysis objects behind them."""

    inputs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    gpus: list[dict] = field(default_factory=list)
    oscillation: dict = field(default_factory=dict)
    steps: dict = field(default_factory=dict)
    ranks: list[dict] = field(default_factory=list)
    hypotheses: list[dict] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict, repr=False)
    verdict: dict = field(default_factory=dict)
    accounting: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON contract as plain Python (NaN and infinities → None, numpy scalars → Python)."""
        return to_jsonable({"inputs": self.inputs, "warnings": self.warnings, "accounting": self.accounting,
                            "gpus": self.gpus, "oscillation": self.oscillation, "steps": self.steps,
                            "ranks": self.ranks, "hypotheses": self.hypotheses, "verdict": self.verdict}, digits=6)

    def to_json(self, indent: int | None = 2) -> str:
        """One JSON object (strict: no NaN)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)

    @property
    def top(self) -> dict:
        """The highest-ranked hypothesis."""
        return self.hypotheses[0] if self.hypotheses else {}


@dataclass
class _Run:
    """What the analyzers share while one diagnosis runs: the inputs, and what earlier analyzers found."""

    bundle: schema.Bundle
    interval_s: float | None
    warnings: list[str]
    findings: list = field(default_factory=list)  # ranking.Evidence readings of the analyzers' Findings
    healthy: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    osc: OscillationResult | None = None
    gpu_report: GpuReport | None = None
    steps_summary: dict = field(default_factory=dict)
    summaries: dict[str, dict | None] = field(default_factory=dict)


def _gpu_telemetry(run: _Run) -> None:
    """Oscillation and per-GPU status on the telemetry (utilization, else DCGM SM activity)."""
    warnings, tele = run.warnings, run.bundle.telemetry
    signal = None
    if len(tele):
        if tele["util_pct"].notna().any():
            signal = "util_pct"
        elif "sm_active" in tele and tele["sm_active"].notna().any():
            tele = tele.assign(util_pct=tele["sm_active"] * 100.0)
            signal = "SM activity (DCGM)"
            warnings.append("telemetry has no utilization.gpu: the oscillation is measured on SM activity")
    if signal is not None:
        series = gpu_series(tele, tuple(c for c in GPU_COLUMNS if c in tele), interval_s=run.interval_s)
        run.detail["series"] = series
        osc = analyze_gpu_series(series, "util_pct", signal=signal)
        run.osc, run.gpu_report = osc, analyze_gpus(tele, series=series)
        n_units = len(series.time_clusters()[0]) if len(series) else 0
        warnings += [w for w in osc.warnings if w not in warnings]
        warnings += run.gpu_report.warnings
        run.findings += telemetry.from_oscillation(osc, run.gpu_report.table, n_units)
        run.findings += telemetry.from_gpus(run.gpu_report, osc)
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
        run.findings += telemetry.from_gpus(run.gpu_report, None)


def _derived_busy(run: _Run) -> None:
    """Without GPU utilization: the oscillation of each rank's busy share derived from its step phases."""
    steps = run.bundle.steps
    if run.osc is not None:  # the GPUs' own signal was usable
        return
    if not (len(steps) and steps["time"].notna().any() and (steps["phase"] != "step").any()):
        return
    osc, n_units = _derived_oscillation(steps)
    if osc is None:
        return
    run.osc = osc
    work = ", ".join(p for p in steps_analysis.busy_phases_of(steps) if p in set(steps["phase"].astype(str)))
    run.warnings.append(f"no usable GPU utilization: the oscillation is measured on each rank's busy share "
                        f"(time in {work or 'work'} phases) — " + DERIVED_SIGNAL)
    run.warnings += [w for w in osc.warnings if w not in run.warnings]
    run.findings += telemetry.from_oscillation(osc, None, n_units, label="ranks")
    if not osc.detected:
        run.healthy.append("no rank's busy share swings between a high and a low level")


def _dip_events(run: _Run) -> None:
    """Timestamped events set against the utilization drops."""
    osc = run.osc
    if osc is None or not osc.detected or not len(run.bundle.events):
        return
    tol = osc.interval_s if np.isfinite(osc.interval_s) else 0.0
    coinc = dips_vs_events(osc.dips_s, osc.t0, run.bundle.events, tolerance_s=tol)
    label = "GPUs" if osc.signal != DERIVED_SIGNAL else "ranks"
    found, explained = coincidence.from_dip_events(coinc, osc.lost_fraction, label)
    run.findings = ranking.discount(run.findings, explained) + found
    run.detail["dip_events"] = coinc


def _fault_events(run: _Run) -> None:
    """Fault events the logs state (an Xid, an ECC error, a lost GPU, a watchdog timeout, OOM): a finding each
    kind, whatever time it cost (diagnose.evidence.events)."""
    if len(run.bundle.events):
        run.findings += event_evidence.from_fault_events(run.bundle.events)


def _host_in_dips(run: _Run) -> None:
    """Host-probe activity (disk, CPU, network) during the utilization drops."""
    osc = run.osc
    if osc is None or not osc.detected or not len(run.bundle.host):
        return
    metrics = host_during_dips(run.bundle.host, osc.dips_s, osc.t0)
    run.findings += coincidence.from_host(metrics, osc.lost_fraction)
    run.detail["host_in_dips"] = metrics


def _step_patterns(run: _Run) -> None:
    """Step-time patterns: periodic slow steps, GC, creep, level shifts, recompiles, phase shares."""
    if not len(run.bundle.steps):
        return
    summary = steps_analysis.summarize(run.bundle.steps, run.bundle.events)
    run.steps_summary = summary
    # when the step log explains the slow steps, the dips' generic readings (e.g. "a synchronized drop could be
    # the input pipeline") lose the weight of what is explained
    run.findings = ranking.discount(run.findings, step_evidence.explained_by_steps(summary)) + step_evidence.from_steps(summary)
    benign = (summary.get("periodic_slow") or {}).get("benign") if summary else None
    if benign:
        run.healthy.append(benign)
    elif summary and not summary.get("periodic_slow"):
        run.healthy.append("no slow steps recurring every N steps")


def _summary_of(name: str, label: str):
    """An analyzer running playbook.analysis.<name>.summarize(bundle) and reading its `findings`."""

    def analyzer(run: _Run) -> None:
        module = __import__(f"playbook.analysis.{name}", fromlist=["summarize"])
        summary = module.summarize(run.bundle)
        if name == "stragglers" and summary:
            summary = _one_job(_same_roles(summary, run), run)
        run.summaries[name] = summary
        if summary:
            run.findings += traces.from_findings(summary.get("findings"), label)
            run.warnings += [w for w in summary.get("warnings") or [] if isinstance(w, str)]
            if name == "kineto":
                run.findings += traces.from_trace_idle(summary.get("gpu_idle"))

    analyzer.__name__ = name
    return analyzer


def _same_roles(stragglers: dict, run: _Run) -> dict:
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


def _one_job(stragglers: dict, run: _Run) -> dict:
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


# The analyzers, in order (later ones may discount earlier readings they explain); each adds Findings to the run.
ANALYZERS = (
    ("telemetry", _gpu_telemetry),
    ("derived busy share", _derived_busy),
    ("event coincidence", _dip_events),
    ("fault events", _fault_events),
    ("host-probe comparison", _host_in_dips),
    ("steps", _step_patterns),
    ("kineto", _summary_of("kineto", "trace")),
    ("stragglers", _summary_of("stragglers", "")),
    ("nccl", _summary_of("nccl", "NCCL")),
    ("nsys", _summary_of("nsys", "")),
    ("flight_recorder", _summary_of("flight_recorder", "")),
    ("links", _summary_of("links", "links")),
)


def diagnose(bundle: schema.Bundle, interval_s: float | None = None) -> Diagnosis:
    """Run every applicable analyzer on `bundle` and rank the hypotheses (see the module docstring)."""
    run = _Run(bundle, interval_s, list(bundle.warnings))
    for name, analyzer in ANALYZERS:
        try:
            analyzer(run)
        except Exception as exc:  # one failing analysis must not stop the diagnosis
            run.warnings.append(f"{name} analysis skipped: {type(exc).__name__}: {exc}"[:300])
    osc, gpu_report, sm = run.osc, run.gpu_report, run.summaries
    kineto, stragglers, nccl = sm.get("kineto"), sm.get("stragglers"), sm.get("nccl")
    extra = {n: sm.get(n) for n in ("nsys", "flight_recorder", "links")}
    detail = {**run.detail, "oscillation": osc, "gpus": gpu_report, "kineto": kineto, "stragglers": stragglers,
              "nccl": nccl, **extra}
    # telemetry too short to look for a swing, a trace without GPU work, or nothing that measures the GPUs or the
    # loop: "nothing found" is not "healthy"
    gpu_trace = bool(kineto and kineto.get("gpu_idle"))
    others = bool(run.steps_summary or gpu_trace or nccl or stragglers or any(extra.values()))
    untestable = None
    if osc is not None and osc.few_samples and not others:
        untestable = "too few samples per GPU to look for an oscillation"
    elif kineto and not gpu_trace and osc is None and gpu_report is None and not others:
        untestable = "the trace holds no GPU kernels or copies (a CPU-only profile)"
    elif osc is None and gpu_report is None and not others:
        have = [n for n, t in (("host metrics", bundle.host), ("events", bundle.events)) if len(t)]
        untestable = (f"the inputs hold {' and '.join(have) or 'nothing usable'} only: no GPU utilization, no step "
                      "times, no trace with GPU work")
    elif osc is not None and not osc.detected and not osc.single_drop and not others and \
            np.isfinite(osc.high_pct) and osc.high_pct < STEADY_BUSY_MIN:
        untestable = (f"the GPUs sit steadily at {osc.high_pct:.0f}% utilization, idle {100 - osc.high_pct:.0f}% "
                      "of the time without a swing or drop: telemetry alone cannot tell an input-bound loop from "
                      "small kernels, host syncs or a slow interconnect")
    ranked = ranking.rank(run.findings, run.healthy, untestable)
    if ranked and ranked[0]["id"] == ids.INSUFFICIENT_DATA:
        ranked[0]["next_step"] = _record_next(bundle, osc, untestable)
    acc = None
    if not (osc is not None and osc.few_samples):
        try:
            acc = account(bundle, run.interval_s, series=run.detail.pop("series", None))
        except Exception as exc:  # the accounting must not stop the diagnosis either
            run.warnings.append(f"accounting skipped: {type(exc).__name__}: {exc}"[:300])
    run.detail.pop("series", None)
    if acc is not None:
        attribution.attribute(acc, bundle.events, ranked, run.steps_summary, bundle.steps)
        ranked = _lead(ranked, acc)
        detail["accounting"] = acc
    warnings = run.warnings
    if osc is None and gpu_report is None and not len(bundle.steps) and not kineto and not nccl and \
            not any(extra.values()):
        warnings.append("nothing to analyse: no telemetry, steps, traces or NCCL logs in the inputs")
    gpus_json = gpu_report.contract() if gpu_report is not None else []
    scale = _scale(gpu_report, bundle, kineto)
    return Diagnosis(inputs=list(bundle.inputs), warnings=list(dict.fromkeys(warnings)), gpus=gpus_json,
                     oscillation=(osc.contract() if osc is not None else OscillationResult().contract()),
                     steps=run.steps_summary, ranks=_ranks(stragglers, kineto), hypotheses=ranked, detail=detail,
                     verdict=verdict_of(ranked, scale, acc, _cycles(osc, acc)),
                     accounting=acc.to_dict() if acc is not None else {})


def _cycles(osc: OscillationResult | None, acc: Accounting | None) -> float:
    """How many cycles of the oscillation the accounted span covers (0 without a periodic one)."""
    if osc is None or acc is None or not osc.periodic or not np.isfinite(osc.period_s) or osc.period_s <= 0:
        return 0.0
    return float(acc.span_s / osc.period_s)


def _lead(ranked: list[dict], acc: Accounting) -> list[dict]:
    """The hypotheses reordered so that the verdict the accounting decides (attribution.decide) leads, its
    lost_share the accounting's figure for it."""
    lead = attribution.decide(acc, ranked)
    if lead is None:
        return ranked
    by = attribution.harmful(acc)
    if lead == ids.UNEXPLAINED_SLOWDOWN:
        loss = sum(by.values()) / acc.wall_s
        h = attribution.unexplained_hypothesis(acc, 1.0 - acc.noise_floor_share / loss if loss > 0 else 0.0)
        rest = [x for x in ranked if x["id"] != ids.HEALTHY]
        healthy = [dict(x, score=round(min(x["score"], 1.0 - h["score"]), 3)) for x in ranked if x["id"] == ids.HEALTHY]
        return [h, *rest, *healthy]
    found = [x for x in ranked if x["id"] == lead]
    if found:
        h = dict(found[0])
    else:  # measured directly (a phase timer, events at the bucket's steps) but not among the findings
        share = by.get(lead, 0.0) / acc.wall_s if acc.wall_s > 0 else 0.0
        evidence = [b.evidence for b in acc.buckets if b.cause == lead and b.evidence]
        h = ranking.hypothesis(lead, 0.9 * ranking.impact(share), evidence or ["measured by the accounting"])
    if lead != ids.HEALTHY:
        share = by.get(lead, 0.0) / acc.wall_s if acc.wall_s > 0 else 0.0
        if any(b.direct for b in acc.buckets if b.cause == lead):  # measured on the lost time itself
            h["score"] = round(max(h["score"], 0.9 * ranking.impact(share)), 3)
        h["lost_share"] = round(share, 4) if acc.wall_s > 0 else None
        names = list(dict.fromkeys([n for b in acc.buckets if b.cause == lead for n in b.names if n != "all GPUs"]
                                   + list(h.get("names") or [])))
        h["names"], h["named"] = names[:16], max(len(names), int(h.get("named") or 0))
    if lead == ids.HEALTHY:  # the accounting finds no loss beyond the noise: healthy is at least 1 - the best cause
        best = max((x["score"] for x in ranked if x["id"] not in ranking.VERDICTS), default=0.0)
        h["score"] = round(max(h["score"], 1.0 - best), 3)
    rest = [x if x["id"] != ids.HEALTHY or lead == ids.HEALTHY else dict(x, score=round(min(x["score"], 1.0 - h["score"]), 3))
            for x in ranked if x["id"] != lead]
    return [h, *rest]


def _scale(gpu_report: GpuReport | None, bundle: schema.Bundle, kineto: dict | None) -> int:
    """The number of GPUs the run was observed on: telemetry GPUs, else step-log ranks, else trace ranks."""
    if gpu_report is not None and len(gpu_report.table):
        return int(len(gpu_report.table))
    if len(bundle.steps):
        return int(bundle.steps.groupby(["host", "rank"]).ngroups)
    if kineto:
        return int(kineto.get("world_size") or len(kineto.get("ranks") or []))
    return 0


# A per-day cost is extrapolated only from an input that spans several cycles of its swing or many minutes of run:
# a few seconds of polls say what they saw, not what a day costs
PER_DAY_MIN_S = 600.0
PER_DAY_MIN_CYCLES = 3.0


def verdict_of(ranked: list[dict], gpus: int, acc: Accounting | None = None, cycles: float = 0.0) -> dict:
    """The verdict in one sentence, the loss first: the share of GPU (or wall) time lost and where, the leading
    cause (its confidence word from its score, diagnose.attribution.confidence_word), what it costs per day when the
    input spans enough to say, and what to do or record next."""
    if not ranked:
        return {}
    top = ranked[0]
    c = causes.cause(top["id"])
    runner = next((h["score"] for h in ranked[1:] if h["id"] not in ranking.VERDICTS), 0.0)
    word = attribution.confidence_word(top["score"], runner)
    lost = round(acc.lost_share, 4) if acc is not None else top.get("lost_share")
    lead_share = top.get("lost_share")
    long_enough = acc is not None and (acc.span_s >= PER_DAY_MIN_S or cycles >= PER_DAY_MIN_CYCLES)
    per_day = round(lead_share * gpus * 24, 1) if lead_share and gpus and long_enough and top["id"] not in \
        ranking.VERDICTS[:2] else None
    loss = attribution.loss_phrase(acc, top["id"]) if acc is not None else ""
    if top["id"] == ids.INSUFFICIENT_DATA:
        sentence = f"Not enough data to name a cause: {top['evidence'][0]}; record next: {top['next_step']}"
        if loss and acc is not None and acc.significant:
            sentence = f"{loss[0].upper()}{loss[1:]}, but not enough data to name a cause: {top['evidence'][0]}; " \
                       f"record next: {top['next_step']}"
    elif top["id"] == ids.HEALTHY:
        sentence = (f"Healthy ({word}, score {top['score']:.2f}): " + (f"{loss}; " if loss else
                    "no finding points at a cause; ") + "keep this run as the baseline for `playbook compare`")
    elif top["id"] == ids.UNEXPLAINED_SLOWDOWN:
        sentence = (f"{loss[0].upper()}{loss[1:]}, and no event, phase or finding in the inputs says why "
                    f"(unexplained_slowdown); record next: {top['next_step']}")
    else:
        cost = ""
        if per_day is not None:
            cost = f", ≈ {per_day:.0f} GPU-h/day on {gpus} GPU{'s' if gpus != 1 else ''}"
        elif lead_share and not loss:
            cost = f" — it costs ~{lead_share:.0%} of GPU time over the span observed"
        head = f"{loss[0].upper()}{loss[1:]}: " if loss else ""
        title = c.title if head else c.title[0].upper() + c.title[1:]
        sentence = (f"{head}{title}{_where(top.get('names') or [], top.get('named', 0), gpus)} ({top['id']}, "
                    f"{word}, score {top['score']:.2f}){cost}; run next: `{c.command}` (reproduces it and measures "
                    "the fix)")
        second = next((h for h in ranked[1:] if h["id"] not in ranking.VERDICTS), None)
        if second is not None and word != "confirmed" and second["score"] >= 0.5 * top["score"]:
            sentence += (f"; or {second['id']} (score {second['score']:.2f}) — to tell them apart: "
                         f"{top.get('next_step') or c.next_step}")
    return {"id": top["id"], "score": top["score"], "confidence": word, "title": c.title,
            "names": top.get("names") or [], "lost_share": lost, "gpus": gpus, "gpu_hours_per_day": per_day,
            "sentence": sentence}


def _where(names: list[str], named: int, gpus: int) -> str:
    """" on node00:0", " on node00:0, node00:1 and 5 more", " on all 64 GPUs": who the verdict names, short.
    `named`: how many units the findings named in all (`names` holds the first few)."""
    named = max(named, len(names))
    if not names:
        return ""
    if gpus > 1 and named >= gpus:
        return f" on all {gpus} GPUs"
    shown = ", ".join(names[:3])
    return f" on {shown} and {named - 3} more" if named > 3 else f" on {shown}"


def _record_next(bundle: schema.Bundle, osc: OscillationResult | None, reason: str | None) -> str:
    """What to record so the next diagnosis can answer, given what the inputs lack."""
    asks = []
    if not len(bundle.telemetry) or osc is None:
        asks.append("GPU telemetry: nvidia-smi --query-gpu=timestamp,index,utilization.gpu,power.draw,power.limit,"
                    "clocks.sm,clocks_event_reasons.active --format=csv -lms 1000 > gpu.csv, for ≥ 10 minutes")
    elif osc.few_samples:
        asks.append("a longer GPU recording: at least 20 polls per GPU and three cycles of the slowest swing "
                    "you suspect (e.g. -l 1 for 10 minutes)")
    if not len(bundle.steps):
        asks.append("step times and phases: `playbook record -- python train.py` (or log one line per step)")
    if reason and "steadily" in reason:
        asks.append("where the idle time goes: a torch.profiler trace of a few steps (schedule wait=5, warmup=2, "
                    "active=3) and the time blocked in next(DataLoader) per step")
    if reason and "CPU-only" in reason:
        asks.append("a profiler trace with CUDA activity (torch.profiler activities=[CPU, CUDA])")
    return "; ".join(asks) or causes.cause(ids.INSUFFICIENT_DATA).next_step


def _derived_oscillation(steps: pd.DataFrame) -> tuple[OscillationResult | None, int]:
    """Oscillation of each rank's busy share (analysis.steps.busy_timeline), ids "host:rankR"."""
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
    if len(res.per_gpu):
        res.per_gpu["id"] = [rename(i) for i in res.per_gpu["id"]]
    return res, int(busy.groupby(["host", "rank"]).ngroups)


def _ranks(stragglers: dict | None, kineto: dict | None) -> list[dict]:
    """Per-rank entries merged from the straggler (trace, else steps) and Kineto summaries."""
    rows: dict[int, dict] = {}

    def entry(r) -> dict:
        return rows.setdefault(int(r), {"rank": int(r)})

    if stragglers:
        part, source = (stragglers.get("trace"), "trace") if stragglers.get("trace") else \
            (stragglers.get("steps"), "steps")
        if part:
            for s in part.get("scores") or []:
                e = entry(s["rank"])
                e["source"] = source
                e["straggler_score"] = s.get("score_vs_median")
                e["flagged"] = s.get("flagged")
                med = s.get("median_compute_ms")
                if med is not None:
                    e["median_compute_ms"] = med
            coll = part.get("collectives") or {}
            for r, ms in (coll.get("wait_ms_by_rank") or {}).items():
                entry(r)["collective_wait_ms"] = ms
            for r, k in (coll.get("straggler_counts") or {}).items():
                entry(r)["last_arrivals"] = k
            pers = part.get("persistence") or {}
            modal = pers.get("modal_rank")
            for e in rows.values():
                if coll.get("median_skew_ms") is not None:
                    e["collective_skew_ms"] = coll.get("median_skew_ms")
                e["slowest"] = modal is not None and e["rank"] == int(modal)
                if e["slowest"]:
                    e["persistence"] = pers.get("verdict")
                    e["persistence_p"] = pers.get("p_value")
    if kineto:
        for t in kineto.get("temporal") or []:
            e = entry(t["rank"])
            for k in ("idle_pct", "compute_pct", "non_compute_pct"):
                if t.get(k) is not None:
                    e[k] = t[k]
        for t in kineto.get("idle") or []:
            e = entry(t["rank"])
            for k in ("host_wait_pct", "kernel_wait_pct"):
                if t.get(k) is not None:
                    e[k] = t[k]
    return [rows[r] for r in sorted(rows)]


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
