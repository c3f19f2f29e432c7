"""DataLoader wait probe: time blocked in `next()` becomes phase "data" of the current or next step.

    for i, batch in enumerate(timed(loader, timer)):   # or rec.timed(loader) inside a Recorder
        with timer.step(i):
            ...

A fetch that returns in ≤ 50 µs means the loader keeps up; waits that are a large share of the step mean the
GPU starves (see notebooks/10_data_starvation). The wrapper keeps `len()` when the iterable has one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


class Timed:
    """An iterator over `iterable` that records each `next()` wait into `timer` as `phase` (seconds, CPU clock)."""

    def __init__(self, iterable: Iterable[Any], timer: Any, phase: str = "data"):
        self.iterable, self.timer, self.phase = iterable, timer, phase
        self._it: Iterator[Any] | None = None

    def __iter__(self) -> Timed:
        self._it = iter(self.iterable)
        return self

    def __next__(self) -> Any:
        if self._it is None:
            self._it = iter(self.iterable)
        token = self.timer.begin_wait(self.phase)
        try:
            item = next(self._it)
        except BaseException:  # StopIteration included: the last wait yields nothing, so it is not a data phase
            self.timer.cancel_wait(token)
            raise
        self.timer.end_wait(token, self.phase)
        return item

    def __len__(self) -> int:
        return len(self.iterable)  # type: ignore[arg-type]


def timed(iterable: Iterable[Any], timer: Any, phase: str = "data") -> Timed:
    """Wrap `iterable` so that time blocked in `next()` is recorded by `timer` (a StepTimer) as `phase`."""
    return Timed(iterable, timer, phase)
