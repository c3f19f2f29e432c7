"""A line that states a span's total time beside its per-step time and names no step (MindSpore's TimeMonitor:
`epoch time: 37500.000 ms, per step time: 20.000 ms`): the span holds total / per-step steps, since the per-step
time is by definition the total over the steps, so the line ends that many steps after the previous such line, or
at the last step named when step lines (MindSpore's LossMonitor) counted the span already. Such lines are the
grammar's implicit counters: a line without a counter whose field names a step's own time.

Such a line may still number its step without a keyword (NVIDIA/tacotron2's `Train loss {iteration} {loss} Grad Norm
{norm} {duration}s/it`): a lone bare integer (no point, unit or key of its own) numbers the rank's first such line,
and then the lines whose integer is one more than the step before — a count of steps; once it has counted, a jump
forward (lines cut from a paste) is still its number. Any other integer (`samples: 256` rising by 256 a line, a rank,
an epoch, a day of the month) is no step's: the line is the step after the last one named.

A tqdm bar's closing postfix alone on a line, its count and bar cut off by the paste (`[01:22<00:00,  4.13s/it]`,
the remaining clock at zero), is no step: tqdm's rate there is its average over the whole loop (elapsed / rate
iterations, 20 here), so such lines are loops, each its own (A1111's and forge's runs pasted under their own
headings), not steps of one series."""

from __future__ import annotations

import re

from playbook.readers.step_log.abbrev import noun
from playbook.readers.step_log.counter import StepCounter
from playbook.readers.step_log.vocab import (
    CUMULATIVE,
    GENERIC,
    IMPLICIT_HINT,
    KEYWORD,
    PER_STEP,
    STEP_NAMES,
    norm_key,
    stage_by_meaning,
)

# a bare integer: not part of a number, word, key (`bs=32`, `epoch 3`), ratio, stamp or unit-suffixed value (`5s`)
BARE_INT = re.compile(r"(?<![\w.:/=#-])(?<!epoch )(?<!Epoch )(?<!EPOCH )\d{1,12}(?![\w.:/%=-])")
UNIT_STEPS = STEP_NAMES + ("it",)  # a key's word, or its unit's denominator (`(s/it)`), that names one step
SPAN_WORDS = frozenset(("epoch", "total"))
_CLOCK = r"(?:\d{1,4}:)?\d{1,4}:\d\d"
# a bar's closing postfix alone on a line (see the module docstring): elapsed, remaining at zero, the loop's mean rate
BAR_CLOSE = re.compile(r"^\W{0,4}\[\s*" + _CLOCK + r"\s*<\s*(?:0{1,2}:)?00:00\s*,\s*\d{1,9}(?:\.\d{1,6})?\s*(?:s/it|it/s)"
                       r"[^\]]{0,200}\]\W{0,4}$")  # a duration named with one of these is the span's, not one step's


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
    if not IMPLICIT_HINT.search(body) or BAR_CLOSE.match(body):
        return None
    every = lines._fields(body, None)
    fields = {k: v for k, v in every.items()
              if v[1][0] == "dur" and v[1][1] == PER_STEP and any((noun(w.lower()) or w) in UNIT_STEPS for w in re.split(r"[_/()]", k))}
    if not fields:
        return None
    n = span_steps(every)
    last = lines.last_step.get(ctx.rank)
    step = span_end(last or 0, lines.span_ends.get(ctx.rank, 0), n)
    counting = False
    if n is None and len(bare := BARE_INT.findall(body)) == 1:
        value = int(bare[0])
        counting = last is not None and value == last + 1
        # after a tqdm bar's record (a loop of its own, bar_loops.py: a checkpoint's shard bar before tacotron2's
        # `Train loss 0 ... 5.71s/it`) the line's own number too
        if last is None or counting or lines.last_bar.get(ctx.rank) or \
                (value > last and lines.bare_counting.get(ctx.rank)):
            step = value  # the line's own number for its step
            counting = counting or last is not None
    lines.bare_counting[ctx.rank] = counting
    if n is not None:
        lines.span_ends[ctx.rank] = step
    c = StepCounter(step, None, None, (0, 0), False)
    # the stages timed on the same line are that step's (verl's `timing_s/gen:31.2 - ... - timing_s/step:60.4`)
    c.fields = {**{k: v for k, v in every.items() if v[1][0] == "phase"}, **fields}
    c.kind = 1  # the step after the last one named: of the keyword lines' kind
    return c


