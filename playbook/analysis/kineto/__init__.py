"""Kineto trace analyses for `playbook diagnose`: `summarize(bundle)` turns the `trace` table into where each
rank's GPU time goes, and why — HTA's temporal and idle breakdowns (hta.py) and the per-step signatures
(step_signatures.py: DataLoader share, device syncs, allocator stalls, launch-bound steps, pageable copies) — with
findings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from playbook.analysis.kineto.hta import _ranks, idle_breakdown, profiler_steps, temporal_breakdown, windows
from playbook.analysis.kineto.step_signatures import (
    INPUT_HIGH,
    INPUT_MODERATE,
    LAUNCH_HIGH,
    LAUNCH_MODERATE,
    RUNTIME_CATS,
    allocator_stalls,
    dataloader_share,
    device_syncs,
    launch_bound,
    pageable_copies,
    share_level,
    sync_share,
)
from playbook.core.jsonable import json_float
from playbook.knowledge import ids as cause_ids

# a training step needs a handful of host reads (loss, grad norm, lr); ≥ 100 syncs in one step is a per-element loop
PER_ELEMENT_SYNCS = 100

LEVEL_ORDER = ("high", "input_bound", "moderate")  # most severe first


def _median(values) -> float | None:
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    return float(v.median()) if len(v) else None


def _worst_level(levels: pd.Series, order=LEVEL_ORDER) -> str:
    """The level a majority of a rank's steps reach, most severe first ("ok" when none)."""
    levels = levels[levels != "unknown"]
    if levels.empty:
        return "unknown"
    for i, lvl in enumerate(order):
        if (levels.isin(order[: i + 1])).mean() > 0.5:
            return lvl
    return "ok"


def _steps_at(rows: pd.DataFrame, level: str, order=LEVEL_ORDER) -> dict[str, int]:
    """{steps, steps_at_level}: the worst rank's assessed steps and how many reach `level` or worse (for the
    confidence of a finding drawn from few profiled steps, hypotheses.from_findings)."""
    levels = rows["level"][rows["level"] != "unknown"]
    worse = order[: order.index(level) + 1] if level in order else (level,)
    return {"steps": int(len(levels)), "steps_at_level": int(levels.isin(worse).sum())}


