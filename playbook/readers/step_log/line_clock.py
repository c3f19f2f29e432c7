"""A field that is the log's own clock: a cumulative elapsed time printed on every step line (CenterNet's `Tot:
1:17:42`, ParlAI's `time:6.0s`, tqdm-loggable's `elapsed:240.0`), recognised by its values, not its name.

A field is a line clock when, per rank in step order, it never falls (at most one drop in 20: a restart), rises
between almost every pair of lines by at least twice its resolution (whole seconds: rises of 2 s or more), spans
at least half its largest value (it counts from near the start of what the log shows: a running mean or a step time
that drifts does not) and rises per step by about what the file's chosen step time states (within 4x either way).
The chosen field itself is such a clock, with no other time to compare with, when lines are printed every so many
seconds: its rises are the same from line to line while the steps between lines vary (ParlAI's log_every_n_secs:
`time:2.0s`, `4.0s`, `6.0s` over 117, 74, 119 updates), where a step time that drifts up would rise with the steps.
Its differences are then the wall time between the lines. When the chosen per-step field does not account for them
(its windows' sum off by more than 10%, or more than one window in ten off by more than a quarter: a running mean
such as CenterNet's `Net` = batch_time.avg, a smoothed tqdm rate, one step's time sampled every N steps that misses
the stalls in between), the clock's differences are the step times.
"""

from __future__ import annotations

import numpy as np

from playbook.readers.step_log.bar_rate import unsmoothed
from playbook.readers.step_log.columns import epoch_clock, field_seconds
from playbook.readers.step_log.vocab import CLOCK, CUMULATIVE, NAT, PER_STEP, WINDOW

MIN_WINDOWS = 4  # pairs of consecutive lines: fewer cannot tell a clock from a drifting value
# a step's time over this many times the whole wall time between the stamped lines that bound it cannot be the step's:
# a per-step time is at most the window's span (one step of several), a window's time about it; 2x leaves room for
# stamps at whole seconds and a line printed late (in the corpus the largest ratio of a true step time was 1.2, the
# arcface_torch `Required: 99 hours` a time left, 500-25000x)
OUTLAST = 2.0
RESOLUTIONS = (1.0, 0.1, 0.01, 0.001)  # seconds: the finest a printed clock is read at