# a timing section's heading with no step named (NeMo-RL's `⏱️  Timing:` without its `===== Step N/M =====` banner,
# a paste that starts at the block): the heading stands in for the banner of the next step of its rank
TIMING_HEADING = re.compile(r"^\W{0,8}(?:timings?|timers?|step timings?|time breakdown)\s*:\s*$", re.IGNORECASE)


def timing_heading(lines, body: str, ctx) -> bool:
    """Hold the next step of `ctx`'s rank on the step scanner `lines` (grammar.StepLines) when `body` is a timing
    section's heading and no banner is held already: the step's own time (`• Total step time: 66.55s`) must follow
    (pending.py), else nothing is stored."""
    if lines.pending.held or not TIMING_HEADING.match(body) or KEYWORD.search(lines.wrapped.before):
        return False  # under a banner that names its step (held, or too damaged to hold): the banner's block
    c = StepCounter(lines.last_step.get(ctx.rank, 0) + 1, None, None, (0, 0), True)
    c.kind = 1
    lines.pending.hold(c, ctx, len(lines.step))
    return True


_FAMILY_HEAD = re.compile(r"^(?:timing_s|timings?|timers?|times?|perf)_")  # `perf/train_time` read as perf_train_time
_BARE_TIME = frozenset(("latency", "time", "duration", "elapsed", "took", "timing", "total", ""))
# words of a running total since the start (`wall_time`, `runtime`, `total_train_time`): no stage of one step, nor
# is a span's total (`epoch_time`: SPAN_WORDS)
_RUNNING = frozenset(("wall", "clock", "runtime", "uptime", "elapsed", "cumulative", "total", "since", "overall"))
_NO_STAGE = frozenset((*STEP_NAMES, *_RUNNING, *SPAN_WORDS))  # words of a step's own or a running time


_STAGE_LINE = re.compile(r"^\W{0,8}[A-Za-z_][\w./\- ]{0,80}?\s*[:=]\s*\d")  # `  • name: 31.2s (50%)`: one stage


def trail_stages(fields: dict, body: str) -> dict:
    """The fields of a timing line that follows its step's own time (NeMo-RL's `  • generation: 31.20s (50.0%)`
    under `  • Total step time: 62.40s`): a time named for something other than the whole step is a stage of that
    step, a phase by its name (a wait or a hand-off by its words: handoff.py); a bare `Latency` names no stage."""
    if not _STAGE_LINE.match(body) or sum(role[0] in ("dur", "phase") for _, role in fields.values()) != 1:
        # a line of another shape (a profiler's `fwd latency - {'BertModel': '34.29 ms'}`, DeepSpeed's hybrid-engine
        # line of five times): as read
        return fields
    out = {}
    for key, (value, role) in fields.items():
        if role[0] == "dur" and role[1] in (GENERIC, CUMULATIVE):  # `train_time` under a step is its stage's
            name = _FAMILY_HEAD.sub("", norm_key(key.rsplit("/", 1)[-1])).removesuffix("_time").removesuffix("_s")
            # kept as read: a step's own total, DeepSpeed-Chat's `Generation => Latency` (its Training's key is bare)
            if not (name in _BARE_TIME or name.endswith("_latency") or set(name.split("_")) & _NO_STAGE):
                role = ("phase", stage_by_meaning(name) or name, role[2])
        out[key] = (value, role)
    return out

