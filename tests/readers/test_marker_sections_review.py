"""Review of readers/marker_sections.py on inputs written apart from heldout50's files: a healthy per-step run whose
one final evaluation or save comes after its last step is no stall its steps paid (nothing recurs), and a save's
seconds measured back from a done line start no earlier than the rank's last time-stamped line before it."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import marker_sections, read_paths


def _read(tmp_path, text: str, name: str = "train.log"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return read_paths([str(path)])


# 200 logged steps of 2 s (each line at the step's end), nothing between them
STEPS = "".join(f"2024-05-01 08:{(2 * i) // 60:02d}:{(2 * i) % 60:02d},000 - INFO - step {i + 1} loss 2.{i % 10} "
                f"step_time 1.9s\n" for i in range(200))


@pytest.mark.parametrize("tail", [
    "2024-05-01 08:07:30,000 - INFO - Final evaluation on the test set took 50.0s: accuracy 0.91\n",
    "2024-05-01 08:07:10,000 - INFO - Saved model to out/final_model.pt in 30.5s\n",
    "2024-05-01 08:07:10,000 - INFO - Saved model to out/final_model.pt\n",
])
def test_one_final_section_after_many_steps_is_no_phase_and_the_run_stays_healthy(tmp_path, tail):
    b = _read(tmp_path, STEPS + tail)
    assert not b.steps["phase"].isin(["eval", "checkpoint"]).any()
    assert b.steps.loc[b.steps["phase"] == "step", "duration_s"].max() < 2.5
    assert diagnose(b).verdict["id"] == "healthy"


# the same save after each of 3 epochs: it recurs, so the last one is a phase of the last epoch (as after one epoch)
EPOCHS = "".join(f"2019-03-02 10:{4 * e:02d}:20,000 Epoch[{e}] Time cost=60.000\n"
                 f"2019-03-02 10:{4 * e + 1:02d}:20,000 Saved checkpoint to \"ckpt/net-{e + 1:04d}.params\"\n"
                 for e in range(3))


def test_a_save_that_recurs_after_every_epoch_is_still_a_phase_of_the_last(tmp_path):
    b = _read(tmp_path, EPOCHS)
    phase = b.steps.loc[b.steps["phase"] == "checkpoint", "duration_s"].tolist()
    assert phase == pytest.approx([60.0])


# a per-step log: an evaluation between step 20 and 21 whose lines span 08:00:48 to 08:01:30, then a save done at
# 08:01:40; the save began after the evaluation's last line, not when step 20 ended
EVAL_THEN_SAVE = STEPS.split("\n", 20)
EVAL_THEN_SAVE = "\n".join(EVAL_THEN_SAVE[:20]) + "\n" + (
    "2024-05-01 08:00:48,000 - INFO - Running validation\n"
    "2024-05-01 08:01:30,000 - INFO - validation loss 2.1\n"
    "2024-05-01 08:01:40,000 - INFO - Saved checkpoint to ckpt/step-20.pt\n") + "".join(
    f"2024-05-01 08:{(102 + 2 * i) // 60:02d}:{(102 + 2 * i) % 60:02d},000 - INFO - step {i + 21} loss 1.{i % 10} "
    f"step_time 1.9s\n" for i in range(10))


def test_a_done_line_after_other_lines_measures_the_save_from_the_last_of_them(tmp_path):
    b = _read(tmp_path, EVAL_THEN_SAVE)
    ck = b.events.loc[b.events["kind"] == "checkpoint", "duration_s"].tolist()
    assert ck == pytest.approx([10.0], abs=0.05)  # not 52 s: the evaluation's 42 s counted twice


@pytest.mark.parametrize("line", [
    "load_checkpoint took 12.3s",
    "Function load_checkpoint cost 30.1s",
    "Loading checkpoint took 3s",
    "restore_checkpoint took 5s",
    "resume_from_checkpoint took 60.0 seconds",
    "gradient_checkpointing took 0.5s",  # recomputation, not a save
])
def test_a_timed_load_or_recomputation_is_no_save(tmp_path, line):
    b = _read(tmp_path, f"2024-05-01 08:00:00,000 - INFO - {line}\n" + STEPS)
    assert not (b.events["kind"] == "checkpoint").any() if len(b.events) else True


@pytest.mark.parametrize("line", ["save_checkpoint took 3.20 seconds", "Function save_to_storage cost 12.3s",
                                  "Checkpoint took 3.5s"])
def test_a_timed_save_is_still_a_checkpoint(tmp_path, line):
    b = _read(tmp_path, f"2024-05-01 08:00:00,000 - INFO - {line}\n" + STEPS)
    assert (b.events["kind"] == "checkpoint").sum() == 1


# MXNet Module.save_checkpoint(..., save_optimizer_states=True): two done lines a second apart after each epoch
TWO_LINE_SAVES = "".join(f"2019-03-02 10:{4 * e:02d}:20,000 Epoch[{e}] Time cost=60.000\n"
                         f"2019-03-02 10:{4 * e + 1:02d}:20,000 Saved checkpoint to \"ckpt/net-{e + 1:04d}.params\"\n"
                         f"2019-03-02 10:{4 * e + 1:02d}:21,000 Saved optimizer state to \"ckpt/net-{e + 1:04d}.states\"\n"
                         for e in range(3))


def test_a_save_reported_done_in_two_lines_lasts_from_the_epoch_end_to_its_last_line(tmp_path):
    b = _read(tmp_path, TWO_LINE_SAVES)
    assert b.events.loc[b.events["kind"] == "checkpoint", "duration_s"].tolist() == pytest.approx([61.0] * 3)
    assert b.steps.loc[b.steps["phase"] == "checkpoint", "duration_s"].tolist() == pytest.approx([61.0])
    assert diagnose(b).verdict["id"] == "periodic_stall"  # as with the one-line save (Saved checkpoint alone)


@pytest.mark.parametrize(("detail", "done"), [
    ("line 4: Checkpoint saving done", True),
    ("line 4: Writing checkpoint done.", True),
    ("line 4: Saving checkpoint finished", True),
    ("line 4: checkpoint save completed", True),
    ("line 4: Saving checkpoint to ckpt/step-20", False),
    ("line 4: Writing checkpoint at step 20", False),
])
def test_a_saving_line_that_says_it_is_done_reports_the_save_done(detail, done):
    assert marker_sections.reports_done(detail) is done


def test_a_saving_done_line_lasts_since_the_last_step(tmp_path):
    text = "".join(STEPS.splitlines(True)[:20]) + "2024-05-01 08:01:08,000 - INFO - Checkpoint saving done\n" + "".join(
        f"2024-05-01 08:01:{10 + 2 * i:02d},000 - INFO - step {i + 21} loss 1.0 step_time 1.9s\n" for i in range(10))
    b = _read(tmp_path, text)
    ck = b.events.loc[b.events["kind"] == "checkpoint", "duration_s"].tolist()
    assert ck == pytest.approx([30.0], abs=0.05)  # step 20 ended at 08:00:38; not until step 21 began (0.1 s)


def test_a_save_reported_done_in_three_lines_is_one_section(tmp_path):
    text = "".join(ln + (ln.replace("Saved optimizer state to", "Saved scheduler state to").replace(":21,000", ":22,000")
                         .replace(".states", ".sched") if "optimizer" in ln else "")
                   for ln in TWO_LINE_SAVES.splitlines(True))
    b = _read(tmp_path, text)
    assert b.events.loc[b.events["kind"] == "checkpoint", "duration_s"].tolist() == pytest.approx([62.0] * 3)


def test_a_monitor_line_printed_during_the_save_does_not_cut_it(tmp_path):
    text = "".join(STEPS.splitlines(True)[:20]) + (
        "2024-05-01 08:00:50,000 - INFO - gpu memory 12.1 GiB\n"
        "2024-05-01 08:01:00,000 - INFO - gpu memory 12.1 GiB\n"
        "2024-05-01 08:01:08,000 - INFO - Saved checkpoint to ckpt/step-20.pt\n") + "".join(
        f"2024-05-01 08:01:{10 + 2 * i:02d},000 - INFO - step {i + 21} loss 1.0 step_time 1.9s\n" for i in range(10))
    b = _read(tmp_path, text)
    ck = b.events.loc[b.events["kind"] == "checkpoint", "duration_s"].tolist()
    assert ck == pytest.approx([30.0], abs=0.05)  # from step 20's end: lines no scanner reads bound nothing
