"""Step times of a table that logs a time but no duration (TensorBoard's scalar export `Wall time,Step,Value`, a
W&B history's `_step,_timestamp`, a CSV of `step,time`): the gaps between a rank's consecutive records in time order.

A record some steps after the one before closes a window: its time per step is the gap divided by the steps between
them. A table logged every N steps, or the sample of steps TensorBoard keeps (at most 1,000 per tag, drawn at random
from a longer run), gives window means, as the text logs' timestamped lines do (columns.window_means). Records stamped
alike (a clock coarser than a step) are one stamp: a window runs from the first record of one stamp to the first of
the next.

A step counter that goes back while the clock goes on is the run restarted into the same log (resumed from a
checkpoint, or started over, writing to the same directory). Numbered as logged, two runs would interleave by step
number; so the steps after it are numbered on from the step before it (the restart's own event states the shift), and
the gap across it (downtime, start-up, reloading) is no step's time. Returns that all land on one step (three or more:
a count that starts over each epoch) or are many (reruns.py's rule: over 1 in 50 records, and over 2) are no
restarts: the steps are numbered on all the same, without restart events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from playbook.readers.step_log.reruns import few_enough

NAT = np.iinfo(np.int64).min


@dataclass
class Gaps:
    """Per record: `seconds` per step (NaN where no window closes), `start` (int64 ns: its step's, NAT),
    `step` (numbered on across restarts); `restarts`: (record index, step before, step logged, step numbered, seconds
    since the record before) of each counter return read as a restart (empty when the returns are a counter starting over); `returns`: how many
    returns in all; `span`: the median steps per window (1 for a table with every step)."""

    seconds: np.ndarray
    start: np.ndarray
    step: np.ndarray
    restarts: list[tuple[int, int, int, int, float]] = field(default_factory=list)
    returns: int = 0
    span: float = 1.0


def time_gaps(step: np.ndarray, rank: np.ndarray, t_ns: np.ndarray, usable: np.ndarray) -> Gaps:
    """The windows of the `usable` records (finite step, known time), per rank in time order (file order on ties)."""
    n = len(step)
    out = Gaps(np.full(n, np.nan), np.full(n, NAT, dtype=np.int64), np.zeros(n, dtype=np.int64))
    idx = np.flatnonzero(usable)
    out.step[idx] = step[idx].astype(np.int64)
    if len(idx) < 2:
        return out
    idx = idx[np.lexsort((idx, t_ns[idx], rank[idx]))]
    r, s, t = rank[idx], out.step[idx], t_ns[idx]
    first_of_rank = np.r_[True, r[1:] != r[:-1]]
    back = np.r_[False, s[1:] < s[:-1]] & ~first_of_rank
    # numbered on: after a return, the step before it plus one; the shifts add up within a rank
    shift = np.cumsum(np.where(back, np.r_[0, s[:-1]] + 1 - s, 0))
    shift -= shift[np.maximum.accumulate(np.where(first_of_rank, np.arange(len(idx)), 0))]
    numbered = s + shift
    out.step[idx] = numbered
    # windows between the first records of consecutive stamps of one run (a restart opens a new run)
    run = np.cumsum(first_of_rank | back)
    opens = np.flatnonzero(first_of_rank | back | np.r_[True, t[1:] != t[:-1]])
    a, b = opens[:-1], opens[1:]
    same_run = run[a] == run[b]
    a, b = a[same_run], b[same_run]
    steps = numbered[b] - numbered[a]
    ok = steps > 0
    a, b, steps = a[ok], b[ok], steps[ok]
    out.seconds[idx[b]] = (t[b] - t[a]) / 1e9 / steps
    out.start[idx[b]] = t[b] - (t[b] - t[a]) // steps  # a record's time ends its step: the last of its window
    out.span = float(np.median(steps)) if len(steps) else 1.0
    out.returns = int(back.sum())
    # a count per epoch goes back to where it starts, each time; restarts go back to where their checkpoints were
    epoch_count = out.returns >= 3 and len(np.unique(s[back])) == 1
    if not epoch_count and few_enough(out.returns, len(idx)):
        out.restarts = [(int(idx[p]), int(s[p - 1]), int(s[p]), int(numbered[p]), (t[p] - t[p - 1]) / 1e9)
                        for p in np.flatnonzero(back)]
    return out
