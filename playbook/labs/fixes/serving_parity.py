"""Serving parity: does the model you serve compute what you trained, and how fast does it answer?

    from playbook.labs.fixes.serving_parity import parity, BF16
    report = parity(train_model, serve_model, requests, tolerance=BF16)
    report.table()        # train vs serve side by side: latency p50/p99 (ms), throughput (samples/s)
    report.summary()      # one line: errors against the stated tolerance

The bucket lengths of a serving path (`shapes.pow2_buckets`) when training used shape bucketing; padding and masks
come from playbook.labs.fixes.shapes (`bucket_length(..., strict=True)` rejects oversize requests, `pad_batch`,
`padded_attention_mask`), packing at inference from playbook.labs.fixes.packing (`pack`, `unpack`): the same
block-diagonal rule as in training.

Masks are boolean with True = "may attend", the convention of torch.nn.functional.scaled_dot_product_attention.
torch is imported lazily, inside the functions that need it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.errors import InputError

BF16_UNIT_ROUNDOFF = 2.0 ** -8  # bfloat16 keeps 8 significant bits (7 stored + 1 implicit)
FP16_UNIT_ROUNDOFF = 2.0 ** -11
FP32_UNIT_ROUNDOFF = 2.0 ** -24


@dataclass(frozen=True)
class Tolerance:
    """How far a serving path may drift from the training path. Both bounds are scale-free.

    rel_l2: ||serve - train||_2 / ||train||_2 over all compared elements.
    max_rel: max |serve - train| / max |train| (the worst element, relative to the output's range).
    min_top1: least fraction of rows whose argmax over the last dim agrees (NaN: not checked).
    """

    name: str
    rel_l2: float
    max_rel: float
    min_top1: float = math.nan

    def check(self, rel_l2: float, max_rel: float, top1: float) -> bool:
        ok = rel_l2 <= self.rel_l2 and max_rel <= self.max_rel
        if not math.isnan(self.min_top1) and not math.isnan(top1):
            ok = ok and top1 >= self.min_top1
        return bool(ok)


# Stated before measuring, from unit roundoff u, not tuned to any model:
# same precision, different kernels / summation order: errors of a few hundred fp32 ulps.
FP32 = Tolerance("fp32 (reordered sums)", rel_l2=1e-5, max_rel=1e-4)
# bf16 activations: every rounding adds up to u = 2^-8 relative error; a few layers of re-rounded residual stream
# give a norm-wise error of a few u. Allow 8u norm-wise, 32u on the worst element, 99% top-1 agreement.
BF16 = Tolerance("bf16 activations", rel_l2=8 * BF16_UNIT_ROUNDOFF, max_rel=32 * BF16_UNIT_ROUNDOFF, min_top1=0.99)
FP16 = Tolerance("fp16 activations", rel_l2=8 * FP16_UNIT_ROUNDOFF, max_rel=32 * FP16_UNIT_ROUNDOFF, min_top1=0.99)


@dataclass
class ParityReport:
    """Numerical agreement and speed of a serving path against the training path."""

    tolerance: Tolerance
    max_abs_err: float
    mean_abs_err: float
    rel_l2_err: float
    max_rel_err: float
    top1_agreement: float  # NaN when outputs have no class dimension
    within_tolerance: bool
    n_requests: int
    n_samples: int
    timing: pd.DataFrame = field(repr=False)  # one row per (path, request, repeat): latency_s, samples

    def table(self) -> pd.DataFrame:
        """Side by side per path: latency p50 / p99 (ms), throughput (samples/s), speedup, errors vs train."""
        g = self.timing.groupby("path", sort=False, observed=True)
        out = pd.DataFrame({
            "latency_p50_ms": g["latency_s"].quantile(0.50) * 1e3,
            "latency_p99_ms": g["latency_s"].quantile(0.99) * 1e3,
            "throughput_samples_s": g["samples"].sum() / g["latency_s"].sum(),
            "calls": g.size(),
        })
        out["speedup"] = out["throughput_samples_s"] / out.loc["train", "throughput_samples_s"]
        for name in ("max_abs_err", "mean_abs_err", "rel_l2_err", "max_rel_err", "top1_agreement"):
            out[name] = [math.nan if path == "train" else getattr(self, name) for path in out.index]
        out.index.name = "path"
        return out

    def summary(self) -> str:
        t = self.tolerance
        verdict = "within" if self.within_tolerance else "OUTSIDE"
        top1 = "" if math.isnan(self.top1_agreement) else f", top-1 agreement {self.top1_agreement:.4f}"
        tab = self.table()
        speed = float(tab["speedup"].iloc[-1])
        return (f"{verdict} tolerance '{t.name}': rel L2 {self.rel_l2_err:.2e} (≤ {t.rel_l2:.1e}), "
                f"max rel {self.max_rel_err:.2e} (≤ {t.max_rel:.1e}), max abs {self.max_abs_err:.2e}{top1}; "
                f"serve throughput ×{speed:.2f} of train")

    def as_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("timing", "tolerance")}
        d["tolerance"] = asdict(self.tolerance)
        return d


def _as_call(inp: Any) -> tuple[tuple, dict]:
    if isinstance(inp, dict):
        return (), inp
    if isinstance(inp, (tuple, list)):
        return tuple(inp), {}
    return (inp,), {}


def _n_samples(inp: Any) -> int:
    args, kwargs = _as_call(inp)
    for v in (*args, *kwargs.values()):
        if hasattr(v, "shape") and len(v.shape):
            return int(v.shape[0])
    return 1


def _first_tensor(out: Any):
    if isinstance(out, (tuple, list)):
        return _first_tensor(out[0])
    if isinstance(out, dict):
        return _first_tensor(out["logits"] if "logits" in out else next(iter(out.values())))
    return out


def _sync(out: Any) -> None:
    t = _first_tensor(out)
    if getattr(getattr(t, "device", None), "type", "cpu") == "cuda":
        import torch

        torch.cuda.synchronize(t.device)


def parity(train_model: Callable, serve_model: Callable, inputs: Sequence[Any], *,
           tolerance: Tolerance = FP32, serve_inputs: Callable[[Any], Any] | None = None,
           output_transform: Callable[[Any, Any], Any] | None = None, warmup: int = 1,
           repeats: int = 1) -> ParityReport:
    """Run both models on every request; compare outputs and time each call.

    inputs: requests, each a tensor (first dim = samples), a tuple of positional args, or a dict of kwargs.
    serve_inputs(request) -> the serving path's form of that request (e.g. cast, moved, bucketed); default same.
    output_transform(output, request) -> tensor to compare (e.g. only the valid tokens); default the first
    tensor of the output. Outputs are compared in float64 on CPU, the training path as reference.
    warmup: untimed calls of each path on the first `warmup` requests (compilation, caches); len(inputs)
    warms every shape the requests have.
    repeats: timed passes over all requests; paths alternate per request, order rotated, so drift hits both alike.
    """
    import torch

    if len(inputs) == 0:
        raise InputError("parity: no requests given")
    serve_inputs = serve_inputs or (lambda r: r)
    pick = output_transform or (lambda out, _req: _first_tensor(out))
    paths = {"train": (train_model, lambda r: r), "serve": (serve_model, serve_inputs)}

    def call(path: str, req: Any):
        model, adapt = paths[path]
        args, kwargs = _as_call(adapt(req))
        with torch.inference_mode():
            t0 = time.perf_counter()
            out = model(*args, **kwargs)
            _sync(out)
            return out, time.perf_counter() - t0

    for req in inputs[:warmup]:
        call("train", req)
        call("serve", req)
    rows, ref, got = [], [], []
    for rep in range(repeats):
        for i, req in enumerate(inputs):
            order = ("train", "serve") if (i + rep) % 2 == 0 else ("serve", "train")
            outs = {}
            for path in order:
                out, dt = call(path, req)
                rows.append({"path": path, "request": i, "repeat": rep, "latency_s": dt, "samples": _n_samples(req)})
                outs[path] = out
            if rep == 0:
                ref.append(_rows(pick(outs["train"], req)))
                got.append(_rows(pick(outs["serve"], req)))
                if got[-1].shape != ref[-1].shape:
                    raise InputError(f"parity: request {i}: output shapes differ: train {tuple(ref[-1].shape)}, "
                                     f"serve {tuple(got[-1].shape)}")
    errors = compare_outputs(torch.cat(ref), torch.cat(got))
    timing = pd.DataFrame(rows)
    timing["path"] = pd.Categorical(timing["path"], categories=["train", "serve"])
    return ParityReport(tolerance=tolerance, **errors,
                        within_tolerance=tolerance.check(errors["rel_l2_err"], errors["max_rel_err"],
                                                         errors["top1_agreement"]),
                        n_requests=len(inputs), n_samples=int(sum(_n_samples(r) for r in inputs)), timing=timing)


def _rows(t):
    """Output as float64 CPU rows [N, last dim] (1-D and scalar outputs become one column)."""
    import torch

    t = t.detach().to("cpu", torch.float64)
    return t.reshape(-1, t.shape[-1]) if t.dim() >= 2 else t.reshape(-1, 1)


def compare_outputs(reference, candidate) -> dict[str, float]:
    """Errors of `candidate` against `reference` (tensors of one shape): max/mean abs, rel L2, max rel, top-1."""
    import torch

    if reference.shape != candidate.shape:
        raise InputError(f"parity: output shapes differ: {tuple(reference.shape)} vs {tuple(candidate.shape)}")
    a, b = reference.double(), candidate.double()
    diff = (b - a).abs()
    norm = float(a.norm())
    scale = float(a.abs().max()) if a.numel() else 0.0
    top1 = math.nan
    if a.dim() >= 2 and a.shape[-1] > 1:
        top1 = float((a.argmax(-1) == b.argmax(-1)).double().mean())
    nonfinite = int((~torch.isfinite(b)).sum())
    return {
        "max_abs_err": float(diff.max()) if nonfinite == 0 else math.inf,
        "mean_abs_err": float(diff.mean()) if nonfinite == 0 else math.inf,
        "rel_l2_err": float(diff.norm() / norm) if norm > 0 and nonfinite == 0 else (0.0 if nonfinite == 0 else math.inf),
        "max_rel_err": float(diff.max() / scale) if scale > 0 and nonfinite == 0 else (0.0 if nonfinite == 0 else math.inf),
        "top1_agreement": top1,
    }


def latency_summary(latencies_s: Sequence[float], samples: Sequence[int] | None = None,
                    wall_s: float | None = None) -> dict[str, float]:
    """p50 / p99 / max latency (ms) and throughput (samples per second of `wall_s`, or of summed latency)."""
    lat = np.asarray(latencies_s, dtype=float)
    n = np.ones_like(lat) if samples is None else np.asarray(samples, dtype=float)
    total = float(wall_s) if wall_s is not None else float(lat.sum())
    return {
        "p50_ms": float(np.percentile(lat, 50) * 1e3) if len(lat) else math.nan,
        "p99_ms": float(np.percentile(lat, 99) * 1e3) if len(lat) else math.nan,
        "max_ms": float(lat.max() * 1e3) if len(lat) else math.nan,
        "throughput_per_s": float(n.sum() / total) if total > 0 else math.nan,
    }


# ---------------------------------------------------------------- shape buckets and padding

def tolerance_table(*tolerances: Tolerance) -> pd.DataFrame:
    """The stated tolerances as a table (for notebooks)."""
    return pd.DataFrame([asdict(t) for t in (tolerances or (FP32, BF16, FP16))]).set_index("name")
