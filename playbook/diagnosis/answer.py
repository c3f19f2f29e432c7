"""The answer of a diagnosis: whether the inputs can answer at all (`untestable`), which hypothesis leads once the
what-if accounting has spoken (`lead`), and the verdict in one sentence, the loss first (`verdict_of`)."""

from __future__ import annotations

import numpy as np

from playbook.analysis import inference_bench, topology
from playbook.analysis.accounting import FED_PCT, Accounting
from playbook.analysis.gpu_limits import WORK_POWER_FLOOR
from playbook.analysis.gpus import GpuReport, fmt_span
from playbook.analysis.oscillation.fleet import OscillationResult
from playbook.analysis.step_pace import SLOW_TEST_ROWS, below_resolution, no_steady_pace, unplaced_efficiency
from playbook.analysis.step_times import WARMUP_MIN_ROWS
from playbook.diagnosis import attribution, ranking
from playbook.diagnosis.context import STEADY_BUSY_MIN, Run
from playbook.knowledge import causes, ids
from playbook.model import schema


def _served_kind(line: str) -> str:
    """What a serving file's `info` line holds, for the list of what the inputs have (no GPU time in any)."""
    if line.startswith(("model placement", "rates")):
        return "what a runtime prints about where the model runs and how fast it answers"
    if line.startswith("trtexec"):
        return "a benchmark's per-query latencies without its walltime"
    return "a server's scheduler counts"


def cycles(osc: OscillationResult | None, acc: Accounting | None) -> float:
    """How many cycles of the oscillation the accounted span covers (0 without a periodic one)."""
    if osc is None or acc is None or not osc.periodic or not np.isfinite(osc.period_s) or osc.period_s <= 0:
        return 0.0
    return float(acc.span_s / osc.period_s)


# Step times measure a run against its own pace: a cost every step pays (a logger or a small loader on every step,
# a GPU shared with another job) leaves them steady. Healthy from step times alone is at most "likely" (below
# attribution.CONFIRM): of the held-out step logs scored first as written, three losing runs read "healthy
# (confirmed)" (heldout8: DeePMD#996, Lightning#12344, wandb#8666), each cost spread over every step or smoothed away.
# So is healthy from utilization when the busy level is under FED_PCT (each GPU idle a tenth or more at work, under
# the steady_idle bucket's 80%) or the busy GPUs draw under WORK_POWER_FLOOR of their power limit (utilization
# counts a kernel of any size as busy; the power says it does little). blind_spot says which, and what to record.
BLIND_HEALTHY_MAX = 0.75
# Step times whose "jitter" (the wall basis's noise floor: the excess of rows no test flagged) is half the wall time or
# more outweigh the steady pace they are jitter around: no pace is left to vouch for health, so not enough data
# (keras#6503's first epoch, 16x the three others, read "Healthy (likely) within a noise floor of 79%"). Below half, a
# lone slow first row among too few rows stays the warm-up it usually is (step_pace.no_steady_pace: 900, 450, 440 ms
# is healthy; the fixtures' floors under a healthy verdict are 16-43% from such rows, 55-79% from the two above)
NOISY_FLOOR = 0.5


# Start-up (the GPUs idle before the work begins, slow first steps) is left out of the loss: the recording may have
# begun before the job. Beyond a quarter of the time — the accounting's own bound for drops read as warm-up — it is no
# longer a run's edge but much of what was recorded, and "loses nothing" would hide it.
START_UP_SHARE = 0.25


