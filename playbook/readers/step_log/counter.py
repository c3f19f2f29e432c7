"""What a step counter match says (readers/step_log/grammar.py): the step, its place in an epoch, its mode."""

from __future__ import annotations


class StepCounter:
    """What a counter match says: the step number, the within-epoch position, a mode (train / eval)."""

    __slots__ = ("step", "epoch", "n", "span", "keyword", "evaluating", "fields", "progress", "kind", "pos")

    def __init__(self, step, epoch, n, span, keyword, evaluating=False):
        self.step, self.epoch, self.n, self.span = step, epoch, n, span
        self.keyword, self.evaluating = keyword, evaluating
        self.progress = False  # a progress bar (tqdm, Keras): a redraw without a rate is still understood
        self.kind: int | None = None  # the counter's kind when not its keyword / progress flags (see StepLines.kind)
        self.pos = -1  # the position within its epoch (`[i/N]`'s i), -1 unknown
