"""Evidence from step timings (analysis.step_times.summarize): slow steps on a lattice, GC pauses, a level shift or
creep, recompiles, phase shares; and the share of slow steps each step-level cause explains."""

from __future__ import annotations

import math

import numpy as np

from playbook.analysis.step_times import STALL_EVENT_KINDS
from playbook.diagnosis.evidence import _p
from playbook.diagnosis.ranking import Evidence, confidence, impact, support
from playbook.knowledge import ids as cause_ids

THERMAL_TIME_S = 300.0  # GPUs heat up over minutes: creep evidence is weighted by 1 - exp(-run span / this)


def from_steps(summary: dict) -> list[Evidence]:
    """Evidence from analysis.step_times.summarize(): slow steps on a lattice, GC pauses, a level shift or creep,
    recompiles, phase shares."""
    if not summary:
        return []
    ps = summary.get("periodic_slow")
    if ps and ps.get("benign"):
        ps = None  # the optimizer step of gradient accumulation: a cadence, not a stall
    gc_lattice = bool(ps and ps.get("periodic") and ps.get("gc_lattice"))
    out = _periodic_slow(ps) if ps and ps.get("periodic") and not gc_lattice else []
    out += _gc_pauses(summary, ps, gc_lattice)
    out += _trends(summary)
    out += _recompiles(summary.get("recompiles"))
    out += _phase_shares(summary, ps)
    return out


def _periodic_slow(ps: dict) -> list[Evidence]:
    """Slow steps every N steps, with (or without) a stall event logged at them."""
    ev = ps.get("events") or {}
    matched = {k: v for k, v in ev.items() if k in STALL_EVENT_KINDS}
    period = ps.get("period_s")
    per_txt = f" (≈ {period:.3g} s)" if period and np.isfinite(period) else ""
    text = (f"every {ps['every_n_steps']} steps{per_txt} a step takes {ps['median_slow_s']:.3g} s instead of "
            f"{ps['median_step_s']:.3g} s ({ps['hits']} of {ps['lattice_steps']} such steps, first at step "
            f"{ps['first_step']}; {_p(ps['p_value'])})")
    if ps.get("clock"):  # a cycle of wall time: the number of steps between the stalls varies
        text = (f"stalls recur about every {ps['clock_period_s']:.3g} s of wall time, not every fixed number of "
                f"steps ({ps['hits']} episodes, ~{ps['every_n_steps']} steps apart, first at step {ps['first_step']};"
                f" slow steps {ps['median_slow_s']:.3g} s instead of {ps['median_step_s']:.3g} s; their starts more "
                f"regular than stalls at random times, {_p(ps['p_value'])}): something on a timer (a logger's "
                "flush, a host job) blocks the loop")
    if matched:
        kind, k = max(matched.items(), key=lambda kv: kv[1])
        text += f"; a {kind} event is logged at {k} of them"
        nxt = (f"the stall period is {period:.3g} s ≈ every {ps['every_n_steps']} steps and matches the {kind} "
               f"events: time the {kind} itself and move it off the training loop (asynchronous)")
        return support("periodic_slow_events", confidence(ps["p_value"]), impact(ps["lost_fraction"]), text,
                       nxt, lost=ps["lost_fraction"], p_value=ps["p_value"])
    nxt = (f"the stall period is {period:.3g} s ≈ every {ps['every_n_steps']} steps: log checkpoint and "
           "eval step numbers" if period and np.isfinite(period) else None)
    if ps.get("cadence"):
        text += f"; {ps['cadence']}"
        nxt = (f"log the optimizer step and checkpoint/eval step numbers: an optimizer phase on every "
               f"{ps['every_n_steps']}th step only is gradient accumulation (benign), a checkpoint or eval there is a "
               "stall to move off the loop")
    return support("periodic_slow", confidence(ps["p_value"]), impact(ps["lost_fraction"]), text, nxt,
                   lost=ps["lost_fraction"], p_value=ps["p_value"])


