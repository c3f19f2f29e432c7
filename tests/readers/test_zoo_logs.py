"""Real committed training logs (tests/data/zoo, sources in its SOURCES.md): each is read as expected.json says
(step records, first and last step, steady step time, phases, events) and diagnosed with the verdict it names."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from playbook import diagnose, read_paths
from playbook.core.errors import InputError

ZOO = Path(__file__).resolve().parents[1] / "data" / "zoo"
EXPECTED = {k: v for k, v in json.loads((ZOO / "expected.json").read_text()).items() if not k.startswith("_")}


def test_every_log_has_an_expectation():
    files = {p.name for p in ZOO.iterdir() if p.name not in ("expected.json", "SOURCES.md")}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(k for k, v in EXPECTED.items() if v.get("error")))
def test_refused_with_one_line_naming_the_file(name):
    with pytest.raises(InputError) as exc:
        read_paths([str(ZOO / name)])
    assert name in str(exc.value) and "\n" not in str(exc.value)


def _cases(flag: str) -> list:
    """The readable cases, a strict xfail where expected.json says `flag` is still open."""
    return [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=v[flag])) if v.get(flag) else k
            for k, v in sorted(EXPECTED.items()) if not v.get("error")]


@pytest.mark.parametrize("name", _cases("open_steps"))
def test_steps_read_as_expected(name):
    want = EXPECTED[name]
    bundle = read_paths([str(ZOO / name)])
    steps = bundle.steps[bundle.steps["phase"] == "step"] if len(bundle.steps) else bundle.steps
    assert len(steps) == want["steps"]
    if want["steps"]:
        assert (int(steps["step"].min()), int(steps["step"].max())) == (want["first"], want["last"])
        assert float(np.median(steps["duration_s"])) == pytest.approx(want["median_step_s"], rel=0.05)
        assert set(bundle.steps["phase"]) - {"step"} >= set(want["phases"])


@pytest.mark.parametrize("name", _cases("open_events"))
def test_events_read_as_expected(name):
    want = EXPECTED[name]
    events = read_paths([str(ZOO / name)]).events
    assert {(str(k), int(s)) for k, s in events[["kind", "step"]].itertuples(index=False)} == \
        {tuple(e) for e in want["events"]}
    if "eval_events" in want:  # one event per evaluation, however many lines each prints
        assert int((events["kind"] == "eval").sum()) == want["eval_events"]


@pytest.mark.parametrize("name", sorted(k for k, v in EXPECTED.items() if not v.get("error")))
def test_verdict(name):
    assert diagnose(read_paths([str(ZOO / name)])).verdict["id"] == EXPECTED[name]["verdict"]