def blind_spot(acc: Accounting, busy_power: dict | None) -> str:
    """What the basis of a healthy verdict cannot see, as the clause that says what to record ("" when nothing)."""
    if acc.wall_s > 0 and acc.warmup_s >= START_UP_SHARE * acc.wall_s:
        what = ("the GPUs idled before the work began" if acc.basis == "gpu"
                else f"its first {acc.record}s ran slower than its pace")
        return (f"{acc.warmup_s / acc.wall_s:.0%} of the {'GPU' if acc.basis == 'gpu' else 'wall'} time is left out "
                f"as start-up ({what}: loading, compiling, preparing data) — the job's own cost when the recording "
                "began with it: time the start to judge it (`playbook record` marks it)")
    if acc.basis == "wall":
        unit = acc.record
        return (f"{unit} times cannot show a cost every {unit} pays: record GPU utilization beside them to rule it "
                "out (`playbook record`)")
    if acc.figures:
        return (f"{acc.figures} hold one utilization figure per job step or GPU, not samples over time: record GPU "
                "telemetry over the job (clocks, power, utilization) to rule out a throttled clock or stalls the "
                "figure averages away")
    if acc.basis == "gpu" and acc.busy_pct < FED_PCT:
        return (f"the GPUs idle {100 - acc.busy_pct:.0f}% of the time even at work (busy level "
                f"{acc.busy_pct:.0f}%; a fed GPU reads at least {FED_PCT:.0f}%): profile one step (`playbook record`) "
                "to see whether launch gaps, host work or input waits fill it")
    if busy_power and busy_power.get("pinned", 0.0) >= 0.5 and not busy_power.get("default_known", True):
        who = "the busy GPUs draw" if busy_power["gpus"] > 1 else "the busy GPU draws"
        return (f"{who} at the enforced power limit ({busy_power['limit_w']:.0f} W) in "
                f"{busy_power['pinned']:.0%} of busy polls: normal at the board's default limit, a cap that holds "
                "the clock down below it, and the input does not log the default — compare Default and Enforced "
                "Power Limit in `nvidia-smi -q -d POWER` (or log power.default_limit)")
    if busy_power and busy_power["share"] < WORK_POWER_FLOOR:
        who = "the busy GPUs draw" if busy_power["gpus"] > 1 else "the busy GPU draws"
        return (f"utilization counts a kernel of any size as busy, and {who} "
                f"{busy_power['share']:.0%} of the power limit (training at full load draws 60-100%): record SM "
                "activity (DCGM_FI_PROF_SM_ACTIVE) or profile one step (`playbook record`) to rule out kernels too "
                "small to fill the GPU")
    return ""


def _best_cause(ranked: list[dict]) -> float:
    """The best cause's score among `ranked` (the verdicts healthy, insufficient_data, unexplained left out)."""
    return max((x["score"] for x in ranked if x["id"] not in ranking.VERDICTS), default=0.0)


def _too_noisy(acc: Accounting, ranked: list[dict]) -> dict | None:
    """The insufficient_data hypothesis for step times whose noise floor is NOISY_FLOOR or more, else None."""
    if acc.basis != "wall" or acc.noise_floor_share < NOISY_FLOOR:
        return None
    unit = acc.record
    return ranking.hypothesis(ids.INSUFFICIENT_DATA, 1.0 - _best_cause(ranked), [
        f"{acc.noise_floor_share:.0%} of the wall time is the excess of {unit}s no test could flag, more than the "
        f"steady pace it would be jitter around: a loss cannot be told from the noise"],
        f"more {unit}s (the slow-{unit} test needs {SLOW_TEST_ROWS} and a warm-up is told apart from "
        f"{WARMUP_MIN_ROWS}), or GPU "
        "utilization beside them (`playbook record`)")


def _unplaced_hypothesis(why: str, ranked: list[dict]) -> dict:
    """The insufficient_data hypothesis for step times whose steady pace cannot vouch for the run (unplaced)."""
    return ranking.hypothesis(ids.INSUFFICIENT_DATA, 1.0 - _best_cause(ranked), [
        f"{why}: a steady pace of step times is no evidence of health then"],
        "GPU utilization beside the steps (`playbook record`, or nvidia-smi --query-gpu=timestamp,index,"
        "utilization.gpu,power.draw,clocks.sm --format=csv -lms 1000), or the run's MFU in its step lines")


