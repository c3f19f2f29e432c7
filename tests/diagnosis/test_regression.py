"""Regression triage (playbook.diagnosis.regression): compare_runs finds the cause a fixture was built with.

Fixtures: LABELED SYNTHETIC run directories (playbook.labs.synthetic steps + a fingerprint written into meta.json)
whose cause is known by construction, and a recorded pair of real lab runs (tests/data/compare/data_starvation).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import changed_env, make_run

from playbook.diagnosis.regression import environment_diff as envdiff
from playbook.diagnosis.regression import runs as run_tables
from playbook.diagnosis.regression.verdict import compare_runs, gap_closed, injected_verdict
from playbook.labs import synthetic
from playbook.model import schema
from playbook.readers import rundir


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> schema.Bundle:
    return make_run(tmp_path_factory.mktemp("good") / "run", config={"checkpoint_every": 0, "num_workers": 8},
                    seed=1)


def test_periodic_checkpoint_stall_is_the_top_cause_linked_to_the_setting(good, tmp_path):
    bad = make_run(tmp_path / "bad", env=changed_env(torch__version="2.6.0"),
                   config={"checkpoint_every": 20, "num_workers": 8}, stall_every=20, stall_s=2.0, seed=2)
    r = compare_runs(good, bad, n_boot=500)
    assert r.verdict == "slower" and r.throughput["ratio"] < 1
    assert r.top["id"] == "periodic_stall"
    assert "config.checkpoint_every" in r.top["changes"]
    assert r.top["share_of_change"] > 0.7
    env = {e["key"]: e for e in r.environment}
    assert env["config.checkpoint_every"]["score"] > env["torch"]["score"]  # the version bump explains nothing
    ckpt = next(e for e in r.events if e["kind"] == "checkpoint")
    assert (ckpt["good_events"], ckpt["bad_events"]) == (0, 6)
    assert ckpt["bad_cadence_steps"] == 20
    assert ckpt["rate_p_value"] < 0.05


def test_gc_pauses_and_recompiles_are_named_with_their_share(good, tmp_path):
    gc = make_run(tmp_path / "gc", env=changed_env(python="3.12.1"), gc_count=15, gc_pause_s=0.6, seed=3)
    r = compare_runs(good, gc, n_boot=500)
    assert r.top["id"] == "gc_pause"
    assert "python" in r.top["changes"]
    rc = make_run(tmp_path / "rc", env=changed_env(compile_cache__inductor__bytes=0),
                  recompile_steps=(0, 1, 3, 6, 10, 15, 21, 28), recompile_s=2.0, seed=4)
    r = compare_runs(good, rc, n_boot=500)
    assert r.top["id"] == "recompilation"
    assert "compile cache (inductor)" in r.top["changes"]
    cache = next(e for e in r.environment if e["key"] == "compile cache (inductor)")
    assert cache["good"].startswith("warm") and cache["bad"] == "cold: empty"


def test_a_slow_rank_is_a_straggler_not_a_slower_fleet(good, tmp_path):
    bad = make_run(tmp_path / "slow", env=changed_env(env={"NCCL_IB_HCA": "mlx5", "OMP_NUM_THREADS": "8"}),
                   slow_rank=1, slow_factor=1.4, seed=5)
    r = compare_runs(good, bad, n_boot=500)
    assert r.top["id"] == "collective_straggler"
    assert any("rank 1 in 100% of BAD's steps" in e for e in r.top["evidence"])
    assert not any(c["id"] == "slower_compute" and c["score"] > r.top["score"] for c in r.causes)


def test_uniformly_slower_compute_links_version_and_hardware_changes(good, tmp_path):
    env = changed_env(torch__version="2.6.0")
    env["nvidia"]["gpus"] = [{"index": i, "name": "NVIDIA A100-SXM4-80GB", "uuid": f"GPU-{i}"} for i in range(4)]
    bad = make_run(tmp_path / "slowgpu", env=env, step_s=0.7, seed=6)
    r = compare_runs(good, bad, n_boot=500)
    assert r.top["id"] == "slower_compute"
    assert {"GPUs", "torch"} <= set(r.top["changes"])
    assert r.environment[0]["key"] == "GPUs"  # hardware links more directly than a version
    assert r.step_time["median"]["ratio"] == pytest.approx(1.4, rel=0.05)


def test_identical_runs_show_no_significant_difference(good):
    r = compare_runs(good, good, n_boot=300)
    assert r.verdict == "no significant difference"
    assert r.throughput["ratio"] == pytest.approx(1.0)
    assert r.throughput["ratio_lo"] <= 1 <= r.throughput["ratio_hi"]
    assert r.causes == [] and r.environment == []
    assert r.summary.startswith("no significant difference")


def _ar_run(seed: int, slowdown: float = 1.0, phi: float = 0.6, n: int = 150) -> schema.Bundle:
    """One rank, `n` steps whose times follow a log-AR(1) (neighbouring steps alike), phases data + fwd."""
    rng = np.random.default_rng(seed)
    x = np.zeros(n)
    x[0] = rng.standard_normal() * 0.1
    for i in range(1, n):
        x[i] = phi * x[i - 1] + rng.standard_normal() * 0.1 * math.sqrt(1 - phi ** 2)
    d = 0.1 * slowdown * np.exp(x)
    starts = np.r_[0.0, np.cumsum(d)[:-1]]
    t0 = pd.Timestamp("2026-01-01T00:00:00Z")
    rows = {k: [] for k in ("time", "host", "rank", "step", "phase", "duration_s")}
    for s in range(n):
        for phase, at, dur in (("step", starts[s], d[s]), ("data", starts[s], 0.1 * d[s]),
                               ("fwd", starts[s] + 0.1 * d[s], 0.9 * d[s])):
            for k, v in zip(rows, (t0 + pd.Timedelta(seconds=at), "h", 0, s, phase, dur), strict=True):
                rows[k].append(v)
    return schema.Bundle(inputs=[f"ar{seed}"], steps=schema.steps_frame(rows))


def test_same_configuration_is_within_the_noise_and_a_real_slowdown_is_not():
    """Calibration on autocorrelated steps: pairs of runs of one configuration are rarely called different
    (nominal 5%; an i.i.d. bootstrap would say so far more often), a 10% slowdown almost always is."""
    null = [compare_runs(_ar_run(2 * k), _ar_run(2 * k + 1), n_boot=400, diagnoses=False).verdict
            for k in range(10)]
    assert sum(v != "no significant difference" for v in null) <= 2
    slow = [compare_runs(_ar_run(100 + 2 * k), _ar_run(101 + 2 * k, 1.1), n_boot=400, diagnoses=False)
            for k in range(4)]
    assert all(r.verdict == "slower" for r in slow)
    assert all(r.top["id"] == "slower_compute" for r in slow)


def test_throughput_is_named_in_the_unit_the_runs_count(tmp_path):
    """The labs count samples in the steps' `tokens` ("tokens_unit": "samples" in their meta.json): compare says
    samples/s, as the labs do; runs that disagree on the unit fall back to the schema's tokens/s."""
    runs = {}
    for name, seed, unit in (("a", 1, "samples"), ("b", 2, "samples"), ("c", 3, None)):
        path = tmp_path / name
        make_run(path, tokens=32.0, seed=seed)
        meta = json.loads((path / "meta.json").read_text())
        if unit:
            meta["tokens_unit"] = unit
        (path / "meta.json").write_text(json.dumps(meta))
        runs[name] = rundir.read_run(path)
    assert compare_runs(runs["a"], runs["b"], n_boot=200, diagnoses=False).throughput["unit"] == "samples/s"
    assert compare_runs(runs["a"], runs["c"], n_boot=200, diagnoses=False).throughput["unit"] == "tokens/s"


