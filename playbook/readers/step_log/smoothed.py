"""Window means back to step times: torchvision's MetricLogger (references/*/utils.py, copied by DETR, DeiT, MAE,
DINO) prints `time: 1.6292  data: 0.4295` as SmoothedValue(fmt="{avg:.4f}"): the mean of the last 20 iterations,
a fresh meter each epoch (each log_every call), printed every print_freq iterations and at the epoch's last. Its
other meters print `{median:.4f} ({global_avg:.4f})`, read as the median (the window's typical step).

At position p of the epoch the printed mean covers min(p + 1, 20) steps, so the steps' total from the epoch's start
through p is (p + 1) * mean_p below 20, and from 20 on the total through p - 20 plus 20 * mean_p (known when p - 20
was printed too: print_freq 10 or 20). Between two printed positions with known totals the steps took the totals'
difference over the steps between; elsewhere the printed mean (of the last 20 steps) is kept.

MMEngine's LogProcessor (window_size=10, mean_pattern `.*(loss|time|data_time|grad_norm).*`) prints `time: 8.2059
data_time: 6.2668` after its eta as the mean of the last 10 iterations of the run's history (the MessageHub keeps
it across epochs): at the run's k-th iteration the mean covers min(k, 10), so the same differences hold with the
run's iteration count in place of the epoch's position."""

from __future__ import annotations

import re

import numpy as np

WINDOW = 20  # SmoothedValue's window_size default
# `eta: 0:00:25  ...  time: 4.1973  data: 1.1906`: the two meters MetricLogger.log_every prints as {avg}, after its eta
# (two patterns, the second searched from the first's end: one with `.*?` between them ran to the line's end from
# every stamp, quadratic in a line of many)
_ETA = re.compile(r"\beta: (?:\d+ days?, )?\d+:\d\d:\d\d\b")
# (the lookahead refuses a digit too: else `data: 0.0123 (0.0100)` matched as `data: 0.012` by backtracking)
_WINDOW_MEANS = re.compile(r"\btime: \d+\.\d+\s+data: \d+\.\d+(?![\d.]|\s*\()")
MEANS = ("time", "data")  # the fields' names as the grammar keys them
# `Epoch(train)  [1][  50/1051]  lr: ..  eta: 1 day, 23:47:56  time: 8.2059  data_time: 6.2668`: LogProcessor's
# header, then its two window means after the eta (mmengine/runner/log_processor.py get_log_after_iter)
_LOG_PROCESSOR = re.compile(r"\b(?:Epoch|Iter)\(train\)\s*(?:\[\s*\d+\])?\[\s*\d+/\d+\]")
_LOG_PROCESSOR_MEANS = re.compile(r"\btime: \d+\.\d+\s+data_time: \d+\.\d+")
LOG_PROCESSOR_MEANS = ("time", "data_time")
LOG_PROCESSOR_WINDOW = 10  # LogProcessor's window_size default
ROUNDING = 5e-5  # half the last of the 4 printed decimals


def metric_logger(line: str) -> bool:
    """Whether a line is MetricLogger's: an eta, then its time and data meters printed as window means."""
    eta = _ETA.search(line)
    return eta is not None and _WINDOW_MEANS.search(line, eta.end()) is not None


def smoother(line: str) -> str | None:
    """Which window-mean printer wrote a line: "metric_logger", "log_processor" or None."""
    if "eta: " not in line:
        return None
    if metric_logger(line):
        return "metric_logger"
    eta = _ETA.search(line)
    head = _LOG_PROCESSOR.search(line)
    if eta is not None and head is not None and head.end() <= eta.start() and \
            _LOG_PROCESSOR_MEANS.search(line, eta.end()) is not None:
        return "log_processor"
    return None


def smoothed_columns(kind: str | None, cols: dict, pos: np.ndarray, step: np.ndarray, rank: np.ndarray) -> dict:
    """The printer's window-mean columns back to the steps' seconds (name -> values), for `kind` (smoother): a
    MetricLogger's means over the epoch's positions `pos`, LogProcessor's over the run's iterations (`step`, from 1)."""
    if kind == "metric_logger":
        names, at, window = MEANS, pos, WINDOW
    elif kind == "log_processor":
        names, at, window = LOG_PROCESSOR_MEANS, np.where(step >= 1, step - 1, -1), LOG_PROCESSOR_WINDOW
    else:
        return {}
    out = {}
    for name in (n for n in names if n in cols):
        steps = window_mean_steps(cols[name], at, rank, window)
        if steps is not None:
            out[name] = steps
    return out


def window_mean_steps(values: np.ndarray, pos: np.ndarray, rank: np.ndarray,
                      window: int = WINDOW) -> np.ndarray | None:
    """Per-step seconds (the mean over the steps since the previous printed line) from the printed window means
    `values` at within-epoch positions `pos` (-1 unknown: kept as printed) of `rank`, in line order. A new epoch
    starts where the position does not rise. None when the values cannot be such means (a step would take
    less than nothing beyond the printed rounding): the field is then each step's own time."""
    out = values.astype(np.float64, copy=True)
    totals: dict[int, dict[int, float]] = {}  # rank -> {position: the epoch's step seconds through it}
    last: dict[int, int] = {}  # rank -> its last printed position
    for i in np.flatnonzero(np.isfinite(values) & (pos >= 0)):
        r, p, mean = int(rank[i]), int(pos[i]), float(values[i])
        before = last.get(r)
        if before is None or p <= before:
            totals[r], before = {}, None  # a new epoch: a fresh meter
        last[r] = p
        known = totals[r]
        through = known.get(p - window) if p >= window else 0.0
        if through is None:
            continue  # the mean of the last 20 steps, kept as printed
        known[p] = through + min(p + 1, window) * mean
        if before is None or before not in known:
            continue
        terms = min(p + 1, window) + min(before + 1, window) + 2 * window * (p // window)
        step = (known[p] - known[before]) / (p - before)
        if step < -ROUNDING * terms / (p - before):
            return None
        out[i] = max(step, 0.0)
    return out
