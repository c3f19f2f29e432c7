"""Ingest benchmark: how fast the nvidia-smi reader turns a day of 64-GPU telemetry into the tidy table.

What it checks
    Issue 31's target for the readers: reading a 64-GPU x 24 h x 1 Hz `nvidia-smi --query-gpu ... --format=csv`
    log (5.5 M rows) takes at most 1.5x the time of a bare `pyarrow.csv.read_csv` of the same file, measured side
    by side in one run, with a peak RSS no larger than the bare parse's (issue 2 asked for 3x and 2 GB).

The exact command
    python benchmarks/ingest.py                       # generate /tmp/playbook-ingest-64x24h.csv once, then measure
    python benchmarks/ingest.py --gpus 8 --hours 1    # a quick run
    python benchmarks/ingest.py --damaged             # with error lines, [N/A] values, a restart, a cut last line

How to read the result
    One line per contender (median of --repeats runs, each in a fresh subprocess, bare and reader interleaved):
    read time (median and best wall clock), CPU seconds (all threads), rows/s and peak RSS (VmHWM of that
    subprocess, interpreter and libraries included), then the ratios reader / bare measured in this run and
    PASS/MISS of the median-wall ratio against the targets (1.5x; RSS <= the bare parse's). On a machine shared
    with other jobs the best-wall and CPU ratios are the steadier figures. The bare parse
    keeps units as strings ("97 %"); the reader also strips units, parses timestamps, maps N/A to NaN, checks
    every line and sorts into (host, gpu, time) order. Timings on a shared machine are noisy: rerun before
    believing a MISS.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_OUT = "/tmp/playbook-ingest-{gpus}x{hours:g}h{damaged}.csv"
HEADER = ("timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], power.draw [W], "
          "clocks.sm [MHz], temperature.gpu")
TARGET_RATIO = 1.5


def generate(path: Path, gpus: int, seconds: int, damaged: bool = False, seed: int = 0) -> int:
    """Write a synthetic nvidia-smi log (1 Hz, `gpus` GPUs) and return its data-row count.

    Utilization follows the oscillation of the motivating case: ~45 s near 90 %, ~15 s near 20 %, per GPU
    noise; memory, power, clocks and temperature move with it. Written an hour at a time with Arrow kernels.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    start = np.datetime64("2024-01-15T00:00:00", "s")
    index = pa.array([f" {g}" for g in range(gpus)])
    rows = 0
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(HEADER + "\n")
        per_chunk = max(1, min(3600, 8_000_000 // gpus))  # an hour at a time, fewer ticks for thousands of GPUs
        for chunk_start in range(0, seconds, per_chunk):  # (Arrow strings hold at most 2 GB per array)
            ticks = np.arange(chunk_start, min(seconds, chunk_start + per_chunk))
            n = len(ticks) * gpus
            stamps = (start + ticks).astype("datetime64[ms]") + rng.integers(0, 999, len(ticks)).astype(
                "timedelta64[ms]")
            stamp_text = pa.array(np.datetime_as_string(stamps, unit="ms")).cast(pa.string())
            stamp_text = pc.replace_substring(pc.replace_substring(stamp_text, "-", "/"), "T", " ")
            tick_of_row = np.repeat(np.arange(len(ticks)), gpus)
            phase = (np.repeat(ticks, gpus) % 60) < 45
            util = np.clip(np.where(phase, 90, 20) + rng.normal(0, 8, n), 0, 100).astype(np.int64)
            mem_util = (util * 0.6).astype(np.int64)
            mem = 60000 + (util * 150) + rng.integers(0, 2000, n)
            power_cw = (8000 + util * 550 + rng.integers(0, 3000, n)).astype(np.int64)  # centiwatts
            clock = np.where(util > 50, 1980, 1410)
            temp = 40 + util // 3

            def col(values, suffix=""):
                text = pa.array(values).cast(pa.string())
                return pc.binary_join_element_wise(" ", text, suffix, "") if suffix else \
                    pc.binary_join_element_wise(" ", text, "")
            power_text = pc.binary_join_element_wise(
                " ", pa.array(power_cw // 100).cast(pa.string()), ".",
                pc.utf8_lpad(pa.array(power_cw % 100).cast(pa.string()), 2, "0"), " W", "")
            columns = [
                stamp_text.take(pa.array(tick_of_row)),
                index.take(pa.array(np.tile(np.arange(gpus), len(ticks)))),
                col(util, " %"), col(mem_util, " %"), col(mem, " MiB"), power_text, col(clock, " MHz"), col(temp),
            ]
            if damaged:
                na = rng.random(n) < 0.001
                columns[5] = pc.if_else(pa.array(na), " [N/A]", columns[5])
            lines = pc.binary_join_element_wise(*columns, ",")
            text = "\n".join(lines.to_pylist()) + "\n"
            if damaged:
                cut = len(text) // 2
                cut = text.index("\n", cut) + 1
                text = (text[:cut] + "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n"
                        + text[cut:])
                if chunk_start == 3600 * 12:
                    text = HEADER + "\n" + text
            fh.write(text)
            rows += n
        if damaged:
            fh.write("2024/01/16 00:00:00.000, 0, 9")  # a cut last line
    return rows


CHILD = (Path(__file__).with_name("peak_rss.py")).read_text() + r"""
import json, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
import pyarrow as pa, pyarrow.csv as pcsv
if mode == "reader":
    from playbook.readers import nvidia_smi
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c0 = cpu()
t0 = time.perf_counter()
if mode == "bare":
    skip = lambda row: "skip"
    table = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(invalid_row_handler=skip))
    rows = table.num_rows
else:
    bundle = nvidia_smi.read(path)
    rows = len(bundle.telemetry)
elapsed = time.perf_counter() - t0
cpu_s = cpu() - c0
print(json.dumps({"seconds": elapsed, "cpu_s": cpu_s, "rows": rows,
                  "rss_mib": peak_rss_mib()}))
"""


def measure(mode: str, path: Path) -> dict:
    """Run one read in a fresh interpreter; returns seconds, rows, rss_mib."""
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} read failed:\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time the nvidia-smi reader against a bare pyarrow.csv.read_csv of the same file.",
        epilog="example:\n  python benchmarks/ingest.py --gpus 64 --hours 24 --repeats 3\n"
               "  python benchmarks/ingest.py --gpus 8 --hours 1          # quick",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=64, help="GPUs in the log (default 64)")
    parser.add_argument("--hours", type=float, default=24.0, help="hours of 1 Hz polling (default 24)")
    parser.add_argument("--rows", type=int, default=None, help="approximate data rows instead of --hours")
    parser.add_argument("--out", default=None, help="where the generated CSV goes (default /tmp/playbook-ingest-*.csv)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each contender; the median is shown")
    parser.add_argument("--damaged", action="store_true",
                        help="add nvidia-smi error lines, [N/A] values, a restart header and a cut last line")
    parser.add_argument("--regenerate", action="store_true", help="write the CSV even if it exists")
    args = parser.parse_args(argv)
    if args.gpus < 1 or args.repeats < 1:
        parser.error("--gpus and --repeats must be positive")
    seconds = int(round(args.rows / args.gpus)) if args.rows else int(round(args.hours * 3600))
    if seconds < 1:
        parser.error("need at least one polling tick")
    out = Path(args.out or DEFAULT_OUT.format(gpus=args.gpus, hours=seconds / 3600,
                                              damaged="-damaged" if args.damaged else ""))
    if args.regenerate or not out.exists():
        print(f"generating {out}: {args.gpus} GPUs x {seconds} s at 1 Hz ...", flush=True)
        t0 = time.perf_counter()
        rows = generate(out, args.gpus, seconds, damaged=args.damaged)
        print(f"  {rows:,} rows, {out.stat().st_size / 2**20:.0f} MiB in {time.perf_counter() - t0:.1f} s",
              flush=True)
    else:
        print(f"using {out} ({out.stat().st_size / 2**20:.0f} MiB; --regenerate to rewrite)", flush=True)
    results: dict[str, list[dict]] = {"bare": [], "reader": []}
    for r in range(args.repeats):
        for mode in (("bare", "reader") if r % 2 == 0 else ("reader", "bare")):
            res = measure(mode, out)
            results[mode].append(res)
            print(f"  run {r + 1}/{args.repeats} {mode:6s} {res['seconds']:7.2f} s wall {res['cpu_s']:7.2f} s CPU "
                  f"{res['rss_mib']:7.0f} MiB", flush=True)
    summary = {}
    for mode, runs in results.items():
        secs = statistics.median(r["seconds"] for r in runs)
        summary[mode] = {"seconds": secs, "cpu_s": statistics.median(r["cpu_s"] for r in runs),
                         "best_s": min(r["seconds"] for r in runs), "rows": runs[0]["rows"],
                         "rows_per_s": runs[0]["rows"] / secs, "rss_mib": max(r["rss_mib"] for r in runs)}
    ratio = summary["reader"]["seconds"] / summary["bare"]["seconds"]
    best_ratio = summary["reader"]["best_s"] / summary["bare"]["best_s"]
    cpu_ratio = summary["reader"]["cpu_s"] / summary["bare"]["cpu_s"]
    print()
    print(f"{'contender':28s} {'read s':>8s} {'best s':>8s} {'CPU s':>8s} {'rows/s':>12s} {'peak RSS':>10s} "
          f"{'rows':>11s}")
    for mode, label in (("bare", "pyarrow.csv.read_csv (bare)"), ("reader", "playbook nvidia_smi.read")):
        s = summary[mode]
        print(f"{label:28s} {s['seconds']:8.2f} {s['best_s']:8.2f} {s['cpu_s']:8.2f} {s['rows_per_s']:12,.0f} "
              f"{s['rss_mib']:7.0f} MiB {s['rows']:11,}")
    rss, bare_rss = summary["reader"]["rss_mib"], summary["bare"]["rss_mib"]
    print(f"\nratio reader/bare: median wall {ratio:.2f}x, best wall {best_ratio:.2f}x, CPU {cpu_ratio:.2f}x")
    print(f"ratio reader/bare = {ratio:.2f}x (target <= {TARGET_RATIO:g}x: {'PASS' if ratio <= TARGET_RATIO else 'MISS'})"
          f"; reader peak RSS {rss:.0f} MiB vs bare {bare_rss:.0f} MiB (target <= the bare parse's: "
          f"{'PASS' if rss <= bare_rss else 'MISS'})")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(load average {load:.1f} on {os.cpu_count()} CPUs: above the CPU count, wall times are inflated by "
          "other work and the CPU ratio is the steadier figure)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
