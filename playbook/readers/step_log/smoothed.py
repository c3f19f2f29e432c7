"""Window means back to step times: torchvision's MetricLogger (references/*/utils.py, copied by DETR, DeiT, MAE,
DINO) prints `time: 1.6292  data: 0.4295` as SmoothedValue(fmt="{avg:.4f}"): the mean of the last 20 iterations,
a fresh meter each epoch (each log_every call). Its other meters print `{median:.4f} ({global_avg:.4f})`, read as the
median (the window's typical step). At position p of the epoch the printed mean covers min(p + 1, 20) steps, so
between two printed positions q < p < 20 the steps took (min(p+1, 20) * mean_p - min(q+1, 20) * mean_q) / (p - q)
seconds each; from position 20 on the mean is of the last 20 steps, kept as printed."""

from __future__ import annotations

import re

import numpy as np

WINDOW = 20  # SmoothedValue's window_size default
# `eta: 0:00:25  ...  time: 4.1973  data: 1.1906`: the two meters MetricLogger.log_every prints as {avg}
METRIC_LOGGER = re.compile(r"\beta: (?:\d+ days?, )?\d+:\d\d:\d\d\b.*?\btime: \d+\.\d+\s+data: \d+\.\d+(?!\s*\()")
MEANS = ("time", "data")  # the fields' names as the grammar keys them


def window_mean_steps(values: np.ndarray, pos: np.ndarray, rank: np.ndarray,
                      window: int = WINDOW) -> np.ndarray | None:
    """Per-step seconds (the mean over the steps since the previous printed line) from the printed window means
    `values` at within-epoch positions `pos` (-1 unknown: kept as printed) of `rank`, in line order. A new epoch
    starts where the position does not rise. None when the values cannot be such means (a step would take
    less than nothing beyond the 4-decimal rounding): the field is then each step's own time."""
    out = values.astype(np.float64, copy=True)
    idx = np.flatnonzero(np.isfinite(values) & (pos >= 0))
    if len(idx) < 2:
        return out
    idx = idx[np.argsort(rank[idx], kind="stable")]
    v, p, r = values[idx], pos[idx].astype(np.float64), rank[idx]
    follows = np.zeros(len(idx), dtype=bool)
    follows[1:] = (r[1:] == r[:-1]) & (p[1:] > p[:-1])
    vp, pp = np.roll(v, 1), np.roll(p, 1)
    k, kp = np.minimum(p + 1, window), np.minimum(pp + 1, window)
    inside = follows & (p < window)  # both means start at the epoch's first step
    with np.errstate(invalid="ignore", divide="ignore"):
        steps = (k * v - kp * vp) / np.where(inside, p - pp, 1)
        slack = (k + kp) * 5e-5 / np.where(inside, p - pp, 1)  # the printed 4 decimals' rounding
    if (inside & (steps < -slack)).any():
        return None
    out[idx[inside]] = np.maximum(steps[inside], 0.0)
    return out
