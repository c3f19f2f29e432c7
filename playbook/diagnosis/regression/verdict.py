"""`compare_runs`: GOOD run(s) against BAD run(s) — the verdict, its causes, the utilization pattern and what
changed (the method: diagnosis.regression).

JSON contract (`Regression.to_dict()`; NaN → null):
  verdict      slower | faster | no significant difference | not comparable
  summary      one line
  mode         steps | utilization | none
  good, bad    {inputs, runs, steps, ranks, unit, throughput, throughput_per_run, run_cv, median_step_s,
                mean_step_s, tokens_per_step, environment (bool)}
  throughput   {unit, good, bad, ratio, ratio_lo, ratio_hi, change, p_value, significant, method, n_boot,
                block_steps {good, bad}, good_per_run, bad_per_run, run_to_run {good_cv, bad_cv, measured},
                bootstrap_interval, runs_t_interval (with ≥ 2 runs a side), per}
  step_time    {median {good, bad, ratio, ratio_lo, ratio_hi}, mean {...}, p90 {good, bad}, cliffs_delta,
                p_value, lag1 {good, bad}}
  phases       [{phase, good_s, bad_s, delta_s, delta_lo, delta_hi, p_value, significant, share_of_change}]
  events       [{kind, good_events, bad_events, good_steps_with, bad_steps_with, good_per_100_steps,
                 bad_per_100_steps, rate_p_value, good_s_per_step, bad_s_per_step, good_outside, bad_outside,
                 good_cadence_steps, bad_cadence_steps}]
  causes       [{id, score, impact, share_of_change, good_s, bad_s, delta_s, delta_lo, delta_hi, p_value,
                 evidence [str], changes [key], next_step, fix, notebook}], highest score first
  pattern      {signal, good {oscillation, mean_util_pct, busy_share, straggler_ranks, slowest_rank {rank,
                straggler_score, persistence}, top_hypothesis, top_score,
                gpus {id: status}, signal}, bad {...}, changes [str], gpus [{id, good, bad}]}
  environment  [{key, group, good, bad, causes [id], link_weight, score, varies (several values on a side),
                 overlap (a value found on both sides)}] changed items, highest score first
  unchanged    [key] items equal on both sides
  warnings     [str]
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.jsonable import to_jsonable
from playbook.diagnosis import diagnose
from playbook.diagnosis.regression.costs import ALPHA, N_BOOT, advice, compare_steps, compare_utilization
from playbook.diagnosis.regression.environment_diff import environment, environment_diff, link_environment
from playbook.diagnosis.regression.runs import RunSteps, run_steps
from playbook.diagnosis.regression.text import num, short
from playbook.knowledge import ids as cause_ids
from playbook.model import schema


@dataclass
class Regression:
    """The result of `compare_runs` (see the module docstring for the JSON contract)."""

    verdict: str
    summary: str
    mode: str
    good: dict
    bad: dict
    throughput: dict
    step_time: dict
    phases: list[dict]
    events: list[dict]
    causes: list[dict]
    pattern: dict
    environment: list[dict]
    unchanged: list[str]
    warnings: list[str]
    detail: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        """The JSON contract as plain Python (NaN → None)."""
        return to_jsonable({k: getattr(self, k) for k in (
            "verdict", "summary", "mode", "good", "bad", "throughput", "step_time", "phases", "events", "causes",
            "pattern", "environment", "unchanged", "warnings")}, digits=6)

    def to_json(self, indent: int | None = 2) -> str:
        """One JSON object (strict: no NaN)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)

    @property
    def top(self) -> dict:
        """The highest-ranked cause ({} when none)."""
        return self.causes[0] if self.causes else {}

    def phase_frame(self) -> pd.DataFrame:
        """The phases section as a frame (seconds per step), for tables and plots."""
        return pd.DataFrame(self.phases)

    def cause_frame(self) -> pd.DataFrame:
        """The causes section as a frame (without the long texts)."""
        cols = ["id", "score", "impact", "share_of_change", "good_s", "bad_s", "delta_s", "delta_lo", "delta_hi",
                "p_value"]
        return pd.DataFrame([{k: c.get(k) for k in cols} for c in self.causes], columns=cols)


def _as_list(x: schema.Bundle | Sequence[schema.Bundle]) -> list[schema.Bundle]:
    return [x] if isinstance(x, schema.Bundle) else list(x)


