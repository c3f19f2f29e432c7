"""Time-only step tables (TensorBoard's `Wall time,Step,Value` export, a CSV of step and time): window means in time
order, restarts into the same log, per-epoch counters, coarse clocks. Every input here is LABELED SYNTHETIC, written
for these tests (tests/data/eval/heldout19 holds real exports)."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

T0 = 1_700_000_000.0


def _export(path, rows):
    path.write_text("Wall time,Step,Value\n" + "".join(f"{t:.4f},{s},{v:.4f}\n" for t, s, v in rows))
    return path


def _sampled_run(rng, first, last, t_start, step_s, keep):
    """(time, step, loss) of `keep` steps drawn at random from first..last (TensorBoard keeps a random sample of a
    long tag), each step taking step_s (±2 %): a record's time is its step's end."""
    ends = t_start + np.cumsum(step_s * (1 + 0.02 * rng.standard_normal(last - first + 1)))
    pick = np.sort(rng.choice(last - first + 1, size=keep, replace=False))
    return [(ends[i], first + i, 2.0 - 0.0001 * i) for i in pick], ends[-1]


def test_a_sampled_export_with_a_resume_reads_window_means_and_one_restart(tmp_path):
    rng = np.random.default_rng(5)
    run1, end1 = _sampled_run(rng, 1, 2000, T0, 0.5, 200)
    run2, _ = _sampled_run(rng, 1801, 4000, end1 + 600.0, 0.5, 220)  # down 600 s, resumed from the step-1800 checkpoint
    b = read_paths([_export(tmp_path / "run-.-tag-loss.csv", run1 + run2)])
    steps = b.steps[b.steps["phase"] == "step"]
    assert steps["duration_s"].median() == pytest.approx(0.5, rel=0.03)  # window means, not ~10 s gaps
    assert steps["step"].is_monotonic_increasing and steps["step"].is_unique  # run 2 numbered on after run 1
    assert list(b.events["kind"]) == ["restart"]
    ev = b.events.iloc[0]
    assert "went back from" in ev["detail"] and ev["duration_s"] > 600.0
    assert any("means over logging windows" in w for w in b.warnings)
    d = diagnose(b)
    assert d.verdict["id"] == "healthy"
    assert "The log holds 2 runs (it restarted 1 time" in d.verdict["sentence"]
    wall = d.accounting["wall_s"]
    assert wall == pytest.approx((2000 + 2200) * 0.5, rel=0.05)  # both runs' steps; the 600 s down is not counted


def test_a_run_slower_after_its_restart_is_measured_against_its_own_pace(tmp_path):
    """Run 2 is another configuration, 1.6x slower a step: not a slowdown of run 1 (nor run 1 a speed-up)."""
    rng = np.random.default_rng(6)
    run1, end1 = _sampled_run(rng, 1, 3000, T0, 0.5, 300)
    run2, _ = _sampled_run(rng, 1, 3000, end1 + 120.0, 0.8, 300)
    d = diagnose(read_paths([_export(tmp_path / "loss.csv", run1 + run2)]))
    assert d.verdict["id"] == "healthy" and d.accounting["lost_share"] < 0.02


def test_a_count_per_epoch_is_numbered_on_without_restarts(tmp_path):
    """batch 0..99 in each of 5 epochs, 0.3 s a batch, a 30 s stall every 40 batches of epoch 4 and 5: the count
    goes back to 0 four times — no restart; the stalls are still the run's loss, measured against one pace."""
    t, rows = T0, []
    for epoch in range(5):
        for i in range(100):
            t += 0.3 + (30.0 if epoch >= 3 and i % 40 == 39 else 0.0)
            rows.append((t, i, 1.0))
    b = read_paths([_export(tmp_path / "epochs.csv", rows)])
    assert b.events.empty
    assert any("starts over 4 times" in w for w in b.warnings)
    steps = b.steps[b.steps["phase"] == "step"]
    assert steps["step"].is_monotonic_increasing and len(steps) == 495  # the first record of each epoch left out
    d = diagnose(b)
    truth = 4 * 30.0 / (t - T0)
    assert d.accounting["lost_share"] == pytest.approx(truth, abs=0.05)


