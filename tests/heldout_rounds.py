"""A held-out round's labelled files as pytest cases: each file with its label, a strict xfail (with its reason)
where the engine does not reach the label yet (tests/diagnosis/test_heldout*.py)."""

from __future__ import annotations

import pytest


def cases(labels: dict[str, str], not_yet: dict[str, str]) -> list:
    """pytest.param(name, label) per file of `labels`; strict xfail for the names in `not_yet` (name -> reason)."""
    return [pytest.param(name, label, id=name,
                         marks=[pytest.mark.xfail(strict=True, reason=not_yet[name])] if name in not_yet else [])
            for name, label in labels.items()]