def compare_runs(good: schema.Bundle | Sequence[schema.Bundle], bad: schema.Bundle | Sequence[schema.Bundle],
            n_boot: int = N_BOOT, seed: int = 0, diagnoses: bool = True) -> Regression:
    """Compare GOOD run(s) with BAD run(s): one Bundle per run (several per side measure run-to-run variance)."""
    good_b, bad_b = _as_list(good), _as_list(bad)
    if not good_b or not bad_b:
        raise ValueError("compare needs at least one run on each side")
    rng = np.random.default_rng(seed)
    warnings: list[str] = []
    for name, bs in (("GOOD", good_b), ("BAD", bad_b)):
        for b in bs:
            warnings += [f"{name}: {w}" for w in b.warnings]
    g_runs = [run_steps(b, f"GOOD run {i + 1}") for i, b in enumerate(good_b)]
    b_runs = [run_steps(b, f"BAD run {i + 1}") for i, b in enumerate(bad_b)]
    for r in g_runs + b_runs:
        if r is not None:
            warnings += r.warnings
    g_ok = [r for r in g_runs if r is not None]
    b_ok = [r for r in b_runs if r is not None]
    diag_g = [_diagnose(b, warnings) for b in good_b] if diagnoses else []
    diag_b = [_diagnose(b, warnings) for b in bad_b] if diagnoses else []
    pattern = _pattern(good_b, bad_b, diag_g, diag_b, g_ok, b_ok)
    changed, unchanged, notes = environment_diff(good_b, bad_b)
    warnings += notes
    info = {"good": _side_info(good_b, g_ok), "bad": _side_info(bad_b, b_ok)}

    if g_ok and b_ok:
        if len(g_ok) < len(good_b) or len(b_ok) < len(bad_b):
            warnings.append("some runs have no step log: throughput is compared on the runs that have one")
        res = compare_steps(g_ok, b_ok, n_boot, rng, warnings)
        mode = "steps"
    else:
        res = compare_utilization(good_b, bad_b, n_boot, rng, warnings)
        mode = "utilization" if res else "none"
        if res is None:
            res = {"throughput": {}, "step_time": {}, "phases": [], "events": [], "causes": []}
    throughput, step_time, phases, events, causes = (res["throughput"], res["step_time"], res["phases"],
                                                     res["events"], res["causes"])
    if mode != "steps":
        causes = _causes_from_diagnoses(diag_g, diag_b)
    else:
        _diagnose_evidence(causes, diag_g, diag_b)
    env = link_environment(changed, causes)
    causes.sort(key=lambda c: (-c["score"], c["id"]))
    if mode == "steps":
        info["good"].update(throughput=throughput["good"], throughput_per_run=throughput["good_per_run"],
                            unit=throughput["unit"])
        info["bad"].update(throughput=throughput["bad"], throughput_per_run=throughput["bad_per_run"],
                           unit=throughput["unit"])
        for side in ("good", "bad"):
            tp = info[side]["throughput_per_run"]
            info[side]["run_cv"] = float(np.std(tp, ddof=1) / np.mean(tp)) if len(tp) > 1 else None
            info[side]["median_step_s"] = step_time["median"][side]
            info[side]["mean_step_s"] = step_time["mean"][side]
    verdict, summary = _verdict(mode, throughput, causes, env)
    return Regression(verdict=verdict, summary=summary, mode=mode, good=info["good"], bad=info["bad"],
                      throughput=throughput, step_time=step_time, phases=phases, events=events, causes=causes,
                      pattern=pattern, environment=env, unchanged=unchanged, warnings=list(dict.fromkeys(warnings)),
                      detail={"good_runs": g_ok, "bad_runs": b_ok, "good_diagnoses": diag_g,
                              "bad_diagnoses": diag_b, **res.get("detail", {})})


def _side_info(bundles: list[schema.Bundle], runs: list[RunSteps]) -> dict:
    inputs = [i for b in bundles for i in b.inputs]
    out: dict[str, Any] = {"inputs": inputs, "runs": len(bundles), "steps": int(sum(len(r.table) for r in runs)),
                           "ranks": max((r.ranks for r in runs), default=0),
                           "environment": any(environment(b)[1] for b in bundles)}
    if runs and all(r.has_tokens for r in runs):
        out["tokens_per_step"] = float(sum(r.table["tokens"].sum() for r in runs) / sum(len(r.table) for r in runs))
    return out


def _diagnose(bundle: schema.Bundle, warnings: list[str]):
    try:
        return diagnose(bundle)
    except Exception as exc:  # one failing diagnosis must not stop the comparison
        warnings.append(f"diagnose skipped for {', '.join(bundle.inputs[:2])}: {type(exc).__name__}: {exc}"[:300])
        return None


