"""Serving lab, part 4: pipeline vs tensor parallel — measured across 2 gloo processes on this machine, and a
labelled analytical latency model for GPU links that cannot be measured here (see playbook.labs.workloads.serving).

    from playbook.labs.workloads.serving_splits import measure_splits, split_model_table
    res = measure_splits(model, batch=4, seq_len=64, iters=20)     # seconds per forward, per layout
    split_model_table()                                             # MODEL (not measured) latencies per link
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from playbook.core.errors import WorkloadError
from playbook.labs.workloads.models import Block, ModelConfig, TinyLM, periodic_tokens


def tp_shard(block: Block, rank: int, world: int) -> Block:
    """Megatron-style shard of a block: this rank's heads (qkv rows, out columns) and d_ff slice (fc1 rows,
    fc2 columns). Output biases stay on rank 0 so the sum over ranks equals the full block's partial outputs."""
    heads, hd = block.heads, block.head_dim
    if heads % world or block.fc1.out_features % world:
        raise WorkloadError(f"tensor parallel over {world} ranks needs heads ({heads}) and d_ff "
                            f"({block.fc1.out_features}) divisible by {world}")
    h_per, f_per = heads // world, block.fc1.out_features // world
    d = block.ln1.normalized_shape[0]
    shard = Block(d, h_per, hd, f_per)
    with torch.no_grad():
        shard.ln1.load_state_dict(block.ln1.state_dict())
        shard.ln2.load_state_dict(block.ln2.state_dict())
        qkv_w = block.qkv.weight.view(3, heads, hd, d)[:, rank * h_per:(rank + 1) * h_per]
        qkv_b = block.qkv.bias.view(3, heads, hd)[:, rank * h_per:(rank + 1) * h_per]
        shard.qkv.weight.copy_(qkv_w.reshape(-1, d))
        shard.qkv.bias.copy_(qkv_b.reshape(-1))
        cols = slice(rank * h_per * hd, (rank + 1) * h_per * hd)
        shard.out.weight.copy_(block.out.weight[:, cols])
        shard.out.bias.copy_(block.out.bias if rank == 0 else torch.zeros_like(block.out.bias))
        rows = slice(rank * f_per, (rank + 1) * f_per)
        shard.fc1.weight.copy_(block.fc1.weight[rows])
        shard.fc1.bias.copy_(block.fc1.bias[rows])
        shard.fc2.weight.copy_(block.fc2.weight[:, rows])
        shard.fc2.bias.copy_(block.fc2.bias if rank == 0 else torch.zeros_like(block.fc2.bias))
    return shard.eval()


def tp_forward(model: TinyLM, shards: list[Block], tokens, mask, all_reduce) -> torch.Tensor:
    """Forward with tensor-parallel blocks: two all-reduces (sum) per block, after attention and after MLP."""
    x = model.embed(tokens)
    for shard in shards:
        x = x + all_reduce(shard.attn(x, mask))
        x = x + all_reduce(shard.mlp(x))
    return model.head(model.ln_f(x))


def pp_stages(model: TinyLM, stages: int):
    """Split the blocks into `stages` contiguous groups (embedding with the first, head with the last)."""
    n = len(model.blocks)
    if stages < 1 or stages > n:
        raise WorkloadError(f"pipeline over {stages} stages needs 1 ≤ stages ≤ layers ({n})")
    bounds = np.linspace(0, n, stages + 1).round().astype(int)
    return [list(model.blocks[bounds[s]:bounds[s + 1]]) for s in range(stages)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _timeit(fn, iters: int) -> list[float]:
    out = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _split_worker(rank: int, world: int, port: int, state_path: str, cfg: dict, batch: int, seq_len: int,
                  iters: int, out_dir: str) -> None:
    """One gloo rank: comm microbenchmarks, pipeline and tensor-parallel forwards (timed on rank 0)."""
    import datetime

    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    try:
        model = TinyLM(ModelConfig(**cfg))
        model.load_state_dict(torch.load(state_path, weights_only=True))
        model.eval()
        gen = torch.Generator().manual_seed(3)
        tokens = periodic_tokens(batch, seq_len, model.cfg.vocab, gen)
        with torch.no_grad():
            # single-device reference, one thread, both ranks run it at once (as they would on their own device)
            dist.barrier()
            ref = model(tokens)
            res: dict[str, Any] = {"single_s": _timeit(lambda: model(tokens), iters)}
            res.update(_comm_times(rank, batch, seq_len, model.cfg.d_model, iters))
            res["pipeline_s"] = _pipeline_time(model, rank, world, tokens, iters)
            res.update(_tensor_parallel_times(model, rank, world, tokens, ref, iters))
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(res))
    finally:
        dist.destroy_process_group()