def test_work_per_step_is_normalised_when_tokens_are_logged(tmp_path):
    small = make_run(tmp_path / "small", tokens=1000.0, step_s=0.5, seed=1)
    big = make_run(tmp_path / "big", tokens=2000.0, step_s=1.0, seed=2)  # twice the batch, twice the time
    r = compare_runs(small, big, n_boot=500)
    assert r.throughput["unit"] == "tokens/s"
    assert r.verdict == "no significant difference"
    assert r.step_time["median"]["ratio"] == pytest.approx(1.0, abs=0.05)  # per GOOD's 1000 tokens
    assert any(c["id"] == "workload_change" for c in r.causes)


def test_repeated_runs_measure_run_to_run_variance(tmp_path):
    goods = [make_run(tmp_path / f"g{i}", step_s=s, seed=i) for i, s in enumerate((0.50, 0.53, 0.48))]
    bads = [make_run(tmp_path / f"b{i}", step_s=s, seed=10 + i) for i, s in enumerate((0.75, 0.70, 0.78))]
    r = compare_runs(goods, bads, n_boot=500)
    tp = r.throughput
    assert tp["run_to_run"]["measured"] and len(tp["good_per_run"]) == 3
    assert tp["runs_t_interval"][0] <= tp["ratio_lo"] or tp["bootstrap_interval"][0] <= tp["ratio_lo"]
    assert tp["ratio_lo"] <= min(tp["runs_t_interval"][0], tp["bootstrap_interval"][0]) + 1e-12
    assert r.verdict == "slower" and 0.6 < tp["ratio"] < 0.75
    assert r.good["run_cv"] > 0


