"""A one-line timer summary read as the parts of one step: `time (ms) | forward_microstep: 316.02 |
backward_microstep: 747.32 | backward_inner_microstep: 514.98 | backward_allreduce_microstep: 232.30 |
step_microstep: 663.62`.

Writers: DeepSpeed's wall_clock_breakdown (deepspeed/utils/timer.py SynchronizedWallClockTimer.log: `"time (ms)"` then
`" | {name}: {elapsed:.2f}"` per timer, through log_dist: `[Rank 0]`, in older versions `rank=0` before it). Its engine
times one micro-batch with the `*_microstep` timers (fwd, bwd = bwd_inner + bwd_allreduce, step: the optimizer's
update) and prints the same names without the suffix after them, summed over the accumulation window; the pipeline
engine adds batch_input (loading the micro-batch) and pipe_send_* / pipe_recv_* (point-to-point transfers that
block until the neighbour stage is ready). Megatron-LM's Timers.log prints the same form (`forward-compute`,
`backward-compute`, `backward-allreduce`, `optimizer`, `batch-generator`).

  scope    a `microstep` word (or `micro step`) is the timer's scope, not its phase: `forward_microstep` and
           `forward` time the same part. A line repeating the previous line's timers in the other scope is its
           twin (the window's total; one micro-batch when the window is one) and adds nothing new.
  nesting  a timer whose words extend another's on its line (`backward_allreduce` after `backward`,
           `backward-backward`, `optimizer-copy-to-main-grad` before `optimizer`) is a part of it: when its own words
           name a wait on the peers (`allreduce`: collective; `recv`: wait) its time is carved out of the parent's,
           else the parent covers it.
  phases   the step vocabulary's (vocab.classify), a collective word first (`optimizer_allgather`: the action names
           the time); beside forward and backward a timer named `step` is the update (optimizer); `recv` / `send`:
           waiting on the neighbour stage (wait); `input`: the batch's load (data).
           A timer that names no phase, or two (`forward-backward`), is left out and counted (`unnamed`).
The outermost timers are the step's parts, and their sum the step where the file states no step time of its own
(columns.stage_sum: the fields carry the FAMILY role).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from playbook.readers.step_log.counter import StepCounter
from playbook.readers.step_log.vocab import FAMILY, TIMER_PAIR, classify, norm_key

_WORD_PHASE = {"recv": "wait", "send": "wait", "input": "data"}  # words the step vocabulary reads otherwise
_COMPUTE = ("fwd", "bwd")
# a step's parts cannot outlast it: timers summing past 1.5x the step time are a window's sums (measurement noise
# and a twin counted twice stay under 1.5x; a window of two steps or more is at least ~2x)
WINDOW_OVER = 1.5
# the phases a nested timer takes out of its parent: communication waits on the peers (`backward_allreduce`); any
# other nested part (`optimizer-copy-to-main-grad`, `backward_inner`) is its parent's own work
_CARVED = ("collective", "wait")


@dataclass
class TimerLine:
    """One timer line's step parts: `phases` {phase: seconds}, its timers' `names` (scope words dropped), whether
    they are `scoped` (micro-step timers) and how many timers named no phase (`unnamed`)."""

    phases: dict[str, float] = field(default_factory=dict)
    names: frozenset = frozenset()
    scoped: bool = False
    unnamed: int = 0

    def fields(self) -> dict[str, tuple[float, tuple]]:
        """The step record's fields: `timer <phase>` -> (seconds, a stage role of a summable family)."""
        return {f"timer {p}": (s, ("phase", p, 1.0, FAMILY)) for p, s in self.phases.items()}


def _words(name: str) -> tuple[tuple[str, ...], bool]:
    """(the timer's words without its scope words, whether it had one)."""
    words, out, scoped, i = norm_key(name).split("_"), [], False, 0
    while i < len(words):
        if words[i] == "microstep" or words[i] == "micro" and words[i + 1: i + 2] == ["step"]:
            scoped = True
            i += 1 if words[i] == "microstep" else 2
            continue
        out.append(words[i])
        i += 1
    return tuple(out), scoped


def _phase(words: tuple[str, ...], update: bool) -> str | None:
    """The phase a timer's words name (None: none, or two compute phases: `forward-backward` spans the step)."""
    for w in words:
        if w in _WORD_PHASE:
            return _WORD_PHASE[w]
    named = {p for w in words if (r := classify(w + " time", None)) and r[0] == "phase" for p in [r[1]]}
    if len(named & set(_COMPUTE)) > 1:
        return None
    if "collective" in named:  # the action names the time: `optimizer_allgather`, `backward_allreduce`
        return "collective"
    role = classify("_".join(words) + " time", None) if words else None
    if role is not None and role[0] == "phase":
        return role[1]
    return "optimizer" if update and words == ("step",) else None


