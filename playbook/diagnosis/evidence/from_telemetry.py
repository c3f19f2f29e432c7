"""Evidence from GPU telemetry: the fleet oscillation (analysis.oscillation) and the per-GPU status table
(analysis.gpus.GpuReport)."""

from __future__ import annotations

import math

import numpy as np

from playbook.diagnosis.evidence import _hosts_of, _ids, _p
from playbook.diagnosis.ranking import Evidence, confidence, impact, support
from playbook.knowledge import ids as cause_ids


def from_oscillation(osc, gpu_table=None, n_gpus: int | None = None, label: str = "GPUs",
                     models: dict[str, str] | None = None) -> list[Evidence]:
    """Evidence from analysis.oscillation.OscillationResult (and the GPU table for context); `models`: each GPU's
    product name by GPU id, where the input names it (Bundle.meta GPU_MODELS)."""
    if not osc.detected:
        return _single_drop(osc.single_drop, label) if osc.single_drop else []
    w = impact(osc.lost_fraction)
    swinging = osc.swinging
    n_total = n_gpus or len(swinging)
    levels = f"{osc.high_pct:.0f}% → {osc.low_pct:.0f}%"
    derived = "" if osc.signal == "util_pct" else f" ({osc.signal})"
    if osc.synchrony in ("independent", "groups") and osc.staggered:
        st = osc.staggered
        text = (f"{len(st['gpus'])} {label} swing {levels} with one period ({st['period_s']:.3g} s), each dipping "
                f"{abs(st['step']):.0%} of a period after the previous one in {label[:-1] if label.endswith('s') else label} "
                f"order (p = {st['p_value']:.2g}){derived}: pipeline bubbles — each stage idles while it waits for "
                "the one before it")
        nxt = ("log each stage's busy and waiting time per micro-batch (or a profiler trace on two adjacent "
               "stages): the bubble is the wait at each stage's start; more micro-batches or an interleaved "
               "schedule shrink it")
        return support("staggered_swings", confidence(st["p_value"]), w, text, nxt, lost=osc.lost_fraction,
                       p_value=st["p_value"])
    if osc.synchrony in ("independent", "groups") and getattr(osc, "turns", None):
        return _turns(osc, w, levels, derived, label, models or {})
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


def _turns(osc, w: float, levels: str, derived: str, label: str, models: dict[str, str]) -> list[Evidence]:
    """Units busy one at a time (analysis.oscillation.turns): stages of one model running in sequence — or, on GPUs
    of different models, data-parallel replicas of unequal speed where a waiting replica idles (a synchronisation on
    the host, not a spinning NCCL kernel: tensorpack#447's GTX 1080 Ti and GTX 1080, "when one GPU is 100%, the
    other is 0%", working together once the cards matched)."""
    tt = osc.turns
    seen = (f"{len(tt['gpus'])} {label} swing {levels} and take turns: two or more busy at once "
            f"{tt['overlap']:.0%} of the time against {tt['expected']:.0%} for independent schedules of the same "
            f"duty cycles ({_p(tt['p_value'])}){derived}")
    named = [models.get(g) for g in tt["gpus"]]
    kinds = sorted(set(named)) if all(named) else []
    if len(kinds) > 1:
        key = "turn_taking_unequal"
        text = (f"{seen} on GPUs of different models ({', '.join(kinds)}): replicas of unequal speed, the faster "
                "idle at each synchronisation until the slower arrives — or stages of one model split across them")
        nxt = ("compare the step time per GPU model (or run on matched GPUs): data-parallel replicas go at the "
               "slowest one's pace; a per-GPU batch sized to each GPU's speed, or matched cards, removes the waits")
    else:
        key = "turn_taking"
        text = (f"{seen}: stages of one model split across them run one after another (naive model parallelism), "
                "each idle while the others work — or work handed to one GPU at a time (requests served one by one, "
                "trials run in turn)")
        nxt = ("check how the model is placed: one model split layer-wise over the GPUs (device_map='auto' in one "
               "process) runs them in sequence; a whole model per GPU (torchrun with DDP or FSDP) or a pipeline "
               "schedule with micro-batches keeps them busy together")
    return support(key, confidence(tt["p_value"]), w, text, nxt, lost=osc.lost_fraction, p_value=tt["p_value"])


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
                   "step numbers", readings={cause_ids.DATA_STARVATION: (f"{seen}; if unscheduled, the input "
                                                                "pipeline running dry",
                                                                _loader_check("at the drop"))})


