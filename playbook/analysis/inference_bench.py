"""An inference benchmark's performance summary (readers/trtexec_summary.py) → the GPU time it lost and why, by what its
figures mean.

  The GPU's busy share: the queries' summed compute over the run's walltime (trtexec's Total GPU Compute Time over
      Total Host Walltime — "if this is significantly shorter ..., the GPU may be under-utilized because of host-side
      overheads or data transfers"); without the totals, throughput × mean compute time (queries per second × each
      query's seconds on the GPU — "if Throughput is significantly lower than the reciprocal of GPU Compute Time ...").
      The idle rest is the loss (accounting.bench_time prices it); the per-query gap is the walltime per query less
      its compute.
  Why the GPU waits, by which per-query time can fill the gap:
      copies in series → h2d_copy: the query's H2D + D2H copies (means) are at least COPY_FILL of the gap — each
      query's transfers run while its GPU work waits (the tool's own H2D / D2H-bound warning says so outright);
      the host's enqueue → launch_bound: the tool's enqueue-bound warning, or its rule read off the figures
      (enqueue median > ENQUEUE_RULE × compute median) — the host takes about as long to submit a query as the GPU
      takes to run it.
      Both can hold (a long enqueue beside long copies): the one whose time covers more of the gap leads — the
      copies' time, against the enqueue's excess over the compute (an enqueue shorter than the compute keeps the
      host ahead of the GPU however close the tool's 0.8 rule calls it) — the tool's own warning breaking a tie;
      the other stays a level lower where the lead is high, else is said in the lead's evidence.
  Healthy (vouched): the GPU computed at least 1 - MIN_FLOOR of the walltime — the tool's end-to-end latency of
      about twice the compute is then queries queued back to back ("includes the latency to wait for the completion
      of the previous query"), not idle GPU time, and its instability warning (a timing's coefficient of variance) is
      about clock stability, not a loss.
  Trace lines alone (TensorRT 7's `Average on N runs - GPU latency ... Host latency ... (end to end ...)`): no
      walltime, so no loss is priced; the facts are said (end to end ≈ 2 × GPU latency: queued queries).
"""

from __future__ import annotations

from playbook.analysis.accounting.buckets import MIN_FLOOR
from playbook.knowledge import ids

ENQUEUE_RULE = 0.8  # trtexec's own enqueueBoundReportingThreshold
COPY_FILL = 0.5  # copies that fill at least half of the per-query gap can be what the GPU waits for
HIGH_LOSS = 0.2  # a fifth of the walltime idle: the tool's "significantly shorter" beyond doubt


def _mean(run: dict, key: str) -> float | None:
    fig = run.get(key) or {}
    return fig.get("mean", fig.get("median"))


def busy(run: dict) -> tuple[float, float] | None:
    """(walltime ms, GPU compute ms) the run states — from its totals, else from its throughput and mean compute
    over one second of queries; None without either."""
    wall, comp = run.get("walltime_ms"), run.get("compute_total_ms")
    if wall and comp is not None and wall > 0:
        return float(wall), min(float(comp), float(wall))
    qps, mean = run.get("qps"), _mean(run, "compute")
    if qps and mean is not None and qps > 0:
        return 1000.0, min(1000.0, qps * mean)  # qps queries in one second, each `mean` ms on the GPU
    return None


def measured(bundle) -> bool:
    """Whether any benchmark run in `bundle` states its GPU's busy share (busy())."""
    from playbook.model import schema

    return any(isinstance(r, dict) and busy(r) is not None
               for _, s in schema.meta_sections(getattr(bundle, "meta", None), schema.SERVING)
               for r in s.get("trtexec") or [])


def queries(run: dict) -> float | None:
    """How many queries the run timed: total compute / mean compute (the tool's total is the mean × the count), else
    throughput × walltime — trtexec's throughput counts batch × queries on an implicit-batch engine (`--batch=N`)."""
    comp, mean = run.get("compute_total_ms"), _mean(run, "compute")
    if comp and mean:
        return comp / mean
    wall, qps = run.get("walltime_ms"), run.get("qps")
    return qps * wall / 1000.0 if wall and qps else None


def analyse(run: dict) -> dict:
    """{idle_share, gap_ms, copies_ms, enqueue_bound, copy_bound, stated} of one run (the keys it supports)."""
    out: dict = {}
    b = busy(run)
    if b is None:
        return out
    wall, comp = b
    out["idle_share"] = max(0.0, 1.0 - comp / wall)
    n = queries(run) if run.get("walltime_ms") else run.get("qps")
    per = (wall / n) if n else None
    mean = _mean(run, "compute")
    if per is not None and mean is not None:
        out["gap_ms"] = max(0.0, per - mean)
    copies = sum(v for v in (_mean(run, "h2d"), _mean(run, "d2h")) if v is not None)
    out["copies_ms"] = copies
    med = (run.get("compute") or {}).get("median", mean)
    enq = (run.get("enqueue") or {}).get("median", _mean(run, "enqueue"))
    stated = set(run.get("bound") or ())
    out["stated"] = sorted(stated)
    out["enqueue_bound"] = "enqueue" in stated or (enq is not None and med is not None and enq > ENQUEUE_RULE * med)
    gap = out.get("gap_ms")
    out["copy_bound"] = bool(stated & {"h2d", "d2h"}) or (copies > 0 and gap is not None and gap > 0
                                                          and copies >= COPY_FILL * gap)
    return out


