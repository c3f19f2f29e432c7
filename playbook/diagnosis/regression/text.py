"""Regression reports as text: the numbers (seconds, p-values, counts, short texts) and the readable report
of a comparison (comparison_text, what `playbook compare` prints)."""

from __future__ import annotations

import math

import numpy as np


def fmt_seconds(s: float | None) -> str:
    """Seconds in readable units: "1.23 s", "45.6 ms", "789 µs", "0"; "?" for None/NaN."""
    if s is None or not np.isfinite(s):
        return "?"
    a = abs(s)
    if a >= 1:
        return f"{s:.3g} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if a == 0:
        return "0"
    return f"{s * 1e6:.3g} µs"


def fmt_p(p: float | None) -> str:
    """A p-value for a report: "p = 0.012", "p < 1e-16", "untested"."""
    if p is None or not np.isfinite(p):
        return "untested"
    return f"p = {p:.2g}" if p >= 1e-16 else "p < 1e-16"


def short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def num(x: float) -> str:
    if x is None or not np.isfinite(x):
        return "?"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


# ---------------------------------------------------------------------------------------------------------------
# The readable report


def _s(x) -> str:
    return fmt_seconds(x)


def _p(p) -> str:
    return fmt_p(p)


def _signed(x) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "?"
    return ("+" if x > 0 else "−" if x < 0 else "±") + _s(abs(x))


