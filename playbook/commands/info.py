"""`playbook info`: read telemetry files and folders and say what they hold, before any analysis.

Per table: rows; hosts, GPUs, samples per GPU, time span and median sampling interval (telemetry); ranks,
steps, phases and the median step time (steps); event kinds (events); and every warning the readers raised
(skipped rows with their reasons, synthetic times, guessed fields). `--json` prints the same as one JSON object.
Exit status: 0 when something was read, 1 when the inputs held no rows at all, 2 on an input error.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from playbook.analysis.inventory import has_content, render, summarize
from playbook.commands import TZ_HELP
from playbook.core.terminal import visible

HELP = "what telemetry files and folders hold: hosts, GPUs, samples, time span, interval, ranks, steps, warnings"
EXAMPLES = """  playbook info data/samples                            the embedded sample
  playbook info logs/node*.csv runs/r1 steps.jsonl      several inputs, mixed formats
  playbook info poll.txt --fields index,utilization.gpu,memory.used --interval 2
                                                        headerless nvidia-smi output polled every 2 s
  playbook info runs/r1 --json                          the same summary as JSON
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="telemetry files or folders (mixed freely)")
    parser.add_argument("--fields", metavar="LIST",
                        help="for headerless nvidia-smi CSV: the comma list given to --query-gpu")
    parser.add_argument("--interval", type=float, metavar="S",
                        help="sampling interval in seconds for inputs without timestamps (default 1)")
    parser.add_argument("--tz", default="UTC", metavar="ZONE", help=TZ_HELP)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args: argparse.Namespace) -> int:
    groups = unrelated_inputs(args.paths, fields=args.fields, interval_s=args.interval, tz=args.tz)
    summaries = [summarize(b) for _, b in groups]
    if args.json:
        doc = summaries[0] if len(summaries) == 1 else {"inputs": [{"input": name, **s} for (name, _), s in
                                                                   zip(groups, summaries, strict=True)]}
        print(json.dumps(doc, indent=2, default=str))
    elif len(summaries) == 1:
        print(visible(render(summaries[0])))
    else:
        print(f"{len(groups)} unrelated inputs (no overlap in time), each summarised on its own:")
        for (name, _), s in zip(groups, summaries, strict=True):
            print(visible(f"\n== {name}"))
            print(visible(render(s)))
    return 0 if any(has_content(s) for s in summaries) else 1


def unrelated_inputs(paths: list[str], **read_kw: Any) -> list[tuple[str, Any]]:
    """(name, Bundle) per unrelated input. A folder given alone whose subfolders are recordings that do not
    overlap in time (e.g. data/samples: a synthetic 64-GPU run and a real 8-GPU poll) is split into them, so
    their hosts, GPUs and means are not pooled; recordings that overlap in time (one run's per-host folders)
    stay one input. Anything else is read as one Bundle, as before."""
    from pathlib import Path

    from playbook.model import run_layout
    from playbook.readers import read_paths

    folder = Path(paths[0]) if len(paths) == 1 else None
    subdirs = []
    if folder is not None and folder.is_dir() and not run_layout.is_run_dir(folder):
        subdirs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    if len(subdirs) < 2 or any(p.is_file() and not p.name.lower().startswith("readme") for p in folder.iterdir()):
        return [(", ".join(map(str, paths)), read_paths(paths, **read_kw))]
    parts = [(str(p), read_paths([p], **read_kw)) for p in subdirs]
    spans = [_time_span(b) for _, b in parts]
    if any(s is None for s in spans) or not _disjoint(spans):
        return [(str(folder), read_paths(paths, **read_kw))]
    return sorted(parts, key=lambda nb: -len(nb[1].telemetry))  # the largest recording first


def _time_span(bundle) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    times = pd.concat([bundle.telemetry["time"], bundle.steps["time"]]).dropna()
    return (times.min(), times.max()) if len(times) else None


def _disjoint(spans: list[tuple[pd.Timestamp, pd.Timestamp]]) -> bool:
    spans = sorted(spans)
    return all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))
