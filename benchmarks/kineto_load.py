"""Kineto trace load speed and memory: playbook's reader against a plain `json.load`, side by side.

What it checks: how fast `playbook.readers.kineto.read` turns a PyTorch-profiler trace into the tidy trace table
(MB of trace JSON per second, decompression included) and how much memory it needs (peak RSS), next to the
standard-library baseline `json.load(gzip.open(path))` that only parses the JSON into Python objects. Each
measurement runs in its own fresh subprocess (so peak RSS is that load's own), variants interleaved and repeated.

    python benchmarks/kineto_load.py                      # the largest reference trace (df_index_resolver, 53.7 MB)
    python benchmarks/kineto_load.py --repeats 5 path/to/rank0.pt.trace.json.gz

How to read it: one line per variant with the median MB/s of wall time and per CPU-second (the CPU figure holds
when other jobs share the cores; wall MB/s then drops for every variant alike, compare the "x json" ratio), the peak
RSS of the process, and "load RSS" = peak minus the RSS right before the load (interpreter + numpy/pandas imports,
the same for every variant). Targets (issue 3):
≥ 75 MB/s and load RSS ≤ 1.5 × the JSON size. `playbook` uses msgspec when it is installed and the standard library
otherwise; both are measured ("playbook (stdlib)" forces the fallback). Issue 31: playbook within 1.2x the wall of
the fastest JSON decode available to the project on the same file, in the same run — the faster of gzip +
`msgspec.json.decode` into Python objects and gzip + a typed msgspec decode into the reader's own event structs
(only the fields it reads; "msgspec typed"); the line "playbook / fastest decode" gives that ratio.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared" / "reference-traces" / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"
TYPED = "msgspec typed"
VARIANTS = ("json.load", "msgspec.json.decode", TYPED, "playbook", "playbook (stdlib)")
# Issue 31's anchor: the fastest JSON decode available to the project, of the same file in the same run — gzip +
# msgspec into plain Python objects, or gzip + msgspec typed into the reader's own structs (only the fields it
# reads: ph, cat, name, ts, dur, pid, tid, args.stream/correlation/bytes/name/labels), whichever is faster
ANCHORS = ("msgspec.json.decode", TYPED)
TARGET_ANCHOR_RATIO = 1.2
TARGET_MB_S = 75.0
TARGET_RSS_RATIO = 1.5

_CHILD = r"""
import json, sys, time, gzip, resource
import numpy, pandas  # the same imports for every variant: the baseline RSS includes them
sys.path.insert(0, {root!r})
import playbook.readers.kineto as kineto
import playbook.readers.kineto.decode as kineto_decode
variant, path = sys.argv[1], sys.argv[2]
before = peak_rss_mib()
t0, c0 = time.perf_counter(), time.process_time()
if variant in ("json.load", "msgspec.json.decode", "msgspec typed"):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        if variant == "json.load":
            doc = json.load(fh)
        elif variant == "msgspec typed":
            import msgspec
            class Trace(msgspec.Struct, gc=False):
                traceEvents: list[kineto_decode._Event] = []
            doc = {{"traceEvents": msgspec.json.decode(fh.read(), type=Trace).traceEvents}}
        else:
            import msgspec
            doc = msgspec.json.decode(fh.read())
    rows = len(doc.get("traceEvents", doc) if isinstance(doc, dict) else doc)
else:
    if variant == "playbook (stdlib)":
        kineto_decode._MSGSPEC = None
    rows = len(kineto.read(path).trace)
elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({{"variant": variant, "seconds": elapsed, "cpu_seconds": cpu, "rows": rows, "rss_before_mib": before,
                  "rss_peak_mib": peak_rss_mib()}}))
