"""Fleet screen vs raw pull, side by side, against a real Prometheus holding a backfilled fleet.

What it checks
    promserver.culprit_fleet at GPUS × HOURS at the scrape interval STEP (default 2,048 GPUs × 24 h at 30 s,
    dcgm-exporter's default collect interval: 5.9 M samples a metric; utilization, power, SM clock and the XID
    gauge; 8 culprits), backfilled once with promtool into --cache. In one process, one after the other against the same
    server: the fleet screen (playbook.sources.fleet_screen.measure: the summaries, then raw series for the flagged
    GPUs and a seeded sample of 64) and the raw pull of everything (prometheus.pull). Printed side by side: HTTP
    queries, rows (points or summary values received), bytes (response bodies), wall and client CPU time, the
    server's CPU; then whether the screen's flagged GPUs are the fleet's culprits and, with --diagnose, the ones the
    full raw analysis names.

The model for 10,000 GPUs × 7 days at 15 s (40,321 steps a series; 5 gauges and the XID gauge, as dcgm-exporter's
defaults are usually kept), from the bytes per row and CPU per point this run measures (printed at the end):
    raw pull: 10,000 × 40,320 × 5 = 2.02 G points, 1 + 6 × 4 (chunks of 11,000 steps) = 25 queries (each answer
    ~10,000 series × 11,000 points, several GB, so in practice split by series as well), ~20 B a point as JSON:
    ~40 GB; and this client refuses it (10,000 × 40,321 cells a metric is past prometheus.MAX_CELLS). The screen:
    1 + 7 summary queries (count, mean, low decile, stddev, busy clock, power, XID) + 21 drop pieces (10,000 series
    × 40,321 steps / 20 M points a subquery) = 29 queries of ≤ 10,000 rows: ≤ 0.27 M rows (the XID and drop
    queries answer only for GPUs that have them), ~170 B a row: ≤ 50 MB; then the raw series of the flagged GPUs
    (1% flagged: 100) and the sample (64): 164 × 40,320 × 5 = 33 M points, 1 + 6 × 4 queries, ~0.66 GB. Screen
    total ≈ 1.7% of the raw rows and bytes. The server still scans every sample (seven passes over utilization,
    one each over clock and power), but where the compressed data lives and without encoding 2 G points as JSON
    or the client decoding them.

The exact command
    nice -n 10 python benchmarks/fleet_screen.py --diagnose  # first run builds the TSDB (~8 min here), then ~1 min
    nice -n 10 python benchmarks/fleet_screen.py --gpus 64 --hours 3 --step 15 --diagnose   # a quick look

How to read the result
    Absolute times were measured on a 2-core machine shared with other work: compare the two columns, measured one
    after the other in one process; rows, queries and bytes do not depend on load. Needs `prometheus` and `promtool`
    on PATH (Debian: apt-get install prometheus).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

END = 1_767_225_600.0  # 2026-01-01T00:00Z: fixed, so the cached TSDB stays valid
COLUMNS = ("util_pct", "power_w", "sm_clock_mhz")


def build(cache: Path, gpus: int, hours: float, step: float) -> Path:
    """The backfilled TSDB of promserver.culprit_fleet (kept in `cache`; rebuilt only when absent)."""
    from promserver import cached_tsdb, culprit_fleet

    if (cache / "tsdb" / "done").exists():
        return cache / "tsdb"
    frame, _truth, xids = culprit_fleet(max(1, gpus // 8), hours * 3600.0, step, END)
    return cached_tsdb(cache, frame, COLUMNS, xids=xids)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", type=int, default=2048)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--step", type=float, default=30.0)
    ap.add_argument("--cache", default="/tmp/playbook-bench-fleet-screen")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--diagnose", action="store_true", help="also run the full analysis on both pulls")
    args = ap.parse_args(argv)
    tag = f"{args.gpus}gpu-{args.hours:g}h-{args.step:g}s"
    tsdb = build(Path(args.cache) / tag, args.gpus, args.hours, args.step)
    if args.build_only:
        return 0
    return compare(tsdb, args)


def _cpu_s(pid: int) -> float:
    """user + system CPU seconds of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def compare(tsdb: Path, args) -> int:
    """Screen, then raw pull, against one server; the table and the model."""
    from promserver import PromServer, culprit_fleet

    from playbook.sources import fleet_screen, prometheus

    window = prometheus.Window.last(args.hours * 3600.0, args.step, END)
    culprits = {i for ids in (culprit_fleet(max(1, args.gpus // 8), 3 * args.step, args.step, END)[1]).values()
                for i in ids}
    with PromServer(tsdb, tsdb.parent, ready_timeout_s=600) as prom:
        cpu0, srv0 = time.process_time(), _cpu_s(prom.proc.pid)
        bundle, s, wall_screen = fleet_screen.measure(prom.url, window)
        cpu1, srv1 = time.process_time(), _cpu_s(prom.proc.pid)
        t = time.perf_counter()
        client = prometheus._Client(prom.url)
        raw, raw_points = prometheus.pull(client, window, None, prometheus.metric_names(client, window, None))
        wall_raw = time.perf_counter() - t
        cpu2, srv2 = time.process_time(), _cpu_s(prom.proc.pid)
    screen_rows = s.rows + s.pull_rows
    screen_bytes = s.bytes + s.pull_bytes
    gpus = len(s.table)
    print(f"fleet: {gpus} GPUs × {args.hours:g} h at {args.step:g} s ({window.steps:,} steps), "
          f"{len(s.flagged)} flagged, {len(s.picked)} pulled raw (flagged + sample); load average "
          f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    print(f"{'':<24}{'screen':>16}{'raw pull':>16}{'ratio':>10}")
    for name, a, b in (("queries (HTTP)", s.queries + s.pull_queries + 1, client.requests),
                       ("rows received", screen_rows, raw_points),
                       ("bytes received", screen_bytes, client.bytes_in),
                       ("wall s", wall_screen, wall_raw), ("client CPU s", cpu1 - cpu0, cpu2 - cpu1),
                       ("server CPU s", srv1 - srv0, srv2 - srv1)):
        fmt = "{:>16,.0f}" if isinstance(a, int) else "{:>16,.2f}"
        print(f"{name:<24}" + fmt.format(a) + fmt.format(b) + f"{a / b if b else float('nan'):>10.3f}")
    print(f"  screen: summaries {s.queries} queries, {s.rows:,} rows, {s.bytes:,} B; targeted raw pull "
          f"{s.pull_queries} queries, {s.pull_rows:,} rows, {s.pull_bytes:,} B; its raw estimate "
          f"{s.raw_rows:,} rows, {s.raw_bytes:,} B")
    print(f"flagged = the fleet's culprits: {set(s.flagged) == culprits} ({sorted(s.flagged)})")
    if args.diagnose:
        from playbook.diagnosis import diagnose

        def named(b) -> set[str]:
            d = diagnose(b)
            ev = b.events
            return ({g["id"] for g in d.gpus if g["status"] != "ok"} | set(d.detail["oscillation"].swinging)
                    | {f"{h}:{x.split(':')[0].split()[-1]}" for h, x in zip(ev["host"], ev["detail"], strict=True)})

        t = time.perf_counter()
        full = named(raw)
        t_full = time.perf_counter() - t
        t = time.perf_counter()
        part = named(bundle)
        print(f"raw analysis of everything names the flagged: {full == set(s.flagged)} ({t_full:.1f} s); of the "
              f"screened pull: {part == set(s.flagged)} ({time.perf_counter() - t:.1f} s)")
    samples = float(s.table["samples"].sum())  # utilization samples the summaries scanned
    model(screen_bytes_per_row=s.bytes / max(s.rows, 1), raw_bytes_per_point=client.bytes_in / max(raw_points, 1),
          server_s_per_sample=(srv1 - srv0) / samples, raw_server_s_per_point=(srv2 - srv1) / raw_points,
          raw_client_s_per_point=(cpu2 - cpu1) / raw_points)
    return 0


def model(screen_bytes_per_row: float, raw_bytes_per_point: float, server_s_per_sample: float,
          raw_server_s_per_point: float, raw_client_s_per_point: float, gpus: int = 10_000, days: float = 7.0,
          step: float = 15.0, gauges: int = 5, flagged_share: float = 0.01) -> None:
    """The 10,000 GPUs × 7 days model of the docstring, with this run's bytes per row and per point."""
    from playbook.sources import fleet_screen, prometheus

    window = prometheus.Window(0.0, days * 86400.0, step)
    chunks = len(window.chunks())
    raw_points = gpus * (window.steps - 1) * gauges
    pieces = len(window.chunks(max(1, fleet_screen.SUBQUERY_POINTS // gpus)))
    summary_rows = 6 * gpus + pieces * gpus  # at most: XID and drops answer only for the GPUs that have them
    pulled = int(gpus * flagged_share) + fleet_screen.SAMPLE_GPUS
    pull_points = pulled * (window.steps - 1) * gauges
    q_raw, q_screen = 1 + (gauges + 1) * chunks, 1 + 7 + pieces + 1 + (gauges + 1) * chunks
    b_raw = raw_points * raw_bytes_per_point
    b_screen = summary_rows * screen_bytes_per_row + pull_points * raw_bytes_per_point
    print(f"model, {gpus:,} GPUs × {days:g} d at {step:g} s, {gauges} gauges + XID, {flagged_share:.0%} flagged + "
          f"{fleet_screen.SAMPLE_GPUS} sampled ({raw_bytes_per_point:.1f} B a raw point, {screen_bytes_per_row:.0f} B "
          "a summary row, as measured above):")
    print(f"  raw pull: {q_raw} queries, {raw_points / 1e9:.2f} G rows, {b_raw / 1e9:.1f} GB")
    print(f"  screen:   {q_screen} queries, ≤ {(summary_rows + pull_points) / 1e6:.1f} M rows "
          f"({summary_rows / 1e6:.2f} M summaries + {pull_points / 1e6:.1f} M raw), {b_screen / 1e9:.2f} GB "
          f"({(summary_rows + pull_points) / raw_points:.1%} of the rows, {b_screen / b_raw:.1%} of the bytes)")
    samples = gpus * (window.steps - 1)
    print(f"  CPU at this run's rates: screen server {samples * server_s_per_sample / 60:.0f} min (summaries; "
          f"they scan every utilization sample) + {pull_points * raw_server_s_per_point / 60:.1f} min (targeted "
          f"pull); raw pull server {raw_points * raw_server_s_per_point / 60:.0f} min and client "
          f"{raw_points * raw_client_s_per_point / 60:.0f} min decoding; the raw grid, {gpus:,} × {window.steps:,} "
          f"= {gpus * window.steps / 1e6:.0f} M cells a metric, is past the client's MAX_CELLS "
          f"({prometheus.MAX_CELLS / 1e6:.0f} M): a raw pull of that fleet is refused, the screen is the way")


if __name__ == "__main__":
    sys.exit(main())
