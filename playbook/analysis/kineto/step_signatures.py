"""Per-step signatures in Kineto traces (the `trace` table; times in µs): the share of each ProfilerStep spent in
the DataLoader (≥ 5 % moderate, ≥ 20 % input-bound), CPU calls that wait for the GPU (device syncs and the GPU idle
they expose), allocator calls the GPU sits idle through, kernel-launch-bound steps (many tiny kernels, the GPU idle
while the CPU issues launches as fast as it can) and copies to/from pageable host memory (synchronous and slower
than pinned ones)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from playbook.analysis.intervals import covered_before, merge_intervals
from playbook.analysis.kineto.hta import (
    DATALOADER_RE,
    IDLE_OP_CATS,
    loader_iterations,
    profiler_steps,
    windows,
)

INPUT_MODERATE, INPUT_HIGH = 0.05, 0.20  # TF profiler: input share of step time
LAUNCH_MODERATE, LAUNCH_HIGH = 0.03, 0.15  # TF profiler: kernel-launch share of step time

LAUNCH_CALL_RE = re.compile(r"^(cuda|hip|cu)(LaunchKernel|LaunchKernelExC|ExtModuleLaunchKernel|ModuleLaunchKernel|"
                            r"LaunchCooperativeKernel|GraphLaunch|MemcpyAsync|MemsetAsync|Memcpy|Memset)")
SYNC_CALLS = frozenset({"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                        "hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize",
                        "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize"})
# hipMemcpyWithStream is "akin to hipMemcpyAsync + hipStreamSynchronize" (HIP API reference): PyTorch's blocking
# copies on ROCm (tensor.cpu(), .item()) use it
BLOCKING_COPY_CALLS = frozenset({"cudaMemcpy", "hipMemcpy", "cuMemcpyDtoH_v2", "cuMemcpyDtoH", "hipMemcpyWithStream"})
ASYNC_COPY_CALLS = frozenset({"cudaMemcpyAsync", "hipMemcpyAsync"})
# Allocator calls that can stall the GPU, read by the API's verb: (de)allocation of device, host-pinned and managed
# memory and the virtual-memory calls behind expandable segments. A free "may perform implicit synchronization" unless
# the memory came from the stream-ordered allocator (CUDA driver API, cuMemFree); the *Async variants are left out.
ALLOC_CALL_RE = re.compile(r"^(?:cuda|hip|cu)(?:Ext)?(?:Malloc|Free|HostAlloc|HostMalloc|HostFree|HostRegister|"
                           r"HostUnregister)(?!\w*Async)\w*$|^(?:cu|hip)Mem(?:Alloc|Free|HostAlloc|Create|Release|Map|"
                           r"Unmap)(?!\w*Async)\w*$")
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "hip_runtime"})


def _union_within(ts: np.ndarray, end: np.ndarray, lo: float, hi: float) -> float:
    """Length (µs) of the union of [ts, end) clipped to [lo, hi)."""
    a, b = np.clip(ts, lo, hi), np.clip(end, lo, hi)
    keep = b > a
    if not keep.any():
        return 0.0
    s, e = merge_intervals(a[keep], b[keep])
    return float(np.sum(e - s))


def _busy(ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The union of GPU ops' [ts, end) (all streams): merged starts and ends."""
    ts = ops["ts_us"].to_numpy(np.float64)
    return merge_intervals(ts, ts + ops["dur_us"].to_numpy(np.float64))


def _idle_within(busy: tuple[np.ndarray, np.ndarray], ts: np.ndarray, end: np.ndarray, lo: float, hi: float) -> float:
    """GPU idle time (µs) inside the union of [ts, end) clipped to [lo, hi) and to the GPU's span (first op start to
    last op end): the part of those stretches no GPU op covers."""
    bs, be = busy
    if not len(bs):
        return 0.0
    lo, hi = max(lo, float(bs[0])), min(hi, float(be.max()))
    a, b = np.clip(ts, lo, hi), np.clip(end, lo, hi)
    keep = b > a
    if not keep.any():
        return 0.0
    s, e = merge_intervals(a[keep], b[keep])
    return float(np.sum(e - s) - np.sum(covered_before(bs, be, e) - covered_before(bs, be, s)))