def _hyp_scores(diags: list) -> dict[str, float]:
    scores: dict[str, list[float]] = {}
    ds = [d for d in diags if d is not None]
    for d in ds:
        for h in d.hypotheses:
            scores.setdefault(h["id"], []).append(float(h["score"]))
    return {k: float(np.sum(v) / len(ds)) for k, v in scores.items()} if ds else {}


def _causes_from_diagnoses(diag_g: list, diag_b: list) -> list[dict]:
    """Without step logs: the hypotheses whose diagnose score rose from GOOD to BAD."""
    sg, sb = _hyp_scores(diag_g), _hyp_scores(diag_b)
    out = []
    for hid, s in sb.items():
        if hid == cause_ids.HEALTHY:
            continue
        rise = s - sg.get(hid, 0.0)
        if rise < 0.05:
            continue
        ev = []
        for d in diag_b:
            if d is None:
                continue
            h = next((h for h in d.hypotheses if h["id"] == hid), None)
            if h:
                ev += [e for e in h["evidence"][:3] if e not in ev]
        ev.insert(0, f"diagnose score {sg.get(hid, 0.0):.2f} in GOOD → {s:.2f} in BAD")
        out.append({"id": hid, "score": round(rise, 3), "impact": math.nan, "share_of_change": math.nan,
                    "good_s": math.nan, "bad_s": math.nan, "delta_s": math.nan, "delta_lo": math.nan,
                    "delta_hi": math.nan, "p_value": math.nan, "evidence": ev, "changes": [], **advice(hid)})
    return out


def _diagnose_evidence(causes: list[dict], diag_g: list, diag_b: list) -> None:
    sg, sb = _hyp_scores(diag_g), _hyp_scores(diag_b)
    for c in causes:
        if c["id"] in sb or c["id"] in sg:
            c["evidence"].append(f"diagnose score for {c['id']}: {sg.get(c['id'], 0.0):.2f} in GOOD → "
                                 f"{sb.get(c['id'], 0.0):.2f} in BAD")


