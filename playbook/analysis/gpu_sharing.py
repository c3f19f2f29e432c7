"""Who else holds a GPU: what the processes an input lists on each GPU (nvidia-smi's Processes section, gpustat's
`user(memM)`; schema.GPU_SHARING), its MIG slices and compute mode mean for the job's GPU time.

- Another owner's GPU: a GPU idle throughout whose memory is held, for at least OWNER_SHARE of what its processes
  hold, by owners (gpustat's users, else the programs nvidia-smi names: a job's ranks are processes of their own,
  one program) that hold nothing on any working GPU of the recording, is another user's or job's, not this job's:
  left out of the job like an unused GPU (analysis.job_members.job_gpus). The job's own empty contexts on it (0 MiB:
  a library touching every visible device) do not make it the job's.
- Memory held by the dead: a process the driver lists under no name it can resolve (`Unknown Error`, `[Not Found]`)
  holding memory, beside processes it does name on the host, is what a crashed or killed run left (a zombie, an
  orphaned DataLoader worker): the GPU is not free for the next job, whatever it shows. Where no process of the host
  is named (nvidia-smi inside a container: host PIDs its /proc does not hold), the names say nothing of death.
- Memory held while idle: at a moment the GPU is idle (≤ job_members.IDLE_PCT) with at least HELD_SHARE of its
  memory allocated: a process holds memory and does no work at that moment — a leftover, another user's idle
  process, or the job between two phases (one moment cannot tell them apart).
- MIG: a MIG-enabled GPU's utilization is not reported (N/A): its slices (memory per slice) are what the input says.
- Exclusive-process mode (`E. Process`): one context at a time — busy with another's context, the GPU is not
  available to a job at all (CUDA error "all CUDA-capable devices are busy or unavailable").
"""

from __future__ import annotations

import math
import re

import numpy as np

from playbook.analysis.job_members import IDLE_PCT
from playbook.analysis.series import GpuSeries
from playbook.model import schema

OWNER_SHARE = 0.5  # of a GPU's listed process memory held by others: the GPU is theirs
HELD_SHARE = 0.5  # of a GPU's memory allocated while it is idle: memory held without work
UNRESOLVED = ("Unknown Error", "[Not Found]")  # the names nvidia-smi gives a process it cannot resolve


def per_gpu(bundle: schema.Bundle) -> dict[str, dict]:
    """{GPU id: {"processes": [...], "mig": [...], "mode": str | None}} from every input's sharing summary."""
    out: dict[str, dict] = {}

    def entry(host: str, gpu) -> dict:
        return out.setdefault(schema.gpu_id(host, gpu), {"processes": [], "mig": [], "mode": None})

    for _, section in schema.meta_sections(bundle.meta, schema.GPU_SHARING):
        host = str(section.get("host", ""))
        for row in section.get("processes") or []:  # a row's own host first (gpustat: several hosts in a file)
            entry(str(row.get("host") or host), row["gpu"])["processes"].append(row)
        for row in section.get("mig") or []:
            entry(host, row["gpu"])["mig"].append(row)
        for gpu, mode in (section.get("modes") or {}).items():
            entry(host, int(gpu))["mode"] = mode
    return out


def owner(row: dict) -> str:
    """Who a process row belongs to: gpustat's user, else its process id."""
    return str(row.get("user") or row.get("pid") or "?")


def party(row: dict) -> str:
    """Whose job a process row may be told apart by: gpustat's user, else the program nvidia-smi names — not its
    process id (every rank of a data-parallel job is a process of its own: a rank's GPU is not another's)."""
    return str(row.get("user") or row.get("name") or row.get("pid") or "?")


def _held(rows: list[dict], key=owner) -> dict[str, float]:
    """Memory (MiB) each owner (`key`) holds among `rows` (a row without a figure counts 0)."""
    out: dict[str, float] = {}
    for row in rows:
        out[key(row)] = out.get(key(row), 0.0) + float(row.get("mem_mib") or 0.0)
    return out


def other_owners(series: GpuSeries, sharing: dict[str, dict]) -> dict[str, str]:
    """{GPU id: why} for the GPUs of `series` idle throughout whose listed memory is held, OWNER_SHARE or more, by
    owners holding nothing on a working GPU of `series` (module docstring); {} when no working GPU lists its
    processes (then nothing tells the job's owners apart)."""
    if not sharing or not len(series) or "util_pct" not in series.values:
        return {}
    u95 = series.quantiles("util_pct", (95,), keep=np.isfinite(series.values["util_pct"]))[0]
    idle = {gid: bool(np.isfinite(u) and u <= IDLE_PCT) for gid, u in zip(series.ids, u95, strict=True)}
    mine: set[str] = set()
    for gid, is_idle in idle.items():
        if not is_idle and gid in sharing:
            mine |= {o for o, mib in _held(sharing[gid]["processes"], party).items() if mib > 0}
    if not mine:
        return {}
    out: dict[str, str] = {}
    for gid, is_idle in idle.items():
        held = _held(sharing.get(gid, {}).get("processes") or [], party)
        total = sum(held.values())
        others = {o: mib for o, mib in held.items() if o not in mine}
        if is_idle and total > 0 and sum(others.values()) >= OWNER_SHARE * total:
            named = ", ".join(f"{o} {mib:.0f} MiB" for o, mib in sorted(others.items(), key=lambda x: -x[1])[:3])
            out[gid] = f"its memory held by another owner's process ({named}), none of whom holds memory on the " \
                       "job's working GPUs"
    return out


