"""A count of steps in brackets right after a time's key — HugeCTR's `Time(1000 iters): 5.359799s`
(HugeCTR/src/session.cpp and the Python solver print `"Iter: " << i << " Time(" << display << " iters): " << s <<
"s"`), `time (100 steps): 12.1 s`, `Elapsed[50 batches] = 3.2s` — numbers the steps the time after it covers. The
count is no time (read as one it made a 5.4 s window of 1000 iterations a 1000 s step), and the time is a window: the
time of those steps: read per step, the time over the count the line states (COUNT_FIELD beside the window: `per_count`),
not over the steps between the printed lines — those differ where lines were cut from the log or the tool times only
the last steps of its print interval."""

from __future__ import annotations

import re

# the time's key, an opening bracket, then the count (no unit of its own: the step noun follows as the next key)
_OPEN = re.compile(r"(?:\btime|\btook|\belapsed|\bduration|\bspent)\s{0,3}[(\[]\s{0,3}$", re.IGNORECASE)
# the step noun after the count, the bracket closed, then the time's value
_CLOSE = re.compile(r"^\s{0,3}(?:iters?|iterations?|steps?|batch(?:es)?|updates?)\s{0,3}[)\]]\s{0,3}[:=]?\s{0,3}$",
                    re.IGNORECASE)


def bracket_count(segs: list[str], i: int) -> bool:
    """Whether value i // 2 of a line's `segs` (text before each value, then its unit, alternating) is such a count:
    its key opens a bracket after a time's word, it has no unit, and the key after it closes the bracket on a step
    noun."""
    return (i + 2 < len(segs) and not segs[i + 1] and _OPEN.search(segs[i]) is not None
            and _CLOSE.match(segs[i + 2]) is not None)


# the count, read beside the time it counts (named COUNTED, a per-step time once divided by it: `per_count`)
COUNT_FIELD, COUNT_ROLE, COUNTED = "(window steps)", ("count", "steps", 1.0), "(window per counted step)"


def per_count(found: dict) -> dict:
    """A line's fields (name -> (value, role)) with the bracketed count gone and the time beside it divided by it; a
    count below one (no steps) leaves no time."""
    if COUNT_FIELD not in found:
        return found
    found = dict(found)
    n = found.pop(COUNT_FIELD)[0]
    if (w := found.pop(COUNTED, None)) is not None and n >= 1:
        found[COUNTED] = (w[0] / n, w[1])
    return found
