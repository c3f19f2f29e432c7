"""`playbook diagnose`: the JSON contract, the CLI, and end-to-end runs through the real readers."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from playbook.cli import main
from playbook.diagnosis import diagnose
from playbook.labs.synthetic import simulate_steps, simulate_telemetry, write_nvidia_smi_csv, write_run_dir
from playbook.model.schema import Bundle
from playbook.readers import read_paths

ROOT = Path(__file__).resolve().parents[2]
STATUSES = {"ok", "underutilized", "saturated", "throttled", "lost"}
SYNCHRONY = {"synchronized", "groups", "independent", None}


def check_contract(obj: dict) -> None:
    """The exact key set and types of issue 3's contract."""
    # issue 14 extended the contract: a verdict section, and each hypothesis's lab command and lost share
    assert list(obj) == ["inputs", "warnings", "accounting", "gpus", "oscillation", "steps", "ranks", "hypotheses",
                         "verdict"]
    assert obj["verdict"]["id"] == obj["hypotheses"][0]["id"] and isinstance(obj["verdict"]["sentence"], str)
    assert all(isinstance(x, str) for x in obj["inputs"]) and all(isinstance(x, str) for x in obj["warnings"])
    for g in obj["gpus"]:
        assert set(g) == {"id", "host", "index", "mean_util_pct", "status", "evidence"}
        assert g["id"] == f"{g['host']}:{g['index']}" and isinstance(g["index"], int)
        assert g["mean_util_pct"] is None or isinstance(g["mean_util_pct"], float)
        assert g["status"] in STATUSES and isinstance(g["evidence"], str)
    o = obj["oscillation"]
    assert list(o) == ["detected", "periodic", "period_s", "duty_cycle", "high_pct", "low_pct", "synchrony",
                       "groups"]
    assert isinstance(o["detected"], bool) and isinstance(o["periodic"], bool)
    for k in ("period_s", "duty_cycle", "high_pct", "low_pct"):
        assert o[k] is None or isinstance(o[k], (int, float))
    assert (o["period_s"] is not None) == o["periodic"]
    assert o["synchrony"] in SYNCHRONY
    assert all(isinstance(g, list) and all(isinstance(i, str) for i in g) for g in o["groups"])
    assert isinstance(obj["steps"], dict) and isinstance(obj["ranks"], list)
    hyps = obj["hypotheses"]
    # causes come highest score first; a verdict (healthy, insufficient_data) never leads while P(wrong) ≥ 0.5,
    # so it may follow a cause scoring below it (issue 14)
    causes = [h["score"] for h in hyps if h["id"] not in ("healthy", "insufficient_data")]
    assert hyps and causes == sorted(causes, reverse=True)
    for h in hyps:
        assert set(h) == {"id", "score", "evidence", "next_step", "fix", "notebook", "command", "lost_share",
                          "names", "named"}
        assert isinstance(h["named"], int) and h["named"] >= len(h["names"])
        assert h["lost_share"] is None or 0.0 <= h["lost_share"] <= 1.0
        assert 0.0 <= h["score"] <= 1.0
        assert isinstance(h["evidence"], list) and all(isinstance(e, str) for e in h["evidence"])
        assert h["notebook"].startswith("notebooks/") and h["notebook"].endswith(".ipynb")

    def no_nan(v):
        if isinstance(v, float):
            assert math.isfinite(v)
        elif isinstance(v, dict):
            [no_nan(x) for x in v.values()]
        elif isinstance(v, list):
            [no_nan(x) for x in v]

    no_nan(obj)


@pytest.mark.parametrize("scenario", ["oscillation", "lost", "healthy"])
def test_json_contract_on_telemetry(scenario):
    frame, _ = simulate_telemetry(scenario, nan_frac=0.02)
    d = diagnose(Bundle(inputs=["x"], telemetry=frame))
    obj = json.loads(d.to_json())
    check_contract(obj)
    assert obj["steps"] == {} and obj["ranks"] == []


def test_json_contract_with_steps_and_ranks():
    steps, events, _ = simulate_steps(ranks=4, stall_every=40)
    frame, _ = simulate_telemetry("oscillation", hosts=1, gpus_per_host=4)
    obj = json.loads(diagnose(Bundle(telemetry=frame, steps=steps, events=events)).to_json())
    check_contract(obj)
    assert obj["steps"]["periodic_slow"]["every_n_steps"] == 40
    assert {r["rank"] for r in obj["ranks"]} == {0, 1, 2, 3}
    assert all("straggler_score" in r for r in obj["ranks"])


