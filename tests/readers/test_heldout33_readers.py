"""Readers found short by the thirty-third held-out round (tests/data/eval/heldout33/SOURCES.md), tested on lines
written here in the tools' own shapes: Keras' closing bar lines (a bare total for the epoch, or a time per epoch beside
the time per step), a step rate printed as 0 beside a cumulative wall clock (fairseq), the same record written by two
logging handlers (one stamped, one not), and a trainer's line that it is loading its data (OpenNMT-py, fairseq)."""

from __future__ import annotations

import numpy as np

from playbook.knowledge.causes import cause_of_event
from playbook.readers import read_paths


def _read(tmp_path, text, name="train.log"):
    path = tmp_path / name
    path.write_text(text)
    return read_paths([str(path)])


def _steps(bundle):
    s = bundle.steps
    return s[s["phase"] == "step"].sort_values("step")


def test_keras_closing_lines_without_redraws_time_the_epoch_not_each_step(tmp_path):
    # `fit` pasted without the bar's redraws: each `N/N [===] - Ts` closes its epoch; T is the epoch's time
    secs = [812, 415, 409, 411, 414]
    text = "".join(f"Epoch {e + 1}/30\n500/500 [==============================] - {t}s - loss: {1.0 / (e + 1):.4f} - "
                   f"acc: 0.5{e}\n" for e, t in enumerate(secs))
    st = _steps(_read(tmp_path, text))
    assert list(st["step"]) == [500, 1000, 1500, 2000, 2500]
    assert np.allclose(st["duration_s"], np.array(secs) / 500)


def test_keras_time_per_epoch_is_no_key_of_the_time_per_step(tmp_path):
    # TF2 `verbose=2`: `- 88s - loss: ... - 88s/epoch - 44ms/step`; `/epoch` is the unit of 88, not a field named
    # `epoch` holding the 44 ms
    rows = [(88, 44), (87, 43), (89, 44), (88, 44), (86, 43), (88, 44)]
    text = "".join(f"Epoch {e + 1}/50\n2000/2000 - {t}s - loss: 0.{5 - e}1 - val_loss: 0.{6 - e}2 - {t}s/epoch - "
                   f"{ms}ms/step\n" for e, (t, ms) in enumerate(rows))
    st = _steps(_read(tmp_path, text))
    assert len(st) == 6 and np.allclose(st["duration_s"], [ms / 1000 for _, ms in rows])


def test_a_step_rate_printed_as_zero_leaves_the_wall_clock_to_time_the_steps(tmp_path):
    # fairseq's meters rounded to no decimal: `ups=0` at 1.2 updates/s says nothing; `wall=` (seconds since the
    # start) does
    walls = [500, 590, 681, 770, 861]
    text = "".join(f"| epoch 002:    {100 * (i + 1)} / 9000 loss=7.{i}, wps=4000, ups=0, wpb=3000.5, bsz=120.0, "
                   f"num_updates={100 * (i + 1)}, lr=0.0005, wall={w}, train_wall={80 * (i + 1)}\n"
                   for i, w in enumerate(walls))
    st = _steps(_read(tmp_path, text))
    assert len(st) == 4 and np.allclose(st["duration_s"], np.diff(walls) / 100)


def test_a_record_written_by_two_handlers_keeps_its_stamp(tmp_path):
    # a file handler's stamped line, then the console handler's bare copy of it: the copy is the same record
    lines = []
    for i in range(6):
        rec = f"Epoch: [1/10][{10 * (i + 1)}/500] Data 0.002 (0.010) Batch 0.500 (0.500) Loss {2.0 - 0.1 * i:.4f}."
        lines.append(f"[2023-04-01 10:00:{5 * i:02d},000 INFO train.py line 300 123] {rec}\n")
        lines.append(f"INFO:main-logger:{rec}\n")
    st = _steps(_read(tmp_path, "".join(lines)))
    assert len(st) == 6 and st["time"].notna().all()


def test_a_trainer_loading_its_data_is_a_data_event(tmp_path):
    text = ("[2020-01-01 10:00:00,000 INFO] Step 100/1000; acc:  10.00; ppl: 90.00; xent: 4.50; lr: 0.00010; "
            "4000/300 tok/s;    100 sec\n"
            "[2020-01-01 10:01:10,000 INFO] Loading train dataset from data/demo.train.1.pt, number of examples: 5000\n"
            "[2020-01-01 10:02:40,000 INFO] Step 200/1000; acc:  12.00; ppl: 80.00; xent: 4.38; lr: 0.00020; "
            "4000/300 tok/s;    260 sec\n"
            "2020-01-01 10:03:00 | INFO | fairseq.trainer | loading train data for epoch 2\n")
    ev = _read(tmp_path, text).events
    kinds = ev["kind"].tolist()
    assert kinds.count("data_load") == 2 and cause_of_event("data_load") == "data_starvation"


