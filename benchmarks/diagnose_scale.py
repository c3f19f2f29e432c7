"""Diagnose scaling benchmark: wall time and peak memory of `playbook diagnose` against the number of GPUs.

What it checks
    Issue 31's targets: synthetic nvidia-smi telemetry of G GPUs x 1 h at 1 s (benchmarks/ingest.py's
    generator: every GPU swings 90% / 20% on a 60 s period) diagnosed end to end in a fresh process, one size at
    a time; 2,048 GPUs in <= 15 s, 4,096 GPUs in <= 30 s and <= 3 GiB peak RSS, and growth close to linear: the
    exponent b of wall ≈ a * G^b fitted by least squares on log-log over the sizes measured.

The exact command
    python benchmarks/diagnose_scale.py                          # 64, 512, 2048, 4096, 8192 GPUs
    python benchmarks/diagnose_scale.py --gpus 64 512 2048 4096
    python benchmarks/diagnose_scale.py --gpus 8 64              # a quick run

How to read the result
    One row per size: rows, wall and CPU seconds of the whole process (import + read + diagnose + JSON), of which
    the analyses, peak RSS, the top hypothesis and the synchrony label (the same at every size: the data is the
    same swing), then the fitted exponents of wall and CPU time and PASS/MISS against the targets. The CSVs are
    written once to /tmp (about 270 MB per 1,000 GPUs) and reused. On a loaded machine wall time is inflated by
    other work: the CPU column is then the better estimate of a quiet machine's wall time.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {2048: (15.0, None), 4096: (30.0, 3072.0)}  # GPUs: (wall s, peak RSS MiB)


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"playbook_bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fit_exponent(gpus: list[int], seconds: list[float]) -> float:
    """b of seconds ≈ a · gpus^b, least squares on log-log (NaN with fewer than two sizes)."""
    if len(gpus) < 2:
        return math.nan
    return float(np.polyfit(np.log(gpus), np.log(seconds), 1)[0])


def _predicted_rss(measured: list[tuple[int, float]], gpus: int) -> float:
    """Peak RSS (MiB) at `gpus`, on the line through the two largest sizes measured (through 0 with one)."""
    (g2, r2), (g1, r1) = measured[-1], (measured[-2] if len(measured) > 1 else (0, 0.0))
    return r2 + (r2 - r1) * (gpus - g2) / (g2 - g1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Wall time and peak RSS of `playbook diagnose` by number of GPUs.")
    parser.add_argument("--gpus", type=int, nargs="+", default=[64, 512, 2048, 4096, 8192], help="sizes, in GPUs")
    parser.add_argument("--max-rss-mib", type=float, default=8192.0,
                        help="skip a size whose extrapolated peak RSS exceeds this (default 8192 MiB)")
    parser.add_argument("--hours", type=float, default=1.0, help="hours of 1 Hz polling (default 1)")
    args = parser.parse_args(argv)
    if min(args.gpus) < 1 or args.hours <= 0:
        parser.error("--gpus and --hours must be positive")
    seconds = int(round(args.hours * 3600))
    ingest, diagnose = _bench("ingest"), _bench("diagnose")
    rows, skipped = [], []
    for g in sorted(set(args.gpus)):
        if rows:
            last_g, last = rows[-1]
            predicted = _predicted_rss([(n, r["rss_mib"]) for n, r in rows], g)
            if predicted > args.max_rss_mib:
                skipped.append((g, f"not run: peak RSS extrapolated from {last_g} GPUs is {predicted:.0f} MiB, over "
                                   f"the {args.max_rss_mib:.0f} MiB this machine allows one process"))
                print(f"  {g:6d} GPUs: {skipped[-1][1]}", flush=True)
                continue
        path = Path(f"/tmp/playbook-ingest-{g}x{seconds / 3600:g}h.csv")
        if not path.exists():
            t0 = time.perf_counter()
            ingest.generate(path, g, seconds)
            print(f"generated {path} ({path.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - t0:.0f} s",
                  flush=True)
        try:
            res = diagnose.measure(path)  # a fresh interpreter, one size at a time
        except SystemExit as exc:
            skipped.append((g, f"failed: {str(exc).strip().splitlines()[-1][:120]}"))
            print(f"  {g:6d} GPUs: {skipped[-1][1]}", flush=True)
            continue
        rows.append((g, res))
        print(f"  {g:6d} GPUs: {res['total_s']:7.2f} s wall, {res['total_cpu_s']:7.2f} s CPU, "
              f"{res['rss_mib']:6.0f} MiB", flush=True)
    print(f"\n{'GPUs':>6s} {'rows':>12s} {'wall s':>8s} {'CPU s':>8s} {'read wall/CPU s':>16s} "
          f"{'analyse wall/CPU s':>19s} {'peak RSS':>10s}  {'top hypothesis':22s} synchrony")
    for g, r in rows:
        print(f"{g:6d} {r['rows']:12,d} {r['total_s']:8.2f} {r['total_cpu_s']:8.2f} "
              f"{r['read_s']:8.2f}/{r['read_cpu_s']:<7.2f} {r['analyse_s']:10.2f}/{r['analyse_cpu_s']:<8.2f} "
              f"{r['rss_mib']:6.0f} MiB  {r['top']:22s} {r['synchrony']}")
    for g, why in skipped:
        print(f"{g:6d} {'':12s} {why}")
    sizes = [g for g, _ in rows]
    wall = fit_exponent(sizes, [r["total_s"] for _, r in rows])
    cpu = fit_exponent(sizes, [r["total_cpu_s"] for _, r in rows])
    big = [(g, r) for g, r in rows if g >= 512]
    wall_big = fit_exponent([g for g, _ in big], [r["total_s"] for _, r in big])
    print(f"\ngrowth exponent (wall ≈ a·G^b): b = {wall:.2f} over all sizes, {wall_big:.2f} from 512 GPUs up; "
          f"CPU time b = {cpu:.2f} (1 = linear)")
    for g, r in rows:
        if g in TARGETS:
            limit_s, limit_mib = TARGETS[g]
            verdict = f"{g} GPUs: {r['total_s']:.2f} s wall (target <= {limit_s:g} s: " \
                      f"{'PASS' if r['total_s'] <= limit_s else 'MISS'}; CPU {r['total_cpu_s']:.2f} s)"
            if limit_mib:
                verdict += f", peak RSS {r['rss_mib']:.0f} MiB (target <= {limit_mib:.0f} MiB: " \
                           f"{'PASS' if r['rss_mib'] <= limit_mib else 'MISS'})"
            print(verdict)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(load average {load:.1f} on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