"""


def json_megabytes(path: Path) -> float:
    """Size of the (decompressed) trace JSON in MB (10^6 bytes)."""
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    n = 0
    with opener(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            n += len(chunk)
    return n / 1e6


def measure(variant: str, path: Path) -> dict:
    code = (ROOT / "benchmarks" / "peak_rss.py").read_text() + _CHILD.format(root=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code, variant, str(path)], capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_all(path: Path, repeats: int = 3, variants=VARIANTS, progress: bool = False) -> dict:
    """Load `path` `repeats` times per variant (interleaved, each in a fresh subprocess) and summarise.

    Returns {trace, json_mb, repeats, variants: {name: {median_s, mb_per_s, rss_peak_mib, load_rss_mib,
    load_rss_vs_json, rows, speed_vs_json_load}}}; benchmarks/diagnose.py may import and call this.
    """
    path = Path(path)
    variants = list(variants)
    mb = json_megabytes(path)
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    t0 = time.perf_counter()
    for i in range(repeats):
        order = variants[i % len(variants):] + variants[: i % len(variants)]  # rotate to spread drift
        for v in order:
            runs[v].append(measure(v, path))
            if progress:
                print(f"  [{time.perf_counter() - t0:5.1f} s] run {i + 1}/{repeats} {v}: "
                      f"{runs[v][-1]['seconds']:.2f} s", file=sys.stderr, flush=True)
    summary = {"trace": str(path), "json_mb": round(mb, 2), "repeats": repeats, "variants": {}}
    for v, rs in runs.items():
        secs = statistics.median(r["seconds"] for r in rs)
        cpu = statistics.median(r["cpu_seconds"] for r in rs)
        peak = max(r["rss_peak_mib"] for r in rs)
        load = max(r["rss_peak_mib"] - r["rss_before_mib"] for r in rs)
        summary["variants"][v] = {"median_s": round(secs, 3), "mb_per_s": round(mb / secs, 1),
                                  "cpu_s": round(cpu, 3), "mb_per_cpu_s": round(mb / cpu, 1),
                                  "rss_peak_mib": round(peak, 1), "load_rss_mib": round(load, 1),
                                  "load_rss_vs_json": round(load * 1.048576 / mb, 2), "rows": rs[0]["rows"]}
    if "json.load" in summary["variants"]:
        base = summary["variants"]["json.load"]["median_s"]
        for s in summary["variants"].values():
            s["speed_vs_json_load"] = round(base / s["median_s"], 2)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="example: python benchmarks/kineto_load.py --repeats 3")
    ap.add_argument("trace", nargs="?", default=str(DEFAULT_TRACE), help="a .json or .json.gz Kineto trace "
                    "(default: the largest reference trace)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per variant, interleaved (default 3)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma list from {', '.join(VARIANTS)}")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = ap.parse_args(argv)
    path = Path(args.trace)
    if not path.exists():
        print(f"kineto_load: {path}: no such trace (the reference traces live in ../shared/reference-traces)",
              file=sys.stderr)
        return 2
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        print(f"kineto_load: unknown variant(s) {', '.join(unknown) or '(none given)'}; choose from "
              f"{', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    summary = measure_all(path, args.repeats, variants, progress=True)
    mb = summary["json_mb"]
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"{path.name}: {mb:.1f} MB of trace JSON, {args.repeats} runs per variant (median time, max RSS)")
    print(f"{'variant':20s} {'s':>7s} {'MB/s':>7s} {'MB/cpu-s':>9s} {'x json':>7s} {'peak RSS':>9s} {'load RSS':>9s}"
          f" {'/JSON':>6s} {'rows':>8s}")
    for v, s in summary["variants"].items():
        print(f"{v:20s} {s['median_s']:7.2f} {s['mb_per_s']:7.1f} {s['mb_per_cpu_s']:9.1f}"
              f" {s.get('speed_vs_json_load', float('nan')):7.2f} {s['rss_peak_mib']:7.0f} Mi"
              f" {s['load_rss_mib']:7.0f} Mi {s['load_rss_vs_json']:6.2f} {s['rows']:8d}")
    pb = summary["variants"].get("playbook")
    anchors = {v: summary["variants"][v] for v in ANCHORS if v in summary["variants"]}
    if pb and anchors:
        name, fastest = min(anchors.items(), key=lambda kv: kv[1]["median_s"])
        ratio = pb["median_s"] / fastest["median_s"]
        cpu_ratio = pb["cpu_s"] / fastest["cpu_s"]
        print(f"playbook / fastest decode ({name}, same file, this run): {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU "
              f"(target <= {TARGET_ANCHOR_RATIO}x: {'PASS' if ratio <= TARGET_ANCHOR_RATIO else 'MISS'})")
    if pb:
        ok_speed = pb["mb_per_s"] >= TARGET_MB_S
        ok_rss = pb["load_rss_vs_json"] <= TARGET_RSS_RATIO
        print(f"targets: ≥ {TARGET_MB_S:.0f} MB/s {'met' if ok_speed else 'MISSED'}; load RSS ≤ "
              f"{TARGET_RSS_RATIO} × JSON {'met' if ok_rss else 'MISSED'} "
              f"(json.load rows = trace events incl. metadata/flows; playbook rows = kept complete events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