def dataloader_share(trace: pd.DataFrame) -> pd.DataFrame:
    """Per (rank, step): dataloader_us (union of DataLoader annotations inside the step), share (0-1), level.
    Steps are the ProfilerStep#N marks, else the iterations between DataLoader next() calls (hta.loader_iterations).

    level: "input_bound" when share ≥ 20 %, "moderate" when ≥ 5 %, else "ok" (TensorFlow profiler's thresholds).
    """
    steps = profiler_steps(trace)
    if steps.empty:  # no step marks: the iterations between next() calls, when the loader is annotated at all
        steps = loader_iterations(trace)
    cols = ["rank", "step", "dur_us", "dataloader_us", "share", "level"]
    if steps.empty:
        return pd.DataFrame(columns=cols)
    names = trace["name"].astype(str)
    dl = trace[names.str.contains(DATALOADER_RE) & (trace["stream"] == -1)]
    rows = []
    for (rank, step, ts, dur) in steps.itertuples(index=False):
        d = dl[dl["rank"] == rank]
        t0 = d["ts_us"].to_numpy()
        used = _union_within(t0, t0 + d["dur_us"].to_numpy(), ts, ts + dur)
        share = used / dur if dur > 0 else np.nan
        rows.append((rank, step, dur, used, share, share_level(share, INPUT_MODERATE, INPUT_HIGH, "input_bound")))
    return pd.DataFrame(rows, columns=cols)


def share_level(share: float, moderate: float, high: float, high_name: str) -> str:
    """`high_name` when share ≥ high, "moderate" when ≥ moderate, "ok" below, "unknown" when NaN."""
    if not np.isfinite(share):
        return "unknown"
    return high_name if share >= high else "moderate" if share >= moderate else "ok"


def _gpu_ops(t: pd.DataFrame) -> pd.DataFrame:
    return t[t["cat"].astype(str).isin(IDLE_OP_CATS) & (t["stream"] != -1)]


