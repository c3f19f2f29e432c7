"""Subcommands of the `playbook` CLI, one module each (see playbook/cli.py)."""

import sys

TZ_HELP = ("time zone the inputs' local timestamps were written in (nvidia-smi -l, dmon -o T, step logs), e.g. "
           "Europe/Berlin; default UTC")


def emit(result, as_json: bool, render) -> int:
    """Print `result` as exactly one JSON object on stdout (`as_json`), or its warnings on stderr and
    `render(result)` on stdout; exit status 0."""
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
        return 0
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    sys.stdout.write(render(result) + "\n")
    return 0


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def duration_s(text: str) -> float:
    """A duration such as '500ms', '20s', '5m', '6h', '1d' or a bare number of seconds, in seconds (argparse type)."""
    import argparse
    import math
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d|w)?\s*", str(text))
    if not m or not math.isfinite(float(m.group(1))) or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"not a positive duration: {text!r} (e.g. 500ms, 20s, 5m, 6h, 1d)")
    return float(m.group(1)) * _DURATION_UNITS[m.group(2) or "s"]
