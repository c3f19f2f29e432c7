"""notebooks/02_observability.ipynb end to end with small parameters, and the observability lab's verdict rule,
runs and command line (playbook.labs.workloads.observability)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from nbrun import run_notebook

from playbook.core.errors import WorkloadError
from playbook.labs.workloads import observability as obs

VARIANTS = ["none", "timer", "probes_1hz", "probes_10hz", "probes_100hz", "profiler"]


def test_notebook_measures_the_recorder_and_the_window_catches_the_stall(tmp_path):
    rec = run_notebook("02_observability.ipynb", tmp_path, steps=10, repeats=2, demo_steps=16, shuffle_buffer=4,
                       out_dir=str(tmp_path / "runs"))
    v = rec["verdict"]
    assert_verdict_follows_from_figures(v)
    assert set(rec["step_time_ratios"]) == set(VARIANTS) and rec["step_time_ratios"]["none"] == 1.0
    cpu = rec["probe_threads_cpu_pct"]
    # a difference of two CPU clocks (process - training thread): a few hundredths below zero is clock noise.
    # Whether it stays under the 5% budget is the timing claim benchmarks/probe_overhead.py measures.
    # Whether 100 Hz costs more than 1 Hz is a timing comparison too (it failed once on a loaded suite: 3.48 vs 7.01):
    # every rate is measured and finite here; their order is benchmarks/probe_overhead.py's to show
    assert all(cpu[v] > -1.0 and math.isfinite(cpu[v]) for v in ("probes_1hz", "probes_10hz", "probes_100hz"))
    assert rec["profiler_window_ratios"]["window_cpu_ratio"] > 0
    w = rec["window"]
    assert w["caught_stall"] and w["stalls_caught"] and set(w["stalls_caught"]) <= set(w["profiled_steps"])
    assert w["max_ms"] >= 2 * w["median_ms"]
    assert v["figures"]["window_caught_stall"] is True


def assert_verdict_follows_from_figures(v: dict) -> None:
    """Whether a 10 Hz probe costs under 5% of step time is a timing target (benchmarks/probe_overhead.py measures
    it side by side); inside a loaded suite only the verdict's consistency with its own figures is asserted."""
    f = v["figures"]
    budget = 100 * f["tolerance"]
    if v["status"] == "confirmed":
        assert f["sampler_cpu_pct"] <= budget and f["ratio_lo"] <= 1 + f["tolerance"], v
    elif v["status"] == "refuted":
        assert f["sampler_cpu_pct"] > budget or f["ratio_lo"] > 1 + f["tolerance"], v
    else:
        assert v["status"] == "inconclusive" and not (math.isfinite(f["sampler_cpu_pct"])
                                                     and math.isfinite(f["ratio_lo"])), v


def runs_frame(step_ms: dict[str, list[float]], other_cpu_pct: dict[str, float]) -> pd.DataFrame:
    rows = [{"variant": v, "repeat": i, "step_ms": x, "other_cpu_pct": other_cpu_pct.get(v, 0.0)}
            for v, xs in step_ms.items() for i, x in enumerate(xs)]
    return pd.DataFrame(rows)


def test_verdict_rule():
    quiet = {"none": [10.0, 10.1, 9.9, 10.0], "probes_10hz": [10.1, 10.2, 10.0, 10.1]}
    status, text, fig = obs.overhead_verdict(runs_frame(quiet, {"probes_10hz": 1.0}))
    assert status == "confirmed" and fig["sampler_cpu_pct"] == pytest.approx(1.0) and "10 Hz" in text
    status, text, _ = obs.overhead_verdict(runs_frame(quiet, {"probes_10hz": 7.5}))
    assert status == "refuted" and "7.5% of the loop's CPU" in text  # the direct cost is over budget
    slow = {"none": [10.0, 10.1, 9.9, 10.0], "probes_10hz": [11.5, 11.6, 11.4, 11.5]}
    status, text, fig = obs.overhead_verdict(runs_frame(slow, {"probes_10hz": 1.0}))
    assert status == "refuted" and fig["ratio_lo"] > 1.05 and "step time is longer" in text
    noisy = {"none": [10.0, 20.0, 5.0, 12.0], "probes_10hz": [30.0, 6.0, 11.0, 9.0]}
    status, text, fig = obs.overhead_verdict(runs_frame(noisy, {"probes_10hz": 1.0}))
    assert status == "confirmed" and fig["ratio_lo"] < 1.0 and "within noise" in text
    status, _, _ = obs.overhead_verdict(runs_frame(quiet, {"probes_10hz": math.nan}))
    assert status == "inconclusive"


def test_one_run_per_variant_and_bad_settings(tmp_path):
    r = obs.overhead_run(tmp_path / "p", "profiler", steps=4, warmup_steps=1, batch_size=8, hidden=16)
    assert r["steps"] == 2 and r["window_cpu_ratio"] > 0 and r["step_ms"] > 0
    r = obs.overhead_run(tmp_path / "n", "none", steps=2, warmup_steps=0, batch_size=8, hidden=16)
    assert math.isnan(r["window_cpu_ratio"]) and abs(r["other_cpu_pct"]) < 50
    with pytest.raises(WorkloadError, match="unknown variant"):
        obs.overhead_run(tmp_path, "everything")
    with pytest.raises(WorkloadError, match="unknown knob"):
        obs.overhead_run(tmp_path, "none", bogus=1)
    with pytest.raises(WorkloadError, match="repeats must be >= 2"):
        obs.measure_overheads(tmp_path, ["none"], repeats=1)


def test_cli_help_has_an_example(capsys):
    with pytest.raises(SystemExit) as exc:
        obs.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "example" in out and "python -m playbook.labs.workloads.observability --repeats" in out
    assert obs.main(["--variants", "nope", "--repeats", "2"]) == 2
