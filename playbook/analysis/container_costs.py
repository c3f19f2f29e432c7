"""What a container's limits cost a training job (readers/container_limits: cgroup cpu.stat counters, /dev/shm's
size) → findings for `playbook diagnose`.

CPU quota. The CFS bandwidth controller gives a cgroup `quota` CPU-time per period (100 ms by default) and stops
every thread in it once that is spent, until the next period. `nr_throttled / nr_periods` is the share of the
periods the group wanted to run in that ended with it stopped; `throttled` seconds against `usage` seconds is the
CPU time it was kept waiting against the time it got. A training job's host side — the DataLoader workers, the
thread that launches kernels — stops with it, and the GPU waits. The share is read against the threshold the
Kubernetes mixin's CPUThrottlingHigh alert uses (25 % of periods: high) and 5 % (moderate: a quota that bites in one
period of twenty); below 5 % the quota is called no cause (a burst now and then), and none at all is said so.

Shared memory. PyTorch's DataLoader workers hand every batch to the training process through /dev/shm; with W
workers and a prefetch factor of P (2 by default) up to W·P batches are there at once. Docker gives a container 64
MB unless `--shm-size` (or `--ipc=host`) says otherwise, fewer than two batches of 224 px images at batch size 64
(38.5 MB each in float32): a worker that cannot map its batch dies of SIGBUS ("Bus error", "insufficient shared
memory (shm)"). A /dev/shm of 128 MiB or less is high, under 1 GiB moderate; one 90 % full or more is high too.

Both are limits, not a measured loss: the diagnosis weighs them against the GPUs measured beside them
(diagnosis.analyzers.summaries._limits_against_gpus: no cause beside GPUs at a fed loop's level, at most moderate
beside step times alone).
"""

from __future__ import annotations

from typing import Any

from playbook.knowledge import ids as cause_ids
from playbook.model.schema import meta_sections
from playbook.readers.container_limits import META_PREFIX

THROTTLED_HIGH = 0.25  # share of CFS periods throttled: the kubernetes-mixin CPUThrottlingHigh alert's threshold
THROTTLED_MODERATE = 0.05
SHM_SMALL_MIB = 128.0  # Docker's 64 MB default and its like: fewer batches than a loader keeps in flight
SHM_MODEST_MIB = 1024.0
SHM_FULL = 0.90
_QUOTA_NEXT = ("read the quota beside the counters (cgroup v2: cat cpu.max; v1: cpu.cfs_quota_us / cpu.cfs_period_us; "
               "Kubernetes: the pod's resources.limits.cpu) and time next(DataLoader) per step; raise or remove the "
               "CPU limit (keep the request), or run no more loader workers than the quota has CPUs")
_SHM_NEXT = ("run the job with a larger /dev/shm (docker run --shm-size=8g or --ipc=host; Kubernetes: an emptyDir "
             "with medium: Memory mounted on /dev/shm) and check the workers' exit for 'Bus error'")


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds < 100 else f"{seconds:,.0f} s"


def _size(mib: float) -> str:
    return f"{mib / 1024:.3g} GiB" if mib >= 1024 else f"{mib:.3g} MiB"


def quota_finding(group: dict) -> tuple[dict | None, str | None]:
    """(finding, vouched statement) of one cgroup's counters: a finding when the quota stopped it in ≥ 5 % of its
    periods, a statement of health when never (or in under 5 %), neither without periods."""
    periods, throttled = int(group.get("periods") or 0), int(group.get("throttled") or 0)
    if periods <= 0:
        return None, None
    share = throttled / periods
    name = group.get("name") or "the cgroup"
    told = f"{name}: throttled in {throttled:,} of {periods:,} CFS periods ({share:.0%})"
    if group.get("throttled_s") is not None:
        told += f", {_fmt_s(group['throttled_s'])} stopped"
        if group.get("usage_s"):
            asked = group["usage_s"] + group["throttled_s"]
            told += (f" against {_fmt_s(group['usage_s'])} of CPU used (kept waiting "
                     f"{group['throttled_s'] / asked:.0%} of the CPU time it sought)")
    if share < THROTTLED_MODERATE:
        return None, (f"{told}: its CPU quota {'never stopped it' if throttled == 0 else 'seldom stopped it'}, "
                      "no CPU starvation from the container's limit")
    level = "high" if share >= THROTTLED_HIGH else "moderate"
    return {"hypothesis": cause_ids.DATA_STARVATION, "level": level, "anomaly": level, "hosts": [name],
            "next": _QUOTA_NEXT, "told": told,
            "evidence": f"{told}: the CFS quota stops every thread in the cgroup — DataLoader workers and the launch "
                        "thread with them — until the next period, and the GPU waits for the host"}, None


def shm_finding(shm: dict) -> dict | None:
    """A finding when /dev/shm is too small for a DataLoader's batches in flight or nearly full (module docstring)."""
    size, used = float(shm.get("size_mib") or 0.0), float(shm.get("used_mib") or 0.0)
    if size <= 0:
        return None
    full = used / size >= SHM_FULL
    if size > SHM_MODEST_MIB and not full:
        return None
    level = "high" if size <= SHM_SMALL_MIB or full else "moderate"
    what = (f"/dev/shm is {_size(size)} ({_size(used)} used)" + (" — nearly full" if full else "")
            + (" — Docker's 64 MB default" if 60 <= size <= 64.5 else ""))
    return {"hypothesis": cause_ids.MEMORY_PRESSURE, "level": level, "anomaly": level, "next": _SHM_NEXT, "told": what,
            "evidence": f"{what}: DataLoader workers pass every batch through it (num_workers × prefetch_factor "
                        "batches at once; one batch of 64 images at 224 px is 38.5 MB in float32); a worker that "
                        "cannot map its batch dies of SIGBUS ('Bus error ... insufficient shared memory (shm)')"}


def _nested_once(findings: list[dict]) -> list[dict]:
    """A cgroup inside another (a container's scope under its pod's slice: its path continues the other's) is the
    same quota's throttling seen twice: one finding, the outermost's, naming both and telling both counters."""
    out: list[dict] = []
    for f in sorted(findings, key=lambda f: len(f["hosts"][0])):
        outer = next((o for o in out if f["hosts"][0].startswith(o["hosts"][0].rstrip("/") + "/")), None)
        if outer is None:
            out.append(dict(f))
            continue
        outer["hosts"] = outer["hosts"] + f["hosts"]
        outer["evidence"] += "; inside it " + f["told"]
        outer["told"] += "; inside it " + f["told"]
    return out


def summarize(bundle: Any) -> dict | None:
    """{cgroups: [...], shm: [...], findings: [...], vouched: [...]}; None without container figures."""
    sections = meta_sections(getattr(bundle, "meta", None), META_PREFIX)
    if not sections:
        return None
    groups = [g for _, s in sections for g in s.get("cgroups") or [] if isinstance(g, dict)]
    shms = [m for _, s in sections for m in s.get("shm") or [] if isinstance(m, dict)]
    findings, vouched = [], []
    for g in groups:
        found, fine = quota_finding(g)
        findings += [found] if found else []
        vouched += [fine] if fine else []
    findings = _nested_once(findings)
    findings += [f for m in shms if (f := shm_finding(m))]
    return {"cgroups": groups, "shm": shms, "findings": findings, "vouched": vouched, "warnings": []}
