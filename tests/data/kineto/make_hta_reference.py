"""Compute Holistic Trace Analysis (HTA) reference figures for the HTA-parity test. NOT run by the tests.

HTA is deliberately not a dependency of the playbook. This script runs HTA itself, once, in a throwaway virtualenv,
on the reference traces in ../shared/reference-traces and writes tests/data/kineto/hta_reference.json, which
tests/analysis/test_kineto_analysis.py compares against playbook.analysis.kineto.

    python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis
    /tmp/hta-venv/bin/python tests/data/kineto/make_hta_reference.py \
        --traces ../shared/reference-traces --out tests/data/kineto/hta_reference.json

For every trace folder it records, per rank, HTA's `get_temporal_breakdown` (idle / compute / non-compute time, µs,
and their shares of the span from the first GPU event's start to the last one's end) and, per rank and stream,
`get_idle_time_breakdown` (host_wait / kernel_wait / other idle time, µs, consecutive_kernel_delay = 30 µs).
Raw µs values are stored unrounded, so the parity test can compare percentages to 0.1 percentage point.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

# Trace folders (relative to --traces) that HTA loads as one job each. cpu_only has no GPU events: skipped.
FOLDERS = [
    "hta/trace_filter",
    "hta/df_index_resolver",
    "hta/trace_diff/control",
    "hta/trace_diff/test",
    "hta/negative_queue_length_values_check",
    "hta/ns_resolution_trace",
    "hta/nccl_parser_config",
    "hta/critical_path/alexnet",
    "hta/amd_trace",
    "param-dlrm/dlrm_kineto.tar.gz",
]


def analyse(folder: str) -> dict:
    from hta.trace_analysis import TraceAnalysis

    analyzer = TraceAnalysis(trace_dir=folder)
    ranks = analyzer.t.get_ranks()
    temporal = analyzer.get_temporal_breakdown(visualize=False)
    idle, _ = analyzer.get_idle_time_breakdown(ranks=ranks, visualize=False, consecutive_kernel_delay=30)
    out: dict = {"ranks": [int(r) for r in ranks], "temporal": {}, "idle": {}}
    for row in temporal.to_dict("records"):
        out["temporal"][str(int(row["rank"]))] = {
            "idle_us": float(row["idle_time(us)"]),
            "compute_us": float(row["compute_time(us)"]),
            "non_compute_us": float(row["non_compute_time(us)"]),
            "span_us": float(row["kernel_time(us)"]),
        }
    for row in idle.to_dict("records"):
        per_rank = out["idle"].setdefault(str(int(row["rank"])), {})
        per_rank.setdefault(str(int(row["stream"])), {})[str(row["idle_category"])] = float(row["idle_time"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default="../shared/reference-traces", help="reference-traces folder")
    ap.add_argument("--out", default="tests/data/kineto/hta_reference.json", help="JSON file to write")
    args = ap.parse_args()
    import hta

    root = Path(args.traces)
    result = {"hta_version": getattr(hta, "__version__", None) or _version(), "consecutive_kernel_delay_us": 30,
              "traces": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for rel in FOLDERS:
            src = root / rel
            if rel.endswith(".tar.gz"):  # an archive of per-rank traces: unpack it
                dest = Path(tmp) / "dlrm"
                with tarfile.open(src) as tar:
                    tar.extractall(dest, filter="data")
                folder = str(next(p for p in dest.rglob("*") if p.is_dir()))
            else:
                # HTA loads every trace in a folder (recursively); copy the folder's own files only.
                dest = Path(tmp) / rel.replace("/", "_")
                dest.mkdir()
                for f in src.iterdir():
                    if f.is_file() and ".json" in f.name:
                        shutil.copy(f, dest / f.name)
                folder = str(dest)
            print(f"{rel} ...", file=sys.stderr, flush=True)
            result["traces"][rel] = analyse(folder)
    Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _version() -> str:
    from importlib.metadata import version

    return version("HolisticTraceAnalysis")


if __name__ == "__main__":
    os.environ.setdefault("HTA_LOG_LEVEL", "ERROR")
    sys.exit(main())