def parse(text: str, factor: float) -> TimerLine:
    """The step parts of the `name: value` pairs in `text` (the line after its `time (unit) |` head), `factor`:
    seconds per unit."""
    timers: dict[tuple[str, ...], float] = {}
    scoped = False
    for m in TIMER_PAIR.finditer(text):
        words, s = _words(m["name"])
        scoped = scoped or s
        if words:
            timers.setdefault(words, float(m["b"] or m["a"]) * factor)
    update = any(_phase(w, False) in _COMPUTE for w in timers)
    out = TimerLine(names=frozenset(timers), scoped=scoped)
    parents = {w: next((p for p in sorted(timers, key=len, reverse=True) if len(p) < len(w) and w[:len(p)] == p),
                       None) for w in timers}
    for words, seconds in timers.items():  # the outermost timers: the step's parts
        if parents[words] is None:
            own = _phase(words, update)
            if own is None:
                out.unnamed += 1
            else:
                out.phases[own] = out.phases.get(own, 0.0) + seconds
    for words, seconds in timers.items():  # a nested timer of another phase: carved out of its outermost parent's
        parent = outer = parents[words]
        while outer is not None and parents[outer] is not None:
            outer = parents[outer]
        if parent is None:
            continue
        own, home = _phase(words[len(parent):], update), _phase(outer, update)
        if own in _CARVED and home in out.phases and own != home:  # the all-reduce inside the backward
            taken = min(seconds, out.phases[home])
            out.phases[home] -= taken
            out.phases[own] = out.phases.get(own, 0.0) + taken
    return out


def feed(lines, text: str, factor: float, ctx) -> None:
    """One timer line into the step records of `lines` (grammar.StepLines): onto the record of the line it twins,
    else onto the last record when that has no timer line yet and is no setup bar's (the timers printed after their
    step's line: Megatron-LM, GPT-NeoX), else as a step of its own, the one after its rank's last (DeepSpeed prints the timers
    inside the step, before any line of the trainer's; a file of timer lines alone is one step a line)."""
    t = parse(text, factor)
    n, last, fields = len(lines.step), lines.timer_last, t.fields()
    if last is not None and last[0] < n and last[1] == t.names and last[2] is (not t.scoped):
        lines._merge(last[0], fields)
        lines.timer_last = (last[0], t.names, None)  # both scopes read: the next line is another step's
        return
    elif n and (last is None or last[0] != n - 1) and not lines.loops.setup(lines.kind[n - 1]):
        row = n - 1  # (not a setup bar's: `Loading checkpoint shards: 100%| 2/2` is no step, bar_loops.py)
    elif fields:
        c = StepCounter(lines.last_step.get(ctx.rank, 0) + 1, None, None, (0, 0), False)
        c.kind = 1  # the step after the last one named: of the keyword lines' kind
        lines._store(c, ctx, fields)
        lines.timer_last = (n, t.names, t.scoped) if len(lines.step) > n else None
        return
    else:
        return
    lines._merge(row, fields)
    lines.timer_last = (row, t.names, t.scoped)


def per_step(phases: dict, timed: set, idx, step, rank, duration) -> dict:
    """The phases of the kept records (`idx` into the file's records `step`, `rank`; `duration` s per record) with
    those read from timer lines (`timed`) as seconds per step. A record whose timers sum past WINDOW_OVER times its
    step holds a window's sums (DeepSpeed's pipeline engine logs its transfer timers every steps_per_print steps,
    reset each time): they are divided by the window, its rank's step period (the median gap between its
    consecutive step numbers, else the file's); left as read where the file states one step only."""
    names = [p for p in phases if p in timed]
    if not names or not len(idx):
        return phases
    total = np.nansum([phases[p] for p in names], axis=0)
    over = np.isfinite(duration[idx]) & (total > WINDOW_OVER * duration[idx])
    if not over.any():
        return phases
    period = np.ones(len(idx))
    for r in np.unique(rank[idx][over]):
        gaps = np.diff(np.unique(step[rank == r]))
        gaps = gaps if len(gaps) else np.diff(np.unique(step))  # the print interval is the file's (steps_per_print)
        if len(gaps):
            period[rank[idx] == r] = max(float(np.median(gaps)), 1.0)
    scale = np.where(over, period, 1.0)
    return {p: (s / scale if p in names else s) for p, s in phases.items()}
