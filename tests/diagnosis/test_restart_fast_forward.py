"""A Hugging Face Trainer resume that fast-forwards batches (evidence/from_restarts.py): its first step record within
a minute of the resume bounds the fast-forward (accelerate's skip_first_batches skips a sampler's indices without
loading them): a cheap restart, no finding; a first step long after it keeps the fast-forward a stated, unpriced cost.
One restart stated by each rank of a job costs each GPU once. LABELED SYNTHETIC: lines written from transformers'
trainer.py resume messages and torchtitan's checkpoint.py / train.py, not from the heldout files."""

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


def _ranks_log(tmp_path, ranks: int) -> str:
    out = []
    for r in range(ranks):  # each rank states the one restart: its load, then its count's start
        out += [f"[rank{r}]:[titan] 2026-01-01 10:01:00,{r:03d} - root - INFO - Loading the checkpoint at step 400.",
                f"[rank{r}]:[titan] 2026-01-01 10:01:02,{r:03d} - root - INFO - Training starts at step 201, with local "
                "batch size 8, global batch size 8, sequence length 2048, total steps 5000 (warmup 2)"]
    for i in range(60):
        t = 70 + i * 0.5
        out += [f"[rank{r}]:[titan] 2026-01-01 10:{int(t // 60):02d}:{t % 60:06.3f} - root - INFO - step: {201 + i}  "
                f"loss:  2.{i:02d}  memory:  9.46GiB(64.99%)  tps: 7,000" for r in range(ranks)]
    p = tmp_path / "ranks.log"
    p.write_text("\n".join(out) + "\n")
    return str(p)


@pytest.mark.parametrize("ranks", [1, 4])
def test_one_restart_stated_by_every_rank_costs_each_gpu_once(tmp_path, ranks):
    d = diagnose(read_paths([_ranks_log(tmp_path, ranks)]))
    h = next(h for h in d.hypotheses if h["id"] == ids.RESTART_LOSS)
    assert h["restart_s"] == pytest.approx(200 * 0.5, rel=0.05)  # steps 201..400 again at 0.5 s, not × ranks
    assert h["evidence"][0].startswith("1 restart stated")
