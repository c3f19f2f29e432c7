"""A printed step time that is the mean of every step since the averaging began, told apart by the line stamps.

detectron2's CommonMetricPrinter prints `time: {history("time").global_avg()}` (copied by fast-reid, AdelaiDet,
detrex ...): the mean since the run (or its resume) began, so it drifts slowly while the steps between two lines may
take twice as long. If A_i is the mean printed at step n_i and the averaging began after step o, the steps through
n_i took A_i (n_i - o) seconds, and the steps between two lines (A_j (n_j - o) - A_i (n_i - o)) / (n_j - n_i) each.
Where the lines are stamped, the stamps say which reading is the step's: the printed values when they match the
stamps' pace, else the differences of the running totals when those match it (o fitted by least squares, between 0
and the first printed step) and the printed values do not — not even scaled or shifted by a constant (the stamps
also hold what the timer leaves out: a step's own time creeping from 0.55 to 0.65 s under 20 % of logging overhead
fits the differences within MATCH too, and a constant factor fits it exactly). Without stamps, or when neither
matches, the values stay as printed.
"""

from __future__ import annotations

import numpy as np

from playbook.readers.step_log.vocab import NAT

MIN_WINDOWS = 4  # stamped windows per rank: fewer cannot tell a running mean from a drifting step time
# a reading matches a window's stamped pace within 15% (plus the stamps' resolution over the window): the stamps also
# hold what no step timer measures (logging, a checkpoint), so a window may run long; in fast-reid#103 the printed
# mean was off by 38-52% in every window, the running totals' differences by 0.4-3%
MATCH = 0.15
MOST = 0.75  # the share of windows a reading must match (one window in four may hold an evaluation or a checkpoint)
# the differences must fit the stamps clearly better than the printed values under a constant factor or offset: at
# most half their median error (fast-reid#103: differences 0.4-3 % off, the printed mean scaled by its median factor
# 3-5 %; a step's own creeping time under a constant overhead: the scaled values fit exactly)
BETTER = 0.5


def _windows(step: np.ndarray, rank: np.ndarray, time: np.ndarray, seconds: np.ndarray) -> list[np.ndarray]:
    """Per rank, the indices of its stamped lines with a value, in step order (ranks with too few left out)."""
    ok = np.isfinite(seconds) & (time != NAT)
    out = []
    for r in np.unique(rank[ok]):
        idx = np.flatnonzero(ok & (rank == r))
        idx = idx[np.argsort(step[idx], kind="stable")]
        idx = idx[np.r_[True, np.diff(step[idx]) > 0]]
        if len(idx) > MIN_WINDOWS:
            out.append(idx)
    return out


def _matches(reading: np.ndarray, pace: np.ndarray, slack: np.ndarray) -> bool:
    """Whether `reading` matches the stamps' per-step `pace` in most windows."""
    return bool(np.mean(np.abs(reading / pace - 1) <= MATCH + slack) >= MOST)


def _error(reading: np.ndarray, pace: np.ndarray) -> float:
    """The median relative distance of `reading` from the stamps' per-step `pace`."""
    return float(np.median(np.abs(reading / pace - 1)))


def _own_error(printed: np.ndarray, pace: np.ndarray) -> float:
    """How well the printed values, as each window's own step time, fit the stamps under the best constant factor or
    constant offset (untimed work in proportion to a step, or a fixed cost per step)."""
    return min(_error(printed * float(np.median(pace / printed)), pace),
               _error(printed + float(np.median(pace - printed)), pace))


def since_start_steps(step: np.ndarray, rank: np.ndarray, time: np.ndarray, seconds: np.ndarray) -> np.ndarray | None:
    """Each line's seconds per step between it and the rank's previous stamped line (NaN on the first) when the printed
    `seconds` are a mean since the averaging began and the stamps (`time`, int64 ns) show it; None otherwise."""
    groups = _windows(step, rank, time, seconds)
    if not groups:
        return None
    out = seconds.astype(np.float64, copy=True)  # a rank with too few stamped lines keeps its values
    for idx in groups:
        n, mean = step[idx].astype(np.float64), seconds[idx]
        wall = np.diff(time[idx]).astype(np.float64) / 1e9
        dn = np.diff(n)
        if not (wall > 0).all():
            return None
        pace = wall / dn
        whole = (time[idx] % 1_000_000_000 == 0).all()  # stamps at whole seconds: each window +-1 s
        slack = (1.0 if whole else 1e-3) / wall
        if _matches(mean[1:], pace, slack):
            return None  # the printed values are the steps' own times
        base = np.diff(mean * n) / dn  # the running totals' differences with the averaging begun at step 0
        drift = np.diff(mean) / dn  # how much each step the averaging began later lowers them
        offset = float(np.dot(drift, base - pace) / np.dot(drift, drift)) if np.dot(drift, drift) > 0 else 0.0
        per = base - min(max(offset, 0.0), float(n[0])) * drift
        if not (per > 0).all() or not _matches(per, pace, slack) or \
                _error(per, pace) > BETTER * _own_error(mean[1:], pace):
            return None
        out[rank == rank[idx[0]]] = np.nan  # its first line and any unstamped one: no window to difference
        out[idx[1:]] = per
    return out
