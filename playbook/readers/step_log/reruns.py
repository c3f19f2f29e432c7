"""A run restarted into the same log: a keyword step counter of a rank that goes back to a step it already logged
(detectron2's metrics.json with a rerun appended: iteration 19, then 19 again), on no new epoch. Many such returns
are no restarts but the same lines printed by several untagged ranks, or a count that starts over each epoch
unnamed: then none is reported."""

from __future__ import annotations

import re

_NUMBERS = re.compile(r"[-+]?[\d.]+(?:[eE][-+]?\d+)?")
MAX_KEPT = 1000  # restarts kept; more are no restarts anyway


def _words(text: str) -> str:
    """A line without its numbers (its shape), first 400 characters."""
    return _NUMBERS.sub("", text[:4000])[:400]


class Reruns:
    """feed(rank, step, epoch, line, time, text) for each keyword step record (text: its line); found() the
    restarts as (rank, step, line, time). The same step again counts only as the same record again (a line of the
    same words): a step's evaluation line (modded-nanogpt's `step:250/2315 val_loss:...`) is no restart."""

    def __init__(self):
        self._last: dict[int, tuple] = {}  # rank -> (first step, last step, epoch then, its line)
        self._hits: list[tuple[int, int, int, int]] = []
        self.records = 0

    def feed(self, rank: int, step: int, epoch, line: int, time: int, text: str) -> None:
        self.records += 1
        last = self._last.get(rank)
        self._last[rank] = (step if last is None else last[0], step, epoch, text)
        if last is None:
            return
        first, prev, prev_epoch, prev_text = last
        back = first <= step < prev or (step == prev and _words(text) == _words(prev_text))
        if back and epoch == prev_epoch and len(self._hits) < MAX_KEPT:
            self._hits.append((rank, step, line, time))

    def found(self) -> list[tuple[int, int, int, int]]:
        """The restarts; none when the returns are too many to be restarts (over 1 in 50 records, and over 2)."""
        return self._hits if few_enough(len(self._hits), self.records) else []


def few_enough(returns: int, records: int) -> bool:
    """Whether `returns` of a step counter among `records` can be restarts: at most 2, or 1 in 50 records; more
    are no restarts (several untagged ranks' lines, a count that starts over each epoch)."""
    return returns <= max(2, records // 50)
