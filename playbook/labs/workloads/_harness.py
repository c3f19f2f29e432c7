"""The one command-line harness of the labs: a config dataclass per lab, whose fields carry their help text, becomes
the lab's argparse interface (with --help and an example) and the notebook's parameter docs. torch-free, so
`python -m playbook.labs.workloads.<lab> --help` is instant.

    @dataclass
    class Config:
        steps: int = knob(40, "timed training steps")
        check_cycles: bool = knob(True, "appendix: GC memory growth", cli=False)   # a notebook-only knob

    parser = lab_parser(MODULE, __doc__, ["python -m playbook.labs.workloads.x --steps 30"], "playbook diagnose runs/x",
                        Config)
    cfg = Config(**config_kwargs(Config, parser.parse_args(argv)))

Labs whose variants are presets of the knobs (notebooks 10-14) use `variant_cli`, which also runs the variants
`--repeats` times (interleaved) and prints one summary table.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def knob(default: Any, help: str, *, cli: bool = True, flag: str | None = None,
         choices: Iterable[Any] | None = None) -> Any:
    """A config field with its help text. `cli=False`: a notebook-only knob (an appendix switch), no flag;
    `flag`: the option's name when not --<field-name-with-dashes>."""
    meta = {"help": help, "cli": cli, "flag": flag, "choices": tuple(choices) if choices else None}
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass
class LoopKnobs:
    """The knobs every single-process training lab shares (its config subclasses this)."""

    device: str = knob("auto", "auto | cpu | cuda[:N]")
    torch_threads: int = knob(1, "torch intra-op threads on CPU (0: torch's default)")
    seed: int = knob(0, "random seed")
    sample_hz: float = knob(10.0, "telemetry sampling rate (Hz)")


@dataclasses.dataclass
class RunOptions:
    """What the harness adds to every lab: which variants, how often, where the recordings go, how many ranks."""

    variants: str = knob("", "comma-separated variants to run (default: the lab's)")
    repeats: int = knob(1, "runs per variant, interleaved (drift hits every variant alike)")
    out_dir: str = knob("runs", "directory for the run directories", flag="--out")
    run_dir: str = knob("runs", "directory for the run directories", cli=False)
    nproc: int = knob(2, "ranks to spawn when not started by torchrun", cli=False)


def fields(config: type, cli_only: bool = False) -> list[dataclasses.Field]:
    """The config's fields (only those with a command-line flag when `cli_only`)."""
    return [f for f in dataclasses.fields(config) if not cli_only or f.metadata.get("cli", True)]


def defaults(config: type) -> dict[str, Any]:
    """{field: default} of the fields that have a flag (a run's knobs; notebook-only knobs left out)."""
    return {f.name: f.default for f in fields(config, cli_only=True)}


def help_text(f: dataclasses.Field) -> str:
    return str(f.metadata.get("help") or f.name.replace("_", " "))


def parameter_docs(config: type) -> str:
    """The config as a Markdown table (knob, default, meaning): the notebook's parameter docs."""
    rows = [f"| `{f.name}` | `{f.default!r}` | {help_text(f)} |" for f in fields(config)]
    return "\n".join(["| knob | default | meaning |", "|---|---|---|", *rows])


def resolve_knobs(variants: dict[str, dict[str, Any]], variant: str, knob_defaults: dict[str, Any],
                  overrides: dict[str, Any]) -> dict[str, Any]:
    """The knob values of one run: the defaults, then explicit (non-None) overrides, then the variant's preset.

    A variant is defined by its preset (no_fault sets the fault's cost to zero, fix_workers uses 2 processes...):
    the knobs it sets are not overridden; overrides tune what it leaves open. Raises WorkloadError for an unknown
    variant or knob.
    """
    from playbook.core.errors import WorkloadError

    if variant not in variants:
        raise WorkloadError(f"unknown variant {variant!r}; choose from {', '.join(variants)}")
    unknown = set(overrides) - set(knob_defaults)
    if unknown:
        raise WorkloadError(f"unknown knob(s) {', '.join(sorted(unknown))}; knobs: {', '.join(knob_defaults)}")
    knobs = dict(knob_defaults)
    knobs.update({k: v for k, v in overrides.items() if v is not None})
    knobs.update(variants[variant])
    return knobs


def _value_type(f: dataclasses.Field) -> Callable[[str], Any]:
    if isinstance(f.default, tuple):
        return lambda s: tuple(v.strip() for v in s.split(",") if v.strip())
    if f.default is not None:
        return type(f.default) if isinstance(f.default, (int, float, str)) else str
    annotation = str(f.type)
    return int if "int" in annotation else float if "float" in annotation else str


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else repr(value)


def add_config_arguments(parser: argparse.ArgumentParser | Any, config: type, skip: Iterable[str] = (),
                         open_defaults: bool = False) -> None:
    """One option per field of `config` that has a flag (help text from the field, default shown).
    `open_defaults`: every default is None, so a knob left unset is left to the variant's preset."""
    for f in fields(config, cli_only=True):
        if f.name in skip:
            continue
        flag = f.metadata.get("flag") or "--" + f.name.replace("_", "-")
        kw: dict[str, Any] = {"dest": f.name, "help": f"{help_text(f)} (default {_shown(f.default)})",
                              "default": None if open_defaults else f.default}
        if f.metadata.get("choices"):
            kw["choices"] = f.metadata["choices"]
        if isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, **kw)
        else:
            parser.add_argument(flag, type=_value_type(f), **kw)


