"""The package's layout holds (README "Layout"): layers import only downwards, no import cycle, short modules, and
tests/ mirrors playbook/. Read from the source with `ast` (nothing is imported)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "playbook"
# Low to high: a module may import its own layer and the ones before it, never one after it.
LAYERS = ("core", "knowledge", "model", "readers", "probes", "analysis", "diagnosis", "labs", "plots", "report", "sources",
          "commands", "cli", "__main__")
MAX_LOOSE_MODULES = 4  # the facade (__init__), __main__, cli: every other module lives in the folder of its layer
MAX_LINES = 650  # "no module over ~600 lines": room for a docstring's growth, not for a second concern
TEST_ONLY_FOLDERS = {"data", "notebooks"}  # fixtures; the notebooks' executions (notebooks/ is not in playbook/)


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The playbook modules `name` imports (at any depth of the file, lazy imports included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            mod = ".".join(base + [node.module] if node.module else base)
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods]
            found.update(subs if len(subs) == len(node.names) else [mod, *subs])
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m in mods and m != name}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(name, path, mods) for name, path in mods.items()}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_module_belongs_to_a_layer():
    unknown = sorted({_layer(m) for m in _modules()} - set(LAYERS) - {None})
    assert not unknown, f"modules outside the layer list (add them to LAYERS and the README layout): {unknown}"


def test_no_layer_imports_a_layer_above_it():
    upward = [f"{a} -> {b}" for a, bs in _graph().items() for b in bs
              if _layer(a) and _layer(b) and LAYERS.index(_layer(b)) > LAYERS.index(_layer(a))]
    assert not upward, upward


def test_no_import_cycle():
    graph, state, cycles = _graph(), {}, []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, [" -> ".join(c) for c in cycles]


def test_modules_stay_short():
    long = {str(p.relative_to(ROOT)): n for p in _modules().values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these by concern: {long}"


def test_tests_mirror_the_package():
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - TEST_ONLY_FOLDERS <= packages, sorted(folders - TEST_ONLY_FOLDERS - packages)
    for folder in folders - TEST_ONLY_FOLDERS:
        assert list((ROOT / "tests" / folder).glob("test_*.py")), f"tests/{folder}/ holds no tests"


def _readme_tree() -> set[str]:
    """The paths the README's Layout tree names under playbook/ (indentation = nesting, two spaces a level)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    paths, stack = set(), []
    for line in block.splitlines():
        indent, name = len(line) - len(line.lstrip(" ")), line.strip().split(" ")[0] if line.strip() else ""
        if not name:
            continue
        if indent == 0:
            stack = [name] if name == "playbook/" else []
            continue
        if not stack:
            continue
        stack = stack[: indent // 2] + [name]
        paths.add("".join(stack))
    return paths


def test_readme_layout_names_every_module_and_only_those():
    actual = {str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    actual |= {str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.c")}  # C sources of optional extensions
    actual |= {str(p.relative_to(ROOT)) + "/" for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    listed = {p for p in _readme_tree() if not p.endswith("__init__.py")}
    assert not actual - listed, f"add to the README's Layout tree: {sorted(actual - listed)}"
    assert not listed - actual, f"the README's Layout tree names what is not there: {sorted(listed - actual)}"


def test_few_loose_modules_at_the_top():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_LOOSE_MODULES, f"move these into the folder of their layer: {loose}"


def test_one_name_per_module():
    """No two modules share a file name: `steps.py` in five folders made every traceback and import ambiguous."""
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if not path.name.startswith("__"):  # __init__ and __main__ are the package protocol's names
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert not {n: ps for n, ps in seen.items() if len(ps) > 1}


FACADES = ("playbook", "playbook.labs", "playbook.plots")


def _notebook_imports() -> dict[str, set[str]]:
    """{notebook: the playbook modules its code cells import from}."""
    found = {}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        found[nb.name] = set(re.findall(r"^\s*from\s+(playbook[\w.]*)\s+import\b", code, re.M))
        found[nb.name] |= set(re.findall(r"^\s*import\s+(playbook[\w.]*)", code, re.M))
    return found


def test_notebooks_import_from_the_facades_only():
    stray = {nb: sorted(mods - set(FACADES)) for nb, mods in _notebook_imports().items() if mods - set(FACADES)}
    assert not stray, f"import these from {FACADES} instead (add a lazy export where missing): {stray}"


def test_every_facade_export_resolves_and_importing_the_package_stays_light():
    code = ("import sys, importlib\n"
            "import playbook\n"
            "heavy = sorted(m for m in ('pandas', 'torch', 'pynvml', 'matplotlib') if m in sys.modules)\n"
            "missing = []\n"
            "for name in " + repr(FACADES) + ":\n"
            "    pkg = importlib.import_module(name)\n"
            "    missing += [f'{name}.{e}' for e in getattr(pkg, 'EXPORTS', {}) if getattr(pkg, e, None) is None]\n"
            "print(heavy, missing)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[] []", res.stdout
