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


def chance_run(missed_share: float, n: int, alpha: float, min_len: int) -> int:
    """The shortest run of misses that chance does not explain among `n` polls missing `missed_share` of them at
    random: max(min_len, log(alpha / n) / log(q)), q clipped to [1e-6, 0.5] (a run of L has probability ~n·q^L)."""
    q = float(np.clip(missed_share, 1e-6, 0.5))
    return max(min_len, int(np.ceil(np.log(alpha / n) / np.log(q))))


def recording_gaps(time_ns: np.ndarray, interval_s: float, alpha: float = 0.01, min_polls: int = 3,
                   min_share: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """(start_ns, end_ns) of the stretches in which a recording polled every `interval_s` has no sample at all for
    longer than chance allows: a step between consecutive sample times of more than L intervals, L = max(min_polls,
    log(alpha / n) / log(q)), n the polls the span holds and q the share of them missed (each step counts its whole
    intervals beyond the first; GPUs stamped a few ms apart within a poll count none; q at most 0.5) — the rule
    analysis.gpus applies to one GPU's missed polls, applied to the whole recording (the logger stopped, or the job
    was down) — and of at least `min_share` of the span (a shorter one moves no share of the accounting beyond its
    1% noise floor). `time_ns` in ns, any order, duplicates allowed."""
    t = np.unique(np.asarray(time_ns, dtype=np.int64))
    if len(t) < 3 or not np.isfinite(interval_s) or interval_s <= 0:
        return t[:0], t[:0]
    d, step = np.diff(t), interval_s * 1e9
    expected = (t[-1] - t[0]) / step + 1
    missed = float(np.maximum(np.rint(d / step) - 1, 0).sum())
    need = chance_run(missed / expected, expected, alpha, min_polls)
    gap = np.flatnonzero((d > need * step) & (d >= min_share * (t[-1] - t[0])))
    return t[gap], t[gap + 1]


def telemetry_gaps(tele, interval_s: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """recording_gaps per input file of a telemetry table (its `source`): source -> (start_ns, end_ns), only the
    sources that have a gap. The times are deduplicated by hash first (one pass, not a sort of every row)."""
    out = {}
    for src, part in tele.groupby("source", sort=True, observed=True):
        t = part["time"].dropna().drop_duplicates()
        start, end = recording_gaps(t.astype("int64").to_numpy(), interval_s)
        if len(start):
            out[str(src)] = (start, end)
    return out
