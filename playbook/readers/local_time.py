"""Local wall-clock times to UTC, with the hour a daylight-saving change repeats resolved by file order."""
from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo

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
    if tz.upper() in ("UTC", "Z", "ETC/UTC", "GMT"):  # no clock change: one localize, no ambiguity to resolve
        return _indexed(parsed.dt.tz_localize("UTC"), index)
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


class Refold:
    """The streaming form of `localize`, for times already converted one line at a time with the first reading
    of a repeated hour (zoneinfo's fold=0): after the clock steps back inside that hour, its later times are moved
    to the second reading (+ the shift)."""

    def __init__(self, tz: str):
        self.tz = tz or "UTC"
        self.peak: int | None = None  # latest local wall time (ns) seen in the current repeated stretch
        self.after = False  # the clock stepped back in this stretch

    def __call__(self, t: int) -> int:
        if self.tz == "UTC" or t == np.iinfo(np.int64).min:
            return t
        off, first_off, shift = _minute(self.tz, t // 60_000_000_000)
        if not shift:
            self.peak, self.after = None, False
            return t
        wall = t + off
        self.after = self.after or (self.peak is not None and wall < self.peak - shift // 2)
        self.peak = wall if self.peak is None else max(self.peak, wall)
        return t + shift if self.after and off == first_off else t


@lru_cache(maxsize=4096)
def _minute(tz: str, minute: int) -> tuple[int, int, int]:
    """(UTC offset ns at that UTC minute, offset ns of the first reading of its wall time, shift ns when that wall
    time happens twice, else 0); one zoneinfo lookup per minute of log."""
    zone = ZoneInfo(tz)
    wall = datetime.fromtimestamp(minute * 60, timezone.utc).astimezone(zone)
    naive = wall.replace(tzinfo=None)
    first = naive.replace(tzinfo=zone, fold=0).utcoffset()
    second = naive.replace(tzinfo=zone, fold=1).utcoffset()
    off, first_ns, second_ns = (int(d.total_seconds()) * 1_000_000_000 for d in (wall.utcoffset(), first, second))
    return off, first_ns, max(0, first_ns - second_ns)