def test_a_running_mean_written_by_two_handlers_still_gives_its_windows(tmp_path):
    # `Batch 0.500 (1.1818)`: the last step's time and the mean since the epoch began, every 10 steps, each line
    # written twice; the copy is no new epoch, so the windows' means (3 s a step) come back from the brackets
    lines = []
    for i, p in enumerate((100, 110, 120, 130, 140)):
        rec = (f"Epoch: [1/10][{p}/5000] Data 0.001 (0.010) Batch 0.500 ({(100 + 3 * (p - 100)) / p:.4f}) "
               f"Loss {2.0 - 0.1 * i:.4f}.")
        lines.append(f"[2023-04-01 10:{i // 2:02d}:{30 * (i % 2):02d},000 INFO train.py line 300 123] {rec}\n")
        lines.append(f"INFO:main-logger:{rec}\n")
    st = _steps(_read(tmp_path, "".join(lines)))
    assert list(st["step"]) == [110, 120, 130, 140] and np.allclose(st["duration_s"], 3.0, atol=0.02)


def test_only_a_copy_takes_the_stamp_of_its_step():
    from playbook.readers.step_log.repeats import carry_stamps
    from playbook.readers.step_log.vocab import NAT
    step, rank = np.array([34, 34, 35]), np.array([-1, -1, -1])
    time = np.array([1_000, NAT, NAT], dtype=np.int64)
    copy = {"time": np.array([4.1, 4.1, 4.2]), "fwd": np.array([0.6, 0.6, 0.6])}
    assert carry_stamps(step, rank, time, copy).tolist() == [1_000, 1_000, NAT]
    other = {"time": np.array([np.nan, 4.1, 4.2]), "fwd": np.array([0.6, 0.65, 0.6])}  # a timer line beside it
    assert carry_stamps(step, rank, time, other).tolist() == [1_000, NAT, NAT]


def test_a_named_step_time_on_lines_at_each_epochs_end_is_the_steps_not_the_epochs(tmp_path):
    # mmcv logging every 50 iterations of a 50-iteration epoch: every line closes its epoch, but `time:` is its
    # meter of one iteration (review rev48b: it was divided by the epoch's 50 steps)
    times = [0.411, 0.421, 0.431, 0.441, 0.451]
    text = "".join(f"Epoch [{e + 1}][50/50]\tlr: 1.000e-02, time: {t:.3f}, data_time: 0.021, memory: 3000, "
                   f"loss: 0.{8 - e}12\n" for e, t in enumerate(times))
    st = _steps(_read(tmp_path, text))
    assert list(st["step"]) == [50, 100, 150, 200, 250]
    assert np.allclose(st["duration_s"], times)


def test_a_checkpoint_shard_loading_is_no_data_event(tmp_path):
    # FSDP resume scripts: `print(f"[rank-{rank}] Loading shard from {model_file}")` loads model weights, not data
    # (review rev48b: read as data_load, which names data starvation)
    text = ("2020-01-01 10:00:00 step 100 loss 2.0 time 0.50s\n"
            "2020-01-01 10:00:30 [rank-0] Loading shard from ckpt/model_world_size_8_rank_0.pt\n"
            "2020-01-01 10:01:40 step 200 loss 1.9 time 0.50s\n")
    ev = _read(tmp_path, text).events
    assert ev is None or "data_load" not in ev["kind"].tolist()


def test_keras_closing_lines_with_an_epochs_line_missing_still_time_the_epoch(tmp_path):
    # review rev48b: one epoch's closing line lost from the paste (its `Epoch 4/30` header kept) made every epoch's
    # total read as one step's time (415 s a step)
    secs = [812, 415, 409, 411, 414, 420]
    text = "".join(f"Epoch {e + 1}/30\n" + ("" if e == 3 else f"500/500 [==============================] - {t}s - "
                                                              f"loss: {1.0 / (e + 1):.4f}\n") for e, t in enumerate(secs))
    st = _steps(_read(tmp_path, text))
    assert list(st["step"]) == [500, 1000, 1500, 2500, 3000]
    assert np.allclose(st["duration_s"], np.array(secs[:3] + secs[4:]) / 500)


def test_a_rate_printed_as_0_without_a_clock_is_counted_not_dropped(tmp_path):
    """fairseq's `ups=0` (under its printed digits) with no `wall=` beside it: the step was left out without a word
    (review note); it is a step slower than the printout can say, counted in a warning."""
    log = tmp_path / "train.log"
    log.write_text("".join(f"epoch 001:  {i * 100} / 5000 loss=5.{i}, wps=12000, ups={0 if i == 3 else 2.5}, "
                           f"wpb=4800, num_updates={i * 100}, lr=0.0005\n" for i in range(1, 7)))
    bundle = read_paths([log])
    assert len(bundle.steps) == 5
    assert any("1 step line(s) print ups=0" in w for w in bundle.warnings), bundle.warnings
