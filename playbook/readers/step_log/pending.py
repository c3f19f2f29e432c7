"""A step line that waits for its time: a keyword counter line with no fields and no time stamp (NeMo-RL's
`========================= Step 3/10 =========================` banner, DeepSpeed's flops profiler's `Profile
Summary at step 10:`) is held until a later line of its rank states the step's own time (`  • Total step time:
62.40s`, `iter latency: 184.73 ms`: a duration named after a step), before any other record and within MAX_LINES
lines; the record is then stored with that line's fields and the stage times read while it was held (`fwd latency:
76.67 ms`), and the timing lines after it (`  • generation: 31.20s (50.0%)`) join it as its trail."""

from __future__ import annotations

from playbook.readers.step_log.vocab import STEP_NAMES

MAX_LINES = 64  # a step's progress and result lines between its banner and its timing block


class PendingStep:
    """hold(counter, line context, records stored) a bare counter line; take(line context, records stored, the
    line's fields) -> (counter, its line context, its fields) when the line states the held step's time, else
    None."""

    def __init__(self):
        self.held: tuple | None = None
        self._stages: dict = {}  # stage times read while held

    def hold(self, c, ctx, records: int) -> None:
        self.held = (c, ctx, records)
        self._stages = {}

    def take(self, ctx, records: int, fields: dict) -> tuple | None:
        c, at, n = self.held
        if n != records or at.rank != ctx.rank or ctx.lineno - at.lineno > MAX_LINES:
            self.held = None  # another record came first, or the step's time never did
            return None
        if not any(role[0] == "dur" and any(w in STEP_NAMES for w in name.split("_"))
                   for name, (_, role) in fields.items()):
            self._stages.update((k, v) for k, v in fields.items() if v[1][0] == "phase")
            return None
        self.held = None
        return c, at, {**self._stages, **fields}
