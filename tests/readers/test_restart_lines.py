"""A trainer's resume and a launcher's restart, read from their own print statements (readers/restart_lines.py),
on lines written apart from the heldout51 excerpts: other tools' layouts, a resume at the right step (a cheap
restart), a count that starts below the checkpoint, a fast-forward of batches, a stated resume time, a worker-group
restart followed by steps. LABELED SYNTHETIC: every line here is written from the tools' format strings."""

from __future__ import annotations

import pytest

from playbook.readers import lines, restart_lines


def _events(tmp_path, text: str, name: str = "train.log"):
    p = tmp_path / name
    p.write_text(text)
    ev = lines.read(str(p)).events
    return ev[ev["kind"].isin(["resume", "worker_restart"])].reset_index(drop=True)


TITAN_OK = """\
[rank0]:[titan] 2026-05-18 16:10:01,100 - root - INFO - Loading the checkpoint from checkpoint/step-50.
[rank0]:[titan] 2026-05-18 16:10:04,310 - root - INFO - Finished loading the checkpoint in 3.21 seconds.
[rank0]:[titan] 2026-05-18 16:10:04,400 - root - INFO - Training starts at step 51, with local batch size 8, global batch size 16, sequence length 2048, total steps 100 (warmup 2)
[rank0]:[titan] 2026-05-18 16:10:06,724 - root - INFO - step: 51  loss:  2.79  memory:  9.46GiB(64.99%)  tps: 7,265
[rank0]:[titan] 2026-05-18 16:10:07,896 - root - INFO - step: 52  loss:  2.78  memory:  9.46GiB(64.99%)  tps: 6,989
"""


def test_a_resume_at_the_checkpoints_step_computes_nothing_again(tmp_path):
    ev = _events(tmp_path, TITAN_OK)
    assert list(ev["kind"]) == ["resume"]
    f = restart_lines.figures(ev["detail"][0])
    assert "redone" not in f and f["took"] == pytest.approx(3.21)
    assert "resumed from a checkpoint of step 50" in ev["detail"][0]


def test_a_count_that_starts_below_the_checkpoint_runs_those_steps_again(tmp_path):
    ev = _events(tmp_path, TITAN_OK.replace("Training starts at step 51", "Training starts at step 31"))
    assert restart_lines.figures(ev["detail"][0])["redone"] == 20  # steps 31..50


D2 = """\
[11/02 08:00:01 fvcore.common.checkpoint]: [Checkpointer] Loading from ./output/model_0089999.pth ...
[11/02 08:00:02 fvcore.common.checkpoint]: Loading optimizer from ./output/model_0089999.pth ...
[11/02 08:00:03 d2.engine.train_loop]: Starting training from iteration {start}
[11/02 08:00:40 d2.utils.events]:  eta: 1 day, 2:00:00  iter: {first}  total_loss: 0.61  time: 0.5100  data_time: 0.0100  lr: 0.02  max_mem: 5000M
"""


@pytest.mark.parametrize(("start", "first", "redone"), [(90000, 90019, None), (0, 19, 90000)])
def test_detectron2_resume_from_its_file_name_and_start_line(tmp_path, start, first, redone):
    ev = _events(tmp_path, D2.format(start=start, first=first))
    assert len(ev) == 1
    assert restart_lines.figures(ev["detail"][0]).get("redone") == redone


def test_detectron2_without_a_start_line_takes_the_first_iter_record(tmp_path):
    text = "\n".join(ln for ln in D2.format(start=0, first=39).splitlines() if "Starting" not in ln) + "\n"
    ev = _events(tmp_path, text)
    assert restart_lines.figures(ev["detail"][0])["redone"] == 89999 - 39 + 1  # at least: iter 39 ends a window


def test_megatron_loads_at_an_iteration(tmp_path):
    text = (" loading checkpoint from /ckpt/gpt at iteration 1000\n"
            " successfully loaded checkpoint from /ckpt/gpt [ t 1/2, p 1/1 ] at iteration 1000\n"
            " [2025-01-02 10:00:00] iteration     1010/   20000 | consumed samples: 323200 | elapsed time per iteration "
            "(ms): 812.3 | learning rate: 1.0E-04 |\n")
    ev = _events(tmp_path, text)
    assert all("step 1000" in d for d in ev["detail"])
    assert not any("redone" in restart_lines.figures(d) for d in ev["detail"])


