"""The first screen of a report: what, where, how much and what next, from a diagnosis or a lab's verdict.

    h = headline.from_diagnosis(report, frame, metric)     # the ONE adapter on the diagnosis result
    display(HTML(headline.card_html(h, figure_png=...)))

`from_diagnosis` is the only place that reads the diagnosis for the headline: it takes the diagnosis's own
verdict sentence and GPU-time-lost figures where the result carries them (`verdict.sentence`,
`verdict.lost_share`, `verdict.gpu_hours_per_day`, or a `gpu_time_lost` object), and derives them from the
hypotheses and the telemetry otherwise. Everything rendered is escaped here.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.diagnosis.attribution import CONFIRM, MARGIN
from playbook.knowledge import ids as cause_ids
from playbook.report.catalog import TRIAGE
from playbook.report.scrapbook import count, format_value, html_inline
from playbook.report.verdict_rule import ranked_causes, top_hypothesis, triage_verdict

MAX_NAMED = 8  # guilty units named on the card before "and N more" (one line at 1400 px)



# A figure's key names its unit in its last word (the labs' and recorders' convention): fault_samples_s → "fault
# samples/s", step_s → "step (s)". Counted things before "_s" are rates; any other "_s" is seconds.
_RATE_WORDS = {"samples", "tokens", "items", "steps", "images", "sequences", "requests", "bytes", "batches"}
_UNIT_WORDS = {"s": "s", "ms": "ms", "us": "µs", "pct": "%", "w": "W", "mib": "MiB", "gib": "GiB", "mb": "MB",
               "gb": "GB", "mhz": "MHz", "c": "°C"}


def figure_label(key: str) -> str:
    """A readable label for a recorded figure's key, with its unit: "fault_samples_s" → "fault samples/s"."""
    words = key.split("_")
    if len(words) > 1 and words[-1] == "s" and words[-2] in _RATE_WORDS:
        return " ".join(words[:-2] + [words[-2] + "/s"])
    if len(words) > 1 and words[-1] in _UNIT_WORDS:
        return " ".join(words[:-1]) + f" ({_UNIT_WORDS[words[-1]]})"
    return " ".join(words)

def confidence_words(status: str, score: float | None, margin: float | None, word: str | None = None) -> str:
    """The verdict's confidence in words: the diagnosis's own word for its verdict (`word`: confirmed, likely,
    possible; diagnosis.attribution.confidence_word) when it gives one, so the card and the verdict sentence never
    disagree; else from the 0-1 scores by the same rule (the top cause at least CONFIRM and ahead of the runner-up by
    MARGIN is "high")."""
    if status == "refuted":
        return "high: no utilization problem found" if (score or 0) > 0.8 else "moderate: looks healthy"
    if status != "confirmed":
        if word == "likely":
            return "moderate: likely, an alternative is not ruled out"
        return "low: the evidence does not settle the cause"
    if word == "confirmed" or (word is None and (score or 0) >= CONFIRM and (margin is None or margin >= MARGIN)):
        return "high"
    return "moderate: the cause is named, an alternative is not ruled out"


def lost_share(frame: pd.DataFrame, metric: str, diagnosis: dict[str, Any]) -> float | None:
    """Share (0-1) of GPU time lost, from the samples: each GPU's shortfall 1 - mean / working level, where the
    working level is the oscillation's high level when one was found, else the 95th percentile of all samples
    (what these GPUs reach when not held up). The fleet's share is the larger of its mean shortfall and its worst
    GPU's when the top cause is a straggler: then every GPU waits in the collective for the slowest one (while
    its own counter may read busy). None without samples of a utilization-like metric."""
    if metric not in frame or not len(frame):
        return None
    values = pd.to_numeric(frame[metric], errors="coerce")
    ok = np.isfinite(values.to_numpy(dtype="float64"))
    if not ok.any():
        return None
    high = (diagnosis.get("oscillation") or {}).get("high_pct") if metric.endswith("_pct") else None
    level = float(high) if high else float(np.percentile(values[ok], 95))
    if level <= 0:
        return None
    short = 1.0 - values[ok].clip(0, level) / level
    fleet = float(short.mean())
    keys = [c for c in ("host", "gpu") if c in frame]
    top = top_hypothesis(diagnosis) or {}
    if "straggler" not in str(top.get("id")):
        return float(np.clip(fleet, 0.0, 1.0))
    worst = float(short.groupby([frame.loc[ok, c] for c in keys]).mean().max()) if keys else fleet
    return float(np.clip(max(fleet, worst), 0.0, 1.0))


