"""The fifty-sixth held-out round (tests/data/eval/heldout56/SOURCES.md): what TensorFlow / Keras print about a run
that loses GPU time, or does not — Keras's callback-timing warning (Keras 1's wording alone; TF 2.2's beside epochs
whose steps show it was a one-off), the input running out of data, a cuDNN fallback, a shuffle-buffer fill each epoch
and grappler's error-looking note on a fast run. Each file's verdict (one of the accepted ids) and what is read (the
fixes are tested apart: tests/readers/test_keras_statements.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout56"

ACCEPTED = {
    "tf35501_lstm_eager_grappler_warning_fast.log": ("healthy", "insufficient_data"),
    "tf37876_tensorboard_profile_batch_callback_warning.log": ("healthy", "insufficient_data"),
    "keras608_on_batch_end_slow_0648.log": ("between_steps",),
    "mrdbourke70_input_ran_out_of_data_epoch11.log": ("insufficient_data", "healthy"),
    "tf40944_gru_dropout_generic_kernel.log": ("slower_compute",),
    "tf28405_shuffle_buffer_fill_each_epoch.log": ("healthy", "insufficient_data", "data_starvation"),
}
NOT_YET: dict[str, str] = {}  # tf40944: named since a regression cause with an event kind of its own is a
# diagnosis id too (knowledge.causes.DIAGNOSIS_IDS)

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def _read(name):
    return read_paths([str(HERE / name)])


@pytest.mark.parametrize(("name", "kinds"), [
    ("keras608_on_batch_end_slow_0648.log", ["callback_slow"]),
    ("tf37876_tensorboard_profile_batch_callback_warning.log", ["callback_slow"]),
    ("mrdbourke70_input_ran_out_of_data_epoch11.log", ["input_exhausted"]),
    ("tf40944_gru_dropout_generic_kernel.log", ["kernel_fallback"]),
    ("tf28405_shuffle_buffer_fill_each_epoch.log", ["data_load", "data_load"]),
])
def test_the_statements_are_read_as_events(name, kinds):
    ev = _read(name).events
    assert [k for k in ev["kind"].tolist() if k != "eval"] == kinds


def test_the_cut_epoch_after_the_input_ran_out_is_no_step():
    steps = _read("mrdbourke70_input_ran_out_of_data_epoch11.log").steps
    assert steps["duration_s"].tolist() == [0.008]  # epoch 10's 8 ms per step; not epoch 11's 7 steps


def test_the_shuffle_fills_last_about_sixteen_seconds_and_the_epoch_is_not_read_as_epoch_154():
    bundle = _read("tf28405_shuffle_buffer_fill_each_epoch.log")
    fills = bundle.events.loc[bundle.events["kind"] == "data_load", "duration_s"].tolist()
    assert fills == pytest.approx([16.48, 16.69], abs=0.01)
    assert 154 not in bundle.steps["step"].tolist()


def test_the_one_off_callback_at_batch_2_is_no_finding_and_the_run_is_healthy():
    d = diagnose(_read("tf37876_tensorboard_profile_batch_callback_warning.log"))
    assert d.verdict["id"] == "healthy"
    assert all(h["id"] != "between_steps" for h in d.hypotheses)


def test_the_median_rule_states_about_half_the_wall_time_between_steps():
    d = diagnose(_read("keras608_on_batch_end_slow_0648.log"))
    assert d.hypotheses[0]["lost_share"] == pytest.approx(0.95 / 1.95, abs=1e-3)
    assert d.hypotheses[0]["names"] in ([], ["keras608_on_batch_end_slow_0648"])


def test_the_benign_notes_leave_nothing_unread():
    for name in ("tf35501_lstm_eager_grappler_warning_fast.log", "tf28405_shuffle_buffer_fill_each_epoch.log"):
        meta = next(iter(_read(name).meta["lines"].values()))
        assert not any("Skipping optimization" in e or "stop event" in e for e in meta.get("unread_examples", []))


@pytest.mark.parametrize("steady", [False, True])
def test_a_stated_kernel_fallback_names_slower_compute_even_beside_a_steady_pace(tmp_path, steady):
    """The statement is printed once when the model is built and every step then runs the slower kernel: the run's
    own pace cannot show it (knowledge.causes.STANDING_EVENT_KINDS, UTILIZATION_BLIND), so steady epochs do not make
    the run healthy. An LSTM and the newer wording, written apart from tf40944's GRU line."""
    lines = ["WARNING:tensorflow:Layer lstm_1 will not use cuDNN kernels since it doesn't meet the criteria. It will "
             "use a generic GPU kernel as fallback when running on GPU."]
    for e in range(1, 6 if steady else 1):
        lines += [f"Epoch {e}/5", f"1563/1563 [==============================] - {93 + e % 2}s 60ms/step - loss: "
                  f"{0.5 / e:.4f} - accuracy: {0.8 + e / 100:.4f}"]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    d = diagnose(read_paths([str(path)]))
    assert d.verdict["id"] == "slower_compute"
    assert "cuDNN" in " ".join(d.hypotheses[0]["evidence"])
