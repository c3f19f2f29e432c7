"""The package installs cleanly and its environment files agree with each other."""

from __future__ import annotations

import re
import subprocess
import sys

import tomllib
from conftest import ROOT


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_env_yml_agrees_with_pyproject():
    import yaml

    env = yaml.safe_load((ROOT / "env.yml").read_text())
    project = _pyproject()["project"]
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    # conda brings only python and pip; every other dependency comes from pyproject.toml via the dev extras
    assert {d.split("=")[0] for d in conda} == {"python", "pip"}, conda
    assert pip == ["-e .[dev]"], pip
    version = next(d for d in conda if d.startswith("python")).split("=")[1]
    floor = project["requires-python"].removeprefix(">=")
    assert tuple(map(int, version.split("."))) >= tuple(map(int, floor.split("."))), (version, floor)


def test_required_dependencies_are_declared():
    deps = " ".join(_pyproject()["project"]["dependencies"] + _pyproject()["project"]["optional-dependencies"]["dev"])
    for name in ["jupyterlab", "torch", "nvidia-ml-py", "pandas", "pyarrow", "seaborn", "papermill", "nbconvert",
                 "ipywidgets", "psutil", "pytest", "hypothesis", "ruff", "nbstripout"]:
        assert re.search(rf"(^|\s|\"){re.escape(name)}([<>=~ ]|$)", deps), f"{name} missing from pyproject.toml"
    assert "pynvml" not in re.sub(r"nvidia-ml-py", "", deps), "depend on nvidia-ml-py, not the deprecated pynvml"


def test_import_has_no_side_effects():
    code = ("import sys, playbook, playbook.cli, playbook.probes, playbook.model.schema; "
            "assert 'torch' not in sys.modules, 'torch imported'; assert 'pynvml' not in sys.modules, 'pynvml imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