def test_nan_becomes_null():
    frame, _ = simulate_telemetry("healthy", hosts=1, gpus_per_host=2)
    frame.loc[frame["gpu"] == 1, "util_pct"] = np.nan
    obj = json.loads(diagnose(Bundle(telemetry=frame)).to_json())
    by = {g["id"]: g for g in obj["gpus"]}
    assert by["node00:1"]["mean_util_pct"] is None and obj["oscillation"]["period_s"] is None


def test_empty_bundle_still_answers():
    obj = json.loads(diagnose(Bundle()).to_json())
    check_contract(obj)
    # nothing read is no evidence of health (issue 14: it was "healthy" before)
    assert obj["hypotheses"][0]["id"] == "insufficient_data"
    assert any("nothing to analyse" in w for w in obj["warnings"])


def test_cpu_lab_run_oscillation_from_step_phases(tmp_path, capsys):
    steps, events, truth = simulate_steps(ranks=2, stall_every=40, steps=400)
    run = write_run_dir(tmp_path / "run", steps=steps, events=events)
    assert main(["diagnose", str(run), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    check_contract(obj)
    assert obj["gpus"] == []
    assert any("derived from step phases" in w for w in obj["warnings"])
    o = obj["oscillation"]
    assert o["detected"] and o["periodic"] and o["period_s"] == pytest.approx(truth.period_s, rel=0.05)
    assert sorted(o["groups"][0]) == ["node00:rank0", "node00:rank1"]
    assert obj["steps"]["periodic_slow"]["every_n_steps"] == 40


def test_cli_json_is_pure_and_complete(tmp_path, capsys):
    frame, truth = simulate_telemetry("straggler", hosts=2, gpus_per_host=4, noise_pct=5.0)
    write_nvidia_smi_csv(frame, tmp_path, units=True, suffix=".csv")
    assert main(["diagnose", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr().out
    obj = json.loads(out)  # exactly one JSON object, nothing else on stdout
    check_contract(obj)
    assert obj["hypotheses"][0]["id"] == "collective_straggler"
    assert {g["host"] for g in obj["gpus"]} == {"node00", "node01"}
    assert {g["id"]: g["status"] for g in obj["gpus"]}[truth.guilty[0]] == "underutilized"
    assert obj["oscillation"]["period_s"] == pytest.approx(60.0, rel=0.03)


def test_cli_readable_report(tmp_path, capsys):
    steps, events, _ = simulate_steps(ranks=2, stall_every=30, steps=300)
    run = write_run_dir(tmp_path / "run", steps=steps, events=events)
    assert main(["diagnose", str(run)]) == 0
    captured = capsys.readouterr()
    for section in ("GPUs: no GPU telemetry", "Oscillation (busy fraction derived from step phases)",
                    "Steps: 300 steps", "slow every 30 steps", "Hypotheses", "1. periodic_stall"):
        assert section in captured.out
    assert "derived from step phases" in captured.err  # the warning goes to stderr without --json


def test_cli_user_errors_exit_2(tmp_path, capsys):
    assert main(["diagnose", str(tmp_path / "missing.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "missing.csv" in err
    (tmp_path / "a.csv").write_text("timestamp, index, utilization.gpu [%]\n")
    assert main(["diagnose", str(tmp_path / "a.csv"), "--interval", "-1"]) == 2
    assert "--interval" in capsys.readouterr().err


def test_cli_help():
    out = subprocess.run([sys.executable, "-m", "playbook", "diagnose", "--help"], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0
    assert "--json" in out.stdout and "--fields" in out.stdout and "--interval" in out.stdout
    assert "example" in out.stdout


def test_dflash_sample_end_to_end(capsys):
    path = ROOT / "data/samples/dflash-8gpu/nvidia-smi-poll.txt"
    assert main(["diagnose", str(path), "--fields", "index,utilization.gpu,memory.used", "--interval", "2",
                 "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    check_contract(obj)
    assert any("too few" in w for w in obj["warnings"])
    status = {g["index"]: g["status"] for g in obj["gpus"]}
    assert status[5] == status[6] == "underutilized" and status[7] == "saturated"
    assert obj["hypotheses"][0]["id"] == "pipeline_imbalance"
    assert obj["oscillation"]["periodic"] is False


def test_committed_synthetic_sample(capsys):
    sample = ROOT / "data/samples/synthetic-64gpu"
    assert "SYNTHETIC" in (sample / "README.md").read_text()
    assert sum(p.stat().st_size for p in sample.iterdir()) < 500_000
    assert main(["diagnose", str(sample), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert len(obj["gpus"]) == 64
    o = obj["oscillation"]
    assert o["periodic"] and o["period_s"] == pytest.approx(60.0, rel=0.03)
    assert o["duty_cycle"] == pytest.approx(0.75, abs=0.05)
    assert o["high_pct"] == pytest.approx(90, abs=3) and o["low_pct"] == pytest.approx(20, abs=3)
    assert o["synchrony"] == "synchronized" and len(o["groups"][0]) == 64
    assert obj["hypotheses"][0]["id"] == "periodic_stall"


def _pipeline_steps(consumer_busy: float, n: int = 60):
    """Producer ranks 0-2 ("produce" / "blocked") and consumer ranks 3-4 ("consume" / "blocked"), LABELED
    SYNTHETIC: rank 3 works `consumer_busy` of the time, the others wait on the queue."""
    import pandas as pd

    from playbook.model import schema

    rows = []
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    for rank in range(5):
        role = "produce" if rank < 3 else "consume"
        busy = consumer_busy if rank == 3 else 0.2
        for step in range(n):
            start = t0 + pd.Timedelta(seconds=step * 0.2)
            rows += [(start, "h", rank, step, "step", 0.2), (start, "h", rank, step, role, 0.2 * busy),
                     (start + pd.Timedelta(seconds=0.2 * busy), "h", rank, step, "blocked", 0.2 * (1 - busy))]
    df = pd.DataFrame(rows, columns=["time", "host", "rank", "step", "phase", "duration_s"])
    return schema.steps_frame({c: df[c].to_numpy() for c in df.columns})


def test_pipeline_roles_saturated_stage_and_waiting_ranks():
    d = diagnose(Bundle(steps=_pipeline_steps(0.99)))
    assert d.hypotheses[0]["id"] == "pipeline_imbalance"
    assert "rank 3 works 99%+" in d.hypotheses[0]["evidence"][0]
    assert "collective_straggler" not in [h["id"] for h in d.hypotheses]  # roles, not stragglers


def test_steps_separated_by_idle_gaps_are_not_a_swing():
    steps, events, _ = simulate_steps(ranks=2, steps=120, stall_every=None, step_s=0.06)
    # each step lasts 0.06 s but starts 0.75 s after the previous one (work outside the logged phases)
    import pandas as pd

    steps["time"] = steps["time"].dt.floor("us") + pd.to_timedelta(steps["step"] * 0.69, unit="s")
    d = diagnose(Bundle(steps=steps, events=events))
    assert not d.oscillation["detected"]


def _imbalanced_fleet(polls: int, seed: int = 0):
    """LABELED SYNTHETIC 8-GPU poll: GPUs 5-6 mostly idle (~25%), GPU 7 saturated (~99%), all but GPU 7 noisy."""
    import pandas as pd

    from playbook.model import schema

    rng = np.random.default_rng(seed)
    level = np.array([70, 70, 70, 70, 70, 25, 25, 99.0])
    spread = np.array([30, 30, 30, 30, 30, 25, 25, 1.0])
    util = np.clip(level[None, :] + rng.normal(0, 1, (polls, 8)) * spread, 0, 100).round()
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    times = [t0 + pd.Timedelta(seconds=2 * i) for i in range(polls) for _ in range(8)]
    return schema.telemetry_frame({"time": times, "host": "h", "gpu": np.tile(np.arange(8), polls),
                                   "util_pct": util.ravel()})


def test_imbalance_confidence_grows_with_the_number_of_polls():
    few = {h["id"]: h["score"] for h in diagnose(Bundle(telemetry=_imbalanced_fleet(3))).hypotheses}
    many = {h["id"]: h["score"] for h in diagnose(Bundle(telemetry=_imbalanced_fleet(300))).hypotheses}
    assert many["pipeline_imbalance"] > 0.6 and many["healthy"] < 0.05
    assert few["healthy"] > 2 * many["healthy"]  # three polls leave real room for "nothing is wrong"


def test_dflash_sample_is_modest_but_ranked_first(capsys):
    # 3 complete polls: the imbalance is the best explanation, but three polls cannot make it certain
    assert main(["diagnose", str(ROOT / "data/samples/dflash-8gpu"), "--interval", "2", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    scores = {h["id"]: h["score"] for h in obj["hypotheses"]}
    assert obj["hypotheses"][0]["id"] == "pipeline_imbalance"
    assert 0.3 < scores["pipeline_imbalance"] < 0.5 and scores["healthy"] > 0.2
    assert "permutation test" in obj["hypotheses"][0]["evidence"][0]
    # GPU 0 reads 0, 100, 100, 21 %: high in half its polls, not all the time
    assert obj["oscillation"]["duty_cycle"] == pytest.approx(0.5)


def test_secondary_causes_state_their_own_measurement(capsys):
    assert main(["diagnose", str(ROOT / "data/samples/synthetic-64gpu"), "--json"]) == 0
    hyps = {h["id"]: h for h in json.loads(capsys.readouterr().out)["hypotheses"]}
    stall, data = hyps["periodic_stall"], hyps["data_starvation"]
    assert data["evidence"] != stall["evidence"] and data["next_step"] != stall["next_step"]
    assert "DataLoader" in data["next_step"] and "CPU" in data["next_step"] and "shuffle buffer" in data["next_step"]
    assert "60 s" in data["evidence"][0] and "checkpoint" in stall["next_step"]


def test_too_few_samples_cannot_make_a_run_healthy():
    # one poll of two GPUs (REAL-format fixture): nothing can be tested, so "healthy" is no more than a coin flip
    d = diagnose(read_paths([ROOT / "tests/data/readers/telemetry_epoch_ms.csv"]))
    scores = {h["id"]: h["score"] for h in d.hypotheses}
    assert scores["healthy"] == pytest.approx(0.5) and scores.get("pipeline_imbalance", 0.0) < 0.1
    assert any("no evidence of health" in e for e in d.hypotheses[0]["evidence"])


def test_events_alone_name_their_cause_without_a_nothing_to_analyse_warning():
    """A log of fault events (an Xid) is something to analyse: the verdict names the cause, and no warning beside it
    says there was nothing (the warning stays for a bundle with no rows at all, above)."""
    import pandas as pd

    from playbook.model.schema import events_frame

    ev = events_frame({"time": [pd.Timestamp("2026-12-01T10:00:00Z")], "host": ["node7"], "kind": ["xid"],
                       "detail": ["NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."], "source": ["dmesg"]})
    obj = json.loads(diagnose(Bundle(events=ev)).to_json())
    assert obj["verdict"]["id"] == "hardware_fault"
    assert not any("nothing to analyse" in w for w in obj["warnings"])


@pytest.mark.parametrize("stamp", ["2026-01-05 10:00:00,100 ", ""])
def test_one_timed_step_is_not_health_with_or_without_a_timestamp(tmp_path, stamp):
    """One step with its phases: with a timestamp the busy share derived from its phases shielded the one-step
    rule, and the run read "Healthy (confirmed, score 1.00)"; without one it read insufficient_data."""
    log = tmp_path / "train.log"
    log.write_text(f"{stamp}step 1 loss 2.31 fwd_time 0.300 bwd_time 0.700 step_time 1.000\n")
    assert diagnose(read_paths([log])).verdict["id"] == "insufficient_data"


def test_a_noise_floor_past_half_the_wall_time_cannot_vouch_for_health(tmp_path):
    """keras#6503's layout: the first epoch 16x the three others read "Healthy (likely) within a noise floor of 79%";
    a first row 2x the others (below half the wall time) stays the warm-up it usually is."""
    def verdict(first_s):
        log = tmp_path / "train.log"
        log.write_text("".join(f"Epoch {e + 1}/50\n1464/1464 [==============================] - {t}s - loss: 3.1\n"
                               for e, t in enumerate([first_s, 239, 240, 240])))
        return diagnose(read_paths([log])).verdict
    cold = verdict(3943)
    assert cold["id"] == "insufficient_data" and "79% of the wall time" in cold["sentence"], cold["sentence"]
    assert verdict(480)["id"] == "healthy"