def _comm_times(rank: int, batch: int, seq_len: int, d_model: int, iters: int) -> dict[str, list[float]]:
    """Per-iteration seconds of all_reduce (one float, one activation) and of a rank 0 <-> 1 ping-pong (one
    activation, one token id per row)."""
    import torch.distributed as dist

    act = torch.empty(batch, seq_len, d_model)
    small = torch.zeros(1)
    dist.barrier()
    res = {"allreduce_small_s": _timeit(lambda: dist.all_reduce(small), iters),
           "allreduce_act_s": _timeit(lambda: dist.all_reduce(act.zero_()), iters)}

    def pingpong(buf: torch.Tensor) -> None:
        if rank == 0:
            dist.send(buf, 1)
            dist.recv(buf, 1)
        else:
            dist.recv(buf, 0)
            dist.send(buf, 0)
    dist.barrier()
    res["pingpong_act_s"] = _timeit(lambda: pingpong(act), iters)
    ids = torch.zeros(batch, dtype=torch.long)
    dist.barrier()
    res["pingpong_small_s"] = _timeit(lambda: pingpong(ids), iters)
    return res


def _pipeline_time(model: TinyLM, rank: int, world: int, tokens: torch.Tensor, iters: int) -> list[float]:
    """Per-iteration seconds of a pipeline-parallel forward: rank r runs stage r; activations flow
    0 -> 1 -> ... -> last, and the last stage's token ids go back to rank 0."""
    import torch.distributed as dist

    batch, seq_len = tokens.shape
    stage = pp_stages(model, world)[rank]
    ids = torch.empty(batch, dtype=torch.long)

    def pipeline():
        if rank == 0:
            x = model.embed(tokens)
            for blk in stage:
                x = blk(x)
            dist.send(x.contiguous(), 1)
            dist.recv(ids, world - 1)
            return ids
        x = torch.empty(batch, seq_len, model.cfg.d_model)
        dist.recv(x, rank - 1)
        for blk in stage:
            x = blk(x)
        if rank < world - 1:
            dist.send(x, rank + 1)
            return None
        out = model.head(model.ln_f(x))
        dist.send(out[:, -1].argmax(-1), 0)
        return out
    dist.barrier()
    return _timeit(pipeline, iters)


def _tensor_parallel_times(model: TinyLM, rank: int, world: int, tokens: torch.Tensor, ref: torch.Tensor,
                           iters: int) -> dict[str, Any]:
    """Tensor parallel (each rank holds 1/world of every block): relative error against the single-device
    output `ref`, per-iteration seconds of the compute alone and of the whole forward with its all-reduces."""
    import torch.distributed as dist

    shards = [tp_shard(b, rank, world) for b in model.blocks]

    def allreduce(t):
        dist.all_reduce(t)
        return t
    out_tp = tp_forward(model, shards, tokens, None, allreduce)
    res: dict[str, Any] = {"tp_rel_err": float((out_tp - ref).norm() / ref.norm()),
                           "tp_compute_s": _timeit(lambda: tp_forward(model, shards, tokens, None, lambda t: t),
                                                   iters)}
    dist.barrier()
    res["tensor_parallel_s"] = _timeit(lambda: tp_forward(model, shards, tokens, None, allreduce), iters)
    return res


@dataclass
class Link:
    """A link for the latency model: per-message latency alpha_s, bandwidth beta_bytes_s (one direction)."""

    name: str
    alpha_s: float
    beta_bytes_s: float

    def p2p_s(self, nbytes: float) -> float:
        return self.alpha_s + nbytes / self.beta_bytes_s

    def allreduce_s(self, nbytes: float, ranks: int) -> float:
        """Ring all-reduce bandwidth term 2(n-1)/n · bytes/beta plus one collective latency alpha."""
        return 0.0 if ranks <= 1 else self.alpha_s + 2 * (ranks - 1) / ranks * nbytes / self.beta_bytes_s