def _accounted_lead(ranked: list[dict], acc: Accounting, blind: str = "", rare: set[str] = frozenset(),
                    why_unplaced: str | None = None) -> list[dict]:
    """The hypotheses reordered so that the verdict the accounting decides (attribution.decide, `rare` its
    momentary events' causes) leads, its lost_share the accounting's figure for it; healthy with a `blind` spot
    (blind_spot) at most "likely"; healthy from step times whose stated efficiency is low or unplaced
    (`why_unplaced`) or too noisy to test: insufficient data."""
    lead = attribution.decide(acc, ranked, rare)
    if lead is None:
        return ranked
    if lead == ids.HEALTHY and ((noisy := _too_noisy(acc, ranked)) is not None or (
            why_unplaced and (noisy := _unplaced_hypothesis(why_unplaced, ranked)))):
        rest = [dict(x, score=round(min(x["score"], 0.5), 3)) if x["id"] == ids.HEALTHY else x  # untested: ≤ 0.5
                for x in ranked if x["id"] != ids.INSUFFICIENT_DATA]
        return [noisy, *rest]
    by = attribution.harmful(acc)
    if lead == ids.UNEXPLAINED_SLOWDOWN:
        loss = sum(by.values()) / acc.wall_s
        h = attribution.unexplained_hypothesis(acc, 1.0 - acc.noise_floor_share / loss if loss > 0 else 0.0, ranked)
        rest = [x for x in ranked if x["id"] != ids.HEALTHY]
        healthy = [dict(x, score=round(min(x["score"], 1.0 - h["score"]), 3)) for x in ranked if x["id"] == ids.HEALTHY]
        return [h, *rest, *healthy]
    found = [x for x in ranked if x["id"] == lead]
    if found:
        h = dict(found[0])
    else:  # measured directly (a phase timer, events at the bucket's steps), or read from the bucket's own shape
        share = by.get(lead, 0.0) / acc.wall_s if acc.wall_s > 0 else 0.0
        evidence = list(dict.fromkeys(b.evidence for b in acc.buckets if b.cause == lead and b.evidence))
        direct = any(b.direct for b in acc.buckets if b.cause == lead)
        h = ranking.hypothesis(lead, (0.9 if direct else 0.5) * ranking.impact(share),
                               evidence or ["measured by the accounting"])
    if lead != ids.HEALTHY:
        share = by.get(lead, 0.0) / acc.wall_s if acc.wall_s > 0 else 0.0
        if any(b.direct for b in acc.buckets if b.cause == lead):  # measured on the lost time itself
            h["score"] = round(max(h["score"], 0.9 * ranking.impact(share)), 3)
        h["lost_share"] = round(share, 4) if acc.wall_s > 0 else None
        names = list(dict.fromkeys([n for b in acc.buckets if b.cause == lead for n in b.names if n != "all GPUs"]
                                   + list(h.get("names") or [])))
        # a host whose GPU is named already adds nothing (an event naming only its host, beside that GPU's bucket)
        names = [n for n in names if not any(m.startswith(f"{n}:") for m in names)]
        h["names"], h["named"] = names[:16], max(len(names), int(h.get("named") or 0))
    if lead == ids.HEALTHY:  # the accounting finds no loss beyond the noise: healthy is at least 1 - the best cause
        h["score"] = round(max(h["score"], 1.0 - _best_cause(ranked)), 3)
        if blind:
            h["score"], h["blind"] = min(h["score"], BLIND_HEALTHY_MAX), blind
            h["evidence"] = [*(h.get("evidence") or []), blind]
    rest = [x if x["id"] != ids.HEALTHY or lead == ids.HEALTHY else dict(x, score=round(min(x["score"], 1.0 - h["score"]), 3))
            for x in ranked if x["id"] != lead]
    return [h, *rest]


def scale(gpu_report: GpuReport | None, bundle: schema.Bundle, kineto: dict | None) -> int:
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


# causes that live in a device or a host: the machine is the answer's "where" even when it is the only one
LOCATED = (ids.HARDWARE_FAULT, ids.LINK_DEGRADATION, ids.THROTTLING, ids.MEMORY_PRESSURE)


def verdict_of(ranked: list[dict], gpus: int, acc: Accounting | None = None, cycles: float = 0.0,
               ended: dict | None = None, restarted: dict | None = None, only_host: str | None = None) -> dict:
    """The verdict in one sentence, the loss first: the share of GPU (or wall) time lost and where, the leading
    cause (its confidence word from its score, diagnosis.attribution.confidence_word), what it costs per day when the
    input spans enough to say, and what to do or record next. A run that ended on a kill, a crash or the scheduler
    (`ended`: evidence.from_events.run_end) says so first: a run that died is not healthy, only its steps were. A log
    holding several runs (`restarted`: evidence.from_events.restarts) says so after the loss it measured in them.
    `only_host`: the one host every input is from — naming it says nothing (often only the file's name) unless the
    cause lives in that machine (LOCATED: the node to drain or fix)."""
    if not ranked:
        return {}
    if only_host is not None and only_host in (ranked[0].get("names") or []) and ranked[0]["id"] not in LOCATED:
        names = [n for n in ranked[0]["names"] if n != only_host]
        ranked = [dict(ranked[0], names=names, named=max(0, int(ranked[0].get("named") or 0) - 1)), *ranked[1:]]
    out = _verdict(ranked, gpus, acc, cycles)
    if restarted:
        n, secs = restarted["count"], restarted["seconds"]
        between = f", {fmt_span(secs)} between them" if secs > 0 else ""
        out["sentence"] += (f". The log holds {n + 1} runs (it restarted {n} time{'s' if n > 1 else ''}{between}, "
                            "out of the accounting: each run is measured against its own pace)")
        out["restarts"] = restarted
    if ended:
        host = f" on {ended['host']}" if ended["host"] else ""  # the host the failure names (a launcher's summary)
        where = f" on rank {ended['rank']}" + host.replace(" on ", " of ", 1) if ended["rank"] >= 0 else host
        if ended["kind"] in causes.WAITERS_EVENTS and ended["rank"] >= 0:  # logged by a rank that waited
            where = f" logged by rank {ended['rank']}" + host.replace(" on ", " of ", 1) + " (a rank that waited)"
        at = f" after step {ended['step']}" if ended["step"] >= 0 else ""
        head = f"The run ended on {ended['words']}{where}{at} ({ended['detail'][:160]}); "
        rest = out["sentence"]
        first = rest.split(" ", 1)[0]
        rest = rest[0].lower() + rest[1:] if first[1:].islower() or len(first) == 1 else rest  # not "GPU ..."
        if out["id"] == ids.HEALTHY:  # its steps were healthy; a run cut short is no baseline yet
            rest = "until then " + rest.replace("keep this run as the baseline for `playbook compare`",
                                                "rerun it past that point before keeping it as a baseline")
        out["sentence"] = head + rest
        out["ended"] = ended
    return out


