"""`playbook labs` lists notebooks and workloads without importing torch; `playbook report` input errors are one line."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

from playbook.commands.labs import workloads

LABS_JSON = ("import json, sys; from playbook.cli import main; main(['labs', '--json']); "
             "print(json.dumps({'torch_imported': 'torch' in sys.modules}))")


def test_labs_lists_notebooks_with_parameters_and_workloads_without_torch():
    res = subprocess.run([sys.executable, "-c", LABS_JSON], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    listing, _, tail = res.stdout.rpartition("\n{")
    data = json.loads(listing)
    assert json.loads("{" + tail) == {"torch_imported": False}
    notebooks = {nb["name"]: nb for nb in data["notebooks"]}
    assert notebooks["01_triage"]["parameters"][0] == "inputs"
    assert notebooks["00_onboarding"]["quick"] == {"duration_s": 600.0}
    names = {w["name"] for w in data["workloads"]}
    assert "data_starvation" in names and "model" not in names and "common" not in names
    assert all(w["description"] != "(no description)" for w in data["workloads"])


def test_workload_discovery_needs_a_main_guard(tmp_path):
    (tmp_path / "helper.py").write_text('"""Shared bits."""\n')
    (tmp_path / "lab_x.py").write_text('"""Lab X: a fault.\n\nMore."""\nif __name__ == "__main__":\n    pass\n')
    assert workloads(tmp_path) == [{"name": "lab_x", "description": "Lab X: a fault.",
                                    "command": "python -m playbook.labs.workloads.lab_x --help"}]


def test_report_on_a_missing_path_is_a_one_line_error(tmp_path):
    res = subprocess.run([sys.executable, "-m", "playbook", "report", str(tmp_path / "nope.csv"), "--out",
                          str(tmp_path / "rep")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [f"playbook report: error: {tmp_path / 'nope.csv'}: no such file or "
                                               "directory"]
    assert not (tmp_path / "rep").exists()


def test_report_with_an_unknown_lab_names_the_known_ones(tmp_path):
    res = subprocess.run([sys.executable, "-m", "playbook", "report", "--labs", "warp_drive", "--out",
                          str(tmp_path / "rep")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 2
    assert "no notebook called 'warp_drive'; known: 00_onboarding, 01_triage" in res.stderr
