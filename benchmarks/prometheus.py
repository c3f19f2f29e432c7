"""Prometheus at fleet scale: 512 GPUs × 24 h at 15 s, backfilled into a real Prometheus, diagnosed from it.

What it checks
    `playbook diagnose prometheus://...` on a day of a 512-GPU job (64 hosts × 8, ≈ 2.95 M samples per metric)
    as dcgm-exporter's default counters would hold it: GPU_UTIL, POWER_USAGE, SM_CLOCK, FB_USED, GPU_TEMP and
    XID_ERRORS, from playbook.labs.synthetic's labeled "oscillation" fleet (period 10 min). The TSDB is built once with
    `promtool tsdb create-blocks-from openmetrics` and kept in --cache (reruns skip the backfill). The client runs
    in a child process so its peak RSS is its own: query time (HTTP + decode into the telemetry table), analysis
    time (playbook.diagnosis.diagnose) and peak RSS (ru_maxrss). Target: ≤ 30 s and ≤ 2 GB on 2 cores.

The exact command
    python benchmarks/prometheus.py                    # first run ~10 min (backfill), then ~1 min
    python benchmarks/prometheus.py --gpus 64 --hours 6   # a quick look

How to read the result
    One line per figure, then the diagnosis' first line (it should say periodic, period ≈ 600 s, synchronized).
    The server's own CPU is not in the client's figures; on a 2-core machine the two compete, as they would on a
    small monitoring host. Needs `prometheus` and `promtool` on PATH (Debian: apt-get install prometheus).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

CHILD = r"""
import json, resource, sys, time
from playbook.sources import prometheus
from playbook.diagnosis import diagnose
url, since, step, until = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
t0, c0 = time.perf_counter(), time.process_time()
bundle = prometheus.read(url, since_s=since, step_s=step, until=until)
t1, c1 = time.perf_counter(), time.process_time()
d = diagnose(bundle)
t2, c2 = time.perf_counter(), time.process_time()
o = d.oscillation
print(json.dumps({"query_s": t1 - t0, "analysis_s": t2 - t1, "rows": len(bundle.telemetry),
                  "query_cpu_s": c1 - c0, "analysis_cpu_s": c2 - c1,
                  "gpus": len(d.gpus), "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "oscillation": o, "top": d.hypotheses[0]["id"] if d.hypotheses else None,
                  "warnings": bundle.warnings[:3]}))
"""


def _cpu_s(pid: int) -> float:
    """user + system CPU seconds of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", type=int, default=512, help="GPUs (8 per host; default 512)")
    ap.add_argument("--hours", type=float, default=24.0, help="hours of history (default 24)")
    ap.add_argument("--step", type=float, default=15.0, help="scrape interval and query step, s (default 15)")
    ap.add_argument("--cache", default="/tmp/playbook-bench-prometheus", help="where the TSDB is kept")
    args = ap.parse_args(argv)
    from promserver import PROMETHEUS, PROMTOOL, SKIP_REASON, PromServer, cached_tsdb

    from playbook.labs.synthetic import simulate_telemetry

    if PROMETHEUS is None or PROMTOOL is None:
        print(f"skipped: {SKIP_REASON}")
        return 0
    hosts = max(1, args.gpus // 8)
    span = args.hours * 3600.0
    end = 1_767_225_600.0  # 2026-01-01T00:00Z: fixed, so the cached TSDB stays valid
    tag = f"{hosts * 8}gpu-{args.hours:g}h-{args.step:g}s"
    cache = Path(args.cache) / tag
    tsdb = cache / "tsdb"
    if not (tsdb / "done").exists():
        start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end - span))
        frame, _ = simulate_telemetry("oscillation", hosts=hosts, gpus_per_host=8, duration_s=span,
                                      interval_s=args.step, period_s=600.0, start=start)
        cached_tsdb(cache, frame, ("util_pct", "power_w", "sm_clock_mhz", "mem_used_mib", "temp_c"))
    with PromServer(tsdb, cache, ready_timeout_s=600) as prom:
        server0 = _cpu_s(prom.proc.pid)
        proc = subprocess.run([sys.executable, "-c", CHILD, prom.url, str(span), str(args.step), str(end)],
                              capture_output=True, text=True, cwd=ROOT, timeout=3600)
        server_cpu = _cpu_s(prom.proc.pid) - server0
    load = os.getloadavg()[0]
    if proc.returncode != 0:
        print(proc.stderr[-3000:])
        return 1
    r = json.loads(proc.stdout)
    total = r["query_s"] + r["analysis_s"]
    samples = r["rows"]
    print(f"fleet: {r['gpus']} GPUs × {args.hours:g} h at {args.step:g} s = {samples / 1e6:.2f} M rows "
          f"(≈ {samples / max(r['gpus'], 1):.0f} per GPU), 6 metrics")
    print(f"query (HTTP + decode into the telemetry table): {r['query_s']:.1f} s "
          f"({samples / r['query_s'] / 1e6:.2f} M rows/s)")
    print(f"  CPU: client {r['query_cpu_s']:.1f} s, Prometheus server {server_cpu:.1f} s")
    print(f"analysis (diagnose): {r['analysis_s']:.1f} s (CPU {r['analysis_cpu_s']:.1f} s)")
    print(f"total: {total:.1f} s (target ≤ 30 s: {'met' if total <= 30 else 'NOT met'}); peak RSS "
          f"{r['peak_rss_mib']:.0f} MiB (target ≤ 2048 MiB: {'met' if r['peak_rss_mib'] <= 2048 else 'NOT met'})")
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} at the end (wall times stretch with load; "
          "CPU seconds do not)")
    o = r["oscillation"]
    period = o.get("period_s")
    print(f"diagnosis: periodic={o.get('periodic')}, period {period if period is None else round(period)} s "
          f"(truth 600 s), synchrony {o.get('synchrony')}, top cause {r['top']}")
    if r["warnings"]:
        print("warnings:", *r["warnings"], sep="\n  ")
    return 0 if math.isfinite(total) else 1


if __name__ == "__main__":
    sys.exit(main())
