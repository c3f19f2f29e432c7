"""All cause knowledge lives in playbook/knowledge/: the catalog, the cause ids, the signature and environment
tables. Code elsewhere names a cause through `playbook.knowledge.ids`, never by writing its id as a literal."""

from __future__ import annotations

import ast
from pathlib import Path

from playbook.knowledge import ids
from playbook.knowledge.causes import BUCKET_CAUSES, CAUSES, EVENT_KIND_CAUSE, PHASE_CAUSE
from playbook.knowledge.environment import FIXED_LINKS, KEYWORD_LINKS
from playbook.knowledge.signatures import SPECIFICITY

PACKAGE = Path(__file__).resolve().parents[2] / "playbook"
# Scenario names that happen to equal a cause id: the name of a simulated or faked scenario, not a cause
NOT_CAUSES = {("probes/fake_nvml.py", "healthy"), ("labs/synthetic.py", "healthy"),
              ("labs/workloads/observability.py", "healthy")}


def _literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and n.value in CAUSES and id(n) not in docs]


def test_no_cause_id_is_spelled_outside_the_knowledge_folder():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("knowledge/"):
            continue
        found += [f"playbook/{rel}:{line}: {value!r}" for line, value in _literals(path)
                  if (rel, value) not in NOT_CAUSES]
    assert not found, "use playbook.knowledge.ids instead of the literal:\n" + "\n".join(found)


def test_the_id_names_match_the_catalog():
    names = {k: v for k, v in vars(ids).items() if k.isupper()}
    assert set(names.values()) == set(CAUSES) and all(k == v.upper() for k, v in names.items())


def test_every_table_names_known_causes_only():
    named = {c for row in SPECIFICITY.values() for c in row} | {c for cs in BUCKET_CAUSES.values() for c in cs}
    named |= set(EVENT_KIND_CAUSE.values()) | set(PHASE_CAUSE.values())
    named |= {c for _, cs in KEYWORD_LINKS for c in cs} | {c for cs, _ in FIXED_LINKS.values() for c in cs}
    assert named <= set(CAUSES), named - set(CAUSES)
