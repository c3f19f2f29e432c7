"""Every notebook in notebooks/ follows the skeleton: committed without outputs, a header with a **Summary** line,
exactly one `parameters` cell of commented, annotated literals, and no `def` or `class` (logic lives in playbook/).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from playbook.report import catalog

NOTEBOOKS = sorted((catalog.repo_root() / "notebooks").glob("*.ipynb"))
_DEF_OR_CLASS = re.compile(r"^\s*(?:async\s+def|def|class)\s+\w", re.MULTILINE)


def _read(path: Path):
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = _read(path)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs or execution counts (run `make format`)"
    assert "widgets" not in nb.metadata, f"{path.name}: saved widget state in metadata"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_one_parameters_cell_of_commented_annotated_literals(path):
    nb = _read(path)
    cells = catalog.parameters_cells(nb)
    assert len(cells) == 1, f"{path.name}: {len(cells)} cells tagged 'parameters', expected exactly one"
    assert cells[0].cell_type == "code"
    try:
        params = catalog.parse_parameters(catalog.cell_source(cells[0]))
    except catalog.ParameterCellError as exc:
        pytest.fail(f"{path.name} parameters cell, {exc}")
    assert params, f"{path.name}: the parameters cell declares nothing"
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert first_code is cells[0], f"{path.name}: code runs before the parameters cell"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_lists_every_parameter_with_its_type_default_and_help(path):
    """`papermill --help-notebook` (papermill.inspect_notebook) shows each parameter the cell declares, with the
    declared type, the default and the comment as help: what `-p NAME VALUE` can set."""
    import papermill

    declared = catalog.parse_parameters(catalog.cell_source(catalog.parameters_cells(_read(path))[0]))
    listed = papermill.inspect_notebook(str(path))
    assert [p.name for p in declared] == list(listed), f"{path.name}: papermill lists {list(listed)}"
    for p in declared:
        shown = listed[p.name]
        assert shown["inferred_type_name"] == p.annotation, (path.name, p.name, shown)
        assert ast.literal_eval(shown["default"]) == p.default, (path.name, p.name, shown)
        assert shown["help"].startswith(p.comment), (path.name, p.name, shown)


def test_the_readmes_papermill_examples_set_real_parameters():
    """Each `papermill NOTEBOOK OUT -p NAME VALUE` line of the README names a notebook and its parameters."""
    readme = (catalog.repo_root() / "README.md").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in readme.splitlines() if ln.strip().startswith("papermill ")]
    assert any(" -p " in ln for ln in lines), "the README shows no papermill -p example"
    for line in lines:
        words = line.split()
        notebook = next(w for w in words if w.endswith(".ipynb"))
        declared = {p.name for p in catalog.parse_parameters(catalog.cell_source(
            catalog.parameters_cells(_read(catalog.repo_root() / notebook))[0]))}
        named = [words[i + 1] for i, w in enumerate(words) if w == "-p"]
        assert set(named) <= declared, f"{line}: {sorted(set(named) - declared)} are not parameters of {notebook}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_def_or_class_in_code_cells(path):
    nb = _read(path)
    offenders = [i for i, c in enumerate(nb.cells)
                 if c.cell_type == "code" and _DEF_OR_CLASS.search(catalog.cell_source(c))]
    assert not offenders, f"{path.name}: cells {offenders} define functions or classes (move them to playbook/)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_header_cell_has_title_and_summary(path):
    nb = _read(path)
    assert nb.cells and nb.cells[0].cell_type == "markdown", f"{path.name}: the first cell must be the header"
    title, summary = catalog.header(nb)
    assert catalog.cell_source(nb.cells[0]).lstrip().startswith("# "), f"{path.name}: header has no # title"
    assert summary, f"{path.name}: header has no **Summary** line"


def test_hygiene_checks_catch_a_dirty_notebook(tmp_path):
    """The checks above fail on a notebook that breaks each rule (guards against vacuous passes)."""
    nb = nbformat.v4.new_notebook()
    bad_params = nbformat.v4.new_code_cell("steps = 5\nlr: float = 0.1  # learning rate")
    bad_params.metadata["tags"] = ["parameters"]
    code = nbformat.v4.new_code_cell("def helper():\n    return 1\nhelper()", execution_count=3)
    code.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=3)]
    nb.cells = [nbformat.v4.new_markdown_cell("Intro without a title"), bad_params, code]
    path = tmp_path / "dirty.ipynb"
    nbformat.write(nb, path)
    for check in (test_committed_without_outputs, test_one_parameters_cell_of_commented_annotated_literals,
                  test_no_def_or_class_in_code_cells, test_header_cell_has_title_and_summary):
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            check(path)
