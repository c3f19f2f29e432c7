"""A printed time beside its running average, `Time 22.424 (7.498)` (PyTorch's imagenet example, Swin, MoCo, DeiT's
AverageMeter: `{val} ({avg})`), back to the mean of the steps between two printed lines.

The first figure is the last step's own time; the bracket the mean of every step since the meter was reset at the
epoch's start. With a line every step the first figure is each step's time; with a line every k steps it times one
step of k, and the steps between two lines took ((n1 * a1) - (n0 * a0)) / (n1 - n0) each, n the steps the meter has
seen (the epoch position + 1 when positions count from 0, the position itself when from 1). Which of the two is
known when a line of the epoch shows the meter's first step (its value equals its average: one step seen); else
the two readings are used only where they agree within AGREE; a bracket equal to its value on every line repeats
it (or every step took the same): the figures stay as printed (late in an epoch the averages drift slowly and the
offset no longer matters). A window whose mean could not hold its own last step (the printed first figure above the
window's total, beyond the printed rounding) shows the bracket is no such average: the figures stay as printed.

Also the columns of the file's fields and the bracketed averages beside them (`column_for`), one float per record.
"""

from __future__ import annotations

from array import array

import numpy as np

from playbook.readers.step_log.vocab import MAX_KEYS

AGREE = 0.05  # the two position offsets' window means within 5%: the step-time tolerance of the held-out rounds
ROUNDING = 5e-3  # the printed figures' last decimal (3 in the imagenet example's `{val:.3f}`, 4 in Swin's)


def column_for(store: dict, roles: dict, name: str, role: tuple, n: int) -> array | None:
    """The float column of field `name` in `store`, NaN-filled up to `n` records (created with its `role` kept in
    `roles`); None when the file already has MAX_KEYS fields."""
    col = store.get(name)
    if col is None:
        if len(store) >= MAX_KEYS:
            return None
        col = store[name] = array("d", [np.nan]) * n if n else array("d")
        roles[name] = role
    if len(col) < n:
        col.extend([np.nan] * (n - len(col)))
    return col


def _epochs(pos: np.ndarray, idx: np.ndarray) -> list[np.ndarray]:
    """`idx` (one rank's printed lines, in order) split where the position does not rise: a new epoch, a reset meter."""
    cuts = np.flatnonzero(np.diff(pos[idx]) <= 0) + 1
    return np.split(idx, cuts)


def _windows(pos: np.ndarray, val: np.ndarray, avg: np.ndarray, idx: np.ndarray) -> np.ndarray | None:
    """Per line of one epoch (`idx`), the mean step of the window it closes (NaN on the epoch's first line unless it
    is the meter's first step); None when the bracket cannot be a running mean since the epoch's start."""
    p = pos[idx].astype(np.float64)
    starts = np.flatnonzero(np.abs(val[idx] - avg[idx]) <= ROUNDING)
    if len(idx) > 1 and len(starts) == len(idx):
        return None  # the bracket repeats the value on every line: no mean since the start (or all steps alike)
    # the meter's first step is the epoch's first position (0, or 1 counting from 1): a value equal to its average
    # further on (a log cut mid-epoch, a steady run within the rounding) says nothing of where the meter started
    offsets = (1.0 - p[0],) if len(starts) and starts[0] == 0 and p[0] <= 1 else (1.0, 0.0)
    means = []
    for off in offsets:  # n = p + off steps seen at position p
        n = p + off
        if (n <= 0).any():
            return None
        total = n * avg[idx]
        out = np.full(len(idx), np.nan)
        out[1:] = np.diff(total) / np.diff(p)
        if len(offsets) == 1:
            out[0] = avg[idx][0]  # the meter's first step: its own time
        # the window's total holds its last step: a running mean since the epoch's start, else no such average
        if (np.diff(total) < val[idx][1:] - ROUNDING * (n[1:] + n[:-1])).any():
            return None
        means.append(out)
    if len(means) == 2:
        a, b = means
        ok = np.isfinite(b)
        if not np.all(np.abs(a[ok] - b[ok]) <= AGREE * np.abs(b[ok])):
            return None  # the offset matters and no line shows the meter's start: which window is unknown
    return means[0]


def window_means(pos: np.ndarray, rank: np.ndarray, val: np.ndarray, avg: np.ndarray,
                 step: np.ndarray | None = None) -> np.ndarray | None:
    """Each printed line's mean step since the rank's previous printed line (on an epoch's first line after an epoch
    printed before it, of the epoch's steps so far: its bracket; on the rank's first line unknown, NaN), from the
    running averages `avg` beside the values `val` at within-epoch positions `pos` (-1 unknown); None when the lines
    are one step apart (the values are the steps' own), a position is unknown, or the brackets are not running means
    since the epoch's start. `step`: the lines' steps counted across epochs (default `pos`)."""
    step = pos if step is None else step
    has = np.isfinite(val) & np.isfinite(avg)
    if not has.any() or (pos[has] < 0).any():
        return None
    out = np.full(len(val), np.nan)
    apart = False
    for r in np.unique(rank[has]):
        last = -1  # the rank's last line of the epoch before
        lines = np.flatnonzero(has & (rank == r))
        copy = _copies(pos, val, avg, lines)
        for k, idx in enumerate(_epochs(pos, lines[~copy])):
            apart = apart or bool((np.diff(pos[idx]) > 1).any())
            got = _windows(pos, val, avg, idx)
            if got is None:
                return None
            if k and np.isnan(got[0]):
                got[0] = _epoch_opening(float(avg[idx[0]]), int(pos[idx[0]]) + 1, float(out[last]),
                                        int(step[idx[0]] - step[last]))
            out[idx] = got
            last = idx[-1]
        for j in np.flatnonzero(copy):  # a copy closes the window its original closes
            out[lines[j]] = out[lines[j - 1]]
    return out if apart else None


def _copies(pos: np.ndarray, val: np.ndarray, avg: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """Per line of `lines` (one rank's, in order), whether it repeats the line before it, position and figures alike:
    the same line written by a second logging handler (a file handler's and the console's `INFO:main-logger:` copy),
    one window, not an epoch that starts over."""
    same = (np.diff(pos[lines]) == 0) & (np.diff(val[lines]) == 0) & (np.diff(avg[lines]) == 0)
    return np.r_[False, same]


def _epoch_opening(avg: float, own: int, before: float, steps: int) -> float:
    """The mean step over the `steps` since the previous epoch's last printed line: this epoch's `own` steps at their
    running average `avg`, the previous epoch's rest at its last window's mean `before` (when known and the steps
    counted across epochs say how many; else `avg`)."""
    if not np.isfinite(before) or steps <= own:
        return avg
    return (own * avg + (steps - own) * before) / steps


def bracket_windows(cols: dict, avg_cols: dict, pos: np.ndarray, rank: np.ndarray,
                    step: np.ndarray | None = None) -> dict:
    """name -> the window means of each field printed beside its running average (`avg_cols`: name -> the brackets'
    column), for the fields where window_means applies."""
    out = {}
    for name, col in avg_cols.items():
        avg = np.full(len(pos), np.nan)
        avg[:len(col)] = np.frombuffer(col, np.float64) if len(col) else []
        if name in cols and (steps := window_means(pos, rank, cols[name], avg, step)) is not None:
            out[name] = steps
    return out