def summarize(bundle: Any) -> dict | None:
    """JSON-ready summary of `bundle.trace` for `playbook diagnose` (None when there is no trace).

    Keys (times in ms unless named otherwise; *_pct are percentages 0-100, *_share fractions 0-1):
      ranks             sorted ranks present; world_size from the trace metadata (None when unknown)
      temporal          [{rank, span_ms, idle_pct, compute_pct, non_compute_pct}] (HTA's temporal breakdown)
      idle              [{rank, host_wait_pct, kernel_wait_pct, other_pct}]: shares of the rank's GPU idle time,
                        summed over streams (HTA's idle-time breakdown)
      steps             [{rank, steps, median_ms, max_ms}] from ProfilerStep#N annotations
      dataloader        {median_share, max_share, worst_rank, level: ok|moderate|input_bound|unknown}
      syncs             {per_step, blocked_share, exposed_share, top_ops: ["aten::item ×12", ...], worst_rank,
                        level}: D2H syncs inside steps; exposed = GPU idle right after them
      allocator         {median_share, calls_per_step, top_calls, worst_rank, level}: GPU idle while the host sits in
                        allocator calls (cudaFree, hipMalloc, ...)
      launch            {median_share, median_kernel_us, launch_interval_us, gpu_busy_frac, worst_rank,
                        level: ok|moderate|high|unknown}
      pageable          {copies, mbytes, time_ms, share_of_step, level} for copies from/to pageable host memory
      gpu_idle          {rank, share, basis, steps, host_ops, launches, explained_share, unexplained_share,
                        host_wait, kernel_wait, other} on the idlest rank (see _summ_idle); None without GPU ops
      findings          [{hypothesis, level: moderate|high, rank, evidence[, steps, steps_at_level]}] with
                        hypothesis ids data_starvation, host_sync, memory_pressure, launch_bound, h2d_copy
    """
    trace = getattr(bundle, "trace", None)
    if trace is None or len(trace) == 0:
        return None
    meta = (getattr(bundle, "meta", {}) or {}).get("kineto", {})
    world = {m.get("world_size") for m in meta.values() if isinstance(m, dict)} - {None}
    out: dict[str, Any] = {"ranks": _ranks(trace), "world_size": max(world) if world else None}
    tb = temporal_breakdown(trace)
    out["temporal"] = [{"rank": int(r.rank), "span_ms": json_float(r.span_us / 1e3, 3), "idle_pct": json_float(r.idle_pct, 2),
                        "compute_pct": json_float(r.compute_pct, 2), "non_compute_pct": json_float(r.non_compute_pct, 2)}
                       for r in tb.itertuples()]
    ib = idle_breakdown(trace)
    idle = []
    for rank, g in ib.groupby("rank"):
        per = g.groupby("category")["idle_us"].sum()
        tot = per.sum()
        idle.append({"rank": int(rank), **{f"{c}_pct": json_float(100 * per.get(c, 0.0) / tot, 2) if tot > 0 else None
                                           for c in ("host_wait", "kernel_wait", "other")}})
    out["idle"] = idle
    st = profiler_steps(trace)
    out["steps"] = [{"rank": int(r), "steps": int(len(g)), "median_ms": json_float(g["dur_us"].median() / 1e3, 3),
                     "max_ms": json_float(g["dur_us"].max() / 1e3, 3)} for r, g in st.groupby("rank")]
    findings: list[dict] = []
    out["dataloader"] = _summ_dataloader(trace, findings)
    syncs = device_syncs(trace)
    out["syncs"] = _summ_syncs(trace, syncs, findings)
    win = windows(trace)
    # step marks, or iterations read from DataLoader next() calls (several windows a rank); else one span a rank
    marked = not st.empty or len(win) > win["rank"].nunique()
    out["allocator"] = _summ_allocator(trace, findings, marked)
    lb = launch_bound(trace, syncs=syncs)
    out["launch"] = _summ_launch(lb, findings)
    out["pageable"] = _summ_pageable(trace, win, findings)
    cpu = trace["stream"] == -1
    is_launch = trace["cat"].astype(str).isin(RUNTIME_CATS)
    out["gpu_idle"] = _summ_idle(tb, out, lb, marked=marked, host_ranks=set(trace.loc[cpu & ~is_launch, "rank"]),
                                 launch_ranks=set(trace.loc[is_launch, "rank"]))
    out["findings"] = findings
    return out


def _by_rank_level(frame: pd.DataFrame, share_col: str) -> tuple[int | None, str, pd.DataFrame]:
    """Worst rank (highest median share) and its majority level."""
    med = frame.groupby("rank")[share_col].median()
    if med.dropna().empty:
        return None, "unknown", frame.iloc[0:0]
    worst = int(med.idxmax())
    rows = frame[frame["rank"] == worst]
    return worst, _worst_level(rows["level"]), rows


def _summ_dataloader(trace, findings) -> dict:
    dl = dataloader_share(trace)
    if dl.empty:
        return {"median_share": None, "max_share": None, "worst_rank": None, "level": "unknown"}
    worst, level, rows = _by_rank_level(dl, "share")
    med = _median(rows["share"])
    if level in ("moderate", "input_bound"):
        findings.append({"hypothesis": cause_ids.DATA_STARVATION, "level": "high" if level == "input_bound" else "moderate",
                         "rank": worst, "evidence": f"rank {worst}: waiting on the DataLoader takes a median "
                         f"{100 * med:.1f}% of step time over {len(rows)} profiled steps (≥ 5% moderate, ≥ 20% "
                         f"input-bound)", "share": json_float(med, 4), **_steps_at(rows, level)})
    return {"median_share": json_float(med, 4), "max_share": json_float(dl["share"].max(), 4), "worst_rank": worst, "level": level}


