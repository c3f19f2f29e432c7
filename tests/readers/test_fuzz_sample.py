"""A small seeded sample of benchmarks/fuzz.py (issue 17): no exception other than PlaybookError escapes the
readers, run directories and shard loader owned by the hostile-input work; the full campaign is the benchmark."""

from __future__ import annotations

import importlib.util
import signal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("fuzz", ROOT / "benchmarks" / "fuzz.py")
fuzz = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fuzz)

TARGETS = ["reader:flight_recorder", "reader:nsys", "rundir", "shards"]


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer for the per-case limit")
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["mutation", "structure"])
def test_seeded_fuzz_sample_has_no_escapes(target, kind):
    n = 10 if target == "rundir" else 30
    res = fuzz.run_batch(target, kind, seed=17, n=n, case_s=20.0)
    c = res["counts"]
    assert c["cases"] == n
    assert c.get("escapes", 0) == 0 and c.get("hangs", 0) == 0 and c.get("over_budget", 0) == 0, res["escapes"]
    assert c.get("multi_line", 0) == 0
