"""`playbook labs`: list the notebooks and the lab workloads, one line each, without importing torch."""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

HELP = "list the lab notebooks and workloads with one-line descriptions"
EXAMPLES = """  playbook labs                 notebooks (with their parameters' names) and workloads
  playbook labs --json          the same, as one JSON object
  playbook report --labs data_starvation     then run one of them into a report
"""

WORKLOADS = Path(__file__).resolve().parents[1] / "labs" / "workloads"
_NOT_WORKLOADS = {"__init__", "__main__", "common"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def workloads(directory: Path = WORKLOADS) -> list[dict[str, str]]:
    """Workload modules in playbook/labs/workloads/ (those runnable with `python -m`): name, first docstring line and
    the command that runs it. Read as text: no workload (nor torch) is imported."""
    out = []
    for path in sorted(directory.glob("*.py")):
        if path.stem in _NOT_WORKLOADS or path.stem.startswith("_"):
            continue
        text = path.read_text(encoding="utf-8")
        if "__main__" not in text:  # shared helpers, not a runnable lab
            continue
        try:
            doc = ast.get_docstring(ast.parse(text)) or ""
        except SyntaxError:
            doc = ""
        first = next((ln.strip() for ln in doc.splitlines() if ln.strip()), "(no description)")
        out.append({"name": path.stem, "description": first,
                    "command": f"python -m playbook.labs.workloads.{path.stem} --help"})
    return out


def run(args: argparse.Namespace) -> int:
    from playbook.report import catalog

    notebooks = []
    for spec in catalog.discover(catalog.repo_root() / "notebooks"):
        notebooks.append({"name": spec.name, "title": spec.title, "summary": spec.summary,
                          "parameters": [p.name for p in spec.parameters],
                          "quick": spec.quick_parameters()})
    found = workloads()
    if args.json:
        print(json.dumps({"notebooks": notebooks, "workloads": found}, indent=2, default=str))
        return 0
    print("Notebooks (notebooks/*.ipynb; run with `playbook report --labs NAME` or open with `make lab`):")
    for nb in notebooks:
        title = re.sub(r"^\d+\s*[·.:-]\s*", "", nb["title"])  # "10 · Data starvation: ..." -> "Data ..."
        print(f"  {nb['name']:<28} {_short(title)}")
    if not notebooks:
        print("  (none yet)")
    print("\nWorkloads (playbook/labs/workloads/; each has --help):")
    for w in found:
        print(f"  {w['name']:<28} {_short(w['description'])}")
    if not found:
        print("  (none yet)")
    return 0


def _short(text: str, width: int = 110) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
