"""What a step counter match says (readers/step_log/grammar.py): the step, its place in an epoch, its mode."""

from __future__ import annotations

import re


class StepCounter:
    """What a counter match says: the step number, the within-epoch position, a mode (train / eval)."""

    __slots__ = ("step", "epoch", "n", "span", "keyword", "evaluating", "fields", "progress", "kind", "pos")

    def __init__(self, step, epoch, n, span, keyword, evaluating=False):
        self.step, self.epoch, self.n, self.span = step, epoch, n, span
        self.keyword, self.evaluating = keyword, evaluating
        self.progress = False  # a progress bar (tqdm, Keras): a redraw without a rate is still understood
        self.kind: int | None = None  # the counter's kind when not its keyword / progress flags (see StepLines.kind)
        self.pos = -1  # the position within its epoch (`[i/N]`'s i), -1 unknown


# a line that opens with `N:` and then values (darknet's ` 15: 825.548706, 680.210022 avg, 0.000000 rate, 10.08 seconds,
# 960 images`): Slurm `srun -l`'s rank label has the same shape, so line_prefix.py took N for the rank
_LABEL_STEP = re.compile(r"^\s*(\d{1,18}):\s+(?=-?\d+\.\d+,\s)")


def label_step(ctx) -> StepCounter | None:
    """The step of a line whose `N:` label, read as a rank, is followed by values alone: the label counts the
    steps (the line's rank becomes unknown). None for any other line: a message after a rank label has words."""
    m = _LABEL_STEP.match(ctx.raw)
    if m is None or int(m[1]) != ctx.rank:
        return None
    ctx.rank = -1
    c = StepCounter(int(m[1]), None, None, (0, 0), False)
    c.kind = 0  # a position, as a bare `[N]` is
    return c