def test_a_clock_coarser_than_a_step_gives_the_steps_between_its_stamps(tmp_path):
    """0.25 s steps logged every step with whole-second times: a window per stamp, 0.25 s a step (not 0 s and 1 s)."""
    rows = [(float(np.floor(T0 + 0.25 * i)), i, 1.0) for i in range(1, 401)]
    b = read_paths([_export(tmp_path / "coarse.csv", rows)])
    steps = b.steps[b.steps["phase"] == "step"]
    assert (steps["duration_s"] > 0).all()
    assert steps["duration_s"].median() == pytest.approx(0.25, rel=0.01)


def _table(path, header, rows):
    path.write_text(header + "\n" + "".join(",".join(str(v) for v in r) + "\n" for r in rows))
    return path


def test_a_running_elapsed_column_is_the_steps_clock_not_their_times(tmp_path):
    """`step,loss,elapsed_ms` where elapsed counts since the start: step times are its differences (first try: each
    step 'took' its elapsed time, 'Loses 80% ... throttling')."""
    rng = np.random.default_rng(8)
    el = np.cumsum(400.0 * (1 + 0.02 * rng.standard_normal(500)))
    b = read_paths([_table(tmp_path / "log.csv", "step,loss,elapsed_ms", [(i + 1, 1.0, f"{e:.1f}")
                                                                           for i, e in enumerate(el)])])
    steps = b.steps[b.steps["phase"] == "step"]
    assert steps["duration_s"].median() == pytest.approx(0.4, rel=0.02) and len(steps) == 499
    assert any("a running total" in w for w in b.warnings)
    assert diagnose(b).verdict["id"] == "healthy"


def test_an_elapsed_column_that_goes_up_and_down_is_each_steps_own_time(tmp_path):
    rng = np.random.default_rng(9)
    d = 0.4 * (1 + 0.05 * rng.standard_normal(300))
    b = read_paths([_table(tmp_path / "log.csv", "step,elapsed", [(i + 1, f"{x:.4f}") for i, x in enumerate(d)])])
    steps = b.steps[b.steps["phase"] == "step"]
    assert len(steps) == 300 and steps["duration_s"].median() == pytest.approx(0.4, rel=0.02)


