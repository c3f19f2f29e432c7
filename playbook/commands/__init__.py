"""Subcommands of the `playbook` CLI, one module each (see playbook/cli.py)."""

import sys

from playbook.core.terminal import visible

TZ_HELP = ("time zone the inputs' local timestamps were written in (nvidia-smi -l, dmon -o T, step logs), e.g. "
           "Europe/Berlin; default UTC")


def emit(result, as_json: bool, render) -> int:
    """Print `result` as exactly one JSON object on stdout (`as_json`), or its warnings on stderr and
    `render(result)` on stdout (control characters from the inputs shown, not obeyed: core.terminal); exit 0."""
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
        return 0
    for w in result.warnings:
        print(visible(f"warning: {w}"), file=sys.stderr)
    sys.stdout.write(visible(render(result)) + "\n")
    return 0