def _pattern(good_b, bad_b, diag_g, diag_b, g_runs, b_runs) -> dict:
    """The utilization pattern of each side and what changed (from diagnose, plus busy share from phases)."""
    def side(bundles, diags, runs) -> dict:
        d = next((x for x in diags if x is not None), None)
        osc = dict(d.oscillation) if d is not None else {}
        tele = pd.concat([b.telemetry for b in bundles if len(b.telemetry)], ignore_index=True) if any(
            len(b.telemetry) for b in bundles) else None
        util = float(tele["util_pct"].mean()) if tele is not None and tele["util_pct"].notna().any() else None
        busy = None
        if runs and all(r.has_phases for r in runs):
            shares = [r.table[[c for c in r.table.columns if c.startswith("net:")]].sum().sum()
                      / r.table["wall_s"].sum() for r in runs if any(c.startswith("net:") for c in r.table.columns)]
            busy = float(np.mean(shares)) if shares else None
        top = d.top if d is not None else {}
        flagged = sorted({int(r["rank"]) for x in diags if x is not None for r in x.ranks if r.get("flagged")})
        slow = next((r for r in (d.ranks if d is not None else []) if r.get("slowest")), None)
        slowest = ({"rank": int(slow["rank"]), "straggler_score": slow.get("straggler_score"),
                    "persistence": slow.get("persistence")} if slow else None)
        return {"oscillation": osc, "mean_util_pct": util, "busy_share": busy, "straggler_ranks": flagged,
                "slowest_rank": slowest,
                "top_hypothesis": top.get("id"), "top_score": top.get("score"),
                "gpus": {g["id"]: g["status"] for g in (d.gpus if d is not None else [])},
                "signal": ("util_pct" if util is not None else ("busy share derived from step phases"
                                                                 if busy is not None else None))}

    g, b = side(good_b, diag_g, g_runs), side(bad_b, diag_b, b_runs)
    changes = []
    if g["mean_util_pct"] is not None and b["mean_util_pct"] is not None:
        changes.append(f"mean GPU utilization {g['mean_util_pct']:.0f}% → {b['mean_util_pct']:.0f}%")
    if g["busy_share"] is not None and b["busy_share"] is not None and \
            f"{g['busy_share']:.0%}" != f"{b['busy_share']:.0%}":
        changes.append(f"busy share of wall time (fwd+bwd+optimizer, less compile and GC stalls inside them) "
                       f"{g['busy_share']:.0%} → {b['busy_share']:.0%}")
    og, ob = g["oscillation"], b["oscillation"]
    if og and ob:
        if og.get("detected") != ob.get("detected"):
            changes.append(f"oscillation: {_osc_text(og)} → {_osc_text(ob)}")
        elif ob.get("detected"):
            if og.get("periodic") != ob.get("periodic") or (
                    og.get("period_s") and ob.get("period_s") and
                    abs(math.log(ob["period_s"] / og["period_s"])) > math.log(1.25)):
                changes.append(f"oscillation: {_osc_text(og)} → {_osc_text(ob)}")
            if og.get("duty_cycle") is not None and ob.get("duty_cycle") is not None and \
                    abs(og["duty_cycle"] - ob["duty_cycle"]) >= 0.1:
                changes.append(f"duty cycle {og['duty_cycle']:.2f} → {ob['duty_cycle']:.2f}")
            if og.get("synchrony") != ob.get("synchrony"):
                changes.append(f"synchrony {og.get('synchrony')} → {ob.get('synchrony')}")
    sg, sb = g["slowest_rank"], b["slowest_rank"]
    if sb and sb.get("persistence") == "persistent" and (not sg or sg.get("persistence") != "persistent"
                                                          or sg["rank"] != sb["rank"]):
        changes.append(f"the same rank is slowest every time in BAD: rank {sb['rank']} (straggler score "
                       f"{sb['straggler_score']}; in GOOD: "
                       + (f"rank {sg['rank']}, {sg.get('persistence')})" if sg else "none)"))
    if g["straggler_ranks"] != b["straggler_ranks"]:
        changes.append(f"ranks flagged as stragglers (score < 0.75): {g['straggler_ranks'] or 'none'} → "
                       f"{b['straggler_ranks'] or 'none'}")
    gpus = []
    for gid in sorted(set(g["gpus"]) | set(b["gpus"])):
        sg, sb = g["gpus"].get(gid), b["gpus"].get(gid)
        gpus.append({"id": gid, "good": sg, "bad": sb})
        if sg != sb and sg is not None and sb is not None:
            changes.append(f"GPU {gid}: {sg} → {sb}")
    if g["top_hypothesis"] != b["top_hypothesis"] and g["top_hypothesis"] and b["top_hypothesis"]:
        changes.append(f"diagnose's top hypothesis {g['top_hypothesis']} ({g['top_score']:.2f}) → "
                       f"{b['top_hypothesis']} ({b['top_score']:.2f})")
    return {"signal": b["signal"] or g["signal"], "good": g, "bad": b, "changes": changes, "gpus": gpus}


def _osc_text(o: dict) -> str:
    if not o.get("detected"):
        lvl = f" (level {o['high_pct']:.0f}%)" if o.get("high_pct") is not None else ""
        return f"none{lvl}"
    core = f"{o['high_pct']:.0f}% ↔ {o['low_pct']:.0f}%"
    if o.get("periodic"):
        return f"periodic {core} every {o['period_s']:.3g} s (duty {o['duty_cycle']:.2f})"
    return f"irregular {core}"


