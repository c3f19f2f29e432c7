"""Diagnose: `diagnose(bundle) -> Diagnosis`, the object behind `playbook diagnose`.

    from playbook.readers import read_paths
    from playbook.diagnosis import diagnose
    d = diagnose(read_paths(["logs/"]))
    d.hypotheses[0]["id"], d.to_json()

Runs every analyzer registered in diagnosis.analyzers (one class per file, an explicit order) that has data — oscillation and GPU status on the
telemetry (or, without GPU utilization, the oscillation of each rank's busy share derived from its step phases),
timestamped events and host-probe activity set against the utilization drops, step patterns, Kineto breakdowns,
cross-rank stragglers, NCCL transports — states what each found as Findings (diagnosis.findings, through the
adapters of diagnosis.evidence) and ranks them (diagnosis.ranking). One error guard around each analyzer: one that
fails on odd input leaves a warning instead of stopping the others.
`Diagnosis.detail` keeps the objects behind the JSON for reports and notebooks: "oscillation" (OscillationResult:
per_gpu table, dips, spectra of the main group), "gpus" (GpuReport), "kineto", "stragglers", "nccl", "nsys",
"flight_recorder", "links" (their summarize() dicts), "dip_events" and "host_in_dips" (when events / host data
exist).

The JSON contract (`Diagnosis.to_dict()`; NaN → null):
  inputs       [str]
  warnings     [str]
  accounting   {} or the what-if accounting (analysis.accounting, attributed by diagnosis.attribution): basis
               gpu|wall, wall_s (GPU-seconds or rank wall-seconds), ideal_s, lost_s, lost_share (lost ÷ all of the
               basis, 0-1), noise_floor_share and noise_floor (how it was measured), warmup_s, span_s, units,
               after_end_s (seconds of the recording after the job's last work, not counted; GPU basis),
               buckets [{kind, seconds, share, cause (a cause id, "healthy" for a benign cadence, or
               "unexplained"), names, windows [[start_s, end_s]] since the run's start, steps, detail, evidence}]
  gpus         [{id "host:index", host, index, mean_util_pct, status ok|underutilized|saturated|throttled|lost,
                 evidence}]
  oscillation  {detected, periodic, period_s, duty_cycle, high_pct, low_pct,
                 synchrony synchronized|groups|independent|null, groups [[id, ...], ...]}
  steps        {} or analysis.step_times.summarize(): ranks, steps, median/p90/max_step_s, steps_per_s, slow_steps,
               phase_share {phase: 0-1}, periodic_slow {every_n_steps, period_s, first_step, hits, p_value,
               events, ...} | null (cadence_searched: whether enough steps after warm-up were there to search),
               gc {...} | null, creep {...} | null, recompiles {...} | null
  ranks        [] or one entry per rank: {rank, source, straggler_score (median rank's compute ÷ this rank's;
               < 0.75 flags a straggler), flagged, median_compute_ms, collective_wait_ms, last_arrivals,
               collective_skew_ms, slowest (the modal slowest rank), persistence persistent|rotating|
               undetermined, persistence_p, idle_pct, compute_pct, non_compute_pct, host_wait_pct,
               kernel_wait_pct} — keys without data are left out
  hypotheses   [{id, score 0-1, evidence [str], next_step, fix, notebook, command (runs the lab),
                 lost_share (share of GPU time the evidence costs, 0-1, or null), names (GPUs / ranks /
                 hosts)}]: the verdict first (the accounting decides it: healthy only within the noise floor, else
                 the cause with the largest attributed loss, or unexplained_slowdown), then by score; ids are
                 playbook.knowledge ids, including the verdicts healthy, insufficient_data (the inputs cannot
                 answer: next_step names what to record) and unexplained_slowdown (time is lost, no input says why)
  verdict      {id, score, confidence confirmed|likely|possible, title, names, lost_share (= accounting.lost_share
                 when there is an accounting), gpus (the observed scale), gpu_hours_per_day (only from an input of
                 ≥ 10 min or ≥ 3 cycles), sentence, ended (only when the run ended on a kill, a crash or the
                 scheduler: {kind, words, host, rank, step, time, detail}, and the sentence says so first)}: the
                 verdict in one sentence, the loss first
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from playbook.analysis import busy_flag
from playbook.analysis.accounting import account
from playbook.analysis.gpus import fmt_span
from playbook.analysis.oscillation.fleet import OscillationResult
from playbook.analysis.step_pace import run_restarts
from playbook.core.jsonable import to_jsonable
from playbook.diagnosis import analyzers, answer, attribution, epoch_work, ranking
from playbook.diagnosis.context import Run
from playbook.diagnosis.evidence.from_events import restarts, run_end
from playbook.knowledge.causes import cause_of_event
from playbook.model import schema
from playbook.readers.frames import small_pages


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
                            "ranks": self.ranks, "hypotheses": self.hypotheses, "verdict": self.verdict,
                            **({"screen": self.detail["screen"]} if self.detail.get("screen") else {})}, digits=6)

    def to_json(self, indent: int | None = 2) -> str:
        """One JSON object (strict: no NaN)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)

    @property
    def top(self) -> dict:
        """The highest-ranked hypothesis."""
        return self.hypotheses[0] if self.hypotheses else {}


