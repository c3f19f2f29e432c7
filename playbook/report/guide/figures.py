"""The field guide's generated tables and figures beside the lab results: the signature table (labelled SYNTHETIC
inputs with known answers, diagnosed) and the overhead and serving figures (compute in the callers, drawing here)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from playbook.knowledge import ids as cause_ids


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def fmt_value(v: Any) -> str:
    """A figure as table text: 3 significant digits for floats, lists and dicts compact, None as "–"."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "–"
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {fmt_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return str(v)


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


# ---------------------------------------------------------------- signatures and samples

STEP_CASES: dict[str, dict[str, Any]] = {
    "checkpoint every 40 steps": {"stall_every": 40, "stall_kind": "checkpoint"},
    "evaluation every 50 steps": {"stall_every": 50, "stall_kind": "eval"},
    "GC pauses at random steps": {"stall_every": None, "gc_count": 12},
    "GC every 13 steps (same allocations each step)": {"stall_every": 13, "stall_kind": "gc", "stall_s": 1.2},
    "recompilations (4 new shapes)": {"stall_every": None, "recompile_steps": (10, 50, 120, 200)},
    "one rank 1.3x slower": {"stall_every": None, "slow_rank": 2, "slow_factor": 1.3},
    "healthy steps": {"stall_every": None},
}
TELEMETRY_CASES: dict[str, str] = {
    cause_ids.HEALTHY: "every GPU busy, no swings",
    "oscillation": "all GPUs 90% for 45 s, 20% for 15 s",
    "irregular": "all GPUs swing together at random times",
    "antiphase": "half the GPUs high while the other half is low",
    "straggler": "one GPU drops every period; its peers read ~100% at low power",
    "throttled": "one GPU busy at a low SM clock, HW-slowdown bits set",
    "lost": "one GPU stops reporting mid-run",
}


def signature_rows() -> list[dict[str, Any]]:
    """Diagnose one labelled SYNTHETIC input per signature (playbook.labs.synthetic): what `playbook diagnose` finds.

    Telemetry cases: 2 hosts x 4 GPUs, 600 s at 2 s polling; step cases: 4 ranks x 400 steps of 1.5 s."""
    from playbook.diagnosis import diagnose
    from playbook.labs.synthetic import simulate_bundle, simulate_steps
    from playbook.model import schema

    rows = []
    for scenario, what in TELEMETRY_CASES.items():
        bundle, truth = simulate_bundle(scenario, hosts=2, gpus_per_host=4, duration_s=600, interval_s=2.0)
        rows.append(_signature(f"telemetry: {scenario}", what, truth.hypothesis, diagnose(bundle).to_dict()))
    # the same swing recorded for one period only: one drop, too few for a period, still not health — its two
    # readings (a scheduled stall, the input pipeline) tie on the one observation: the loss is unexplained, both named
    bundle, truth = simulate_bundle("oscillation", hosts=2, gpus_per_host=4, duration_s=60, interval_s=2.0)
    rows.append(_signature("telemetry: oscillation, 60 s recorded", "one 15 s drop to 20% in the recording",
                           (cause_ids.UNEXPLAINED_SLOWDOWN, cause_ids.PERIODIC_STALL, cause_ids.DATA_STARVATION),
                           diagnose(bundle).to_dict()))
    for name, kwargs in STEP_CASES.items():
        steps, events, truth = simulate_steps(**kwargs)
        bundle = schema.Bundle(inputs=[truth.source], steps=steps, events=events)
        rows.append(_signature("step log: " + name, "4 ranks x 400 steps", truth.hypothesis,
                               diagnose(bundle).to_dict()))
    return rows


def _signature(case: str, what: str, truth: str | tuple[str, ...] | None, d: dict[str, Any]) -> dict[str, Any]:
    osc = d.get("oscillation") or {}
    gpus = d.get("gpus") or []
    odd = [f"{g.get('id')} {g.get('status')}" for g in gpus if g.get("status") not in (None, "ok")]
    top = (d.get("hypotheses") or [{}])[0]
    evidence = (top.get("evidence") or [""])[0]
    return {"case": case, "what": what, "truth": truth, "top": top.get("id"), "score": top.get("score"),
            "detected": osc.get("detected"), "period_s": osc.get("period_s"), "duty_cycle": osc.get("duty_cycle"),
            "synchrony": osc.get("synchrony"), "gpus_not_ok": odd, "evidence": evidence}


def signatures_table(rows: list[dict[str, Any]]) -> str:
    """Markdown: each synthetic case, the oscillation shape found, the odd GPUs, the top hypothesis (✓ = truth;
    a case whose evidence cannot separate two causes lists both)."""
    lines = ["| SYNTHETIC case | Oscillation found (period · duty · synchrony) | GPUs not ok | Top hypothesis "
             "(score) | Its first evidence |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["detected"]:
            shape = " · ".join([f"{fmt_value(r['period_s'])} s" if r["period_s"] else "no period",
                                fmt_value(r["duty_cycle"]), str(r["synchrony"] or "–")])
        else:
            shape = "none" if r["detected"] is False else "–"
        odd = ", ".join(r["gpus_not_ok"][:3]) + (f" +{len(r['gpus_not_ok']) - 3}" if len(r["gpus_not_ok"]) > 3 else "")
        truths = r["truth"] if isinstance(r["truth"], (list, tuple)) else (r["truth"],)  # a tie may be either
        mark = " ✓" if r["top"] in truths else f" ✗ (truth: {' or '.join(map(str, truths))})"
        evidence = r["evidence"] if len(r["evidence"]) <= 220 else r["evidence"][:217] + "..."
        lines.append(f"| {_cell(r['case'])} — {_cell(r['what'])} | {_cell(shape)} | {_cell(odd or '–')} | "
                     f"`{r['top']}` ({fmt_value(r['score'])}){mark} | {_cell(evidence)} |")
    return "\n".join(lines)


# Commands whose output the pages quote verbatim (region name -> argv after `python`), run from the repo root.
# OUTPUT_COMMANDS read committed samples and fixtures (seconds: the `--outputs` path reruns them); BENCH_COMMANDS
# time things, so they run only with the labs.


# ---------------------------------------------------------------- plots (compute above, drawing here)

PLOTS = ("speedups", "overheads", "serving")  # the PNGs write_outputs may draw
OVERHEAD_ORDER = ("none", "timer", "probes_1hz", "probes_10hz", "probes_100hz", "profiler")  # the ladder's order


def plot_overheads(records: dict[str, Any]):
    """Bars: step time under each observation level ÷ without probes (02_observability's step_time_ratios)."""
    raw = records.get("step_time_ratios") or {}
    order = [k for k in OVERHEAD_ORDER if k in raw] + sorted(k for k in raw if k not in OVERHEAD_ORDER)
    ratios = {k: _num(raw[k]) for k in order if k != "none"}
    ratios = {k: v for k, v in ratios.items() if v is not None}
    if not ratios:
        return None
    from playbook.plots.style import PALETTE, figure

    fig, ax = figure(figsize=(6.5, 2.6))
    names, values = list(ratios), list(ratios.values())
    ax.bar(names, values, color=[PALETTE["fix"] if v <= 1.05 else PALETTE["fault"] for v in values])
    ax.axhline(1.0, color="#212529", lw=1)
    ax.axhline(1.05, color="#adb5bd", lw=1, ls="--")
    for i, v in enumerate(values):
        ax.text(i, v, f"{v:.3f}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("step time ÷ no probe")
    ax.set_ylim(min(0.9, min(values) - 0.02), max(values) * 1.06)
    ax.tick_params(axis="x", labelsize=8, rotation=20)
    ax.set_title("Observability: what each rung costs a step (dashed: 5% budget)", fontsize=10)
    return fig


def plot_serving(figures: dict[str, Any]):
    """Bars: serving p99 latency (ms, log scale) eager, compiled exact shapes, compiled buckets."""
    bars = {"eager": figures.get("p99_eager_ms"), "compiled, exact shapes": figures.get("p99_exact_ms"),
            "compiled, static buckets": figures.get("p99_bucketed_ms")}
    bars = {k: _num(v) for k, v in bars.items() if _num(v)}
    if not bars:
        return None
    from playbook.plots.style import PALETTE, figure

    fig, ax = figure(figsize=(6.5, 2.4))
    colors = [PALETTE["no_fault"], PALETTE["fault"], PALETTE["fix"]][: len(bars)]
    ax.barh(list(bars), list(bars.values()), color=colors)
    ax.set_xscale("log")
    for i, v in enumerate(bars.values()):
        ax.text(v, i, f" {v:.3g} ms", va="center", fontsize=8)
    ax.set_xlabel("p99 service latency per batch (ms, log scale)")
    ax.set_title("Serving: shape-specialised compile vs static buckets", fontsize=10)
    ax.set_xlim(right=max(bars.values()) * 8)
    return fig


def save_png(fig, path: Path) -> Path:
    """Write a small PNG (80 dpi) and close the figure."""
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
