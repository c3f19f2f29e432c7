"""Serving lab: do the shape, packing, precision and parallelism choices made for training hold up when serving?

What it checks, on a small causal transformer trained for a few seconds (CPU, or CUDA when present):
  1. shapes     a request stream with long-tailed lengths (log-normal) served in arrival-order batches by
                torch.compile with exact shapes (a recompile per new shape), with symbolic shapes, and with static
                shape buckets compiled once at startup: service latency p50/p99, throughput, compiles, and the
                measured cost of one new shape.
  2. packing    the same requests as padded batches (key-padding + causal mask) and packed rows (block-diagonal
                causal mask, position ids restarting per sequence): outputs must agree to fp32 tolerance.
  3. precision  fp32 training path vs bf16-autocast serving path via playbook.labs.fixes.serving_parity.parity against STATED
                tolerances (playbook.labs.fixes.serving_parity.BF16), and the throughput each path reaches.
  4. splits     pipeline vs tensor parallel across 2 gloo processes on this machine (measured), and a labelled
                analytical latency model for GPU links that cannot be measured here (serving_splits.py).

Run it:
    python -m playbook.labs.workloads.serving --requests 24 --passes 2 --batch 8 --out /tmp/serving.json

Read the result: `shapes` shows p99 dominated by compile time for exact shapes and bounded by the largest bucket
for bucketed serving; `packing.max_abs_diff` must be ~1e-6; `precision.within_tolerance` says whether bf16 drift
stays inside the stated tolerance; `splits` gives measured gloo latencies next to the model's prediction.
Latencies are service times of a batch (every request in a batch shares it); queueing is not modelled. On CPU
the serving measurements use one intra-op thread (on shared cores OpenMP barriers otherwise dominate p99).
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F

from playbook.core.errors import WorkloadError
from playbook.labs.fixes import packing, shapes
from playbook.labs.fixes import serving_parity as serving
from playbook.labs.fixes.shapes import (
    bucket_length,
    packed_attention_mask,
    padded_attention_mask,
    padded_inputs,
    padding_waste,
)
from playbook.labs.workloads._harness import cli, config_kwargs, knob, lab_parser
from playbook.labs.workloads.common import Progress, pick_device, seed_everything
from playbook.labs.workloads.models import ModelConfig, TinyLM, periodic_tokens
from playbook.labs.workloads.serving_splits import measure_splits, split_model_table

# ---------------------------------------------------------------- model

class Autocast(nn.Module):
    """Run `model` under torch.autocast(dtype): the serving path's activation precision; logits back in fp32."""

    def __init__(self, model: nn.Module, dtype: torch.dtype, device_type: str):
        super().__init__()
        self.model, self.dtype, self.device_type = model, dtype, device_type

    def forward(self, *args, **kwargs):
        with torch.autocast(self.device_type, dtype=self.dtype):
            return self.model(*args, **kwargs).float()


def train_tiny_lm(cfg: ModelConfig, steps: int = 150, batch: int = 32, seq_len: int = 64, lr: float = 3e-3,
                  seed: int = 0, device: str = "cpu") -> tuple[TinyLM, list[float]]:
    """The training path: fp32, eager, full-length causal batches. Returns (model in eval mode, losses)."""
    seed_everything(seed)
    dev = pick_device(device)
    model = TinyLM(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed + 1)
    losses = []
    for _ in range(steps):
        x = periodic_tokens(batch, seq_len, cfg.vocab, gen).to(dev)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.eval(), losses


# ---------------------------------------------------------------- request stream

def request_lengths(n: int, median: float = 40.0, sigma: float = 0.8, min_len: int = 4, max_len: int = 256,
                    seed: int = 0) -> np.ndarray:
    """Long-tailed prompt lengths (tokens): log-normal with this median and log-sd, clipped to [min, max]."""
    rng = np.random.default_rng(seed)
    return np.clip(np.round(rng.lognormal(math.log(median), sigma, n)), min_len, max_len).astype(int)


def make_requests(lengths, vocab: int, seed: int = 0) -> list[torch.Tensor]:
    """One 1-D token tensor per request length."""
    gen = torch.Generator().manual_seed(seed + 7)
    return [periodic_tokens(1, int(n), vocab, gen)[0] for n in lengths]


