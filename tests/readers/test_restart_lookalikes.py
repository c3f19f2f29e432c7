"""Healthy runs whose lines merely look like a resume (readers/restart_lines.py): a fresh fine-tune loading its
initial weights (torchtitan's initial load, a step-0 seed checkpoint; detectron2 / fvcore with MODEL.WEIGHTS and no
resume: no optimizer or scheduler loaded), and Lightning's test / validate loading a checkpoint's weights after fit.
LABELED SYNTHETIC: lines written from the tools' format strings (torchtitan checkpoint.py / train.py, fvcore
checkpoint.py `Loading {key} from {path} ...`, Lightning checkpoint_connector `Loaded model weights from the
checkpoint at`), not from the heldout excerpts."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import lines, read_paths, restart_lines


def _events(tmp_path, text: str):
    p = tmp_path / "train.log"
    p.write_text(text)
    ev = lines.read(str(p)).events
    return ev[ev["kind"].isin(["resume", "worker_restart"])].reset_index(drop=True)


def _titan(path: str, start: int = 1) -> str:
    head = (f"[rank0]:[titan] 2026-05-18 16:08:01,100 - root - INFO - Loading the checkpoint from {path}.\n"
            "[rank0]:[titan] 2026-05-18 16:10:04,310 - root - INFO - Finished loading the checkpoint in 123.21 seconds.\n"
            f"[rank0]:[titan] 2026-05-18 16:10:04,400 - root - INFO - Training starts at step {start}, with local batch "
            "size 8, global batch size 16, sequence length 2048, total steps 100 (warmup 2)\n")
    return head + "".join(f"[rank0]:[titan] 2026-05-18 16:11:{i:02d},500 - root - INFO - step: {start + i}  loss:  2.79"
                          "  memory:  9.46GiB(64.99%)  tps: 7,265\n" for i in range(40))


@pytest.mark.parametrize("path", ["/models/Llama-3.1-70B/original", "./outputs/checkpoint/step-0"])
def test_a_fresh_runs_initial_weights_load_is_no_restart(tmp_path, path):
    assert _events(tmp_path, _titan(path)).empty
    p = tmp_path / "t.log"
    p.write_text(_titan(path))
    assert diagnose(read_paths([str(p)])).hypotheses[0]["id"] != ids.RESTART_LOSS


def test_a_slow_load_that_resumes_a_later_step_stays_a_resume(tmp_path):
    ev = _events(tmp_path, _titan("./outputs/checkpoint/step-400", start=401))
    assert restart_lines.figures(ev["detail"][0])["took"] == pytest.approx(123.21)


D2 = """\
[11/02 08:00:01 fvcore.common.checkpoint]: [Checkpointer] Loading from ./output/model_0089999.pth ...
{parts}[11/02 08:00:03 d2.engine.train_loop]: Starting training from iteration 0
[11/02 08:00:40 d2.utils.events]:  eta: 1 day, 2:00:00  iter: 19  total_loss: 0.61  time: 0.5100  data_time: 0.0100  lr: 0.02  max_mem: 5000M
[11/02 08:00:50 d2.utils.events]:  eta: 1 day, 2:00:00  iter: 39  total_loss: 0.60  time: 0.5100  data_time: 0.0100  lr: 0.02  max_mem: 5000M
"""
PARTS = ("[11/02 08:00:02 fvcore.common.checkpoint]: Loading optimizer from ./output/model_0089999.pth ...\n"
         "[11/02 08:00:02 fvcore.common.checkpoint]: Loading scheduler from ./output/model_0089999.pth ...\n")


def test_detectron2_weights_without_the_trainer_state_are_a_fine_tune(tmp_path):
    # resume_or_load(resume=False): fvcore loads MODEL.WEIGHTS with checkpointables=[] (no optimizer / scheduler line)
    assert _events(tmp_path, D2.format(parts="")).empty


def test_detectron2_resume_that_loads_the_trainer_state_counts_again(tmp_path):
    ev = _events(tmp_path, D2.format(parts=PARTS))
    assert restart_lines.figures(ev["detail"][0])["redone"] == 90000


def test_lightning_test_after_fit_loads_weights_not_a_resume(tmp_path):
    fit = "".join(f"2026-01-01 10:{i // 60:02d}:{i % 60:02d},000 INFO step {i * 10} loss 1.{i:02d}\n" for i in range(60))
    text = (fit + "2026-01-01 10:03:30,000 INFO Restoring states from the checkpoint path at /ck/epoch=2-step=300.ckpt\n"
            "2026-01-01 10:03:30,000 INFO Loaded model weights from the checkpoint at /ck/epoch=2-step=300.ckpt\n"
            "2026-01-01 10:03:35,000 INFO step 0 test_loss 1.2\n")
    assert _events(tmp_path, text).empty


def test_a_stated_resume_before_step_one_stays_a_resume(tmp_path):
    ev = _events(tmp_path, "resume finished, taken 812.5 seconds\n2026-01-01 10:00:00 step 1 loss 2.0 time 1.0\n")
    assert restart_lines.figures(ev["detail"][0])["took"] == pytest.approx(812.5)


@pytest.mark.parametrize("fmt", ["Epoch {e} step {i} loss 0.5", "epoch: {e}, batch: {i}, loss: 0.5",
                                 "Epoch {e} | Step {i}/300 | loss 0.5"])
def test_a_counter_within_its_epoch_is_no_run_count_after_a_resume(tmp_path, fmt):
    # Lightning resumed at step 1200 (epoch 3's end); the script prints its batch within epoch 4: 0, 10, ...
    out = ["2024-05-01 10:00:00,000 INFO Restored all states from the checkpoint at /ck/epoch=3-step=1200.ckpt"]
    out += [f"2024-05-01 10:00:{5 + i // 10:02d},000 INFO " + fmt.format(e=4, i=i) for i in range(0, 300, 10)]
    ev = _events(tmp_path, "\n".join(out) + "\n")
    assert not any("redone" in restart_lines.figures(d) for d in ev["detail"])


def test_a_counter_within_its_epoch_is_no_run_count_after_steps_either(tmp_path):
    # epoch 3's batches 0..290, a requeue, Lightning restores step 1200 (a global step: another scale than the
    # log's own count from its first epoch), epoch 4's batches from 0: the count went on, nothing computed again
    out = [f"2024-05-01 10:00:{i // 10:02d},000 INFO Epoch 3 step {i} loss 0.5" for i in range(0, 300, 10)]
    out += ["2024-05-01 10:01:00,000 INFO Restored all states from the checkpoint at /ck/epoch=3-step=1200.ckpt"]
    out += [f"2024-05-01 10:01:{5 + i // 10:02d},000 INFO Epoch 4 step {i} loss 0.5" for i in range(0, 300, 10)]
    ev = _events(tmp_path, "\n".join(out) + "\n")
    assert not any("redone" in restart_lines.figures(d) for d in ev["detail"])


@pytest.mark.parametrize("wait_s", [45, 5 * 3600])
def test_hours_without_a_step_read_back_in_seconds(tmp_path, wait_s):
    # a worker-group restart after step 120, the workers stepping again after a requeue's wait of hours
    from datetime import datetime, timedelta
    t0 = datetime(2024, 3, 1, 12, 0, 0)
    text = (f"{t0:%Y-%m-%d %H:%M:%S} step 120 loss 2.31 time 0.95\n"
            f"[{t0:%Y-%m-%d %H:%M:%S},500] torch.distributed.elastic.agent.server.api: [WARNING] [default] Worker group "
            "FAILED. 3/3 attempts left; will restart worker group\n"
            f"{t0 + timedelta(seconds=wait_s):%Y-%m-%d %H:%M:%S} step 121 loss 2.30 time 0.95\n")
    ev = _events(tmp_path, text)
    f = restart_lines.figures(ev["detail"][0])
    assert f["down"] == pytest.approx(wait_s, rel=1e-3)
