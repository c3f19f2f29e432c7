"""`playbook report`: execute notebooks headlessly with papermill into a report folder with an index.html.

With PATHs the triage notebook diagnoses those inputs; with none, each embedded sample in data/samples/ (the
64-GPU synthetic swing first, then the real 8-GPU dflash poll), one triage page each.
`--labs` adds lab notebooks (`all` = every notebook); `--quick` passes each notebook's quick parameters.
The folder (default reports/<UTC time>-<name>/) holds the executed notebooks, an HTML export of each without its
input cells, summary.json (verdicts, key figures, per-cell durations, errors) and index.html.
Exit status: 0 when every notebook ran, 1 when one failed (its partial output is kept in the report).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from playbook.commands import TZ_HELP

HELP = "batch report: execute the triage (and lab) notebooks headlessly into reports/<run-id>/ with an index.html"
EXAMPLES = """  playbook report                               triage of the embedded samples, into reports/<run-id>/
  playbook report logs/node*.csv steps.jsonl    triage of your own run's logs
  playbook report --labs all --quick            every notebook with quick parameters (what `make report` runs)
  playbook report --labs data_starvation 13 --out /tmp/rep   two labs plus triage, into /tmp/rep
  playbook report prometheus://prom:9090 --since 6h           triage of dcgm-exporter series from Prometheus
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="telemetry files or folders for the triage notebook (default: the embedded sample)")
    parser.add_argument("--fields", metavar="LIST",
                        help="nvidia-smi --query-gpu list for headerless PATHs (as in `playbook diagnose`)")
    parser.add_argument("--interval", type=float, metavar="S",
                        help="polling interval in seconds for PATHs without timestamps")
    parser.add_argument("--tz", default="UTC", metavar="ZONE", help=TZ_HELP)
    parser.add_argument("--out", metavar="DIR", help="report folder (default: reports/<UTC time>-<name>)")
    parser.add_argument("--labs", nargs="+", metavar="NAME", default=[],
                        help="also run these notebooks: 'all', or names such as 10_data_starvation, "
                             "data_starvation or 10 (see `playbook labs`)")
    parser.add_argument("--quick", action="store_true", help="use each notebook's quick parameters")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="notebooks executed at once (default 1, or 2 with --quick: a quick batch is a smoke "
                             "run; timing-based lab verdicts are steadier with --jobs 1)")
    parser.add_argument("--timeout", type=float, default=600, metavar="S",
                        help="seconds one cell may run before it counts as failed (default 600)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    from playbook import sources

    sources.add_arguments(parser)  # --since, --until, --step, --match for prometheus:// inputs


def run(args: argparse.Namespace) -> int:
    from playbook.report import catalog, runner
    from playbook.sources import is_url

    root = catalog.repo_root()  # once: where notebooks/ and data/samples/ are, and where kernels start

    if any(is_url(p) for p in args.paths):  # fetched once into a run directory the notebook reads
        from playbook.sources import fleet_screen

        args.paths = fleet_screen.save_inputs(args.paths, args, Path(args.out or "reports") / "inputs")
    jobs = runner.plan(args.paths, args.labs, args.quick, fields=args.fields, interval_s=args.interval, tz=args.tz,
                       demo=not args.paths and not args.labs, root=root)
    if args.labs == ["all"]:
        short = "all-quick" if args.quick else "all"
    elif args.paths:
        short = Path(args.paths[0].rstrip("/")).stem or "inputs"
    else:
        short = "labs" if args.labs else "sample"
    run_name = runner.run_id(short)
    out = Path(args.out) if args.out else Path("reports") / run_name
    if args.jobs is None:
        args.jobs = min(2, os.cpu_count() or 1) if args.quick else 1
    parameters = {"paths": [str(Path(p).resolve()) for p in args.paths], "labs": args.labs,
                  "quick": args.quick, "jobs": args.jobs, "timeout_s": args.timeout,
                  "notebooks": [j.name for j in jobs]}
    print(f"playbook report: {len(jobs)} notebook(s) -> {out}/", file=sys.stderr)
    t0 = time.perf_counter()
    summary = runner.run_batch(jobs, out, parameters=parameters, run_name=run_name, workers=args.jobs,
                               timeout_s=args.timeout, progress=not args.no_progress, cwd=root)
    elapsed = time.perf_counter() - t0
    for nb in summary["notebooks"]:
        verdict = (nb.get("verdict") or {}).get("status", "no verdict")
        line = f"  {nb['notebook']:<28} {nb['status']:<6} {verdict:<13} {nb['duration_s']:6.1f} s"
        if nb.get("error"):
            line += f"  {nb['error']['name']}: {_first_line(nb['error']['message'])}"
        print(line)
    c = summary["counts"]
    index = out / "index.html"
    print(f"report: {os.path.relpath(index) if not out.is_absolute() else index} "
          f"({c['ok']} ok, {c['error']} failed, {elapsed:.0f} s)")
    return 1 if c["error"] else 0


def _first_line(text: str) -> str:
    line = next((ln for ln in str(text).splitlines() if ln.strip()), "")
    return line[:120]