class CompileCounter:
    """A torch.compile backend that counts graph compilations and their backend seconds, then delegates."""

    def __init__(self, backend: str = "inductor"):
        self.backend, self.compiles, self.compile_s = backend, 0, 0.0

    def __call__(self, gm, example_inputs):
        from torch._dynamo import lookup_backend

        t0 = time.perf_counter()
        fn = lookup_backend(self.backend)(gm, example_inputs)
        self.compile_s += time.perf_counter() - t0
        self.compiles += 1
        return fn


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


STREAM_VARIANTS = ("eager_exact", "compiled_exact", "compiled_symbolic", "compiled_bucketed")


def serve_stream(model: nn.Module, streams, batch_size: int, variant: str, buckets, backend: str = "inductor",
                 recompile_limit: int | None = None, device=None, recorder=None) -> tuple[pd.DataFrame, dict]:
    """One server (one variant, started cold) serving `streams` (lists of requests) one after the other, in
    arrival-order batches; one row per batch with its pass, shape, service time, whether it compiled and the
    compiles so far (start-up compiles included).

    eager_exact: no compile, pad to the batch's longest request.  compiled_exact: torch.compile(dynamic=False),
    pad to the longest (every new shape compiles, up to dynamo's recompile limit, then runs eager).
    compiled_symbolic: torch.compile(dynamic=True).  compiled_bucketed: dynamic=False, length padded to a bucket
    and batch to `batch_size`, every bucket compiled before the first request (startup_s).
    recorder: a playbook.probes.Recorder; each batch becomes a step (phase "fwd", tokens = real tokens) and
    its event log records the compiles and recompiles. torch._dynamo.reset() also drops compile callbacks, so
    the server is reset here only without a recorder: reset before starting the recorder.
    Returns (batches, {"compiles", "compile_s" (backend seconds), "startup_s"}).
    """
    if variant not in STREAM_VARIANTS:
        raise WorkloadError(f"unknown serving variant {variant!r}; choose from {', '.join(STREAM_VARIANTS)}")
    device = device or next(model.parameters()).device
    if recorder is None:
        torch._dynamo.reset()
    counter = CompileCounter(backend)
    fwd = model
    if variant != "eager_exact":
        fwd = torch.compile(model, backend=counter, dynamic=(variant == "compiled_symbolic"))
    bucketed = variant == "compiled_bucketed"
    limits = {} if recompile_limit is None else {"recompile_limit": recompile_limit}
    startup = 0.0
    with torch.inference_mode(), torch._dynamo.config.patch(**limits):
        if bucketed:
            t0 = time.perf_counter()
            for b in buckets:
                tok, mask, _ = padded_inputs([streams[0][0][:1]], b, batch_size, device)
                fwd(tok, mask)
            _sync(device)
            startup = time.perf_counter() - t0
        rows = []
        for n_pass, requests in enumerate(streams):
            for i in range(0, len(requests), batch_size):
                seqs = requests[i:i + batch_size]
                longest = max(len(s) for s in seqs)
                length = bucket_length(longest, buckets, strict=True) if bucketed else longest
                before = counter.compiles
                real = int(sum(len(s) for s in seqs))
                step = recorder.step(len(rows), tokens=real) if recorder else contextlib.nullcontext()
                with step, (recorder.phase("fwd") if recorder else contextlib.nullcontext()):
                    t0 = time.perf_counter()
                    tok, mask, _ = padded_inputs(seqs, length, batch_size if bucketed else None, device)
                    fwd(tok, mask)
                    _sync(device)
                    service = time.perf_counter() - t0
                rows.append({"pass": n_pass, "batch": len(rows), "requests": len(seqs), "longest": longest,
                             "padded_len": int(tok.shape[1]), "padded_rows": int(tok.shape[0]),
                             "real_tokens": real, "padded_tokens": int(tok.numel()),
                             "service_s": service, "compiled": counter.compiles > before,
                             "compiles_so_far": counter.compiles})
    return pd.DataFrame(rows), {"compiles": counter.compiles, "compile_s": counter.compile_s, "startup_s": startup}


def stream_summary(batches: pd.DataFrame) -> dict[str, float]:
    """Per-request service latency p50/p99/max (ms), requests/s and real tokens/s, padding waste, new shapes."""
    per_request = np.repeat(batches["service_s"].to_numpy(), batches["requests"].to_numpy())
    wall = float(batches["service_s"].sum())
    lat = serving.latency_summary(per_request, wall_s=wall)
    return {"p50_ms": lat["p50_ms"], "p99_ms": lat["p99_ms"], "max_ms": lat["max_ms"],
            "requests_s": lat["throughput_per_s"], "tokens_s": float(batches["real_tokens"].sum()) / wall,
            "padding_waste": padding_waste(batches["real_tokens"], batches["padded_tokens"]),
            "compiled_batches": int(batches["compiled"].sum()),
            "distinct_shapes": int(batches[["padded_rows", "padded_len"]].drop_duplicates().shape[0])}


def compare_stream_variants(model: nn.Module, streams, batch_size: int, buckets, variants=STREAM_VARIANTS,
                            backend: str = "inductor", recompile_limit: int | None = None,
                            run_dir: str | Path | None = None,
                            progress: bool | None = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every variant as a cold server over the same `streams` (passes). The graph cache on disk is off, so each
    server pays its own compiles (compiled kernels may still be cached by the compiler). With `run_dir`, each
    variant is recorded through playbook.probes.Recorder into RUN_DIR/<variant> (steps and compile events).

    Returns (one row per (variant, pass) with stream_summary, plus "all" rows over every pass with compiles,
    compile_s and startup_s; one row per served batch).
    """
    import torch._inductor.config as inductor_config

    _warm_compiler(backend)
    summaries, frames = [], []
    shown = Progress(len(variants), show=progress)
    for variant in variants:
        t0 = time.perf_counter()
        torch._dynamo.reset()  # a cold server (before the recorder: reset drops compile callbacks)
        with inductor_config.patch(fx_graph_cache=False), _recording(run_dir, variant, model) as rec:
            batches, info = serve_stream(model, streams, batch_size, variant, buckets, backend, recompile_limit,
                                         recorder=rec)
        frames.append(batches.assign(variant=variant))
        for n_pass, part in batches.groupby("pass"):
            summaries.append({"variant": variant, "pass": str(n_pass), **stream_summary(part)})
        summaries.append({"variant": variant, "pass": "all", **stream_summary(batches), **info,
                          "wall_s": time.perf_counter() - t0})
        last = summaries[-1]
        shown.step(f"{variant}: p50 {last['p50_ms']:.3g} ms, p99 {last['p99_ms']:.3g} ms, "
                   f"{last['requests_s']:.3g} req/s, {info['compiles']} compiles, {last['wall_s']:.1f} s")
    shown.close()
    return pd.DataFrame(summaries), pd.concat(frames, ignore_index=True)


@contextlib.contextmanager
def _recording(run_dir: str | Path | None, variant: str, model: nn.Module):
    """A Recorder into RUN_DIR/<variant> (an earlier recording of this lab there is replaced), or None."""
    if run_dir is None:
        yield None
        return
    import shutil

    from playbook.model.run_layout import is_run_dir
    from playbook.probes import Recorder

    part = Path(run_dir) / variant
    if is_run_dir(part):
        shutil.rmtree(part)
    cuda = next(model.parameters()).device.type == "cuda"
    with Recorder(part, rank=0, nvml=cuda, interconnect=False, meta={"lab": "serving", "variant": variant}) as rec:
        yield rec


def _warm_compiler(backend: str) -> None:
    """Compile a trivial function once so the one-time compiler start-up is charged to no variant."""
    torch._dynamo.reset()
    fn = torch.compile(lambda x: torch.relu(x) + 1, backend=backend, dynamic=False)
    fn(torch.ones(3))
    torch._dynamo.reset()


def new_shape_cost(batches: pd.DataFrame) -> dict[str, float]:
    """Cost of one new shape for compiled_exact: median service time of batches that compiled minus the
    median of the eager_exact batches (s). `batches` as returned by compare_stream_variants."""
    exact = batches[batches["variant"] == "compiled_exact"]
    compiled = exact.loc[exact["compiled"], "service_s"]
    steady = float(batches.loc[batches["variant"] == "eager_exact", "service_s"].median())
    first = float(compiled.median()) if len(compiled) else math.nan
    return {"new_shapes": int(len(compiled)), "first_call_s": first, "eager_s": steady,
            "recompile_s": first - steady}


def serving_verdict(summary: pd.DataFrame, buckets, packing: dict) -> tuple[str, str]:
    """The lab's rule, stated in the notebook: confirmed when bucketed serving compiled ≤ len(buckets) graphs,
    none of them while serving, AND its p99 is below exact-shape compiled serving's AND packed outputs equal padded
    ones within the fp32 tolerance. Refuted when any of those fails. Inconclusive when exact-shape serving saw
    at most one shape (the stream cannot show recompiles)."""
    rows = summary[summary["pass"] == "all"].set_index("variant")
    b, e = rows.loc["compiled_bucketed"], rows.loc["compiled_exact"]
    if e["distinct_shapes"] <= 1:
        return "inconclusive", "the stream produced a single shape: nothing for bucketing to bound"
    bounded = b["compiles"] <= len(buckets) and b["compiled_batches"] == 0
    faster = b["p99_ms"] < e["p99_ms"]
    equal = bool(packing["within_fp32_tolerance"])
    text = (f"bucketed: {int(b['compiles'])} compiles (≤ {len(buckets)} buckets, {int(b['compiled_batches'])} while "
            f"serving), p99 {b['p99_ms']:.3g} ms vs exact shapes: {int(e['compiles'])} compiles for "
            f"{int(e['distinct_shapes'])} shapes, p99 {e['p99_ms']:.3g} ms; packed vs padded max |diff| "
            f"{packing['max_abs_diff']:.2g}")
    return ("confirmed" if bounded and faster and equal else "refuted"), text


# ---------------------------------------------------------------- padding vs packing

def padded_vs_packed(model: nn.Module, requests, batch_size: int, capacity: int, repeats: int = 3) -> dict:
    """Same requests as padded arrival-order batches and as packed rows (block-diagonal causal mask).

    Returns per-sequence output agreement (max abs diff, rel L2), tokens/s of both layouts and padding waste.
    """
    device = next(model.parameters()).device
    batches = [requests[i:i + batch_size] for i in range(0, len(requests), batch_size)]
    padded = [padded_inputs(b, device=device) for b in batches]
    packs = []
    for b in batches:
        p = packing.pack(b, capacity)
        packs.append((p, p.tokens.to(device), packed_attention_mask(p.doc_ids).to(device),
                      p.positions.to(device)))
    real = sum(len(s) for s in requests)
    times = {"padded": [], "packed": []}
    with torch.inference_mode():
        for rep in range(repeats + 1):  # the first pass warms up and is not timed
            for layout in (("padded", "packed") if rep % 2 else ("packed", "padded")):
                t0 = time.perf_counter()
                if layout == "padded":
                    outs_pad = [model(tok, mask) for tok, mask, _ in padded]
                else:
                    outs_pack = [model(tok, mask, position_ids=pos) for _, tok, mask, pos in packs]
                _sync(device)
                if rep:
                    times[layout].append(time.perf_counter() - t0)
    ref, got = [], []
    for (_, _, lengths), out_pad, (p, *_), out_pack in zip(padded, outs_pad, packs, outs_pack, strict=True):
        for i, seq_out in enumerate(packing.unpack(out_pack, p.doc_ids.to(out_pack.device), len(p.lengths))):
            ref.append(out_pad[i, : int(lengths[i])])
            got.append(seq_out)
    errs = serving.compare_outputs(torch.cat(ref).cpu(), torch.cat(got).cpu())
    pad_slots = sum(int(t.numel()) for t, _, _ in padded)
    pack_slots = sum(int(t.numel()) for _, t, _, _ in packs)
    return {
        "max_abs_diff": errs["max_abs_err"], "rel_l2_diff": errs["rel_l2_err"], "max_rel_diff": errs["max_rel_err"],
        "within_fp32_tolerance": serving.FP32.check(errs["rel_l2_err"], errs["max_rel_err"], math.nan),
        "padded_tokens_s": real / float(np.median(times["padded"])),
        "packed_tokens_s": real / float(np.median(times["packed"])),
        "padded_waste": padding_waste([real], [pad_slots]),
        "packed_waste": padding_waste([real], [pack_slots]),
        "padded_batches": len(padded), "packed_rows": sum(len(p.rows) for p, *_ in packs),
    }


# ---------------------------------------------------------------- precision parity

def precision_parity(model: nn.Module, requests, batch_size: int, dtype: str = "bfloat16", repeats: int = 2):
    """playbook.labs.fixes.serving_parity.parity of the fp32 training path against an autocast(dtype) serving path.

    Compared: logits of real (non-padding) tokens only, against serving.BF16 / FP16 tolerance.
    """
    device = next(model.parameters()).device
    dt = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype)
    if dt is None:
        raise WorkloadError(f"precision dtype must be bfloat16 or float16, not {dtype!r}")
    serve_model = Autocast(model, dt, device.type)
    batches = [requests[i:i + batch_size] for i in range(0, len(requests), batch_size)]
    inputs = []
    for b in batches:
        tok, mask, lengths = padded_inputs(b, device=device)
        inputs.append({"tokens": tok, "attn_mask": mask, "_valid": padded_attention_mask(
            lengths, tok.shape[1], causal=False)[:, 0, 0, :].to(device)})

    def strip(req):  # the models take tokens and mask; "_valid" rides along for output_transform
        return {k: v for k, v in req.items() if not k.startswith("_")}

    class _Strip(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, **kw):
            return self.m(**strip(kw))

    tol = serving.BF16 if dt is torch.bfloat16 else serving.FP16
    return serving.parity(_Strip(model), _Strip(serve_model), inputs, tolerance=tol,
                          output_transform=lambda out, req: out[req["_valid"]], warmup=1, repeats=repeats)


def bucketed_parity(model: nn.Module, requests, batch_size: int, buckets, backend: str = "inductor",
                    repeats: int = 2):
    """playbook.labs.fixes.serving_parity.parity of the training path (eager, exact shapes) against the serving path (compiled,
    length padded to a bucket and batch to `batch_size`), on real tokens only, against serving.FP32."""
    device = next(model.parameters()).device
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend, dynamic=False)
    inputs = []
    for i in range(0, len(requests), batch_size):
        seqs = requests[i:i + batch_size]
        tok, mask, lengths = padded_inputs(seqs, device=device)
        btok, bmask, _ = padded_inputs(seqs, bucket_length(tok.shape[1], buckets, strict=True), batch_size, device)
        inputs.append({"tokens": tok, "attn_mask": mask, "_bucketed": (btok, bmask), "_lengths": lengths})

    def valid(out, req):  # real tokens of real requests, whatever the padding
        n = len(req["_lengths"])
        keep = torch.arange(req["tokens"].shape[1])[None] < req["_lengths"][:, None]
        return out[:n, : req["tokens"].shape[1]][keep.to(out.device)]

    return serving.parity(lambda **kw: model(kw["tokens"], kw["attn_mask"]),
                          lambda **kw: compiled(*kw["_bucketed"]), inputs, tolerance=serving.FP32,
                          output_transform=valid, warmup=len(inputs), repeats=repeats)


# ---------------------------------------------------------------- the whole lab

def run_lab(requests: int = 24, passes: int = 2, batch: int = 8, median_len: float = 32.0, max_len: int = 128,
            min_bucket: int = 32, train_steps: int = 150, variants=STREAM_VARIANTS, backend: str = "inductor",
            recompile_limit: int | None = None, split_iters: int = 20, measure_split: bool = True,
            run_dir: str | Path | None = None, device: str = "auto", seed: int = 0, progress: bool | None = False) -> dict:
    """Every section of the lab; returns plain dicts and frames (see the module docstring).

    The request stream is `passes` consecutive streams of `requests` requests (fresh lengths each), so later
    passes show whether new shapes keep arriving (exact shapes) or not (buckets).
    """
    if requests < 1 or passes < 1 or batch < 1:
        raise WorkloadError("requests, passes and batch must be ≥ 1")
    dev = pick_device(device)
    threads = torch.get_num_threads()
    if dev.type == "cpu":  # one intra-op thread: on shared cores OpenMP barriers otherwise dominate the tail
        torch.set_num_threads(1)
    try:
        cfg = ModelConfig(max_len=max_len)
        model, losses = train_tiny_lm(cfg, steps=train_steps, seed=seed, device=str(dev))
        lengths = [request_lengths(requests, median=median_len, max_len=max_len, seed=seed + k)
                   for k in range(passes)]
        streams = [make_requests(n, cfg.vocab, seed=seed + k) for k, n in enumerate(lengths)]
        buckets = shapes.pow2_buckets(max_len, min_bucket)
        out: dict[str, Any] = {"device": str(dev), "losses": losses, "lengths": np.concatenate(lengths).tolist(),
                               "buckets": buckets}
        out["shapes"], out["batches"] = compare_stream_variants(model, streams, batch, buckets, variants, backend,
                                                                recompile_limit, run_dir, progress=progress)
        all_requests = [r for s in streams for r in s]
        out["packing"] = padded_vs_packed(model, all_requests, batch, capacity=max_len)
        out["precision"] = precision_parity(model, all_requests, batch)
    finally:
        torch.set_num_threads(threads)
    if {"compiled_exact", "eager_exact"} <= set(variants):
        out["new_shape"] = new_shape_cost(out["batches"])
    if {"compiled_exact", "compiled_bucketed"} <= set(variants):
        out["verdict"] = serving_verdict(out["shapes"], buckets, out["packing"])
    if measure_split:
        out["splits"] = measure_splits(model.cpu(), iters=split_iters)
    out["split_model"] = split_model_table()
    return out


@dataclass
class ServingConfig:
    """The knobs of the serving lab (run_lab's arguments). Lengths in tokens."""

    requests: int = knob(24, "requests per pass of the stream")
    passes: int = knob(2, "passes over fresh request streams (new lengths each; repeats for run-to-run variance)")
    batch: int = knob(8, "requests per served batch (arrival order)")
    median_len: float = knob(32.0, "median request length, tokens (log-normal, long tail)")
    max_len: int = knob(128, "longest request and largest bucket, tokens")
    min_bucket: int = knob(32, "smallest bucket, tokens (buckets double up to max_len)")
    train_steps: int = knob(150, "training steps of the model before serving")
    backend: str = knob("inductor", "torch.compile backend (aot_eager: no code generation, fast on CPU)")
    measure_split: bool = knob(True, "measure pipeline vs tensor parallel over 2 gloo processes")
    split_iters: int = knob(20, "timed forwards per split layout")
    run_dir: str | None = knob(None, "record each serving variant into RUN_DIR/<variant> (playbook diagnose)")
    device: str = knob("auto", "auto | cpu | cuda")
    seed: int = knob(0, "seed of the model and of the request streams")


CONFIG = ServingConfig


def main(argv: list[str] | None = None) -> int:
    p = lab_parser("playbook.labs.workloads.serving", __doc__, [
        "python -m playbook.labs.workloads.serving --requests 24 --passes 2 --batch 8 --out /tmp/serving.json"],
        "playbook diagnose RUN_DIR/compiled_exact (with --run-dir RUN_DIR)", ServingConfig)
    p.add_argument("--no-split", dest="measure_split", action="store_false",
                   help="skip the 2-process gloo pipeline/tensor measurement")
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args(argv)
    res = run_lab(**config_kwargs(ServingConfig, args), progress=True)
    cols = ["p50_ms", "p99_ms", "requests_s", "compiles", "compiled_batches", "distinct_shapes", "padding_waste"]
    print(res["shapes"][res["shapes"]["pass"] == "all"].set_index("variant")[cols].to_string(
        float_format=lambda v: f"{v:.3g}"))
    print("packing:", {k: round(v, 6) if isinstance(v, float) else v for k, v in res["packing"].items()})
    print("precision:", res["precision"].summary())
    if "splits" in res:
        print("splits (measured, gloo):", {k: f"{v * 1e3:.2f} ms" for k, v in res["splits"]["measured"].items()})
    if "verdict" in res:
        print("verdict: {}: {}".format(*res["verdict"]))
    if args.out:
        res = {k: (v.to_dict("records") if isinstance(v, pd.DataFrame) else
                   v.as_dict() if hasattr(v, "as_dict") else v) for k, v in res.items()}
        Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    cli(main)