def _outermost(cpu: pd.DataFrame, tid: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Name of the outermost CPU op on thread `tid[i]` that contains time `at[i]` ("" when none)."""
    out = np.full(len(at), "", dtype=object)
    for thread, ops in cpu.groupby("tid", sort=False):
        want = np.flatnonzero(tid == thread)
        if not len(want):
            continue
        ops = ops.sort_values(["ts_us", "dur_us"], ascending=[True, False])
        ts, end = ops["ts_us"].to_numpy(), (ops["ts_us"] + ops["dur_us"]).to_numpy()
        top = np.r_[True, ts[1:] >= np.maximum.accumulate(end)[:-1]]  # not inside an earlier op
        ts, end, names = ts[top], end[top], ops["name"].astype(str).to_numpy()[top]
        k = np.searchsorted(ts, at[want], side="right") - 1
        hit = (k >= 0) & (end[np.clip(k, 0, None)] >= at[want])
        out[want[hit]] = names[k[hit]]
    return out


def _step_of(steps: pd.DataFrame, rank: int, at: np.ndarray) -> np.ndarray:
    """ProfilerStep number containing each time in `at` for `rank` (-1 outside every step)."""
    st = steps[steps["rank"] == rank].sort_values("ts_us")
    out = np.full(len(at), -1, dtype=np.int64)
    if st.empty:
        return out
    s0, s1, num = st["ts_us"].to_numpy(), (st["ts_us"] + st["dur_us"]).to_numpy(), st["step"].to_numpy()
    k = np.searchsorted(s0, at, side="right") - 1
    hit = (k >= 0) & (s1[np.clip(k, 0, None)] > at)
    out[hit] = num[k[hit]]
    return out


def device_syncs(trace: pd.DataFrame) -> pd.DataFrame:
    """CPU calls that wait for the GPU: one row per call with rank, step (-1 outside steps), call, kind, op,
    ts_us, blocked_us (the call's duration), gpu_idle_during_us (GPU idle while the call waits: the queue had
    drained, or the awaited work runs where the trace cannot see it) and gpu_idle_after_us (GPU idle from the call's
    end to the next GPU op).

    kind: "synchronize" (stream/device/event synchronize), "d2h_copy" (a device→host copy the CPU waits for: a
    blocking memcpy, or an async one into pageable memory). `op` is the outermost CPU op around the call (e.g.
    aten::item, aten::to): the line of user code to look at. The harm is gpu_idle_after_us: the GPU queue drained
    while the CPU waited, and stays empty until the CPU launches again.
    """
    cols = ["rank", "step", "call", "kind", "op", "ts_us", "blocked_us", "gpu_idle_during_us", "gpu_idle_after_us"]
    parts = []
    steps = windows(trace)
    for rank, t in trace.groupby("rank", sort=True):
        cat = t["cat"].astype(str)
        rt = t[cat.isin(RUNTIME_CATS)]
        if rt.empty:
            continue
        rname = rt["name"].astype(str)
        ops = _gpu_ops(t)
        copies = ops[ops["cat"].astype(str).isin({"gpu_memcpy", "Memcpy"})]
        copy_by_corr = pd.Series(copies["name"].astype(str).to_numpy(), index=copies["correlation"].to_numpy())
        copy_by_corr = copy_by_corr[~copy_by_corr.index.duplicated()]
        copy_name = pd.Series(rt["correlation"].map(copy_by_corr).astype("string").fillna("").to_numpy(),
                              index=rt.index, dtype="string")
        d2h = copy_name.str.contains("DtoH", regex=False)
        is_sync = rname.isin(SYNC_CALLS)
        blocking = is_sync | (rname.isin(BLOCKING_COPY_CALLS) & (d2h | (copy_name == ""))) | (
            rname.isin(ASYNC_COPY_CALLS) & d2h & copy_name.str.contains("Pageable", regex=False))
        calls = rt[blocking.to_numpy()]
        if calls.empty:
            continue
        ts, dur = calls["ts_us"].to_numpy(), calls["dur_us"].to_numpy()
        end = ts + dur
        op_start = np.sort(ops["ts_us"].to_numpy())
        k = np.searchsorted(op_start, end)
        idle_after = np.where(k < len(op_start), op_start[np.clip(k, 0, max(len(op_start) - 1, 0))] - end
                              if len(op_start) else np.nan, np.nan)
        bs, be = _busy(ops)
        if len(bs):  # per call (one thread's calls never overlap): its length inside the GPU's span, less busy time
            a, b = np.clip(ts, bs[0], be.max()), np.clip(end, bs[0], be.max())
            during = (b - a) - (covered_before(bs, be, b) - covered_before(bs, be, a))
        else:
            during = np.zeros(len(ts))
        parts.append(pd.DataFrame({
            "rank": rank, "step": _step_of(steps, rank, ts), "call": calls["name"].astype(str).to_numpy(),
            "kind": np.where(is_sync[blocking].to_numpy(), "synchronize", "d2h_copy"),
            "op": _outermost(t[cat == "cpu_op"], calls["tid"].to_numpy(), ts),
            "ts_us": ts, "blocked_us": dur, "gpu_idle_during_us": during, "gpu_idle_after_us": idle_after}))
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


def sync_share(trace: pd.DataFrame, syncs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (rank, step): syncs (count), blocked_us (CPU time in them), exposed_us (GPU idle while they wait and
    right after them until the next GPU op, overlapping stretches counted once) and share (exposed_us / step time,
    0-1)."""
    cols = ["rank", "step", "dur_us", "syncs", "blocked_us", "exposed_us", "share"]
    steps = windows(trace)
    syncs = device_syncs(trace) if syncs is None else syncs
    busy = {rank: _busy(_gpu_ops(t)) for rank, t in trace.groupby("rank", sort=True)} if len(syncs) else {}
    rows = []
    for (rank, step, s0, dur) in steps.itertuples(index=False):
        sy = syncs[(syncs["rank"] == rank) & (syncs["step"] == step)]
        start = sy["ts_us"].to_numpy(np.float64)
        stop = start + sy["blocked_us"].to_numpy() + np.nan_to_num(sy["gpu_idle_after_us"].to_numpy(), nan=0.0)
        exposed = _idle_within(busy[rank], start, stop, s0, s0 + dur) if len(sy) else 0.0
        rows.append((rank, step, dur, len(sy), float(sy["blocked_us"].sum()), exposed,
                     exposed / dur if dur > 0 else np.nan))
    return pd.DataFrame(rows, columns=cols)


def allocator_stalls(trace: pd.DataFrame) -> pd.DataFrame:
    """Per (rank, step): allocator calls (ALLOC_CALL_RE) on the CPU, blocked_us (CPU time in them), idle_us (GPU
    idle while the host sits in them, overlapping calls counted once), share (idle_us / step time, 0-1), level
    ("high" ≥ 15 %, "moderate" ≥ 3 %: the thresholds of device syncs, the same kind of host-side wait) and top
    (the most frequent calls, "hipFree ×120"). With PyTorch's caching allocator these calls are rare after the
    first steps; many of them mean the cache is off or keeps missing (fragmentation, memory near full)."""
    cols = ["rank", "step", "dur_us", "calls", "blocked_us", "idle_us", "share", "level", "top"]
    rt = trace[trace["cat"].astype(str).isin(RUNTIME_CATS)]
    rt = rt[rt["name"].astype(str).str.match(ALLOC_CALL_RE)]
    if rt.empty:
        return pd.DataFrame(columns=cols)
    busy = {rank: _busy(_gpu_ops(t)) for rank, t in trace[trace["rank"].isin(rt["rank"].unique())].groupby("rank")}
    rows = []
    for (rank, step, s0, dur) in windows(trace).itertuples(index=False):
        calls = rt[(rt["rank"] == rank) & (rt["ts_us"] >= s0) & (rt["ts_us"] < s0 + dur)]
        if calls.empty:
            rows.append((rank, step, dur, 0, 0.0, 0.0, 0.0, "ok", ""))
            continue
        ts = calls["ts_us"].to_numpy(np.float64)
        idle = _idle_within(busy[rank], ts, ts + calls["dur_us"].to_numpy(np.float64), s0, s0 + dur)
        share = idle / dur if dur > 0 else np.nan
        top = ", ".join(f"{n} ×{c}" for n, c in calls["name"].astype(str).value_counts().head(3).items())
        rows.append((rank, step, dur, len(calls), float(calls["dur_us"].sum()), idle, share,
                     share_level(share, LAUNCH_MODERATE, LAUNCH_HIGH, "high"), top))
    return pd.DataFrame(rows, columns=cols)


def pageable_copies(trace: pd.DataFrame) -> pd.DataFrame:
    """Per (rank, copy name): copies between the GPU and pageable (unpinned) host memory, with count, bytes,
    time_us and share of that rank's copy time. Pageable copies are staged by the driver and block the CPU."""
    cols = ["rank", "name", "count", "bytes", "time_us", "share_of_copy_time"]
    cp = trace[trace["cat"].astype(str).isin({"gpu_memcpy", "Memcpy"})]
    if cp.empty:
        return pd.DataFrame(columns=cols)
    total = cp.groupby("rank")["dur_us"].sum()
    pg = cp[cp["name"].astype(str).str.contains("Pageable")]
    if pg.empty:
        return pd.DataFrame(columns=cols)
    g = pg.groupby(["rank", pg["name"].astype(str).rename("name")])
    out = g.agg(count=("dur_us", "size"), bytes=("bytes", "sum"), time_us=("dur_us", "sum")).reset_index()
    out["share_of_copy_time"] = out["time_us"] / out["rank"].map(total)
    return out[cols]


def launch_bound(trace: pd.DataFrame, min_kernels: int = 20, syncs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (rank, step): is the GPU starved by the CPU's kernel-launch rate?

    Columns: kernels (GPU ops launched in the step), gpu_busy_frac (GPU busy share of the step, all streams),
    median_kernel_us, launch_interval_us (the mean time between consecutive launch calls, leaving out those that hold
    a DataLoader wait, a device sync or an allocator call: the rate the CPU issues work at; a median would take a
    burst of back-to-back launches for the rate and miss the Python between the bursts: BERT-small inference on an
    MI300X launches at a median 4.3 µs, a mean 24 µs), launch_gap_us (GPU idle in gaps before an op whose launch had not started when the GPU went idle, counting only gaps shorter than four
    launch intervals — the gaps a launch-rate-limited CPU leaves; longer ones are the host busy elsewhere, and time
    inside DataLoader waits, device syncs or allocator calls is excluded), launch_share (launch_gap_us / step time), level ("high"
    ≥ 15 %, "moderate" ≥ 3 %, else "ok"; assessed only when the step has ≥ `min_kernels` ops whose median duration
    is below the launch interval, i.e. the GPU drains work faster than the CPU issues it).
    """
    cols = ["rank", "step", "dur_us", "kernels", "gpu_busy_frac", "median_kernel_us", "launch_interval_us",
            "launch_gap_us", "launch_share", "level"]
    steps = windows(trace)
    if steps.empty:
        return pd.DataFrame(columns=cols)
    syncs = device_syncs(trace) if syncs is None else syncs
    rows = []
    for rank, t in trace.groupby("rank", sort=True):
        ops = _gpu_ops(t)
        rt = t[t["cat"].astype(str).isin(RUNTIME_CATS) & (t["correlation"] >= 0)]
        launch_ts = pd.Series(rt["ts_us"].to_numpy(), index=rt["correlation"].to_numpy())
        launch_ts = launch_ts[~launch_ts.index.duplicated()]
        op_launch = ops["correlation"].map(launch_ts).to_numpy()
        names = t["name"].astype(str)
        dl = t[names.str.contains(DATALOADER_RE) & (t["stream"] == -1)]
        sy = syncs[syncs["rank"] == rank]
        al = t[t["cat"].astype(str).isin(RUNTIME_CATS) & names.str.match(ALLOC_CALL_RE)]
        excuse_s = np.r_[dl["ts_us"].to_numpy(), sy["ts_us"].to_numpy(), al["ts_us"].to_numpy()]
        excuse_e = np.r_[(dl["ts_us"] + dl["dur_us"]).to_numpy(), (sy["ts_us"] + sy["blocked_us"]).to_numpy(),
                         (al["ts_us"] + al["dur_us"]).to_numpy()]
        waits = merge_intervals(excuse_s, excuse_e) if len(excuse_s) else (excuse_s, excuse_e)
        o_ts, o_end = ops["ts_us"].to_numpy(), (ops["ts_us"] + ops["dur_us"]).to_numpy()
        for (_, step, s0, dur) in steps[steps["rank"] == rank].itertuples(index=False):
            s1 = s0 + dur
            in_step = np.where(np.isfinite(op_launch), (op_launch >= s0) & (op_launch < s1),
                               (o_ts >= s0) & (o_ts < s1))
            n = int(in_step.sum())
            busy = _union_within(o_ts, o_end, s0, s1)
            lt = np.sort(launch_ts[(launch_ts >= s0) & (launch_ts < s1)].to_numpy())
            interval = _issue_interval(lt, *waits)
            kern = float(np.median(o_end[in_step] - o_ts[in_step])) if n else np.nan
            max_gap = 4 * interval if np.isfinite(interval) else np.inf
            host_wait = _host_wait(o_ts, o_end, op_launch, s0, s1, excuse_s, excuse_e, max_gap)
            share = host_wait / dur if dur > 0 else np.nan
            assessable = n >= min_kernels and np.isfinite(kern) and np.isfinite(interval)
            level = (share_level(share, LAUNCH_MODERATE, LAUNCH_HIGH, "high") if kern < interval else "ok") \
                if assessable else "unknown"
            rows.append((rank, step, dur, n, busy / dur if dur > 0 else np.nan, kern, interval, host_wait, share,
                         level))
    return pd.DataFrame(rows, columns=cols)


def _issue_interval(lt: np.ndarray, wait_s: np.ndarray, wait_e: np.ndarray) -> float:
    """Mean µs between consecutive launch calls `lt` (sorted), leaving out the intervals that hold a wait (merged,
    sorted [wait_s, wait_e): DataLoader, device sync, allocator call): the rate the CPU issues work at while it
    issues work. NaN with fewer than two intervals left."""
    if len(lt) < 3:
        return np.nan
    a, b = lt[:-1], lt[1:]
    k = np.searchsorted(wait_e, a, side="right")  # the first wait ending after each interval starts
    held = (k < len(wait_s)) & (wait_s[np.minimum(k, len(wait_s) - 1)] < b) if len(wait_s) else np.zeros(len(a), bool)
    free = (b - a)[~held]
    return float(free.mean()) if len(free) >= 2 else np.nan


def _host_wait(o_ts, o_end, op_launch, s0, s1, excuse_s, excuse_e, max_gap: float = np.inf) -> float:
    """GPU idle time in [s0, s1) spent waiting for launches: gaps (shorter than `max_gap`) in the union of GPU ops
    (all streams) before an op whose launch call started after the gap began, minus time covered by `excuse`."""
    sel = (o_end > s0) & (o_ts < s1)
    if sel.sum() < 2:
        return 0.0
    order = np.argsort(o_ts[sel], kind="stable")
    ts, end, launch = o_ts[sel][order], o_end[sel][order], op_launch[sel][order]
    run_end = np.maximum.accumulate(end)
    gap_start, gap_end = run_end[:-1], ts[1:]
    is_gap = (gap_end > gap_start) & (launch[1:] > gap_start) & (gap_end - gap_start < max_gap)
    gs, ge = np.clip(gap_start[is_gap], s0, s1), np.clip(gap_end[is_gap], s0, s1)
    total = float(np.sum(np.maximum(ge - gs, 0.0)))
    if total <= 0 or not len(excuse_s):
        return total
    # subtract the parts of those gaps covered by DataLoader waits and device syncs
    cs, ce = merge_intervals(np.clip(excuse_s, s0, s1), np.clip(excuse_e, s0, s1))
    covered = 0.0
    for a, b in zip(gs, ge, strict=True):
        covered += float(np.sum(np.clip(np.minimum(ce, b) - np.maximum(cs, a), 0.0, None)))
    return max(total - covered, 0.0)