def _summ_syncs(trace, syncs, findings) -> dict:
    share = sync_share(trace, syncs)
    empty = {"per_step": 0, "blocked_share": None, "exposed_share": None, "top_ops": [], "worst_rank": None,
             "level": "unknown" if share.empty else "ok"}
    if share.empty or syncs.empty:
        return empty
    share = share.assign(level=[share_level(s, LAUNCH_MODERATE, LAUNCH_HIGH, "high") for s in share["share"]])
    worst, level, rows = _by_rank_level(share, "share")
    in_steps = syncs[(syncs["rank"] == worst) & (syncs["step"] >= 0)]
    top = in_steps[in_steps["op"] != ""]["op"].value_counts().head(3)
    top_ops = [f"{op} ×{n}" for op, n in top.items()]
    blocked = _median(rows["blocked_us"] / rows["dur_us"])
    exposed = _median(rows["share"])
    if level in ("moderate", "high"):
        findings.append({"hypothesis": cause_ids.HOST_SYNC, "level": level, "rank": worst, "evidence": (
            f"rank {worst}: {_median(rows['syncs']):.0f} device-to-host syncs per step "
            f"({', '.join(top_ops) or 'no enclosing op'}); the GPU then sits idle for a median {100 * exposed:.1f}% "
            f"of step time (CPU blocked {100 * blocked:.1f}%)"
            + ("; hundreds of tiny waits per step are .item() / .cpu() called per element in a Python loop: take "
               ".item()/.cpu() out of the loop (copy the whole tensor once, or keep the values on the GPU)"
               if _median(rows["syncs"]) >= PER_ELEMENT_SYNCS else "")), "share": json_float(exposed, 4),
            **_steps_at(rows, level)})
    return {"per_step": json_float(_median(rows["syncs"]), 1), "blocked_share": json_float(blocked, 4),
            "exposed_share": json_float(exposed, 4), "top_ops": top_ops, "worst_rank": worst, "level": level}


def _summ_allocator(trace, findings, marked: bool = True) -> dict:
    al = allocator_stalls(trace)
    if al.empty:
        return {"median_share": None, "calls_per_step": 0, "top_calls": "", "worst_rank": None, "level": "unknown"}
    worst, level, rows = _by_rank_level(al, "share")
    med = _median(rows["share"])
    top = rows.loc[rows["calls"].idxmax(), "top"] if len(rows) else ""
    if level in ("moderate", "high"):
        findings.append({"hypothesis": cause_ids.MEMORY_PRESSURE, "level": level, "rank": worst, "evidence": (
            f"rank {worst}: the GPU sits idle "
            + (f"a median {100 * med:.1f}% of step time" if marked else f"{100 * med:.1f}% of the traced span")
            + f" while the host is in allocator calls ({top}"
            + (f"; {_median(rows['calls']):.0f} a step" if marked else "")
            + "); a free waits for the device, and PyTorch's caching allocator avoids these calls unless it is "
            "turned off (PYTORCH_NO_CUDA_MEMORY_CACHING / PYTORCH_NO_HIP_MEMORY_CACHING) or keeps missing near "
            "full memory (≥ 3% moderate, ≥ 15% high)"),
            "share": json_float(med, 4), **_steps_at(rows, level, ("high", "moderate"))})
    return {"median_share": json_float(med, 4), "calls_per_step": json_float(_median(rows["calls"]), 1),
            "top_calls": top, "worst_rank": worst, "level": level}


def _summ_launch(lb, findings) -> dict:
    if lb.empty:
        return {"median_share": None, "median_kernel_us": None, "launch_interval_us": None,
                "gpu_busy_frac": None, "worst_rank": None, "level": "unknown"}
    worst, level, rows = _by_rank_level(lb, "launch_share")
    med = _median(rows["launch_share"])
    res = {"median_share": json_float(med, 4), "median_kernel_us": json_float(_median(rows["median_kernel_us"]), 2),
           "launch_interval_us": json_float(_median(rows["launch_interval_us"]), 2),
           "gpu_busy_frac": json_float(_median(rows["gpu_busy_frac"]), 3), "worst_rank": worst, "level": level}
    if level in ("moderate", "high"):
        findings.append({"hypothesis": cause_ids.LAUNCH_BOUND, "level": level, "rank": worst, "evidence": (
            f"rank {worst}: {_median(rows['kernels']):.0f} GPU ops per step with median {res['median_kernel_us']} µs, "
            f"shorter than the {res['launch_interval_us']} µs between launches; the GPU waits for launches "
            f"{100 * med:.1f}% of step time and is busy {100 * res['gpu_busy_frac']:.0f}% "
            f"(≥ 3% moderate, ≥ 15% high)"), "share": res["median_share"], **_steps_at(rows, level)})
    return res


