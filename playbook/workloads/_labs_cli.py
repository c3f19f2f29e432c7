"""The command line shared by the lab workloads of notebooks 10-14 (torch-free, so `--help` is instant).

    python -m playbook.workloads.<lab> --variants no_fault,fault,fix --repeats 3 --out runs/<lab>

A lab module defines KNOBS (defaults), KNOB_HELP, VARIANTS (presets) and `run(run_dir, variant, **knobs)`;
`workload_cli` turns them into the argparse interface and the summary printout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def resolve_knobs(variants: dict[str, dict[str, Any]], variant: str, defaults: dict[str, Any],
                  overrides: dict[str, Any]) -> dict[str, Any]:
    """The knob values of one run: `defaults`, then explicit (non-None) overrides, then the variant's preset.

    A variant is defined by its preset (no_fault sets the fault's cost to zero, fix_workers uses 2 processes...):
    the knobs it sets are not overridden; overrides tune what it leaves open. Raises WorkloadError for an unknown
    variant or knob.
    """
    from playbook.errors import WorkloadError

    if variant not in variants:
        raise WorkloadError(f"unknown variant {variant!r}; choose from {', '.join(variants)}")
    unknown = set(overrides) - set(defaults)
    if unknown:
        raise WorkloadError(f"unknown knob(s) {', '.join(sorted(unknown))}; knobs: {', '.join(defaults)}")
    knobs = dict(defaults)
    knobs.update({k: v for k, v in overrides.items() if v is not None})
    knobs.update(variants[variant])
    return knobs


def _knob_type(value: Any) -> Any:
    if isinstance(value, bool):
        return None
    return type(value) if isinstance(value, (int, float, str)) else str


def workload_cli(name: str, doc: str, run: Any, variants: dict[str, dict[str, Any]], defaults: dict[str, Any],
                 knob_help: dict[str, str], argv: list[str] | None = None,
                 default_variants: tuple[str, ...] = ("no_fault", "fault", "fix")) -> int:
    """The `python -m playbook.workloads.<name>` entry point shared by the labs.

    Runs each chosen variant `--repeats` times (interleaved, see measure_variants) into OUT/<variant>-r<k>, prints
    throughput and step statistics per run, then a summary with ratios to no_fault and the command that diagnoses
    the fault's recording. `run(run_dir, variant, **knobs)` returns a RunResult.
    """
    import argparse
    import sys

    from playbook.analysis.lab_verdict import variant_summary
    from playbook.errors import PlaybookError
    from playbook.workloads.common import measure_variants

    first = default_variants[1] if len(default_variants) > 1 else default_variants[0]
    parser = argparse.ArgumentParser(
        prog=f"python -m playbook.workloads.{name}", description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(f"example:\n  python -m playbook.workloads.{name} --variants {','.join(default_variants)} "
                f"--repeats 3 --out runs/{name}\n  playbook diagnose runs/{name}/{first}-r0\n\n"
                f"variants (presets of the knobs below):\n"
                + "\n".join(f"  {v:<14} {', '.join(f'{k}={x}' for k, x in p.items()) or '(defaults)'}"
                            for v, p in variants.items())))
    parser.add_argument("--variants", default=",".join(default_variants),
                        help=f"comma-separated variants to run (default {','.join(default_variants)})")
    parser.add_argument("--repeats", type=int, default=1, help="runs per variant, interleaved (default 1)")
    parser.add_argument("--out", default=f"runs/{name}", help="directory for the run directories (default %(default)s)")
    knobs = parser.add_argument_group("knobs (tune what the variant's preset leaves open; the preset wins)")
    for knob, default in defaults.items():
        flag = "--" + knob.replace("_", "-")
        help_text = f"{knob_help.get(knob, knob)} (default {default!r})"
        if isinstance(default, bool):
            knobs.add_argument(flag, dest=knob, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        else:
            knobs.add_argument(flag, dest=knob, type=_knob_type(default), default=None, help=help_text)
    args = parser.parse_args(argv)
    overrides = {k: getattr(args, k) for k in defaults if getattr(args, k) is not None}
    chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
    try:
        for v in chosen:
            resolve_knobs(variants, v, defaults, overrides)
        if args.repeats < 1:
            raise PlaybookError("--repeats must be >= 1")
        out = Path(args.out)
        runs = measure_variants(
            lambda v, rep: run(out / f"{v}-r{rep}", v, **overrides).row(), chosen, repeats=args.repeats,
            progress=True)
    except PlaybookError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    baseline = "no_fault" if "no_fault" in chosen else chosen[0]
    summary = variant_summary(runs, "throughput", baseline=baseline)
    print(f"\nthroughput (samples/s) per variant, ratio to {baseline}:")
    print(summary.round(3).to_string())
    print(f"\nnext: playbook diagnose {out / (chosen[1] if len(chosen) > 1 else chosen[0])}-r0")
    return 0
