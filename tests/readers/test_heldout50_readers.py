"""The reading the fiftieth held-out round (tests/data/eval/heldout50/SOURCES.md) asked for, on logs written here
apart from the round's own files, from the tools' print statements:

- MXNet's kvstore worker tag `Node[k] ` after the time (example/image-classification/common/fit.py) is the rank;
- a checkpoint line that reports the save done (`Saved checkpoint to ...`, `[Torch] Saved ...`, `successfully saved
  checkpoint ...`) with no line that opened the save lasts from the end of its rank's last step
  (readers/marker_sections.since_training) — only where every step is logged; a line that opens a save (`Saving
  ...`) still lasts until the next step starts (until_training), and a done line opens nothing;
- a section after the rank's last timed step becomes a phase of that step (after_last_step), so the accounting sees
  it (a rank's wall time otherwise ends with its last row);
- a timing decorator's line for a function that saves (DLRover's `Function save_to_memory cost 0.545s`) is a
  checkpoint event with its seconds; one for another function is none.
"""

from __future__ import annotations

import numpy as np
import pytest

from playbook.diagnosis import diagnose
from playbook.readers import event_lexicon, marker_sections, read_paths


def _read(tmp_path, text: str, name: str = "train.log"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return read_paths([str(path)])


# MXNet module fit with a Speedometer every 50 batches, two workers (written here: the layout of fit.py's head and
# base_module.py's messages)
MXNET_TWO_WORKERS = """\
2019-03-02 10:00:05,000 Node[1] Epoch[0] Batch [50]\tSpeed: 812.44 samples/sec\taccuracy=0.31
2019-03-02 10:00:06,000 Node[0] Epoch[0] Batch [50]\tSpeed: 820.10 samples/sec\taccuracy=0.30
2019-03-02 10:00:20,000 Node[0] Epoch[0] Train-accuracy=0.52
2019-03-02 10:00:20,000 Node[0] Epoch[0] Time cost=20.000
2019-03-02 10:00:21,000 Node[1] Epoch[0] Train-accuracy=0.51
2019-03-02 10:00:21,000 Node[1] Epoch[0] Time cost=21.000
2019-03-02 10:01:20,000 Node[0] Saved checkpoint to "ckpt/net-0001.params"
2019-03-02 10:01:31,000 Node[1] Saved checkpoint to "ckpt/net-0001.params"
"""


def test_the_mxnet_node_tag_is_the_rank_and_a_saved_line_lasts_since_the_epoch_ended(tmp_path):
    b = _read(tmp_path, MXNET_TWO_WORKERS)
    assert sorted(b.steps["rank"].unique().tolist()) == [0, 1]
    ck = b.events[b.events["kind"] == "checkpoint"].set_index("rank")["duration_s"]
    assert ck[0] == pytest.approx(60.0) and ck[1] == pytest.approx(70.0)


def test_a_save_after_the_last_epoch_is_a_phase_of_it_and_the_verdict_names_it(tmp_path):
    b = _read(tmp_path, MXNET_TWO_WORKERS)
    phase = b.steps[b.steps["phase"] == "checkpoint"].set_index("rank")["duration_s"]
    assert phase[0] == pytest.approx(60.0) and phase[1] == pytest.approx(70.0)
    whole = b.steps[b.steps["phase"] == "step"].set_index("rank")["duration_s"]
    assert whole[0] == pytest.approx(80.0) and whole[1] == pytest.approx(91.0)  # the epoch's wall time
    d = diagnose(b)
    assert d.verdict["id"] == "periodic_stall"
    assert d.hypotheses[0]["lost_share"] == pytest.approx(130 / 171, abs=0.02)


# a per-step log (one time-stamped line per step) whose saver reports only the end of the save, DeepSpeed's
# torch_checkpoint_engine wording; then training goes on
PER_STEP = "".join(f"2024-05-01 08:00:{10 + 2 * i:02d},000 - INFO - step {i + 1} loss 2.{i} step_time 1.9s\n"
                   for i in range(20)) + \
    "2024-05-01 08:00:58,000 - INFO - [Torch] Saved out/checkpoint-20/global_step20/mp_rank_00_model_states.pt.\n" + \
    "".join(f"2024-05-01 08:01:{2 * i:02d},000 - INFO - step {i + 21} loss 1.{i} step_time 1.9s\n"
            for i in range(10))


def test_a_done_line_between_logged_steps_lasts_since_the_last_step_and_not_until_the_next(tmp_path):
    b = _read(tmp_path, PER_STEP)
    ck = b.events[b.events["kind"] == "checkpoint"]["duration_s"].to_numpy()
    # step 20's line (its end) at 08:00:48: the save ran from then to the saved line at 08:00:58
    assert ck == pytest.approx([10.0], abs=0.05)
    assert not (b.steps["phase"] == "checkpoint").any()  # between two steps: the gap between their rows shows it


WINDOWS = "".join(f"2024-05-01 08:{i:02d}:00,000 - INFO - step {100 * (i + 1)} loss 2.{i} "
                  f"elapsed_per_step 0.55s\n" for i in range(10)) + \
    "2024-05-01 08:09:40,000 - INFO - successfully saved checkpoint from iteration 1000 to ckpt\n"


def test_a_log_of_windows_measures_no_save_back_to_its_last_line(tmp_path):
    b = _read(tmp_path, WINDOWS)
    steps = np.unique(b.steps["step"].to_numpy())
    assert len(steps) > 1 and np.median(np.diff(steps)) > 1  # a line every 100 steps
    marker_sections.since_training(b, every_step=False)
    assert b.events[b.events["kind"] == "checkpoint"]["duration_s"].isna().all()


def test_an_opening_line_still_lasts_until_the_next_step(tmp_path):
    text = PER_STEP.replace("08:00:58,000 - INFO - [Torch] Saved out/checkpoint-20/global_step20/mp_rank_00_model_"
                            "states.pt.", "08:00:48,000 - INFO - [Torch] Saving out/checkpoint-20/global_step20/"
                            "mp_rank_00_model_states.pt...")
    b = _read(tmp_path, text)
    ck = b.events[b.events["kind"] == "checkpoint"]["duration_s"].to_numpy()
    assert ck == pytest.approx([10.1], abs=0.05)  # 08:00:48 to step 21's start (its line at 08:01:00 less 1.9 s)


@pytest.mark.parametrize(("detail", "done"), [
    ('line 7: Saved checkpoint to "model/dnn-0001.params"', True),
    ("line 3: [Torch] Saved out/global_step10/mp_rank_00_model_states.pt.", True),
    ("line 9: successfully saved checkpoint from iteration    2000 to /ckpt", True),
    ("line 2: Finished saving the checkpoint", True),
    ("line 5: Saving checkpoint to ckpt/step-2000", False),
    ("line 5: [Torch] Saving out/global_step10/mp_rank_00_model_states.pt...", False),
    ("line 8: saving checkpoint at iteration 2000 to /ckpt in torch_dist format", False),
])
def test_which_checkpoint_lines_report_the_save_done(detail, done):
    assert marker_sections.reports_done(detail) is done


@pytest.mark.parametrize(("line", "kind", "seconds"), [
    ("Function save_to_memory cost 0.545s", "checkpoint", 0.545),
    ("Function save_to_storage cost 12.3s", "checkpoint", 12.3),
    ("save_checkpoint took 3.20 seconds", "checkpoint", 3.2),
    ("Function train_step cost 0.545s", None, None),
    ("Ep. 1 : Up. 140000 : Cost nan : Time 943.97s", None, None),
])
def test_a_timing_line_of_a_save_function_is_a_checkpoint_with_its_seconds(line, kind, seconds):
    got = "checkpoint" if ("sav" in line.lower() and event_lexicon.CHECKPOINT.search(line)) else None
    assert got == kind
    if seconds is not None:
        assert event_lexicon.stated_duration(line) == pytest.approx(seconds)


def test_a_timed_save_function_in_a_log_is_read_not_refused(tmp_path):
    b = _read(tmp_path, "[2024-04-18 10:50:37,374] [INFO] [engine.py:296:save_state_dict_to_memory] Acquired the "
                        "lock of shared memory: True.\n"
                        "[2024-04-18 10:50:41,020] [INFO] [engine.py:97:wrapper] Function save_to_storage cost 3.640s\n")
    ev = b.events[b.events["kind"] == "checkpoint"]
    assert ev["duration_s"].tolist() == pytest.approx([3.64])


# fairseq's train_inner line every 50 updates (its per-update time from ups), then a save that states its seconds
FAIRSEQ_WINDOWS = "".join(
    f"2022-06-01 09:{i:02d}:00 | INFO | train_inner | epoch 001:    {50 * (i + 1)} / 900 loss=5.{i}, ups=2.50, "
    f"num_updates={50 * (i + 1)}, train_wall=20, wall={20 * (i + 1)}\n" for i in range(4)) + \
    ("2022-06-01 09:03:40 | INFO | fairseq.checkpoint_utils | Saved checkpoint checkpoints/checkpoint_1_200.pt "
     "(epoch 1 @ 200 updates, score None) (writing took 40.0 seconds)\n")


def test_a_save_after_a_window_line_does_not_grow_the_window_rows_one_step(tmp_path):
    b = _read(tmp_path, FAIRSEQ_WINDOWS)
    assert b.events[b.events["kind"] == "checkpoint"]["duration_s"].tolist() == pytest.approx([40.0])
    assert not (b.steps["phase"] == "checkpoint").any()  # a row stands for 50 updates: 40 s is not one update's
    assert b.steps.loc[b.steps["phase"] == "step", "duration_s"].max() < 1.0


def test_a_lone_step_row_is_not_taken_for_one_step(tmp_path):
    b = _read(tmp_path, FAIRSEQ_WINDOWS.split("\n", 3)[3])  # the last train_inner line and the save
    assert not (b.steps["phase"] == "checkpoint").any()
