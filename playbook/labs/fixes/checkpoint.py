"""Checkpoints and evaluations that do not stop training.

    from playbook.labs.fixes.checkpoint import AsyncCheckpointer, BackgroundEvaluator
    ckpt = AsyncCheckpointer(max_pending=1)
    for step, batch in ...:
        train_step(...)
        if step % 500 == 0:
            ckpt.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step}, f"ckpt/{step}.pt")
    ckpt.wait()                                         # before exit: every write finished (raises a write error)

Why: `torch.save(state, path)` in the loop stops training for serialisation + the write — seconds to minutes on a
network file system, every N steps: a periodic stall whose period is the checkpoint interval. The asynchronous
checkpointer stops training only for the snapshot (a copy of the state into host memory: a memcpy on CPU, one
device→host copy from GPU) and writes from a background thread. Bounded: at most `max_pending` snapshots in flight;
a save that finds them all busy waits (the time is counted in `stats["wait_s"]`, a sign the interval is shorter than
the write). Costs: host memory for `max_pending` snapshots (once the state's size each), and a checkpoint reaches
disk later (on a crash, the last `max_pending` checkpoints may be missing — `wait()` before exiting).

Distributed jobs: `torch.distributed.checkpoint.async_save` (torch ≥ 2.3, `dcp_async_available()`) does the same
per rank with sharded state dicts; prefer it there. Evaluation: `BackgroundEvaluator` runs an eval function on a
snapshot of the weights in a background thread (it needs spare compute: another GPU / stream, or idle cores; on a
saturated machine schedule eval less often or in a separate job reading the checkpoints instead).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any


def _copy_tree(obj: Any, into: Any = None) -> Any:
    """Deep-copy tensors of a nested state into host memory, reusing `into`'s same-shaped buffers when given."""
    import torch

    if isinstance(obj, torch.Tensor):
        src = obj.detach()
        if isinstance(into, torch.Tensor) and into.shape == src.shape and into.dtype == src.dtype \
                and into.device.type == "cpu":
            buf = into
        else:
            pin = src.is_cuda
            buf = torch.empty(src.shape, dtype=src.dtype, device="cpu", pin_memory=pin)
        buf.copy_(src, non_blocking=src.is_cuda)
        return buf
    if isinstance(obj, dict):
        return {k: _copy_tree(v, into.get(k) if isinstance(into, dict) else None) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        prev = into if isinstance(into, (list, tuple)) and len(into) == len(obj) else [None] * len(obj)
        out = [_copy_tree(v, p) for v, p in zip(obj, prev, strict=True)]
        return out if isinstance(obj, list) else tuple(out)
    return obj


def snapshot_state(state: Any, into: Any = None) -> Any:
    """A host-memory copy of `state` (nested dicts/lists of tensors and plain values), safe to write while
    training continues. Device tensors are copied into pinned buffers with one synchronisation at the end.
    `into`: an earlier snapshot of the same structure whose buffers are reused (no allocation, no page faults)."""
    import torch

    snap = _copy_tree(state, into)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return snap


def state_bytes(state: Any) -> int:
    """Bytes of tensor data in a nested state."""
    import torch

    if isinstance(state, torch.Tensor):
        return state.numel() * state.element_size()
    if isinstance(state, dict):
        return sum(state_bytes(v) for v in state.values())
    if isinstance(state, (list, tuple)):
        return sum(state_bytes(v) for v in state)
    return 0


def atomic_save(obj: Any, path: str | Path, save_fn: Callable[[Any, Any], None] | None = None,
                opener: Callable[[Path], Any] | None = None) -> Path:
    """Write `obj` to `path` via a temporary file and a rename, so a crash never leaves a torn checkpoint.
    `save_fn(obj, file)` defaults to torch.save; `opener(tmp_path)` returns the file object (default open 'wb')."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    save = save_fn or torch.save
    try:
        with (opener(tmp) if opener else open(tmp, "wb")) as f:
            save(obj, f)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


class _BackgroundWorker:
    """One worker thread (`self._pool`) behind a `wait()` that raises the first error; close() and `with`."""

    _pool: ThreadPoolExecutor

    def wait(self) -> None:  # pragma: no cover - each worker defines it
        raise NotImplementedError

    def close(self) -> None:
        """wait(), then stop the worker thread."""
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncCheckpointer(_BackgroundWorker):
    """Snapshot now, write in the background; see the module docstring.

    max_pending: snapshots allowed in flight (≥ 1). save_fn / opener: as in atomic_save (the lab passes a
    throttled opener to emulate slow storage). stats: snapshot_s, wait_s (blocked on a full pipeline), write_s
    (background), saves, bytes.
    """

    def __init__(self, max_pending: int = 1, save_fn: Callable[[Any, Any], None] | None = None,
                 opener: Callable[[Path], Any] | None = None):
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        self.max_pending = int(max_pending)
        self.save_fn, self.opener = save_fn, opener
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="playbook-ckpt")
        self._inflight: list[tuple[Future, Any]] = []
        self._spare: list[Any] = []  # finished snapshots whose buffers can be reused
        self._lock = threading.Lock()
        self.stats = {"saves": 0, "bytes": 0, "snapshot_s": 0.0, "wait_s": 0.0, "write_s": 0.0}
        self.errors: list[BaseException] = []

    def _reap(self, block: bool) -> None:
        keep = []
        for fut, snap in self._inflight:
            if block or fut.done():
                try:
                    fut.result()
                except BaseException as exc:
                    self.errors.append(exc)
                self._spare.append(snap)
            else:
                keep.append((fut, snap))
        self._inflight = keep

    def save(self, state: Any, path: str | Path) -> Future:
        """Snapshot `state` into host memory (blocking, fast) and queue its write to `path` (background).

        Returns the write's Future; its result is (path, write seconds)."""
        t0 = time.perf_counter()
        self._reap(block=False)
        while len(self._inflight) >= self.max_pending:
            self._inflight[0][0].exception()  # wait for the oldest write
            self._reap(block=False)
        t1 = time.perf_counter()
        snap = snapshot_state(state, self._spare.pop() if self._spare else None)
        t2 = time.perf_counter()
        fut = self._pool.submit(self._write, snap, Path(path))
        self._inflight.append((fut, snap))
        with self._lock:
            self.stats["saves"] += 1
            self.stats["bytes"] += state_bytes(snap)
            self.stats["wait_s"] += t1 - t0
            self.stats["snapshot_s"] += t2 - t1
        return fut

    def _write(self, snap: Any, path: Path) -> tuple[Path, float]:
        t0 = time.perf_counter()
        atomic_save(snap, path, self.save_fn, self.opener)
        seconds = time.perf_counter() - t0
        with self._lock:
            self.stats["write_s"] += seconds
        return path, seconds

    def wait(self) -> None:
        """Block until every queued write finished; raise the first write error (if any)."""
        self._reap(block=True)
        if self.errors:
            raise self.errors[0]


class ThrottledFile:
    """A binary file whose writes are limited to `mib_s` MiB/s (sleeping, GIL released): a stand-in for a
    network or object-store file system, to test how a training loop copes with slow checkpoint storage. It sleeps
    once per `chunk_mib` written, so the emulation itself adds few thread switches to a process under load."""

    def __init__(self, path: str | Path, mib_s: float, chunk_mib: float = 16.0):
        if mib_s <= 0:
            raise ValueError(f"mib_s must be > 0, got {mib_s}")
        self._f = open(path, "wb")  # noqa: SIM115 - closed in close()
        self.mib_s, self.chunk = float(mib_s), int(chunk_mib * 2**20)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        for start in range(0, len(view), self.chunk):
            part = view[start:start + self.chunk]
            t0 = time.perf_counter()
            self._f.write(part)
            delay = len(part) / (self.mib_s * 2**20) - (time.perf_counter() - t0)
            if delay > 0:
                time.sleep(delay)
        return len(view)

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> ThrottledFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def throttled_opener(mib_s: float) -> Callable[[Path], ThrottledFile]:
    """An `opener` for atomic_save / AsyncCheckpointer writing at most `mib_s` MiB/s."""
    return lambda path: ThrottledFile(path, mib_s)


def dcp_async_available() -> bool:
    """True when torch.distributed.checkpoint.async_save exists (torch ≥ 2.3): use it for sharded/distributed
    state dicts (it needs an initialised process group)."""
    try:
        from torch.distributed.checkpoint import async_save  # noqa: F401
    except Exception:
        return False
    return True


class BackgroundEvaluator(_BackgroundWorker):
    """Evaluate snapshots of the weights in a background thread while training continues.

    make_model: builds an eval copy of the model (called once). eval_fn(model) -> float. `submit(step, model)`
    copies the weights (the only time training stops) and queues the evaluation; at most one evaluation runs, a
    newer submit replaces a queued one that has not started (evaluating stale weights helps nobody).
    `results`: list of (step, value). `wait()` finishes the queue.
    """

    def __init__(self, make_model: Callable[[], Any], eval_fn: Callable[[Any], float]):
        self._model = make_model()
        self._eval_fn = eval_fn
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="playbook-eval")
        self._queued: tuple[int, Any] | None = None
        self._active = False
        self._cond = threading.Condition()
        self.results: list[tuple[int, float]] = []
        self.stats = {"submitted": 0, "skipped": 0, "copy_s": 0.0, "eval_s": 0.0}
        self.errors: list[BaseException] = []

    def submit(self, step: int, model: Any) -> None:
        """Snapshot `model`'s weights for evaluation at `step`."""
        t0 = time.perf_counter()
        weights = snapshot_state(model.state_dict())
        with self._cond:
            self.stats["copy_s"] += time.perf_counter() - t0
            self.stats["submitted"] += 1
            if self._queued is not None:
                self.stats["skipped"] += 1
            self._queued = (int(step), weights)
            if not self._active:
                self._active = True
                self._pool.submit(self._drain)

    def _drain(self) -> None:
        while True:
            with self._cond:
                item, self._queued = self._queued, None
                if item is None:
                    self._active = False
                    self._cond.notify_all()
                    return
            step, weights = item
            t0 = time.perf_counter()
            try:
                self._model.load_state_dict(weights)
                value = float(self._eval_fn(self._model))
                with self._cond:
                    self.results.append((step, value))
            except BaseException as exc:
                self.errors.append(exc)
            with self._cond:
                self.stats["eval_s"] += time.perf_counter() - t0

    def wait(self) -> None:
        """Block until queued evaluations finished; raise the first evaluation error."""
        with self._cond:
            self._cond.wait_for(lambda: not self._active)
        if self.errors:
            raise self.errors[0]
