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


def _read(name: str):
    mark = pytest.mark.xfail(strict=True, reason=EXPECTED[name]["open"]) if EXPECTED[name].get("open") else ()
    return pytest.param(name, marks=mark)


@pytest.mark.parametrize("name", [_read(k) for k, v in sorted(EXPECTED.items()) if not v.get("error")])
def test_read_as_expected(name):
    want = EXPECTED[name]
    bundle = read_paths([str(ZOO / name)])
    steps = bundle.steps[bundle.steps["phase"] == "step"] if len(bundle.steps) else bundle.steps
    assert len(steps) == want["steps"]
    if want["steps"]:
        assert (int(steps["step"].min()), int(steps["step"].max())) == (want["first"], want["last"])
        assert float(np.median(steps["duration_s"])) == pytest.approx(want["median_step_s"], rel=0.05)
        assert set(bundle.steps["phase"]) - {"step"} >= set(want["phases"])
    read = {(str(k), int(s)) for k, s in bundle.events[["kind", "step"]].itertuples(index=False)}
    wanted = {tuple(e) for e in want["events"]}
    assert wanted <= read
    assert {k for k, _ in read} <= {k for k, _ in wanted}  # no checkpoint or eval the log does not show
    if "eval_events" in want:  # one event per evaluation, however many lines each prints
        assert int((bundle.events["kind"] == "eval").sum()) == want["eval_events"]


@pytest.mark.parametrize("name", sorted(k for k, v in EXPECTED.items() if not v.get("error")))
def test_verdict(name):
    assert diagnose(read_paths([str(ZOO / name)])).verdict["id"] == EXPECTED[name]["verdict"]
