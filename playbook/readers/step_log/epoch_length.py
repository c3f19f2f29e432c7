"""The steps of one epoch, where a log states them: a counter `[i/N]` within its epoch (MetricLogger's `Epoch: [1]
[20/1504]`, `Epoch 2/10 | Step 120/500`) numbers a row `epoch × N + i` (grammar.StepLines._within), so the rows'
epoch starts (step − position) are multiples of N. Two epochs' starts among the rows give N: their difference, when
every start is a multiple of it and every position lies inside it. One epoch seen, or no positions: unknown (None).

The diagnosis needs it to cost what happens once per epoch (a save, an evaluation, the loader's restart at the
epoch's first batch) against the epoch it closes, when a log holds less than one epoch (diagnosis/epoch_work.py)."""

from __future__ import annotations

import numpy as np


def steps_per_epoch(step: np.ndarray, pos: np.ndarray | None) -> int | None:
    """N from the rows' step numbers and positions within their epoch (see the module docstring); None unknown."""
    if pos is None or len(pos) != len(step):
        return None
    pos = np.asarray(pos)
    known = pos >= 0
    if known.sum() < 2:
        return None
    pos = pos[known]
    starts = np.unique(np.asarray(step)[known] - pos)
    if len(starts) < 2:
        return None
    n = int(np.diff(starts).min())
    if n <= 1 or ((starts - starts[0]) % n != 0).any() or (pos >= n).any():
        return None
    return n
