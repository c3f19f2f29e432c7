"""Keep the accelerator fed: load the next batches while the current one trains.

    from playbook.labs.fixes.prefetch import ThreadedLoader, ThreadPrefetcher, dataloader_kwargs

    # 1. Worker processes (CPU-bound decode with cores to spare): the standard DataLoader, configured well.
    loader = DataLoader(dataset, batch_size=64, shuffle=True, **dataloader_kwargs(workers=4))

    # 2. Threads (I/O-bound or GIL-releasing decode: remote reads, PIL/libjpeg, few cores, unpicklable datasets):
    loader = ThreadedLoader(dataset, batch_size=64, threads=16, prefetch=4)

    # 3. Any iterable (a streaming reader, a shuffle buffer): produce it in a background thread.
    for batch in ThreadPrefetcher(stream, depth=8): ...

Which one: decode that needs a whole core per sample (numpy augmentations in Python, tokenisation) scales with
worker processes, up to the cores left beside the training process (`worker_budget`). Decode that waits (object
storage, network file systems, disk) or runs in C without the GIL scales with threads, far beyond the core count,
and costs no process start-up, no pickling and no shared-memory copies.

`ShuffleBuffer` is the streaming alternative to a shuffle buffer that is drained then refilled in bulk — the
bulk refill stalls the loop every N batches, a periodic busy/idle cycle in GPU utilization.
"""

from __future__ import annotations

import collections
import os
import queue
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

_DONE = object()


class _Raised:
    """An exception raised in the producer thread, re-raised in the consumer."""

    def __init__(self, exc: BaseException):
        self.exc = exc


class ThreadPrefetcher:
    """Iterate `iterable` in a background thread, keeping up to `depth` items ready.

    Exceptions raised by the iterable are re-raised in the consumer at the position they occurred. `close()`
    (or leaving a `with` block, or garbage collection of a finished iterator) stops the thread. Each `iter()`
    starts a new pass over `iterable`.
    """

    def __init__(self, iterable: Iterable[Any], depth: int = 4, name: str = "playbook-prefetch"):
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.iterable, self.depth, self.name = iterable, int(depth), name
        self._stop = threading.Event()
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None

    def __len__(self) -> int:
        return len(self.iterable)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        self.close()
        self._stop = threading.Event()
        self._queue = queue.Queue(maxsize=self.depth)
        self._thread = threading.Thread(target=self._produce, args=(self._queue, self._stop), name=self.name,
                                        daemon=True)
        self._thread.start()
        return self._consume(self._queue)

    def _produce(self, q: queue.Queue, stop: threading.Event) -> None:
        def put(item: Any) -> bool:
            while not stop.is_set():
                try:
                    q.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        try:
            for item in self.iterable:
                if not put(item):
                    return
        except BaseException as exc:  # delivered to the consumer
            put(_Raised(exc))
            return
        put(_DONE)

    def _consume(self, q: queue.Queue) -> Iterator[Any]:
        try:
            while True:
                item = q.get()
                if item is _DONE:
                    return
                if isinstance(item, _Raised):
                    raise item.exc
                yield item
        finally:
            self.close()

    def close(self) -> None:
        """Stop the producer thread (pending items are dropped)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None

    def __enter__(self) -> ThreadPrefetcher:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def parallel_map(fn: Callable[[Any], Any], items: Iterable[Any], threads: int = 8, ahead: int | None = None
                 ) -> Iterator[Any]:
    """`map(fn, items)` in order, computed by `threads` threads with at most `ahead` results in flight
    (default 2 × threads). For functions that wait or release the GIL (reads, decoders in C)."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    ahead = max(int(ahead or 2 * threads), 1)
    pending: collections.deque[Future] = collections.deque()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="playbook-read") as pool:
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= ahead:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for f in pending:
                f.cancel()


