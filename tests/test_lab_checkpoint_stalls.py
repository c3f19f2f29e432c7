"""Lab 12: the checkpoint/eval-stall workload's knobs and the notebook's verdict."""

from __future__ import annotations

import torch
from labverdicts import assert_fault_then_fix
from nbrun import run_notebook

from playbook.readers.rundir import read_run
from playbook.workloads import checkpoint_stalls as lab

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
    no_fault = lab.run(tmp_path / "nf", "no_fault", **SMALL)
    assert fault.throughput < 0.8 * no_fault.throughput


def test_notebook_confirms_the_stalls_their_period_and_the_fix(tmp_path):
    rec = run_notebook("12_checkpoint_eval_stalls.ipynb", tmp_path, steps=40, repeats=3, ckpt_every=10,
                       eval_every=20, storage_mib_s=20.0, out_dir=str(tmp_path / "runs"))
    assert_fault_then_fix(rec)
    assert rec["stalls"]["checkpoint"]["interval_steps"] == 10
    assert rec["stall_period_steps"] == 10
    assert rec["diagnosis_top"] == "periodic_stall"
