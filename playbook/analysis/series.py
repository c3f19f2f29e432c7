"""Telemetry split per GPU (GpuSeries: seconds since the first sample and one array per metric) and the
common-grid helpers the oscillation and per-GPU analyses share (bin means, group means)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from playbook.model import schema

GAP_FACTOR = 3.0  # a sampling gap longer than this many intervals splits a series (a lost poll or two does not)
MAX_GRID = 1 << 18  # bins per series for the FFT path (coarser bins beyond)
PART_MEMORY_TOL = 0.02  # one SKU: memory.total within 2% (the rule sku_limit_refs had; 40 vs 80 GB parts differ 2x)


def mixed_models(counts: dict[str, int], hosts: int) -> str:
    """"the box mixes models: 1× A, 1× B" (one host; "the GPUs mix models" over several): the parts, most first."""
    what = ", ".join(f"{n}× {m}" for m, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{'the box mixes' if hosts == 1 else 'the GPUs mix'} models: {what}"


@dataclass
class GpuSeries:
    """Telemetry split per GPU: seconds since `t0` and metric arrays, concatenated with `offsets` (G+1)."""

    ids: list[str]
    hosts: list[str]
    index: list[int]
    t0: pd.Timestamp | None
    offsets: np.ndarray
    t: np.ndarray
    values: dict[str, np.ndarray]
    warnings: list[str] = field(default_factory=list)
    models: dict[str, str] = field(default_factory=dict)  # GPU id -> product name, where the input names it
    job_only: bool = False  # job_members.job_gpus has left out the GPUs this job does not use (not asked again)

    def __len__(self) -> int:
        return len(self.ids)

    def parts(self) -> np.ndarray:
        """Per GPU an int label; GPUs with the same label are one part: the same product name where the input names
        it (nvidia-smi `name`), else the same memory.total within PART_MEMORY_TOL where recorded, else all one part.
        Clocks and power are a part's physics: they are compared within a part only (a box may mix models)."""
        mem = self.values.get("mem_total_mib")
        keys: list[tuple] = []
        for g, gid in enumerate(self.ids):
            name = self.models.get(gid, "")
            m = float(np.nanmedian(v)) if mem is not None and np.isfinite(
                v := mem[self.offsets[g]:self.offsets[g + 1]]).any() else math.nan
            keys.append(("name", name) if name else ("mem", m) if math.isfinite(m) else ("",))
        mems = sorted({k[1] for k in keys if k[0] == "mem"})
        cluster, start = {}, math.nan
        for m in mems:  # memory sizes within PART_MEMORY_TOL of a cluster's smallest are one size
            if not m <= start * (1 + PART_MEMORY_TOL):
                start = m
            cluster[m] = start
        keys = [("mem", cluster[k[1]]) if k[0] == "mem" else k for k in keys]
        order = {k: i for i, k in enumerate(dict.fromkeys(keys))}
        return np.array([order[k] for k in keys], dtype=np.int64)

    def get(self, g: int, column: str = "util_pct", dropna: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(t_s, x) for GPU number g; NaN values dropped unless `dropna` is False."""
        a, b = self.offsets[g], self.offsets[g + 1]
        t, x = self.t[a:b], self.values[column][a:b]
        if dropna:
            ok = np.isfinite(x)
            if not ok.all():
                return t[ok], x[ok]
        return t, x

    def interval(self, g: int) -> float:
        """Median sampling interval of GPU g in seconds (NaN with < 2 samples)."""
        cache = self.__dict__.setdefault("_intervals", {})
        if g not in cache:
            a, b = self.offsets[g], self.offsets[g + 1]
            dt = np.diff(self.t[a:b])
            dt = dt[dt > 0]
            cache[g] = float(np.median(dt)) if len(dt) else float("nan")
        return cache[g]

    def common_grid(self) -> tuple[float, float, int]:
        """(dt, t_start, n_bins) of the grid every GPU is compared on: the median sampling interval over the
        recorded span, coarsened to at most MAX_GRID bins."""
        intervals = np.array([self.interval(g) for g in range(len(self))])
        dt = float(np.nanmedian(intervals)) if np.isfinite(intervals).any() else 1.0
        lo, hi = self.span
        n_bins = max(int((hi - lo) / dt) + 1, 1)
        if n_bins > MAX_GRID:
            dt *= math.ceil(n_bins / MAX_GRID)
            n_bins = int((hi - lo) / dt) + 1
        return dt, lo, n_bins

    @property
    def span(self) -> tuple[float, float]:
        return (float(self.t.min()), float(self.t.max())) if len(self.t) else (0.0, 0.0)

    def subset(self, gpus: list[int]) -> GpuSeries:
        """The same series restricted to GPU numbers `gpus` (in that order)."""
        parts = [np.arange(self.offsets[g], self.offsets[g + 1]) for g in gpus]
        idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        offsets = np.r_[0, np.cumsum([len(p) for p in parts])].astype(np.int64)
        return GpuSeries([self.ids[g] for g in gpus], [self.hosts[g] for g in gpus], [self.index[g] for g in gpus],
                         self.t0, offsets, self.t[idx], {c: v[idx] for c, v in self.values.items()}, [],
                         self.models)

    def grid_means(self, column: str, dt: float, t_start: float, n_bins: int) -> np.ndarray:
        """(G × n_bins) float32 means of `column` per bin (NaN where a GPU has no valid sample)."""
        cache = self.__dict__.setdefault("_grid_keys", {})
        ck = (dt, t_start, n_bins)
        if ck not in cache:
            cache.clear()
            # int32 indices where the grid and the samples allow (half the memory of three per-sample arrays)
            itype = np.int32 if max(len(self) * n_bins, len(self.t)) < 2**31 else np.int64
            key = np.clip((self.t - t_start) / dt, 0, n_bins - 1).astype(itype)  # (clipped as floats: no wrap)
            key += np.repeat(np.arange(len(self), dtype=itype) * itype(n_bins), np.diff(self.offsets))
            # (sorted when samples are in (GPU, time) order, as gpu_series makes them)
            runs = bool(np.all(key[1:] >= key[:-1]))
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]).astype(itype) if len(key) and runs else None
            counts = None if starts is None else np.diff(np.r_[starts, len(key)]).astype(itype)
            cache[ck] = key, starts, counts, _run_plan(starts, counts)
        key, starts, counts, plan = cache[ck]  # (bin of each sample, where each bin's run starts, its length,
        # the passes that add a run's later samples)
        x = self.values[column]
        ok = np.isfinite(x)
        size = len(self) * n_bins
        if not ok.any():  # a column the source lacks (NaN throughout): no sums to take
            return np.full((len(self), n_bins), np.nan, dtype=np.float32)
        distinct = starts is not None and len(starts) == len(key)
        if distinct and len(key) == size:  # one sample in every bin of every GPU: the grid is x
            out = x.astype(np.float32)
            if not ok.all():
                out[~ok] = np.nan
            return out.reshape(len(self), n_bins)
        out = np.full(size, np.nan, dtype=np.float32)
        if distinct:  # the usual case (polls no closer than the grid): a bin's mean is its sample
            if ok.all():
                out[key] = x
            else:
                out[key[ok]] = x[ok]
        elif ok.all() and starts is not None:  # a bin's samples are one run of the sorted keys: sum each run
            sums = _run_sums(x, starts, plan)
            sums /= counts
            out[key[starts]] = sums
        else:
            s = np.bincount(key[ok], weights=x[ok], minlength=size)
            c = np.bincount(key[ok], minlength=size)
            with np.errstate(invalid="ignore", divide="ignore"):
                out = (s / c).astype(np.float32)
        return out.reshape(len(self), n_bins)

    def quantiles(self, column: str, qs: tuple, keep: np.ndarray | None = None) -> list[np.ndarray]:
        """Per GPU, row_quantiles of its finite values of `column` (only the samples where `keep`, a bool per
        sample, when given; NaN without any): one sort of a NaN-padded (G × longest series) grid, or a loop over
        GPUs when the lengths differ so much that padding would more than double the column."""
        lengths = np.diff(self.offsets)
        width = int(lengths.max()) if len(lengths) else 0
        if len(self) and len(self) * width == len(self.t):  # every GPU has as many samples: the column is the grid
            grid = self.values[column].reshape(len(self), width)
            ok = np.isfinite(grid)
            if keep is not None:
                ok &= keep.reshape(len(self), width)
            return row_quantiles(grid, ok, qs)
        x = self.values[column] if keep is None else np.where(keep, self.values[column], np.nan)
        if len(self) * width <= 2 * len(self.t) + 4096:
            cols = np.arange(width)[None, :]
            idx = np.minimum(self.offsets[:-1, None] + cols, max(len(self.t) - 1, 0))
            grid = np.where(cols < lengths[:, None], x[idx] if len(self.t) else np.nan, np.nan)
            return row_quantiles(grid, np.isfinite(grid), qs)
        out = [np.full(len(self), np.nan) for _ in qs]
        for g in range(len(self)):
            v = x[self.offsets[g]:self.offsets[g + 1]]
            v = v[np.isfinite(v)]
            for o, q in zip(out, qs, strict=True):
                o[g] = row_quantiles(v[None, :], np.ones((1, len(v)), bool), (q,))[0][0] if len(v) else np.nan
        return out

    def counts(self, keep: np.ndarray) -> np.ndarray:
        """Per GPU, how many of its samples `keep` (a bool per sample) marks."""
        out = np.zeros(len(self), dtype=np.int64)
        has = self.offsets[1:] > self.offsets[:-1]  # (reduceat's segments run from one start to the next)
        if has.any():
            out[has] = np.add.reduceat(keep, self.offsets[:-1][has], dtype=np.int64)
        return out

    def time_clusters(self) -> list[list[int]]:
        """GPUs grouped by overlapping time spans (separate recordings), largest group first."""
        spans = []
        for g in range(len(self)):
            a, b = self.offsets[g], self.offsets[g + 1]
            if b > a:
                spans.append((float(self.t[a]), float(self.t[b - 1]), g))
        spans.sort()
        clusters: list[list[int]] = []
        end = -math.inf
        for lo, hi, g in spans:
            tol = GAP_FACTOR * (self.interval(g) if np.isfinite(self.interval(g)) else 1.0)
            if clusters and lo <= end + tol:
                clusters[-1].append(g)
                end = max(end, hi)
            else:
                clusters.append([g])
                end = hi
        empty = [g for g in range(len(self)) if self.offsets[g + 1] == self.offsets[g]]
        if empty:
            (clusters[0] if clusters else clusters.append([]) or clusters[0]).extend(empty)
        return sorted((sorted(c) for c in clusters), key=lambda c: (-len(c), c[0]))


def _run_plan(starts: np.ndarray | None, counts: np.ndarray | None, max_passes: int = 8):
    """[(the runs with a j-th sample, where that sample is) for j = 1, 2, ...], or None beyond `max_passes`
    samples in a run: what _run_sums needs, computed once per grid (small: most bins hold one poll)."""
    if starts is None:
        return None
    longest = int(counts.max()) if len(counts) else 0
    steps = None
    if longest <= max_passes:
        steps = []
        for j in range(1, longest):
            more = np.flatnonzero(counts > j)
            steps.append((more, starts[more] + j))
    return steps


def _run_sums(x: np.ndarray, starts: np.ndarray, steps: list | None) -> np.ndarray:
    """Sums of the runs of x that start at `starts`, added in order as np.bincount adds them (the same floats):
    one vector pass per sample of the longest run (polls land one or two to a bin), np.add.reduceat when runs
    are long."""
    if steps is None:
        return np.add.reduceat(x, starts)
    sums = x[starts].astype(np.float64, copy=False)
    for more, at in steps:
        sums[more] += x[at]
    return sums


def _host_codes(host: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """pd.factorize(host.astype(str), sort=True): a code per row and the sorted host names; one min/max pass over
    an Arrow string column when every row names the same host (a single log: no hashing of millions of rows)."""
    if isinstance(host.array, pd.arrays.ArrowStringArray) and len(host):
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.array(host.array)
        if arr.null_count == 0:
            lo_hi = pc.min_max(arr)
            if lo_hi["min"] == lo_hi["max"]:
                return np.zeros(len(host), dtype=np.intp), pd.Index([lo_hi["min"].as_py()])
    return pd.factorize(host.astype(str), sort=True)


def gpu_series(telemetry: pd.DataFrame, columns: tuple[str, ...] = ("util_pct",),
               interval_s: float | None = None, models: dict[str, str] | None = None) -> GpuSeries:
    """Split `telemetry` per GPU (id "host:index"), times as float seconds since the first sample; `models`: the
    part each GPU is where the input names it (Bundle.meta GPU_MODELS: GpuSeries.parts).

    Rows without a time are dropped with a warning — unless no row has one, in which case samples are placed
    `interval_s` apart (1 s when not given) in their order within each GPU, also with a warning.
    """
    warnings: list[str] = []
    n = len(telemetry)
    if n == 0:
        return GpuSeries([], [], [], None, np.zeros(1, dtype=np.int64), np.zeros(0),
                         {c: np.zeros(0) for c in columns}, warnings)
    host_codes, host_names = _host_codes(telemetry["host"])
    gpu = telemetry["gpu"].to_numpy(dtype=np.int64)
    key = host_codes.astype(np.int64) * (int(gpu.max()) + 2) + (gpu + 1)
    times = telemetry["time"]
    has_time = times.notna().to_numpy()
    t0 = None
    if has_time.any():
        ns = times.dt.as_unit("ns").astype("int64").to_numpy() if has_time.all() else \
            np.where(has_time, times.dt.as_unit("ns").astype("int64").fillna(0).to_numpy(), 0)
        t0_ns = int(ns[has_time].min())
        t0 = pd.Timestamp(t0_ns, unit="ns", tz="UTC")
        t = (ns - t0_ns) / 1e9
        if not has_time.all():
            warnings.append(f"telemetry: {int((~has_time).sum())} of {n} samples have no timestamp and were left "
                            "out of the time analyses")
    else:
        step = interval_s if interval_s and interval_s > 0 else 1.0
        order_in_gpu = pd.Series(np.arange(n)).groupby(key).cumcount().to_numpy()
        t = order_in_gpu * step
        warnings.append(f"telemetry has no timestamps: samples placed {step:g} s apart in file order"
                        + ("" if interval_s else " (pass --interval to set the polling interval)"))
    keep = has_time if (has_time.any() and not has_time.all()) else np.ones(n, dtype=bool)
    in_order = bool(keep.all() and np.all(key[1:] >= key[:-1])
                    and np.all((t[1:] >= t[:-1]) | (key[1:] != key[:-1])))
    if in_order:  # schema.telemetry_frame sorts by host, gpu, time: usually nothing to do
        order = np.arange(n)
    else:
        idx = np.flatnonzero(keep)
        order = idx[np.lexsort((t[idx], key[idx]))]
    key_s, t_s = (key, t) if in_order else (key[order], t[order])
    starts = np.flatnonzero(np.r_[True, key_s[1:] != key_s[:-1]])
    offsets = np.r_[starts, len(order)].astype(np.int64)
    first = order[starts]
    hosts = [str(host_names[host_codes[i]]) for i in first]
    index = [int(gpu[i]) for i in first]
    values = {}
    for c in columns:
        col = telemetry[c].to_numpy(dtype=np.float64, na_value=np.nan) if c in telemetry else np.full(n, np.nan)
        values[c] = col if in_order else col[order]
    series = GpuSeries([schema.gpu_id(h, g) for h, g in zip(hosts, index, strict=True)], hosts, index, t0,
                       offsets, np.asarray(t_s, dtype=np.float64), values, warnings)
    series.models = models or {}
    return series


def binned_means(t: np.ndarray, x: np.ndarray, dt: float) -> tuple[np.ndarray, float]:
    """Means of x on a uniform grid of width dt starting at t[0] (NaN where empty); coarsened to MAX_GRID bins."""
    span = float(t[-1] - t[0]) if len(t) else 0.0
    factor = max(1, int(math.ceil((span / dt + 1) / MAX_GRID)))
    dt = dt * factor
    k = np.floor((t - t[0]) / dt + 0.5).astype(np.int64)
    nb = int(k[-1]) + 1
    s = np.bincount(k, weights=x, minlength=nb)
    c = np.bincount(k, minlength=nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(c > 0, s / np.maximum(c, 1), np.nan)
    return y, dt


def group_mean(series: GpuSeries, members: list[int], column: str, dt: float, t_start: float,
                n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the members' values on the common grid (bins with no member sample dropped)."""
    s = np.zeros(n_bins)
    c = np.zeros(n_bins)
    for g in members:
        t, x = series.get(g, column)
        k = np.clip(np.floor((t - t_start) / dt).astype(np.int64), 0, n_bins - 1)
        s += np.bincount(k, weights=x, minlength=n_bins)
        c += np.bincount(k, minlength=n_bins)
    ok = c > 0
    centers = t_start + (np.arange(n_bins) + 0.5) * dt
    return centers[ok], s[ok] / c[ok]


def hold_last(u: np.ndarray, valid: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Carry each GPU's last valid value forward over at most `limit` missing bins."""
    g_count, n = u.shape
    idx = np.where(valid, np.arange(n)[None, :], -1)
    idx = np.maximum.accumulate(idx, axis=1)
    ok = (idx >= 0) & (np.arange(n)[None, :] - idx <= limit)
    rows = np.arange(g_count)[:, None]
    out = np.where(ok, u[rows, np.maximum(idx, 0)], np.nan)
    return out, ok


def row_percentile(x: np.ndarray, keep: np.ndarray, q: float) -> np.ndarray:
    """np.percentile(x[g][keep[g]], q) of every row g at once: numpy's default (linear) method with its own
    arithmetic, so the very same floats; NaN for a row that keeps nothing. x: (G × n) floats, keep: bool."""
    return row_quantiles(x, keep, (q,))[0]


def row_quantiles(x: np.ndarray, keep: np.ndarray, qs: tuple) -> list[np.ndarray]:
    """row_percentile for each q of `qs` ("median": np.median's value, the mean of the middle two), sorting once."""
    a = np.where(keep, x, np.nan)
    a.sort(axis=1)  # each row's kept values first, in order (NaN sorts last); in place: one G × n copy, not two
    n = keep.sum(1)
    last = np.maximum(n - 1, 0)

    def at(k: np.ndarray) -> np.ndarray:
        return np.take_along_axis(a, k[:, None].astype(np.int64), axis=1)[:, 0]

    out = []
    for q in qs:
        if q == "median":
            lo, hi = at(last // 2), at(np.minimum(last // 2 + 1, last))
            val = np.where(n % 2 == 0, (lo + hi) / 2, lo)
        else:
            virtual = (n - 1) * np.true_divide(q, 100)  # numpy's virtual index for "linear"
            top = virtual >= last
            lo = at(np.where(top, last, np.floor(virtual)))
            hi = at(np.where(top, last, np.floor(virtual) + 1))
            gamma = virtual - np.floor(virtual)  # (at the top bound both ends are the same value)
            diff = hi - lo
            val = lo + diff * gamma.astype(a.dtype)  # a Python float weight takes the array's dtype in numpy
            val = np.where(gamma >= 0.5, hi - diff * (1 - gamma).astype(a.dtype), val)
        out.append(np.where(n > 0, val, np.nan))
    return out
