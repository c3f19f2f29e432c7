"""`playbook compare GOOD BAD`: why a run that used to sit at 100% is now spotty — what changed between a good
and a bad run, whether the difference is bigger than the noise, and which change explains it.

What it checks
  Throughput (per token when both sides log tokens, named in the unit their meta.json gives as tokens_unit —
  samples/s for the labs —, else steps/s; mean GPU utilization when neither side has a step log) with a 95% interval that accounts for autocorrelated steps and, with repeats, run-to-run variance;
  the step-time distributions; the causes the slowdown splits into (data, h2d, collective, checkpoint/eval,
  recompiles, GC, time between steps, slower compute, one slow rank) with each one's share; event counts and
  cadence; the utilization pattern of each side (playbook diagnose); and the environment / configuration diff
  (versions, GPUs, NCCL_* / CUDA_* / OMP_* / TORCH_* variables, CPU count, compile cache state, command line,
  recorded settings), each changed item linked to the causes it can produce. Analysis:
  playbook.diagnosis.regression.

The exact command
  playbook compare runs/good runs/bad
  playbook compare --good runs/g1 --good runs/g2 --bad runs/b1 --bad runs/b2      repeats: run-to-run variance
  playbook compare runs/good runs/bad --json > diff.json
  GOOD and BAD are run directories (`playbook record`, the probes, the labs) or anything `playbook diagnose`
  reads. A folder holding several run directories is several runs of one side; `--good P [P ...]` names one run
  each time it is given (the files of one run go together after one flag).

How to read the result
  "Verdict" says slower / faster / no significant difference, with the throughput ratio and its interval. With
  one run a side the interval holds only the noise within each run: repeat runs before trusting a small change.
  "Likely causes" are ranked by the share of the slowdown they account for × confidence; each lists its evidence
  and the changed settings linked to it ("changed with it"). Two changes linked to the same cause (e.g. a cold
  compile cache and a new padding setting, both → recompilation) cannot be told apart by one pair of runs:
  revert one at a time and compare again (notebooks/40_regression_compare.ipynb does exactly that).
"""

from __future__ import annotations

import math
from pathlib import Path

from playbook.commands import TZ_HELP, emit
from playbook.core.errors import InputError, PlaybookError

HELP = "why BAD is slower than GOOD: throughput vs noise, phases, events, utilization pattern, environment diff"
EXAMPLES = """\
  playbook compare runs/good runs/bad                        two run directories
  playbook compare runs/good runs/bad --json > diff.json     one JSON object on stdout
  playbook compare --good runs/g1 --good runs/g2 --bad runs/b1 --bad runs/b2    repeats: run-to-run variance
  playbook compare --good old/node*.csv old/steps.jsonl --bad new/node*.csv new/steps.jsonl   logs of one run each
"""


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="*", metavar="GOOD BAD",
                        help="the good run and the bad run (a run directory, a file, or a folder of run directories)")
    parser.add_argument("--good", action="append", nargs="+", metavar="PATH", default=None,
                        help="the paths of one good run (repeat the flag for more runs)")
    parser.add_argument("--bad", action="append", nargs="+", metavar="PATH", default=None,
                        help="the paths of one bad run (repeat the flag for more runs)")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    parser.add_argument("--fields", default=None,
                        help="the --query-gpu list of headerless nvidia-smi CSVs, e.g. index,utilization.gpu")
    parser.add_argument("--interval", type=float, default=None, metavar="S",
                        help="polling interval in seconds, for inputs without timestamps")
    parser.add_argument("--tz", default="UTC", metavar="ZONE", help=TZ_HELP)
    parser.add_argument("--boot", type=int, default=2000, metavar="N", help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap random seed")


def expand_side(path: str) -> list[list[str]]:
    """The runs one positional GOOD/BAD path holds: a folder of run directories is one run per directory."""
    from playbook.model import run_layout

    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file or directory")
    if p.is_dir() and not run_layout.is_run_dir(p):
        children = sorted(c for c in p.iterdir() if c.is_dir() and run_layout.is_run_dir(c))
        if children:
            return [[str(c)] for c in children]
    return [[path]]


def read_side(runs: list[list[str]], fields: str | None = None, interval_s: float | None = None, name: str = "",
              tz: str = "UTC"):
    """One Bundle per run (each run: its list of paths)."""
    from playbook.readers import read_paths

    out = []
    for paths in runs:
        bundle = read_paths(paths, fields=fields, interval_s=interval_s, tz=tz)
        if bundle.is_empty():
            raise InputError(f"{', '.join(paths)}: nothing readable in this {name} run")
        out.append(bundle)
    return out


def run(args) -> int:
    if args.interval is not None and not (math.isfinite(args.interval) and args.interval > 0):
        raise InputError(f"--interval must be a positive number of seconds, not {args.interval:g}")
    if args.boot < 100:
        raise InputError(f"--boot must be at least 100 resamples, not {args.boot}")
    if args.runs and (args.good or args.bad):
        raise InputError("give either GOOD BAD or --good/--bad, not both")
    if args.runs:
        if len(args.runs) != 2:
            raise InputError(f"expected two paths, GOOD and BAD, got {len(args.runs)}")
        good_runs, bad_runs = expand_side(args.runs[0]), expand_side(args.runs[1])
    else:
        if not args.good or not args.bad:
            raise InputError("name a good and a bad run: playbook compare GOOD BAD (or --good PATH --bad PATH)")
        good_runs, bad_runs = [list(g) for g in args.good], [list(b) for b in args.bad]
    from playbook.diagnosis.regression.verdict import compare_runs

    good = read_side(good_runs, args.fields, args.interval, "GOOD", args.tz)
    bad = read_side(bad_runs, args.fields, args.interval, "BAD", args.tz)
    try:
        result = compare_runs(good, bad, n_boot=args.boot, seed=args.seed)
    except ValueError as exc:
        raise PlaybookError(str(exc)) from exc
    if result.mode == "none":
        raise InputError(f"{args.runs[0] if args.runs else 'GOOD'} vs {args.runs[1] if args.runs else 'BAD'}: "
                         "nothing to compare — each side needs a step log or GPU telemetry")
    from playbook.diagnosis.regression.text import comparison_text

    return emit(result, args.json, comparison_text)