def test_recorded_lab_pair_names_data_starvation_and_the_loader_setting(data_dir):
    root = data_dir / "compare" / "data_starvation"
    r = compare_runs(rundir.read_run(root / "good"), rundir.read_run(root / "bad"), n_boot=500)
    assert r.verdict == "slower"
    assert r.top["id"] == "data_starvation"
    assert r.top["changes"][0] == "knobs.loader"
    data = next(p for p in r.phases if p["phase"] == "data")
    assert data["significant"] and data["delta_s"] > 0.02
    assert r.pattern["bad"]["top_hypothesis"] == "data_starvation"
    assert r.good["environment"] and r.bad["environment"]


def test_telemetry_only_compares_utilization_and_ranks_diagnose_deltas():
    good, _ = synthetic.simulate_bundle("healthy", hosts=1, gpus_per_host=4, duration_s=600, interval_s=2, seed=0)
    bad, _ = synthetic.simulate_bundle("oscillation", hosts=1, gpus_per_host=4, duration_s=600, interval_s=2, seed=1)
    r = compare_runs(good, bad, n_boot=300)
    assert r.mode == "utilization"
    assert r.throughput["unit"] == "mean utilization %"
    assert r.verdict == "slower" and r.throughput["ratio"] < 0.9
    assert r.causes and r.top["id"] in ("periodic_stall", "data_starvation")
    assert any(c.startswith("oscillation: none") for c in r.pattern["changes"])
    assert any("no environment fingerprint" in w for w in r.warnings)


def test_nothing_comparable_is_reported_not_raised():
    r = compare_runs(schema.Bundle(inputs=["a"]), schema.Bundle(inputs=["b"]), diagnoses=False)
    assert r.verdict == "not comparable" and r.mode == "none"
    with pytest.raises(ValueError):
        compare_runs([], [schema.Bundle()])


def test_json_contract(good, tmp_path):
    bad = make_run(tmp_path / "bad", stall_every=20, stall_s=2.0, seed=2)
    r = compare_runs(good, bad, n_boot=300)
    d = json.loads(r.to_json())
    assert set(d) == {"verdict", "summary", "mode", "good", "bad", "throughput", "step_time", "phases", "events",
                      "causes", "pattern", "environment", "unchanged", "warnings"}
    assert d["verdict"] in ("slower", "faster", "no significant difference", "not comparable")
    for c in d["causes"]:
        assert {"id", "score", "evidence", "changes", "next_step", "fix", "notebook"} <= set(c)
        assert 0 <= c["score"] <= 1
    assert [c["score"] for c in d["causes"]] == sorted((c["score"] for c in d["causes"]), reverse=True)
    for p in d["phases"]:
        assert {"phase", "good_s", "bad_s", "delta_s", "delta_lo", "delta_hi", "p_value", "significant"} <= set(p)
    assert {"unit", "good", "bad", "ratio", "ratio_lo", "ratio_hi", "p_value", "significant"} <= set(d["throughput"])
    assert "NaN" not in r.to_json()


# ---------------------------------------------------------------------------------------------------------------
# Building blocks


def test_nested_events_belong_to_the_outer_one():
    start = np.array([0.0, 0.2, 5.0, 5.5])
    end = np.array([1.0, 0.5, 6.0, 6.5])  # a GC pause inside a recompile; two partly overlapping events
    excl = run_tables._exclusive(start, end)
    np.testing.assert_allclose(excl, [1.0, 0.0, 1.0, 0.5])


def _steps_with_events(event_step: int, duration: float | None, event_time_s: float | None) -> schema.Bundle:
    t0 = pd.Timestamp("2026-01-01T00:00:00Z")
    rows = {k: [] for k in ("time", "host", "rank", "step", "phase", "duration_s")}
    at = 0.0
    for s in range(20):
        d = 1.0 + (2.0 if s == 7 else 0.0)
        for phase, start, dur in (("step", at, d), ("data", at, 0.1), ("fwd", at + 0.1, d - 0.1)):
            rows["time"].append(t0 + pd.Timedelta(seconds=start))
            rows["host"].append("h")
            rows["rank"].append(0)
            rows["step"].append(s)
            rows["phase"].append(phase)
            rows["duration_s"].append(dur)
        at += d
    ev = schema.events_frame({"time": [t0 + pd.Timedelta(seconds=event_time_s if event_time_s is not None else 7.2)],
                              "host": ["h"], "rank": [0], "step": [event_step], "kind": ["recompile"],
                              "duration_s": [duration if duration is not None else np.nan]})
    return schema.Bundle(inputs=["x"], steps=schema.steps_frame(rows), events=ev)