def _verdict(ranked: list[dict], gpus: int, acc: Accounting | None, cycles: float) -> dict:
    """verdict_of without the run's end."""
    top = ranked[0]
    c = causes.cause(top["id"])
    runner = next((h["score"] for h in ranked[1:] if h["id"] not in ranking.VERDICTS), 0.0)
    word = attribution.confidence_word(top["score"], runner)
    lost = round(acc.lost_share, 4) if acc is not None else top.get("lost_share")
    unpriced = _unpriced(top["id"], acc)
    lead_share = top.get("lost_share")
    if unpriced or (acc is None and not lead_share and top["id"] not in ranking.VERDICTS):
        lost = lead_share = None  # stated, not priced (a finding's own 0 is no measurement of time lost)
    long_enough = acc is not None and (acc.span_s >= PER_DAY_MIN_S or cycles >= PER_DAY_MIN_CYCLES)
    per_day = round(lead_share * gpus * 24, 1) if lead_share and gpus and long_enough and top["id"] not in \
        ranking.VERDICTS[:2] else None
    restart_s = top.get("restart_s")  # a restart's cost lies outside the logged steps: not the accounting's loss
    loss = attribution.loss_phrase(acc, top["id"]) if acc is not None and restart_s is None else ""
    if top["id"] == ids.INSUFFICIENT_DATA:
        sentence = f"Not enough data to name a cause: {top['evidence'][0]}; record next: {top['next_step']}"
        if loss and acc is not None and acc.significant:
            sentence = f"{loss[0].upper()}{loss[1:]}, but not enough data to name a cause: {top['evidence'][0]}; " \
                       f"record next: {top['next_step']}"
    elif top["id"] == ids.HEALTHY:
        blind = f"{top['blind']}; " if top.get("blind") else ""
        sentence = (f"Healthy ({word}, score {top['score']:.2f}): " + (f"{loss}; " if loss else
                    "no finding points at a cause; ") + blind + "keep this run as the baseline for `playbook compare`")
    elif top["id"] == ids.UNEXPLAINED_SLOWDOWN:
        why = attribution.unexplained_why(acc) if acc is not None else "no input says why"
        sentence = f"{loss[0].upper()}{loss[1:]}, and {why} (unexplained_slowdown); record next: {top['next_step']}"
    else:
        cost = ""
        if restart_s is not None:
            more = " and more the log does not price" if top.get("restart_unpriced") else ""
            cost = (f" — ≈ {fmt_span(restart_s)} of each GPU's time outside the logged steps{more}" if restart_s > 0
                    else " — the log states it, not its seconds (the evidence says what it cost)")
        elif per_day is not None:
            cost = f", ≈ {per_day:.0f} GPU-h/day on {gpus} GPU{'s' if gpus != 1 else ''}"
        elif lead_share and not loss:
            cost = f" — it costs ~{lead_share:.0%} of the time observed"
        head = f"{loss[0].upper()}{loss[1:]}: " if loss else ""
        title = c.title if head else c.title[0].upper() + c.title[1:]
        # a cause without a lab of its own (the triage notebook) has nothing to reproduce: its next step instead
        run = (f"`{c.command}` (reproduces it and measures the fix)" if c.notebook != causes.TRIAGE_NOTEBOOK
               else c.next_step)
        sentence = (f"{head}{title}{_where(top.get('names') or [], top.get('named', 0), gpus)} ({top['id']}, "
                    f"{word}, score {top['score']:.2f}){cost}; run next: {run}")
        second = next((h for h in ranked[1:] if h["id"] not in ranking.VERDICTS), None)
        if second is not None and word != "confirmed" and second["score"] >= 0.5 * top["score"]:
            sentence += (f"; or {second['id']} (score {second['score']:.2f}) — to tell them apart: "
                         f"{top.get('next_step') or c.next_step}")
    return {"id": top["id"], "score": top["score"], "confidence": word, "title": c.title,
            "names": top.get("names") or [], "lost_share": lost, "gpus": gpus, "gpu_hours_per_day": per_day,
            "sentence": sentence, **({"unpriced": unpriced} if unpriced else {})}