def _gc_pauses(summary: dict, ps: dict | None, gc_lattice: bool) -> list[Evidence]:
    """GC pauses covering the slow steps' extra time (on the step lattice or isolated)."""
    gc = summary.get("gc")
    if not (gc and gc.get("coincide")):
        return []
    pause = (f"; pauses up to {gc['max_pause_s']:.3g} s (median {gc['median_pause_s']:.3g} s)"
             if gc.get("max_pause_s") else "")
    text = (f"{gc['slow_with_gc']} of {gc['slow_steps']} {'' if gc_lattice else 'isolated '}slow steps hold a GC "
            f"pause covering most of their extra time, against {gc['steps_with_long_gc']} long GC pauses in "
            f"{summary.get('steps', '?')} steps ({_p(gc['p_value'])}){pause}")
    if gc_lattice:
        text += (f"; they recur every {ps['every_n_steps']} steps: each step allocates alike, so the "
                 "collector fires at a fixed step period")
    lost = gc.get("pause_share") or 0.0
    return support("gc", confidence(gc["p_value"]), max(impact(lost), 0.5), text, p_value=gc["p_value"])


def _trends(summary: dict) -> list[Evidence]:
    """Step time that jumps and stays (a level shift) or creeps up over the run."""
    out: list[Evidence] = []
    ls = summary.get("level_shift")
    if ls:
        text = (f"step time jumps {ls['relative_change']:+.0%} at step {ls['step']} ({ls['before_s']:.3g} s → "
                f"{ls['after_s']:.3g} s) and stays there for the {ls['steps_after']} steps after it (change-point "
                f"test, {_p(ls['p_value'])}): a level shift, not a periodic stall — something changed at that "
                "step (a GPU throttling or a straggler joining, a node swapped, a regression)")
        out += support("level_shift", confidence(ls["p_value"]), impact(ls["lost_fraction"]), text,
                       f"compare steps before and after step {ls['step']} (`playbook compare` on the two halves); "
                       "read SM clocks, power and throttle reasons around that time and which rank slowed first",
                       lost=ls["lost_fraction"], p_value=ls["p_value"])
    cr = summary.get("creep")
    if cr and cr.get("creeping"):
        # heating takes minutes: a run shorter than that cannot creep thermally (thermal time scale 300 s)
        span = float(cr.get("span_s") or 0.0)
        thermal = 1.0 - math.exp(-span / THERMAL_TIME_S) if span > 0 else 0.5
        text = (f"step time creeps up {cr['relative_change']:+.0%} over the run ({cr['first_s']:.3g} s → "
                f"{cr['last_s']:.3g} s over {span:.0f} s, Spearman ρ = {cr['spearman_rho']:.2f}, "
                f"{_p(cr['p_value'])}): clocks falling as the GPU heats, or memory fragmentation")
        out += support("creep", confidence(cr["p_value"]) * thermal, impact(cr["relative_change"] / 2), text,
                       "watch SM clock and temperature over the run (nvidia-smi --query-gpu=clocks.sm,"
                       "temperature.gpu,clocks_event_reasons.active -l 5)", p_value=cr["p_value"])
    return out


STORM_SHARE = 0.5  # recompiles on at least this share of the steps (and 3 of them): compiled again every step


def _recompiles(rc: dict | None) -> list[Evidence]:
    """Recompilation events at the steps. Recompiles on most steps are a storm: no step runs a compiled graph again,
    so the run's steady pace is itself compile time and no slow step stands out against it."""
    if not rc:
        return []
    share = rc.get("share") or 0.0
    storm = rc["steps"] >= max(3, STORM_SHARE * rc.get("run_steps", 0))
    w = max(impact(share), 0.9 if storm else 0.5 if rc["slow_steps_with_recompile"] else 0.25)
    why = f" ({'; '.join(rc['details'])})" if rc.get("details") else ""
    text = (f"{rc['events']} recompilation events at {rc['steps']} steps{why}, "
            f"{rc['slow_steps_with_recompile']} of them on slow steps"
            + (f", {rc['seconds']:.3g} s in total" if rc.get("seconds") else "")
            + (f": a recompilation storm, {rc['steps']} of the {rc['run_steps']} steps compile again, so the run's "
               "own pace is compile time and the loss exceeds what its slow steps show" if storm else ""))
    return support("recompile", 1.0, w, text)


def _phase_shares(summary: dict, ps: dict | None) -> list[Evidence]:
    """Time measured in the input, copy and stall phases; a saturated stage others wait on."""
    out: list[Evidence] = []
    shares = summary.get("phase_share") or {}
    data = shares.get("data", 0.0)
    h2d = shares.get("h2d", 0.0)
    if data + h2d >= 0.05:
        conf = 0.4 + 0.45 * min((data + h2d - 0.05) / 0.15, 1.0)
        text = (f"waiting for input takes {data:.0%} of step time" + (f" and host-to-device copies {h2d:.0%}"
                if h2d else "") + " (≥ 5% moderate, ≥ 20% input-bound)")
        out += support("phase_data", conf, 1.0, text)
    if h2d >= 0.05:
        out += support("phase_h2d", 0.4 + 0.45 * min((h2d - 0.05) / 0.15, 1.0), 1.0,
                       f"host-to-device copies take {h2d:.0%} of step time")
    busy = summary.get("rank_busy") or []
    if len(busy) >= 2:
        sat = [r for r in busy if r["busy_share"] >= 0.9]
        waiting = [r for r in busy if r["queue_wait_share"] >= 0.5]
        if sat and waiting:
            def ranks(rows):
                return ", ".join(str(r["rank"]) for r in rows[:8]) + (" …" if len(rows) > 8 else "")

            lost = float(np.mean([r["queue_wait_share"] for r in busy]))
            text = (f"rank{'s' if len(sat) > 1 else ''} {ranks(sat)} work{'s' if len(sat) == 1 else ''} "
                    f"{min(r['busy_share'] for r in sat):.0%}+ of the time while rank"
                    f"{'s' if len(waiting) > 1 else ''} {ranks(waiting)} wait on a queue "
                    f"{min(r['queue_wait_share'] for r in waiting):.0%}-{max(r['queue_wait_share'] for r in waiting):.0%} "
                    "of theirs: the saturated stage is the bottleneck the others wait for")
            out += support("idle_and_saturated", 1.0, max(impact(lost), 0.5), text,
                           f"log queue depth and each stage's rate: rank{'s' if len(sat) > 1 else ''} {ranks(sat)} "
                           "should be the bottleneck")
    stall = sum(v for k, v in shares.items() if k in ("checkpoint", "eval", "log"))
    if stall >= 0.01 and not (ps and ps.get("periodic")):
        parts = ", ".join(f"{k} {v:.1%}" for k, v in shares.items() if k in ("checkpoint", "eval", "log") and v)
        out += support("phase_stall", 1.0, impact(stall), f"step phases spent in {parts} of step time")
    return out


def explained_by_steps(summary: dict) -> dict[str, float]:
    """Share of the slow steps each step-level cause accounts for (periodic lattice, GC, recompilation)."""
    if not summary or not summary.get("slow_steps"):
        return {}
    n = summary["slow_steps"]
    out = {}
    ps = summary.get("periodic_slow")
    if ps and ps.get("periodic") and not ps.get("gc_lattice") and not ps.get("benign"):
        out[cause_ids.PERIODIC_STALL] = ps["hits"] / n
    gc = summary.get("gc")
    if gc and gc.get("coincide"):
        out[cause_ids.GC_PAUSE] = gc["slow_with_gc"] / n
    rc = summary.get("recompiles")
    if rc and rc.get("slow_steps_with_recompile"):
        out[cause_ids.RECOMPILATION] = rc["slow_steps_with_recompile"] / n
    return out
