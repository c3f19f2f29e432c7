"""The same step record printed twice, once with a time stamp and once without (two logging handlers: a file handler's
`[2021-11-22 22:55:16,371 INFO train.py line 338]` line, then the console's `INFO:main-logger:` copy of it): the stamp
is the record's, whichever copy the grammar keeps (the last one of a (rank, step) counts)."""

from __future__ import annotations

import numpy as np

from playbook.readers.step_log.vocab import NAT


def carry_stamps(step: np.ndarray, rank: np.ndarray, time: np.ndarray) -> np.ndarray:
    """`time` (int64 ns, NAT unstamped) with each unstamped record given the latest stamp among the records of its
    own (rank, step); unchanged where no record of a (rank, step) is stamped, or none is unstamped."""
    miss = time == NAT
    if not miss.any() or miss.all():
        return time
    order = np.lexsort((step, rank))
    s, r, t = step[order], rank[order], time[order]
    group = np.cumsum(np.r_[True, (s[1:] != s[:-1]) | (r[1:] != r[:-1])]) - 1
    latest = np.full(int(group[-1]) + 1, NAT, dtype=np.int64)
    np.maximum.at(latest, group[t != NAT], t[t != NAT])
    fill = (t == NAT) & (latest[group] != NAT)
    out = time.copy()
    out[order[fill]] = latest[group][fill]
    return out
