"""A bare time stated only on the lines that close a progress bar's epoch (Poutyne's `Epoch 1/5 35.00s Step 100/100:`
after updates `Epoch 1/5 ETA 34s Step 2/100:` that state no time of their own; Keras' `1464/1464 [=====] - 3943s -
loss: ...`, pasted without the bar's redraws): the epoch's time, not one step's; per step it is that time over the
epoch's steps so far (the line's position in its epoch)."""

from __future__ import annotations

import numpy as np


def closes_epochs(step, pos) -> bool:
    """Whether every line of one rank (`step`, `pos`: its step and position within its epoch) is whole epochs after
    the one before: the step grew by the line's position (or a whole number of times it: an epoch whose line is
    missing from the paste), so the position is the epoch's length and the line sits at the bar's end (`1464/1464`,
    a 1-based count at its total). Two lines or more, positions of 2 or more."""
    if len(step) < 2 or not bool((pos >= 2).all()):
        return False
    grew = np.diff(step)
    return bool(((grew > 0) & (grew % pos[1:] == 0)).all())


def epoch_end_totals(rank, pos, values, step=None) -> np.ndarray | None:
    """Seconds per step from `values` when every line holding it closes its epoch (the rank's next line, if any,
    is at position 1) at a position of 2 or more, and the bar's own updates (lines without it) counted the steps
    before it — or, with no update lines at all, each line is a whole epoch after the last (closes_epochs); else
    None. `pos`: each line's position within its epoch (-1 unknown); `step`: each line's step."""
    ok = np.isfinite(values)
    if pos is None or ok.sum() < 2:
        return None
    for r in np.unique(rank[ok]):
        idx = np.flatnonzero(rank == r)
        p, v = pos[idx], ok[idx]
        if step is not None and v.all() and closes_epochs(step[idx], p):
            continue
        at = np.flatnonzero(v)
        nxt = at + 1
        if (p[at] < 2).any() or (p[nxt[nxt < len(idx)]] != 1).any():
            return None
        if (~v).sum() < (p[at] - 1).sum():  # no update line for each step before the closing one: not a bar
            return None
    return np.where(ok, values / np.maximum(pos, 1), np.nan)