def diagnose(bundle: schema.Bundle, interval_s: float | None = None) -> Diagnosis:
    """Run every applicable analyzer on `bundle`, rank the hypotheses, account for every second and state the
    verdict (see the module docstring)."""
    with small_pages():  # G × bins temporaries: no huge-page compaction (4,096 GPUs x 1 h: 21.9 -> 18.8 s)
        telemetry, pinned = busy_flag.reconcile(bundle.telemetry)  # a busy share its memory clock contradicts
        run = Run(replace(bundle, telemetry=telemetry) if pinned else bundle, interval_s,
                  list(bundle.warnings) + ([pinned] if pinned else []))
        analyzers.run_all(run)
        untestable = answer.untestable(run)
        ranked = ranking.rank(run.findings, run.healthy, untestable)
        acc = _accounting(run, ranked)
        ranked = answer.lead(ranked, acc, run, untestable)
        ranked = answer.restart_lead(ranked, run, acc)
        ranked = answer.topology_context(ranked, run.summaries.get("links"))
        return _assemble(run, ranked, acc)


# a tail a reader would miss in the totals: the accounting's GPU time then differs from the recording's span by a
# tenth or more (an 11 s tail of a 4.4 min recording is within what the warm-up and edges already move)
AFTER_END_NOTE = 0.1


def _accounting(run: Run, ranked: list[dict]):
    """The what-if accounting of the inputs, its buckets attributed (None without a time axis)."""
    try:
        acc = account(run.bundle, run.interval_s, series=run.series,
                      marked_steps=_cause_event_steps(run.bundle.events), clock_limited=_clock_limited(run))
    except Exception as exc:  # the accounting must not stop the diagnosis either
        run.warnings.append(f"accounting skipped: {type(exc).__name__}: {exc}"[:300])
        return None
    if acc is not None and acc.after_end_s >= AFTER_END_NOTE * acc.span_s:
        run.warnings.append(f"the recording runs {fmt_span(acc.after_end_s)} past the job's last work (every GPU "
                            "idle and its memory let go: the poller outlived the job); that tail is not counted")
    if acc is not None:
        attribution.attribute(acc, run.bundle.events, ranked, run.steps_summary, run.bundle.steps,
                              run.detail.get("drop_causes", ()), ranking.observations(run.findings))
        epoch_work.amortize(acc, run.bundle)  # once-per-epoch work in a log shorter than an epoch
        run.detail["accounting"] = acc
    return acc


def _clock_limited(run: Run) -> dict[str, float]:
    """{GPU id: the share of its busy work its limiter costs} for the GPUs analysis.gpus calls throttled (throttle
    reasons, a thermal or power limiter, a clock below its own or its peers'): the accounting charges them."""
    table = getattr(run.gpu_report, "table", None)
    if table is None or not len(table) or "clock_cost" not in table:
        return {}
    sel = table["status"] == "throttled"
    return dict(zip(table.loc[sel, "id"].astype(str), table.loc[sel, "clock_cost"].astype(float), strict=True))


def _cause_event_steps(events) -> set[int]:
    """The step numbers where an event that measures a cause was logged (a recompile, a checkpoint, ...)."""
    if events is None or events.empty or "step" not in events:
        return set()
    ev = events[(events["step"] >= 0) & ~run_restarts(events)]  # a run restart is between runs, no cause's
    known = ev["kind"].map(cause_of_event).notna()
    return set(ev.loc[known, "step"].astype(int).tolist())


def _only_host(bundle) -> str | None:
    """The one host every table of the inputs names, or None (several, or none)."""
    hosts: set[str] = set()
    for table in (bundle.telemetry, bundle.steps, bundle.events, bundle.host, bundle.trace):
        if "host" in table and len(table):
            hosts.update(table["host"].astype(str).unique().tolist())
            if len(hosts) > 1:
                return None
    return next(iter(hosts)) if hosts else None


def _assemble(run: Run, ranked: list[dict], acc) -> Diagnosis:
    """The Diagnosis: the JSON sections, and the analysis objects behind them in `detail`."""
    osc, gpu_report, sm = run.osc, run.gpu_report, run.summaries
    detail = {**run.detail, "oscillation": osc, "gpus": gpu_report,
              **{n: sm.get(n) for n in ("kineto", "stragglers", "nccl", "nsys", "flight_recorder", "links")}}
    stated = len(run.bundle.events) or any(str(k).startswith(schema.Bundle.SUMMARY_META_PREFIXES)
                                           for k in run.bundle.meta)  # events and facts: the answer reads them
    if osc is None and gpu_report is None and not len(run.bundle.steps) and not any(sm.values()) and not stated:
        run.warnings.append("nothing to analyse: no telemetry, steps, traces or NCCL logs in the inputs")
    scale = answer.scale(gpu_report, run.bundle, sm.get("kineto"))
    return Diagnosis(inputs=list(run.bundle.inputs), warnings=list(dict.fromkeys(run.warnings)),
                     gpus=gpu_report.contract() if gpu_report is not None else [],
                     oscillation=(osc.contract() if osc is not None else OscillationResult().contract()),
                     steps=run.steps_summary, ranks=answer.ranks(sm.get("stragglers"), sm.get("kineto")),
                     hypotheses=ranked, detail=detail,
                     verdict=answer.verdict_of(ranked, scale, acc, answer.cycles(osc, acc),
                                               run_end(run.bundle.events, run.bundle.steps,
                                                       run.bundle.meta.get("lines")), restarts(run.bundle.events),
                                               _only_host(run.bundle)),
                     accounting=acc.to_dict() if acc is not None else {})
