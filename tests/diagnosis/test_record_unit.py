"""A log whose rows are epochs says so on the page: the readers record the unit (schema.RECORD_UNITS, read by
schema.record_unit) and the wall-time accounting and the too-few-rows reason name epochs, not steps. Inputs written
here (LABELED SYNTHETIC): a per-epoch history CSV, epoch-time lines, and a step CSV beside them."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.model import schema
from playbook.readers import read_paths


def _write(tmp_path, name: str, lines: list[str]):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _epoch_history(tmp_path):
    """fastai's CSVLogger layout: 12 epochs of ~4:40, the last 5 at ~6:10 (a slower second half)."""
    times = ["04:40", "04:38", "04:41", "04:39", "04:40", "04:42", "04:38", "06:10", "06:12", "06:09", "06:11", "06:10"]
    return _write(tmp_path, "history.csv", ["epoch,train_loss,valid_loss,accuracy,time"] +
                  [f"{e},{0.8 - 0.03 * e:.3f},{0.5 - 0.01 * e:.3f},0.9,{t}" for e, t in enumerate(times)])


def test_a_per_epoch_history_is_read_and_worded_as_epochs(tmp_path):
    bundle = read_paths([_epoch_history(tmp_path)])
    assert schema.record_unit(bundle) == "epoch"
    result = diagnose(bundle)
    assert result.verdict["id"] != "healthy"
    details = [b["detail"] for b in result.accounting["buckets"]]
    assert details and all("epoch" in d and "step" not in d for d in details), details
    assert "step" not in result.accounting["noise_floor"]
    head = result.verdict["sentence"].split("record next")[0]
    assert "epoch" in head and "step" not in head, head


def test_epoch_time_lines_are_epoch_records_and_step_lines_are_not(tmp_path):
    epochs = _write(tmp_path, "train.log", [line for e in range(6) for line in (
        f"Epoch {e:05d} | Step 00020 | Loss {1.9 - 0.1 * e:.2f}", f"Epoch Time(s): {14.2 + 0.1 * (e % 2):.1f}")])
    assert schema.record_unit(read_paths([epochs])) == "epoch"
    steps = _write(tmp_path, "steps.csv", ["step,loss,step_time"] + [f"{k},{1 - k / 100:.2f},0.5" for k in range(20)])
    assert schema.record_unit(read_paths([steps])) == "step"
    assert schema.record_unit(read_paths([steps, epochs])) == "step"  # rows of both kinds: the general word


def test_too_few_epochs_name_epochs():
    import pandas as pd

    from playbook.analysis.step_pace import no_steady_pace

    steps = schema.steps_frame({"rank": [-1] * 3, "step": [0, 1, 2], "phase": ["step"] * 3,
                                "duration_s": [450.0, 440.0, 900.0], "time": [pd.NaT] * 3, "source": ["h.csv"] * 3})
    assert no_steady_pace(steps, "epoch").startswith("3 epoch times")
    assert no_steady_pace(steps).startswith("3 step times")


def _history(tmp_path, seconds: list[float]):
    """fastai's CSVLogger layout, one row per epoch taking `seconds` (LABELED SYNTHETIC)."""
    return _write(tmp_path, "history.csv", ["epoch,train_loss,valid_loss,accuracy,time"] +
                  [f"{e},{0.8 - 0.01 * e:.3f},0.5,0.9,{int(s) // 60:02d}:{int(s) % 60:02d}"
                   for e, s in enumerate(seconds)])


def test_the_verdict_names_the_slow_epochs_and_what_epoch_times_cannot_show(tmp_path):
    import numpy as np

    base = 280 + np.random.default_rng(3).normal(0, 2, 40)
    stall = base.copy()
    stall[17] += 600
    sentence = diagnose(read_paths([_history(tmp_path, list(stall))])).verdict["sentence"]
    assert "at epoch 17" in sentence and "at step " not in sentence, sentence
    healthy = diagnose(read_paths([_history(tmp_path, list(base))])).verdict
    assert healthy["id"] == "healthy" and "epoch times cannot show a cost every epoch pays" in healthy["sentence"]


def test_the_steps_section_of_an_epoch_history_counts_epochs(tmp_path):
    from playbook.commands.diagnose import _steps_section

    summary = diagnose(read_paths([_epoch_history(tmp_path)])).to_dict()["steps"]
    assert summary["record"] == "epoch"
    assert _steps_section(summary)[0].startswith("Epochs: 12 epochs on 1 rank(s)")
    assert _steps_section({"steps": 5, "ranks": 1})[0].startswith("Steps: 5 steps")


def test_health_names_the_cadence_test_only_where_it_ran(tmp_path):
    """"no slow steps recurring every N steps" stood beside one timed step; a steady per-epoch history says epochs."""
    def healthy_texts(path):
        ranked = diagnose(read_paths([path])).hypotheses
        return next(h["evidence"] for h in ranked if h["id"] == "healthy")

    steady = _history(tmp_path, [280.0 + (e % 3) for e in range(20)])
    assert "no slow epochs recurring every N epochs" in healthy_texts(steady)
    three = _write(tmp_path, "steps.csv", ["step,loss,step_time", "1,2.0,0.50", "2,1.9,0.51", "3,1.8,0.50"])
    assert not any("recurring" in t for t in healthy_texts(three)), healthy_texts(three)