# A checkpoint or evaluation every N steps recurs every N >= ~100 steps (minutes at typical step times); a drop that
# every GPU shares every few seconds is the cadence of an input pipeline running dry every num_workers batches
# (mlfoundations/open_clip#703: "freezes every num_worker iterations") or a shard / shuffle buffer refilling
LOADER_CADENCE_S = 15.0
# a stall every N steps costs a minority of each cycle (the N steps' work is most of it); GPUs low for most of every
# cycle (duty cycle under one half) are waiting for input that arrives in bursts, not pausing for a save
MOSTLY_LOW_DUTY = 0.5


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
        readings = {cause_ids.DATA_STARVATION: (
            f"{seen}: an input pipeline that runs dry on a schedule — "
            + ("the loader's queue emptied every num_workers batches, or " if per < LOADER_CADENCE_S else "")
            + f"a shuffle buffer refilled or a new shard opened every {per:.3g} s",
            _loader_check(f"every {per:.3g} s", periodic=True))}
        sig = ("synchronized_periodic_fast" if per < LOADER_CADENCE_S else
               "synchronized_periodic_idle" if osc.duty_cycle < MOSTLY_LOW_DUTY else "synchronized_periodic")
        out += support(sig, conf,
                       w, text, nxt, readings=readings, lost=osc.lost_fraction, p_value=osc.p_value, names=tuple(main))
    elif len(osc.dips_s) < 3:
        together = " together" if len(main) > 1 else ""
        k = len(osc.dips_s)
        seen = (f"{who} drop{together} from {levels} {k} time{'s' if k != 1 else ''}{derived}: too few drops "
                "to tell a schedule from chance")
        readings = {cause_ids.DATA_STARVATION: (f"{seen}; if unscheduled, the input pipeline running dry",
                                        _loader_check("at the drops"))}
        out += support("synchronized_untimed", 1.0, w, f"{seen}; if scheduled, a checkpoint, evaluation or "
                       "logging stall", "record longer (at least three drops) and log checkpoint, eval and "
                       "logging step numbers", readings=readings)
    else:
        together = " together" if len(main) > 1 else "s"
        seen = f"{who} drop{together} from {levels} at irregular times (no significant period, " \
               f"{_p(osc.p_value)}){derived}"
        many = len(main) > 1
        text = f"{seen}: whatever stalls {'them is shared' if many else 'it is'} but not scheduled"
        ranks = "every rank" if many else "the training loop"  # one GPU: no ranks to share the stall
        readings = {
            cause_ids.DATA_STARVATION: (f"{seen}: the input pipeline running dry at random (slow reads, uneven "
                                f"decoding) stalls {ranks}", _loader_check("at the drops")),
            cause_ids.HOST_SYNC: (f"{seen}: host-side syncs (.item(), .cpu(), printing tensors) make {ranks} wait on "
                          "the GPU at unscheduled moments", None),
            cause_ids.GC_PAUSE: (f"{seen}: Python garbage-collection pauses hit the training loop at unscheduled "
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
                cause_ids.DATA_STARVATION: (f"{seen}: each node's input pipeline or local storage runs dry on its own",
                                    _loader_check("at each host's drops")),
                cause_ids.LINK_DEGRADATION: (f"{seen}: a node's network link slows its collectives or data reads", None),
                cause_ids.THROTTLING: (f"{seen}: a node's cooling or power delivery slows all its GPUs together", None)}
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
    return {cause_ids.DATA_STARVATION: (f"{seen}: each rank's own input pipeline running dry", _loader_check("at each "
                                "GPU's drops")),
            cause_ids.PADDING_IMBALANCE: (f"{seen}: uneven work per rank (sequence lengths, padding) makes the fastest "
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
        if s.get("hung"):
            text = (f"{gid} goes idle for good {s['first_s']:.0f} s in ({s['time_share']:.0%} of the recording, to "
                    f"its end) while its peers stay busy drawing {s['peer_work_odd']:.0%} of their working power: "
                    "they wait in a collective for a rank that stopped — its process died or hangs, the job is stuck")
            out += support("waiting_straggler", 1.0, w, text, f"on {host}: is the process on {gid} alive (its log's "
                           "last lines, `py-spy dump`)? a watchdog timeout or a dead rank's traceback names it",
                           lost=s["time_share"], names=(gid,))
            continue
        if s.get("waiting") is False:  # the peers' power measured steady through its dips: nobody waited for it
            continue
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
            deficit = r.clock_cost  # analysis.gpus.clock_cost, computed with the status
            cap_cost = getattr(r, "cap_share", math.nan) * getattr(r, "cap_deficit", math.nan)
            capped = getattr(r, "cap_lower", 0.0) >= 0.01 and np.isfinite(cap_cost) and cap_cost > 0
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
    readings = {cause_ids.RECOMPILATION: (f"{seen}: new input shapes (dynamic shapes recompiling) each allocating "
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
        text = (f"{_ids(list(under['id']))} sit at {_range(under['mean_util_pct'])} while "
                f"{_ids(list(sat['id']))} are saturated ({_range(sat['mean_util_pct'])}){note}: work is not "
                "spread evenly — a pipeline stage or role that starves while another is the bottleneck")
        return support("idle_and_saturated", conf, max(impact(lost), 0.5), text,
                       f"log queue depth and busy time per stage: {_ids(list(sat['id']), 3)} should be the "
                       f"bottleneck that {_ids(list(under['id']), 3)} wait on")
    text = (f"{_ids(list(under['id']))} run well below their peers "
            f"({_range(under['mean_util_pct'])} vs "
            f"{under['peer_median_pct'].median():.0f}%){note}")
    return support("idle_only", conf, impact(lost), text)


def _range(pct) -> str:
    """"7-38%", or "30%" when the lowest and the highest round to the same figure."""
    lo, hi = f"{pct.min():.0f}", f"{pct.max():.0f}"
    return f"{lo}%" if lo == hi else f"{lo}-{hi}%"


def from_idle_windows(found: dict | None) -> list[Evidence]:
    """Evidence from analysis.idle_windows: most polls at 0% between recurring bursts — waits of whole seconds."""
    if not found:
        return []
    n = len(found["gpus"])
    who = "the GPU reads" if n == 1 else f"the {n} GPUs read"
    runs = f" (runs of {found['gap_s']:.3g} s, median)" if found["gap_s"] == found["gap_s"] else ""  # NaN: sparse polls
    text = (f"{who} 0% in {found['zero_share']:.0%} of the polls{runs} between "
            f"{found['bursts']} or more bursts of work: whole sampling windows without a kernel, so the work arrives "
            "in bursts with seconds of waiting between them — a loop bound by kernel launches or host syncs leaves "
            "no window empty, a collective wait reads busy; the host preparing each batch (the input pipeline) does")
    return support("idle_windows", 1.0, impact(found["zero_share"]), text, _loader_check("in the empty windows"),
                   lost=found["zero_share"])


def from_sm_fill(fill: dict | None) -> list[Evidence]:
    """Evidence from analysis.gpu_limits.sm_fill: kernels that run most of the time but fill under half the SMs
    (utilization counts a running kernel of any size)."""
    if not fill or not fill["underfilled"]:
        return []
    some = fill.get("gpus", 1) < fill.get("of", 1)  # a share of the GPUs: their loss is that share of the fleet's
    lost = max(0.0, 1.0 - fill["sm_active"] * 100.0 / max(fill["util_pct"], 1e-9)) * (
        fill["gpus"] / fill["of"] if some else 1.0)
    where = f"on {fill['gpus']} of {fill['of']} GPUs " if some else ""
    text = (f"{where}kernels run {fill['util_pct']:.0f}% of the time, but the SMs are active {fill['sm_active']:.0%} "
            f"(median DCGM SM activity over {fill['samples']:,} busy samples; NVIDIA reads below 50% as ineffective "
            "use): the kernels are too small to fill the GPU — small batches or many tiny kernels — and "
            "utilization overstates the GPU's use")
    return support("sm_underfilled", confidence(fill["p_value"]), impact(lost), text,
                   "profile one step (torch.profiler): kernel grids against the SM count; raise the batch per GPU, "
                   "fuse small ops (torch.compile) or capture CUDA graphs", lost=lost, p_value=fill["p_value"])
