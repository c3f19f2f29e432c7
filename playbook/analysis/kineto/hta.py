"""Kineto traces, the Holistic Trace Analysis (HTA) way: each rank's rows prepared as HTA prepares them, and the
two breakdowns that reproduce HTA's figures (the `trace` table: schema.TRACE_COLUMNS; times in µs).

- `temporal_breakdown`: per rank, the GPU span (first GPU event start → last end) split into idle (no kernel, copy
  or fill running on any stream), compute (non-communication, non-memory kernels) and non-compute (NCCL kernels,
  copies, fills, GPU-side syncs running while no compute kernel does). Reproduces HTA's `get_temporal_breakdown`.
- `idle_breakdown`: per rank and stream, each gap before a GPU op classified as host wait (the CPU called the launch
  after the stream went idle: the host did not enqueue work in time), kernel wait (a gap < 30 µs between back-to-back
  ops: launch latency) or other (e.g. waiting on an event from another stream). Reproduces HTA's
  `get_idle_time_breakdown`.
- `profiler_steps` / `windows`: the ProfilerStep#N steps (Paddle's ProfileStep#N alike) (else the iterations between DataLoader next() calls, else
  each rank's whole span) the per-step analyses assess.

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

import numpy as np
import pandas as pd

from playbook.analysis.intervals import covered_before, merge_intervals

# GPU work that occupies a stream. gpu_user_annotation rows are projections of CPU annotations: never work.
GPU_WORK_CATS = frozenset({"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "cuda_sync",
                           "mtia_ccp_events"})
IDLE_OP_CATS = frozenset({"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "mtia_ccp_events"})
DEVICE_SYNC_NAMES = frozenset({"Event Sync", "Context Sync"})
KERNEL_WAIT_US = 30.0  # HTA's consecutive_kernel_delay: gaps shorter than this are launch latency

COMM_KERNEL_RE = re.compile(r"^nccl.*Kernel")  # ncclKernel_* (NCCL < 2.19) and ncclDevKernel_* (newer)
MEMORY_KERNEL_RE = re.compile(r"^(Memcpy|Memset|dma)")
NOT_COMPUTE_RE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
# a profiled step's mark: PyTorch's ProfilerStep#N, Paddle's ProfileStep#N
PROFILER_STEP_RE = re.compile(r"Profiler?Step\s*#\s*(\d+)")
_STEP_MARK = "ProfilerStep|ProfileStep#"
DATALOADER_RE = re.compile(r"DataLoader|dataloader|_DataLoaderIter|enumerate\(DataLoader\)")
MIN_LOADER_CALLS = 3  # next() calls that make a loop of iterations (two or more whole ones)


def kernel_kind(name: str) -> str:
    """HTA's kernel classes: "communication" (NCCL), "memory" (copies/fills), "computation" or "other"."""
    if COMM_KERNEL_RE.match(name):
        return "communication"
    if MEMORY_KERNEL_RE.match(name):
        return "memory"
    if not NOT_COMPUTE_RE.match(name):
        return "computation"
    return "other"


def _ranks(trace: pd.DataFrame) -> list[int]:
    return sorted(int(r) for r in trace["rank"].unique())


def _rounded(t: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Start rounded up and end rounded down to whole µs (identity for µs-resolution traces)."""
    ts = t["ts_us"].to_numpy(dtype=np.float64)
    end = ts + t["dur_us"].to_numpy(dtype=np.float64)
    return np.ceil(ts), np.floor(end)


def _n_profiler_steps(trace: pd.DataFrame) -> int:
    names = pd.Series(trace["name"].unique()).astype(str)
    return int(names.str.contains(_STEP_MARK).sum())


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
            steps = cpu & t["name"].astype(str).str.contains(_STEP_MARK).to_numpy()
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


TIMELINE_BINS = 120  # bins of a trace's busy timeline: a heatmap row a page can show, 1/120 of the window each


def busy_timeline(trace: pd.DataFrame, bins: int = TIMELINE_BINS) -> pd.DataFrame:
    """Per rank, the share of each time bin its GPU runs work (kernels, copies, memsets, syncs; the union over
    streams, 0-1) over the ranks' common window, first to last GPU op; columns time (UTC: the trace's µs from
    the epoch, as Kineto writes them), rank, busy_frac. Empty without GPU work. The profiled window of a trace is
    what a poll of utilization.gpu averages over, at a profiler's resolution."""
    views = {r: v for r, v in _views(trace).items() if v.is_work.any()}
    if not views:
        return pd.DataFrame(columns=["time", "rank", "busy_frac"])
    lo = min(float(np.nanmin(v.ts[v.is_work])) for v in views.values())  # the GPUs' window: a stray host event
    hi = max(float(np.nanmax(v.end[v.is_work])) for v in views.values())  # far from the rest does not stretch it
    edges = np.linspace(lo, hi, bins + 1) if hi > lo else np.array([lo, lo + 1.0])
    width = np.diff(edges)
    out = []
    for rank, v in views.items():
        work = np.flatnonzero(v.is_work)
        starts, ends = merge_intervals(v.ts[work], v.end[work])
        covered = np.diff(covered_before(starts, ends, edges))
        out.append(pd.DataFrame({"time": pd.to_datetime(edges[:-1], unit="us", utc=True), "rank": rank,
                                 "busy_frac": np.clip(covered / width, 0.0, 1.0)}))
    return pd.concat(out, ignore_index=True)


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


