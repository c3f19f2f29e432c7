"""Every command answers --help with an example, and user errors are one line, not a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

from playbook import cli


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "playbook", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_top_level_help_lists_commands_and_examples():
    res = _run("--help")
    assert res.returncode == 0, res.stderr
    assert "examples:" in res.stdout
    for name in cli.COMMANDS:
        if cli._load(name) is not None:
            assert name in res.stdout


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_each_command_has_help_with_an_example(name):
    if cli._load(name) is None:
        pytest.skip(f"command {name} not implemented yet")
    res = _run(name, "--help")
    assert res.returncode == 0, res.stderr
    assert "example" in res.stdout and f"playbook {name}" in res.stdout


def test_all_registered_commands_exist():
    missing = [name for name in cli.COMMANDS if cli._load(name) is None]
    assert not missing, f"registered but not implemented: {missing}"
