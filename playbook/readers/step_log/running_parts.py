"""Running totals that share the clock (the grammar's per-file reading, before the duration field is chosen).

A trainer may print where the time went so far as running totals, one per part: SoundSpaces' PPO trainer writes
`env-time: 175.496s  pth-time: 90.586s` (seconds spent stepping the environments and in PyTorch since the start).
Neither part keeps pace with the lines' time stamps; their sum does. When two or more plain time fields on the same
lines all rise and their sum's differences match the stamped gaps between lines (columns.clock_reading), the sum is
the file's running total (a step's time is its difference per step) and a part named for a phase (the data wait)
is that phase's difference per step.
"""

from __future__ import annotations

import numpy as np

from playbook.readers.step_log.columns import clock_reading, per_step_diff, rise_shares
from playbook.readers.step_log.vocab import CUMULATIVE, GENERIC, NAT, UNNAMED

TOTAL = "(running totals)"  # the name of the parts' sum, the chosen field when they are read so


def rising(step, rank, values) -> bool:
    """Whether a field rises from each of a rank's lines to the next (3 pairs or more, 95% of them): a running total,
    never a time that repeats (fairseq2's `Compute Time: 12s` every line is each window's)."""
    pairs, _, up = rise_shares(step, rank, values)
    return pairs >= 3 and up >= 0.95


def running_parts(step, rank, time, cols: dict, roles: dict) -> tuple[dict, dict]:
    """`cols`/`roles` (name -> values / role) with the parts of a running total shared by the clock replaced: the
    sum as TOTAL (cumulative), each phase part by its differences per step, the other parts dropped; unchanged when
    no two such fields are found or the lines are not stamped."""
    if not (time != NAT).any():
        return cols, roles
    parts = [k for k, r in roles.items() if (r[0] == "phase" or (r[0] == "dur" and r[1] in (GENERIC, UNNAMED)))
             and rising(step, rank, cols[k])]
    if len(parts) < 2:
        return cols, roles
    here = np.logical_and.reduce([np.isfinite(cols[k]) for k in parts])
    if here.sum() < 3:
        return cols, roles
    total = np.where(here, sum(cols[k] * roles[k][2] for k in parts), np.nan)
    if clock_reading(step, rank, time, total) != CUMULATIVE:
        return cols, roles
    cols, roles = dict(cols), dict(roles)
    for k in parts:
        if roles[k][0] == "phase":
            cols[k] = per_step_diff(step, rank, np.where(here, cols[k] * roles[k][2], np.nan)) / roles[k][2]
        else:
            del roles[k]
    cols[TOTAL], roles[TOTAL] = total, ("dur", CUMULATIVE, 1.0)
    return cols, roles
