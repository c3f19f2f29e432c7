"""Reading ahead: the next chunks of a stream made on a background thread while the caller works on the current one.

zlib's inflate and file reads release the GIL, so a trace's decompression runs beside its decoding on a second core
(benchmarks/kineto_load.py). The items come in their order, an exception where it was raised, memory bounded by
`depth` chunks."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")
_END = object()


def read_ahead(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """The items of `items`, made up to `depth` ahead on a thread; an exception it raises is raised here, after the
    items before it. Closing the returned generator (or leaving it) stops the thread and waits for it."""
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(entry) -> bool:
        while not stop.is_set():
            try:
                ready.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def make() -> None:
        try:
            for item in items:
                if not offer((item, None)):
                    return
            offer((_END, None))
        except BaseException as exc:  # handed to the consumer, raised there in order
            offer((_END, exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=make, name="playbook-read-ahead", daemon=True)
    worker.start()
    try:
        while True:
            item, exc = ready.get()
            if item is _END:
                if exc is not None:
                    raise exc
                return
            yield item
    finally:
        stop.set()
        worker.join()
