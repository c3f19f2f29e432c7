"""A line that states a span's total time beside its per-step time and names no step (MindSpore's TimeMonitor:
`epoch time: 37500.000 ms, per step time: 20.000 ms`): the span holds total / per-step steps, since the per-step
time is by definition the total over the steps, so the line ends that many steps after the previous such line, or
at the last step named when step lines (MindSpore's LossMonitor) counted the span already."""

from __future__ import annotations

from playbook.readers.step_log.vocab import PER_STEP, STEP_NAMES

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
