"""Local wall-clock times to UTC, with the hour a daylight-saving change repeats resolved by file order."""
from __future__ import annotations

import numpy as np
import pandas as pd


def localize(parsed: pd.Series, tz: str) -> pd.Series:
    """Naive datetimes written in `tz`, in the order a tool wrote them, as UTC (tz-aware).

    A time `tz` skips (spring forward) is NaT, for the caller to count. A time `tz` holds twice (fall back:
    02:00–02:59 twice in Europe/Berlin) is the first occurrence until the clock is seen to step back within that
    stretch, the second after: a logger writes times in order, so a backward step of at least half the shift (the
    shift is 1 h in most zones; a poll jitters by ms) inside the repeated hour is the change itself.
    """
    index = parsed.index if isinstance(parsed, pd.Series) else None
    parsed = pd.Series(parsed).reset_index(drop=True)
    tz = tz or "UTC"
    early = parsed.dt.tz_localize(tz, ambiguous=np.ones(len(parsed), bool), nonexistent="NaT")
    late = parsed.dt.tz_localize(tz, ambiguous=np.zeros(len(parsed), bool), nonexistent="NaT")
    e = early.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy("datetime64[ns]").view(np.int64)
    lt = late.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy("datetime64[ns]").view(np.int64)
    twice = (early.notna() & late.notna()).to_numpy() & (e != lt)
    if not twice.any():
        return _indexed(early.dt.tz_convert("UTC"), index)
    first = np.ones(len(parsed), bool)
    local = parsed.to_numpy("datetime64[ns]").view(np.int64)
    rows = np.flatnonzero(twice)
    shift = (lt - e)[rows]
    # one stretch per change: a step forward of more than the shift (the next year's change) starts another
    for run in np.split(rows, np.flatnonzero(np.diff(local[rows]) > shift[1:]) + 1):
        t = local[run]
        back = np.r_[False, t[1:] < np.maximum.accumulate(t)[:-1] - (lt - e)[run][1:] // 2]
        first[run] = ~np.logical_or.accumulate(back)
    out = parsed.dt.tz_localize(tz, ambiguous=first, nonexistent="NaT")
    return _indexed(out.dt.tz_convert("UTC"), index)


def _indexed(out: pd.Series, index) -> pd.Series:
    if index is not None:
        out.index = index
    return out
