"""A held-out round's labelled files as pytest cases: each file with its label, a strict xfail (with its reason)
where the engine does not reach the label yet (tests/diagnosis/test_heldout*.py)."""

from __future__ import annotations

import pytest


def cases(labels: dict[str, str], not_yet: dict[str, str]) -> list:
    """pytest.param(name, label) per file of `labels`; strict xfail for the names in `not_yet` (name -> reason)."""
    return [pytest.param(name, label, id=name,
                         marks=[pytest.mark.xfail(strict=True, reason=not_yet[name])] if name in not_yet else [])
            for name, label in labels.items()]


def verdict_tests(here, accepted: dict[str, tuple[str, ...]], not_yet: dict[str, str]):
    """(test_verdict, test_no_losing_run_is_called_healthy) for a round whose files each accept a set of verdicts
    (`accepted`: name -> verdict ids, the first its label); bind both in the round's test module."""
    from playbook.core.errors import InputError
    from playbook.diagnosis import diagnose
    from playbook.readers import read_paths

    labels = {name: ids[0] for name, ids in accepted.items()}

    @pytest.mark.parametrize(("name", "label"), cases(labels, not_yet))
    def test_verdict(name, label):
        assert diagnose(read_paths([str(here / name)])).verdict["id"] in accepted[name]

    @pytest.mark.parametrize("name", [n for n, ids in accepted.items() if "healthy" not in ids])
    def test_no_losing_run_is_called_healthy(name):
        try:
            bundle = read_paths([str(here / name)])
        except InputError:  # UnknownFormatError, or a reader's one-line refusal (a CSV whose columns it cannot tell)
            return  # refused with its one-line error (its verdict test says so): nothing is called healthy
        assert diagnose(bundle).verdict["id"] != "healthy"

    return test_verdict, test_no_losing_run_is_called_healthy
