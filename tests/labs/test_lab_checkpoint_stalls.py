"""Lab 12: the checkpoint/eval-stall workload's knobs and the notebook's verdict."""

from __future__ import annotations

import pytest
import torch
from labverdicts import assert_diagnosed, assert_fault_then_fix
from nbrun import run_notebook

from playbook.labs.workloads import checkpoint_stalls as lab
from playbook.readers.rundir import read_run

# ≈ 2.4 MB of state written at 200 MiB/s (12 ms) every 5 steps of ≈ 5 ms: the background write keeps up
SMALL = dict(steps=20, warmup_steps=1, batch_size=256, hidden=64, ckpt_every=5, eval_every=10, storage_mib_s=200.0,
             eval_read_ms=50.0, sample_hz=2.0)


def test_blocking_saves_stall_every_interval_and_async_saves_do_not(tmp_path):
    fault = lab.run(tmp_path / "fault", "fault", **SMALL)
    b = read_run(fault.run_dir)
    ck = b.events[b.events["kind"] == "checkpoint"]
    assert sorted(ck["step"]) == [4, 9, 14, 19]
    stalls = lab.stalls_by_kind(b.steps, b.events).set_index("kind")
    assert stalls.loc["checkpoint", "interval_steps"] == 5 and stalls.loc["eval", "interval_steps"] == 10
    assert stalls.loc["checkpoint", "extra_s"] > 0.005 and stalls.loc["eval", "extra_s"] > 0.03
    saved = sorted((tmp_path / "fault" / "ckpt").glob("*.pt"))
    assert len(saved) == 4 and torch.load(saved[-1])["step"] == 19
    fix = lab.run(tmp_path / "fix", "fix", **SMALL)
    fb = read_run(fix.run_dir)
    kinds = set(fb.events["kind"])
    assert {"checkpoint", "checkpoint_write", "eval", "eval_background"} <= kinds
    assert fix.extra["ckpt_saves"] == 4 and fix.extra["evals"] >= 1 and fix.extra["snapshot_mib"] > 0
    blocking = b.steps.loc[b.steps["phase"] == "checkpoint", "duration_s"].median()
    assert fb.steps.loc[fb.steps["phase"] == "checkpoint", "duration_s"].median() < blocking / 2  # a snapshot only
    assert torch.load(sorted((tmp_path / "fix" / "ckpt").glob("*.pt"))[-1])["step"] == 19
    # the stalls' share of the loop, from the run's own steps (wall-clock throughput against another run is a
    # timing race on a loaded machine: other jobs change a CPU step's time 2-3x between runs)
    assert lab.loop_efficiency(b.steps, b.events, first_step=SMALL["warmup_steps"]) < 0.8
    # whether the fix's loop is more efficient than the fault's is a race between two timed runs (a full suite on
    # 2 loaded cores measured 0.636 against 0.652): benchmarks/lab_verdicts.py prints the two side by side


def test_notebook_confirms_the_stalls_their_period_and_the_fix(tmp_path):
    rec = run_notebook("12_checkpoint_eval_stalls.ipynb", tmp_path, steps=40, repeats=3, ckpt_every=10,
                       eval_every=20, storage_mib_s=20.0, out_dir=str(tmp_path / "runs"))
    # the verdict rests on loop efficiency (steps at their median time per event group ÷ the run's ordinary step):
    # here 4 saves of 1.2 MB at 20 MiB/s and 2 evals of 200 ms cost about a quarter of the loop (0.76 measured,
    # CV 0.01), so a fault ratio under 0.9 is the stall seen well beyond that noise
    assert_fault_then_fix(rec)
    assert rec["stalls"]["checkpoint"]["interval_steps"] == 10
    # the slow steps' lattice holds the checkpoint steps: the interval, a divisor of it when another job slowed
    # steps between them (a full-suite run on 2 loaded cores found 5), or (40 steps) not significant
    period = rec["stall_period_steps"]
    assert period is None or 10 % period == 0, period
    assert_diagnosed(rec["diagnosis_top"])


def test_loop_efficiency_counts_recurring_stalls_and_ignores_random_load():
    import pandas as pd

    from playbook.model.schema import events_frame, steps_frame

    n = 40
    dur = [0.01] * n
    for s in (9, 19, 29, 39):  # a checkpoint at every 10th step: +0.02 s each
        dur[s] = 0.03
    ev = events_frame({"step": [9, 19, 29, 39], "kind": ["checkpoint"] * 4, "duration_s": [0.02] * 4})
    base = steps_frame({"step": list(range(n)), "phase": ["step"] * n, "duration_s": dur, "tokens": [8] * n})
    # ordinary time 40 × 0.01 over 36 × 0.01 + 4 × 0.03
    assert lab.loop_efficiency(base, ev) == pytest.approx(0.4 / 0.48)
    loaded = base.copy()
    loaded.loc[[3, 14, 25], "duration_s"] = 0.05  # another job slowed three ordinary steps at random
    loaded.loc[[19], "duration_s"] = 0.09  # and one checkpoint step
    assert lab.loop_efficiency(loaded, ev) == pytest.approx(lab.loop_efficiency(base, ev))
    twice = base.assign(duration_s=base["duration_s"] * 2)  # the whole run at half speed
    assert lab.loop_efficiency(twice, ev) == pytest.approx(lab.loop_efficiency(base, ev))
    assert lab.loop_efficiency(base, events_frame()) == 1.0  # no stall events: every step ordinary
    assert pd.isna(lab.loop_efficiency(base.iloc[:0], ev))