def test_events_are_moved_out_of_their_phase_and_placed_by_time():
    r = run_tables.run_steps(_steps_with_events(-1, 2.0, 7.3), "run")
    row = r.table.loc[7]
    assert row["event:recompile"] == pytest.approx(2.0)
    assert row["cause:recompilation"] == pytest.approx(2.0)
    assert row["cause:slower_compute"] == pytest.approx(0.9)  # fwd 2.9 s less the 2 s recompile inside it
    assert row["cause:data_starvation"] == pytest.approx(0.1)
    cause_cols = [c for c in r.table.columns if c.startswith("cause:")]
    np.testing.assert_allclose(r.table[cause_cols].sum(axis=1), r.table["wall_s"])


def test_events_without_durations_are_costed_by_their_steps_excess():
    r = run_tables.run_steps(_steps_with_events(7, None, None), "run")
    assert r.table.loc[7, "event:recompile"] == pytest.approx(2.0)
    assert any("carry no durations" in w for w in r.warnings)


def test_environment_links_changed_items_to_causes(tmp_path):
    b = make_run(tmp_path / "r", config={"num_workers": 8, "dynamic": False}, steps=20)
    env, found = envdiff.environment(b)
    assert found
    assert env["GPUs"][0] == "4 × NVIDIA H100 80GB HBM3"
    assert env["compile cache (inductor)"][0] == "warm: 250.0 MB in 900 files"
    assert env["command --lr"][0] == "3e-4"
    assert envdiff.links("env NCCL_IB_HCA", "env")[0] == ("collective_straggler",)
    assert envdiff.links("config.num_workers", "config")[0] == ("data_starvation",)
    assert "recompilation" in envdiff.links("config.dynamic", "config")[0]
    assert envdiff.links("variant", "config") == ((), 0.0)
    assert envdiff._options("torchrun --nproc-per-node 8 train.py --bf16 --lr=1e-3") == {
        "--nproc-per-node": "8", "--bf16": "on", "--lr": "1e-3"}


def test_gap_closed_and_the_lab_verdict(good, tmp_path):
    bad = make_run(tmp_path / "bad", config={"checkpoint_every": 20, "num_workers": 8}, stall_every=20, stall_s=2.0,
                   seed=2)
    r = compare_runs(good, bad, n_boot=300)
    fixed = compare_runs(good, make_run(tmp_path / "fixed", seed=3), n_boot=300)
    status, text = injected_verdict(r, "periodic_stall", "config.checkpoint_every", reverted=fixed, other=r)
    assert status == "confirmed", text
    assert gap_closed(r, fixed) > 0.5 and gap_closed(r, r) == pytest.approx(0.0)
    assert injected_verdict(r, "gc_pause")[0] == "refuted"
    assert injected_verdict(r, "periodic_stall", "config.num_workers")[0] == "inconclusive"
    assert math.isnan(gap_closed(compare_runs(good, good, n_boot=200, diagnoses=False), r))


def test_the_verdict_follows_from_a_phase_that_grew_and_names_a_changed_setting(tmp_path):
    """One run a side: the throughput interval may hold 100%, but a checkpoint phase that grew beyond its own
    interval is a difference, and so is a changed setting (the verdict line never says "none" over them)."""
    good = make_run(tmp_path / "good", config={"ckpt_mode": "off"}, noise=0.3, seed=4)
    bad = make_run(tmp_path / "bad", config={"ckpt_mode": "sync"}, noise=0.3, stall_every=10, stall_s=0.4, seed=5)
    r = compare_runs(good, bad, n_boot=500)
    assert not r.throughput["significant"]  # 97%, CI 91-104%: the throughput alone cannot tell
    assert r.verdict == "slower" and "periodic_stall grew beyond its interval" in r.summary
    same = compare_runs(good, make_run(tmp_path / "same", config={"ckpt_mode": "sync"}, noise=0.3, seed=6),
                       n_boot=500)
    assert same.verdict == "no significant difference"
    assert "configuration differs (config.ckpt_mode: off → sync)" in same.summary


def test_a_notebook_kernels_argv_is_not_the_training_command():
    from playbook.probes.fingerprint import fingerprint, is_kernel_command

    argv = ["/usr/lib/python3/site-packages/ipykernel_launcher.py", "-f", "/run/kernel-1234.json"]
    assert is_kernel_command(argv) and not is_kernel_command("torchrun --nproc-per-node 8 train.py")
    import sys

    saved = sys.argv
    try:
        sys.argv = argv
        assert fingerprint(walk_s=0.0)["command"] is None
    finally:
        sys.argv = saved