def dead_holders(sharing: dict[str, dict]) -> list[dict]:
    """[{gpu, pid, mem_mib, name, alone}] for the processes listed under an unresolved name (UNRESOLVED) that hold
    memory (`alone`: no process of their GPU is named): what an exited run left holding the GPU — on a host where nvidia-smi names some other process. Where it
    names none, the names are unresolved for the whole view, not for a dead process: nvidia-smi inside a container
    is given host PIDs its /proc does not hold, and lists the job's own live processes as `[Not Found]`."""
    named_hosts = {gid.rsplit(":", 1)[0] for gid, entry in sharing.items() for row in entry["processes"]
                   if row.get("name") and row.get("name") not in UNRESOLVED}
    return [{"gpu": gid, "pid": row.get("pid"), "mem_mib": row.get("mem_mib"), "name": row.get("name"),
             "alone": all(r.get("name") in UNRESOLVED for r in entry["processes"])}
            for gid, entry in sharing.items() for row in entry["processes"]
            if row.get("name") in UNRESOLVED and (row.get("mem_mib") or 0) > 0
            and gid.rsplit(":", 1)[0] in named_hosts]


def stated_total_mib(model: str) -> float:
    """The memory size a product name states ("Tesla V100-SXM2-16GB", "NVIDIA H100 80GB HBM3", "A100-SXM4-40GB":
    NVIDIA's GB there are GiB), in MiB; NaN where the name states none ("NVIDIA H200", "Tesla T4")."""
    found = re.search(r"(?<![\d.])(\d{1,3})\s*G(?:i?B)\b", model or "", re.IGNORECASE)
    return float(found.group(1)) * 1024.0 if found else math.nan


def held_idle(series: GpuSeries) -> list[dict]:
    """[{gpu, util_pct, mem_mib, mem_swing_mib, total_mib, share, polls}] for the GPUs idle (every poll ≤ IDLE_PCT) holding
    HELD_SHARE or more of their memory at their idlest poll; the memory size from memory.total where recorded,
    else from the size the GPU's product name states (a dashboard's `modelName` label)."""
    if not len(series) or not {"util_pct", "mem_used_mib"} <= set(series.values):
        return []
    out = []
    for g, gid in enumerate(series.ids):
        a, b = series.offsets[g], series.offsets[g + 1]
        util, mem = (np.asarray(series.values[k][a:b], dtype=float) for k in ("util_pct", "mem_used_mib"))
        tot = np.asarray(series.values["mem_total_mib"][a:b], dtype=float) if "mem_total_mib" in series.values \
            else np.full(b - a, np.nan)
        tot = np.where(np.isfinite(tot), tot, stated_total_mib(series.models.get(gid, "")))
        ok = np.isfinite(util) & np.isfinite(mem) & np.isfinite(tot) & (tot > 0)
        if not ok.any() or np.nanmax(util[ok]) > IDLE_PCT:
            continue
        share = float(np.min(mem[ok] / tot[ok]))
        if share >= HELD_SHARE:
            out.append({"gpu": gid, "util_pct": float(np.max(util[ok])), "mem_mib": float(np.min(mem[ok])),
                        "mem_swing_mib": float(np.ptp(mem[ok])), "total_mib": float(np.max(tot[ok])),
                        "share": share, "polls": int(ok.sum())})
    return out


def notes(bundle: schema.Bundle) -> list[str]:
    """One line per GPU the inputs show shared: several owners, MIG slices, a dead holder, exclusive mode."""
    out = []
    exclusive: dict[str, list[str]] = {}
    sharing = per_gpu(bundle)
    for gid, entry in sharing.items():
        held = _held(entry["processes"])
        if len(held) > 1:
            who = "users" if any(r.get("user") for r in entry["processes"]) else "processes"
            parts = ", ".join(f"{o} {mib:.0f} MiB" for o, mib in sorted(held.items(), key=lambda x: -x[1])[:6])
            out.append(f"{gid} is held by {len(held)} {who} ({parts}): its utilization is theirs together")
        if entry["mig"]:
            parts = ", ".join(f"GI {s['gi']} {s['mem_used_mib']:.0f}/{s['mem_total_mib']:.0f} MiB" for s in entry["mig"][:7])
            out.append(f"{gid} is cut into {len(entry['mig'])} MIG slices ({parts}); nvidia-smi reports no "
                       "utilization for a MIG-enabled GPU: how busy each slice is needs DCGM's per-instance "
                       "profiling metrics (DCGM_FI_PROF_GR_ENGINE_ACTIVE)")
        if entry["mode"] in ("E. Process", "E. Thread"):
            exclusive.setdefault(entry["mode"], []).append(gid)
    for mode, gids in exclusive.items():
        out.append(f"{', '.join(gids[:8])}{' …' if len(gids) > 8 else ''}: exclusive compute mode ({mode}): while "
                   "another process's context is on one, a job cannot open its own ('all CUDA-capable devices are "
                   "busy or unavailable')")
    for d in dead_holders(sharing):
        out.append(f"{d['gpu']}: process {d['pid']} listed as {d['name']!r} holds {d['mem_mib']:.0f} MiB: a process "
                   "that exited (a zombie or an orphaned worker of a crashed or killed run) still holds its memory")
    return out
