"""A bare time stated only on the lines that close a progress bar's epoch (Poutyne's `Epoch 1/5 35.00s Step 100/100:`
after updates `Epoch 1/5 ETA 34s Step 2/100:` that state no time of their own): the epoch's time, not one step's;
per step it is that time over the epoch's steps so far (the line's position in its epoch)."""

from __future__ import annotations

import numpy as np


def epoch_end_totals(rank, pos, values) -> np.ndarray | None:
    """Seconds per step from `values` when every line holding it closes its epoch (the rank's next line, if any,
    is at position 1) at a position of 2 or more, and the bar's own updates (lines without it) counted the steps
    before it; else None. `pos`: each line's position within its epoch (-1 unknown)."""
    ok = np.isfinite(values)
    if pos is None or ok.sum() < 2:
        return None
    for r in np.unique(rank[ok]):
        idx = np.flatnonzero(rank == r)
        p, v = pos[idx], ok[idx]
        at = np.flatnonzero(v)
        nxt = at + 1
        if (p[at] < 2).any() or (p[nxt[nxt < len(idx)]] != 1).any():
            return None
        if (~v).sum() < (p[at] - 1).sum():  # no update line for each step before the closing one: not a bar
            return None
    return np.where(ok, values / np.maximum(pos, 1), np.nan)
