"""Diagnose benchmark: end-to-end `playbook diagnose` on a day of 64-GPU telemetry, and the Kineto load speed.

What it checks
    Issue 3's targets: `playbook diagnose` (read + every analysis + ranking) on a 64-GPU x 24 h x 1 Hz nvidia-smi
    CSV (5.5 M rows) in ≤ 15 s and ≤ 2 GB peak RSS on 2 cores; and, side by side in the same run, the Kineto
    trace load speed (≥ 75 MB/s, RSS ≤ 1.5x the JSON) from benchmarks/kineto_load.py when it is present.

The exact command
    python benchmarks/diagnose.py                        # generate /tmp/playbook-ingest-64x24h.csv once, measure
    python benchmarks/diagnose.py --gpus 8 --hours 1     # a quick run
    python benchmarks/diagnose.py --no-kineto            # skip the Kineto load measurement

How to read the result
    One line per repeat, then the median: wall time split into read (the nvidia-smi reader) and analyse
    (diagnose: oscillation, GPU status, stragglers, ranking), peak RSS of that fresh process, rows/s, and
    PASS/MISS against the targets; the diagnosis it reached (top hypothesis, period) is printed as a sanity
    check — the generated data oscillates 90% / 20% with a 60 s period, synchronized. Then the Kineto
    benchmark's own table. Timings on a shared machine are noisy: rerun before believing a MISS.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = "/tmp/playbook-ingest-{gpus}x{hours:g}h.csv"
TARGET_S = 15.0
TARGET_RSS_MIB = 2048

CHILD = (Path(__file__).with_name("peak_rss.py")).read_text() + r"""
import json, resource, sys, time
path = sys.argv[1]
t0, c0 = time.perf_counter(), time.process_time()
from playbook.readers import read_paths
from playbook.diagnosis import diagnose
t1, c1 = time.perf_counter(), time.process_time()
bundle = read_paths([path])
t2, c2 = time.perf_counter(), time.process_time()
d = diagnose(bundle)
text = d.to_json()
t3, c3 = time.perf_counter(), time.process_time()
top = d.hypotheses[0]
print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1, "analyse_s": t3 - t2, "total_s": t3 - t0,
                  "read_cpu_s": c2 - c1, "analyse_cpu_s": c3 - c2, "total_cpu_s": c3 - c0,
                  "rows": len(bundle.telemetry), "gpus": len(d.gpus), "json_bytes": len(text),
                  "top": top["id"], "score": top["score"], "period_s": d.oscillation["period_s"],
                  "synchrony": d.oscillation["synchrony"],
                  "rss_mib": peak_rss_mib()}))
