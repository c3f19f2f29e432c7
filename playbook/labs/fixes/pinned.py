"""Host→device copies that overlap compute: pinned memory, `non_blocking=True`, a side-stream prefetcher.

    from playbook.labs.fixes.pinned import CudaPrefetcher
    loader = DataLoader(dataset, batch_size=256, num_workers=4, pin_memory=True)   # batches arrive pinned
    for x, y in CudaPrefetcher(loader, device):        # batch k+1 is copied while batch k trains
        loss = model(x)...

Why: a copy from pageable (ordinary) host memory goes through a staging buffer and blocks the host until it is
done, so the CPU cannot queue the next kernels and the GPU idles during every copy. From pinned (page-locked) memory
the copy is a DMA that `non_blocking=True` leaves running; issued on a second CUDA stream one batch ahead, it overlaps
the current step's kernels. Costs: pinned memory is locked RAM (the OS cannot swap or reuse it; pinning a tensor is
itself a host copy), and one extra batch lives on the device.

Without CUDA every function here degrades to a plain pass-through, so the same training code runs on CPU.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from typing import Any


def _map(batch: Any, fn: Any) -> Any:
    """Apply `fn` to every tensor in a (nested) tuple / list / dict batch."""
    import torch

    if isinstance(batch, torch.Tensor):
        return fn(batch)
    if isinstance(batch, dict):
        return {k: _map(v, fn) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        out = [_map(v, fn) for v in batch]
        return type(batch)(out) if isinstance(batch, list) else tuple(out)
    return batch


def cuda_present() -> bool:
    """True when torch sees a CUDA device."""
    import torch

    return bool(torch.cuda.is_available())


def pin(batch: Any) -> Any:
    """The batch with every tensor in page-locked memory (a host copy); unchanged without CUDA or if pinned."""
    if not cuda_present():
        return batch
    return _map(batch, lambda t: t if t.is_pinned() else t.pin_memory())


def to_device(batch: Any, device: Any, non_blocking: bool = True) -> Any:
    """Every tensor of the batch on `device`; non_blocking copies only overlap when the source is pinned."""
    return _map(batch, lambda t: t.to(device, non_blocking=non_blocking))


class CudaPrefetcher:
    """Iterate `loader`'s batches already on `device`, the next batch's copy overlapping the current step.

    The copy of batch k+1 is issued on a side stream right after batch k is handed out; before batch k+1 is
    handed out, the compute stream waits for that copy (`wait_stream`) and the tensors are marked as used by the
    compute stream (`record_stream`) so the caching allocator does not recycle them early.
    pin: pin pageable batches first (better: `DataLoader(pin_memory=True)`, which pins in a background thread).
    On a non-CUDA device it simply moves each batch (a no-op on CPU).
    """

    def __init__(self, loader: Iterable[Any], device: Any, pin: bool = True):
        import torch

        self.loader, self.device, self.pin = loader, torch.device(device), pin

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        if self.device.type != "cuda":
            for batch in self.loader:
                yield to_device(batch, self.device, non_blocking=False)
            return
        import torch

        stream = torch.cuda.Stream(self.device)
        it = iter(self.loader)
        nxt = self._issue(it, stream)
        while nxt is not None:
            current = torch.cuda.current_stream(self.device)
            current.wait_stream(stream)
            batch = nxt
            _map(batch, lambda t, s=current: t.record_stream(s) if t.is_cuda else None)
            nxt = self._issue(it, stream)
            yield batch

    def _issue(self, it: Iterator[Any], stream: Any) -> Any:
        import torch

        try:
            batch = next(it)
        except StopIteration:
            return None
        if self.pin:
            batch = pin(batch)
        with torch.cuda.stream(stream):
            return to_device(batch, self.device, non_blocking=True)


def copy_bandwidth(mib: float = 64.0, device: Any = "cuda", pinned: bool = True, repeats: int = 5) -> float:
    """Host→device copy throughput in GiB/s for a `mib` MiB tensor, pageable or pinned (median of `repeats`).

    NaN without CUDA (see host_copy_bandwidth for what a CPU can measure).
    """
    import torch

    if not cuda_present():
        return math.nan
    src = torch.empty(int(mib * 2**20) // 4, dtype=torch.float32)
    src = src.pin_memory() if pinned else src
    dst = torch.empty_like(src, device=device)
    dst.copy_(src, non_blocking=pinned)
    torch.cuda.synchronize(device)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst.copy_(src, non_blocking=pinned)
        torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    return (src.numel() * 4 / 2**30) / sorted(times)[len(times) // 2]


def host_copy_bandwidth(mib: float = 64.0, fresh: bool = True, repeats: int = 5) -> float:
    """Host memory copy throughput in GiB/s (median of `repeats`): into a freshly allocated buffer each time
    (`fresh`, page faults included — what a pageable copy's staging costs the host) or into one reused buffer
    (what copying into a reused, already-mapped — e.g. pinned — buffer costs)."""
    import torch

    src = torch.randn(int(mib * 2**20) // 4)
    dst = torch.empty_like(src)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        if fresh:
            out = torch.empty_like(src)
            out.copy_(src)
            del out
        else:
            dst.copy_(src)
        times.append(time.perf_counter() - t0)
    return (src.numel() * 4 / 2**30) / sorted(times)[len(times) // 2]


def pin_cost_s(mib: float = 64.0, repeats: int = 3) -> float:
    """Seconds to pin a `mib` MiB pageable tensor (median; NaN without CUDA): pinning is a copy into
    page-locked memory, worth paying once per buffer, not once per step in the training loop."""
    import torch

    if not cuda_present():
        return math.nan
    src = torch.randn(int(mib * 2**20) // 4)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        src.pin_memory()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]