def _verdict(mode: str, tp: dict, causes: list[dict], env: list[dict] | None = None) -> tuple[str, str]:
    """The verdict line, from every finding: the throughput interval first; when it holds 100% (e.g. one run a
    side), a cause whose own change is significant (p < ALPHA: a phase that grew beyond its interval) still makes
    BAD slower / faster, and a changed setting linked to a cause is named as a difference that the runs could not
    measure."""
    if mode == "none" or not tp:
        return "not comparable", "nothing to compare: each side needs a step log or GPU telemetry"
    unit = tp["unit"]
    what = "throughput" if mode == "steps" else "mean utilization"
    nums = f"{num(tp['bad'])} vs {num(tp['good'])} {unit}" if mode == "steps" else \
        f"{tp['bad']:.0f}% vs {tp['good']:.0f}%"
    ci = f"95% CI {tp['ratio_lo']:.0%}-{tp['ratio_hi']:.0%}"
    sign = 1.0 if tp["ratio"] < 1 else -1.0  # slower: a cause's time grew; faster: it shrank
    found = [c for c in causes if c["id"] != cause_ids.WORKLOAD_CHANGE and np.isfinite(c.get("p_value", math.nan))
             and c["p_value"] < ALPHA and sign * float(c.get("delta_s", math.nan)) > 0]
    if not tp["significant"] and not found:
        knobs = [e for e in env or [] if e.get("causes") and e.get("score", 0) > 0.01]
        if knobs:
            shown = "; ".join(f"{e['key']}: {short(str(e['good']), 24)} → {short(str(e['bad']), 24)}"
                              for e in knobs[:2])
            return ("no significant difference",
                    f"no measurable difference, but the configuration differs ({shown}): BAD's {what} is "
                    f"{tp['ratio']:.0%} of GOOD's ({nums}; {ci} holds 100%) — repeat runs to measure it")
        return ("no significant difference",
                f"no significant difference: BAD's {what} is {tp['ratio']:.0%} of GOOD's ({nums}; {ci} holds 100%)")
    verdict = "slower" if tp["ratio"] < 1 else "faster"
    state = verdict if mode == "steps" else ("less utilized" if verdict == "slower" else "more utilized")
    top = (found or causes or [None])[0]
    cause = ""
    if top:
        share = f", {top['share_of_change']:.0%} of the change" if np.isfinite(top.get("share_of_change", math.nan)) \
            else ""
        cause = f"; top cause: {top['id']} (score {top['score']:.2f}{share})"
    if not tp["significant"]:
        p = top["p_value"]
        return verdict, (f"BAD is {state}: {top['id']} grew beyond its interval (p = {p:.2g}); {what} "
                         f"{tp['ratio']:.0%} of GOOD's ({nums}; {ci}, wide: too few runs to bound it)")
    return verdict, f"BAD is {state}: {what} {tp['ratio']:.0%} of GOOD's ({nums}; {ci}){cause}"


def gap_closed(bad: Regression, reverted: Regression) -> float:
    """Share of BAD's throughput gap to GOOD that a run with one change reverted closes, on a log scale:
    log(reverted ratio / BAD ratio) / log(1 / BAD ratio) — 1 = back to GOOD, 0 = no better than BAD. NaN when BAD
    is not slower."""
    rb, rr = bad.throughput.get("ratio", math.nan), reverted.throughput.get("ratio", math.nan)
    if not (np.isfinite(rb) and np.isfinite(rr) and 0 < rb < 1 and rr > 0):
        return math.nan
    return float(math.log(rr / rb) / math.log(1 / rb))


def injected_verdict(result: Regression, injected: str, culprit: str | None = None,
                     reverted: Regression | None = None, other: Regression | None = None,
                     closes: float = 0.5) -> tuple[str, str]:
    """(status, summary) of a regression lab: did `compare_runs` find the cause that was injected?

    confirmed: BAD is significantly slower, compare_runs's top cause is `injected`, the top cause's linked changes
    include `culprit` (a config or environment key prefix, when given), and — when half-way runs are given —
    reverting the culprit alone (`reverted`: GOOD vs that run) closes at least `closes` of the throughput gap on a
    log scale (gap_closed) and more than reverting the other change (`other`). A log-scale share of the gap, not
    "back to 100%", because machine load moves single runs by tens of percent while the injected fault costs
    several times that. refuted: no significant slowdown, or another cause on top. inconclusive otherwise.
    """
    tp = result.throughput
    top = result.top
    if result.verdict != "slower":
        return "refuted", f"no significant slowdown to explain ({result.summary})"
    if top.get("id") != injected:
        return "refuted", f"compare's top cause is {top.get('id')}, not the injected {injected} ({result.summary})"
    share = top.get("share_of_change")
    head = (f"BAD runs at {tp['ratio']:.0%} of GOOD's throughput (95% CI {tp['ratio_lo']:.0%}-{tp['ratio_hi']:.0%}); "
            f"compare's top cause is {injected}" + (f" ({share:.0%} of the slowdown)" if share is not None and
                                                    np.isfinite(share) else ""))
    if culprit and not any(k.startswith(culprit) for k in top.get("changes", [])):
        return "inconclusive", head + f", but the change {culprit} is not among its linked changes"
    if reverted is not None:
        closed = gap_closed(result, reverted)
        closed_other = gap_closed(result, other) if other is not None else -math.inf
        what = culprit or "the culprit"
        text = (f"; reverting {what} alone reaches {reverted.throughput['ratio']:.0%} of GOOD's throughput "
                f"({closed:.0%} of the gap closed on a log scale)")
        if other is not None:
            text += (f", reverting the other change alone {other.throughput['ratio']:.0%} "
                     f"({closed_other:.0%} of the gap)")
        if not (closed >= closes and closed > closed_other):
            return "inconclusive", head + text
        head += text
    return "confirmed", head
