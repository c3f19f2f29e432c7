"""A duration spelled in parts, largest unit first (`1 hour 2 minutes 3 seconds`, `7 min 50 s`), as one value in
seconds: the step-log grammar reads each line through join_spelled before its fields."""

from __future__ import annotations

import re

_SPELLED_UNIT = {"hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0, "min": 60.0, "mins": 60.0,
                 "minute": 60.0, "minutes": 60.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0}
_PART = r"(\d+(?:\.\d+)?)\s*(hours?|hrs?|minutes?|mins?|min|seconds?|secs?|sec|s)"
SPELLED = re.compile(r"(?<![\w.])(?<!\d:)" + _PART + r"\s+" + _PART + r"(?:\s+" + _PART + r")?(?![\w/])", re.IGNORECASE)


def join_spelled(body: str) -> str:
    """A duration spelled in parts, largest unit first (tensorpack's `time:1 hour 2 minutes 3 seconds`, `7 min 50
    s`), rewritten as one value in seconds (`time:3723 s`): read part by part, its first number had no unit (the next
    number follows the unit word) and stood alone. A part below the first must be under 60 of its unit, and the units
    must fall (hours, minutes, seconds), else the text is left as it is. Hours and minutes are words (`hr`, `min`
    at the shortest): StyleGAN's `time 6m 40s`, the run's elapsed clock, stays as that family's reading expects."""
    if not SPELLED.search(body):
        return body

    def one(m) -> str:
        g = [x for x in m.groups() if x is not None]
        vals, units = [float(v) for v in g[0::2]], [_SPELLED_UNIT[u.lower()] for u in g[1::2]]
        if any(b >= a for a, b in zip(units, units[1:], strict=False)) or any(v >= 60 for v in vals[1:]):
            return m.group(0)
        return f"{sum(v * u for v, u in zip(vals, units, strict=True)):g} s"

    return SPELLED.sub(one, body)