def _unpriced(cause_id: str, acc: Accounting | None) -> str | None:
    """Why a leading cause has no share of lost time to quote, or None: the inputs state it (a fault, a framework's
    statement) and the accounting holds no loss of it nor any loss beyond the noise: its 0% would read as "costs
    nothing". A cause utilization and the run's own pace cannot see (causes.UTILIZATION_BLIND) says so."""
    if acc is None or cause_id in ranking.VERDICTS or cause_id == ids.UNEXPLAINED_SLOWDOWN or acc.significant or \
            any(b.cause == cause_id for b in acc.buckets):
        return None
    if cause_id in causes.UTILIZATION_BLIND:
        what = "it reads busy" if acc.basis == "gpu" else f"every {acc.record} pays it, so the run's own pace hides it"
        return f"not measurable from these inputs: {what} — compare with a run without it (`playbook compare`)"
    return "stated in the inputs, not measured as lost time"


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
    if reason and "nsys summary" in reason:  # the profile is there: export what has a time axis
        asks.insert(0, "from the same .nsys-rep, the GPU timeline and the steps: `nsys stats --report "
                       "cuda_gpu_trace,nvtx_sum --format csv --output prof/rank0 prof/rank0.nsys-rep` (NVTX "
                       "'step N' ranges: playbook.probes' StepTimer or nvtx.range_push per step)")
    return "; ".join(asks) or causes.cause(ids.INSUFFICIENT_DATA).next_step


def ranks(stragglers: dict | None, kineto: dict | None) -> list[dict]:
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



