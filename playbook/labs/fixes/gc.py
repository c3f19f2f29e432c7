"""Python garbage-collector pauses in a training loop, and how to keep them out of the steps.

    from playbook.labs.fixes.gc import gc_tuned, ScheduledGC
    build_dataset_index(); model = ...             # setup: everything long-lived is allocated
    with gc_tuned():                                # collect once, freeze the survivors, raise the thresholds
        train()

    with ScheduledGC(every=200) as sgc:             # or: no automatic GC at all, a collection every 200 steps
        for step, batch in ...:
            train_step(...)
            sgc.step(step)                          # same step on every rank: the pauses line up

Why: CPython's cycle collector runs after so many allocations; a full (generation 2) collection walks every
tracked object — a dataset index, a tokenizer's tables, metadata: millions of objects, hundreds of milliseconds.
The allocations of each step (batch metadata, Python-side bookkeeping) trigger it every few dozen steps: a periodic
pause in which the host launches nothing and the GPU idles; on N ranks the pauses happen at different times and
every rank waits for each. `gc.freeze()` moves everything alive after setup into a permanent generation the
collector never walks; higher thresholds make collections rarer. Costs: frozen objects that later die are never
reclaimed by the collector (refcounting still frees acyclic ones), and with automatic GC disabled, cyclic garbage
accumulates until the next scheduled collection (watch RSS).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator


@contextlib.contextmanager
def gc_tuned(freeze: bool = True, threshold: tuple[int, ...] | None = (200_000, 20, 100)) -> Iterator[None]:
    """Collect, freeze what survived setup (`freeze`), set `threshold` (None: keep); restore both on exit."""
    before = gc.get_threshold()
    gc.collect()
    if freeze:
        gc.freeze()
    if threshold is not None:
        gc.set_threshold(*threshold)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if freeze:
            gc.unfreeze()


class ScheduledGC:
    """Automatic GC off; `step(i)` runs `gc.collect(generation)` every `every` steps (between steps, at the same
    step on every rank). `freeze`: freeze what is alive on entry. stats: collections, seconds, max_s."""

    def __init__(self, every: int = 100, generation: int = 2, freeze: bool = True):
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.every, self.generation, self.freeze = int(every), int(generation), freeze
        self.stats = {"collections": 0, "seconds": 0.0, "max_s": 0.0}
        self._was_enabled = True

    def __enter__(self) -> ScheduledGC:
        self._was_enabled = gc.isenabled()
        gc.collect()
        if self.freeze:
            gc.freeze()
        gc.disable()
        return self

    def step(self, i: int) -> float:
        """Collect when (i + 1) % every == 0; returns the seconds spent (0.0 otherwise)."""
        if (int(i) + 1) % self.every:
            return 0.0
        t0 = time.perf_counter()
        gc.collect(self.generation)
        dt = time.perf_counter() - t0
        self.stats["collections"] += 1
        self.stats["seconds"] += dt
        self.stats["max_s"] = max(self.stats["max_s"], dt)
        return dt

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            gc.enable()
        if self.freeze:
            gc.unfreeze()


@contextlib.contextmanager
def gc_disabled() -> Iterator[None]:
    """Automatic GC off inside the block (cyclic garbage then accumulates: a reference point, not a fix)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