def from_diagnosis(diagnosis: dict[str, Any], frame: pd.DataFrame | None = None,
                   metric: str = "util_pct") -> dict[str, Any]:
    """The adapter: a diagnosis dict (`playbook diagnose --json`) -> the headline dict the card renders (status, sentence,
    confidence, lost_share, gpu_hours_per_day, guilty, next_command, next_why)."""
    status, summary = triage_verdict(diagnosis)
    causes = ranked_causes(diagnosis)
    top = top_hypothesis(diagnosis) or {}
    score = top.get("score")
    margin = (float(causes[0].get("score") or 0) - float(causes[1].get("score") or 0)) if len(causes) > 1 else None
    v = diagnosis.get("verdict")
    sentence = v.get("sentence") if isinstance(v, dict) else (v if isinstance(v, str) else None)
    if sentence:
        sentence = sentence.split("; run next: ", 1)[0]  # the card shows the next command in its own row
    if not sentence:
        sentence = _sentence(status, top, diagnosis) or summary
    lost = diagnosis.get("gpu_time_lost")
    unpriced = v.get("unpriced") if isinstance(v, dict) else None  # stated, not priced: no 0% to show
    if unpriced:
        lost = None
    if not isinstance(lost, dict) and isinstance(v, dict) and v.get("lost_share") is not None:
        lost = {"share": v.get("lost_share"), "gpu_hours_per_day": v.get("gpu_hours_per_day")}
    gpus = diagnosis.get("gpus") or []
    n_gpus = len(gpus) or (int(frame.groupby(["host", "gpu"]).ngroups) if frame is not None
                           and len(frame) and "gpu" in frame else 0)
    share = lost.get("share") if isinstance(lost, dict) else None
    if share is None and frame is not None and not unpriced:
        share = lost_share(frame, metric, diagnosis)
    measured = bool(diagnosis.get("accounting")) or n_gpus > 0 or (frame is not None and len(frame) > 0)
    # without a time axis a finding may still state its cause's share (a trace's unexplained idle, a launch bound
    # from profile totals): shown as the finding's; a fault event's own share (0) is no measurement of time lost
    estimated = share if not measured and share and isinstance(v, dict) and v.get("lost_share") else None
    if not measured:
        share = hours = None
    hours = lost.get("gpu_hours_per_day") if isinstance(lost, dict) and measured else None
    if hours is None and share is not None and not isinstance(v, dict):
        hours = share * n_gpus * 24.0  # the diagnosis' own verdict says when its span is too short for a per-day cost
    command, why = next_command(status, top, recorded_run(diagnosis.get("inputs") or []))
    named = [str(n) for n in (v.get("names") or [])] if isinstance(v, dict) else []
    culprits = guilty(diagnosis)
    if named and (mine := [g for g in culprits["gpus"] if g.rsplit(" (", 1)[0] in named]):
        culprits["gpus"] = mine  # the GPUs the verdict names, not every GPU off "ok" (a saturated peer is no culprit)
    return {"status": status, "sentence": sentence, "detail": summary,
            "confidence": confidence_words(status, score, margin, v.get("confidence") if isinstance(v, dict)
                                           else None), "lost_share": share, "measured": measured, "estimated_share": estimated,
            "gpu_hours_per_day": hours, "gpus": n_gpus, "guilty": {**culprits, "named": named},
            "next_command": command, "next_why": why, "cause": top.get("id"),
            "basis": (diagnosis.get("accounting") or {}).get("basis"), "unpriced": unpriced,
            "synthetic": synthetic_inputs(diagnosis.get("inputs") or [])}