def measure_splits(model: TinyLM, batch: int = 4, seq_len: int = 64, iters: int = 20, world: int = 2,
                   timeout_s: float = 180.0) -> dict[str, Any]:
    """MEASURED on this machine: single-process vs pipeline vs tensor-parallel forward over `world` gloo
    processes (1 thread each).

    Returns median latencies (s) of the forwards and of their parts (one-thread compute, all-reduce, ping-pong),
    the TP-vs-full relative error, and the latency model's prediction composed from the measured parts:
    pipeline = full compute + one-way activation + one-way result; TP = sharded compute + 2·layers·all-reduce.
    """
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="pb-split-") as tmp:
        state = os.path.join(tmp, "model.pt")
        torch.save(model.state_dict(), state)
        ctx = mp.start_processes(_split_worker, args=(world, _free_port(), state, asdict(model.cfg), batch,
                                                      seq_len, iters, tmp),
                                 nprocs=world, start_method="spawn", join=False)
        deadline = time.monotonic() + timeout_s
        while not ctx.join(timeout=1.0):
            if time.monotonic() > deadline:
                for p in ctx.processes:
                    p.kill()
                raise WorkloadError(f"gloo split measurement did not finish within {timeout_s:.0f} s")
        r0 = json.loads(Path(tmp, "rank0.json").read_text())
    med = {k: float(np.median(v)) for k, v in r0.items() if isinstance(v, list)}
    layers = model.cfg.layers
    one_way_act, one_way_small = med["pingpong_act_s"] / 2, med["pingpong_small_s"] / 2
    # the latency model composed from the measured parts, to check it where it can be checked
    predicted = {
        "pipeline_s": med["single_s"] + (world - 1) * one_way_act + one_way_small,
        "tensor_parallel_s": med["tp_compute_s"] + 2 * layers * med["allreduce_act_s"],
    }
    return {"measured": med, "predicted": predicted, "tp_rel_err": r0["tp_rel_err"],
            "act_bytes": batch * seq_len * model.cfg.d_model * 4, "world": world, "batch": batch,
            "seq_len": seq_len, "layers": layers}


# Assumed links for the analytical model (NOT measured here): typical nccl-tests figures, one direction.
LINKS = {
    "nvlink": Link("NVLink 4 / NVSwitch (H100 SXM), assumed", alpha_s=15e-6, beta_bytes_s=360e9),
    "pcie": Link("PCIe Gen4 x16 peer-to-peer, assumed", alpha_s=20e-6, beta_bytes_s=22e9),
    "infiniband": Link("InfiniBand NDR 400 Gb/s per GPU, assumed", alpha_s=30e-6, beta_bytes_s=45e9),
}


@dataclass
class GpuModel:
    """An ANALYTICAL model of one GPU for the latency model (assumed figures, not measured)."""

    name: str = "H100 SXM (assumed: 990 TFLOP/s bf16 dense, 3.35 TB/s HBM, 60% of peak reached)"
    flops_s: float = 990e12
    mem_bytes_s: float = 3.35e12
    efficiency: float = 0.6


def split_latency_model(tp: int = 1, pp: int = 1, tokens: int = 8, layers: int = 32, d_model: int = 4096,
                        d_ff: int = 14336, bytes_per_el: int = 2, link: Link | None = None,
                        gpu: GpuModel | None = None) -> dict[str, float]:
    """ANALYTICAL (labelled model, not a measurement): latency of one forward of `tokens` tokens (a decode step of
    that batch, or a prefill of that many tokens) split tp-way tensor parallel and pp-way pipeline parallel.

    Per layer: time = max(FLOPs / (peak·eff), weight bytes / (HBM·eff)) / tp  (roofline of dense matmuls,
    attention over the cache ignored); TP adds 2 all-reduces of tokens·d_model·bytes per layer; PP adds pp-1
    point-to-point activation transfers. A single request's latency does not shrink with pp (stages run in turn).
    """
    link = link or LINKS["nvlink"]
    gpu = gpu or GpuModel()
    params_layer = 4 * d_model * d_model + 3 * d_model * d_ff  # attention (q,k,v,o) + gated MLP
    flops = 2 * params_layer * tokens
    layer_s = max(flops / (gpu.flops_s * gpu.efficiency),
                  params_layer * bytes_per_el / (gpu.mem_bytes_s * gpu.efficiency)) / tp
    act = tokens * d_model * bytes_per_el
    compute = layers * layer_s
    tp_comm = 2 * layers * link.allreduce_s(act, tp)
    pp_comm = (pp - 1) * link.p2p_s(act)
    return {"tp": tp, "pp": pp, "gpus": tp * pp, "tokens": tokens, "link": link.name, "compute_ms": compute * 1e3,
            "tp_comm_ms": tp_comm * 1e3, "pp_comm_ms": pp_comm * 1e3,
            "latency_ms": (compute + tp_comm + pp_comm) * 1e3}


def split_model_table(tokens=(8, 2048), splits=((1, 1), (2, 1), (8, 1), (1, 2), (1, 8)),
                      links=("nvlink", "infiniband"), **model_kw) -> pd.DataFrame:
    """The analytical model over decode-sized and prefill-sized token counts, splits and links (MODEL)."""
    rows = [split_latency_model(tp, pp, tokens=n, link=LINKS[name], **model_kw)
            for n in tokens for name in links for tp, pp in splits]
    out = pd.DataFrame(rows)
    out.insert(0, "source", "MODEL (not measured)")
    return out


