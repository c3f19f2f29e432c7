"""A batch held by its slowest sample, and a metrics line wrapped by the paste.

Long tail: a rollout stage generates a batch of samples at once, and a step's stage lasts as long as its slowest
sample. A log that states the spread of the samples' own times (verl's agent loop: `timing_s/agent_loop/
generate_sequences/max:539.5 - .../mean:266.6`, with `timing_s/gen:541.2`) shows it: when the step's rollout stage
(named so: `gen`, `generation`, `rollout`, `sampling`) lasts as long as the samples' maximum (within TAIL_MATCH),
the samples that finished early wait for the last one. Were the work spread evenly the stage would take the samples'
mean, so max - mean of it is the batch waiting on its tail: a `tail` phase (a wait: analysis/step_times.WAIT_PHASES), carved out of that stage. The statistics themselves are no
stages of the step (vocab._family leaves `/max`, `/mean`, `/slowest/...` out).

Wrapped line: a key:value metrics line cut by the paste inside a number (`timing_s/adv:0.0365777518600225` then a
line `45 - timing_s/update_actor:472.1 - ...`): a line that starts with a bare number and the field separator
continues the held line before it, when that one states fields and ends in a digit and was no record of its own.
"""

from __future__ import annotations

import re

TAIL_MATCH = 0.05  # a stage within 5% above the samples' maximum is that maximum: the batch waited for it
_STAT = re.compile(r"(?P<path>[\w.\-]{0,40}(?:timing_s|timings?|timers?|times?|perf)/[\w./\-]{1,120}?)/"
                   r"(?P<stat>max|mean|avg)\s*[:=]\s*(?P<v>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w.])")
_CONT = re.compile(r"^\d{1,40}(?:[eE][-+]?\d+)?\s+-\s+[A-Za-z_][\w./\-]{0,120}\s*[:=]")
_FIELDS = re.compile(r"[A-Za-z_][\w./\-]{0,120}:-?\d")
_ROLLOUT = re.compile(r"(?:^|_)(?:gen|generate|generation|generations|rollout|rollouts|sample|sampling)(?:_|$)")
MIN_FIELDS = 3  # fields a held line states: a metrics line, not a message


def tail_fields(text: str, found: dict) -> dict:
    """`found` (name -> (value, role), the grammar's fields of `text`) with the long tail split off the stage that
    lasts as long as the samples' maximum; unchanged when the line states no spread or no such stage."""
    if "/max" not in text:  # no samples' maximum: nothing to match (and the pattern is costly on a long line)
        return found
    stats: dict[str, dict[str, float]] = {}
    for m in _STAT.finditer(text):
        stats.setdefault(m["path"], {})[m["stat"]] = float(m["v"])
    for path, st in stats.items():
        top, mean = st.get("max"), st.get("mean", st.get("avg"))
        if top is None or mean is None or not 0 <= mean < top:
            continue
        # the stage that generates the batch's samples (its name says so): another stage of about the maximum's size
        # (a 12.3 s reward stage beside the tool calls' 12 s maximum) runs after the samples, not with them
        held = [k for k, (v, role) in found.items() if role[0] == "phase" and _ROLLOUT.search(str(role[1]))
                and top <= v * role[2] <= top * (1 + TAIL_MATCH)]
        if len(held) != 1:
            continue  # no stage, or several, last as long as the slowest sample: which one waited is not stated
        key = held[0]
        value, role = found[key]
        tail = (top - mean) / role[2]
        found = {**found, key: (value - tail, role), f"{path}/tail": (tail, ("phase", "tail", role[2]))}
    return found


class Wrapped:
    """feed(body) -> the text to read: the held line joined with `body` when `body` continues it, else `body`."""

    def __init__(self):
        self.held: str | None = None
        self.before = self.last = ""  # the line before the one being read, and that one (span_line.timing_heading)

    def feed(self, body: str, record: bool) -> str:
        """`record`: whether `body` alone reads as a step record (then it is never held)."""
        held, self.held = self.held, None
        self.before, self.last = self.last, body
        if (row := timed_row(body)) is not None:
            return row
        if held is not None and _CONT.match(body):
            return held + body
        cut = body.rstrip()  # a terminal's trailing blanks after the cut number
        if not record and cut[-1:].isdigit() and len(_FIELDS.findall(cut)) >= MIN_FIELDS:
            self.held = cut
        return body


# a row of a pasted markdown table that times one stage: `| `perf/sleep_time` | **11.228 s** | 59.6% |` (a name, a
# time with its unit, optionally its share of the step); read as the timing line `perf/sleep_time: 11.228 s (59.6%)`
_ROW = re.compile(r"^\s*\|\s*(?P<name>[^|]{1,120}?)\s*\|\s*(?P<time>\d+(?:\.\d+)?\s*(?:ms|us|µs|s|sec|min))\s*\|"
                  r"(?:\s*(?P<share>\d+(?:\.\d+)?\s*%)\s*\|)?\s*$", re.IGNORECASE)
_DECOR = re.compile(r"[`*]|&nbsp;|[├└│─]")


def timed_row(body: str) -> str | None:
    """The timing line a stage's table row states, "" for a row that sums other rows (`sleep + wake_up`: no stage of
    its own), None for any other line."""
    m = _ROW.match(_DECOR.sub("", body)) if "|" in body else None
    if m is None:
        return None
    name = m["name"].strip()
    if "+" in name or not re.search(r"[A-Za-z]", name):
        return ""
    return f"{name}: {m['time']}" + (f" ({m['share']})" if m["share"] else "")
