"""A line that states a span's total time beside its per-step time and names no step (MindSpore's TimeMonitor:
`epoch time: 37500.000 ms, per step time: 20.000 ms`): the span holds total / per-step steps, since the per-step
time is by definition the total over the steps, so the line ends that many steps after the previous such line, or
at the last step named when step lines (MindSpore's LossMonitor) counted the span already. Such lines are the
grammar's implicit counters: a line without a counter whose field names a step's own time.

Such a line may still number its step without a keyword (NVIDIA/tacotron2's `Train loss {iteration} {loss} Grad Norm
{norm} {duration}s/it`): a lone bare integer (no point, unit or key of its own) numbers the rank's first such line,
and then the lines whose integer is one more than the step before — a count of steps; once it has counted, a jump
forward (lines cut from a paste) is still its number. Any other integer (`samples: 256` rising by 256 a line, a rank,
an epoch, a day of the month) is no step's: the line is the step after the last one named."""

from __future__ import annotations

import re

from playbook.readers.step_log.counter import StepCounter
from playbook.readers.step_log.vocab import IMPLICIT_HINT, PER_STEP, STEP_NAMES

# a bare integer: not part of a number, word, key (`bs=32`, `epoch 3`), ratio, stamp or unit-suffixed value (`5s`)
BARE_INT = re.compile(r"(?<![\w.:/=#-])(?<!epoch )(?<!Epoch )(?<!EPOCH )\d{1,12}(?![\w.:/%=-])")
UNIT_STEPS = STEP_NAMES + ("it",)  # a key's word, or its unit's denominator (`(s/it)`), that names one step
SPAN_WORDS = frozenset(("epoch", "total"))  # a duration named with one of these is the span's, not one step's


def span_steps(fields: dict) -> int | None:
    """Steps in the span a line's fields describe (name -> (value, role)), or None when the line does not state
    exactly one span total and one per-step time, or their ratio is under 2 steps."""
    per = [v * r[2] for k, (v, r) in fields.items()
           if r[0] == "dur" and r[1] == PER_STEP and set(k.split("_")) & set(STEP_NAMES)]
    span = [v * r[2] for k, (v, r) in fields.items() if r[0] == "dur" and set(k.split("_")) & SPAN_WORDS]
    if len(per) != 1 or len(span) != 1 or not per[0] > 0:
        return None
    n = round(span[0] / per[0])
    return n if n >= 2 else None


def span_end(last_named: int, previous_end: int, n: int | None) -> int:
    """The step a counterless timed line stands at: the next step after `last_named` for a one-step line (n None);
    for a span of n steps, n past the previous span's end, or `last_named` when step lines already went that far."""
    return last_named + 1 if n is None else max(last_named, previous_end + n)


def implicit_counter(lines, body: str, ctx) -> StepCounter | None:
    """A line of the step scanner `lines` (grammar.StepLines) without a counter whose field names a step's own time
    (`Iteration duration: 0.53`, `step_time=0.5s`, a per-step unit `3.79s/it`): its lone bare integer when that
    rises past its rank's last step, else the next step of its rank, or a span's end beside the span's total."""
    if not IMPLICIT_HINT.search(body):
        return None
    every = lines._fields(body, None)
    fields = {k: v for k, v in every.items()
              if v[1][0] == "dur" and v[1][1] == PER_STEP and any(w in re.split(r"[_/()]", k) for w in UNIT_STEPS)}
    if not fields:
        return None
    n = span_steps(every)
    last = lines.last_step.get(ctx.rank)
    step = span_end(last or 0, lines.span_ends.get(ctx.rank, 0), n)
    counting = False
    if n is None and len(bare := BARE_INT.findall(body)) == 1:
        value = int(bare[0])
        counting = last is not None and value == last + 1
        if last is None or counting or (value > last and lines.bare_counting.get(ctx.rank)):
            step = value  # the line's own number for its step
            counting = counting or last is not None
    lines.bare_counting[ctx.rank] = counting
    if n is not None:
        lines.span_ends[ctx.rank] = step
    c = StepCounter(step, None, None, (0, 0), False)
    c.fields = fields
    c.kind = 1  # the step after the last one named: of the keyword lines' kind
    return c
