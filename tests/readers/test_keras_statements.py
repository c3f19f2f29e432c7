"""What TensorFlow / Keras state about a run's pace, read by held-out round 56's mechanisms (readers/keras_statements.py,
the callback evidence in diagnosis/evidence/from_events.py, the epoch counter in readers/step_log/vocab.py), on logs
written here from the tools' own print statements, apart from tests/data/eval/heldout56: the callback-timing warning in
its three wordings (Keras 1 / 2.2's median rule, TF >= 2.2's means over the first batches) with and without the
epochs after it, the cuDNN fallback in both wordings, the input running out with verbose=2's bar, a tf.data
shuffle-buffer fill behind TF's C++ prefix, the benign notes, and epoch times printed as "for 1 epoch: S secs"."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_file

CHECK = "Check your callbacks."


def _read(tmp_path, text, name="run.log"):
    path = tmp_path / name
    path.write_text(text)
    return read_file(path)


def _bar(epochs: int, steps: int, seconds: float, per_step: str) -> str:
    """Keras's epoch lines, written here: `Epoch e/E` and the bar's end `N/N [===] - Ts X/step - loss: ...`."""
    out = []
    for e in range(1, epochs + 1):
        out += [f"Epoch {e}/{epochs}", f"{steps}/{steps} [==============================] - {seconds:g}s {per_step} "
                                        f"- loss: {1.0 / e:.4f} - acc: 0.{50 + e}"]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(("line", "hook", "seconds"), [
    # Keras 1 (UserWarning behind Python's warnings prefix)
    ("/opt/conda/lib/python3.6/site-packages/keras/callbacks.py:120: UserWarning: Method on_batch_end() is slow "
     f"compared to the batch update (1.204000). {CHECK}", "on_batch_end", 1.204),
    # Keras 2.2-2.3 / TF <= 2.1: the hook in parentheses
    (f"WARNING:tensorflow:Method (on_train_batch_begin) is slow compared to the batch update (0.310500). {CHECK}",
     "on_train_batch_begin", 0.3105),
    # TF 2.2-2.3 ("Callbacks") and TF >= 2.4 ("Callback"): both times stated
    ("WARNING:tensorflow:Callbacks method `on_test_batch_end` is slow compared to the batch time (batch time: 0.0100s "
     f"vs `on_test_batch_end` time: 0.0800s). {CHECK}", "on_test_batch_end", 0.08),
    ("2023-04-01 10:00:00,123 WARNING Callback method `on_train_batch_end` is slow compared to the batch time (batch "
     f"time: 0.2000s vs `on_train_batch_end` time: 0.3000s). {CHECK}", "on_train_batch_end", 0.3),
])
def test_each_callback_wording_is_one_event_with_the_hook_and_its_time(tmp_path, line, hook, seconds):
    ev = _read(tmp_path, line + "\n").events
    rows = ev[ev["kind"] == "callback_slow"]
    assert len(rows) == 1
    assert hook in rows["detail"].iloc[0]
    assert rows["duration_s"].iloc[0] == pytest.approx(seconds)


def test_a_callback_statement_alone_is_time_between_steps_with_its_share(tmp_path):
    line = ("WARNING:tensorflow:Callback method `on_train_batch_end` is slow compared to the batch time (batch time: "
            f"0.1000s vs `on_train_batch_end` time: 0.3000s). {CHECK}\n")
    d = diagnose(_read(tmp_path, line))
    assert d.verdict["id"] == "between_steps"
    assert d.hypotheses[0]["lost_share"] == pytest.approx(0.75)  # 0.3 of every 0.4 s
    assert d.hypotheses[0]["names"] == [] or all("rank" not in n for n in d.hypotheses[0]["names"])


def test_the_older_median_wording_alone_states_about_half_the_wall_time(tmp_path):
    d = diagnose(_read(tmp_path, f"Method on_batch_end() is slow compared to the batch update (0.250000). {CHECK}\n"))
    assert d.verdict["id"] == "between_steps"
    assert d.hypotheses[0]["lost_share"] == pytest.approx(0.95 / 1.95, abs=1e-3)


def test_a_hook_slower_than_the_epochs_steps_was_a_one_off_and_no_finding(tmp_path):
    # the warning glued to the bar's redraw (no newline), then epochs whose steps take far less than the hook: the
    # hook cannot have run 0.9 s after each 4 ms step
    text = ("Epoch 1/4\n   3/900 [..............................] - ETA: 2:10 - loss: 2.3026WARNING:tensorflow:Callbacks "
            "method `on_train_batch_end` is slow compared to the batch time (batch time: 0.0040s vs "
            f"`on_train_batch_end` time: 0.9000s). {CHECK}\n"
            "900/900 [==============================] - 5s 5ms/step - loss: 0.5000 - acc: 0.8100\n"
            + "".join(f"Epoch {e}/4\n900/900 [==============================] - 4s 4ms/step - loss: 0.{5 - e}000 - "
                      f"acc: 0.8{e}00\n" for e in (2, 3, 4)))
    bundle = _read(tmp_path, text)
    assert (bundle.events["kind"] == "callback_slow").sum() == 1
    assert len(bundle.steps) == 4  # the glued redraw is no step record
    assert diagnose(bundle).verdict["id"] != "between_steps"


def test_a_hook_that_fits_in_every_step_is_its_share_of_the_step(tmp_path):
    # Keras 2.2's median rule, then epochs at 900 ms/step: a 0.6 s hook fits in every step, 2/3 of its wall time
    text = (f"Using TensorFlow backend.\nWARNING:tensorflow:Method (on_train_batch_end) is slow compared to the batch "
            f"update (0.600000). {CHECK}\n" + _bar(6, 200, 180, "900ms/step"))
    d = diagnose(_read(tmp_path, text))
    assert d.verdict["id"] == "between_steps"
    assert d.hypotheses[0]["lost_share"] == pytest.approx(0.6 / 0.9, abs=1e-3)


@pytest.mark.parametrize("line", [
    "WARNING:tensorflow:Layer lstm_7 will not use cuDNN kernel since it doesn't meet the cuDNN kernel criteria. It will "
    "use generic GPU kernel as fallback when running on GPU",
    "2022-03-01 12:00:00.000000: W Layer lstm_7 will not use cuDNN kernels since it doesn't meet the criteria. It will "
    "use a generic GPU kernel as fallback when running on GPU.",
])
def test_the_cudnn_fallback_is_an_event_naming_the_layer(tmp_path, line):
    ev = _read(tmp_path, line + "\n").events
    assert ev["kind"].tolist() == ["kernel_fallback"]
    assert "lstm_7" in ev["detail"].iloc[0]


def test_the_input_running_out_ends_the_run_and_its_cut_epoch_is_no_step(tmp_path):
    # verbose=2 (no bar): the cut epoch's line after the warning, twice logged, divides 12 steps' time by 300
    warn = ("WARNING:tensorflow:Your input ran out of data; interrupting training. Make sure that your dataset or "
            "generator can generate at least `steps_per_epoch * epochs` batches (in this case, 3000 batches). You may "
            "need to use the repeat() function when building your dataset.\n")
    text = ("Epoch 1/10\n300/300 - 30s - loss: 0.9000\nEpoch 2/10\n300/300 - 29s - loss: 0.8000\nEpoch 3/10\n"
            + warn + warn + "300/300 - 1s - loss: 0.7900\n")
    bundle = _read(tmp_path, text)
    assert (bundle.events["kind"] == "input_exhausted").sum() == 1
    assert len(bundle.steps) == 2  # epochs 1 and 2; the third's line is the cut epoch's
    d = diagnose(bundle)
    assert d.verdict["id"] in ("insufficient_data", "healthy")
    assert "input running out of data" in d.verdict["sentence"]


def test_after_the_input_ran_out_a_new_fit_s_epochs_are_steps_again(tmp_path):
    # verbose=0 for the cut epoch (no bar after the warning), then a notebook's next fit(): its bars are steps
    text = ("Epoch 1/2\n100/100 [==============================] - 10s 100ms/step - loss: 0.5000\nEpoch 2/2\n"
            "WARNING:tensorflow:Your input ran out of data; interrupting training. Make sure that your dataset or "
            "generator can generate at least `steps_per_epoch * epochs` batches (in this case, 200 batches). You may "
            "need to use the repeat() function when building your dataset.\n"
            "Epoch 1/2\n100/100 [==============================] - 9s 90ms/step - loss: 0.4000\n"
            "Epoch 2/2\n100/100 [==============================] - 9s 90ms/step - loss: 0.3500\n")
    warned = _read(tmp_path, text).steps
    bare = _read(tmp_path, "\n".join(ln for ln in text.split("\n") if "ran out" not in ln), "bare.log").steps
    assert warned["duration_s"].tolist() == bare["duration_s"].tolist()  # the next fit's first bar is not swallowed


def test_a_shuffle_buffer_fill_is_a_data_wait_from_before_its_first_progress_line(tmp_path):
    # TF logs the fill's progress every 10 s: the fill began one interval before the first progress line
    text = ("2021-06-01 10:00:00.000000: I tensorflow/core/kernels/data/shuffle_dataset_op.cc:177] Filling up shuffle "
            "buffer (this may take a while): 4000 of 10000\n"
            "2021-06-01 10:00:10.000000: I tensorflow/core/kernels/data/shuffle_dataset_op.cc:177] Filling up shuffle "
            "buffer (this may take a while): 8500 of 10000\n"
            "2021-06-01 10:00:13.500000: I tensorflow/core/kernels/data/shuffle_dataset_op.cc:230] Shuffle buffer "
            "filled.\n")
    ev = _read(tmp_path, text).events
    assert ev["kind"].tolist() == ["data_load"]
    assert ev["duration_s"].iloc[0] == pytest.approx(23.5)


def test_the_benign_notes_are_understood_and_flag_nothing(tmp_path):
    text = ("2020-02-02 10:00:00.000000: W tensorflow/core/grappler/optimizers/implementation_selector.cc:310] Skipping "
            "optimization due to error while loading function libraries: Invalid argument: Functions '__inference_a_1' "
            "and '__inference_a_1_specialized_for_b' both implement 'gru_0a1b' but their signatures do not match.\n"
            "2020-02-02 10:00:01.000000: W ./tensorflow/core/framework/model.h:213] Encountered a stop event that was "
            "not preceded by a start event.\n"
            "Epoch 1/2\n64/64 [==============================] - 3s 47ms/step - loss: 0.7000\n"
            "Epoch 2/2\n64/64 [==============================] - 2s 31ms/step - loss: 0.6000\n")
    bundle = _read(tmp_path, text)
    meta = next(iter(bundle.meta["lines"].values()))
    assert meta["unread"] == 0 and meta["understood"]["events"] == 2
    assert bundle.events.empty


@pytest.mark.parametrize("line", ["Time taken for 1 epoch: 150.25 secs", "epoch: 154.547 s elapsed"])
def test_a_decimal_after_epoch_is_no_epoch_counter(line):
    # a custom loop's epoch time (TensorFlow's tutorials print "Time taken for 1 epoch: S secs"): the number after
    # "epoch:" continues in decimals, so it is a time, not the epoch's index (read as epoch 150 before)
    from playbook.readers.lines import scan_steps
    got = scan_steps([line, line])
    assert 150 not in list(got.get("step", [])) and 154 not in list(got.get("step", []))


def test_an_integer_after_epoch_is_still_the_epoch_counter():
    from playbook.readers.lines import scan_steps
    got = scan_steps(["epoch: 3 loss 0.5 time 120.5 s", "epoch: 4 loss 0.4 time 118.0 s"])
    assert list(got["step"]) == [3, 4]


def test_the_validation_input_running_out_each_epoch_ends_nothing_and_keeps_the_epochs_bars(tmp_path):
    # validation_steps larger than the validation set (TF 2.2: a new evaluate() each epoch): the same warning after
    # each epoch's training bar reached its end, "(in this case, 50 batches)" = validation_steps, not 100 x 5; training
    # goes on (tensorflow/tensorflow#58966), so each epoch's final bar is a step and no ending is stated
    warn = ("WARNING:tensorflow:Your input ran out of data; interrupting training. Make sure that your dataset or "
            "generator can generate at least `steps_per_epoch * epochs` batches (in this case, 50 batches). You may "
            "need to use the repeat() function when building your dataset.")
    text = "".join(f"Epoch {e}/5\n100/100 [==============================] - ETA: 0s - loss: 0.{9 - e}000{warn}\n"
                   f"100/100 [==============================] - 12s 120ms/step - loss: 0.{9 - e}000 - val_loss: 0.7\n"
                   for e in range(1, 6))
    bundle = _read(tmp_path, text)
    assert len(bundle.steps) == 5
    assert not (bundle.events["kind"] == "input_exhausted").any() if len(bundle.events) else True


def test_a_resumed_fit_s_training_input_running_out_is_still_its_end(tmp_path):
    # initial_epoch=10 of 50: Keras plans 40 epochs x 100 steps (4000 batches), the warning in epoch 12's bar
    warn = ("WARNING:tensorflow:Your input ran out of data; interrupting training. Make sure that your dataset or "
            "generator can generate at least `steps_per_epoch * epochs` batches (in this case, 4000 batches). You may "
            "need to use the repeat() function when building your dataset.")
    text = ("Epoch 11/50\n100/100 [==============================] - 10s 100ms/step - loss: 0.5000\nEpoch 12/50\n"
            f" 7/100 [=>............................] - ETA: 9s - loss: 0.4000{warn}\n"
            "100/100 [==============================] - 1s 7ms/step - loss: 0.4000\n")
    bundle = _read(tmp_path, text)
    assert (bundle.events["kind"] == "input_exhausted").sum() == 1
    assert len(bundle.steps) == 1


def test_a_fractional_epoch_before_a_global_step_is_no_epoch_counter():
    # "epoch 1.04 | step 1040/10000": the epoch a fraction of the global step (Hugging Face-style loops); read as
    # epoch 1 it made the step a count within the epoch and jumped the steps by 10000 at each whole epoch
    from playbook.readers.lines import scan_steps
    lines = [f"epoch {i * 0.13:.2f} | step {i * 10}/1000 | loss 2.{i} | 120.5 ms/step" for i in range(1, 20)]
    assert list(scan_steps(lines)["step"]) == [i * 10 for i in range(1, 20)]


def test_a_one_off_hook_a_little_slower_than_slow_batches_is_no_share_of_every_step(tmp_path):
    # TF >= 2.2 states both means over the first batches: a profiler starting at batch 2 (TensorBoard's default
    # profile_batch) makes the hook's mean 0.47 s against batches of 0.45 s; the epochs then run 0.5 s a step. A hook
    # after every batch would make each step about 0.45 + 0.47 s: at 0.5 s the hook ran once, not 94% of the time
    text = ("WARNING:tensorflow:Callbacks method `on_train_batch_end` is slow compared to the batch time "
            f"(batch time: 0.4500s vs `on_train_batch_end` time: 0.4677s). {CHECK}\n" + _bar(3, 1000, 500, "500ms/step"))
    d = diagnose(_read(tmp_path, text))
    assert d.verdict["id"] != "between_steps"
    recurring = diagnose(_read(tmp_path, text.replace("500ms/step", "950ms/step").replace("500s", "950s"), "b.log"))
    assert recurring.verdict["id"] == "between_steps"  # 0.95 s a step: the hook ran after every batch
