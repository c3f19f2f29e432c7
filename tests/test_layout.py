"""The package's layout holds (README "Layout"): layers import only downwards, no import cycle, short modules, and
tests/ mirrors playbook/. Read from the source with `ast` (nothing is imported)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "playbook"
# Low to high: a module may import its own layer and the ones before it, never one after it.
LAYERS = ("errors", "units", "jsonable", "schema", "knowledge", "rundir", "readers", "probes", "analysis", "diagnose",
          "synthetic", "synthetic_cases", "fixes", "workloads", "plots", "report", "sources", "commands", "cli",
          "__main__")
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
    actual |= {str(p.relative_to(ROOT)) + "/" for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    listed = {p for p in _readme_tree() if not p.endswith("__init__.py")}
    assert not actual - listed, f"add to the README's Layout tree: {sorted(actual - listed)}"
    assert not listed - actual, f"the README's Layout tree names what is not there: {sorted(listed - actual)}"