def profiler_steps(trace: pd.DataFrame) -> pd.DataFrame:
    """ProfilerStep#N annotations: one row per (rank, step) with ts_us, dur_us (CPU wall time of the step)."""
    names = trace["name"].astype(str)
    steps = trace[names.str.match(_STEP_MARK) & (trace["stream"] == -1)]
    if steps.empty:
        return pd.DataFrame(columns=["rank", "step", "ts_us", "dur_us"])
    num = steps["name"].astype(str).str.extract(PROFILER_STEP_RE, expand=False)
    out = pd.DataFrame({"rank": steps["rank"].to_numpy(), "step": pd.to_numeric(num, errors="coerce").to_numpy(),
                        "ts_us": steps["ts_us"].to_numpy(), "dur_us": steps["dur_us"].to_numpy()})
    out = out.dropna(subset=["step"]).astype({"step": "int64"})
    out = out.sort_values(["rank", "ts_us"]).drop_duplicates(["rank", "step"]).reset_index(drop=True)
    return out


def loader_iterations(trace: pd.DataFrame) -> pd.DataFrame:
    """Training-loop iterations read from DataLoader next() calls when the trace marks no ProfilerStep (a profiler
    used without a schedule, or the legacy autograd profiler): `for batch in loader` calls next() once per
    iteration, so each call opens one, ending where the next opens (the last where the rank's trace ends). Per rank,
    the thread with the most DataLoader rows; nested rows (annotation, Python frames) merge into one call. Only
    ranks with ≥ MIN_LOADER_CALLS calls; same columns as profiler_steps, steps numbered from 0."""
    cols = ["rank", "step", "ts_us", "dur_us"]
    names = trace["name"].astype(str)
    dl = trace[names.str.contains(DATALOADER_RE) & (trace["stream"] == -1)]
    parts = []
    for rank, d in dl.groupby("rank", sort=True):
        d = d[d["tid"] == d["tid"].value_counts().idxmax()]
        ts, _ = merge_intervals(d["ts_us"].to_numpy(np.float64), (d["ts_us"] + d["dur_us"]).to_numpy(np.float64))
        if len(ts) < MIN_LOADER_CALLS:
            continue
        t = trace[trace["rank"] == rank]
        last = float((t["ts_us"] + t["dur_us"].fillna(0.0)).max())
        stop = np.r_[ts[1:], max(last, ts[-1])]
        parts.append(pd.DataFrame({"rank": rank, "step": np.arange(len(ts)), "ts_us": ts, "dur_us": stop - ts}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def windows(trace: pd.DataFrame) -> pd.DataFrame:
    """The windows the per-step analyses assess: ProfilerStep#N steps; when the trace marks none, the iterations
    between DataLoader next() calls (loader_iterations); failing both, each rank's whole traced span as one window,
    step 0. Same columns as profiler_steps."""
    steps = profiler_steps(trace)
    if len(steps) or trace.empty:
        return steps
    iterations = loader_iterations(trace)
    if len(iterations):
        return iterations
    end = trace["ts_us"] + trace["dur_us"].fillna(0.0)
    g = pd.DataFrame({"rank": trace["rank"], "ts": trace["ts_us"], "end": end}).groupby("rank")
    span = g.agg(ts_us=("ts", "min"), end=("end", "max")).reset_index()
    return pd.DataFrame({"rank": span["rank"].to_numpy(), "step": 0, "ts_us": span["ts_us"].to_numpy(),
                         "dur_us": (span["end"] - span["ts_us"] + 1.0).to_numpy()})
