"""Unions of time intervals (profiler rows in µs, utilization drops in s): merged, and their total length."""

from __future__ import annotations

import numpy as np


def merge_intervals(ts: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals [ts, end): sorted, non-overlapping (starts, ends)."""
    if not len(ts):
        return ts, end
    order = np.argsort(ts, kind="stable")
    ts, end = ts[order], end[order]
    run_end = np.maximum.accumulate(end)
    new = np.r_[True, ts[1:] > run_end[:-1]]
    group = np.cumsum(new) - 1
    starts = ts[new]
    ends = np.full(len(starts), -np.inf)
    np.maximum.at(ends, group, end)
    return starts, ends


def union_length(a: np.ndarray, b: np.ndarray) -> float:
    """Total length of the union of intervals [a_i, b_i] (units of a and b)."""
    starts, ends = merge_intervals(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    return float((ends - starts).sum())


def covered_before(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Length of the merged intervals (`merge_intervals` output) that lies before each time in `t`; so the part of
    [a, b) they cover is covered_before(..., b) - covered_before(..., a)."""
    t = np.asarray(t, dtype=np.float64)
    if not len(starts):
        return np.zeros(len(t))
    cum = np.r_[0.0, np.cumsum(ends - starts)]
    k = np.searchsorted(starts, t, side="right")  # intervals starting at or before t
    excess = np.where(k > 0, np.maximum(ends[np.clip(k - 1, 0, None)] - t, 0.0), 0.0)
    return cum[k] - excess


def true_runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of runs of True."""
    if not mask.any():
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    m = np.r_[False, mask, False].astype(np.int8)
    d = np.diff(m)
    start = np.flatnonzero(d == 1)
    stop = np.flatnonzero(d == -1)
    return start, stop - start
