"""The diagnosis of small LABELED SYNTHETIC fleets is the one the code gave before the analyses were vectorised
for scale (issue 31): same findings, same figures within float tolerance.

tests/data/diagnose/small_fleets_before_31.json holds `diagnose(...).to_json()` of the fleets below, written by
the per-GPU-loop implementation (commit 85fbd66). A deliberate change to what the diagnosis says rewrites it:
    python tests/diagnosis/test_same_answers.py
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "diagnose" / "small_fleets_before_31.json"
FLEETS = {"healthy": (2, 4), "oscillation": (4, 8), "irregular": (2, 8), "antiphase": (6, 8), "straggler": (2, 8),
          "throttled": (2, 4), "lost": (2, 4)}  # scenario: (hosts, GPUs per host)


def _diagnosis(scenario: str) -> dict:
    from playbook.diagnosis import diagnose
    from playbook.labs.synthetic import simulate_bundle

    hosts, per_host = FLEETS[scenario]
    bundle, _ = simulate_bundle(scenario, hosts=hosts, gpus_per_host=per_host, duration_s=900.0, seed=3)
    return json.loads(diagnose(bundle).to_json())


def _differences(got, want, where: str = "") -> list[str]:
    """Paths where `got` differs from `want`: floats within 1e-6 relative (1e-9 absolute), all else exactly."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{where}.{k}: missing" for k in want if k not in got]
        out += [f"{where}.{k}: new" for k in got if k not in want]
        for k in sorted(want.keys() & got.keys()):
            out += _differences(got[k], want[k], f"{where}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} items, was {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True)) for d in _differences(g, w, f"{where}[{i}]")]
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9) or (math.isnan(got) and math.isnan(want)):
            return []
    elif got == want and type(got) is type(want):
        return []
    return [f"{where}: {got!r}, was {want!r}"]


@pytest.mark.parametrize("scenario", list(FLEETS))
def test_small_fleet_diagnosis_is_what_it_was(scenario):
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))[scenario]
    got = _diagnosis(scenario)
    assert got["hypotheses"][0]["id"] == want["hypotheses"][0]["id"]
    assert _differences(got, want) == []


def test_the_comparison_can_fail():
    want = {"a": [1.0, {"b": "x"}], "c": 2}
    assert _differences({"a": [1.0 + 1e-9, {"b": "x"}], "c": 2}, want) == []
    assert _differences({"a": [1.01, {"b": "x"}], "c": 2}, want) == [".a[0]: 1.01, was 1.0"]
    assert _differences({"a": [1.0, {"b": "y"}], "c": 2.0}, want) == [".a[1].b: 'y', was 'x'", ".c: 2.0, was 2"]


if __name__ == "__main__":  # rewrite the golden file (only for a deliberate change of the diagnosis)
    GOLDEN.write_text(json.dumps({s: _diagnosis(s) for s in FLEETS}, indent=1, sort_keys=True) + "\n",
                      encoding="utf-8")
    sys.exit(0)