def untestable(run: Run) -> str | None:
    """Why the inputs cannot show the signatures at all (then "nothing found" is not "healthy"), or None: a
    recording that says it is incomplete, telemetry too short to look for a swing, a trace without GPU work, nothing that measures the GPUs or the loop
    (NCCL facts and link tables describe the fabric only; nsys totals without a trace or step ranges have no time axis),
    or GPUs steadily under STEADY_BUSY_MIN without a swing."""
    osc, gpu_report, sm = run.osc, run.gpu_report, run.summaries
    lost = run.bundle.meta.get("incomplete") or {}
    if lost:  # what was never written cannot vouch for health
        where, reason = next(iter(lost.items()))
        return f"the recording is incomplete ({where}: {reason[:160]})"
    kineto = sm.get("kineto")
    gpu_trace = bool(kineto and kineto.get("gpu_idle"))
    # NCCL connection facts and link tables can name a fabric cause, never vouch for the loop's health; nor can nsys
    # summary tables without a GPU trace or NVTX step ranges (totals per kernel or call, no time axis to be idle on)
    nsys = sm.get("nsys") or {}
    nsys_timed = bool(nsys) and (len(run.bundle.trace) > 0 or any(
        isinstance(p, dict) and p.get("nvtx") for p in nsys.get("profiles") or []))
    # a torch.profiler table measures the loop with device (CUDA) times or profiled steps (ProfilerStep rows: the
    # steps' wall time on the host); a CPU-only table of ops alone holds shares of an unknown window; a cProfile
    # listing only where the device held the host waiting (analysis.profiler_ops `host_blocked_s`)
    # a table's two total lines alone (no op rows, no steps: readers/profiler_table `totals_only`) measure how much
    # of the host's op time the device ran, as steady telemetry measures a level: no op names what held the host
    # (the loader, launches, copies), so they do not measure the loop either
    profiler_tables = (sm.get("profiler") or {}).get("tables") or []
    profiled = any((t.get("device_s") and not t.get("totals_only")) or t.get("steps_s") or t.get("host_blocked_s")
                   for t in profiler_tables)
    others = bool(run.steps_summary or gpu_trace or nsys_timed or profiled or any(sm.get(n) for n in (
        "stragglers", "flight_recorder", "job_usage")))  # (a job's usage figures measure its GPUs' time, in sum)
    others = others or inference_bench.measured(run.bundle)  # a benchmark's GPU compute against its walltime
    if osc is not None and osc.few_samples and not others:
        return "too few samples per GPU to look for an oscillation"
    tel = run.bundle.telemetry
    if osc is None and gpu_report is not None and not others and len(tel) and not tel["util_pct"].notna().any():
        # (xpu-smi prints N/A utilization on some drivers: power and clocks alone cannot tell busy from idle)
        return "the telemetry holds no utilization values (all N/A or missing): nothing says the GPUs were busy"
    if kineto and not gpu_trace and osc is None and gpu_report is None and not others:
        blind = [m["no_device_lane"] for m in (run.bundle.meta.get("kineto") or {}).values()
                 if isinstance(m, dict) and m.get("no_device_lane")]  # readers/kineto: roles.py, horovod.py
        if blind:
            return f"{blind[0]}, no device lane: GPU busy and idle time cannot be measured from it"
        return "the trace holds no GPU kernels or copies (a CPU-only profile)"
    if osc is None and gpu_report is None and not others:
        have = [n for n, t in (("host metrics", run.bundle.host), (_events_words(run.bundle.events), run.bundle.events),
                               (_nccl_facts(sm.get("nccl")), run.bundle.nccl)) if len(t)] + \
            (["nsys summary tables (totals, no time axis)"] if nsys else []) + \
            [f"an nccl-tests table ({t['line'].removeprefix('nccl-tests ')}; busbw is judged against the links' "
             "rate, which the table does not state)" for t in (sm.get("nccl_tests") or {}).get("tables", [])[:2]] + \
            (["torch.profiler op tables without device times or profiled steps"] if any(
                t.get("ops") for t in profiler_tables) else []) + \
            [f"a torch.profiler table's totals without its rows (the device ran {t['device_s']:.3g} s of the "
             f"{t['base_s']:.3g} s of host op time; no op or step says what held the host: the loader, launches, "
             "copies)" for t in profiler_tables if t.get("totals_only")][:2] + \
            (["cProfile listings (host time only, no GPU or step times)"] if any(
                t.get("listings") for t in profiler_tables) else []) + \
            (["host-side profiler texts (py-spy dumps, folded stacks, line_profiler listings: the host alone, no GPU "
              "or step times)"] if any(t.get("host_texts") for t in profiler_tables) else []) + \
            (["TensorFlow profiler op tables (the device's time per op, without the window it ran in)"] if any(
                t.get("tfprof_ops") for t in profiler_tables) else []) + \
            (["PyTorch/XLA metrics reports (compilation, execution and transfer counts: no device utilization or "
              "step time)"] if any(t.get("xla_reports") for t in profiler_tables) else []) + \
            (["input-pipeline tools' statements (a profiler's input-bound verdict, loader worker warnings, a data "
              "pipeline's stats)"] if any(
                t.get("input_statements") for t in profiler_tables) else []) + \
            (["tables of runs that differ by a setting (each run's time as the table states it)"] if any(
                t.get("variant_tables") and not t.get("variant_notes") for t in profiler_tables) else []) + \
            [n for t in profiler_tables for n in t.get("variant_notes") or []][:2] + \
            (["managed platforms' profiler statements (SageMaker rule statuses, DLProf expert feedback: a rule's "
              "verdict, not the run's utilization or step times)"] if any(
                t.get("platform_statements") for t in profiler_tables) else []) + \
            (["dcgmi diag results (the GPUs' health checks, no time axis)"] if any(
                str(k).startswith(schema.DCGM_DIAG) for k in run.bundle.meta) else []) + \
            (["machine facts (PCIe links, GPU topology)"] if topology.sections(run.bundle.meta) else []) + \
            (["the devices a framework creates or a job says it uses (which GPUs it can compute on, not how they "
              "ran)"] if schema.meta_sections(run.bundle.meta, schema.DEVICE_USE) else []) + \
            (["a container's limits (cgroup CPU-quota counters, /dev/shm's size: what the job may use, not how its "
              "GPUs ran)"] if schema.meta_sections(run.bundle.meta, "container_limits:") else []) + \
            [e for _, v in schema.meta_sections(run.bundle.meta, "job_usage:") for e in v.get("empty") or []][:2] + \
            [f"Megatron straggler reports ({r['reports']:,}; each interval's least and most across ranks, no time "
             "series)" for _, r in schema.meta_sections(run.bundle.meta, schema.STRAGGLER_REPORTS)][:1] + \
            [f"{t['line']} ({_served_kind(t['line'])}: no GPU time)" for t in (sm.get("serving") or {}).get(
                "files", [])[:2]]
        return (f"the inputs hold {' and '.join(have) + ' only' if have else 'nothing usable'}: no GPU utilization, "
                "no step times, no trace with GPU work")
    if osc is not None and not osc.detected and not osc.single_drop and not others and not run.idle_windows and \
            np.isfinite(osc.high_pct) and osc.high_pct < STEADY_BUSY_MIN:
        return (f"the GPUs sit steadily at {osc.high_pct:.0f}% utilization, idle {100 - osc.high_pct:.0f}% "
                "of the time without a swing or drop: telemetry alone cannot tell an input-bound loop from "
                "small kernels, host syncs or a slow interconnect")
    steps = run.bundle.steps
    timed = steps.loc[steps["phase"] == "step", "duration_s"].to_numpy(dtype=np.float64) if len(steps) else []
    # a busy share derived from the step phases (timestamped phases) measures nothing the step times do not: only
    # the step times measure the run then too (one timed step read "Healthy (confirmed, score 1.00)" with a stamp)
    osc = None if run.osc_derived else osc
    if osc is None and not gpu_trace and len(timed) and below_resolution(timed):
        return (f"{np.mean(timed == 0):.0%} of the step times read 0 s: the log prints them coarser than they run, "
                "so their differences measure the rounding — log them with more digits (or in ms)")
    if osc is None and gpu_report is None and not gpu_trace and len(timed):
        # only step times measure the run: two that disagree show no steady pace; a steady pace still cannot vouch
        # for a run whose own stated efficiency is low or cannot be placed (a straggler report's utilization can)
        return no_steady_pace(steps, schema.record_unit(run.bundle))
    return None


