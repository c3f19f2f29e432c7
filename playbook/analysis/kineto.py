"""Kineto trace analyses on the `trace` table (schema.TRACE_COLUMNS): where each rank's GPU time goes, and why.

- `temporal_breakdown`: per rank, the GPU span (first GPU event start → last end) split into idle (no kernel, copy
  or fill running on any stream), compute (non-communication, non-memory kernels) and non-compute (NCCL kernels,
  copies, fills, GPU-side syncs running while no compute kernel does). Reproduces Holistic Trace Analysis's
  `get_temporal_breakdown`.
- `idle_breakdown`: per rank and stream, each gap before a GPU op classified as host wait (the CPU called the launch
  after the stream went idle: the host did not enqueue work in time), kernel wait (a gap < 30 µs between back-to-back
  ops: launch latency) or other (e.g. waiting on an event from another stream). Reproduces HTA's
  `get_idle_time_breakdown`.
- `step_times`, `dataloader_share` (≥ 5 % of step time moderate, ≥ 20 % input-bound), `device_syncs` (D2H syncs
  inside steps), `launch_bound` (many tiny kernels, GPU idle while the CPU issues launches as fast as it can),
  `pageable_copies` (copies to/from pageable host memory, synchronous and slower than pinned ones).

Conventions shared with HTA so the figures agree with it: timestamps are first rounded inward to whole µs (start up,
end down; PyTorch's ns→µs export can otherwise make neighbours overlap), and when the traces hold two or more
distinct ProfilerStep#N names the last (usually incomplete) step of each rank is left out, together with the GPU
work launched in it or launched from outside the trace. One known difference: HTA times a GPU op whose launch call
is not in the trace against the trace's first event (its row 0); here that launch is unknown, so such a gap is never
host wait. On the HTA test traces the figures agree exactly; on the param DLRM traces two streams differ by 0.5 pp.
All times are µs unless a name says otherwise. Pure functions: no printing, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from playbook.analysis.intervals import merge_intervals

# GPU work that occupies a stream. gpu_user_annotation rows are projections of CPU annotations: never work.
GPU_WORK_CATS = frozenset({"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "cuda_sync",
                           "mtia_ccp_events"})
IDLE_OP_CATS = frozenset({"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "mtia_ccp_events"})
DEVICE_SYNC_NAMES = frozenset({"Event Sync", "Context Sync"})
KERNEL_WAIT_US = 30.0  # HTA's consecutive_kernel_delay: gaps shorter than this are launch latency

COMM_KERNEL_RE = re.compile(r"^nccl.*Kernel")  # ncclKernel_* (NCCL < 2.19) and ncclDevKernel_* (newer)
MEMORY_KERNEL_RE = re.compile(r"^(Memcpy|Memset|dma)")
NOT_COMPUTE_RE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
PROFILER_STEP_RE = re.compile(r"ProfilerStep\s*#\s*(\d+)")
DATALOADER_RE = re.compile(r"DataLoader|dataloader|_DataLoaderIter|enumerate\(DataLoader\)")

INPUT_MODERATE, INPUT_HIGH = 0.05, 0.20  # TF profiler: input share of step time
LAUNCH_MODERATE, LAUNCH_HIGH = 0.03, 0.15  # TF profiler: kernel-launch share of step time
# a training step needs a handful of host reads (loss, grad norm, lr); ≥ 100 syncs in one step is a per-element loop
PER_ELEMENT_SYNCS = 100


def kernel_kind(name: str) -> str:
    """HTA's kernel classes: "communication" (NCCL), "memory" (copies/fills), "computation" or "other"."""
    if COMM_KERNEL_RE.match(name):
        return "communication"
    if MEMORY_KERNEL_RE.match(name):
        return "memory"
    if not NOT_COMPUTE_RE.match(name):
        return "computation"
    return "other"


# ------------------------------------------------------------------ preparation

def _ranks(trace: pd.DataFrame) -> list[int]:
    return sorted(int(r) for r in trace["rank"].unique())


