"""Subcommands of the `playbook` CLI, one module each (see playbook/cli.py)."""

TZ_HELP = ("time zone the inputs' local timestamps were written in (nvidia-smi -l, dmon -o T, step logs), e.g. "
           "Europe/Berlin; default UTC")
