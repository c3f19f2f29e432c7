"""A Hugging Face Trainer resume that fast-forwards batches (evidence/from_restarts.py): its first step record within
a minute of the resume bounds the fast-forward (accelerate's skip_first_batches skips a sampler's indices without
loading them): a cheap restart, no finding; a first step long after it keeps the fast-forward a stated, unpriced cost.
LABELED SYNTHETIC: lines written from transformers' trainer.py resume messages, not from the heldout files."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def _log(tmp_path, wait_s: float) -> str:
    t = datetime(2026, 1, 1, 10, 0, 0)
    out = [f"[INFO|trainer.py:2100] {t:%Y-%m-%d %H:%M:%S},000 >>   {m}" for m in (
        "Continuing training from checkpoint, will skip to saved global_step", "Continuing training from epoch 0",
        "Continuing training from global step 500",
        "Will skip the first 0 epochs then the first 500 batches in the first epoch.")]
    t += timedelta(seconds=wait_s)
    for i in range(501, 541):
        t += timedelta(seconds=1)
        out.append(f"{t:%Y-%m-%d %H:%M:%S},000 - INFO - step {i} loss 1.{i % 100:02d} lr 1e-4")
    p = tmp_path / "train.log"
    p.write_text("\n".join(out) + "\n")
    return str(p)


def _restart(tmp_path, wait_s):
    d = diagnose(read_paths([_log(tmp_path, wait_s)]))
    return next((h for h in d.hypotheses if h["id"] == ids.RESTART_LOSS), None)


def test_a_fast_forward_done_within_a_minute_is_a_cheap_restart(tmp_path):
    assert _restart(tmp_path, 3) is None


@pytest.mark.parametrize("wait_s", [600])
def test_a_fast_forward_that_holds_the_first_step_back_stays_a_finding(tmp_path, wait_s):
    assert _restart(tmp_path, wait_s) is not None
