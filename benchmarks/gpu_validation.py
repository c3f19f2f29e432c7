"""Validate the GPU paths on a machine with an NVIDIA GPU, in one short run, and write docs/gpu-validation.md.

What it checks (each step is independent: a failure is reported and the next step runs):
  1. NVML sampler: a Recorder at 10 Hz around a matmul loop that is busy for `--busy` s, then idle for `--idle` s.
     Expect utilization near 100% while busy and near 0% idle, power and SM clock higher while busy, the
     sub-second nvmlDeviceGetSamples rows present, and which metrics read NaN (unsupported on this GPU).
  2. Step timer with CUDA events: phase times from events (no sync in the hot path) against the same phases timed
     with torch.cuda.synchronize() + perf_counter; expect a ratio near 1.
  3. The H2D lab (pageable fault, pinned + prefetcher fix, data already on the device) and the data-starvation
     lab, short, 2 repeats each: fault / fix / no-fault throughput and ratios.
  4. A profiler window on the GPU: the trace is written and `playbook diagnose` reads it (kernels found).

The exact command (about 3-5 minutes on one GPU):
  python benchmarks/gpu_validation.py --out docs/gpu-validation.md
How to read the result: the Markdown file lists each figure with the expectation beside it. Without CUDA it says
so and exits 0 without writing anything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "example:\n  python benchmarks/gpu_validation.py --out docs/gpu-validation.md --busy 8 --idle 6"


def _matmul_loop(seconds: float, n: int = 4096) -> int:
    import torch

    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    t_end, iters = time.perf_counter() + seconds, 0
    while time.perf_counter() < t_end:
        for _ in range(10):
            a = (a @ b).tanh_()
        torch.cuda.synchronize()
        iters += 10
    return iters


def check_sampler(work: Path, busy: float, idle: float) -> dict:
    """NVML sampler + host probe around a busy phase then an idle phase; per-phase means per metric."""
    import pandas as pd

    from playbook.probes import Rates, Recorder
    from playbook.readers import rundir

    run = work / "sampler"
    with Recorder(run, rates=Rates(sample_hz=10.0)):
        t0 = pd.Timestamp.now(tz="UTC")
        iters = _matmul_loop(busy)
        t1 = pd.Timestamp.now(tz="UTC")
        time.sleep(idle)
    tel = rundir.read_run(run).telemetry
    polled = tel[tel["source"].astype(str) == "probe:nvml"]
    samples = tel[tel["source"].astype(str) == "probe:nvml-samples"]
    busy_rows = polled[(polled["time"] > t0 + pd.Timedelta(seconds=1)) & (polled["time"] < t1)]
    idle_rows = polled[polled["time"] > t1 + pd.Timedelta(seconds=1)]
    metrics = ["util_pct", "mem_util_pct", "power_w", "sm_clock_mhz", "temp_c", "pcie_tx_mib_s", "pcie_rx_mib_s",
               "pcie_link_gen", "pcie_link_width", "throttle_reasons", "nvlink_tx_mib_s"]
    return {
        "matmul_iters": iters, "rows_polled": len(polled), "rows_util_samples": len(samples),
        "gpus": sorted(polled["gpu"].unique().tolist()),
        "interval_s": float(polled.attrs.get("interval_s", float("nan"))),
        "busy_mean": {m: float(busy_rows[m].mean()) for m in metrics},
        "idle_mean": {m: float(idle_rows[m].mean()) for m in metrics},
        "all_nan": [m for m in metrics if polled[m].isna().all()],
    }


def check_step_timer(steps: int = 30) -> dict:
    """Phase times from CUDA events vs synchronize + perf_counter, same work."""
    import torch

    from playbook.probes import StepTimer

    x = torch.randn(4096, 4096, device="cuda")
    timer = StepTimer(cuda=True)
    host_overhead = []
    for i in range(steps):
        with timer.step(i):
            t = time.perf_counter()
            with timer.phase("fwd"):
                y = (x @ x).relu_()
            with timer.phase("bwd"):
                y = (y @ x).tanh_()
            host_overhead.append(time.perf_counter() - t)
    frame = timer.frame()
    events_ms = frame[frame["phase"] == "fwd"]["duration_s"].median() * 1e3
    synced = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        y = (x @ x).relu_()
        torch.cuda.synchronize()
        synced.append(time.perf_counter() - t)
    synced_ms = sorted(synced)[len(synced) // 2] * 1e3
    return {"fwd_events_ms": float(events_ms), "fwd_synced_ms": float(synced_ms),
            "ratio": float(events_ms / synced_ms), "host_ms_per_step_enqueue": 1e3 * sorted(host_overhead)[steps // 2]}


def check_lab(name: str, variants: str, work: Path, steps: int) -> dict:
    """Run a lab CLI with short parameters; return its stdout tail and the per-variant throughput table."""
    out = work / name
    cmd = [sys.executable, "-m", f"playbook.labs.workloads.{name}", "--variants", variants, "--repeats", "2",
           "--steps", str(steps), "--out", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    return {"command": " ".join(cmd[1:]), "rc": res.returncode, "stdout_tail": res.stdout[-3000:],
            "stderr_tail": res.stderr[-1500:]}


def check_profiler(work: Path) -> dict:
    """One profiler window over a few CUDA steps; diagnose must read the trace and find GPU kernels."""
    import torch

    from playbook.probes import StepTimer
    from playbook.probes.profiler import ProfilerWindows
    from playbook.readers import read_paths

    timer = StepTimer(cuda=True)
    prof = ProfilerWindows(work / "traces", timer=timer, every=4, warmup=1, active=2, min_gap_steps=0,
                           max_windows=1)
    x = torch.randn(2048, 2048, device="cuda")
    for i in range(8):
        with timer.step(i), timer.phase("fwd"):
            x = (x @ x).tanh_()
    torch.cuda.synchronize()
    traces = [str(p) for p in prof.traces]
    bundle = read_paths([work / "traces"]) if traces else None
    kernels = 0 if bundle is None else int((bundle.trace["cat"].astype(str) == "kernel").sum())
    diag = subprocess.run([sys.executable, "-m", "playbook", "diagnose", str(work / "traces"), "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    top = json.loads(diag.stdout)["hypotheses"][0]["id"] if diag.returncode == 0 else f"rc {diag.returncode}"
    return {"traces": traces, "kernels": kernels, "diagnose_top": top}


def render(results: dict) -> str:
    """The Markdown report."""
    lines = ["# GPU validation", "", f"Generated by `python benchmarks/gpu_validation.py` on {results['when']}.", "",
             f"- machine: {results['machine']}", ""]
    for name, value in results["checks"].items():
        lines += [f"## {name}", "", "```", json.dumps(value, indent=2, default=str)[:6000], "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=EXAMPLE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "docs" / "gpu-validation.md"), help="Markdown report path")
    parser.add_argument("--json", help="also write the raw results here")
    parser.add_argument("--busy", type=float, default=8.0, help="seconds of matmul load for the sampler check")
    parser.add_argument("--idle", type=float, default=6.0, help="seconds idle after it")
    parser.add_argument("--lab-steps", type=int, default=30, help="timed steps per lab run")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("gpu_validation: no CUDA device here: nothing to validate (the report is left unchanged)")
        return 0
    work = Path(tempfile.mkdtemp(prefix="gpu-validation-"))
    results = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
                          f"{os.cpu_count()} CPUs, {platform.platform()}",
               "checks": {}}
    steps = [
        ("NVML sampler (busy then idle)", lambda: check_sampler(work, args.busy, args.idle)),
        ("Step timer: CUDA events vs synchronize", check_step_timer),
        ("H2D lab", lambda: check_lab("h2d_copies", "no_fault,fault,fix", work, args.lab_steps)),
        ("Data-starvation lab", lambda: check_lab("data_starvation", "no_fault,fault,fix", work, args.lab_steps)),
        ("Profiler window read by diagnose", lambda: check_profiler(work)),
    ]
    for i, (name, fn) in enumerate(steps, 1):
        print(f"[{i}/{len(steps)}] {name} ...", flush=True)
        t = time.perf_counter()
        try:
            results["checks"][name] = {**fn(), "seconds": round(time.perf_counter() - t, 1)}
        except Exception:  # report and go on: one failing path must not hide the others
            results["checks"][name] = {"error": traceback.format_exc(limit=4)}
    Path(args.out).write_text(render(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