def _pct(x, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "?"
    return f"{x:+.0%}" if signed else f"{x:.0%}"


def _side_label(side: dict) -> str:
    ins = side.get("inputs") or []
    shown = ", ".join(ins[:2]) + (f" and {len(ins) - 2} more" if len(ins) > 2 else "")
    runs = side.get("runs", 1)
    return f"{shown} ({runs} run{'s' if runs != 1 else ''}, {side.get('steps', 0)} steps)"


def comparison_text(r) -> str:
    """The readable report of a diagnosis.regression.verdict.Regression (what `playbook compare` prints)."""
    d = r.to_dict()
    lines = ["playbook compare", f"  GOOD: {_side_label(d['good'])}", f"  BAD:  {_side_label(d['bad'])}"]
    if d["warnings"]:
        lines.append(f"  ({len(d['warnings'])} warning{'s' if len(d['warnings']) != 1 else ''} on stderr)")
    lines += ["", f"Verdict: {d['summary']}"]
    lines += _throughput_section(d)
    lines += _causes_section(d)
    lines += _phases_section(d)
    lines += _events_section(d)
    lines += _pattern_section(d)
    lines += _environment_section(d)
    return "\n".join(lines).rstrip()


def _throughput_section(d: dict) -> list[str]:
    tp = d["throughput"]
    if not tp:
        return [""]
    lines = [""]
    head = "Throughput" if d["mode"] == "steps" else "Mean utilization (no step log on both sides)"
    values = (f"GOOD {num(tp['good'])}, BAD {num(tp['bad'])} {tp['unit']}" if d["mode"] == "steps" else
              f"GOOD {tp['good']:.1f}%, BAD {tp['bad']:.1f}%")
    lines.append(f"{head}: {values} — ratio {tp['ratio']:.3f} "
                 f"(95% CI {tp['ratio_lo']:.3f}-{tp['ratio_hi']:.3f}, {_p(tp['p_value'])}; "
                 f"{'bigger than the noise' if tp['significant'] else 'within the noise'})")
    rr = tp.get("run_to_run") or {}
    if rr.get("measured"):
        lines.append(f"  run to run: GOOD cv {_pct(rr.get('good_cv'))} over {len(tp['good_per_run'])} runs, BAD cv "
                     f"{_pct(rr.get('bad_cv'))} over {len(tp['bad_per_run'])} runs ({tp.get('method', '')})")
    else:
        noise = "step-to-step" if d["mode"] == "steps" else "sample-to-sample"
        lines.append(f"  run to run: not measured (one run on a side) — the interval holds the {noise} noise only")
    if tp.get("block_steps"):
        bs = tp["block_steps"]
        lines.append(f"  block bootstrap over steps, {tp['n_boot']} resamples, blocks of "
                     f"{'/'.join(map(str, bs['good']))} (GOOD) and {'/'.join(map(str, bs['bad']))} (BAD) steps")
    st = d["step_time"]
    if st:
        m, md = st["mean"], st["median"]
        per = "" if st.get("per") == "step" else f" (per {st['per']})"
        lines.append(f"  step time{per}: mean {_s(m['good'])} → {_s(m['bad'])} (×{m['ratio']:.3g}), median "
                     f"{_s(md['good'])} → {_s(md['bad'])} (×{md['ratio']:.3g}, 95% CI {md['ratio_lo']:.3g}-"
                     f"{md['ratio_hi']:.3g}), p90 {_s(st['p90']['good'])} → {_s(st['p90']['bad'])}")
        if st.get("cliffs_delta") is not None:
            lines.append(f"  distribution: Cliff's δ = {st['cliffs_delta']:+.2f} (P(BAD step slower) − P(faster); "
                         f"Mann-Whitney {_p(st['p_value'])} on autocorrelation-deflated sizes)")
    return lines


def _causes_section(d: dict) -> list[str]:
    lines = ["", "Likely causes (ranked by the share of the change they account for × confidence)"]
    if not d["causes"]:
        lines.append("  none: no cause accounts for a significant share of the change")
        return lines
    for i, c in enumerate(d["causes"][:6], 1):
        share = f", {_pct(c['share_of_change'])} of the change" if c.get("share_of_change") is not None else ""
        delta = f", {_signed(c['delta_s'])} per step" if c.get("delta_s") is not None else ""
        lines.append(f"  {i}. {c['id']:<22} score {c['score']:.2f}{delta}{share}")
        for e in c["evidence"][:6]:
            lines.append(f"       - {e}")
        lines.append(f"       next: {c['next_step']}")
        lines.append(f"       fix:  {c['fix']}")
        lines.append(f"       lab:  {c['notebook']}")
    return lines


def _phases_section(d: dict) -> list[str]:
    if not d["phases"]:
        return []
    per = d["step_time"].get("per", "step")
    lines = ["", f"Phases (seconds per step{'' if per == 'step' else ' at ' + per}; largest change first)",
             f"  {'phase':<12} {'GOOD':>10} {'BAD':>10} {'change':>10}   {'95% CI':<23} {'share':>6}"]
    for p in d["phases"][:10]:
        ci = f"{_signed(p['delta_lo'])} to {_signed(p['delta_hi'])}"
        share = _pct(p["share_of_change"]) if p.get("share_of_change") is not None and \
            abs(p["share_of_change"]) >= 0.005 else ""
        mark = "" if p["significant"] else "  (noise)"
        lines.append(f"  {p['phase']:<12} {_s(p['good_s']):>10} {_s(p['bad_s']):>10} {_signed(p['delta_s']):>10}   "
                     f"{ci:<23} {share:>6}{mark}")
    return lines


def _events_section(d: dict) -> list[str]:
    if not d["events"]:
        return []
    lines = ["", "Events (in the timed steps; steps per 100 holding one; outside = before/after/between runs' steps)"]
    for e in d["events"][:8]:
        secs = ""
        if e.get("delta_s") is not None:
            secs = f", {_s(e['good_s_per_step'])} → {_s(e['bad_s_per_step'])} per step"
        cad = ""
        if e.get("good_cadence_steps") is not None or e.get("bad_cadence_steps") is not None:
            cad = f", one every {_every(e.get('good_cadence_steps'))} → {_every(e.get('bad_cadence_steps'))} steps"
        out = f", outside {e['good_outside']} → {e['bad_outside']}" if e["good_outside"] or e["bad_outside"] else ""
        lines.append(f"  {e['kind']:<16} {e['good_events']} → {e['bad_events']} "
                     f"({e['good_per_100_steps']:.3g} → {e['bad_per_100_steps']:.3g} per 100 steps, rate "
                     f"{_p(e['rate_p_value'])}){secs}{cad}{out}")
    return lines


def _pattern_section(d: dict) -> list[str]:
    pat = d["pattern"]
    signal = pat.get("signal") or "no utilization-like signal"
    lines = ["", f"Utilization pattern ({signal})"]
    for side in ("good", "bad"):
        s = pat[side]
        osc = s.get("oscillation") or {}
        if osc.get("detected"):
            what = (f"periodic {osc.get('high_pct'):.0f}% ↔ {osc.get('low_pct'):.0f}% every {osc.get('period_s')} s, "
                    f"duty {osc.get('duty_cycle')}" if osc.get("periodic") else
                    f"irregular swings {osc.get('high_pct'):.0f}% ↔ {osc.get('low_pct'):.0f}%")
            if osc.get("synchrony"):
                what += f", {osc['synchrony']}"
        elif osc:
            what = "no oscillation" + (f" (level {osc['high_pct']:.0f}%)" if osc.get("high_pct") is not None else "")
        else:
            what = "not analysed"
        extra = []
        if s.get("mean_util_pct") is not None:
            extra.append(f"mean utilization {s['mean_util_pct']:.0f}%")
        if s.get("busy_share") is not None:
            extra.append(f"busy {s['busy_share']:.0%} of wall time")
        if s.get("top_hypothesis"):
            extra.append(f"diagnose: {s['top_hypothesis']} ({s['top_score']:.2f})")
        lines.append(f"  {side.upper():<4}  {what}" + (f"; {'; '.join(extra)}" if extra else ""))
    for c in pat.get("changes") or []:
        lines.append(f"  changed: {c}")
    return lines


def _environment_section(d: dict) -> list[str]:
    env = d["environment"]
    if not env and not d["unchanged"]:
        return ["", "Environment and configuration: not compared (no fingerprint or configuration recorded)"]
    lines = ["", f"Environment and configuration: {len(env)} changed, {len(d['unchanged'])} unchanged"]
    width = max((len(e["key"]) for e in env[:16]), default=10)
    for e in env[:16]:
        linked = f"  → {', '.join(e['causes'])}" if e["causes"] and e["score"] >= 0.05 else ""
        varies = " (varies within a side)" if e.get("varies") else ""
        lines.append(f"  {e['key']:<{width}}  {short(str(e['good']), 60)} → {short(str(e['bad']), 60)}{varies}{linked}")
    if len(env) > 16:
        lines.append(f"  … and {len(env) - 16} more (see --json)")
    if d["unchanged"]:
        shown = [k for k in d["unchanged"] if not k.startswith(("env ", "package ", "knobs."))][:10]
        lines.append(f"  unchanged: {', '.join(shown)}" + (" …" if len(d["unchanged"]) > len(shown) else ""))
    return lines


def _every(n) -> str:
    return "–" if n is None else f"{n:.3g}"