def config_kwargs(config: type, args: argparse.Namespace) -> dict[str, Any]:
    """The parsed values of `config`'s fields (those the parser has and that are not None)."""
    return {f.name: getattr(args, f.name) for f in fields(config, cli_only=True)
            if getattr(args, f.name, None) is not None}


def lab_parser(module: str, doc: str, examples: list[str], then: str, config: type | None = None,
               distributed: bool = False, skip: Iterable[str] = ()) -> argparse.ArgumentParser:
    """The parser of a lab: its runbook docstring as description (up to "Run it"), the examples (the first preceded
    by the exact torchrun command when `distributed`), one option per config field, and, when distributed, the
    launch options (--nproc, --device, --start-method, --nccl-debug)."""
    lines = list(examples)
    if distributed:
        from playbook.labs.workloads.dist import torchrun_command

        first = examples[0].split()[3:]
        if "--nproc" in first:  # torchrun sets the number of ranks itself
            i = first.index("--nproc")
            first = first[:i] + first[i + 2:]
        lines.insert(0, torchrun_command(module, 2, first))
    p = argparse.ArgumentParser(
        prog=f"python -m {module}", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=doc.split("Run it")[0].strip(),
        epilog=("examples:\n" if len(lines) > 1 else "example:\n") + "".join(f"  {line}\n" for line in lines)
        + f"then: {then}")
    if config is not None:
        add_config_arguments(p, config, skip=set(skip) | ({"device"} if distributed else set()))
    if distributed:
        from playbook.labs.workloads.dist import add_launch_arguments

        add_launch_arguments(p)
    return p


def run_distributed(parser: argparse.ArgumentParser, config: type, run: Callable[..., Any],
                    argv: list[str] | None = None) -> tuple[Any, Any]:
    """A distributed lab's command line: parse `argv`, build its `config`, and `run` it with the launch options
    (--nproc, --start-method, --nccl-debug). Returns (config, result); the result is None on a torchrun worker."""
    args = parser.parse_args(argv)
    cfg = config(**config_kwargs(config, args))
    res = run(cfg, nproc=args.nproc, start_method=args.start_method, nccl_debug=args.nccl_debug,
              argv=argv if argv is not None else sys.argv[1:])
    return cfg, res


def cli(main: Callable[[], int]) -> None:
    """Exit with main()'s code; a PlaybookError becomes one line on stderr and exit code 2."""
    from playbook.core.errors import PlaybookError

    try:
        sys.exit(main())
    except PlaybookError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


def variant_cli(name: str, doc: str, run: Any, variants: dict[str, dict[str, Any]], config: type,
                argv: list[str] | None = None, default_variants: tuple[str, ...] = ("no_fault", "fault", "fix")
                ) -> int:
    """The `python -m playbook.labs.workloads.<name>` entry point of a lab whose variants are presets of its knobs.

    Runs each chosen variant `--repeats` times (interleaved, see measure_variants) into OUT/<variant>-r<k>, shows
    progress on one line (stderr), then prints one summary with ratios to no_fault and the command that diagnoses
    the fault's recording. `run(run_dir, variant, **knobs)` returns a RunResult.
    """
    from playbook.analysis.lab_verdict import variant_summary
    from playbook.core.errors import PlaybookError
    from playbook.labs.workloads.common import measure_variants

    first = default_variants[1] if len(default_variants) > 1 else default_variants[0]
    parser = argparse.ArgumentParser(
        prog=f"python -m playbook.labs.workloads.{name}", description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(f"example:\n  python -m playbook.labs.workloads.{name} --variants {','.join(default_variants)} "
                f"--repeats 3 --out runs/{name}\n  playbook diagnose runs/{name}/{first}-r0\n\n"
                f"variants (presets of the knobs below):\n"
                + "\n".join(f"  {v:<14} {', '.join(f'{k}={x}' for k, x in p.items()) or '(defaults)'}"
                            for v, p in variants.items())))
    opts = {f.name: f for f in fields(RunOptions)}
    parser.add_argument("--variants", default=",".join(default_variants),
                        help=f"{help_text(opts['variants'])}; default {','.join(default_variants)}")
    parser.add_argument("--repeats", type=int, default=1, help=f"{help_text(opts['repeats'])} (default 1)")
    parser.add_argument("--out", dest="out_dir", default=f"runs/{name}",
                        help=f"{help_text(opts['out_dir'])} (default %(default)s)")
    group = parser.add_argument_group("knobs (tune what the variant's preset leaves open; the preset wins)")
    add_config_arguments(group, config, open_defaults=True)
    args = parser.parse_args(argv)
    knob_defaults = defaults(config)
    overrides = config_kwargs(config, args)
    chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
    try:
        for v in chosen:
            resolve_knobs(variants, v, knob_defaults, overrides)
        if args.repeats < 1:
            raise PlaybookError("--repeats must be >= 1")
        out = Path(args.out_dir)
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