def findings(runs: list[dict]) -> tuple[list[dict], list[str]]:
    """(findings, vouched): what each run's figures support (see the module docstring)."""
    found, vouched = [], []
    for run in runs:
        a = analyse(run)
        if "idle_share" not in a:
            continue
        share, gap = a["idle_share"], a.get("gap_ms")
        comp = run.get("compute_total_ms")
        said = (f"the GPU computed {comp / 1e3:.4g} s of the {run['walltime_ms'] / 1e3:.4g} s walltime"
                if comp is not None and run.get("walltime_ms") else
                f"{run['qps']:.4g} queries/s of {_mean(run, 'compute'):.4g} ms GPU compute each")
        said += f" ({1 - share:.1%} busy)"
        if share <= MIN_FLOOR:
            vouched.append(f"trtexec: {said}: the GPU waits for no query; end-to-end latency above the compute time "
                           "is queries queued back to back, not idle GPU time")
            continue
        per = f"; {gap:.3g} ms per query the GPU does not compute" if gap is not None else ""
        level = "high" if share >= HIGH_LOSS else "moderate"
        copies = (f"{_mean(run, 'h2d') or 0:.3g} ms H2D + {_mean(run, 'd2h') or 0:.3g} ms D2H per query")
        enq = _mean(run, "enqueue")
        cands = []
        if a["copy_bound"]:
            stated = bool(set(a["stated"]) & {"h2d", "d2h"})
            cands.append((a["copies_ms"], stated, {
                "hypothesis": ids.H2D_COPY, "level": level, "share": round(share, 4),
                "evidence": f"trtexec: {said}{per}; the copies take {copies}"
                            + (" — the tool warns the throughput is bound by the transfers" if stated else
                               ", enough to fill that gap: each query's transfers run while its GPU work waits"),
                "next": "keep the inputs on the GPU (--noDataTransfers shows the compute-only rate), use pinned "
                        "host memory and overlap the copies with compute on separate streams, or move "
                        "pre-/post-processing onto the GPU"}))
        if a["enqueue_bound"] and enq is not None:
            stated = "enqueue" in a["stated"]
            cands.append((max(0.0, enq - (_mean(run, "compute") or 0.0)), stated, {
                "hypothesis": ids.LAUNCH_BOUND, "level": level, "share": round(share, 4),
                "evidence": f"trtexec: {said}{per}; enqueueing a query takes {enq:.3g} ms"
                            + (f" of the {c:.3g} ms it computes" if (c := _mean(run, "compute")) is not None else "")
                            + (" — the tool warns the throughput may be bound by the enqueue time" if stated else
                               " (over trtexec's own 0.8 rule): the host submits the work about as slowly as the "
                               "GPU runs it"),
                "next": "capture the engine in a CUDA graph (trtexec --useCudaGraph; enqueue once, replay), and "
                        "look for plugins or shape changes that make enqueue synchronous"}))
        if not cands:
            found.append({"hypothesis": ids.UNEXPLAINED_SLOWDOWN, "level": "moderate", "share": round(share, 4),
                          "evidence": f"trtexec: {said}{per}; neither the copies ({copies}) nor the enqueue time "
                                      "account for it",
                          "next": "profile the run with nsys to see what the GPU waits on between queries"})
            continue
        cands.sort(key=lambda c: (c[0], c[1]), reverse=True)  # the time that covers more of the gap, then a warning
        lead = cands[0][2]
        found.append(lead)
        for _ms, _stated, f in cands[1:]:  # the second reading of the same gap: a level lower, or said beside
            if lead["level"] == "high":
                found.append({**f, "level": "moderate"})
            else:
                lead["evidence"] += f"; also {f['evidence'].split('; ')[-1]}"
    return found, vouched


def facts(runs: list[dict]) -> list[str]:
    """What trace lines alone say (no walltime: no loss priced)."""
    out = []
    for run in runs:
        t = run.get("trace")
        if not t or busy(run) is not None:
            continue
        line = (f"trtexec trace: GPU latency {t['gpu_ms']:.4g} ms, host latency {t['host_ms']:.4g} ms "
                f"(H2D + compute + D2H)")
        if t.get("e2e_ms") and t["e2e_ms"] > 1.5 * t["gpu_ms"]:
            line += (f", end to end {t['e2e_ms']:.4g} ms ≈ {t['e2e_ms'] / t['gpu_ms']:.1f} × the GPU latency: queries "
                     "queued back to back wait for the previous one (the tool's definition), not idle GPU time")
        out.append(line + "; no walltime or throughput in the input, so the GPU's busy share is not measured")
    return out
