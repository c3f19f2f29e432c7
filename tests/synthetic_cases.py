"""LABELED SYNTHETIC real-shaped cases: the situations users meet, written as the files they paste (nvidia-smi CSV,
Kineto JSON), each with the cause a correct diagnosis names. Each case returns (bundle, expected cause id).
Nothing here is a measurement: every frame's `source` starts with "synthetic:"."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from playbook.knowledge import ids as cause_ids
from playbook.labs.synthetic import simulate_telemetry
from playbook.model import schema


def case_rank0_checkpoint(seed: int = 1, interval_s: float = 0.1) -> tuple[schema.Bundle, str]:
    """8 H100-like GPUs polled every 100 ms; rank 0 saves a checkpoint synchronously every 10 s (GPU 0 at ~25% on
    average) while GPUs 1-7 read 100% at low power, spinning in NCCL; GPU 5's poller misses 2 s of samples."""
    tele, _ = simulate_telemetry("straggler", hosts=1, gpus_per_host=8, duration_s=300, interval_s=interval_s,
                                 period_s=10.0, duty_cycle=0.25, low_pct=0.0, seed=seed)
    t = (tele["time"] - tele["time"].min()).dt.total_seconds()
    tele = tele[~((tele["gpu"] == 5) & (t >= 100) & (t < 102))].reset_index(drop=True)
    return schema.Bundle(inputs=["synthetic:rank0_checkpoint"], telemetry=tele), cause_ids.COLLECTIVE_STRAGGLER


def case_power_cap(seed: int = 0, cap_w: float = 30.0, capped_mhz: float = 210.0, full_mhz: float = 2205.0,
                   full_w: float = 350.0, draw_w: float = 310.0) -> tuple[schema.Bundle, str]:
    """One GPU at 100% utilization under a `cap_w` power cap (SM clock `capped_mhz`, power pinned at the cap) for 8
    of the 10 minutes recorded, then uncapped (limit `full_w`, drawing `draw_w`) at `full_mhz` — the same GPU's
    own clock and limit are the reference."""
    rng = np.random.default_rng(seed)
    n = 600
    capped = np.arange(n) < 480
    t = pd.Timestamp("2026-01-15T10:00:00Z") + pd.to_timedelta(np.arange(n), unit="s")
    frame = schema.telemetry_frame({
        "time": t, "host": "node00", "gpu": 0, "util_pct": np.full(n, 100.0),
        "power_w": np.round(np.where(capped, cap_w * 0.99 + rng.normal(0, 0.01 * cap_w, n),
                                     draw_w + rng.normal(0, 10, n)), 2),
        "power_limit_w": np.where(capped, cap_w, full_w),
        "sm_clock_mhz": np.where(capped, capped_mhz, full_mhz) + np.round(rng.normal(0, 3, n)),
        "source": "synthetic:power_cap"}, interval_s=1.0)
    return schema.Bundle(inputs=["synthetic:power_cap"], telemetry=frame), cause_ids.THROTTLING


