"""The same step record printed twice, once with a time stamp and once without (two logging handlers: a file handler's
`[2021-11-22 22:55:16,371 INFO train.py line 338]` line, then the console's `INFO:main-logger:` copy of it): the stamp
is the record's, whichever copy the grammar keeps (the last one of a (rank, step) counts). Only a copy — the same
figures in every field — takes it: another line about the same step (a timer summary beside the iteration line) is a
record of its own, stamped or not as written."""

from __future__ import annotations

import numpy as np

from playbook.readers.step_log.vocab import NAT

_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multiplier (the golden ratio's): field values mixed into one key


def _figures(cols: dict, n: int) -> np.ndarray:
    """One uint64 per record from all its field values (NaN where a field is absent): equal for copies."""
    key = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for name in sorted(cols):
            v = np.nan_to_num(np.asarray(cols[name], dtype=np.float64)[:n], nan=-1.2345e300)
            key = key * _MIX + v.view(np.uint64)
    return key


def carry_stamps(step: np.ndarray, rank: np.ndarray, time: np.ndarray, cols: dict) -> np.ndarray:
    """`time` (int64 ns, NAT unstamped) with each unstamped record given the latest stamp among its copies: the
    records of its (rank, step) with the same figures in every field of `cols` (name -> values per record).
    Unchanged where no copy is stamped, or none is unstamped."""
    miss = time == NAT
    if not miss.any() or miss.all():
        return time
    fig = _figures(cols, len(time))
    order = np.lexsort((fig, step, rank))
    s, r, f, t = step[order], rank[order], fig[order], time[order]
    group = np.cumsum(np.r_[True, (s[1:] != s[:-1]) | (r[1:] != r[:-1]) | (f[1:] != f[:-1])]) - 1
    latest = np.full(int(group[-1]) + 1, NAT, dtype=np.int64)
    np.maximum.at(latest, group[t != NAT], t[t != NAT])
    fill = (t == NAT) & (latest[group] != NAT)
    out = time.copy()
    out[order[fill]] = latest[group][fill]
    return out
