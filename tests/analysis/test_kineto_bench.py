"""benchmarks/kineto_load.py runs end to end (tiny trace, one repeat); the figures themselves are not asserted."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "kineto_load.py"
TRACE = ROOT / "tests" / "data" / "kineto" / "hta" / "amd_mi250.json.gz"


def test_help_has_an_example():
    out = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=True)
    assert "example: python benchmarks/kineto_load.py" in out.stdout


def test_measure_all_side_by_side():
    spec = importlib.util.spec_from_file_location("kineto_load", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    summary = mod.measure_all(TRACE, repeats=1, variants=("json.load", "playbook"))
    json.dumps(summary)
    v = summary["variants"]
    assert v["json.load"]["rows"] == 220 and v["playbook"]["rows"] == 112  # all events vs kept complete events
    assert v["playbook"]["mb_per_s"] > 0 and v["playbook"]["rss_peak_mib"] >= v["playbook"]["load_rss_mib"] >= 0
    assert v["json.load"]["speed_vs_json_load"] == 1.0


def test_unknown_variant_is_refused():
    out = subprocess.run([sys.executable, str(SCRIPT), str(TRACE), "--variants", "ujson"], capture_output=True,
                         text=True)
    assert out.returncode == 2 and "unknown variant" in out.stderr