class ThreadedLoader:
    """Batches from a map-style dataset, samples read by a pool of `threads` threads, `prefetch` batches ahead.

    dataset: anything with __len__ and __getitem__. collate: list of samples → batch (default: stack (x, y)).
    shuffle: a new permutation each pass (seeded by `seed` + pass number). drop_last: skip a final short batch.
    Order of batches is deterministic for a given seed, whatever the thread timing.
    """

    def __init__(self, dataset: Any, batch_size: int, threads: int = 8, prefetch: int = 4, shuffle: bool = True,
                 seed: int = 0, collate: Callable[[list[Any]], Any] | None = None, drop_last: bool = True):
        if batch_size < 1 or threads < 1 or prefetch < 1:
            raise ValueError("batch_size, threads and prefetch must be >= 1")
        self.dataset, self.batch_size, self.threads, self.prefetch = dataset, int(batch_size), threads, prefetch
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.collate = collate or _stack
        self._epoch = 0

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self) -> list[int]:
        idx = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self._epoch).shuffle(idx)
        self._epoch += 1
        return idx

    def _batches(self) -> Iterator[Any]:
        order = self._order()
        samples = parallel_map(self.dataset.__getitem__, order, threads=self.threads,
                               ahead=self.threads + self.prefetch * self.batch_size)
        batch: list[Any] = []
        for s in samples:
            batch.append(s)
            if len(batch) == self.batch_size:
                yield self.collate(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate(batch)

    def __iter__(self) -> Iterator[Any]:
        return iter(ThreadPrefetcher(self._batches(), depth=self.prefetch, name="playbook-loader"))


class ShuffleBuffer:
    """Streaming shuffle: keep `size` samples; each draw emits a random one and replaces it with the next read.

    Reads stay evenly spread over the steps (one read per emitted sample), unlike a buffer drained then refilled in
    bulk, which stalls every size/batch_size batches. Same randomness for the same `seed`.
    """

    def __init__(self, samples: Iterable[Any], size: int, seed: int = 0):
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.samples, self.size, self.seed = samples, int(size), seed

    def __iter__(self) -> Iterator[Any]:
        rng = random.Random(self.seed)
        buf: list[Any] = []
        it = iter(self.samples)
        for s in it:
            buf.append(s)
            if len(buf) >= self.size:
                break
        for s in it:
            j = rng.randrange(len(buf))
            out, buf[j] = buf[j], s
            yield out
        rng.shuffle(buf)
        yield from buf


def batched(samples: Iterable[Any], batch_size: int, collate: Callable[[list[Any]], Any] | None = None
            ) -> Iterator[Any]:
    """Group a sample stream into collated batches of `batch_size` (a final short batch is dropped)."""
    collate = collate or _stack
    batch: list[Any] = []
    for s in samples:
        batch.append(s)
        if len(batch) == batch_size:
            yield collate(batch)
            batch = []


def worker_budget(cores: int | None = None, main_threads: int | None = None) -> int:
    """Loader worker processes that fit beside the training process without oversubscribing the cores:
    the cores this process may use minus the threads its own compute uses (torch intra-op threads), at least 1."""
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            cores = os.cpu_count() or 1
    if main_threads is None:
        import torch

        main_threads = torch.get_num_threads()
    return max(1, int(cores) - int(main_threads))


def single_thread_worker(_worker_id: int) -> None:
    """DataLoader `worker_init_fn` that limits each worker to one torch thread (workers × threads ≤ cores)."""
    import torch

    torch.set_num_threads(1)


def dataloader_kwargs(workers: int | None = None, prefetch_factor: int = 4, persistent_workers: bool = True,
                      pin_memory: bool | None = None) -> dict[str, Any]:
    """DataLoader keyword arguments for multi-process loading that keeps up: `workers` processes (default
    `worker_budget()`), each `prefetch_factor` batches ahead, kept alive across epochs (no re-spawn stall at each
    epoch start), one torch thread per worker, and pinned batches when CUDA is present (see labs.fixes.pinned)."""
    workers = worker_budget() if workers is None else int(workers)
    if pin_memory is None:
        import torch

        pin_memory = torch.cuda.is_available()
    out: dict[str, Any] = {"num_workers": workers, "pin_memory": bool(pin_memory)}
    if workers > 0:
        out.update(prefetch_factor=int(prefetch_factor), persistent_workers=bool(persistent_workers),
                   worker_init_fn=single_thread_worker)
    return out


def _stack(samples: Sequence[Any]) -> Any:
    """Collate (x, y, ...) tuples by stacking each field; anything else goes through torch's default_collate."""
    from torch.utils.data import default_collate

    return default_collate(list(samples))
