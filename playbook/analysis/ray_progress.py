"""Ray Data's progress snapshots (readers/ray_progress_text.py) → findings for `playbook diagnose`. A snapshot holds, at
one moment, how many of the GPUs Ray Data may use were running, and per operator the blocks queued at its input. Where
the queue sits says which side of a GPU stage is the bottleneck — the physics of any producer-consumer pipeline:

  queued at the GPU stage,       work waits for the GPU stage while GPUs the executor may use sit idle: the stage is
  GPUs idle                      too narrow (its actor pool does not grow: actors pending, a concurrency cap) or its
                                 producer ran ahead of it (no backpressure) — pipeline_imbalance, the idle GPUs' share
                                 of the GPUs at the snapshots that show it
  nothing queued at the GPU      the GPU stage's actors idle (util below 1, `idle=` actors) with nothing to take while
  stage, its actors idle         an upstream operator still works: the producer is the bottleneck — data_starvation,
                                 the actors' idle share (only where the printer states their util or idle count)

GPUs requested and pending (the resource line's `(pending: 3 GPU)`, or a GPU stage's pending actors at its running
actors' GPUs each) are not idle for want of width: the stage asked for them, its actors are starting (a run's first
snapshot) or the cluster has none to give. A snapshot of all GPUs busy with work queued is a GPU-bound pipeline: nothing is lost there and nothing is found. The
rule must hold at half the snapshots that show GPUs or more (a moment is not a run); the share is averaged over all
of them.
"""

from __future__ import annotations

from collections.abc import Callable

from playbook.knowledge import ids as cause_ids

MIN_IDLE = 0.05  # GPUs idle below 5% of those the executor may use: rounding (a pending actor starting), not a loss


def findings(source: str, snapshots: list[dict], out: list[dict], level: Callable[[float], str | None]) -> None:
    """Append the findings of one file's progress snapshots (module docstring) to `out`."""
    shown = [s for s in snapshots if s.get("gpu_limit") and any(o["gpu"] > 0 for o in s["operators"])]
    if not shown:
        return
    narrow, starved = [], []
    for s in shown:
        gpu_ops = [o for o in s["operators"] if o["gpu"] > 0]
        idle = max(0.0, 1.0 - (s["gpu_used"] + _pending(s, gpu_ops)) / s["gpu_limit"])
        waiting = [o for o in gpu_ops if o["queued"] > 0]
        if waiting and idle >= MIN_IDLE:
            narrow.append((s, waiting[0], idle))
            continue
        first = s["operators"].index(gpu_ops[0])
        upstream = [o for o in s["operators"][:first] if o["tasks"] > 0 or (o["done"] or 0) < (o["total"] or 0)]
        spare = [1.0 - o["util"] for o in gpu_ops if "util" in o]
        if not waiting and upstream and spare and (share := sum(spare) / len(spare)) >= MIN_IDLE:
            starved.append((s, gpu_ops[0], share, upstream[-1]))
    if len(narrow) * 2 >= len(shown) and (lvl := level(share := sum(x[2] for x in narrow) / len(shown))):
        s, op, idle = narrow[-1]
        producers = [o for o in s["operators"] if o["gpu"] <= 0]
        done = [o for o in producers if o["total"] and o["done"] == o["total"]]
        ahead = (f"; its producer {done[-1]['name']} has finished ({done[-1]['done']:,}/{done[-1]['total']:,}): it "
                 "ran ahead, unchecked by backpressure" if done else "")
        pend = f" ({s['gpu_pending']:g} more pending)" if s["gpu_pending"] else ""
        size = f" ({op['queued_size']})" if op["queued_size"] else ""
        out.append({"hypothesis": cause_ids.PIPELINE_IMBALANCE, "level": lvl, "share": share, "evidence": (
            f"Ray Data progress in {source}: the GPU stage {op['name']} has {op['queued']:,} blocks{size} queued at "
            f"its input while {s['gpu_used']:g} of the {s['gpu_limit']:g} GPUs the executor may use run{pend}"
            f"{ahead} ({len(narrow)} of {len(shown)} snapshot(s) showing GPUs): the GPU stage is the bottleneck and "
            "too narrow for its GPUs — scale its actor pool (map_batches concurrency up to the GPUs), and let "
            "backpressure hold the producer to what the GPU stage takes")})
    elif len(starved) * 2 >= len(shown) and (lvl := level(share := sum(x[2] for x in starved) / len(shown))):
        s, op, _, up = starved[-1]
        out.append({"hypothesis": cause_ids.DATA_STARVATION, "level": lvl, "share": share, "evidence": (
            f"Ray Data progress in {source}: the GPU stage {op['name']} has nothing queued and its actors are idle "
            f"{share:.0%} of the time while {up['name']} still works ({len(starved)} of {len(shown)} snapshot(s) "
            "showing GPUs): the producer does not keep the GPUs fed — give the upstream operators more CPUs or "
            "concurrency, or move decoding off the critical path")})


def _pending(s: dict, gpu_ops: list[dict]) -> float:
    """The GPUs a snapshot's GPU stages asked for and wait on: the resource line's pending GPUs, else their pending
    actors at the GPUs each running actor holds (the older bars print no pending resources)."""
    actors = sum(o.get("pending", 0.0) * o["gpu"] / o["running"] for o in gpu_ops if o.get("running", 0.0) > 0)
    return max(s.get("gpu_pending") or 0.0, actors)
