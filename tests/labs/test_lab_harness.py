"""playbook.labs.workloads._harness: one config dataclass per lab is its command line and its notebook's knobs."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import io
from pathlib import Path

import pytest

from playbook.labs.workloads import _harness as H
from playbook.report import catalog, lab_parameters

ROOT = Path(__file__).resolve().parents[2]
LAB_NOTEBOOKS = lab_parameters.LAB_NOTEBOOKS  # notebook -> the lab module whose CONFIG it tunes


@pytest.mark.parametrize("stem", sorted(LAB_NOTEBOOKS))
def test_notebook_parameters_are_fields_of_the_labs_config(stem):
    """A knob the notebook sets is a field of its lab's config (or a harness run option): the notebook cannot
    grow a knob the lab does not document, nor keep one the lab dropped."""
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    params = {p.name for p in catalog.parse_parameters(catalog.cell_source(catalog.parameters_cells(nb)[0]))}
    config = importlib.import_module(f"playbook.labs.workloads.{LAB_NOTEBOOKS[stem]}").CONFIG
    known = {f.name for f in H.fields(config)} | {f.name for f in H.fields(H.RunOptions)}
    assert not set(params) - known, f"{stem}: parameters not in {config.__name__}: {sorted(set(params) - known)}"


def test_every_lab_notebook_documents_its_knobs_with_the_configs_help_text(capsys):
    """The parameter comments are generated from the config fields (the knob's meaning is written once)."""
    assert lab_parameters.main(["--check", "--notebooks", str(ROOT / "notebooks")]) == 0, capsys.readouterr().out


def test_generated_cell_keeps_values_and_quick_tags_and_refuses_unknown_knobs():
    knobs = {f.name: f for f in H.fields(_Config)}
    source = 'steps: int = 5  # old words [quick: 2]\n# a note\nmode: str = "y#z"  # old\n'
    assert lab_parameters.generated_cell(source, knobs) == (
        'steps: int = 5  # timed steps [quick: 2]\n# a note\nmode: str = "y#z"  # x or y\n')
    with pytest.raises(catalog.ParameterCellError, match="line 1: other is not a knob"):
        lab_parameters.generated_cell("other: int = 1  # what\n", knobs)


@pytest.mark.parametrize("module", sorted(set(LAB_NOTEBOOKS.values())))
def test_every_field_has_help_and_every_lab_has_help_with_an_example(module, capsys):
    mod = importlib.import_module(f"playbook.labs.workloads.{module}")
    for f in H.fields(mod.CONFIG):
        assert f.metadata.get("help"), f"{module}.{mod.CONFIG.__name__}.{f.name} has no help text"
    with pytest.raises(SystemExit) as exit_info:
        mod.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "example" in out and f"python -m playbook.labs.workloads.{module}" in out


@dataclasses.dataclass
class _Config:
    steps: int = H.knob(10, "timed steps")
    rate: float | None = H.knob(None, "a rate (None: automatic)")
    names: tuple[str, ...] = H.knob(("a", "b"), "which names")
    fast: bool = H.knob(False, "go fast")
    appendix: bool = H.knob(True, "a notebook-only switch", cli=False)
    mode: str = H.knob("x", "x or y", choices=("x", "y"), flag="--how")


def test_generated_options_parse_types_bools_tuples_and_flags():
    p = argparse.ArgumentParser()
    H.add_config_arguments(p, _Config)
    cfg = _Config(**H.config_kwargs(_Config, p.parse_args(["--steps", "3", "--rate", "2.5", "--names", "c,d",
                                                           "--fast", "--how", "y"])))
    assert (cfg.steps, cfg.rate, cfg.names, cfg.fast, cfg.mode, cfg.appendix) == (3, 2.5, ("c", "d"), True, "y", True)
    assert _Config(**H.config_kwargs(_Config, p.parse_args([]))) == _Config()
    with pytest.raises(SystemExit):
        p.parse_args(["--appendix"])  # notebook-only: no flag
    assert H.defaults(_Config) == {"steps": 10, "rate": None, "names": ("a", "b"), "fast": False, "mode": "x"}
    assert "| `appendix` | `True` | a notebook-only switch |" in H.parameter_docs(_Config)


def test_open_defaults_leave_unset_knobs_to_the_preset():
    p = argparse.ArgumentParser()
    H.add_config_arguments(p, _Config, open_defaults=True)
    assert H.config_kwargs(_Config, p.parse_args(["--no-fast"])) == {"fast": False}


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_one_line_on_a_terminal_lines_in_a_pipe_and_silent_when_off():
    from playbook.labs.workloads.common import Progress, measure_variants

    pipe = io.StringIO()
    p = Progress(2, show=True, stream=pipe)
    p.step("a r0: throughput=1")
    p.step("b r0: throughput=2")
    p.close()
    assert pipe.getvalue().splitlines() == ["[1/2] a r0: throughput=1", "[2/2] b r0: throughput=2"]
    tty = _Tty()
    p = Progress(2, show=True, stream=tty)
    p.step("a r0")
    p.step("b r0")
    p.close()
    assert tty.getvalue().count("\n") == 1 and tty.getvalue().startswith("\r") and "2 runs in" in tty.getvalue()
    quiet = io.StringIO()
    p = Progress(1, show=False, stream=quiet)
    p.step("a r0")
    p.close()
    assert quiet.getvalue() == ""
    assert len(measure_variants(lambda v, rep: {"throughput": 1.0 + rep}, ["a", "b"], repeats=2, progress=False)) == 4
