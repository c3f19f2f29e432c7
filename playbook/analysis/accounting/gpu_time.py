"""GPU-time accounting: per-GPU utilization (or a profiler table's totals) against the busy level the same GPUs
reach at work (see playbook.analysis.accounting for the buckets and the order they claim the idle time in)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from statistics import NormalDist

import numpy as np
import pandas as pd

from playbook.analysis.accounting.buckets import MAX_WINDOWS, MIN_FLOOR, Accounting, Bucket, merged_windows
from playbook.analysis.gpu_limits import (
    POWER_PINNED,
    WORK_POWER_FLOOR,
    part_values,
    sku_limit_refs,
    sustained_peak,
)
from playbook.analysis.gpus import job_gpus
from playbook.analysis.intervals import true_runs
from playbook.analysis.series import GpuSeries, row_percentile
from playbook.knowledge import ids
from playbook.model import schema
from playbook.readers.profiler_table import META_PREFIX as PROFILER_META

BUSY_Q = 90  # the busy level: the 90th percentile over time of the peers' median utilization
FED_PCT = 90.0  # a GPU kept fed reads >= 90% utilization: a healthy verdict under it is no more than likely
STEADY_FED_PCT = 80.0  # a busy level under 80% leaves >= 20% idle at work: a loss of its own (steady_idle)
SPIN_UTIL = 90.0  # busy-waiting: >= 90% utilization ...
SPIN_POWER = 0.5  # ... at under half the power the same GPU draws at work
# "at work" is >= WORK_POWER_FLOOR of the power limit (analysis.gpu_limits) in a multi-GPU job whose ranks spin
# from the first poll (QwenLM/Qwen#970): busy under a quarter of the limit is spinning
SLOW_CLOCK = 0.7  # busy at under 70% of the clock the same GPU reaches while busy (DVFS alone costs <= ~25%)
IDLE_PCT = 5.0  # idle throughout: 95% of polls at or below this
UNUSED_PCT = 1.0  # a job report's GPU under 1% over the whole job: never used (jobstats prints "<-- GPU was not used")
# ... over the whole job: a finished job's figure is (however short the job: it held the GPUs and never used them,
# heldout58 reportseff19's 13 s), a job in progress's is the mean so far — under an hour (Job Defense Shield's example
# first warning of a running job at 0%), or of unknown length, it is a start-up still loading its model or data
UNUSED_RUNNING_S = 3600.0
# the level of the test that a GPU's shortfall against its peers comes in stretches (_sustained): the oscillation
# analysis's ALPHA (playbook.analysis.oscillation), Šidák-corrected over the GPUs tested as its period search is
SUSTAINED_ALPHA = 0.01


# A fed training loop still leaves its GPU idle a few percent of a step (launch gaps, the optimizer's small kernels,
# the step boundary): the TensorFlow profiler calls host-side waits "moderate" from 5% of the step, the threshold
# the trace and table findings use. Below it a table's idle time is not called a loss.
PROFILE_FLOOR = 0.05


def profile_accounting(bundle: schema.Bundle) -> Accounting | None:
    """GPU-time accounting of torch.profiler tables (no time axis, only totals): the profiled steps' wall time on the
    host (ProfilerStep* CPU total; without steps, the table's self CPU time, which is at most the window: the idle
    share a lower bound) against the GPU's kernel time (Self CUDA time total), one GPU per table; the idle rest is
    one `profile_idle` bucket. None without a table that has both."""
    wall = busy = 0.0
    names = []
    for key, t in (bundle.meta or {}).items():
        if isinstance(key, str) and key.startswith(PROFILER_META) and isinstance(t, dict):
            steps_s = float(t.get("steps_s") or 0.0) or float(t.get("self_cpu_total_s") or 0.0)
            device_s = float(t.get("self_device_total_s") or 0.0)
            if steps_s > 0 and device_s > 0:
                wall, busy = wall + steps_s, busy + min(device_s, steps_s)
                names.append(key[len(PROFILER_META):].rsplit("/", 1)[-1])
    if wall <= 0:
        return None
    idle = wall - busy
    bucket = Bucket("profile_idle", idle, share=idle / wall, names=names if len(names) > 1 else [],  # one: the input
                    detail=f"the GPU idle {idle / wall:.0%} of the profiled steps (kernel time {busy:.3f} s of "
                           f"{wall:.3f} s)")
    return Accounting("gpu", wall, [bucket] if idle > 0 else [], PROFILE_FLOOR,
                      f"a fed loop's idle time between kernels (under {PROFILE_FLOOR:.0%} of a step, the "
                      "TensorFlow profiler's 'moderate' threshold)", span_s=wall)


def job_usage_accounting(bundle: schema.Bundle) -> Accounting | None:
    """GPU-time accounting of a Slurm job's usage figures (analysis.job_usage: no time axis, one figure per job
    step): a step's mean utilization (TRESUsageInAve) leaves 1 - mean idle; a maximum (TRESUsageInMax, seff's "Max
    GPU Utilization") at least 1 - max. A step with both is priced by its mean (the maximum says less). Weighed by
    GPU-seconds where the input states the duration and GPU count, else each step counts one unit. A `job_idle`
    bucket, and an `unused_gpus` one for GPUs a job report shows under UNUSED_PCT over the whole job — beside a GPU
    that worked (those GPUs named), or every figure of the input so (the job used none of its GPUs: none named, the
    allocation is the subject): a whole job's mean (or maximum) under 1% is no slow GPU but one the program never
    ran on — past its start-up only (_past_start: a job in progress under an hour at 0% is still loading, its
    figure job_idle's); the noise floor is a fed loop's: 1 - FED_PCT."""
    from playbook.analysis.job_usage import jobs_of

    jobs = [j for j in jobs_of(bundle) if j.get("util_pct") is not None]
    with_mean = {(j["source"], j["job"]) for j in jobs if j["stat"] == "mean" and j.get("job")}  # one named step
    # a GPU of the job at 0% over the whole run while another worked: allocated and never used (a figure per GPU
    # from a job report; a job table's GPUs-Unused count) — its own bucket, naming the GPUs where the input does
    # (a peer of the same job: its figures' `of`, per file; a job all at 0% beside another job is an idle job)
    busy_peer = {(j["source"], j.get("of", "")) for j in jobs
                 if (j.get("host") or j.get("gpu") is not None) and j["util_pct"] >= 100.0 - FED_PCT}
    # a job report: the whole job at 0% (jobstats, reportseff, Job Defense Shield's zero-utilization alert) — not a
    # figure of the unused GPUs alone beside a GPUs-Unused count (`util_of`)
    none_used = all(j["util_pct"] < UNUSED_PCT and j.get("util_of") != "unused" for j in jobs)
    wall = idle = unused_s = 0.0
    parts, unused_names, bound = [], [], False  # bound: a maximum among the figures (the idle share a lower bound)
    for j in jobs:
        if j["stat"] == "max" and (j["source"], j.get("job")) in with_mean:
            continue
        weight = float(j["elapsed_s"] * (j.get("gpus") or 1)) if j.get("elapsed_s") else 1.0
        share = max(0.0, 1.0 - float(j["util_pct"]) / 100.0)
        named = j.get("host") or j.get("gpu") is not None
        if j["util_pct"] < UNUSED_PCT and _past_start(j) and (none_used or j["stat"] == "mean" and named and
                                           (j["source"], j.get("of", "")) in busy_peer):
            unused_s, wall = unused_s + weight, wall + weight
            unused_names.append(
                (f"{j.get('host') or ''} GPU {j['gpu']}".strip() if j.get("gpu") is not None else str(j["host"]))
                if named else  # a node's row (reportseff -n): the node, all its GPUs
                f"{j.get('job') or j['source']}{f' ({gpus} GPUs)' if (gpus := j.get('gpus')) else ''}")
            continue
        gpus, left = j.get("gpus") or 0, j.get("gpus_unused") or 0
        if j["stat"] == "mean" and 0 < left < gpus:  # the unused GPUs idle throughout; the mean is over all
            unused_s += weight * left / gpus
            unused_names = unused_names + [f"{left} of {gpus} GPUs"]
            # a figure of the unused GPUs alone (Job Defense Shield's column beside GPUs-Unused): the working
            # GPUs' utilization is unknown, so no idle time of theirs is counted (the loss is a lower bound)
            share, bound = (0.0, True) if j.get("util_of") == "unused" else (max(0.0, share - left / gpus), bound)
        wall, idle, bound = wall + weight, idle + share * weight, bound or j["stat"] == "max"
        parts.append(f"{j.get('job') or j['source']}: {'at most' if j['stat'] == 'max' else 'on average'} "
                     f"{j['util_pct']:.0f}% busy")
    if wall <= 0:
        return None
    listed = f"{', '.join(unused_names[:4])}{' ...' if len(unused_names) > 4 else ''}"
    buckets = [Bucket(ids.UNUSED_GPUS, unused_s, share=unused_s / wall, names=[] if none_used else unused_names,
                      detail=f"GPUs allocated and never used ({listed}: under {UNUSED_PCT:.0f}% over the whole "
                             "job" + ("; none of the job's GPUs did any work)" if none_used else
                                      " while its other GPUs worked)"))] if unused_s > 0 else []
    if idle > 0:
        buckets.append(Bucket("job_idle", idle, share=idle / wall,
                              detail=f"the job's {'working ' if buckets else ''}GPUs idle "
                                     f"{'at least ' if bound else ''}{idle / wall:.0%} of the job "
                                     f"({'; '.join(parts[:3])})"))
    floor = 1.0 - FED_PCT / 100.0
    return Accounting("gpu", wall, buckets, floor,
                      f"a fed loop reads {FED_PCT:.0f}% utilization or more (the job's figures have no time axis)",
                      span_s=wall, figures="the job's accounting figures (sacct / seff / a job-efficiency report)")


def _past_start(j: dict) -> bool:
    """Whether a job figure covers more than a start-up: a finished job's, or a running one's past UNUSED_RUNNING_S."""
    e = j.get("elapsed_s")
    return not j.get("running") or (e is not None and e >= UNUSED_RUNNING_S)


def _job_end(series: GpuSeries, med: np.ndarray, dt: float, lo: float, n_bins: int) -> int:
    """The bin after the job's last work, when every GPU sits idle from there to the last poll and the job has
    let its memory go (the mirror of the warm-up: the poller ran on after the job ended); `n_bins` otherwise. A job
    that hangs at its end holds its allocations (a process that exits frees them, down to nothing or the next
    job's context), so the tail is the job's only where the memory, if recorded, stays at half or more of what
    it held while working; without a memory column the idle tail is taken for the end."""
    idle = ~np.isfinite(med) | (med <= IDLE_PCT)
    if idle.all() or not idle[-1]:
        return n_bins
    end = int(n_bins - np.argmin(idle[::-1]))
    if "mem_used_mib" in series.values and np.isfinite(series.values["mem_used_mib"]).any():
        mem = np.nansum(series.grid_means("mem_used_mib", dt, lo, n_bins), axis=0)
        held, after = np.median(mem[:end][~idle[:end]]), np.median(mem[end:])
        if held > 0 and after >= 0.5 * held:
            return n_bins
    return end


def _job_edges(med: np.ndarray, dipping: np.ndarray, end: int) -> tuple[int, int]:
    """(lead, end): the bins before the job's work counts (warm-up) and the bin after it (`end`, from _job_end,
    moved back over a shut-down), from the GPUs' median utilization `med` (%) and its bins below the busy level."""
    # the GPUs idle from the first poll until the job first works (loading the model, indexing data): warm-up
    idle = np.isfinite(med) & (med <= IDLE_PCT)
    lead = ~np.isfinite(med) | idle  # (a bin without a reading says nothing either way)
    lead = lead.argmin() if not lead.all() else 0
    # the recording holds the job's start only where the GPUs read idle before they first work at their level (the
    # model loading, CloudWatch's 3.6%); one that begins mid-run, at work or in a partial drop, shows no start-up
    # (a stall 20 s into the recording, a data-starved first fifth at 30-50%: drops, not warm-up)
    at_level = np.isfinite(med) & ~dipping
    started = bool(idle[:int(at_level.argmax()) if at_level.any() else len(med)].any())
    # the bin the job starts in holds time before it (a poll reads its interval's average): the first bin of work
    # below the busy level with work in the next is the start, not a drop (CloudWatch's first average at 13%)
    if started and lead + 1 < end and dipping[lead] and not dipping[lead + 1]:
        lead += 1
    # start-up and shut-down happen once, at the job's edges (compiling, autotuning, an evaluation at step 0, a first
    # load; a last save, the teardown); a stall recurs or strikes anywhere. Before an idle tail, the drop the job's
    # work ends in (bins without a reading inside it included) is its shut-down — nanoGPT's last step, then a 16%
    # blip of teardown 2 s into the tail; drops only within the job's first quarter, none after, are its warm-up.
    # Both at most a quarter of the job (the step accounting's warm-up is likewise at most a quarter of the steps:
    # step_times.warmup_steps)
    ending = (dipping | ~np.isfinite(med))[lead:end][::-1]
    if end < len(med) and len(ending) and ending[0]:
        tail = int(np.argmin(ending)) if not ending.all() else len(ending)
        # a last save or the teardown leaves the GPUs waiting on the host or the disk: idle but for blips (the
        # median bin) after the poll the work ends in (its interval's average, partly after it); a stretch at a
        # partial level (30% for the job's last fifth) is work at a slower pace, a loss
        if tail <= (end - lead) // 4 and _at_rest(med[end - tail + 1:end]):
            end -= tail
    late = np.flatnonzero(dipping[lead:end])
    # loading and compiling are the host's work: the GPUs read idle at some poll of the start-up's drops after the
    # one the work starts in (its median is not tested as the shut-down's is: engine builds and autotuning read
    # sporadic 0-70%, heldout28 csc2231's median 6%); a first fifth at a steady 30-50% never idle is a slow pace.
    # Past the quarter, a start whose median poll reads idle is still the start: the GPU at rest with a desktop's
    # or a loader's blips until the work first holds its level (heldout62: a GPU-Z log of 25 s at 0-26% before
    # 56 s at 72-99%); the mirror of the shut-down's rest test. A stretch that holds work among its drops (a
    # stall again mid-run) reads busy at its median and stays a drop; so does a rest longer than the steady work
    # after it (a starved GPU idle but for spikes, working at its level only at the end: keras#7168's dmon), and a
    # rest whose spikes reach the work's level and fall back to idle at more than one poll: those are the loop's
    # steps, starved (a first epoch read from cold storage, the next from the page cache), not a loader's blips
    if started and len(late) and idle[lead + late[late > 0]].any() and (
            late[-1] + 1 <= (end - lead) // 4 or (2 * (late[-1] + 1) <= end - lead
                                                  and _at_rest(med[lead:lead + int(late[-1]) + 1])
                                                  and _level_spikes(med, dipping, idle, lead, int(late[-1])) <= 1)):
        lead += int(late[-1]) + 1
    return lead, end