def _rounded(t: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Start rounded up and end rounded down to whole µs (identity for µs-resolution traces)."""
    ts = t["ts_us"].to_numpy(dtype=np.float64)
    end = ts + t["dur_us"].to_numpy(dtype=np.float64)
    return np.ceil(ts), np.floor(end)


def _n_profiler_steps(trace: pd.DataFrame) -> int:
    names = pd.Series(trace["name"].unique()).astype(str)
    return int(names.str.contains("ProfilerStep", regex=False).sum())


class _RankView:
    """One rank's rows after HTA's rounding and last-step filter, with the arrays the analyses need."""

    def __init__(self, t: pd.DataFrame, drop_last_step: bool):
        t = t.reset_index(drop=True)
        ts, end = _rounded(t)
        cat = t["cat"].astype(str).to_numpy()
        name = t["name"].astype(str).to_numpy()
        stream = t["stream"].to_numpy()
        corr = t["correlation"].to_numpy()
        is_work = np.isin(cat, list(GPU_WORK_CATS)) & (stream != -1)
        gpu_linked = (is_work & (corr >= 0)) | np.isin(name, list(DEVICE_SYNC_NAMES))
        cpu = ~gpu_linked
        self.filtered = False
        if drop_last_step:
            steps = cpu & t["name"].astype(str).str.contains("ProfilerStep", regex=False).to_numpy()
            if steps.any():
                last_start = ts[steps].max()
                keep_cpu = cpu & (ts < last_start)
                # GPU rows survive once per kept CPU row with the same correlation (an inner join, as in HTA)
                cpu_corr, counts = np.unique(corr[keep_cpu & (corr >= 0)], return_counts=True)
                mult = np.zeros(len(corr), dtype=np.int64)
                if len(cpu_corr):
                    pos = np.clip(np.searchsorted(cpu_corr, corr), 0, len(cpu_corr) - 1)
                    matched = gpu_linked & (cpu_corr[pos] == corr)
                    mult[matched] = counts[pos[matched]]
                rows = np.concatenate([np.repeat(np.flatnonzero(gpu_linked), mult[gpu_linked]),
                                       np.flatnonzero(keep_cpu)])
                self.filtered = True
                t, ts, end = t.iloc[rows].reset_index(drop=True), ts[rows], end[rows]
                cat, name, stream, corr = cat[rows], name[rows], stream[rows], corr[rows]
                is_work, gpu_linked, cpu = is_work[rows], gpu_linked[rows], cpu[rows]
        self.t, self.ts, self.end = t, ts, end
        self.cat, self.name, self.stream, self.corr = cat, name, stream, corr
        self.is_work, self.cpu = is_work, cpu

    def runtime_start(self, rows: np.ndarray) -> np.ndarray:
        """Start (µs) of the CPU call that launched each GPU row in `rows` (NaN when not in the trace)."""
        cpu_rows = np.flatnonzero(self.cpu & (self.corr >= 0))
        if not len(cpu_rows):
            return np.full(len(rows), np.nan)
        # the last CPU row with a given correlation wins, as in HTA's index_correlation assignment
        c = self.corr[cpu_rows]
        order = np.argsort(c, kind="stable")
        c_sorted, rows_sorted = c[order], cpu_rows[order]
        last = np.r_[c_sorted[1:] != c_sorted[:-1], True]
        keys, starts = c_sorted[last], self.ts[rows_sorted[last]]
        pos = np.clip(np.searchsorted(keys, self.corr[rows]), 0, len(keys) - 1)
        return np.where(keys[pos] == self.corr[rows], starts[pos], np.nan)


def _views(trace: pd.DataFrame) -> dict[int, _RankView]:
    drop_last = _n_profiler_steps(trace) >= 2
    return {r: _RankView(g, drop_last) for r, g in trace.groupby("rank", sort=True)}


# ------------------------------------------------------------------ HTA-parity breakdowns

def temporal_breakdown(trace: pd.DataFrame) -> pd.DataFrame:
    """Per rank: span_us, idle_us, compute_us, non_compute_us and their shares of the span in % (idle_pct, ...).

    span: first GPU op start → last GPU op end; idle: no GPU op running; compute: union of computation kernels;
    non_compute: the rest (communication, memory, sync). Ranks without GPU work are left out.
    """
    rows = []
    for rank, v in _views(trace).items():
        work = np.flatnonzero(v.is_work)
        if not len(work):
            continue
        starts, ends = merge_intervals(v.ts[work], v.end[work])
        span = float(ends[-1] - starts[0])
        busy = float(np.sum(ends - starts))
        names = pd.Series(v.name[work])
        kinds = names.map({n: kernel_kind(n) for n in names.unique()}).to_numpy()
        comp = work[kinds == "computation"]
        c_starts, c_ends = merge_intervals(v.ts[comp], v.end[comp])
        compute = float(np.sum(c_ends - c_starts))
        idle = span - busy
        rows.append({"rank": rank, "span_us": span, "idle_us": idle, "compute_us": compute,
                     "non_compute_us": span - compute - idle, "gpu_ops": len(work), "last_step_dropped": v.filtered})
    out = pd.DataFrame(rows, columns=["rank", "span_us", "idle_us", "compute_us", "non_compute_us", "gpu_ops",
                                      "last_step_dropped"])
    for part in ("idle", "compute", "non_compute"):
        out[f"{part}_pct"] = 100.0 * out[f"{part}_us"] / out["span_us"].where(out["span_us"] > 0)
    return out


def idle_breakdown(trace: pd.DataFrame, kernel_wait_us: float = KERNEL_WAIT_US) -> pd.DataFrame:
    """Per (rank, stream, category): idle_us and share (0-1 of that stream's idle time).

    Categories: host_wait (the op's launch call started after the previous op on the stream ended), kernel_wait
    (otherwise, a gap < `kernel_wait_us`), other. Only categories that occur on a stream are listed.
    """
    out = []
    for rank, v in _views(trace).items():
        ops = np.flatnonzero(np.isin(v.cat, list(IDLE_OP_CATS)) & (v.stream != -1))
        if not len(ops):
            continue
        launched = v.runtime_start(ops)
        for stream in pd.unique(v.stream[ops]):
            sel = v.stream[ops] == stream
            rows = ops[sel]
            order = np.argsort(v.ts[rows], kind="stable")
            ts, end, launch = v.ts[rows][order], v.end[rows][order], launched[sel][order]
            prev_end = np.r_[np.nan, end[:-1]]
            gap = ts - prev_end
            host = launch > prev_end
            kernel = ~host & (gap < kernel_wait_us)
            category = np.where(host, "host_wait", np.where(kernel, "kernel_wait", "other"))
            sums = pd.Series(gap).groupby(category).sum()
            total = float(sums.sum())
            for cat_name, value in sums.items():
                out.append({"rank": rank, "stream": int(stream), "category": cat_name, "idle_us": float(value),
                            "share": float(value) / total if total else np.nan})
    return pd.DataFrame(out, columns=["rank", "stream", "category", "idle_us", "share"])


# ------------------------------------------------------------------ steps and per-step signatures

LAUNCH_CALL_RE = re.compile(r"^(cuda|hip|cu)(LaunchKernel|LaunchKernelExC|ExtModuleLaunchKernel|ModuleLaunchKernel|"
                            r"LaunchCooperativeKernel|GraphLaunch|MemcpyAsync|MemsetAsync|Memcpy|Memset)")
SYNC_CALLS = frozenset({"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                        "hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize",
                        "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize"})
BLOCKING_COPY_CALLS = frozenset({"cudaMemcpy", "hipMemcpy", "cuMemcpyDtoH_v2", "cuMemcpyDtoH"})
ASYNC_COPY_CALLS = frozenset({"cudaMemcpyAsync", "hipMemcpyAsync", "hipMemcpyWithStream"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "hip_runtime"})


def step_times(trace: pd.DataFrame) -> pd.DataFrame:
    """ProfilerStep#N annotations: one row per (rank, step) with ts_us, dur_us (CPU wall time of the step)."""
    names = trace["name"].astype(str)
    steps = trace[names.str.startswith("ProfilerStep") & (trace["stream"] == -1)]
    if steps.empty:
        return pd.DataFrame(columns=["rank", "step", "ts_us", "dur_us"])
    num = steps["name"].astype(str).str.extract(PROFILER_STEP_RE, expand=False)
    out = pd.DataFrame({"rank": steps["rank"].to_numpy(), "step": pd.to_numeric(num, errors="coerce").to_numpy(),
                        "ts_us": steps["ts_us"].to_numpy(), "dur_us": steps["dur_us"].to_numpy()})
    out = out.dropna(subset=["step"]).astype({"step": "int64"})
    out = out.sort_values(["rank", "ts_us"]).drop_duplicates(["rank", "step"]).reset_index(drop=True)
    return out


def windows(trace: pd.DataFrame) -> pd.DataFrame:
    """The windows the per-step analyses assess: ProfilerStep#N steps, or — when the trace marks none (a profiler
    used without a schedule) — each rank's whole traced span as one window, step 0. Same columns as step_times."""
    steps = step_times(trace)
    if len(steps) or trace.empty:
        return steps
    end = trace["ts_us"] + trace["dur_us"].fillna(0.0)
    g = pd.DataFrame({"rank": trace["rank"], "ts": trace["ts_us"], "end": end}).groupby("rank")
    span = g.agg(ts_us=("ts", "min"), end=("end", "max")).reset_index()
    return pd.DataFrame({"rank": span["rank"].to_numpy(), "step": 0, "ts_us": span["ts_us"].to_numpy(),
                         "dur_us": (span["end"] - span["ts_us"] + 1.0).to_numpy()})


def _union_within(ts: np.ndarray, end: np.ndarray, lo: float, hi: float) -> float:
    """Length (µs) of the union of [ts, end) clipped to [lo, hi)."""
    a, b = np.clip(ts, lo, hi), np.clip(end, lo, hi)
    keep = b > a
    if not keep.any():
        return 0.0
    s, e = merge_intervals(a[keep], b[keep])
    return float(np.sum(e - s))


def dataloader_share(trace: pd.DataFrame) -> pd.DataFrame:
    """Per (rank, step): dataloader_us (union of DataLoader annotations inside the step), share (0-1), level.

    level: "input_bound" when share ≥ 20 %, "moderate" when ≥ 5 %, else "ok" (TensorFlow profiler's thresholds).
    """
    steps = step_times(trace)
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
        rows.append((rank, step, dur, used, share, _level(share, INPUT_MODERATE, INPUT_HIGH, "input_bound")))
    return pd.DataFrame(rows, columns=cols)


def _level(share: float, moderate: float, high: float, high_name: str) -> str:
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
    ts_us, blocked_us (the call's duration) and gpu_idle_after_us (GPU idle from the call's end to the next GPU op).

    kind: "synchronize" (stream/device/event synchronize), "d2h_copy" (a device→host copy the CPU waits for: a
    blocking memcpy, or an async one into pageable memory). `op` is the outermost CPU op around the call (e.g.
    aten::item, aten::to): the line of user code to look at. The harm is gpu_idle_after_us: the GPU queue drained
    while the CPU waited, and stays empty until the CPU launches again.
    """
    cols = ["rank", "step", "call", "kind", "op", "ts_us", "blocked_us", "gpu_idle_after_us"]
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
        parts.append(pd.DataFrame({
            "rank": rank, "step": _step_of(steps, rank, ts), "call": calls["name"].astype(str).to_numpy(),
            "kind": np.where(is_sync[blocking].to_numpy(), "synchronize", "d2h_copy"),
            "op": _outermost(t[cat == "cpu_op"], calls["tid"].to_numpy(), ts),
            "ts_us": ts, "blocked_us": dur, "gpu_idle_after_us": idle_after}))
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


def sync_share(trace: pd.DataFrame, syncs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (rank, step): syncs (count), blocked_us (CPU time in them), exposed_us (GPU idle right after them,
    overlapping stretches counted once) and share (exposed_us / step time, 0-1)."""
    cols = ["rank", "step", "dur_us", "syncs", "blocked_us", "exposed_us", "share"]
    steps = windows(trace)
    syncs = device_syncs(trace) if syncs is None else syncs
    rows = []
    for (rank, step, s0, dur) in steps.itertuples(index=False):
        sy = syncs[(syncs["rank"] == rank) & (syncs["step"] == step)]
        start = (sy["ts_us"] + sy["blocked_us"]).to_numpy()
        stop = start + np.nan_to_num(sy["gpu_idle_after_us"].to_numpy(), nan=0.0)
        exposed = _union_within(start, stop, s0, s0 + dur)
        rows.append((rank, step, dur, len(sy), float(sy["blocked_us"].sum()), exposed,
                     exposed / dur if dur > 0 else np.nan))
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
    median_kernel_us, median_launch_interval_us (between consecutive launch calls), launch_gap_us (GPU idle in
    gaps before an op whose launch had not started when the GPU went idle, counting only gaps shorter than four
    launch intervals — the gaps a launch-rate-limited CPU leaves; longer ones are the host busy elsewhere, and time
    inside DataLoader waits or device syncs is excluded), launch_share (launch_gap_us / step time), level ("high"
    ≥ 15 %, "moderate" ≥ 3 %, else "ok"; assessed only when the step has ≥ `min_kernels` ops whose median duration
    is below the median launch interval, i.e. the GPU drains work faster than the CPU issues it).
    """
    cols = ["rank", "step", "dur_us", "kernels", "gpu_busy_frac", "median_kernel_us", "median_launch_interval_us",
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
        excuse_s = np.r_[dl["ts_us"].to_numpy(), sy["ts_us"].to_numpy()]
        excuse_e = np.r_[(dl["ts_us"] + dl["dur_us"]).to_numpy(), (sy["ts_us"] + sy["blocked_us"]).to_numpy()]
        o_ts, o_end = ops["ts_us"].to_numpy(), (ops["ts_us"] + ops["dur_us"]).to_numpy()
        for (_, step, s0, dur) in steps[steps["rank"] == rank].itertuples(index=False):
            s1 = s0 + dur
            in_step = np.where(np.isfinite(op_launch), (op_launch >= s0) & (op_launch < s1),
                               (o_ts >= s0) & (o_ts < s1))
            n = int(in_step.sum())
            busy = _union_within(o_ts, o_end, s0, s1)
            lt = np.sort(launch_ts[(launch_ts >= s0) & (launch_ts < s1)].to_numpy())
            interval = float(np.median(np.diff(lt))) if len(lt) > 2 else np.nan
            kern = float(np.median(o_end[in_step] - o_ts[in_step])) if n else np.nan
            max_gap = 4 * interval if np.isfinite(interval) else np.inf
            host_wait = _host_wait(o_ts, o_end, op_launch, s0, s1, excuse_s, excuse_e, max_gap)
            share = host_wait / dur if dur > 0 else np.nan
            assessable = n >= min_kernels and np.isfinite(kern) and np.isfinite(interval)
            level = (_level(share, LAUNCH_MODERATE, LAUNCH_HIGH, "high") if kern < interval else "ok") \
                if assessable else "unknown"
            rows.append((rank, step, dur, n, busy / dur if dur > 0 else np.nan, kern, interval, host_wait, share,
                         level))
    return pd.DataFrame(rows, columns=cols)


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


# ------------------------------------------------------------------ summary for `diagnose`

def _median(values) -> float | None:
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    return float(v.median()) if len(v) else None


def _r(x: float | None, nd: int = 2) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


LEVEL_ORDER = ("high", "input_bound", "moderate")  # most severe first


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
      launch            {median_share, median_kernel_us, median_launch_interval_us, gpu_busy_frac, worst_rank,
                        level: ok|moderate|high|unknown}
      pageable          {copies, mbytes, time_ms, share_of_step, level} for copies from/to pageable host memory
      gpu_idle          {rank, share, basis, steps, explained_share, unexplained_share, host_wait, kernel_wait,
                        other} on the idlest rank (see _summ_idle); None without GPU ops
      findings          [{hypothesis, level: moderate|high, rank, evidence[, steps, steps_at_level]}] with
                        hypothesis ids data_starvation, host_sync, launch_bound, h2d_copy
    """
    trace = getattr(bundle, "trace", None)
    if trace is None or len(trace) == 0:
        return None
    meta = (getattr(bundle, "meta", {}) or {}).get("kineto", {})
    world = {m.get("world_size") for m in meta.values() if isinstance(m, dict)} - {None}
    out: dict[str, Any] = {"ranks": _ranks(trace), "world_size": max(world) if world else None}
    tb = temporal_breakdown(trace)
    out["temporal"] = [{"rank": int(r.rank), "span_ms": _r(r.span_us / 1e3, 3), "idle_pct": _r(r.idle_pct),
                        "compute_pct": _r(r.compute_pct), "non_compute_pct": _r(r.non_compute_pct)}
                       for r in tb.itertuples()]
    ib = idle_breakdown(trace)
    idle = []
    for rank, g in ib.groupby("rank"):
        per = g.groupby("category")["idle_us"].sum()
        tot = per.sum()
        idle.append({"rank": int(rank), **{f"{c}_pct": _r(100 * per.get(c, 0.0) / tot) if tot > 0 else None
                                           for c in ("host_wait", "kernel_wait", "other")}})
    out["idle"] = idle
    st = step_times(trace)
    out["steps"] = [{"rank": int(r), "steps": int(len(g)), "median_ms": _r(g["dur_us"].median() / 1e3, 3),
                     "max_ms": _r(g["dur_us"].max() / 1e3, 3)} for r, g in st.groupby("rank")]
    findings: list[dict] = []
    out["dataloader"] = _summ_dataloader(trace, findings)
    syncs = device_syncs(trace)
    out["syncs"] = _summ_syncs(trace, syncs, findings)
    lb = launch_bound(trace, syncs=syncs)
    out["launch"] = _summ_launch(lb, findings)
    out["pageable"] = _summ_pageable(trace, st, findings)
    out["gpu_idle"] = _summ_idle(tb, out, lb, marked=not st.empty)
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
        findings.append({"hypothesis": "data_starvation", "level": "high" if level == "input_bound" else "moderate",
                         "rank": worst, "evidence": f"rank {worst}: waiting on the DataLoader takes a median "
                         f"{100 * med:.1f}% of step time over {len(rows)} profiled steps (≥ 5% moderate, ≥ 20% "
                         f"input-bound)", "share": _r(med, 4), **_steps_at(rows, level)})
    return {"median_share": _r(med, 4), "max_share": _r(dl["share"].max(), 4), "worst_rank": worst, "level": level}


def _summ_syncs(trace, syncs, findings) -> dict:
    share = sync_share(trace, syncs)
    empty = {"per_step": 0, "blocked_share": None, "exposed_share": None, "top_ops": [], "worst_rank": None,
             "level": "unknown" if share.empty else "ok"}
    if share.empty or syncs.empty:
        return empty
    share = share.assign(level=[_level(s, LAUNCH_MODERATE, LAUNCH_HIGH, "high") for s in share["share"]])
    worst, level, rows = _by_rank_level(share, "share")
    in_steps = syncs[(syncs["rank"] == worst) & (syncs["step"] >= 0)]
    top = in_steps[in_steps["op"] != ""]["op"].value_counts().head(3)
    top_ops = [f"{op} ×{n}" for op, n in top.items()]
    blocked = _median(rows["blocked_us"] / rows["dur_us"])
    exposed = _median(rows["share"])
    if level in ("moderate", "high"):
        findings.append({"hypothesis": "host_sync", "level": level, "rank": worst, "evidence": (
            f"rank {worst}: {_median(rows['syncs']):.0f} device-to-host syncs per step "
            f"({', '.join(top_ops) or 'no enclosing op'}); the GPU then sits idle for a median {100 * exposed:.1f}% "
            f"of step time (CPU blocked {100 * blocked:.1f}%)"
            + ("; hundreds of tiny waits per step are .item() / .cpu() called per element in a Python loop: take "
               ".item()/.cpu() out of the loop (copy the whole tensor once, or keep the values on the GPU)"
               if _median(rows["syncs"]) >= PER_ELEMENT_SYNCS else "")), "share": _r(exposed, 4),
            **_steps_at(rows, level)})
    return {"per_step": _r(_median(rows["syncs"]), 1), "blocked_share": _r(blocked, 4),
            "exposed_share": _r(exposed, 4), "top_ops": top_ops, "worst_rank": worst, "level": level}


def _summ_launch(lb, findings) -> dict:
    if lb.empty:
        return {"median_share": None, "median_kernel_us": None, "median_launch_interval_us": None,
                "gpu_busy_frac": None, "worst_rank": None, "level": "unknown"}
    worst, level, rows = _by_rank_level(lb, "launch_share")
    med = _median(rows["launch_share"])
    res = {"median_share": _r(med, 4), "median_kernel_us": _r(_median(rows["median_kernel_us"])),
           "median_launch_interval_us": _r(_median(rows["median_launch_interval_us"])),
           "gpu_busy_frac": _r(_median(rows["gpu_busy_frac"]), 3), "worst_rank": worst, "level": level}
    if level in ("moderate", "high"):
        findings.append({"hypothesis": "launch_bound", "level": level, "rank": worst, "evidence": (
            f"rank {worst}: {_median(rows['kernels']):.0f} GPU ops per step with median {res['median_kernel_us']} µs, "
            f"shorter than the {res['median_launch_interval_us']} µs between launches; the GPU waits for launches "
            f"{100 * med:.1f}% of step time and is busy {100 * res['gpu_busy_frac']:.0f}% "
            f"(≥ 3% moderate, ≥ 15% high)"), "share": res["median_share"], **_steps_at(rows, level)})
    return res


def _summ_idle(tb: pd.DataFrame, out: dict, lb: pd.DataFrame, marked: bool = True) -> dict | None:
    """The GPU's idle share on the idlest rank and how much of it the specific analyses account for.

    share: 1 - GPU busy time ÷ step time, summed over the profiled steps (basis "steps"), or HTA's idle share of the
    span from the first to the last GPU op when the trace marks no steps (basis "span"). explained_share: the
    parts the dataloader, sync and launch analyses attribute (their median shares of step time); unexplained_share:
    the rest. host_wait / kernel_wait / other: how that rank's idle time splits (HTA's idle categories). None when
    the trace holds no GPU ops.
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
    explained = sum(float(v or 0.0) for v in (out["dataloader"].get("median_share"),
                                              out["syncs"].get("exposed_share"), out["launch"].get("median_share")))
    split = next((r for r in out["idle"] if r["rank"] == rank), {})
    return {"rank": rank, "share": _r(share, 4), "basis": basis, "steps": int(n_steps.get(rank, 0)),
            "explained_share": _r(min(explained, share), 4), "unexplained_share": _r(max(share - explained, 0.0), 4),
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
    level = _level(sh, INPUT_MODERATE, INPUT_HIGH, "high") if np.isfinite(sh) else "moderate"
    names = pc[pc["rank"] == worst]
    res = {"copies": int(pc["count"].sum()), "mbytes": _r(pc["bytes"].sum() / 1e6, 3),
           "time_ms": _r(pc["time_us"].sum() / 1e3, 3), "share_of_step": _r(sh, 4), "level": level}
    if level in ("moderate", "high"):
        findings.append({"hypothesis": "h2d_copy", "level": level, "rank": worst, "evidence": (
            f"rank {worst}: {int(names['count'].sum())} copies to/from pageable host memory "
            f"({', '.join(sorted(set(names['name'])))}) take "
            + (f"{100 * sh:.1f}% of profiled step time" if np.isfinite(sh) else f"{res['time_ms']} ms")
            + "; pinned memory (pin_memory=True, non_blocking=True) makes them asynchronous"),
            "share": _r(sh, 4) if np.isfinite(sh) else None})
    return res
