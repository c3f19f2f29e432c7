"""The notebooks a report can run: discovered from notebooks/*.ipynb, with their parameters read from the cell
tagged `parameters`.

Parameter cell convention (checked by tests/notebooks/test_notebooks_hygiene.py): one line per parameter, an annotated
literal with a trailing comment that says what it is and its unit,

    steps: int = 60  # training steps per run [quick: 20]

The optional `[quick: VALUE]` tag in the comment is the value `playbook report --quick` passes instead of the
default (defaults are already a quick CPU run; the tag makes a notebook quicker still for the batch). A notebook
that declares a `quick: bool` parameter gets `quick=True` under --quick. `QUICK_OVERRIDES` below adds quick values
for a notebook without editing it.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRIAGE = "01_triage"
ONBOARDING = "00_onboarding"


def repo_root(start: str | Path | None = None) -> Path:
    """The repository root (the folder holding notebooks/ and data/samples/): the nearest folder at or above
    `start` (default: the current folder) with notebooks/ and pyproject.toml, else the checkout the imported
    playbook package sits in (an editable install run from elsewhere). Resolved once: the CLI commands call this
    and pass the paths down; a notebook's helpers call it from the kernel's folder (papermill starts the kernel at
    the root, JupyterLab in notebooks/)."""
    import playbook

    here = Path(start if start is not None else Path.cwd()).resolve()
    package_checkout = Path(playbook.__file__).resolve().parent.parent
    for folder in (here, *here.parents, package_checkout):
        if (folder / "notebooks").is_dir() and (folder / "pyproject.toml").is_file():
            return folder
    from playbook.core.errors import PlaybookError

    raise PlaybookError(f"no playbook checkout (notebooks/ beside pyproject.toml) at or above {here}")


# notebook stem -> {parameter: quick value}, for notebooks whose parameter comments carry no [quick: ...] tag.
QUICK_OVERRIDES: dict[str, dict[str, Any]] = {}

QUICK_TAG = re.compile(r"\[quick:\s*(?P<value>.+?)\]\s*$")
_SUMMARY = re.compile(r"\*\*Summary[:.]?\*\*[:.]?\s*(?P<text>.+)")


@dataclass(frozen=True)
class Parameter:
    """One line of a parameters cell: `name: annotation = default  # comment [quick: value]`."""

    name: str
    annotation: str
    default: Any
    comment: str
    quick: Any = None
    has_quick: bool = False
    line: int = 0  # 1-based line in the cell
    code: str = ""  # the assignment's source text, without the comment


@dataclass
class NotebookSpec:
    """A notebook in notebooks/: its name (file stem), title, one-line summary and parameters."""

    name: str
    path: Path
    title: str
    summary: str
    parameters: list[Parameter] = field(default_factory=list)

    @property
    def number(self) -> str:
        """The leading number of the name ("10" for 10_data_starvation), "" when none."""
        head = self.name.split("_", 1)[0]
        return head if head.isdigit() else ""

    @property
    def is_lab(self) -> bool:
        """Lab notebooks reproduce one failure mode (everything but onboarding and triage)."""
        return self.name not in (ONBOARDING, TRIAGE)

    def defaults(self) -> dict[str, Any]:
        """Parameter name -> default value."""
        return {p.name: p.default for p in self.parameters}

    def quick_parameters(self) -> dict[str, Any]:
        """The parameters `--quick` passes: [quick: ...] tags, `quick=True`, then QUICK_OVERRIDES."""
        out = {p.name: p.quick for p in self.parameters if p.has_quick}
        if any(p.name == "quick" for p in self.parameters):
            out["quick"] = True
        out.update(QUICK_OVERRIDES.get(self.name, {}))
        return out


class ParameterCellError(ValueError):
    """A parameters cell line that is not `name: type = literal  # comment`."""


def parse_parameters(source: str) -> list[Parameter]:
    """The parameters declared in a parameters cell's source; raises ParameterCellError on any other statement."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ParameterCellError(f"line {exc.lineno}: not valid Python ({exc.msg})") from None
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    params = []
    for node in tree.body:
        line = node.lineno
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None):
            raise ParameterCellError(f"line {line}: only `name: type = literal  # comment` lines are allowed")
        try:
            default = ast.literal_eval(node.value)
        except ValueError:
            raise ParameterCellError(f"line {line}: {node.target.id}'s value is not a literal") from None
        comment = comments.get(node.end_lineno or line, "")
        if not comment:
            raise ParameterCellError(f"line {line}: {node.target.id} has no trailing comment saying what it is")
        if "=" in comment:  # papermill's parser skips a line holding a second "=" (--help-notebook loses it)
            raise ParameterCellError(f"line {line}: {node.target.id}'s comment holds '=' (papermill would not list "
                                     "it; write 'means' or ':')")
        quick, has_quick = None, False
        m = QUICK_TAG.search(comment)
        if m:
            try:
                quick, has_quick = ast.literal_eval(m.group("value")), True
            except (ValueError, SyntaxError):
                raise ParameterCellError(f"line {line}: [quick: ...] value is not a literal") from None
            comment = comment[: m.start()].rstrip()
        params.append(Parameter(node.target.id, ast.unparse(node.annotation), default, comment, quick, has_quick,
                                line, ast.get_source_segment(source, node) or ""))
    return params


def parameters_cells(nb: dict) -> list[dict]:
    """The cells tagged `parameters`."""
    return [c for c in nb.get("cells", []) if "parameters" in (c.get("metadata", {}).get("tags") or [])]


def cell_source(cell: dict) -> str:
    """A cell's source as one string (nbformat stores a string or a list of lines)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def header(nb: dict) -> tuple[str, str]:
    """(title, summary) from the first markdown cell: its first `#` heading and its **Summary** line."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        text = cell_source(cell)
        title = next((ln.lstrip("#").strip() for ln in text.splitlines() if ln.startswith("#")), "")
        return title, _summary(text)
    return "", ""


def _summary(text: str) -> str:
    """The **Summary** paragraph of a header, joined into one line (it ends at a blank line, a heading or the
    next bold label)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _SUMMARY.search(line)
        if not m:
            continue
        parts = [m.group("text").strip()]
        for nxt in lines[i + 1:]:
            if not nxt.strip() or nxt.lstrip().startswith(("#", "**", "- ", "* ")):
                break
            parts.append(nxt.strip())
        return " ".join(p.rstrip("\\").strip() for p in parts).strip()
    return ""


def load(path: str | Path) -> NotebookSpec:
    """The spec of one notebook file (parameters cell errors propagate as ParameterCellError)."""
    path = Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    title, summary = header(nb)
    cells = parameters_cells(nb)
    params = parse_parameters(cell_source(cells[0])) if cells else []
    return NotebookSpec(path.stem, path, title or path.stem, summary, params)


def discover(directory: str | Path) -> list[NotebookSpec]:
    """Every *.ipynb in `directory` (the repository's notebooks/), sorted by name."""
    return [load(p) for p in sorted(Path(directory).glob("*.ipynb"))]


def find(specs: list[NotebookSpec], name: str) -> NotebookSpec | None:
    """The notebook called `name`: its full stem ("10_data_starvation"), number ("10") or topic ("data_starvation")."""
    key = Path(name).stem
    for spec in specs:
        topic = spec.name.split("_", 1)[1] if spec.number and "_" in spec.name else spec.name
        if key in (spec.name, spec.number, topic):
            return spec
    return None