def gpu_accounting(series: GpuSeries, events: pd.DataFrame | None = None,
                   clock_limited: Mapping[str, float] | None = None) -> Accounting | None:
    """GPU-time accounting of per-GPU utilization (see the module docstring); None with < 2 polls. `events`: the
    run's events, whose fault events keep an idle failing GPU in (analysis.job_members.job_gpus);
    `clock_limited`: {GPU id: the share of its busy work the limiter costs} for the GPUs a limiter test named
    (analysis.gpus.clock_cost: throttle reasons, a thermal or power limiter), whose every busy poll below their
    working clock is charged (`slow_clock`), not only those under SLOW_CLOCK; without an SM clock recorded, the
    estimated share of their busy time."""
    if not len(series) or len(series.t) < 2:
        return None
    series = job_gpus(series, events)[0]
    dt, lo, n_bins = series.common_grid()
    if n_bins < 2:
        return None
    util = np.clip(series.grid_means("util_pct", dt, lo, n_bins).astype(np.float64), 0.0, 100.0)
    valid = np.isfinite(util)
    g_count = len(series)
    seen = valid.any(axis=1)
    first = np.where(seen, valid.argmax(axis=1), n_bins)
    active = np.arange(n_bins)[None, :] >= first[:, None]  # a GPU counts from its first reading on
    peers_any = valid.sum(axis=0) > 0
    active &= peers_any[None, :]
    total = float(active.sum() * dt)
    if total <= 0:
        return None
    with warnings.catch_warnings():  # bins where no GPU reported: NaN, by design
        warnings.simplefilter("ignore", RuntimeWarning)
        # a GPU idle throughout while peers work is its own bucket (idle_gpu), not part of the fleet's level: in a
        # small fleet it would drag the median (2 GPUs at 97% and 0%: a "busy level" of 48%)
        idle_all = np.nanpercentile(np.where(valid, util, np.nan), 95, axis=1) <= IDLE_PCT
        level_of = valid & ~idle_all[:, None] if (~idle_all).any() else valid
        med = np.nanmedian(np.where(level_of, util, np.nan), axis=0) if g_count > 1 else util[0]
    med = np.where(np.isfinite(med), med, np.nan)
    busy = float(np.nanpercentile(med, BUSY_Q)) if np.isfinite(med).any() else 100.0
    busy = max(busy, 1.0)
    # fleet-wide drops: the peers' median below the busy level at the same moments
    drop = np.where(np.isfinite(med), np.clip(busy - med, 0.0, None), 0.0) / 100.0
    dipping = drop * 100.0 >= max(10.0, 0.25 * busy)
    lead, end = _job_edges(med, dipping, _job_end(series, med, dt, lo, n_bins))
    if end < n_bins:  # the recording outlived the job: its idle tail is no GPU time of the job's
        active[:, end:] = False
        total = float(active.sum() * dt)
    ids = series.ids
    buckets: list[Bucket] = []
    # lost GPUs: no reading from some point on while peers report
    last = np.where(seen, n_bins - 1 - valid[:, ::-1].argmax(axis=1), -1)
    peers_last = int(np.flatnonzero(peers_any).max()) if peers_any.any() else -1
    gone = [g for g in range(g_count) if g_count > 1 and seen[g] and peers_last - last[g] >= max(3, n_bins // 20)]
    gone_mask = np.zeros_like(valid)
    for g in gone:
        gone_mask[g, last[g] + 1:peers_last + 1] = True
    gone_mask &= active
    working = active & ~gone_mask
    # each cell's idle part (GPU-seconds), charged below once, in the docstring's precedence order
    room = np.where(valid, (100.0 - util) / 100.0, 1.0) * dt * active
    if gone:
        secs = float(_charge(room, busy / 100.0 * dt, gone_mask).sum())
        buckets.append(Bucket("lost_gpu", secs, names=[ids[g] for g in gone],
                              windows=[(float((last[g] + 1) * dt), float((peers_last + 1) * dt)) for g in gone],
                              detail=f"{len(gone)} GPU{'s' if len(gone) > 1 else ''} stopped reporting while "
                                     "peers worked"))
    in_lead = np.arange(n_bins) < lead
    warmup = float(_charge(room, drop * dt, working & in_lead[None, :]).sum())
    dipping[:lead] = False
    dipping[end:] = False
    fleet_secs = float(_charge(room, drop * dt, working & dipping[None, :]).sum())
    # a GPU whose shortfall comes in stretches (_sustained) loses its share of the fleet's shallow dips too: its
    # peers' median sits below the busy level because the GPUs swing, not because the counter jitters
    sustained = _sustained(util, med, valid) if g_count > 1 else np.zeros(g_count, dtype=bool)
    sustained[gone] = False  # a GPU that stopped reporting is priced as lost_gpu, its readings before as jitter
    shallow = ~dipping & (np.arange(n_bins) >= lead)
    jitter_fleet = float((drop * (working & ~sustained[:, None]).sum(axis=0) * dt)[shallow].sum())
    if fleet_secs > 0:
        start, length = true_runs(dipping)
        windows = [(float(s * dt), float((s + n) * dt)) for s, n in zip(start, length, strict=True)]
        buckets.append(Bucket("fleet_drops", fleet_secs, names=["all GPUs"] if g_count > 1 else [ids[0]],
                              windows=windows, detail=f"{len(windows)} drop{'s' if len(windows) != 1 else ''} of "
                              f"the GPUs' median below their busy level {busy:.0f}%"))
    # below peers: each GPU against the peers' median (capped at the busy level) at the same moments
    ref = np.minimum(np.where(np.isfinite(med), med, busy), busy)[None, :]
    deficit = np.where(valid, np.clip(ref - util, 0.0, None), 0.0) / 100.0 * dt
    deep_bin = deficit * 100.0 / dt >= max(10.0, 0.25 * busy)  # a drop of its own, as deep as a fleet drop
    kind_of, jitter = _below_peers(util, med, valid, deficit, deep_bin, busy, set(gone), sustained)
    deficit[sustained] += np.where(shallow, drop * dt, 0.0)[None, :]
    jitter += jitter_fleet
    own_drops = np.array([k == "gpu_drops" for k in kind_of])
    charged = np.where((own_drops & ~sustained)[:, None], deep_bin, np.array([k is not None for k in kind_of])[:, None])
    per_gpu = _charge(room, deficit, charged).sum(axis=1)
    deep = deep_bin[own_drops].any(axis=0)
    if own_drops.any() and not deep.any():  # swings too shallow for a drop of their own: the whole span
        deep = np.ones(n_bins, dtype=bool)
    del deficit, deep_bin, charged  # (G × bins each: not held through the device buckets)
    for kind, what in (("gpu_drops", "dropping below their peers on their own schedules"),
                       ("idle_gpu", "idle throughout while peers worked"),
                       ("underused_gpu", "below their peers at the same moments")):
        rows = [g for g in range(g_count) if kind_of[g] == kind]
        rows = rows if kind == "gpu_drops" else sorted(rows, key=lambda g: -per_gpu[g])
        secs = float(sum(per_gpu[g] for g in rows))
        if secs > 0:
            start, length = true_runs(deep) if kind == "gpu_drops" else ([0], [n_bins])
            buckets.append(Bucket(kind, secs, names=[ids[g] for g in rows],
                                  windows=[(float(a * dt), float((a + n) * dt)) for a, n in zip(start, length,
                                                                                               strict=True)],
                                  detail=f"{len(rows)} GPU{'s' if len(rows) > 1 else ''} {what}"))
    # a steady level far below what a fed GPU reads
    if busy < STEADY_FED_PCT:
        secs = float(_charge(room, (100.0 - busy) / 100.0 * dt, working).sum())
        buckets.append(Bucket("steady_idle", secs, names=["all GPUs"] if g_count > 1 else [ids[0]],
                              windows=[(0.0, float(n_bins * dt))],
                              detail=f"{'GPUs' if g_count > 1 else 'a GPU'} idle {100 - busy:.0f}% of the time even "
                                     f"at work: {'their' if g_count > 1 else 'its'} busy level is {busy:.0f}%"))
    del room
    limited = np.array([i in (clock_limited or {}) for i in ids], dtype=bool)
    estimated = _estimated_clock_rows(series, clock_limited or {})
    buckets += _device_buckets(series, util, valid, dt, lo, n_bins, limited, estimated)
    buckets += _estimated_clock_bucket(series, util, valid & working, dt, clock_limited or {}, estimated)
    for b in buckets:
        b.share = b.seconds / total
    floor = max(jitter / total, MIN_FLOOR)
    t0 = series.t0 + pd.Timedelta(seconds=lo) if series.t0 is not None else None
    return Accounting("gpu", total, merged_windows([b for b in buckets if b.seconds > 0], dt), floor,
                      f"the jitter of GPUs that no bucket flags, below the busy level {busy:.0f}% or their peers "
                      f"({jitter / total:.1%} of GPU time; at least {MIN_FLOOR:.0%})",
                      warmup_s=warmup, span_s=float(n_bins * dt), units=g_count, t0=t0, interval_s=dt,
                      busy_pct=float(busy), unit_names=list(series.ids),
                      unit_models=[series.models.get(i, "") for i in series.ids], after_end_s=float((n_bins - end) * dt))


def _at_rest(med: np.ndarray) -> bool:
    """Whether the GPUs' median utilization (%) over an edge of the job reads idle at its median bin (bins without
    a reading say nothing either way)."""
    return not np.isfinite(med).any() or float(np.nanmedian(med)) <= IDLE_PCT


def _level_spikes(med: np.ndarray, dipping: np.ndarray, idle: np.ndarray, lead: int, last: int) -> int:
    """The polls of the start `lead`..`lead + last` at the work's level (not dipping) with an idle poll after them
    in it: the work reached its level and fell back to rest (a ramp into the work, at level then dipping, is none)."""
    at_level = (np.isfinite(med) & ~dipping)[lead:lead + last + 1]
    rest = np.flatnonzero(idle[lead:lead + last + 1])
    return int(at_level[:rest[-1]].sum()) if len(rest) else 0


def _charge(room: np.ndarray, claim, where: np.ndarray) -> np.ndarray:
    """Charge `claim` (GPU-seconds per cell, broadcast to `room`'s G × bins) on the cells `where`, each at most what
    the cell has left in `room`, which is reduced in place: no cell is charged twice. The charge per cell."""
    got = np.where(where, np.minimum(claim, room), 0.0)
    room -= got
    return got


def _below_peers(util, med, valid, deficit, deep_bin, busy: float, gone: set,
                 sustained: np.ndarray) -> tuple[list, float]:
    """Per GPU, the bucket its deficit against its peers goes to (`idle_gpu`, `underused_gpu`, `gpu_drops` for its
    deep drops only — all of it when its shortfall is `sustained` (_sustained) — None: jitter), and the jitter
    (GPU-seconds) of the GPUs no bucket flags."""
    g_count = len(util)
    p95 = row_percentile(util, valid, 95)
    below = _significantly_below(util, med, valid)
    d_own = np.add.reduce(deficit, axis=1, where=deep_bin, initial=0.0)
    d_rest = np.add.reduce(deficit, axis=1, where=~deep_bin, initial=0.0)
    n_own = deep_bin.sum(axis=1)
    any_valid = valid.any(axis=1)
    kinds: list[str | None] = []
    jitter = 0.0
    for g in range(g_count):  # scalar bookkeeping only: the row sums above hold the work
        kind = None
        if g_count < 2 or g in gone or not any_valid[g]:
            pass
        elif p95[g] <= IDLE_PCT and busy > 2 * IDLE_PCT:
            kind = "idle_gpu"
        elif below[g]:
            kind = "underused_gpu"
        elif sustained[g]:  # idle stretches recurring on its own schedule: lost time, not the counter's jitter
            kind = "gpu_drops"
        else:  # a drop of its own is lost time; the shallow rest is the GPU's jitter
            jitter += float(d_rest[g])
            if n_own[g] >= 2:
                kind = "gpu_drops"
            else:
                jitter += float(d_own[g])
        kinds.append(kind)
    return kinds, jitter


def _sustained(u: np.ndarray, med: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Per GPU (rows of `u`, G × bins): its shortfall against its peers' median comes in stretches — the lag-1
    autocorrelation of the signs of (median − utilization) about their own median, over consecutive polls, is above
    what independent polls reach (one-sided, z = r·√n against N(0, 1) at SUSTAINED_ALPHA, Šidák-corrected over the
    GPUs tested: 8 GPUs, z > 2.96; n ≥ 12 pairs; a runs test).
    The counter's jitter around a shared level is independent from poll to poll (the healthy Megatron-LM#1415 run:
    |z| < 2 on all 8 H100s); a GPU that swings on its own schedule (MegEngine/Models#2 at 100 ms polls: z 3.3-13 on
    6 of 8) idles for stretches longer than a poll, which is lost time however shallow. Signs about the GPU's own median,
    so neither one long stall (priced as a drop of its own) nor a steady offset from its peers decides it; O(G·bins),
    tested only on the GPUs at least MIN_FLOOR short. A GPU short of its peers by under MIN_FLOOR of its time on average
    is left to the jitter (a loss below run-to-run repeatability: a GPU at 99-100% whose 99s come in runs)."""
    d = np.where(ok & np.isfinite(med)[None, :], med[None, :] - u, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        short = np.nanmean(np.clip(d, 0.0, None), axis=1) / 100.0
        out = np.zeros(len(u), dtype=bool)
        rows = np.flatnonzero(short >= MIN_FLOOR)  # the rest is jitter whatever its order: not tested
        d = d[rows]
        center = np.nanmedian(d, axis=1, keepdims=True)
    sign = np.nan_to_num(np.sign(d - center))  # NaN (no reading) -> 0: no pair through a gap counts
    n = (np.isfinite(d[:, :-1]) & np.isfinite(d[:, 1:])).sum(axis=1)
    num = np.einsum("ij,ij->i", sign[:, :-1], sign[:, 1:])
    den = np.einsum("ij,ij->i", sign, sign)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(den > 0, num / den, 0.0) * np.sqrt(n)
    z_crit = NormalDist().inv_cdf((1 - SUSTAINED_ALPHA) ** (1 / max(len(rows), 1)))
    out[rows] = (n >= 12) & (z > z_crit)
    return out


def _significantly_below(u: np.ndarray, med: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Per GPU (rows of `u`, G × bins): below its peers' median by >= 10 points on average, in >= 2/3 of the polls
    where it reports (and at least 3 of them)."""
    m = ok & np.isfinite(med)[None, :]
    n = m.sum(axis=1)
    diff = np.where(m, med[None, :] - u, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = diff.sum(axis=1) / n
        share = (m & (diff > 0)).sum(axis=1) / n
    return (n >= 3) & (mean >= 10.0) & (share >= 2 / 3)


def _device_buckets(series: GpuSeries, util: np.ndarray, valid: np.ndarray, dt: float, lo: float,
                    n_bins: int, limited: np.ndarray, estimated: list[int] = ()) -> list[Bucket]:
    """Busy-waiting (utilization high at low power) and slow clocks at work, against the same GPU's own work.
    A clock under SLOW_CLOCK of the working one is slow whatever held it (DVFS alone costs less); on the GPUs a
    limiter test named (`limited`, per GPU) every busy poll below the working clock is: the limiter's cost. The
    rows `estimated` (limiter-named, no SM clock: _estimated_clock_bucket charges them) are no busy-waiting: their
    low power is the limiter's."""
    out = []
    taken = np.zeros_like(valid)  # polls already counted as a slow clock: a capped GPU draws little power too
    taken[list(estimated)] = True
    for col, kind in (("sm_clock_mhz", "slow_clock"), ("power_w", "busy_wait")):
        if col not in series.values or not np.isfinite(series.values[col]).any():
            continue
        x = series.grid_means(col, dt, lo, n_bins)  # float32: the percentiles below upcast what they compute
        busy = valid & (util >= SPIN_UTIL) & np.isfinite(x) & (x > 0)
        # what a GPU draws / clocks at work: its own 90th percentile while busy, or its part's median of theirs
        # when that is higher (a GPU capped or spinning all along never shows its own working level)
        own = np.where(busy.sum(1) >= 5, row_percentile(x, busy, 90), np.nan)
        peers = part_values(own, series.parts(), np.median)  # of the same part: clock and power are its physics
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = seen = np.fmax(own, peers)  # NaN only when both are
            lim = series.values.get("power_limit_w") if kind == "busy_wait" and len(series) > 1 else None
            if lim is not None and np.isfinite(lim).any():  # (per GPU, its samples' median limit: no grid)
                ref = np.fmax(ref, WORK_POWER_FLOOR * series.quantiles("power_limit_w", ("median",), lim > 0)[0])
        counted = busy.sum(1) >= 5
        if kind == "slow_clock":
            pinned, stock = _at_power_limit(series, dt, lo, n_bins, stock=limited.any())
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = x / ref[:, None]
            if kind == "slow_clock":  # or the clock it held at work for a few polls (gpu_limits.sustained_peak)
                held = x / sustained_peak(x, busy)[:, None]
                ratio = np.where(busy & ~pinned & (held < ratio), held, ratio)
        ratio[~(ref > 0)] = 1.0
        if kind == "busy_wait":
            line = SPIN_POWER
        else:  # a limiter-named GPU drawing at an unlowered limit is at the limit's trade, like any other GPU
            line = np.where(limited[:, None] & ~stock, 1.0, SLOW_CLOCK)
        low = busy & (ratio < line) & ~taken & counted[:, None]
        taken |= low
        named = low.sum(1) >= 3
        # what the GPU did not do: the share of work missing from its busy polls (in place: one G × bins array)
        np.subtract(1.0, ratio, out=ratio)
        ratio *= util
        ratio /= 100.0
        missing = np.add.reduce(ratio, axis=1, where=low, initial=0.0) * dt
        secs = float(sum(missing[named].tolist(), 0.0))
        names = [series.ids[g] for g in np.flatnonzero(named)]
        steps_on = low[named].any(0)
        if secs > 0:
            start, length = true_runs(steps_on)
            order = np.argsort(-length)[:MAX_WINDOWS]
            floored = " or a quarter of its limit" if (ref[named] > np.nan_to_num(seen[named])).any() else ""
            many = named.sum() > 1
            what = (f"spinning while {'they wait' if many else 'it waits'} (≥ 90% utilization at under half the "
                    f"power {'each' if many else 'it'} draws at work{floored}: a kernel polling, not work)"
                    if kind == "busy_wait"
                    else f"busy below the SM clock {'they sustain' if many else 'it sustains'} at work, held "
                    "down by a limiter (throttle reasons, heat or a power cap)" if limited[named].all()
                    else f"busy at under {SLOW_CLOCK:.0%} of the SM clock the same GPU reaches at work"
                    + (" or held down by a limiter" if limited[named].any() else ""))
            out.append(Bucket(kind, secs, names=names,
                              windows=[(float(start[i] * dt), float((start[i] + length[i]) * dt)) for i in order],
                              detail=f"{len(names)} GPU{'s' if len(names) > 1 else ''} {what}"))
    return out


def _estimated_clock_rows(series: GpuSeries, clock_limited: Mapping[str, float]) -> list[int]:
    """The rows of the limiter-named GPUs with a cost (`clock_limited`) and no SM clock recorded."""
    col = series.values.get("sm_clock_mhz")
    has_clock = series.counts(np.isfinite(col)) > 0 if col is not None else np.zeros(len(series), dtype=bool)
    return [g for g, i in enumerate(series.ids) if clock_limited.get(i, 0.0) > 0 and not has_clock[g]]


def _estimated_clock_bucket(series: GpuSeries, util: np.ndarray, valid: np.ndarray, dt: float,
                            clock_limited: Mapping[str, float], rows: list[int]) -> list[Bucket]:
    """The limiter-named GPUs without an SM clock recorded (`rows`: a power cap or a power fall read by DVFS
    physics, analysis.gpu_limits): their busy GPU-seconds × the share the limiter costs (`clock_limited`), an
    estimate."""
    if not rows:
        return []
    busy_s = np.add.reduce(np.where(valid[rows], util[rows], 0.0), axis=1) / 100.0 * dt
    cost = np.array([clock_limited[series.ids[g]] for g in rows])
    names = [series.ids[g] for g in rows]
    many = len(rows) > 1
    return [Bucket("slow_clock", float((busy_s * cost).sum()), names=names,
                   windows=[(0.0, float(valid.shape[1] * dt))],
                   detail=f"{len(rows)} GPU{'s' if many else ''} held down by a limiter (no SM clock recorded: "
                          "the clock it costs estimated from the power, ~ clock³)")]


def _at_power_limit(series: GpuSeries, dt: float, lo: float, n_bins: int,
                    stock: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """G × bins twice, from one pass over the power grids: drawing within 5% of the enforced power limit (there a
    lower clock is the limit's trade), and (with `stock`, else all False) that at a limit not lowered (within 5% of
    the one its part runs at or its default: sku_limit_refs, as the cap test reads it) — a LABELED SYNTHETIC GPU
    whose hw_slowdown cost 12 GPU-s in 30 polls had been charged 62 GPU-s with the clock it gives up at its stock
    700 W limit in heavy phases (tests/analysis/test_limiter_accounting.py)."""
    none = np.zeros((len(series), n_bins), dtype=bool)
    if not {"power_w", "power_limit_w"} <= set(series.values):
        return none, none
    p, lim = (series.grid_means(c, dt, lo, n_bins).astype(np.float64) for c in ("power_w", "power_limit_w"))
    with np.errstate(invalid="ignore"):
        at = np.isfinite(p) & np.isfinite(lim) & (p >= POWER_PINNED * lim)
        if not stock:
            return at, none
        refs = sku_limit_refs(series, {c: c in series.values and bool(np.isfinite(series.values[c]).any())
                                       for c in ("power_limit_w", "power_default_limit_w")})
        return at, at & (lim >= POWER_PINNED * refs[:, None])
