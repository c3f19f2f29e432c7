"""The LABELED SYNTHETIC generator: labels, knobs, and files the real readers read back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from playbook.labs.synthetic import (
    SCENARIOS,
    main,
    simulate_bundle,
    simulate_steps,
    simulate_telemetry,
    write_nvidia_smi_csv,
    write_run_dir,
)
from playbook.model import schema
from playbook.readers import read_paths
from playbook.readers.rundir import read_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_frame_is_labelled_synthetic(scenario):
    frame, truth = simulate_telemetry(scenario, hosts=2, gpus_per_host=2, duration_s=120.0)
    assert set(frame["source"].astype(str)) == {f"synthetic:{scenario}"} == {truth.source}
    assert list(frame.columns) == list(schema.TELEMETRY_COLUMNS)
    assert frame["time"].dt.tz is not None
    assert truth.hypothesis in {"healthy", "periodic_stall", "data_starvation", "pipeline_imbalance",
                                "collective_straggler", "throttling", "hardware_fault"}


def test_knobs_interval_nan_gaps_jitter():
    frame, truth = simulate_telemetry("oscillation", hosts=1, gpus_per_host=2, duration_s=600.0, interval_s=2.0,
                                      nan_frac=0.1, gaps=1, gap_s=60.0, jitter=0.5, seed=7)
    assert truth.interval_s == 2.0
    assert frame.attrs["interval_s"] == pytest.approx(2.0, rel=0.1)
    assert 0.05 < frame["util_pct"].isna().mean() < 0.15
    assert len(frame) < 2 * 300 - 50  # a 60 s outage on both GPUs
    per_gpu = frame.groupby("gpu")["time"].apply(lambda t: t.diff().dt.total_seconds().max())
    assert (per_gpu >= 60).all()


def test_levels_and_duty_of_the_classic_case():
    frame, truth = simulate_telemetry("oscillation", hosts=1, gpus_per_host=1, noise_pct=0.0, skew_s=0.0)
    u = frame["util_pct"].to_numpy()
    assert set(np.unique(u)) == {20.0, 90.0}
    assert np.mean(u == 90.0) == pytest.approx(0.75, abs=0.02)


def test_straggler_peers_spin_at_low_power():
    frame, truth = simulate_telemetry("straggler", hosts=1, gpus_per_host=4)
    guilty = frame["gpu"] == 0
    low = frame[guilty]["util_pct"] < 50
    peers = frame[~guilty]
    t_low = set(frame[guilty][low]["time"].dt.floor("s"))
    during = peers[peers["time"].dt.floor("s").isin(t_low)]
    assert during["util_pct"].mean() > 95 and during["power_w"].mean() < 300


def test_nvidia_smi_csv_round_trip(tmp_path):
    frame, _ = simulate_telemetry("lost", hosts=2, gpus_per_host=2, duration_s=60.0)
    paths = write_nvidia_smi_csv(frame, tmp_path, units=True, suffix=".csv")
    assert sorted(p.name for p in paths) == ["node00.csv", "node01.csv"]
    bundle = read_paths([tmp_path])
    got = bundle.telemetry
    assert sorted(set(got["host"])) == ["node00", "node01"]
    assert len(got) == len(frame)
    assert np.allclose(np.sort(got["util_pct"].dropna()), np.sort(frame["util_pct"].dropna()))
    assert got["util_pct"].isna().sum() == frame["util_pct"].isna().sum()  # "[Unknown Error]" → NaN
    assert np.allclose(np.sort(got["power_w"].dropna()), np.sort(frame["power_w"].dropna()), atol=0.006)


def test_steps_and_events_and_run_dir(tmp_path):
    steps, events, truth = simulate_steps(ranks=3, steps=120, stall_every=30, gc_count=4, recompile_steps=(7,))
    assert set(steps["phase"]) == {"step", "data", "h2d", "fwd", "bwd", "collective", "optimizer", "checkpoint"}
    assert set(events["kind"]) == {"checkpoint", "gc", "recompile"}
    assert truth.every_n_steps == 30 and truth.hypothesis == "periodic_stall"
    assert (events.loc[events["kind"] == "checkpoint", "step"] % 30 == 29).all()
    run = write_run_dir(tmp_path / "r", steps=steps, events=events)
    back = read_run(run)
    assert len(back.steps) == len(steps) and len(back.events) == len(events)
    assert back.meta["run"]["synthetic"] is True


def test_bundle_helper():
    bundle, truth = simulate_bundle("antiphase", hosts=1, gpus_per_host=4, duration_s=300.0)
    assert bundle.inputs == [truth.source] and len(bundle.telemetry) == 4 * 300


def test_cli_writes_readme_with_the_exact_command(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["--scenario", "antiphase", "--hosts", "2", "--gpus", "2", "--duration", "120", "--interval", "2",
                 "--out", str(out)]) == 0
    readme = (out / "README.md").read_text()
    assert "SYNTHETIC" in readme and "--scenario antiphase" in readme and '"synchrony": "groups"' in readme
    assert sorted(p.name for p in out.glob("*.csv")) == ["node00.csv", "node01.csv"]


def test_cli_help():
    res = subprocess.run([sys.executable, "-m", "playbook.labs.synthetic", "--help"], capture_output=True, text=True,
                         cwd=ROOT)
    assert res.returncode == 0 and "example" in res.stdout and "SYNTHETIC" in res.stdout


def test_every_truth_and_case_names_a_catalog_cause(tmp_path):
    import synthetic_cases

    from playbook.knowledge.causes import CAUSES
    from playbook.labs import synthetic

    for scenario in synthetic.SCENARIOS:
        assert synthetic.simulate_telemetry(scenario, duration_s=60.0)[1].cause.id in CAUSES
    cases = (synthetic_cases.case_rank0_checkpoint, synthetic_cases.case_power_cap, synthetic_cases.case_host_only,
             synthetic_cases.case_three_polls, synthetic_cases.case_level_shift, synthetic_cases.case_grad_accum,
             synthetic_cases.case_warmup_checkpoint)
    assert all(case()[1] in CAUSES for case in cases)
    assert synthetic_cases.case_trace("item", tmp_path)[1] in CAUSES


def test_synthetic_imports_no_analysis():
    """The generator is below analysis in the layers: its vocabulary comes from the cause catalog."""
    code = ("import sys; sys.path.insert(0, 'tests'); import playbook.labs.synthetic, synthetic_cases; "
            "print(sorted(m for m in sys.modules if m.startswith(('playbook.analysis', 'playbook.diagnosis'))))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr
