"""The analyzers' adapters: each from_* function states one analyzer's result as Evidence for the ranker
(diagnose.ranking): the signature seen (a key of ranking.SPECIFICITY), its confidence (ranking.confidence of the
analysis's p-value, or the level of a thresholded measurement), its cost (ranking.impact of the share of GPU time
lost), the evidence text and the measurement that would confirm it.
"""

from __future__ import annotations

import math

import numpy as np

from playbook.analysis.steps import STALL_EVENT_KINDS
from playbook.causes import CAUSES, DIAGNOSIS_IDS, cause_of_event
from playbook.diagnose.findings import Finding
from playbook.diagnose.ranking import Evidence, confidence, expand, impact, support, typical_share

ALPHA = 0.01  # a coincidence of events or host activity with the drops counts below this p-value
LEVEL_CONFIDENCE = {"moderate": 0.4, "high": 0.85}
THERMAL_TIME_S = 300.0  # GPUs heat up over minutes: creep evidence is weighted by 1 - exp(-run span / this)

def _ids(ids: list[str], limit: int = 6) -> str:
    ids = list(ids)
    if len(ids) <= limit:
        return ", ".join(ids)
    return ", ".join(ids[:limit]) + f" and {len(ids) - limit} more"


def _hosts_of(ids: list[str]) -> set[str]:
    return {i.rsplit(":", 1)[0] for i in ids}


def _p(p: float | None) -> str:
    if p is None or not np.isfinite(p):
        return "untested"
    return f"p = {p:.1g}" if p >= 1e-300 else "p < 1e-300"


def from_oscillation(osc, gpu_table=None, n_gpus: int | None = None, label: str = "GPUs") -> list[Evidence]:
    """Evidence from analysis.oscillation.OscillationResult (and the GPU table for context)."""
    if not osc.detected:
        return _single_drop(osc.single_drop, label) if osc.single_drop else []
    w = impact(osc.lost_fraction)
    swinging = osc.swinging
    n_total = n_gpus or len(swinging)
    levels = f"{osc.high_pct:.0f}% → {osc.low_pct:.0f}%"
    derived = "" if osc.signal == "util_pct" else f" ({osc.signal})"
    if osc.synchrony == "synchronized" or (osc.synchrony is None and len(swinging) == 1 and n_total == 1):
        return _synchronized(osc, w, n_total, levels, derived, label)
    if osc.synchrony == "groups":
        return _groups(osc, w, derived, label)
    if osc.synchrony == "independent":
        per = f" (median period {osc.period_s:.3g} s)" if osc.periodic else ""
        seen = f"{len(swinging)} {label} swing {levels} each on its own schedule{per}{derived}"
        text = f"{seen}: per-rank input stalls or uneven work rather than a shared stall"
        return support("independent_swings", 1.0, w, text, readings=_independent_readings(seen),
                       lost=osc.lost_fraction)
    return []


def _single_drop(one: dict, label: str) -> list[Evidence]:
    """One drop only: a one-off stall, or one cycle of a swing slower than the recording."""
    who = f"all {one['of']} {label}" if one["gpus"] == one["of"] else f"{one['gpus']} of {one['of']} {label}"
    seen = (f"{who} drop{' together' if one['gpus'] > 1 else 's'} once from {one['high_pct']:.0f}% → "
            f"{one['low_pct']:.0f}% for {one['end_s'] - one['start_s']:.3g} s, {one['start_s']:.3g} s into "
            "the recording: one drop cannot tell a one-off stall from one cycle of a swing slower than the "
            "recording")
    return support("synchronized_untimed", 1.0, impact(one["lost_fraction"]),
                   f"{seen}; if scheduled, a checkpoint, evaluation or logging stall",
                   "record at least three times longer (three drops) and log checkpoint, eval and logging "
                   "step numbers", readings={"data_starvation": (f"{seen}; if unscheduled, the input "
                                                                "pipeline running dry",
                                                                _loader_check("at the drop"))})


def _synchronized(osc, w: float, n_total: int, levels: str, derived: str, label: str) -> list[Evidence]:
    """Units dropping together: on a schedule, too few times to tell, or at irregular times."""
    out: list[Evidence] = []
    swinging = osc.swinging
    conf = confidence(osc.p_value) if osc.periodic else 1.0
    main = osc.groups[0] if osc.groups else swinging
    if len(main) == 1 and n_total == 1:
        who = f"the only one of the {label}" if label != "GPUs" else "the only GPU"
    elif len(main) == n_total:
        who = f"all {len(main)} {label}"
    else:
        who = f"{len(main)} of {n_total} {label}"
    if osc.periodic:
        per = osc.period_s
        together = " together" if len(main) > 1 else ""
        duty = f"duty cycle {osc.duty_cycle:.2f}, " if np.isfinite(osc.duty_cycle) else ""
        seen = f"{who} drop{together} from {levels} every {per:.3g} s ({duty}{_p(osc.p_value)}){derived}"
        text = f"{seen}: a stall shared by every rank at a fixed period"
        nxt = (f"the stall period is {per:.3g} s: log checkpoint, eval and logging step numbers (or record "
               f"step phases) and check which recur every {per:.3g} s")
        readings = {"data_starvation": (
            f"{seen}: an input pipeline that runs dry on a schedule — a shuffle buffer refilled or a new shard "
            f"opened every {per:.3g} s", _loader_check(f"every {per:.3g} s", periodic=True))}
        out += support("synchronized_periodic", conf, w, text, nxt, readings=readings, lost=osc.lost_fraction,
                       p_value=osc.p_value, names=tuple(main))
    elif len(osc.dips_s) < 3:
        together = " together" if len(main) > 1 else ""
        k = len(osc.dips_s)
        seen = (f"{who} drop{together} from {levels} {k} time{'s' if k != 1 else ''}{derived}: too few drops "
                "to tell a schedule from chance")
        readings = {"data_starvation": (f"{seen}; if unscheduled, the input pipeline running dry",
                                        _loader_check("at the drops"))}
        out += support("synchronized_untimed", 1.0, w, f"{seen}; if scheduled, a checkpoint, evaluation or "
                       "logging stall", "record longer (at least three drops) and log checkpoint, eval and "
                       "logging step numbers", readings=readings)
    else:
        together = " together" if len(main) > 1 else "s"
        seen = f"{who} drop{together} from {levels} at irregular times (no significant period, " \
               f"{_p(osc.p_value)}){derived}"
        text = f"{seen}: whatever stalls them is shared but not scheduled"
        readings = {
            "data_starvation": (f"{seen}: the input pipeline running dry at random (slow reads, uneven "
                                "decoding) stalls every rank", _loader_check("at the drops")),
            "host_sync": (f"{seen}: host-side syncs (.item(), .cpu(), printing tensors) make every rank wait on "
                          "the GPU at unscheduled moments", None),
            "gc_pause": (f"{seen}: Python garbage-collection pauses hit the training loop at unscheduled "
                         "times", None)}
        out += support("synchronized_irregular", 1.0, w, text, readings=readings, lost=osc.lost_fraction)
    return out


def _groups(osc, w: float, derived: str, label: str) -> list[Evidence]:
    """Groups of units swinging apart: anti-phase stages, per-host drops, or groups on their own schedules."""
    out: list[Evidence] = []
    if osc.antiphase:
        a, b = osc.antiphase[0]
        per = f" every {osc.period_s:.3g} s" if osc.periodic else ""
        text = (f"{_ids(a)} are busy while {_ids(b)} idle, and the reverse{per} (anti-phase groups){derived}: "
                "producer and consumer stages waiting for each other")
        out += support("antiphase", 1.0, max(w, 0.5), text, lost=osc.lost_fraction)
    else:
        groups = [g for g in osc.groups if len(g) >= 2]
        host_aligned = all(len(_hosts_of(g)) == 1 for g in groups) and len(groups) >= 2
        if host_aligned:
            hosts = ", ".join(sorted(_hosts_of(sum(groups, []))))
            seen = f"{label} drop together per host ({hosts}) but the hosts drop at different times{derived}"
            text = f"{seen}: a per-node cause (input pipeline, storage, network, cooling)"
            readings = {
                "data_starvation": (f"{seen}: each node's input pipeline or local storage runs dry on its own",
                                    _loader_check("at each host's drops")),
                "link_degradation": (f"{seen}: a node's network link slows its collectives or data reads", None),
                "throttling": (f"{seen}: a node's cooling or power delivery slows all its GPUs together", None)}
            out += support("host_groups", 1.0, w, text, readings=readings, lost=osc.lost_fraction)
        else:
            seen = (f"{len(groups)} groups of {label} drop together, each on its own schedule "
                    f"({'; '.join(_ids(g, 3) for g in groups[:3])}){derived}")
            out += support("independent_swings", 1.0, w, seen, readings=_independent_readings(seen),
                           lost=osc.lost_fraction)
    return out


def _loader_check(when: str, periodic: bool = False) -> str:
    """The measurement that tells data starvation apart: DataLoader wait and loader CPU at the drops."""
    refill = (" Count the steps between the spikes: a shuffle buffer or shard of that many batches refilling is "
              "the cause" if periodic else "")
    return (f"measure the time blocked in next(DataLoader) per step (the 'data' phase share: `playbook record`, "
            f"or probes.timed(loader)) and the loader workers' CPU {when}: data starvation shows as data-phase "
            f"spikes on the slow steps with the workers at 100% CPU (≥ 5% of step time loader-bound, ≥ 20% "
            f"input-bound).{refill}")


def _independent_readings(seen: str) -> dict[str, tuple[str, str | None]]:
    return {"data_starvation": (f"{seen}: each rank's own input pipeline running dry", _loader_check("at each "
                                "GPU's drops")),
            "padding_imbalance": (f"{seen}: uneven work per rank (sequence lengths, padding) makes the fastest "
                                  "ranks wait", None)}


def from_gpus(report, osc=None) -> list[Evidence]:
    """Evidence from analysis.gpus.GpuReport: stragglers, throttling, lost GPUs, imbalance, memory."""
    t = report.table
    if t.empty:
        return []
    per = osc.per_gpu.set_index("id").to_dict("index") if osc is not None and len(osc.per_gpu) else {}
    out = _stragglers(report, t, per)
    if report.rotating:
        r = report.rotating
        text = (f"the GPU that drops alone rotates: {r['episodes']} such moments spread over {r['gpus']} GPUs "
                f"(the most frequent, {r['top_gpu']}, has {r['top_share']:.0%}; {_p(r['top_p'])}): the data "
                "decides who is slow")
        out += support("rotating", 1.0, 0.6, text)
    out += _device_status(t)
    out += _memory_swings(t)
    out += _imbalance(report, t, {s["gpu"] for s in report.stragglers})
    return out


def _stragglers(report, t, per: dict) -> list[Evidence]:
    """A GPU that drops low alone while its peers stay busy: waiting peers, its own schedule or a persistent
    laggard."""
    out: list[Evidence] = []
    for s in report.stragglers:
        gid = s["gpu"]
        w = impact(s["time_share"])
        host = gid.rsplit(":", 1)[0]
        base = (f"{gid} drops low {s['episodes']} times ({s['time_share']:.0%} of the time) while ≥ 75% of its "
                f"peers stay busy (peers at {s['peer_util_pct']:.0f}% utilization); it is the odd one out in "
                f"{s['share_of_all']:.0%} of all such moments ({_p(s['persistence_p'])} against chance)")
        # the laggard's own GPU is idle while it lags: the others wait for work on its host, not for a slow GPU
        # (a slow GPU is busy — at a lower clock or power — while the others wait; that shows as throttled / lost)
        rank0 = str(t.loc[t["id"] == gid, "index"].iloc[0]) == "0" and host == sorted(t["host"].astype(str))[0]
        soft = ("; its own GPU is idle while it lags, so the others wait for its host, not its GPU: software — "
                "rank-specific host work (checkpoint saving, logging, evaluation) or more data on that rank"
                + ("; it is probably rank 0 (first GPU of the first host): look first at rank-0-only work "
                   "(synchronous torch.save, metric logging, evaluation on rank 0)" if rank0 else ""))
        if s.get("waiting"):
            sig = "sm_active" if s["signal"] == "sm_active" else "power"
            text = (base + f"; meanwhile the peers draw {s['peer_work_odd']:.0%} of their busy {sig} — they "
                    "are waiting for it in a collective" + soft)
            out += support("waiting_straggler", confidence(s.get("waiting_p")), w, text,
                           f"record per-rank step phases or traces on {host}: rank on {gid} should show "
                           "compute or I/O while the others wait in the collective", lost=s["time_share"], p_value=s.get("waiting_p"),
                           names=(gid,))
        else:
            note = ("" if s["signal"] else "; record power.draw or DCGM SM activity to tell waiting peers from "
                    "working ones")
            out += support("straggler_no_power", confidence(s["persistence_p"]), w, base + note,
                           lost=s["time_share"], p_value=s["persistence_p"])
        row = per.get(gid, {})
        if row.get("periodic"):
            peers = "while its peers wait" if s.get("waiting") else "while its peers stay busy"
            text = (f"{gid} drops every {row['period_s']:.3g} s on its own {peers}: rank-specific "
                    "periodic work (checkpoint writing, logging or evaluation on one rank)")
            out += support("straggler_periodic", 1.0, w, text, lost=s["time_share"], next_step=
                           f"the stall period is {row['period_s']:.3g} s: log what the rank on {gid} does every "
                           f"{row['period_s']:.3g} s (checkpoint / eval / logging step numbers)")
        else:
            text = (f"the same GPU ({gid}) lags every time, not on a schedule, idle while it lags: work or data "
                    "specific to that rank (software); a hardware cause needs device evidence (a busy GPU at a lower "
                    "clock or power, throttle bits, Xid errors, a downtrained link)")
            out += support("straggler_persistent", confidence(s["persistence_p"]), w, text, lost=s["time_share"],
                           p_value=s["persistence_p"], names=(gid,))
    return out


def _device_status(t) -> list[Evidence]:
    """Per-GPU status: a whole host lost, throttled (reason bits, power cap, slow clock), lost, memory full."""
    out: list[Evidence] = []
    # every GPU of a host lost together: the node (or just its logging) stopped, not one GPU falling off the bus
    per_host = t.groupby("host")["status"].agg(lambda s: bool((s == "lost").all()) and len(s) > 1)
    whole_hosts = set(per_host[per_host].index)
    for host in sorted(whole_hosts):
        note = t.loc[t["host"] == host, "lost_note"].iloc[0]
        out += support("host_lost", 1.0, 1.0, f"all GPUs of {host} stop together ({note}): the node went down, or "
                       "only its logging stopped",
                       f"check whether the job still ran on {host} after that time (its logs, the scheduler); if "
                       "the node died: `journalctl -k` / BMC event log for Xid, power or PCIe errors")
    for r in t.itertuples(index=False):
        host = r.host
        if r.status == "throttled":
            deficit = float(r.clock_deficit) if np.isfinite(r.clock_deficit) else 0.0
            self_cost = getattr(r, "self_slow_share", math.nan) * getattr(r, "self_deficit", math.nan)
            if getattr(r, "self_slow_lower", 0.0) >= 0.01 and np.isfinite(self_cost):
                deficit = max(deficit, float(self_cost))  # clock-bound work runs at the clock's pace
            cap_cost = getattr(r, "cap_share", math.nan) * getattr(r, "cap_deficit", math.nan)
            capped = getattr(r, "cap_lower", 0.0) >= 0.01 and np.isfinite(cap_cost) and cap_cost > 0
            if capped:
                deficit = max(deficit, float(cap_cost))
            if r.harmful_lower >= 0.01:
                w = max(impact(float(r.harmful_share)), impact(deficit))
                out += support("throttle_bits", 1.0, w, f"{r.id}: {r.evidence}", lost=deficit or None, names=(r.id,), next_step=
                               f"on {host} under load: nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER for GPU "
                               f"{r.index} (clock event reasons, temperature)")
            elif capped or getattr(r, "power_pinned_share", 0.0) >= 0.5:
                out += support("power_cap", 1.0, impact(deficit), f"{r.id}: {r.evidence}", lost=deficit, names=(r.id,), next_step=
                               f"on {host}: nvidia-smi -q -d POWER -i {r.index} (enforced vs default power limit); "
                               "restore it with nvidia-smi -pl or the scheduler's power policy")
            else:
                out += support("slow_clock", 1.0, impact(deficit), f"{r.id}: {r.evidence}", lost=deficit, names=(r.id,), next_step=
                               f"on {host}: nvidia-smi -q -d CLOCK,PERFORMANCE for GPU {r.index} under load")
        elif r.status == "lost" and r.host not in whole_hosts:
            out += support("lost", 1.0, 1.0, f"{r.id}: {r.lost_note}",
                           f"on {host}: `dmesg | grep -i xid` around the time it stopped, `nvidia-smi -q -i "
                           f"{r.index}` (retired pages, remapped rows), then `dcgmi diag -r 3`")
        if r.mem_near_full:
            out += support("memory_full", 1.0, 1.0, f"{r.id}: memory peaks at {r.mem_peak_mib / 1024:.1f} of "
                           f"{r.mem_total_mib / 1024:.0f} GiB")
    return out


def _memory_swings(t) -> list[Evidence]:
    """Memory used moving up and down: allocator churn, or new shapes allocating their own buffers."""
    swings = t[t["mem_swings"]]
    if not len(swings):
        return []
    worst = swings.sort_values("mem_swing_mib", ascending=False)
    seen = (f"memory used swings by up to {worst['mem_swing_mib'].iloc[0] / 1024:.1f} GiB on "
            f"{_ids(list(worst['id']), 4)}")
    readings = {"recompilation": (f"{seen}: new input shapes (dynamic shapes recompiling) each allocating "
                                  "their own buffers", None)}
    # memory moving costs no throughput by itself: it supports these causes, it is no sign of a problem
    return support("memory_swings", 1.0, min(len(swings) / len(t) + 0.3, 1.0),
                   f"{seen}: allocator churn — the caching allocator freeing and re-reserving memory",
                   readings=readings, anomaly=0.0)


def _imbalance(report, t, straggler_ids: set[str]) -> list[Evidence]:
    """GPUs well below their peers (outside the stragglers): idle beside saturated ones, or idle only."""
    n = len(t)
    unused = t["unused"] if "unused" in t else False
    under = t[(t["status"] == "underutilized") & ~t["id"].isin(straggler_ids) & ~unused]
    sat = t[t["status"] == "saturated"]
    if not len(under):
        return []
    untested = bool((under["delta_n_eff"] < 5).all())
    # the best-supported idle GPU: 1 - its sign-test p (exact binomial when too few polls for the test)
    # how sure that the work is uneven at all: the fleet-level test (GpuReport.imbalance_p), which accounts
    # for picking the best of G GPUs and, with a handful of polls, is a permutation test on the polls
    p_fleet = getattr(report, "imbalance_p", math.nan)
    conf = confidence(p_fleet)
    lost = float((-under["delta_pct"]).clip(lower=0).sum() / 100 / n)
    polls = int(under["polls_compared"].max()) if "polls_compared" in under else 0
    note = (f" ({polls} polls: permutation test across GPUs {_p(p_fleet)})" if untested and np.isfinite(p_fleet)
            else " (too few polls for a significance test)" if untested else f" ({_p(p_fleet)} across GPUs)")
    if len(sat):
        text = (f"{_ids(list(under['id']))} sit at {under['mean_util_pct'].min():.0f}-"
                f"{under['mean_util_pct'].max():.0f}% while {_ids(list(sat['id']))} are saturated "
                f"({sat['mean_util_pct'].min():.0f}-{sat['mean_util_pct'].max():.0f}%){note}: work is not "
                "spread evenly — a pipeline stage or role that starves while another is the bottleneck")
        return support("idle_and_saturated", conf, max(impact(lost), 0.5), text,
                       f"log queue depth and busy time per stage: {_ids(list(sat['id']), 3)} should be the "
                       f"bottleneck that {_ids(list(under['id']), 3)} wait on")
    text = (f"{_ids(list(under['id']))} run well below their peers "
            f"({under['mean_util_pct'].min():.0f}-{under['mean_util_pct'].max():.0f}% vs "
            f"{under['peer_median_pct'].median():.0f}%){note}")
    return support("idle_only", conf, impact(lost), text)


def from_steps(summary: dict) -> list[Evidence]:
    """Evidence from analysis.steps.summarize(): slow steps on a lattice, GC pauses, a level shift or creep,
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
    if matched:
        kind, k = max(matched.items(), key=lambda kv: kv[1])
        text += f"; a {kind} event is logged at {k} of them"
        nxt = (f"the stall period is {period:.3g} s ≈ every {ps['every_n_steps']} steps and matches the {kind} "
               f"events: time the {kind} itself and move it off the training loop (asynchronous)")
        return support("periodic_slow_events", confidence(ps["p_value"]), impact(ps["lost_fraction"]), text,
                       nxt, lost=ps["lost_fraction"], p_value=ps["p_value"])
    nxt = (f"the stall period is {period:.3g} s ≈ every {ps['every_n_steps']} steps: log checkpoint and "
           "eval step numbers" if period and np.isfinite(period) else None)
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


def _recompiles(rc: dict | None) -> list[Evidence]:
    """Recompilation events at the steps."""
    if not rc:
        return []
    share = rc.get("share") or 0.0
    w = max(impact(share), 0.5 if rc["slow_steps_with_recompile"] else 0.25)
    why = f" ({'; '.join(rc['details'])})" if rc.get("details") else ""
    text = (f"{rc['events']} recompilation events at {rc['steps']} steps{why}, "
            f"{rc['slow_steps_with_recompile']} of them on slow steps"
            + (f", {rc['seconds']:.3g} s in total" if rc.get("seconds") else ""))
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


# the dip signature of each cause an event kind measures (playbook.causes); a logging event also reads as a sync
CAUSE_DIP_SIGNATURE = {"periodic_stall": "dips_checkpoint_eval", "gc_pause": "dips_gc",
                       "recompilation": "dips_recompile", "hardware_fault": "dips_restart"}


def event_signature(kind: str) -> str | None:
    """The dip signature of an event kind, None for kinds that measure no cause."""
    if str(kind).strip().lower() == "log":
        return "dips_logging"
    return CAUSE_DIP_SIGNATURE.get(cause_of_event(kind) or "")


def from_dip_events(coincidences: list[dict], lost_fraction: float, label: str = "GPUs"
                    ) -> tuple[list[Evidence], dict[str, float]]:
    """Evidence from oscillation.dips_vs_events: events of a kind that overlap most utilization drops far beyond
    chance. Also returns {hypothesis: share of drops explained}, to discount generic readings of the drops."""
    out: list[Evidence] = []
    explained: dict[str, float] = {}
    for c in coincidences:
        sig = event_signature(c["kind"])
        share = c["hits"] / c["dips"] if c["dips"] else 0.0
        if sig is None or c["p_value"] >= ALPHA or share < 0.5:
            continue
        text = (f"{c['kind']} events overlap {c['hits']} of {c['dips']} utilization drops of the {label} (chance "
                f"{c['chance']:.0%} each, {_p(c['p_value'])})")
        ev = support(sig, confidence(c["p_value"]), impact(lost_fraction * share), text, p_value=c["p_value"],
                     lost=lost_fraction * share, next_step=
                     f"time the {c['kind']} itself (start, end, bytes written or steps evaluated) and move it off "
                     "the critical path" if sig == "dips_checkpoint_eval" else None)
        out += ev
        for e in ev:
            explained[e.hypothesis] = max(explained.get(e.hypothesis, 0.0), share)
    return out, explained


HOST_SIGNATURES = {"write_mib_s": ("host_writes_in_dips", "disk writes", "checkpoint or log writing"),
                   "read_mib_s": ("host_reads_in_dips", "disk reads", "input data being read"),
                   "cpu_max_core_pct": ("host_cpu_in_dips", "the busiest CPU core", "a CPU-bound input pipeline "
                                        "or Python work"),
                   "cpu_pct": ("host_cpu_in_dips", "host CPU", "a CPU-bound input pipeline"),
                   "net_rx_mib_s": ("host_net_in_dips", "network receive", "data or checkpoints moving over the "
                                    "network"),
                   "net_tx_mib_s": ("host_net_in_dips", "network send", "checkpoints or logs leaving the host")}
HOST_RATIO_MIN = 1.5  # a host metric must be ≥ 1.5× its level between drops to count as part of the drop


def from_host(metrics: list[dict], lost_fraction: float) -> list[Evidence]:
    """Evidence from oscillation.host_during_dips: host activity that rises during the utilization drops."""
    out: list[Evidence] = []
    seen: set[str] = set()
    for m in metrics:
        sig = HOST_SIGNATURES.get(m["metric"])
        if sig is None or m["p_value"] >= ALPHA or not m["ratio"] >= HOST_RATIO_MIN or sig[0] in seen:
            continue
        seen.add(sig[0])
        ratio = "from ~0" if not np.isfinite(m["ratio"]) else f"{m['ratio']:.1f}×"
        text = (f"{sig[1]} rise {ratio} during the drops ({m['during']:.3g} vs {m['between']:.3g} between them; "
                f"higher in {m['higher']} of {m['drops']} drops, {_p(m['p_value'])}): {sig[2]}")
        out += support(sig[0], confidence(m["p_value"]), impact(lost_fraction), text, p_value=m["p_value"],
                       lost=lost_fraction, names=(str(m.get("host", "")),) if m.get("host") else ())
    return out


def explained_by_steps(summary: dict) -> dict[str, float]:
    """Share of the slow steps each step-level cause accounts for (periodic lattice, GC, recompilation)."""
    if not summary or not summary.get("slow_steps"):
        return {}
    n = summary["slow_steps"]
    out = {}
    ps = summary.get("periodic_slow")
    if ps and ps.get("periodic") and not ps.get("gc_lattice") and not ps.get("benign"):
        out["periodic_stall"] = ps["hits"] / n
    gc = summary.get("gc")
    if gc and gc.get("coincide"):
        out["gc_pause"] = gc["slow_with_gc"] / n
    rc = summary.get("recompiles")
    if rc and rc.get("slow_steps_with_recompile"):
        out["recompilation"] = rc["slow_steps_with_recompile"] / n
    return out


def from_trace_idle(idle: dict | None) -> list[Evidence]:
    """Evidence from the Kineto summary's `gpu_idle`: the GPU's idle share of the profiled steps that the
    dataloader, sync and launch analyses leave unexplained, read by where the idle time goes. A measured share,
    so the confidence is the window's: 0.85 over ≥ 3 profiled steps, 0.6 for fewer (or a trace without step
    marks), where one odd step can dominate."""
    if not idle or not idle.get("unexplained_share"):
        return []
    cats = {k: float(idle.get(k) or 0.0) for k in ("host_wait", "kernel_wait", "other")}
    where = max(cats, key=cats.get)
    conf = 0.85 if idle.get("steps", 0) >= 3 else 0.6
    window = (f"{idle['steps']} profiled step{'s' if idle['steps'] != 1 else ''}" if idle.get("basis") == "steps"
              else "the traced span (no step marks)")
    reading = {"host_wait": "waiting for the host to issue work", "kernel_wait": "in short gaps between kernels",
               "other": "waiting on work already issued (syncs, copies, other streams)"}[where]
    text = (f"trace: rank {idle['rank']}'s GPU is idle {idle['share']:.0%} of {window}; "
            f"{idle['unexplained_share']:.0%} is not accounted for by DataLoader waits, syncs or launch gaps, and "
            f"{cats[where]:.0f}% of the idle time is {reading}")
    nxt = ("profile the CPU side of a step (torch.profiler with_stack=True, or py-spy dump --pid) to see what the "
           "training process does while the GPU waits; time next(loader) with playbook.probes `timed`")
    return support(f"trace_idle_{where.split('_')[0]}", conf, impact(idle["unexplained_share"]), text, nxt,
                   lost=idle["unexplained_share"])


def from_findings(findings: list[dict] | None, source: str) -> list[Evidence]:
    """Evidence from the Kineto / straggler / NCCL analyses' `findings` lists ({hypothesis, level, evidence})."""
    out: list[Evidence] = []
    for f in findings or []:
        hyp = f.get("hypothesis")
        if hyp not in DIAGNOSIS_IDS:
            continue
        conf = LEVEL_CONFIDENCE.get(str(f.get("level")), 0.5)
        if f.get("steps"):
            conf *= typical_share(int(f.get("steps_at_level", f["steps"])), int(f["steps"]))
        text = f"{source}: {f.get('evidence', '')}".strip() if source else str(f.get("evidence", ""))
        nxt = None
        if f.get("hosts"):
            nxt = CAUSES[hyp].next_step.replace("the named host", ", ".join(map(str, f["hosts"])))
        share = f.get("share")
        share = float(share) if isinstance(share, (int, float)) else None
        names = tuple(f"rank {f['rank']}" for _ in [0] if f.get("rank") is not None) + tuple(f.get("hosts") or ())
        out += expand(Finding(hyp, text, conf, 1.0, level=share, lost_share=share, names=names, next_step=nxt,
                              anomaly=conf, source=source or "findings"))
        nature = f.get("nature")
        if hyp == "collective_straggler" and nature in ("hardware-like", "software-like"):
            sig = "straggler_hardware" if nature == "hardware-like" else "straggler_software"
            why = ("the same rank every time, its compute slower" if nature == "hardware-like" else
                   "it rotates, or it is late for host-side reasons (rank-specific work, data)")
            for e in support(sig, conf, 1.0, f"the slowest rank is {nature} ({why})"):
                e.anomaly = 0.0  # the same finding read another way: no extra sign that something is wrong
                out.append(e)
    return out
