"""Which GPUs of a recording belong to the job: a shared host's other GPUs — idle throughout, holding little memory
— are neither its peers nor its time; a GPU a fault event names, or one holding what the working GPUs hold, stays in.
For analysis.gpus and the accounting."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from playbook.analysis.series import GpuSeries
from playbook.knowledge import ids as cause_ids
from playbook.knowledge.causes import cause
from playbook.model import schema

IDLE_PCT = 5.0  # idle throughout: 95% of polls at or below this utilization
UNUSED_MIB = 2048.0  # ... and never more memory than this: probably not part of the job


def job_gpus(series: GpuSeries, events: pd.DataFrame | None = None,
             others: Collection[str] = ()) -> tuple[GpuSeries, list[str]]:
    """The series without the GPUs idle throughout (95% of polls at or below IDLE_PCT) that never held UNUSED_MIB
    of memory — no process of this job on them: a shared host's other GPUs are neither its peers nor its time —
    unless all are, or a fault event in `events` names them (a failing GPU idles because it fails: see
    faulted_gpus), and the GPUs in `others` (another owner's, analysis.gpu_sharing.other_owners); and the ids left
    out. A series it returned is marked `job_only` (the one without leftovers is
    `series` itself, marked): asked again, it is returned as it is (at 2,048 GPUs the quantiles cost 0.4 s)."""
    if series.job_only or len(series) < 2 or "mem_used_mib" not in series.values:
        return series, []
    u95 = series.quantiles("util_pct", (95,), keep=np.isfinite(series.values["util_pct"]))[0]
    mem = series.quantiles("mem_used_mib", (100,), keep=np.isfinite(series.values["mem_used_mib"]))[0]
    unused = (u95 <= IDLE_PCT) & (mem < UNUSED_MIB) & ~holds_working_memory(mem, u95 <= IDLE_PCT)
    unused |= np.array([gid in others for gid in series.ids], dtype=bool)
    if unused.any() and events is not None:
        faulted = faulted_gpus(events)
        unused &= np.array([gid not in faulted and h not in faulted for gid, h in zip(series.ids, series.hosts,
                                                                                       strict=True)])
    if not unused.any() or unused.all():
        series.job_only = True
        return series, []
    kept = series.subset(list(np.flatnonzero(~unused)))
    kept.job_only = True
    return kept, [series.ids[g] for g in np.flatnonzero(unused)]


# An idle GPU holding at least this share of the memory the working GPUs hold (their median peak) holds what they
# hold — a rank of the same job that waits (data-parallel ranks carry one model: yolov5#2491's idle V100 holds 1059
# MiB beside the busy one's 1055, tests/data/eval/heldout14) — not another job's context on a shared host.
SAME_JOB_MEMORY_SHARE = 0.5


def holds_working_memory(mem: np.ndarray, idle: np.ndarray) -> np.ndarray:
    """Per GPU: idle, yet holding SAME_JOB_MEMORY_SHARE or more of the working GPUs' median peak memory (MiB)."""
    working = mem[~idle & np.isfinite(mem)]
    if not len(working):
        return np.zeros(len(mem), dtype=bool)
    with np.errstate(invalid="ignore"):
        return idle & (mem >= SAME_JOB_MEMORY_SHARE * float(np.median(working)))


# the events of a failing GPU (the hardware-fault cause's kinds; a job restart names no device)
FAULT_KINDS = tuple(k for k in cause(cause_ids.HARDWARE_FAULT).event_kinds if k != "restart")
_EVENT_GPU = r"(?i)\bgpu\s*#?(\d+)\b"  # the readers write a device's events as `gpu N: ...`


def faulted_gpus(events: pd.DataFrame) -> set[str]:
    """The GPU ids ("host:index") that an Xid, ECC or lost-GPU event names, and the hosts of such events that name
    no GPU (a kernel Xid names a PCI address: any GPU of that host may be the one)."""
    rows = events[events["kind"].astype(str).isin(FAULT_KINDS)] if len(events) else events
    if rows.empty:
        return set()
    index = rows["detail"].astype(str).str.extract(_EVENT_GPU)[0]
    hosts = rows["host"].astype(str)
    named = index.notna()
    return ({schema.gpu_id(h, int(i)) for h, i in zip(hosts[named], index[named], strict=True)}
            | set(hosts[~named]))