def unplaced(run: Run) -> str | None:
    """Why a healthy verdict from step times alone cannot stand (step_pace.unplaced_efficiency: a stated efficiency
    that is low or that no device peak places), or None: only where the step times are the one measure of the run
    (no GPU utilization from telemetry, a trace or a stated utilization, which measure idle GPU time themselves)."""
    sm = run.summaries
    kineto = sm.get("kineto")
    if run.osc is not None or run.gpu_report is not None or (kineto and kineto.get("gpu_idle")) or sm.get("stragglers"):
        return None
    busy = [r["Utl"]["min"] for _, r in schema.meta_sections(run.bundle.meta, schema.STRAGGLER_REPORTS)
            if (r.get("Utl") or {}).get("min") is not None]
    if busy and min(busy) >= STEADY_BUSY_MIN:  # Megatron's StragglerDetector: every rank's GPU measured busy
        return None
    steps = run.bundle.steps
    if not len(steps) or not (steps["phase"] == "step").any():
        return None
    return unplaced_efficiency(run.bundle.meta)


def _nccl_facts(nccl: dict | None) -> str:
    """"NCCL connection facts", with the network NCCL chose when it says ("network NET/Socket; libibverbs could not
    be opened"): what the facts state even when they name no cause (one host: no inter-node traffic to judge)."""
    hosts = (nccl or {}).get("hosts") or []
    nets = sorted({str(h["network"]) for h in hosts if h.get("network")})
    if not nets:
        return "NCCL connection facts"
    sought = sorted({s for h in hosts for s in h.get("ib_sought") or []})
    return (f"NCCL connection facts (network NET/{', NET/'.join(nets)}" + (f"; {'; '.join(sought)}" if sought else "")
            + ")")


def lead(ranked: list[dict], acc: Accounting | None, run: Run, why_untestable: str | None) -> list[dict]:
    """The hypotheses in the order the answer gives them: what to record next for insufficient data, and the
    verdict the accounting decides first (a handful of polls shows what it saw, too few to let the accounting
    overrule the findings)."""
    led = False  # a stated fact moved ahead of insufficient_data (_fact_lead)
    if ranked and ranked[0]["id"] == ids.INSUFFICIENT_DATA:
        ranked[0]["next_step"] = _record_next(run.bundle, run.osc, why_untestable)
        first = ranked[0]
        ranked = _fact_lead(ranked, run)
        led = ranked[0] is not first
    # beside one step time the fact stays first: that one step has no pace for the accounting to weigh it against
    if acc is None or (run.osc is not None and run.osc.few_samples) or (led and len(run.bundle.steps) == 1):
        return ranked
    return _accounted_lead(ranked, acc, blind_spot(acc, run.busy_power),
                           attribution.rare_event_causes(run.bundle.events, run.bundle.steps), unplaced(run))


