"""`playbook compare`: the readable report, the JSON contract (exactly one object on stdout), several runs per side,
folders of run directories, and one-line errors for bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from synthetic_runs import changed_env, make_run

from playbook.cli import main


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """GOOD and BAD run directories (LABELED SYNTHETIC): BAD checkpoints every 20 steps, set in its config."""
    root = tmp_path_factory.mktemp("cmp")
    make_run(root / "good", config={"checkpoint_every": 0}, seed=1)
    make_run(root / "good2", config={"checkpoint_every": 0}, seed=3)
    make_run(root / "bad", env=changed_env(torch__version="2.6.0"), config={"checkpoint_every": 20}, stall_every=20,
             stall_s=2.0, seed=2)
    make_run(root / "bad2", env=changed_env(torch__version="2.6.0"), config={"checkpoint_every": 20},
             stall_every=20, stall_s=2.0, seed=4)
    return root


def test_help_shows_an_example():
    out = subprocess.run([sys.executable, "-m", "playbook", "compare", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0
    assert "playbook compare runs/good runs/bad" in out.stdout
    assert "--good" in out.stdout and "--json" in out.stdout


def test_readable_report_names_the_cause_and_its_evidence(runs, capsys):
    assert main(["compare", str(runs / "good"), str(runs / "bad"), "--boot", "300"]) == 0
    out = capsys.readouterr().out
    assert "Verdict: BAD is slower" in out
    assert "1. periodic_stall" in out
    assert "config.checkpoint_every: 0 → 20" in out  # the linked change, in the cause's evidence
    assert "checkpoint events: 0 → 6" in out
    for section in ("Throughput:", "Phases", "Events", "Utilization pattern", "Environment and configuration"):
        assert section in out
    assert "torch  " in out or "torch " in out  # the unrelated version bump is listed among the changes


def test_json_is_exactly_one_object(runs, capsys):
    assert main(["compare", str(runs / "good"), str(runs / "bad"), "--json", "--boot", "300"]) == 0
    captured = capsys.readouterr()
    d = json.loads(captured.out)  # the whole of stdout is one JSON document
    assert d["verdict"] == "slower" and d["causes"][0]["id"] == "periodic_stall"
    assert captured.err == ""


def test_identical_runs_report_no_significant_difference(runs, capsys):
    assert main(["compare", str(runs / "good"), str(runs / "good"), "--boot", "300"]) == 0
    out = capsys.readouterr().out
    assert "no significant difference" in out
    assert "none: no cause accounts for a significant share" in out


def test_several_runs_per_side_with_flags_and_with_folders(runs, capsys, tmp_path):
    assert main(["compare", "--good", str(runs / "good"), "--good", str(runs / "good2"), "--bad", str(runs / "bad"),
                 "--bad", str(runs / "bad2"), "--json", "--boot", "300"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["good"]["runs"] == 2 and d["bad"]["runs"] == 2
    assert d["throughput"]["run_to_run"]["measured"]
    assert "runs_t_interval" in d["throughput"]
    for side, names in (("good", ("good", "good2")), ("bad", ("bad", "bad2"))):
        for n in names:
            shutil.copytree(runs / n, tmp_path / side / n)
    assert main(["compare", str(tmp_path / "good"), str(tmp_path / "bad"), "--json", "--boot", "300"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["good"]["runs"] == 2 and d["bad"]["runs"] == 2


@pytest.mark.parametrize(("argv", "message"), [
    (["/nonexistent/good", "/nonexistent/bad"], "no such file or directory"),
    (["only-one"], "expected two paths"),
    ([], "name a good and a bad run"),
    (["a", "b", "--good", "c"], "not both"),
    (["a", "b", "--boot", "10"], "--boot must be at least 100"),
])
def test_bad_arguments_are_one_line_errors(argv, message, capsys):
    assert main(["compare", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("playbook compare: error:")


def test_unreadable_or_incomparable_inputs_are_one_line_errors(runs, tmp_path, capsys):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01 not a log \x02" * 10)
    assert main(["compare", str(junk), str(runs / "bad")]) == 2
    err = capsys.readouterr().err.strip()
    assert "junk.bin" in err and "\n" not in err
    events_only = tmp_path / "events.csv"
    events_only.write_text("step,phase,duration_s\n")
    assert main(["compare", str(events_only), str(runs / "bad")]) == 2
    assert "\n" not in capsys.readouterr().err.strip()
