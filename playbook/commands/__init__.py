"""Subcommands of the `playbook` CLI, one module each (see playbook/cli.py)."""
