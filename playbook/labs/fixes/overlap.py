"""Hide gradient communication behind the backward pass: DDP bucketing settings, and what overlap can buy.

Synchronising gradients *after* backward (`allreduce_gradients`, or DDP with one huge bucket) exposes the whole
all-reduce: the device computes nothing while it runs. DDP instead groups gradients into buckets of
`bucket_cap_mb` and starts each bucket's all-reduce as soon as its gradients are ready, while backward continues
on earlier layers; only the last bucket's communication stays exposed.

    from playbook.labs.fixes.overlap import ddp
    model = ddp(model, bucket_cap_mb=25, gradient_as_bucket_view=True)

Settings, and why:
* bucket_cap_mb (default 25): smaller buckets start communicating earlier (more overlap) but pay a per-collective
  latency each; larger buckets amortise latency but start late. Aim for a handful of buckets per model
  (`bucket_count`), then measure exposed time (`exposed_s`) per setting.
* gradient_as_bucket_view=True: gradients live inside the communication buckets, saving one copy per step and the
  memory of a second gradient copy.
* static_graph=True when the set of used parameters never changes: DDP can then skip unused-parameter searches.
* FSDP: parameters are all-gathered before use and gradients reduce-scattered after; `forward_prefetch` (FSDP1) /
  implicit prefetch (FSDP2) issues the next layer's all-gather during the current layer's forward, and
  `backward_prefetch=BACKWARD_PRE` the previous layer's all-gather before the current gradient computation, so
  the same overlap principle holds for parameters as well as gradients (`limit_all_gathers` bounds the memory).
* Tensor parallelism: an all-gather (or reduce-scatter) sits on the critical path of every matmul; asynchronous
  TP splits the matmul into chunks and overlaps chunk i's compute with chunk i+1's communication
  (`collective_matmul`, and `async_tp_model` for what it can buy at most).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from typing import Any

import torch
import torch.distributed as dist


def allreduce_gradients(params: Iterable[torch.nn.Parameter], divisor: float | None = None, group: Any = None,
                        extra: Sequence[Any] = ()) -> torch.Tensor:
    """Synchronise gradients after backward: one flat all-reduce (SUM) of every gradient, divided by `divisor`.

    `divisor` defaults to the group's world size (gradient mean). `extra` values (floats or 0-d tensors, e.g. the
    step's loss sum and token count) ride along in the same buffer; they come back summed over ranks as a 1-D
    tensor on the gradients' device — read it (`.tolist()`) when convenient: on a GPU that read waits for the
    device. This is the no-overlap baseline: it starts only when backward has finished.
    """
    params = [p for p in params if p.requires_grad]
    world = dist.get_world_size(group)
    divisor = float(world if divisor is None else divisor)
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    dtype = grads[0].dtype if grads else torch.float32
    device = grads[0].device if grads else torch.device("cpu")
    tail = [torch.as_tensor(x, dtype=dtype, device=device).reshape(1) for x in extra]
    flat = torch.cat([g.reshape(-1) for g in grads] + tail) if grads or tail else torch.zeros(0)
    dist.all_reduce(flat, group=group)
    at = 0
    for p, g in zip(params, grads, strict=True):
        n = g.numel()
        if p.grad is None:
            p.grad = g
        p.grad.copy_(flat[at:at + n].view_as(g)).div_(divisor)
        at += n
    return flat[at:]


def ddp(model: torch.nn.Module, bucket_cap_mb: float = 25.0, gradient_as_bucket_view: bool = True,
        static_graph: bool = False, process_group: Any = None, **kwargs: Any):
    """DistributedDataParallel with the overlap-relevant settings spelled out (device_ids set for CUDA models)."""
    from torch.nn.parallel import DistributedDataParallel

    dev = next(model.parameters()).device
    if dev.type == "cuda":
        kwargs.setdefault("device_ids", [dev.index])
    return DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb, gradient_as_bucket_view=gradient_as_bucket_view,
                                   static_graph=static_graph, process_group=process_group, **kwargs)


def gradient_bytes(model: torch.nn.Module) -> int:
    """Bytes of gradient a step communicates (trainable parameters × element size)."""
    return sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)


def bucket_count(model: torch.nn.Module, bucket_cap_mb: float) -> int:
    """Roughly how many DDP buckets `bucket_cap_mb` makes for `model` (DDP's first bucket is 1 MiB)."""
    total = gradient_bytes(model) / 2**20
    return 1 + max(0, math.ceil(max(0.0, total - 1.0) / bucket_cap_mb))


def exposed_s(step_with_sync_s: float, step_without_sync_s: float) -> float:
    """Exposed communication per step: step time with gradient sync − step time without (e.g. DDP no_sync), s."""
    return max(0.0, step_with_sync_s - step_without_sync_s)


def async_tp_model(compute_s: float, comm_s: float, chunks: int) -> dict[str, float]:
    """A MODEL, not a measurement: step time of a TP matmul + collective, serial vs split into `chunks` overlapped.

    Serial: compute + comm. Chunked and overlapped (a two-stage pipeline): the longer stage runs back to back and
    the shorter one is exposed once, for one chunk: max(compute, comm) + min(compute, comm) / chunks.
    Assumes compute and communication do not slow each other down (on GPUs they share SMs and memory bandwidth,
    so real gains are lower; on a shared CPU they compete for the same cores).
    """
    serial = compute_s + comm_s
    overlapped = max(compute_s, comm_s) + min(compute_s, comm_s) / max(1, chunks)
    return {"serial_s": serial, "overlapped_s": overlapped, "exposed_serial_s": comm_s,
            "exposed_overlapped_s": overlapped - compute_s, "speedup": serial / overlapped}


def collective_matmul(x_shard: torch.Tensor, weight: torch.Tensor, chunks: int = 1, group: Any = None) -> torch.Tensor:
    """all_gather(x_shard) @ weight, as sequence-parallel TP does before a column-parallel matmul.

    chunks=1: gather everything, then multiply (serial). chunks>1: the shard is split into `chunks` row blocks;
    block i+1's all-gather runs asynchronously while block i is multiplied (async-TP style overlap).
    Returns rows ordered [rank0 block0, rank1 block0, ..., rank0 block1, ...] for chunks>1 (a fixed permutation of
    the serial result; callers that need the serial order can undo it).
    """
    world = dist.get_world_size(group)
    pieces = list(x_shard.chunk(max(1, chunks)))
    if len(pieces) == 1:
        out = [torch.empty_like(x_shard) for _ in range(world)]
        dist.all_gather(out, x_shard.contiguous(), group=group)
        return torch.cat(out) @ weight

    def start(piece: torch.Tensor):
        bufs = [torch.empty_like(piece) for _ in range(world)]
        return bufs, dist.all_gather(bufs, piece.contiguous(), group=group, async_op=True)

    results = []
    pending = start(pieces[0])
    for i in range(len(pieces)):
        bufs, work = pending
        work.wait()
        if i + 1 < len(pieces):
            pending = start(pieces[i + 1])
        results.append(torch.cat(bufs) @ weight)
    return torch.cat(results)


def timed_s(fn, *args: Any, repeat: int = 1, **kwargs: Any) -> float:
    """Median wall seconds of `fn(*args, **kwargs)` over `repeat` calls (synchronising CUDA around each call)."""
    times = []
    for _ in range(max(1, repeat)):
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return float(sorted(times)[len(times) // 2])