def _windows(step, rank, seconds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rise, steps, index of the window's end line) for each pair of consecutive lines of a rank holding a value."""
    rises, spans, ends = [], [], []
    ok = np.isfinite(seconds)
    for r in np.unique(rank[ok]):
        idx = np.flatnonzero(ok & (rank == r))
        idx = idx[np.argsort(step[idx], kind="stable")]
        ds = np.diff(step[idx])
        keep = ds > 0
        rises.append(np.diff(seconds[idx])[keep])
        spans.append(ds[keep])
        ends.append(idx[1:][keep])
    if not rises:
        return np.empty(0), np.empty(0), np.empty(0, np.int64)
    return np.concatenate(rises), np.concatenate(spans).astype(float), np.concatenate(ends)


def resolution(seconds: np.ndarray) -> float:
    """The step of the printed values: 1 s for whole seconds (`0:01:06`), 0.1 s for `6.0s`, ...; 0 when finer."""
    v = seconds[np.isfinite(seconds)]
    for res in RESOLUTIONS:
        if np.allclose(v / res, np.round(v / res), rtol=0, atol=1e-6):
            return res
    return 0.0


def _cv(x: np.ndarray) -> float:
    return float(np.std(x) / np.mean(x)) if len(x) and np.mean(x) > 0 else 0.0


def is_clock(step, rank, seconds, step_time: float | None) -> bool:
    """Whether `seconds` (a field, per line) is a clock running through the lines: at about `step_time` s a step, or,
    with no step time to compare (None), one printed every so many seconds (even rises over uneven steps) or one
    counting from the start at an even pace (`from_start`)."""
    rise, ds, _ = _windows(step, rank, seconds)
    v = seconds[np.isfinite(seconds)]
    if len(rise) < MIN_WINDOWS or epoch_clock(v):
        return False
    res = resolution(seconds)
    if not ((rise >= 0).mean() >= 0.95 and (rise > 0).mean() >= 0.9 and np.median(rise) >= 2 * res
            and v.max() - v.min() >= 0.5 * v.max()):
        return False
    if step_time is None:
        return _cv(ds) > 0.2 and _cv(rise) < 0.5 * _cv(ds) or from_start(rise[rise >= 0] / ds[rise >= 0], v)
    return step_time > 0 and 0.25 <= float(np.median(rise / ds)) / step_time <= 4


def from_start(per_step: np.ndarray, v: np.ndarray) -> bool:
    """Whether a field that rises on almost every line (`per_step`: its rises per step) counts the seconds since
    the start: its values start under a tenth of their largest and most of its rises are within half of their
    median (a step's time and its jitter), where a step time that creeps rises with its own value (a field `time`
    of 2.4, 4.8, ... 960 s had been read as steps slowing 400-fold)."""
    med = float(np.median(per_step)) if len(per_step) else 0.0
    return med > 0 and v.min() <= 0.1 * v.max() and float(np.mean(np.abs(per_step / med - 1) < 0.5)) >= 0.75


def outlasts_lines(step, rank, time, seconds) -> bool:
    """Whether a field read as each step's seconds lasts longer than the lines around it could: on most windows of a
    rank's consecutive stamped lines (`time` int64 ns), its value at the window's end exceeds OUTLAST x the window's
    whole wall time (no step outlasts the lines that bound it; a time left or a total is no step's time)."""
    ratios = []
    ok = (time != NAT) & np.isfinite(seconds)
    for r in np.unique(rank[ok]):
        idx = np.flatnonzero(ok & (rank == r))
        idx = idx[np.argsort(step[idx], kind="stable")]
        gap = np.diff(time[idx]) / 1e9
        rising = (np.diff(step[idx]) > 0) & (gap > 0)
        ratios.append(seconds[idx[1:]][rising] / gap[rising])
    ratios = np.concatenate(ratios) if ratios else np.empty(0)
    return len(ratios) >= MIN_WINDOWS and float(np.median(ratios)) > OUTLAST


def line_clock(step, rank, cols, cands, chosen: str, values: np.ndarray) -> str | None:
    """The field among `cands` (name -> role) that is the lines' clock and that the chosen field's per-step seconds
    (`values`) do not account for; None when there is none, or the chosen field agrees with it."""
    if cands[chosen][0] == "dur" and cands[chosen][1] != PER_STEP and is_clock(step, rank, cols[chosen] * cands[chosen][2], None):
        return chosen  # the chosen field read as a step's time is itself the clock
    typical = float(np.nanmedian(values)) if np.isfinite(values).any() else 0.0
    for name, role in cands.items():
        if name == chosen or role[0] != "dur" or not is_clock(step, rank, cols[name] * role[2], typical):
            continue
        seconds = cols[name] * role[2]
        rise, ds, end = _windows(step, rank, seconds)
        stated = values[end] * ds  # the wall time the chosen field gives each window (its value at the window's end)
        known = np.isfinite(stated)
        if not known.any():
            return name
        rise, stated = rise[known], stated[known]
        slack = 0.25 * rise + resolution(seconds)
        if abs(stated.sum() / max(rise.sum(), 1e-12) - 1) > 0.1 or (np.abs(stated - rise) > slack).mean() > 0.1:
            return name
    return None


def clock_or(name: str, cls: int, reading: tuple[np.ndarray, str], step, rank, cols, cands, pos=None):
    """(name, class, per-step seconds, how) of the file's step time: the chosen field `name` of class `cls` read as
    `reading`, unless a line clock that it does not account for replaces it (read as cumulative), or, for a progress
    bar's rate beside its elapsed clock, the rate with its smoothing undone (bar_rate.py; `pos`: each row's count
    within its bar)."""
    values, how = reading
    clocks = [k for k, role in cands.items() if role[0] == "dur" and role[3:] == (CLOCK,)]
    if cands[name][0] == "rate" and pos is not None and clocks:
        seconds = cols[clocks[0]] * cands[clocks[0]][2]
        bar = values
        for other in (k for k, role in cands.items() if k != name and role[1] == PER_STEP):
            bar = np.where(np.isfinite(bar), bar, field_seconds(other, PER_STEP, cands[other], step, rank, cols)[0])
        if (found := unsmoothed(step, rank, pos, bar, seconds, resolution(seconds))) is not None:
            return name, cls, found[0], how + ", " + found[1]  # tqdm's `s/it` below 1 it/s: the same rate
    if cls not in (CUMULATIVE, WINDOW) and (clock := line_clock(step, rank, cols, cands, name, values)):
        values, how = field_seconds(clock, CUMULATIVE, cands[clock], step, rank, cols)
        return clock, CUMULATIVE, values, how + ", the lines' clock"
    return name, cls, values, how
