"""What the held-out step-log rounds (tests/data/steplogsN, expected.json) share: a case marked by what is still
wrong, and the verdict check (one of `verdict_ok`; a loss within a factor 2 of `lost_s` / `lost_s_if_slowdown`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_file, read_paths


def case(name: str, not_yet: dict) -> pytest.param:
    """A parametrized case, a strict xfail when `not_yet` says why it is still wrong."""
    marks = [pytest.mark.xfail(strict=True, reason=not_yet[name])] if name in not_yet else []
    return pytest.param(name, marks=marks, id=name)


def assert_verdict(path: Path, want: dict) -> None:
    """The diagnosis of `path` is one of `want["verdict_ok"]`, and a loss costs about what the truth lost."""
    result = diagnose(read_paths([str(path)]))
    assert result.verdict["id"] in want["verdict_ok"]
    lost = want.get("lost_s", want.get("lost_s_if_slowdown")) if result.verdict["id"] != "healthy" else None
    if lost:
        assert lost / 2 <= result.accounting["lost_s"] <= lost * 2


def step_rows(path: Path) -> tuple[list, list]:
    """The steps a file's whole-step rows name, and their seconds."""
    s = read_file(path).steps
    whole = s[s["phase"] == "step"]
    return whole["step"].tolist(), whole["duration_s"].tolist()


def matches(got_steps, got_s, steps, seconds, extra=frozenset(), tol=0.05) -> bool:
    """Every printed step with its seconds (within `tol`), and no other step but the `extra` ones."""
    known = dict(zip(steps, seconds, strict=True))
    got = dict(zip(got_steps, got_s, strict=True))
    if set(steps) - set(got) or set(got) - set(steps) - set(extra):
        return False
    return all(abs(got[s] - v) <= tol * v for s, v in known.items())


def check_verdict(path: Path, want: dict) -> None:
    """assert_verdict, where insufficient_data (which measures no loss) passes when the label set accepts it."""
    if diagnose(read_paths([str(path)])).verdict["id"] == "insufficient_data":
        assert "insufficient_data" in want["verdict_ok"]
        return
    assert_verdict(path, want)
