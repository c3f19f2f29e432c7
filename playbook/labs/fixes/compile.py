"""torch.compile without recompilation stalls: few shapes, compiled once, up front, from one thread.

    from playbook.labs.fixes.compile import BucketPadder, warmup, CompileGuard
    from playbook.labs.fixes.shapes import even_buckets
    buckets = even_buckets(max_len=512, count=4)                 # [128, 256, 384, 512]
    loader = DataLoader(ds, batch_size=32, collate_fn=BucketPadder(buckets))
    model = torch.compile(model, dynamic=False)
    warmup(model, [example_batch(L) for L in buckets])            # every shape compiled before step 0
    for x, y in loader: ...

Why: a compiled graph is specialised to its input shapes; each new sequence length fails a guard and recompiles
(seconds each with inductor, more on a cold cache), a stall in the loop. After `torch._dynamo.config.recompile_limit`
(8) recompilations dynamo gives up and runs that function eagerly — slower forever. Options: pad to a few bucket
lengths and compile each once before training (`warmup`); or mark the sequence dimension dynamic
(`mark_dynamic(x, 1)`) for one shape-generic graph (cheaper to compile once, sometimes slower kernels). Padding
costs compute (playbook.labs.fixes.shapes.padding_waste measures it). The on-disk cache (TORCHINDUCTOR_CACHE_DIR, FX graph cache) turns a
restart's compile into a cache load: keep it on a persistent disk shared by restarts.

Threads: torch.compile is not thread-safe (pytorch/pytorch#136833, #105943, #118260): two threads that compile at
once can fail or crash. Warm up in one thread before starting the others, and route calls that may still compile
through `CompileGuard` (a lock for unseen input signatures; calls with a known signature run concurrently).
Each serving thread calls `same_threads_as_warmup()`'s function first: dynamo guards on the intra-op thread count,
and a new thread takes it from the process's last `torch.set_num_threads` (any thread's), not from its parent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from playbook.labs.fixes.shapes import bucket_length, collate_padded


class BucketPadder:
    """A collate_fn: pads a batch of (tokens, label) samples to the bucket of its longest sequence."""

    def __init__(self, buckets: Sequence[int]):
        if not buckets:
            raise ValueError("need at least one bucket")
        self.buckets = sorted(int(b) for b in buckets)

    def __call__(self, samples: list[Any]) -> Any:
        longest = max(len(s[0]) for s in samples)
        return collate_padded(samples, bucket_length(longest, self.buckets))


def signature(args: Sequence[Any]) -> tuple:
    """What a compiled function specialises on, approximately: each tensor's shape, dtype, device, requires_grad."""
    out = []
    for a in args:
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            out.append((tuple(a.shape), str(a.dtype), str(a.device), bool(getattr(a, "requires_grad", False))))
        else:
            out.append(type(a).__name__)
    return tuple(out)


def warmup(fn: Callable[..., Any], examples: Iterable[Any], backward: bool = False) -> list[float]:
    """Call `fn` once per example (a tensor or a tuple of arguments), in this thread, so every shape is compiled
    before training or serving starts; `backward` also runs a backward pass (training compiles a backward graph).
    Returns the seconds each call took (the compile stalls, paid up front)."""
    import torch

    seconds = []
    for ex in examples:
        args = ex if isinstance(ex, tuple) else (ex,)
        t0 = time.perf_counter()
        if backward:
            out = fn(*args)
            (out.float().sum() if out.dim() else out).backward()
        else:
            with torch.no_grad():
                fn(*args)
        seconds.append(time.perf_counter() - t0)
    return seconds


def same_threads_as_warmup() -> Callable[[], None]:
    """Call in the warm-up thread; returns a function each serving thread calls before its first compiled call.

    dynamo's GLOBAL_STATE guard includes `torch.get_num_threads()`. A new thread starts with the count last set by
    `torch.set_num_threads` in any thread, which can differ from the warm-up thread's own: every warmed-up graph
    then fails its guard in the serving thread and recompiles there (measured: 2 compiles in 3 threads after a
    side thread had set 1 of 2). The returned function gives the calling thread the warm-up thread's count."""
    import torch

    count = torch.get_num_threads()

    def adopt() -> None:
        if torch.get_num_threads() != count:
            torch.set_num_threads(count)

    return adopt


class CompileGuard:
    """Make a compiled callable safe to share between threads: the first call with each input signature runs
    under a lock (it may compile); calls with a signature already seen run concurrently. Signatures are shapes,
    dtypes, devices and requires_grad (see `signature`); other guard inputs (globals, module attributes) still
    require a warm-up in one thread. stats: compiles_serialised, wait_s (time threads waited for the lock)."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self._seen: set[tuple] = set()
        self._lock = threading.Lock()
        self.stats = {"compiles_serialised": 0, "wait_s": 0.0}

    def __call__(self, *args: Any) -> Any:
        sig = signature(args)
        if sig in self._seen:
            return self.fn(*args)
        t0 = time.perf_counter()
        with self._lock:
            self.stats["wait_s"] += time.perf_counter() - t0
            out = self.fn(*args)
            if sig not in self._seen:
                self._seen.add(sig)
                self.stats["compiles_serialised"] += 1
            return out


def recompile_limit() -> int:
    """torch._dynamo's recompilation limit per function (after it, the function runs eagerly)."""
    import torch._dynamo

    cfg = torch._dynamo.config
    return int(getattr(cfg, "recompile_limit", getattr(cfg, "cache_size_limit", 8)))


def mark_dynamic(tensor: Any, dims: int | Sequence[int]) -> Any:
    """Mark `dims` of `tensor` dynamic (one shape-generic graph instead of one per size); returns the tensor."""
    import torch._dynamo

    torch._dynamo.mark_dynamic(tensor, dims)
    return tensor