def test_hf_trainer_fast_forward_is_read_and_a_zero_skip_is_none(tmp_path):
    head = ("  Continuing training from checkpoint, will skip to saved global_step\n"
            "  Continuing training from epoch 2\n  Continuing training from global step 12000\n")
    ev = _events(tmp_path, head + "  Will skip the first 2 epochs then the first 345 batches in the first epoch.\n")
    f = restart_lines.figures(ev["detail"][0])
    assert f["skipped"] == 345 and "redone" not in f
    ev = _events(tmp_path, head + "  Will skip the first 2 epochs then the first 0 batches in the first epoch.\n")
    assert "skipped" not in restart_lines.figures(ev["detail"][0])


def test_a_stated_resume_time_is_its_duration(tmp_path):
    ev = _events(tmp_path, "Resuming from ckpt/last.pt\nresume done, took 812.5 s\n")
    assert ev["duration_s"][0] == pytest.approx(812.5)
    assert restart_lines.figures(ev["detail"][0])["took"] == pytest.approx(812.5)


def test_a_stated_resume_time_with_thousands_set_apart(tmp_path):
    ev = _events(tmp_path, "Resuming from ckpt/last.pt\nresume done, took 3,600 s\n")
    assert ev["duration_s"][0] == pytest.approx(3600.0)


def test_lightning_tuner_checkpoints_are_no_resume(tmp_path):
    ev = _events(tmp_path, "Restoring states from the checkpoint path at /w/.lr_find_0a1b.ckpt\n"
                           "Restored all states from the checkpoint at /w/.lr_find_0a1b.ckpt\n"
                           "step 1 loss 2.0 time 1.0\n")
    assert ev.empty
    ev = _events(tmp_path, "Restored all states from the checkpoint at /w/ckpts/epoch=3-step=1200.ckpt\n")
    assert "step 1200" in ev["detail"][0]


def test_torchelastic_worker_group_restart_until_the_workers_step_again(tmp_path):
    text = ("[2024-03-01 12:00:00,000] torch.distributed.elastic.agent.server.api: [WARNING] [default] Worker group "
            "FAILED. 3/3 attempts left; will restart worker group\n"
            "[2024-03-01 12:00:05,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Rendezvous'ing "
            "worker group\n"
            "2024-03-01 12:00:42 step 120 loss 2.31 time 0.95\n")
    ev = _events(tmp_path, text)
    assert list(ev["kind"]) == ["worker_restart"] and ev["duration_s"][0] == pytest.approx(42.0)
    f = restart_lines.figures(ev["detail"][0])
    assert f["down"] == pytest.approx(42.0) and f["down_open"] == 0
    assert "the worker group failed" in ev["detail"][0]


def test_a_restart_the_log_ends_on_is_at_least_its_time(tmp_path):
    ev = _events(tmp_path, "[INFO] 2024-03-01 12:00:00,000 api: [default] Detected 2 new nodes from group_rank=0; "
                           "will restart worker group\nINFO 2024-03-01 12:00:09,500 Attempting to join next rendezvous\n")
    f = restart_lines.figures(ev["detail"][0])
    assert f["down"] == pytest.approx(9.5) and f["down_open"] == 1 and "a node joined" in ev["detail"][0]
    assert "re-rendezvous failed" not in ev["detail"][0]


def test_a_failed_re_rendezvous_is_part_of_the_restart(tmp_path):
    ev = _events(tmp_path, "[INFO] 2024-03-01 12:00:00,000 api: [default] Worker group FAILED. 1/3 attempts left; "
                           "will restart worker group\nINFO 2024-03-01 12:00:30,000 Rendevous version 7 is incomplete.\n")
    assert "its re-rendezvous failed (Rendevous version 7 is incomplete.)" in ev["detail"][0]


@pytest.mark.parametrize(("path", "step"), [("out/model_0004999.pth", 4999), ("ck/epoch=7-step=30899.ckpt", 30899),
                                            ("runs/checkpoint-660000", 660000), ("ck/last.ckpt", None),
                                            ("mega/iter_0002000/", 2000), ("ck/.scale_batch_size_1.ckpt", None)])
def test_the_step_a_checkpoint_name_holds(path, step):
    assert restart_lines.step_in_name(path) == step


def test_no_resume_no_event(tmp_path):
    ev = _events(tmp_path, "step 1 loss 2.0 time 1.0\nstep 2 loss 1.9 time 1.0\nStarting training from iteration 0\n")
    assert ev.empty