def test_a_time_column_named_in_the_grammars_words_makes_a_table(tmp_path):
    """A W&B-history-like JSONL: `_step`, `_runtime` (seconds since the start), `_timestamp`; and a CSV whose
    duration column is no DURATION_KEYS name (`step_time_sec`): both read as step tables by the vocabulary."""
    rows = [{"_step": i, "_runtime": round(0.5 * i, 3), "_timestamp": T0 + 0.5 * i, "loss": 1.0} for i in range(1, 201)]
    import json

    (tmp_path / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    b = read_paths([tmp_path / "history.jsonl"])
    assert b.steps[b.steps["phase"] == "step"]["duration_s"].median() == pytest.approx(0.5, rel=0.01)
    c = read_paths([_table(tmp_path / "t.csv", "iteration,step_time_sec,loss", [(i, 0.3, 1.0) for i in range(1, 101)])])
    assert len(c.steps) == 100 and c.steps["duration_s"].median() == pytest.approx(0.3)


def test_a_time_column_of_seconds_is_a_duration_not_a_clock_from_1970(tmp_path):
    """`iter,time,loss` with each iteration's seconds (first try: a 1970 clock, 'Loses 99% ... between_steps'), and
    `step,time` counting since the start (its differences): both 0.4 s a step."""
    rng = np.random.default_rng(10)
    d = 0.4 * (1 + 0.03 * rng.standard_normal(200))
    own = read_paths([_table(tmp_path / "a.csv", "iter,time,loss", [(i + 1, f"{x:.4f}", 1.0) for i, x in enumerate(d)])])
    total = read_paths([_table(tmp_path / "b.csv", "step,time", [(i + 1, f"{x:.3f}") for i, x in enumerate(np.cumsum(d))])])
    for b in (own, total):
        steps = b.steps[b.steps["phase"] == "step"]
        assert steps["duration_s"].median() == pytest.approx(0.4, rel=0.02) and steps["time"].isna().all()


def test_an_epoch_table_with_a_running_time_is_one_record_per_epoch(tmp_path):
    """`epoch,time,train/box_loss` once an epoch (Ultralytics' results.csv layout, written here), `time` the seconds
    since training began: 40 epochs of 30 s, epochs 21-30 at 45 s. First try: refused ('not telemetry')."""
    secs = np.r_[np.full(20, 30.0), np.full(10, 45.0), np.full(10, 30.0)]
    rows = [(e + 1, f"{t:.3f}", 1.0) for e, t in enumerate(np.cumsum(secs))]
    b = read_paths([_table(tmp_path / "results.csv", "epoch,time,train/box_loss", rows)])
    steps = b.steps[b.steps["phase"] == "step"]
    assert list(steps["step"]) == list(range(2, 41)) and steps["duration_s"].tolist() == pytest.approx(secs[1:])
    d = diagnose(b)
    assert d.accounting["lost_share"] == pytest.approx(150.0 / secs[1:].sum(), abs=0.01)


def test_an_epoch_column_beside_a_step_is_no_clock(tmp_path):
    """`epoch,step,loss,elapsed_s`: the epoch's number is not a 1970 time stamp on the steps."""
    rows = [(1 + i // 10, (i + 1) * 50, 1.0, f"{(i + 1) * 40.0:.1f}") for i in range(30)]
    b = read_paths([_table(tmp_path / "log.csv", "epoch,step,loss,elapsed_s", rows)])
    assert b.steps["time"].isna().all() and b.steps["duration_s"].median() == pytest.approx(0.8)


def test_only_restarts_with_a_time_between_runs_reach_the_verdict():
    """A telemetry logger's restart (no step) and a step logged again in a text log (no time between runs: as often
    several roles on one counter) stay events; a time-stamped counter that went back is a run boundary."""
    import pandas as pd

    from playbook.diagnosis.evidence.from_events import restarts
    from playbook.model import schema

    t = pd.Timestamp("2026-01-01", tz="UTC")
    ev = schema.events_frame({"time": [t, t, t], "host": ["h"] * 3, "rank": [-1] * 3, "step": [-1, 20, 41],
                              "kind": ["restart"] * 3, "duration_s": [np.nan, np.nan, 902.0],
                              "detail": ["nvidia-smi logging restarted", "step 20 logged again", "went back"]})
    assert restarts(ev) == {"count": 1, "seconds": 902.0}
    assert restarts(ev.iloc[:2]) is None


def test_date_stamped_records_stay_a_clock_and_clock_form_durations_are_each_records_time(tmp_path):
    """`step,time` with ISO dates is a clock (heldout21's rule once read it as durations: no row); fastai's epoch
    `time` written `m:ss` / `h:mm:ss` is each epoch's own time."""
    iso = read_paths([_table(tmp_path / "iso.csv", "step,time,loss", [(i, f"2024-01-15 10:00:{2 * i:02d}", 1.0)
                                                                       for i in range(1, 11)])])
    assert len(iso.steps) == 9 and iso.steps["duration_s"].tolist() == pytest.approx([2.0] * 9)
    clock = read_paths([_table(tmp_path / "history.csv", "epoch,train_loss,valid_loss,time",
                               [(e, 0.5, 0.6, t) for e, t in enumerate(["04:39", "04:36", "1:02:05", "04:31"])])])
    assert clock.steps["duration_s"].tolist() == pytest.approx([279.0, 276.0, 3725.0, 271.0])



def test_a_time_named_for_the_epoch_that_runs_within_each_epoch_is_the_steps_clock(tmp_path):
    """`step,loss,epoch_time`, the epoch's running time on every step's row (40 steps an epoch): its differences are
    the steps' 0.25 s; where the clock starts over, its value is the step's own time (never a negative one)."""
    rows = [(i + 1, 1.0, f"{(i % 40 + 1) * 0.25:.2f}") for i in range(200)]
    b = read_paths([_table(tmp_path / "steps.csv", "step,loss,epoch_time", rows)])
    assert len(b.steps) == 199 and b.steps["duration_s"].tolist() == pytest.approx([0.25] * 199)


def test_a_table_whose_only_time_was_the_epoch_number_is_refused_in_one_line(tmp_path):
    """`step,epoch,loss`: the epoch is no clock, and nothing else times a step (was an UnboundLocalError, fuzz)."""
    from playbook.core.errors import InputError
    from playbook.readers import step_log

    path = _table(tmp_path / "m.csv", "step,epoch,loss", [(i + 1, i // 2, 1.0) for i in range(6)])
    with pytest.raises(InputError, match=r"m\.csv: a table of step with no step time and no clock column"):
        step_log.read(path)