def kineto_trace(kind: str, n: int = 4096) -> dict:
    """A torch.profiler (Kineto) Chrome-trace document without a schedule (no ProfilerStep marks), as
    `prof.export_chrome_trace()` writes it. kind "launch": `n` + 1 tiny elementwise kernels (2 µs) launched every
    22 µs, then one GEMM; kind "item": `n` per-element `x[i].cpu()` copies, each a 4-byte pageable DtoH copy the
    CPU waits for."""
    ev: list[dict] = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
                      {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}]
    t, corr = 1000.0, 0

    def x(cat, name, pid, tid, ts, dur, **args):
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                   **({"args": args} if args else {})})

    for _ in range(n):
        corr += 1
        if kind == "launch":
            x("cpu_op", "aten::add", 1, 1, t, 18.0)
            x("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 8, 7.0, correlation=corr)
            x("kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", 0,
              7, t + 16, 2.0, stream=7, correlation=corr, device=0)
            t += 22.0
        elif kind == "item":
            x("cpu_op", "aten::to", 1, 1, t, 30.0)
            x("cuda_runtime", "cudaMemcpyAsync", 1, 1, t + 10, 6.0, correlation=corr)
            x("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 0, 7, t + 17, 1.5, stream=7, correlation=corr,
              bytes=4, device=0)
            corr += 1
            x("cuda_runtime", "cudaStreamSynchronize", 1, 1, t + 17, 4.0, correlation=corr)
            t += 34.0
        else:
            raise ValueError(f"unknown trace kind {kind!r}: launch or item")
    if kind == "launch":
        corr += 1
        x("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 5, 7.0, correlation=corr)
        x("kernel", "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", 0, 7, t + 20, 400.0, stream=7,
          correlation=corr, device=0)
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
            "traceEvents": ev}


def case_trace(kind: str, out_dir: str | Path) -> tuple[schema.Bundle, str]:
    """kineto_trace(kind) written to `out_dir`/rank0.pt.trace.json and read back; kind launch → launch_bound,
    item → host_sync."""
    from playbook.readers import read_paths

    path = Path(out_dir) / f"{kind}.pt.trace.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kineto_trace(kind)))
    return read_paths([str(path)]), {"launch": cause_ids.LAUNCH_BOUND, "item": cause_ids.HOST_SYNC}[kind]


def case_host_only(seed: int = 0, polls: int = 300) -> tuple[schema.Bundle, str]:
    """Host metrics only (CPU, disk, network every second): no GPU, steps or trace — nothing can name a cause."""
    rng = np.random.default_rng(seed)
    t = pd.Timestamp("2026-01-15T10:00:00Z") + pd.to_timedelta(np.arange(polls), unit="s")
    host = schema.host_frame({"time": t, "host": "node00", "cpu_pct": np.clip(rng.normal(40, 5, polls), 0, 100),
                              "read_mib_s": np.abs(rng.normal(50, 10, polls)), "source": "synthetic:host_only"})
    return schema.Bundle(inputs=["synthetic:host_only"], host=host), cause_ids.INSUFFICIENT_DATA


def case_three_polls() -> tuple[schema.Bundle, str]:
    """Three nvidia-smi polls of 4 busy GPUs: too few to look for a swing or a laggard."""
    tele, _ = simulate_telemetry(cause_ids.HEALTHY, hosts=1, gpus_per_host=4, duration_s=3.0, interval_s=1.0)
    return schema.Bundle(inputs=["synthetic:three_polls"], telemetry=tele), cause_ids.INSUFFICIENT_DATA


def _step_log(durations: np.ndarray, ranks: int = 8, source: str = "synthetic:steps",
              optimizer_on: np.ndarray | None = None) -> pd.DataFrame:
    """Whole-step rows (phase "step") for `ranks` ranks in lockstep, as a per-step timer log gives them; with
    `optimizer_on`, an "optimizer" phase row on those steps (what a phase-timing logger writes)."""
    t0 = pd.Timestamp("2026-01-15T10:00:00Z")
    starts = t0 + pd.to_timedelta(np.concatenate([[0.0], np.cumsum(durations)[:-1]]), unit="s")
    n = len(durations)
    rows = {"time": np.tile(starts, ranks), "host": "node00", "rank": np.repeat(np.arange(ranks), n),
            "step": np.tile(np.arange(n), ranks), "phase": "step", "duration_s": np.tile(durations, ranks),
            "source": source}
    frame = schema.steps_frame(rows)
    if optimizer_on is not None:
        k = np.flatnonzero(optimizer_on)
        opt = schema.steps_frame({"time": np.tile(starts[k], ranks), "host": "node00",
                                  "rank": np.repeat(np.arange(ranks), len(k)), "step": np.tile(k, ranks),
                                  "phase": "optimizer", "duration_s": 0.4, "source": source})
        frame = pd.concat([frame, opt], ignore_index=True)
    return frame


def case_level_shift(seed: int = 0) -> tuple[schema.Bundle, str]:
    """600 steps at ~1.0 s; from step 350 every step takes 1.3 s (a GPU starts throttling, a slow node joins):
    a level shift, not a periodic stall. A step log alone cannot tell which: throttling, a straggler and a failing
    part all cite the one shift, so the loss is unexplained_slowdown and the shift is its evidence."""
    rng = np.random.default_rng(seed)
    d = np.where(np.arange(600) < 350, 1.0, 1.3) * np.exp(0.03 * rng.standard_normal(600))
    return schema.Bundle(inputs=["synthetic:level_shift"], steps=_step_log(d)), cause_ids.UNEXPLAINED_SLOWDOWN


def case_grad_accum(seed: int = 0, every: int = 4) -> tuple[schema.Bundle, str]:
    """Gradient accumulation over `every` micro-batches: every `every`-th step runs the all-reduce and the
    optimizer and takes 2.1× the others, without exception — a cadence, not a stall (healthy). The phase timer logs
    the optimizer phase on those steps only: the positive evidence that the cadence is the optimizer's (a constant
    cadence alone could as well be a stall every N steps)."""
    rng = np.random.default_rng(seed)
    d = 0.5 * np.exp(0.02 * rng.standard_normal(400))
    d[every - 1::every] *= 2.1
    on = np.zeros(len(d), dtype=bool)
    on[every - 1::every] = True
    return schema.Bundle(inputs=["synthetic:grad_accum"], steps=_step_log(d, optimizer_on=on)), cause_ids.HEALTHY


def case_warmup_checkpoint(seed: int = 0) -> tuple[schema.Bundle, str]:
    """Five compile/warm-up steps of 20-40 s, then a synchronous checkpoint (+6 s) every 50 steps of 1.5 s, logged
    as checkpoint events: a periodic stall every 50 steps whose warm-up does not enter the period test."""
    rng = np.random.default_rng(seed)
    d = 1.5 * np.exp(0.04 * rng.standard_normal(500))
    d[:5] = [40.0, 31.0, 25.0, 22.0, 20.0]
    at = np.arange(54, 500, 50)
    d[at] += 6.0
    steps = _step_log(d)
    t0 = pd.Timestamp("2026-01-15T10:00:00Z")
    ends = t0 + pd.to_timedelta(np.cumsum(d), unit="s")
    events = schema.events_frame({"time": ends[at], "host": "node00", "rank": 0, "step": at, "kind": "checkpoint",
                                  "duration_s": 6.0, "detail": "torch.save", "source": "synthetic:steps"})
    return schema.Bundle(inputs=["synthetic:warmup_checkpoint"], steps=steps, events=events), cause_ids.PERIODIC_STALL