def restart_lead(ranked: list[dict], run: Run, acc: Accounting | None) -> list[dict]:
    """A restart the logs state (evidence/from_restarts.py) leads when what it costs each GPU outside the logged
    steps (steps computed again, a stated resume) is a larger share than the accounting's harmful loss inside them:
    forty thousand iterations computed again outweigh the first window's data wait. The hypothesis carries the
    priced seconds (`restart_s`, 0 when the log states the restart but not its seconds) for the verdict."""
    found = [f for f in run.findings if getattr(f, "signature", None) == ids.RESTART_LOSS]
    at = next((i for i, h in enumerate(ranked) if h["id"] == ids.RESTART_LOSS), None)
    if at is None or not found:
        return ranked
    lost = sum(float(f.extra.get("lost_s") or 0.0) for f in found)
    unpriced = any(f.extra.get("unpriced") for f in found)
    h = dict(ranked[at], restart_s=round(lost, 3), restart_unpriced=unpriced)
    if lost <= 0:
        h["lost_share"] = None  # stated, not priced: no share to quote
    if lost <= 0 or acc is None or acc.wall_s <= 0:
        return [*ranked[:at], h, *ranked[at + 1:]]
    share = lost / (lost + max(acc.span_s, 0.0))
    if share <= sum(attribution.harmful(acc).values()) / acc.wall_s:
        return [*ranked[:at], h, *ranked[at + 1:]]
    h["lost_share"], h["score"] = round(share, 4), round(max(h["score"], 0.9 * ranking.impact(share)), 3)
    rest = [x if x["id"] != ids.HEALTHY else dict(x, score=round(min(x["score"], 1.0 - h["score"]), 3))
            for i, x in enumerate(ranked) if i != at]
    return [h, *rest]


def _fact_lead(ranked: list[dict], run: Run) -> list[dict]:
    """With facts a tool states as the only input — NCCL's connection lines (the transport it chose), the calls an
    `nsys analyze` rule flags (pageable copies, synchronous calls), the calls a profile paste measures without its
    total (analysis.profiler_ops), a serving engine's scheduler records (a full KV cache with a queue, decode steps
    without a CUDA graph: analysis/serving_load.py) — the cause those facts support (at least attribution.SUPPORT_MIN) leads and
    insufficient_data follows: stated facts are not samples that could be too few, and "not enough data" is then
    about the cost, which needs a time axis, not about the cause they name. One step time is no time axis either
    (no pace to compare it with): beside it the stated facts still lead."""
    bundle = run.bundle
    sampled = (bundle.telemetry, bundle.trace, bundle.host)
    if any(len(t) for t in sampled) or len(bundle.steps) > 1:
        return ranked
    stated = ({ids.LINK_DEGRADATION} if len(bundle.nccl) else set()) | {
        f["hypothesis"] for name in ("nsys", "profiler", "serving")
        for f in (run.summaries.get(name) or {}).get("findings") or [] if f.get("stated")}
    fact = next((h for h in ranked if h["id"] in stated), None)  # ranked: the best supported first
    if fact is None or fact["score"] < attribution.SUPPORT_MIN:
        return ranked
    return [fact] + [h for h in ranked if h is not fact]


COLLECTIVE_BOUND = (ids.COLLECTIVE_STRAGGLER, ids.LINK_DEGRADATION)  # verdicts a GPU topology can be context for


def topology_context(ranked: list[dict], links: dict | None) -> list[dict]:
    """A verdict about collectives gets the GPU topology as context (pairs crossing the CPUs without NVLink,
    from `nvidia-smi topo -m`): one more evidence line, the score unchanged. Never a cause alone: no other verdict
    gets it, and it adds no hypothesis."""
    line = topology.crossing_context((links or {}).get("topology") or [])
    if not ranked or line is None or ranked[0]["id"] not in COLLECTIVE_BOUND:
        return ranked
    evidence = list(ranked[0]["evidence"])
    evidence.insert(min(len(evidence), 3), line)  # among the lines a report shows first
    return [dict(ranked[0], evidence=evidence), *ranked[1:]]


def _events_words(events) -> str:
    """"events", with the seconds of the checkpoint and evaluation sections among them when their lines state or
    bound them (`events (checkpoint 43.3 s in 1 section: no step time to weigh it against)`). Ranks save and
    evaluate side by side: a kind's seconds are those of the rank (host, rank) that spent the most, not the sum over
    ranks."""
    if not len(events) or "duration_s" not in events:
        return "events"
    sec = events[events["kind"].isin(["checkpoint", "eval"]) & (events["duration_s"] > 0)]
    if sec.empty:
        return "events"
    parts, count = [], 0
    for kind, g in sec.groupby("kind", sort=True):
        per = g.groupby([g["host"].astype(str), g["rank"]])["duration_s"].agg(["sum", "size"])
        top = per.loc[per["sum"].idxmax()]
        n = int(top["size"])
        count += n
        parts.append(f"{kind} {top['sum']:.3g} s in {n} section{'s' if n > 1 else ''}"
                     + (f" on the slowest of {len(per)} ranks" if len(per) > 1 else ""))
    return f"events ({', '.join(parts)}: no step time to weigh {'it' if count == 1 else 'them'} against)"