def _sentence(status: str, top: dict[str, Any], diagnosis: dict[str, Any]) -> str | None:
    osc = diagnosis.get("oscillation") or {}
    cause = str(top.get("id") or "").replace("_", " ")
    if status == "refuted":
        return "No utilization problem found: the GPUs stay busy."
    if not cause or top.get("id") == cause_ids.HEALTHY:
        return None
    where = _where(diagnosis)
    shape = ""
    if osc.get("detected") and osc.get("high_pct") is not None and osc.get("low_pct") is not None:
        shape = f" drop from {osc['high_pct']:.0f}% to {osc['low_pct']:.0f}%"
        shape += f" every {osc['period_s']:.3g} s" if osc.get("period_s") else " at irregular times"
    lead = "Most likely" if status == "confirmed" else "Possibly"
    return f"{lead} a {cause}: {where}{shape}."


def _where(diagnosis: dict[str, Any]) -> str:
    gpus = diagnosis.get("gpus") or []
    bad = [g for g in gpus if g.get("status") != "ok"]
    osc = diagnosis.get("oscillation") or {}
    if osc.get("synchrony") == "synchronized" and not bad:
        return {0: "all GPUs", 1: "the GPU", 2: "both GPUs"}.get(len(gpus), f"all {len(gpus)} GPUs")
    if bad:
        return f"{len(bad)} of {len(gpus)} GPUs"
    return f"the {len(gpus)} GPUs" if gpus else "the run"


def guilty(diagnosis: dict[str, Any]) -> dict[str, list[str]]:
    """Units to look at: non-ok GPUs (with their status), flagged ranks, and hosts whose every GPU is non-ok."""
    gpus = diagnosis.get("gpus") or []
    bad = [g for g in gpus if g.get("status") not in (None, "ok")]
    by_host: dict[str, list[dict]] = {}
    for g in gpus:
        by_host.setdefault(str(g.get("host")), []).append(g)
    hosts = [h for h, gs in by_host.items() if len(by_host) > 1 and all(x.get("status") != "ok" for x in gs)]
    ranks = []
    for r in diagnosis.get("ranks") or []:
        if isinstance(r, dict) and r.get("status") not in (None, "ok", "normal"):
            ranks.append(f"rank {r.get('rank')} ({r.get('status')})")
    return {"gpus": [f"{g.get('id')} ({g.get('status')})" for g in bad], "ranks": ranks, "hosts": hosts}


_LAB = re.compile(r"(\d\d)_[A-Za-z0-9_]+\.ipynb$")


def next_command(status: str, top: dict[str, Any], recorded: str | None = None) -> tuple[str, str]:
    """(command, why): the lab of the top cause as `playbook report --labs NN` (never the triage page itself),
    else the next measurement: for `recorded`, a run directory `playbook record` already wrote, a comparison
    (healthy) or lab 02's measurement ladder; for loose logs, a recording of the run."""
    m = _LAB.search(str(top.get("notebook") or ""))
    if m and not str(top.get("notebook")).endswith(f"{TRIAGE}.ipynb") and status in ("confirmed", "inconclusive"):
        return (f"playbook report --labs {m.group(1)}",
                f"reproduces {str(top.get('id')).replace('_', ' ')} on a small real training loop and measures its fix")
    if m and status in ("confirmed", "inconclusive") and top.get("next_step") and \
            top.get("id") not in (cause_ids.HEALTHY, cause_ids.INSUFFICIENT_DATA):
        return "", str(top["next_step"])  # a cause without a lab of its own: its next measurement, as the verdict says
    if recorded and status == "refuted":
        return f"playbook compare RUN_BEFORE {recorded}", "is this run slower than an earlier one beyond the noise"
    if recorded:
        return ("playbook report --labs 02", "the measurement ladder: which probe (step phases, traces, NCCL logs) "
                "records what this run lacks, and what it costs")
    if status == "refuted":
        return "playbook record --out runs/next -- <your launch command>", "keep a record to compare the next run with"
    return ("playbook record --out runs/next -- <your launch command>",
            "records step phases and host counters, which name the cause")


