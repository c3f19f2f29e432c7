"""Profiler summaries → per-profile figures and findings for `playbook diagnose`: Nsight Systems `nsys stats`
exports (playbook.readers.nsys) and SQLite exports (readers.nsys_sqlite), AMD rocprof / rocprofv3 CSV
(readers.rocprof); all leave their summaries in bundle.meta under the nsys report names.

One profile = the files of one run of the profiler: the reports one `nsys stats --output PREFIX` wrote (usually one
rank), one database, one rocprofv3 `<pid>_*.csv` set or one rocprof `results*.csv` set. A profile without a kernel,
API or copy summary gets it from its trace rows (kernel rows, runtime calls, copies) or, for kernels and launch
calls, from nsys' cuda_kern_exec_sum (Count × KAvg, Count × AAvg). Per profile:
  kernels   GPU kernel time (cuda_gpu_kern_sum): total, NCCL share (ncclKernel_* / ncclDevKernel_*), top kernels
  memops    memcpy time and bytes by direction (cuda_gpu_mem_time_sum / _size_sum), their share of GPU busy time,
            and the pageable copies seen in cuda_gpu_trace ("Pageable" memory kind: staged, CPU-blocking)
  nvtx      the step timer's NVTX ranges (nvtx_sum): "step N" ranges and phase ranges (data, h2d, fwd, bwd, ...).
            The iteration time is the step ranges plus the "data" ranges, because playbook.probes.timed() waits for
            the batch before the step range opens; a "data" range you nest inside your own step ranges makes the
            shares below conservative (understated), never inflated.
  api       CPU time blocked in CUDA synchronisation calls (cuda_api_sum: cuda*Synchronize) per iteration, and the
            CPU time spent in kernel launch calls (cudaLaunchKernel*, cuLaunchKernel*, hipLaunchKernel, graph launches)
  osrt      OS runtime calls (osrt_sum): blocking calls (pthread_cond_wait, poll, sem_wait, epoll_wait, ...) and
            their share of all traced OS-runtime time. They sum every thread, idle helpers included (a DataLoader's
            pin-memory thread waits all run long), so they describe, never decide: no finding comes from them.

Findings (the TensorFlow profiler's thresholds the other analyses use, shares of the iteration time):
  data_starvation   NVTX "data" ≥ 5% moderate, ≥ 20% high
  h2d_copy          max(NVTX "h2d", host-to-device copy time) ≥ 5% / 20%; without NVTX step ranges: copies
                    taking ≥ 20% of the GPU's busy time (moderate)
  host_sync         cuda*Synchronize calls ≥ 5% / 20%
  launch_bound      launch calls costing more CPU time than the kernels they launch run on the GPU (with a complete
                    kernel table): a thread that spends n·L seconds launching cannot keep a GPU busier than K / (n·L)
                    of the time, so at least 1 − K / (n·L) is idle, ≥ 5% / 20%. A lower bound: the framework's own
                    time between launches (Python dispatch) adds more; launches blocked by a full queue only make
                    n·L ≈ K. Holds for a profile of several processes too (both sides sum over them), not for one
                    process launching from several threads at once. L is the median launch where the API table
                    states it (n × median, at most the total: the first launches that load modules are one-off).
                    Judged from MIN_LAUNCHES launches on. A kernel
                    table cut short (a pasted top: its Time (%) sums below COMPLETE_PCT) gives K as its rows' time
                    over the share they state, at the largest the printed rounding allows (K an upper bound, the
                    idle share still a lower one).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from playbook.analysis.kineto.step_signatures import RUNTIME_CATS
from playbook.core.jsonable import json_float
from playbook.knowledge import ids as cause_ids
from playbook.model import schema
from playbook.readers import nsys as reader
from playbook.readers.profiler_table import SYNC_CALLS

MODERATE, HIGH = 0.05, 0.20
GPU_COPY_SHARE = 0.20
STEP_RANGE = re.compile(r"^(?:.*:)?step[ _#]?(\d+)$", re.IGNORECASE)
LAUNCH_CALLS = re.compile(r"^(?:cuda|cu|hip)(?:Ext)?(?:Module)?(?:Launch(?:Cooperative)?Kernel(?:ExC|Ex)?|GraphLaunch)"
                          r"(?:_v\d+|_ptsz|_spt)*$", re.IGNORECASE)
MIN_LAUNCHES = 20  # as the trace's launch_bound (kineto.step_signatures, min_kernels): a handful of launches is
# one-off cost (module load, first-call JIT), not the steady state the bound describes
COMPLETE_PCT = 99.0  # a kernel table whose Time (%) column sums to less is cut (a pasted top) ...
ROUNDING_PCT = 0.05  # ... and its whole is implied by the shares it prints (one decimal: each within ±0.05 points)
MIN_SHOWN_PCT = 1.0  # rows that show less of the whole imply it too loosely to bound anything
NCCL_KERNEL = re.compile(r"^(?:void )?nccl(?:Dev)?Kernel", re.IGNORECASE)
BLOCKING_CALLS = frozenset({
    "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", "poll", "ppoll", "epoll_wait",
    "epoll_pwait", "select", "pselect6", "sem_wait", "sem_timedwait", "sem_clockwait", "pthread_join",
    "pthread_mutex_lock", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "nanosleep", "clock_nanosleep",
    "usleep", "sleep", "futex", "waitpid", "wait4", "accept", "accept4", "recv", "recvmsg", "recvfrom",
})
DIRECTIONS = {"htod": ("Host-to-Device", "HtoD"), "dtoh": ("Device-to-Host", "DtoH"),
              "dtod": ("Device-to-Device", "DtoD"), "ptop": ("Peer-to-Peer", "PtoP")}


def _level(share: float) -> str | None:
    if not np.isfinite(share):
        return None
    return "high" if share >= HIGH else ("moderate" if share >= MODERATE else None)


def _direction(name: str) -> str:
    for key, labels in DIRECTIONS.items():
        if any(lab in name for lab in labels):
            return key
    return "memset" if "memset" in name.lower() else "other"


def _strip_domain(name: str) -> str:
    """'cuBLAS:cublasCreate_v2' -> 'cublasCreate_v2'; ':fwd' -> 'fwd'; 'fwd' -> 'fwd'."""
    return name.rsplit(":", 1)[-1].strip() if ":" in name else name.strip()


def _kernels(k: pd.DataFrame | None) -> dict[str, Any] | None:
    if k is None or k.empty:
        return None
    total = float(k["total_ns"].sum())
    nccl = float(k.loc[k["name"].astype(str).str.match(NCCL_KERNEL), "total_ns"].sum())
    top = k.sort_values("total_ns", ascending=False).head(5)
    pct = k["time_pct"].sum() if "time_pct" in k and k["time_pct"].notna().all() else None
    complete = bool(pct is None or pct >= COMPLETE_PCT)
    # a cut table (a pasted top) states its rows' shares of the whole: the whole is the rows' time over their share,
    # taken at the largest the printed shares allow (each rounded to ±ROUNDING_PCT): an upper bound of K
    shown = (pct - ROUNDING_PCT * len(k)) if pct is not None else None
    whole = total if complete else (total * 100.0 / shown if shown is not None and shown >= MIN_SHOWN_PCT else None)
    return {"total_ms": json_float(total / 1e6), "instances": int(k["count"].sum()), "complete": complete,
            "whole_ms": json_float(whole / 1e6) if whole is not None else None,
            "nccl_ms": json_float(nccl / 1e6), "nccl_share": json_float(nccl / total) if total > 0 else None,
            "top": [{"name": str(r["name"])[:100], "share": json_float(r["total_ns"] / total) if total > 0 else None,
                     "instances": int(r["count"]), "avg_us": json_float(r["total_ns"] / max(r["count"], 1) / 1e3)}
                    for _, r in top.iterrows()]}


def _memops(t: pd.DataFrame | None, s: pd.DataFrame | None, kernel_ns: float,
            trace: pd.DataFrame | None) -> dict[str, Any] | None:
    if (t is None or t.empty) and (s is None or s.empty) and (trace is None or trace.empty):
        return None
    out: dict[str, Any] = {}
    if t is not None and len(t):
        by = t.groupby(t["name"].astype(str).map(_direction))["total_ns"].sum()
        for key in ("htod", "dtoh", "dtod", "memset"):
            out[f"{key}_ms"] = json_float(by.get(key, 0.0) / 1e6)
        copy_ns = float(by.drop("memset", errors="ignore").sum())
        busy = kernel_ns + float(t["total_ns"].sum())
        out["copy_share_of_gpu_busy"] = json_float(copy_ns / busy) if busy > 0 else None
        out["_htod_ns"] = float(by.get("htod", 0.0))
    if s is not None and len(s):
        by = s.groupby(s["name"].astype(str).map(_direction))["total_bytes"].sum()
        for key in ("htod", "dtoh", "dtod"):
            out[f"{key}_mb"] = json_float(by.get(key, 0.0) / 1e6)
    if trace is not None and len(trace):
        pg = trace[(trace["cat"] == "gpu_memcpy") & trace["name"].astype(str).str.contains("Pageable")]
        out["pageable_copies"] = int(len(pg))
        out["pageable_mb"] = json_float(pg["bytes"].sum() / 1e6)
        out["pageable_ms"] = json_float(pg["dur_us"].sum() / 1e3)
    return out


def _nvtx(n: pd.DataFrame | None) -> dict[str, Any] | None:
    if n is None or n.empty:
        return None
    names = n["name"].astype(str).map(_strip_domain)
    is_step = names.str.match(STEP_RANGE)
    steps = n[is_step.to_numpy()]
    phases = n[~is_step.to_numpy()].assign(phase=names[~is_step].to_numpy())
    per_phase = phases.groupby("phase")["total_ns"].sum()
    out: dict[str, Any] = {"ranges": int(len(n))}
    if steps.empty:
        out["phase_ms"] = {p: json_float(v / 1e6) for p, v in per_phase.items()}
        return out
    step_ns = float(steps["total_ns"].sum())
    n_steps = int(steps["count"].sum())
    per_step = steps["total_ns"] / steps["count"].clip(lower=1)
    data_ns = float(per_phase.get("data", 0.0))
    iteration_ns = step_ns + data_ns
    out.update({"steps": n_steps, "step_median_ms": json_float(per_step.median() / 1e6),
                "iteration_ms": json_float(iteration_ns / n_steps / 1e6) if n_steps else None,
                "phase_share": {p: json_float(v / iteration_ns) for p, v in per_phase.items() if iteration_ns > 0},
                "_iteration_ns": iteration_ns, "_steps": n_steps})
    return out


def _api(a: pd.DataFrame | None, iteration_ns: float) -> dict[str, Any] | None:
    if a is None or a.empty:
        return None
    sync = a[a["name"].astype(str).str.match(SYNC_CALLS)]
    sync_ns = float(sync["total_ns"].sum())
    launch = a[a["name"].astype(str).map(_strip_domain).str.match(LAUNCH_CALLS)]
    launch_ns = float(launch["total_ns"].sum())
    if len(launch) and "med_ns" in launch and launch["med_ns"].notna().all():
        # n × the median launch: the steady cost, without the one-off first launches that load modules (lazy
        # loading: one call of tens of ms in the total); never more than the total
        launch_ns = min(launch_ns, float((launch["count"] * launch["med_ns"]).sum()))
    return {"sync_ms": json_float(sync_ns / 1e6), "sync_calls": int(sync["count"].sum()),
            "launch_ms": json_float(launch_ns / 1e6), "launches": int(launch["count"].sum()),
            "sync_share": json_float(sync_ns / iteration_ns) if iteration_ns > 0 else None,
            "top": [{"name": str(r["name"]), "ms": json_float(r["total_ns"] / 1e6), "calls": int(r["count"])}
                    for _, r in a.sort_values("total_ns", ascending=False).head(5).iterrows()]}


def _osrt(o: pd.DataFrame | None) -> dict[str, Any] | None:
    if o is None or o.empty:
        return None
    total = float(o["total_ns"].sum())
    blocking = o[o["name"].astype(str).isin(BLOCKING_CALLS)]
    return {"total_ms": json_float(total / 1e6), "blocking_ms": json_float(blocking["total_ns"].sum() / 1e6),
            "blocking_share": json_float(blocking["total_ns"].sum() / total) if total > 0 else None,
            "top": [{"name": str(r["name"]), "ms": json_float(r["total_ns"] / 1e6), "calls": int(r["count"]),
                     "share": json_float(r["total_ns"] / total) if total > 0 else None,
                     "blocking": str(r["name"]) in BLOCKING_CALLS}
                    for _, r in o.sort_values("total_ns", ascending=False).head(5).iterrows()]}


def _profile_trace(trace: pd.DataFrame | None, sources: set[str] | None) -> pd.DataFrame | None:
    """The trace rows read from this profile's files (its cuda_gpu_trace export, database, trace CSVs)."""
    if trace is None or trace.empty or "source" not in trace or not sources:
        return None
    t = trace[trace["source"].astype(str).isin(sources)]
    return t if len(t) else None


