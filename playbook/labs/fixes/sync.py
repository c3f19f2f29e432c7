"""Fewer host↔device synchronisations: log from metrics accumulated on the device, read every N steps.

    from playbook.labs.fixes.sync import MetricAccumulator
    metrics = MetricAccumulator(every=50)
    for step, (x, y) in enumerate(loader):
        loss = train_step(...)
        means = metrics.add(step, loss=loss, correct=(logits.argmax(1) == y).sum())   # no sync
        if means:                                                                      # every 50 steps
            log.info("step %d loss %.4f", step, means["loss"])

Why: `loss.item()`, `tensor.cpu()`, `print(loss)`, `if loss > x:` and `torch.nonzero` wait for the GPU to finish
everything queued, so the host stops queuing work and the GPU idles for the host's next launches (a gap every step).
Summing on the device and reading once every N steps turns N syncs into one. `sync_debug()` makes CUDA report every
sync it meets, to find the hidden ones. On CPU a sync costs nothing: this fix shows its effect on GPUs only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


class MetricAccumulator:
    """Sum scalar metrics on their device; every `every` steps return their means as floats (one sync).

    add(step, **metrics) accumulates detached tensors (or numbers) and returns {name: mean} on steps where
    (step + 1) % every == 0, else None. flush() returns the means of whatever is pending (end of training).
    """

    def __init__(self, every: int = 50):
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.every = int(every)
        self._sums: dict[str, Any] = {}
        self._count = 0
        self.reads = 0  # how many times the device was read (syncs on CUDA)

    def add(self, step: int, **metrics: Any) -> dict[str, float] | None:
        """Accumulate this step's metrics; the means every `every` steps."""
        for name, value in metrics.items():
            v = value.detach() if hasattr(value, "detach") else value
            self._sums[name] = v if name not in self._sums else self._sums[name] + v
        self._count += 1
        if (int(step) + 1) % self.every == 0:
            return self.flush()
        return None

    def flush(self) -> dict[str, float] | None:
        """Means of the pending metrics (one device read), None when nothing is pending; resets the sums."""
        if not self._count:
            return None
        import torch

        names = list(self._sums)
        values = [self._sums[n] for n in names]
        tensors = [v.float().reshape(()) if isinstance(v, torch.Tensor) else torch.tensor(float(v))
                   for v in values]
        devices = {t.device for t in tensors}
        if len(devices) == 1:
            host = torch.stack(tensors).cpu().tolist()  # the one sync
        else:
            host = [float(t) for t in tensors]
        self.reads += 1
        out = {n: h / self._count for n, h in zip(names, host, strict=True)}
        self._sums, self._count = {}, 0
        return out


@contextlib.contextmanager
def sync_debug(mode: str = "warn") -> Iterator[None]:
    """Within the block CUDA warns ("warn") or raises ("error") at every synchronising call; a no-op without CUDA.
    Run a few steps under it to find the `.item()`s hiding in a training loop."""
    import torch

    if not torch.cuda.is_available():
        yield
        return
    before = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode(mode)
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode(before)