SYNTHETIC_MARK = "# SYNTHETIC"  # how playbook.labs.synthetic's README.md beside generated logs begins


def synthetic_inputs(inputs: list[str]) -> bool:
    """True when every input lies beside a README.md that playbook.labs.synthetic wrote ("# SYNTHETIC ..."): the
    card then says the input is generated, not measured."""
    folders = {Path(name).parent for name in inputs or []}
    if not folders:
        return False
    for folder in folders:
        try:
            with open(folder / "README.md", encoding="utf-8", errors="replace") as fh:
                if not fh.readline().startswith(SYNTHETIC_MARK):
                    return False
        except OSError:
            return False
    return True


def recorded_run(inputs: list[str]) -> str | None:
    """The run directory (written by `playbook record`) that the diagnosed inputs lie in, if any."""
    from playbook.model.run_layout import is_run_dir

    for name in inputs or []:
        path = Path(name)
        for candidate in (path, *list(path.parents)[:2]):
            try:
                if candidate.is_dir() and is_run_dir(candidate):
                    return str(candidate)
            except OSError:
                continue
    return None


def lab_headline(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The headline of a lab page from its summary.json entry (the recorded verdict), None without a verdict."""
    v = entry.get("verdict") or {}
    if not v.get("status"):
        return None
    words = {"confirmed": "the fix beats run-to-run noise", "refuted": "the fix did not help beyond noise",
             "inconclusive": "low: the runs cannot separate the fix from noise"}
    command, why = lab_next(entry)
    figures = v.get("figures") or {}  # stored with sorted keys (nbformat): the sentence's ratios first again
    figures = dict(sorted(figures.items(), key=lambda kv: not str(kv[0]).endswith("ratio")))
    return {"status": v["status"], "sentence": str(v.get("summary", "")), "detail": "",
            "confidence": words.get(v["status"], v["status"]), "lost_share": None, "gpu_hours_per_day": None,
            "figures": figures, "guilty": {}, "next_command": command, "next_why": why}


def lab_next(entry: dict[str, Any]) -> tuple[str, str]:
    """(command, why) after a lab, never the page itself: an inconclusive lab reruns with twice the repeats
    (papermill, when the notebook has a `repeats` parameter); otherwise the fix is tried on one's own run."""
    status = (entry.get("verdict") or {}).get("status")
    source = str(entry.get("source") or "")
    if status == "inconclusive" and source.endswith(".ipynb"):
        from playbook.report import catalog

        try:
            path = Path(source) if Path(source).is_absolute() else catalog.repo_root() / source
            nb = json.loads(path.read_text(encoding="utf-8"))
            params = {p.name: p.default for p in catalog.parse_parameters(
                catalog.cell_source(catalog.parameters_cells(nb)[0]))}
        except (OSError, ValueError, IndexError, catalog.ParameterCellError):
            params = {}
        if isinstance(params.get("repeats"), int):
            ran = (entry.get("parameters") or {}).get("repeats", params["repeats"])
            more = max(2 * int(ran), 3)
            return (f"papermill {source} {Path(source).stem}-more.ipynb -p repeats {more}",
                    f"{more} repeats a variant narrow the interval until it separates fix, fault and noise")
    return ("playbook compare runs/before runs/after",
            "record your own run before and after the fix (playbook record --out runs/after -- CMD) and compare")


def figure_png(fig, dpi: int = 90) -> str:
    """A matplotlib figure as base64 PNG text (for a data: URI)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def pct(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.0f}%"


def _names(items: list[str]) -> str:
    shown = ", ".join(html.escape(x) for x in items[:MAX_NAMED])
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")


CARD_CSS = """
.pb-card { border: 1px solid #dee2e6; border-left: 6px solid var(--pb-c); border-radius: 6px; padding: .8rem 1rem;
  margin: .6rem 0 1rem; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; text-align: left;
  background: #fff; color: #212529; }
.pb-card .pb-verdict { font-size: 1.25rem; font-weight: 600; margin: 0 0 .4rem; }
.pb-card .pb-row { display: flex; flex-wrap: wrap; gap: .4rem 2rem; margin: .3rem 0; font-size: .95rem; }
.pb-card .pb-k { color: #6c757d; font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; display: block; }
.pb-card code { background: #f1f3f5; padding: .1em .4em; border-radius: 3px; font-size: .95rem; }
.pb-card img { max-width: 100%; max-height: 430px; display: block; margin-top: .5rem; }
"""
STATUS_COLORS = {"confirmed": "#264653", "refuted": "#2a9d8f", "inconclusive": "#e9a23b", "error": "#d62828"}


def card_html(h: dict[str, Any], figure_b64: str | None = None, figure_alt: str = "key figure",
              figure_note: str | None = None) -> str:
    """The headline as a self-contained, escaped HTML block (its own <style>, no script)."""
    e = html.escape
    color = STATUS_COLORS.get(h.get("status", ""), "#adb5bd")
    facts = [("input", "<b>SYNTHETIC</b> — generated, not a measurement")] if h.get("synthetic") else []
    facts.append(("confidence", e(str(h.get("confidence", "")))))
    if h.get("lost_share") is not None and h.get("basis") == "wall":  # a step log: the loss is of wall time
        facts.append(("time lost", f"{pct(h['lost_share'])} of wall time"))
    elif h.get("lost_share") is not None:
        whose = count(int(h["gpus"]), "GPU") if h.get("gpus") else "GPU time"  # a benchmark's totals: no GPU count
        facts.append(("GPU time lost", f"{pct(h['lost_share'])} of {whose}"))
    elif h.get("unpriced"):
        facts.append(("time lost", e(str(h["unpriced"]))))
    elif h.get("estimated_share"):
        facts.append(("GPU time lost", f"~{pct(h['estimated_share'])} by the leading finding (no GPU utilization "
                                       "or step times to count every second)"))
    elif h.get("measured") is False:
        facts.append(("GPU time lost", "not measured: no GPU utilization or step times in the inputs"))
    if h.get("gpu_hours_per_day") is not None:
        facts.append(("GPU-hours lost per day", f"{h['gpu_hours_per_day']:.1f}"))
    g = h.get("guilty") or {}
    where = [(k, v) for k, v in (("hosts", g.get("hosts")), ("GPUs", g.get("gpus")), ("ranks", g.get("ranks"))) if v]
    if where:
        facts.extend((f"guilty {k}", _names(v)) for k, v in where)
    elif g.get("named"):  # the units the verdict names (a host from its log lines, a rank that never arrived)
        facts.append(("guilty", _names(g["named"])))
    elif h.get("lost_share") is not None and h.get("gpus"):
        facts.append(("guilty", "no single GPU: every GPU behaves alike (a shared cause)"))
    for k, v in (h.get("figures") or {}).items():
        if not isinstance(v, (dict, list)):
            facts.append((e(figure_label(str(k))), e(format_value(v))))
    row = "".join(f'<div><span class="pb-k">{k}</span>{v}</div>' for k, v in facts)
    parts = [f'<style>{CARD_CSS}</style><section class="pb-card" id="verdict" style="--pb-c:{color}">',
             f'<p class="pb-verdict">{e(str(h.get("status", "")).upper())}: {html_inline(h.get("sentence", ""))}</p>',
             f'<div class="pb-row">{row}</div>']
    if h.get("next_command"):
        parts.append(f'<div class="pb-row"><div><span class="pb-k">next</span><code>{e(h["next_command"])}</code> '
                     f'— {html_inline(h.get("next_why", ""))}</div></div>')
    elif h.get("next_why"):  # the cause's next measurement (no lab of its own to run)
        parts.append(f'<div class="pb-row"><div><span class="pb-k">next</span>{html_inline(h["next_why"])}</div></div>')
    if figure_b64:
        parts.append(f'<img alt="{e(figure_alt)}" src="data:image/png;base64,{figure_b64}">')
    elif figure_note:
        parts.append(f'<div class="pb-row"><em>{e(figure_note)}</em></div>')
    parts.append("</section>")
    return "".join(parts)