"""


def _generator():
    """benchmarks/ingest.py's generate() (the issue-2 benchmark's file, so both measure the same CSV)."""
    path = ROOT / "benchmarks" / "ingest.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("playbook_bench_ingest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, "generate", None)


def _generate_fallback(path: Path, gpus: int, seconds: int) -> int:
    """LABELED SYNTHETIC CSV from playbook.labs.synthetic (slower; used only without benchmarks/ingest.py)."""
    from playbook.labs.synthetic import simulate_telemetry, write_nvidia_smi_csv

    frame, _ = simulate_telemetry("oscillation", hosts=1, gpus_per_host=gpus, duration_s=seconds,
                                  interval_s=1.0, noise_pct=8.0)
    written = write_nvidia_smi_csv(frame, path.parent, suffix=".tmp.csv")[0]
    written.replace(path)
    return len(frame)


def measure(path: Path) -> dict:
    """One end-to-end diagnose in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"diagnose failed:\n{proc.stderr.strip()[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time `playbook diagnose` end to end on a 64-GPU x 24 h nvidia-smi CSV, and the Kineto load.",
        epilog="example:\n  python benchmarks/diagnose.py --repeats 3\n"
               "  python benchmarks/diagnose.py --gpus 8 --hours 1 --no-kineto     # quick",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=64, help="GPUs in the log (default 64)")
    parser.add_argument("--hours", type=float, default=24.0, help="hours of 1 Hz polling (default 24)")
    parser.add_argument("--out", default=None, help="the CSV (default /tmp/playbook-ingest-64x24h.csv, shared "
                                                    "with benchmarks/ingest.py)")
    parser.add_argument("--repeats", type=int, default=2, help="end-to-end runs; the median is reported")
    parser.add_argument("--regenerate", action="store_true", help="write the CSV even if it exists")
    parser.add_argument("--no-kineto", action="store_true", help="skip benchmarks/kineto_load.py")
    args = parser.parse_args(argv)
    if args.gpus < 1 or args.repeats < 1 or args.hours <= 0:
        parser.error("--gpus, --repeats and --hours must be positive")
    seconds = int(round(args.hours * 3600))
    out = Path(args.out or DEFAULT_OUT.format(gpus=args.gpus, hours=seconds / 3600))
    if args.regenerate or not out.exists():
        print(f"generating {out}: {args.gpus} GPUs x {seconds} s at 1 Hz (90%/45 s, 20%/15 s) ...", flush=True)
        t0 = time.perf_counter()
        gen = _generator()
        rows = gen(out, args.gpus, seconds) if gen else _generate_fallback(out, args.gpus, seconds)
        print(f"  {rows:,} rows, {out.stat().st_size / 2**20:.0f} MiB in {time.perf_counter() - t0:.1f} s",
              flush=True)
    else:
        print(f"using {out} ({out.stat().st_size / 2**20:.0f} MiB; --regenerate to rewrite)", flush=True)
    runs = []
    for r in range(args.repeats):
        res = measure(out)
        runs.append(res)
        print(f"  run {r + 1}/{args.repeats}: total {res['total_s']:6.2f} s wall / {res['total_cpu_s']:6.2f} s CPU "
              f"(import {res['import_s']:.2f}, read {res['read_s']:.2f}, analyse {res['analyse_s']:.2f} wall)  "
              f"peak RSS {res['rss_mib']:6.0f} MiB", flush=True)
    keys = ("total_s", "read_s", "analyse_s", "import_s", "total_cpu_s", "read_cpu_s", "analyse_cpu_s")
    med = {k: statistics.median(r[k] for r in runs) for k in keys}
    rss = max(r["rss_mib"] for r in runs)
    last = runs[-1]
    print()
    print(f"{'measurement':40s} {'wall s':>8s} {'CPU s':>8s} {'rows/s':>12s} {'peak RSS':>10s}")
    print(f"{'playbook diagnose, end to end':40s} {med['total_s']:8.2f} {med['total_cpu_s']:8.2f} "
          f"{last['rows'] / med['total_s']:12,.0f} {rss:7.0f} MiB")
    print(f"{'  of which: reading (readers)':40s} {med['read_s']:8.2f} {med['read_cpu_s']:8.2f} "
          f"{last['rows'] / med['read_s']:12,.0f}")
    print(f"{'  of which: analyses + ranking + JSON':40s} {med['analyse_s']:8.2f} {med['analyse_cpu_s']:8.2f} "
          f"{last['rows'] / med['analyse_s']:12,.0f}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(load average {load:.1f} on {os.cpu_count()} CPUs: when it exceeds the CPU count, wall time is "
          "inflated by other work and CPU time is the better estimate of a quiet machine's wall time)")
    print(f"\n{last['rows']:,} rows, {last['gpus']} GPUs -> top hypothesis {last['top']} ({last['score']:.2f}), "
          f"period {last['period_s']} s, synchrony {last['synchrony']}")
    verdict = "PASS" if med["total_s"] <= TARGET_S else "MISS"
    cpu_verdict = "PASS" if med["total_cpu_s"] <= TARGET_S else "MISS"
    print(f"end to end {med['total_s']:.2f} s wall (target <= {TARGET_S:g} s: {verdict}), {med['total_cpu_s']:.2f} s "
          f"CPU ({cpu_verdict} on a quiet machine); peak RSS {rss:.0f} MiB (target <= {TARGET_RSS_MIB} MiB: "
          f"{'PASS' if rss <= TARGET_RSS_MIB else 'MISS'})", flush=True)
    kineto = ROOT / "benchmarks" / "kineto_load.py"
    if not args.no_kineto:
        if kineto.exists():
            print("\nKineto trace load (benchmarks/kineto_load.py):", flush=True)
            subprocess.run([sys.executable, str(kineto), "--repeats", "2"], cwd=ROOT, check=False)
        else:
            print("\nKineto trace load: benchmarks/kineto_load.py not present, skipped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