def _summ_idle(tb: pd.DataFrame, out: dict, lb: pd.DataFrame, marked: bool = True,
               host_ranks: set | None = None, launch_ranks: set | None = None) -> dict | None:
    """The GPU's idle share on the idlest rank and how much of it the specific analyses account for.

    share: 1 - GPU busy time ÷ step time, summed over the profiled steps (basis "steps"), or HTA's idle share of the
    span from the first to the last GPU op when the trace marks no steps (basis "span"). explained_share: the
    parts the dataloader, sync, allocator and launch analyses attribute (their median shares of step time);
    unexplained_share: the rest. host_wait / kernel_wait / other: how that rank's idle time splits (HTA's idle
    categories). host_ops: whether the trace records that rank's CPU side (ops, annotations, Python frames — not
    only runtime calls); a trace of GPU activity alone cannot show what the host did while the GPU waited.
    launches: whether it records that rank's launch calls (runtime/driver rows); without them (XProf traces of JAX
    or TensorFlow) a gap cannot be told host wait from a wait on issued work, so host_wait / kernel_wait / other
    are None. None when the trace holds no GPU ops.
    """
    if tb.empty:
        return None
    steps = lb[lb["gpu_busy_frac"].notna() & (lb["dur_us"] > 0)] if not lb.empty else lb
    share_by_rank = pd.Series(dtype=float)
    if len(steps):
        idle_us = ((1.0 - steps["gpu_busy_frac"]) * steps["dur_us"]).groupby(steps["rank"]).sum()
        share_by_rank = (idle_us / steps.groupby("rank")["dur_us"].sum()).dropna()
        basis, n_steps = ("steps", steps.groupby("rank").size()) if marked else \
            ("span", pd.Series(0, index=share_by_rank.index))
    if share_by_rank.empty:
        share_by_rank = (tb.set_index("rank")["idle_pct"] / 100.0).dropna()
        basis, n_steps = "span", pd.Series(0, index=share_by_rank.index)
    if share_by_rank.empty:
        return None
    rank = int(share_by_rank.idxmax())
    share = float(share_by_rank.loc[rank])
    explained = sum(float(v or 0.0) for v in (out["dataloader"].get("median_share"), out["syncs"].get("exposed_share"),
                                              out["allocator"].get("median_share"), out["launch"].get("median_share")))
    launches = launch_ranks is None or rank in launch_ranks
    split = next((r for r in out["idle"] if r["rank"] == rank), {}) if launches else {}
    return {"rank": rank, "share": json_float(share, 4), "basis": basis, "steps": int(n_steps.get(rank, 0)),
            "host_ops": host_ranks is None or rank in host_ranks, "launches": launches,
            "explained_share": json_float(min(explained, share), 4), "unexplained_share": json_float(max(share - explained, 0.0), 4),
            **{k: split.get(f"{k}_pct") for k in ("host_wait", "kernel_wait", "other")}}


def _summ_pageable(trace, steps, findings) -> dict:
    pc = pageable_copies(trace)
    # a device-to-host copy is the CPU asking for a result (.item(), .cpu()): it waits whatever the memory, so it
    # counts as a sync (device_syncs), and pinning would not remove the wait
    pc = pc[~pc["name"].astype(str).str.contains("DtoH", regex=False)]
    if pc.empty:
        return {"copies": 0, "mbytes": 0.0, "time_ms": 0.0, "share_of_step": None, "level": "ok"}
    step_total = steps.groupby("rank")["dur_us"].sum()
    per_rank = pc.groupby("rank")["time_us"].sum()
    share = (per_rank / step_total.reindex(per_rank.index)).dropna()
    worst = int(share.idxmax()) if len(share) else int(per_rank.idxmax())
    sh = float(share.get(worst, np.nan)) if len(share) else np.nan
    level = share_level(sh, INPUT_MODERATE, INPUT_HIGH, "high") if np.isfinite(sh) else "moderate"
    names = pc[pc["rank"] == worst]
    res = {"copies": int(pc["count"].sum()), "mbytes": json_float(pc["bytes"].sum() / 1e6, 3),
           "time_ms": json_float(pc["time_us"].sum() / 1e3, 3), "share_of_step": json_float(sh, 4), "level": level}
    if level in ("moderate", "high"):
        findings.append({"hypothesis": cause_ids.H2D_COPY, "level": level, "rank": worst, "evidence": (
            f"rank {worst}: {int(names['count'].sum())} copies to/from pageable host memory "
            f"({', '.join(sorted(set(names['name'])))}) take "
            + (f"{100 * sh:.1f}% of profiled step time" if np.isfinite(sh) else f"{res['time_ms']} ms")
            + "; pinned memory (pin_memory=True, non_blocking=True) makes them asynchronous"),
            "share": json_float(sh, 4)})
    return res