def _sums(rows: pd.DataFrame) -> pd.DataFrame:
    """Summary records (name, count, total_ns, avg_ns, min_ns, max_ns) of trace rows, by name."""
    ns = rows["dur_us"].to_numpy(dtype=np.float64) * 1e3
    g = pd.DataFrame({"name": rows["name"].astype(str).to_numpy(), "ns": ns}).groupby("name")["ns"]
    return pd.DataFrame({"count": g.size(), "total_ns": g.sum(), "avg_ns": g.mean(), "min_ns": g.min(),
                         "max_ns": g.max()}).reset_index()


def _from_trace(t: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """The kernel, API, copy and range (roctx / NVTX) summaries a profile's trace rows give (used where its
    exports hold none)."""
    if t is None or t.empty:
        return {}
    cat = t["cat"].astype(str)
    parts = {"cuda_gpu_kern_sum": t[cat == "kernel"], "cuda_api_sum": t[cat.isin(RUNTIME_CATS)],
             "cuda_gpu_mem_time_sum": t[cat.isin({"gpu_memcpy", "gpu_memset"})],
             "nvtx_sum": t[(cat == "user_annotation") & (t["dur_us"] > 0)]}  # roctx ranges; marks have no length
    return {name: _sums(rows) for name, rows in parts.items() if len(rows)}


def _from_exec_sum(e: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """Kernel and launch-call summaries from nsys' cuda_kern_exec_sum (per launch: API time A*, kernel time K*)."""
    if e is None or e.empty or not {"k_avg_ns", "a_avg_ns", "count"} <= set(e.columns):
        return {}
    n = e["count"].astype(float)
    kern = pd.DataFrame({"name": e["name"].astype(str), "count": n, "total_ns": e["k_avg_ns"] * n})
    api_name = e["api_name"].astype(str) if "api_name" in e else pd.Series(["cudaLaunchKernel"] * len(e))
    api = pd.DataFrame({"name": api_name.to_numpy(), "ns": (e["a_avg_ns"] * n).to_numpy(), "count": n.to_numpy()})
    api = api.groupby("name").agg(total_ns=("ns", "sum"), count=("count", "sum")).reset_index()
    return {"cuda_gpu_kern_sum": kern.groupby("name", as_index=False)[["count", "total_ns"]].sum(),
            "cuda_api_sum": api}


def profile_summary(profile: str, reps: dict[str, pd.DataFrame], trace: pd.DataFrame | None,
                    findings: list[dict], sources: set[str] | None = None, tool: str = "nsys") -> dict[str, Any]:
    """Figures of one profile (see the module docstring); appends its findings to `findings`. `sources`: the files
    of the profile (its trace rows are theirs); `tool`: the profiler that wrote it, for the evidence."""
    def get(name: str) -> pd.DataFrame | None:
        f = reps.get(name)
        if f is None:
            return None
        f = f[f["profile"] == profile]
        return f if len(f) else None

    ptrace = _profile_trace(trace, sources)
    derived = _from_trace(ptrace)
    exec_sum = _from_exec_sum(get("cuda_kern_exec_sum"))

    def summary(name: str) -> pd.DataFrame | None:
        """The profile's `name` report; else the same summary built from its exec summary or its trace rows."""
        for f in (get(name), exec_sum.get(name), derived.get(name)):
            if f is not None and len(f):
                return f
        return None

    kern = _kernels(summary("cuda_gpu_kern_sum"))
    nvtx = _nvtx(summary("nvtx_sum") if summary("nvtx_sum") is not None else get("nvtx_pushpop_sum"))
    iteration_ns = float(nvtx.pop("_iteration_ns", 0.0)) if nvtx else 0.0
    n_steps = int(nvtx.pop("_steps", 0)) if nvtx else 0
    kernel_ns = (kern["total_ms"] or 0.0) * 1e6 if kern else 0.0
    mem = _memops(summary("cuda_gpu_mem_time_sum"), get("cuda_gpu_mem_size_sum"), kernel_ns, ptrace)
    htod_ns = mem.pop("_htod_ns", 0.0) if mem else 0.0
    api = _api(summary("cuda_api_sum"), iteration_ns)
    out = {"profile": profile, "tool": tool, "kernels": kern, "memops": mem, "nvtx": nvtx, "api": api,
           "osrt": _osrt(get("osrt_sum"))}
    where = f"{tool} profile {profile}"
    if nvtx and iteration_ns > 0:
        share = (nvtx.get("phase_share") or {}).get("data") or 0.0
        lvl = _level(share)
        if lvl:
            findings.append({"hypothesis": cause_ids.DATA_STARVATION, "level": lvl, "profile": profile, "evidence": (
                f"{where}: NVTX 'data' ranges (waiting for the batch) take {share:.0%} of the iteration "
                f"({share * iteration_ns / n_steps / 1e6:.1f} of {iteration_ns / n_steps / 1e6:.1f} ms per step, "
                f"{n_steps} steps)")})
        h2d_phase = (nvtx.get("phase_share") or {}).get("h2d") or 0.0
        h2d = max(h2d_phase, htod_ns / iteration_ns)
        lvl = _level(h2d)
        if lvl:
            pg = (mem or {}).get("pageable_copies")
            findings.append({"hypothesis": cause_ids.H2D_COPY, "level": lvl, "profile": profile, "evidence": (
                f"{where}: host-to-device copies take {h2d:.0%} of the iteration"
                + (f"; {pg} copies from pageable memory ({mem.get('pageable_mb'):.0f} MB)" if pg else ""))})
        if api and api.get("sync_share"):
            lvl = _level(api["sync_share"])
            if lvl:
                findings.append({"hypothesis": cause_ids.HOST_SYNC, "level": lvl, "profile": profile, "evidence": (
                    f"{where}: the CPU blocks in cuda*Synchronize for {api['sync_share']:.0%} of the iteration "
                    f"({api['sync_calls']} calls)")})
    elif mem and (mem.get("copy_share_of_gpu_busy") or 0.0) >= GPU_COPY_SHARE:
        findings.append({"hypothesis": cause_ids.H2D_COPY, "level": "moderate", "profile": profile, "evidence": (
            f"{where}: memory copies take {mem['copy_share_of_gpu_busy']:.0%} of the GPU's busy time (no NVTX "
            f"step ranges to relate them to the step)")})
    _launch_finding(kern, api, where, profile, findings)
    return out


def _launch_finding(kern: dict | None, api: dict | None, where: str, profile: str, findings: list[dict]) -> None:
    """launch_bound when the launch calls cost more CPU time than the kernels run (module docstring)."""
    if not kern or not api or kern.get("whole_ms") is None or (api.get("launches") or 0) < MIN_LAUNCHES:
        return
    launch_ns, kernel_ns = (api["launch_ms"] or 0.0) * 1e6, (kern["whole_ms"] or 0.0) * 1e6
    if launch_ns <= 0 or kernel_ns <= 0:
        return
    idle = 1.0 - kernel_ns / launch_ns
    lvl = _level(idle)
    if lvl:
        n, m = api["launches"], max(kern["instances"], 1)
        findings.append({"hypothesis": cause_ids.LAUNCH_BOUND, "level": lvl, "profile": profile, "share": float(idle),
                         "evidence": (
            f"{where}: {n:,} kernel launches cost {launch_ns / n / 1e3:,.1f} µs of CPU time each "
            f"({launch_ns / 1e6:,.0f} ms) for {kernel_ns / 1e6:,.0f} ms of GPU kernel time ({m:,} kernels, "
            f"{kernel_ns / m / 1e3:,.1f} µs each"
            + ("" if kern.get("complete") else ", the whole of a cut kernel table as its rows' stated shares imply")
            + f"): a thread launching them keeps the GPU at most {1 - idle:.0%} busy")})


# `nsys analyze` rules (readers.nsys.KNOWN_RULES) that name their cause: the calls they list hold the host
_RULE_CAUSES = {"cuda_memcpy_async": "the cudaMemcpyAsync calls from or to pageable memory it lists (the driver stages "
                                     "each through a pinned buffer and holds the host)",
                "cuda_memcpy_sync": "the synchronous memcpy calls it lists (the host waits for each copy)",
                "cuda_memset_sync": "the synchronous memset calls it lists (the host waits for each)",
                "cuda_api_sync": "the synchronization API calls it lists (the host waits for the GPU)"}


def rule_findings(reps: dict[str, pd.DataFrame]) -> list[dict]:
    """Findings of the `nsys analyze` rule tables that name a cause (_RULE_CAUSES): a copy whose host side is
    pageable and whose destination is the device is host-to-device staging (h2d_copy); every other flagged call
    holds the host until the GPU answers (host_sync). "moderate": the rule lists calls, not the profile's span, so
    their share of the run is unknown; `stated`: a fact the tool states (diagnosis.answer lets it lead alone). gpu_gaps / gpu_time_util tables are kept and read by no rule here."""
    out: list[dict] = []
    for rule, what in _RULE_CAUSES.items():
        f = reps.get(reader.RULE_PREFIX + rule)
        if f is None or not len(f):
            continue
        dur = f["dur_ns"].astype(float) if "dur_ns" in f else pd.Series(np.nan, index=f.index)
        to_device = (f.get("src_kind", pd.Series("", index=f.index)).astype(str).str.lower().str.contains("pageable")
                     & f.get("dst_kind", pd.Series("", index=f.index)).astype(str).str.lower().str.contains("device"))
        for hyp, rows in ((cause_ids.H2D_COPY, to_device), (cause_ids.HOST_SYNC, ~to_device)):
            if not rows.any():
                continue
            total_ms = float(np.nansum(dur[rows])) / 1e6
            out.append({"hypothesis": hyp, "level": "moderate", "stated": True, "evidence": (
                f"nsys analyze rule {rule} in {', '.join(sorted(set(f.loc[rows, 'source'])))}: {int(rows.sum())} of "
                f"{what}, {total_ms:.3f} ms listed (the rule's table, capped by its rows= option; the profile's "
                "span is not in it, so their share of the run is unknown)")})
    return out


def summarize(bundle: Any) -> dict | None:
    """JSON-ready nsys summary for `playbook diagnose` (None when the bundle holds no nsys export).

    Keys: profiles [{profile, kernels, memops, nvtx, api, osrt}] (see the module docstring; None where the
    report is absent), findings [{hypothesis, level, profile, evidence}], warnings [str].
    """
    if not reader.has_nsys(bundle):
        return None
    reps = reader.reports(bundle)
    trace = getattr(bundle, "trace", None)
    sources: dict[str, set[str]] = {}
    tools: dict[str, str] = {}
    for src, v in schema.meta_sections(bundle.meta, reader.META_PREFIX):
        p = str(v.get("profile") or reader.profile_name(src))
        sources.setdefault(p, set()).add(src)
        tools[p] = str(v.get("tool") or "nsys")
    findings: list[dict] = []
    out = [profile_summary(p, reps, trace, findings, sources[p], tools[p]) for p in sorted(sources)]
    findings += rule_findings(reps)
    warnings = []
    if out and not any(o["nvtx"] and o["nvtx"].get("steps") for o in out):
        warnings.append(f"{'/'.join(sorted(set(tools.values())))}: no NVTX step ranges ('step N'), so shares of the "
                        "step cannot be computed; record with playbook.probes (StepTimer emits them) or "
                        "nvtx.range_push('step N') (roctxRangePush on ROCm) per step")
    return {"profiles": out, "findings": findings, "warnings": warnings}
