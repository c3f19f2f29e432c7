"""Restarts, window means and evaluation sections read from the lines of a log (readers/step_log/reruns.py,
smoothed.py, readers/lines.py)."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.readers import lines
from playbook.readers.step_log.smoothed import window_mean_steps


def _scan(tmp_path, text: str):
    path = tmp_path / "train.log"
    path.write_text(text)
    return lines.scan(path)


def _steps(bundle):
    return bundle.steps[bundle.steps["phase"] == "step"].sort_values("step")


def test_a_step_logged_again_is_one_restart(tmp_path):
    rows = [f"iteration {i} loss 2.0 time 0.30" for i in (10, 20, 30)] + \
           [f"iteration {i} loss 2.0 time 0.30" for i in (20, 30, 40)]
    b = _scan(tmp_path, "\n".join(rows) + "\n")
    assert list(b.events["kind"]) == ["restart"] and int(b.events["step"].iloc[0]) == 20
    assert list(_steps(b)["step"]) == [10, 20, 30, 40]


def test_the_same_lines_from_every_untagged_rank_are_no_restarts(tmp_path):
    rows = [f"iteration {i} loss 2.0 time 0.30" for i in range(1, 30) for _ in range(4)]
    b = _scan(tmp_path, "\n".join(rows) + "\n")
    assert "restart" not in set(b.events.get("kind", []))
    assert len(_steps(b)) == 29


def test_an_evaluation_line_at_the_same_step_is_no_restart(tmp_path):
    rows = ["step:1/10 train_time:60ms step_avg:60ms", "step:2/10 train_time:120ms step_avg:60ms",
            "step:2/10 val_loss:4.1 train_time:120ms step_avg:60ms", "step:3/10 train_time:180ms step_avg:60ms"]
    b = _scan(tmp_path, "\n".join(rows) + "\n")
    assert set(b.events["kind"]) == {"eval"}


def test_metric_logger_window_means_become_step_times(tmp_path):
    # torchvision MetricLogger: `time` / `data` are the mean of the epoch's last min(i + 1, 20) iterations
    own = [4.0, 0.3, 0.35, 0.3, 0.32, 0.3]
    rows = []
    for i in range(6):
        mean = np.mean(own[: i + 1])
        rows.append(f"Epoch: [0]  [{i}/6]  eta: 0:00:05  lr: 0.001  loss: 2.1 (2.3)  time: {mean:.4f}  "
                    f"data: {mean / 10:.4f}  max mem: 2547")
    steps = _steps(_scan(tmp_path, "\n".join(rows) + "\n"))
    assert steps["duration_s"].to_numpy() == pytest.approx(own, abs=1e-3)


def test_a_plain_time_that_falls_stays_each_steps_own():
    # not window means: the recovered times would be negative, so the printed ones are kept
    values = np.array([0.9, 0.2, 0.8, 0.1])
    assert window_mean_steps(values, np.arange(4), np.zeros(4, np.int64)) is None


def test_metric_logger_median_and_global_average_keeps_the_median(tmp_path):
    rows = [f"Epoch: [0]  [{i}/40]  eta: 0:00:05  lr: 0.001  loss: 2.1 (2.3)  time: 0.3300 (0.9950)  "
            f"data: 0.0100 (0.3000)  max mem: 2547" for i in range(0, 40, 10)]
    steps = _steps(_scan(tmp_path, "\n".join(rows) + "\n"))
    assert steps["duration_s"].to_numpy() == pytest.approx([0.33] * 4)


def test_an_evaluations_first_line_again_is_a_new_evaluation(tmp_path):
    rows = []
    for k in range(1, 4):
        rows.append(f':::MLLOG {{"time_ms": {1684246072651 + k * 150000}, "key": "eval_accuracy", "value": 0.{k}}}')
        rows.append(f"{{'global_steps': {586 * k}, 'eval_loss': 4.0, 'eval_mlm_accuracy': 0.{k}}}")
    ev = _scan(tmp_path, "\n".join(rows) + "\n").events
    assert int((ev["kind"] == "eval").sum()) == 3


def test_a_comment_in_printed_source_is_no_evaluation(tmp_path):
    text = ("    for step in range(10):\n        x = model(inputs)\n    # ------ VALIDATION SECTION ------\n"
            "    if last_step:\n        val_loss = 0\n"
            "step:1/10 train_time:60ms step_avg:60ms\nstep:2/10 train_time:120ms step_avg:60ms\n"
            "step:2/10 val_loss:4.1 train_time:120ms step_avg:60ms\n")
    ev = _scan(tmp_path, text).events
    assert [(k, int(s)) for k, s in ev[["kind", "step"]].itertuples(index=False)] == [("eval", 2)]


def test_a_bare_step_banner_takes_the_step_time_stated_lines_later(tmp_path):
    # NeMo-RL: the banner, progress lines, then the timing block; the stage lines after it join the record
    rows = []
    for step, total in ((1, 60.0), (2, 90.0)):
        rows += [f"{'=' * 25} Step {step}/2 {'=' * 25}", "▶ Preparing batch...", "📊 Training Results:",
                 "  • Loss: 0.0123", "⏱️  Timing:", f"  • Total step time: {total:.2f}s",
                 f"  • generation: {total / 2:.2f}s (50.0%)", "  • data_processing: 1.50s (2.5%)"]
    b = _scan(tmp_path, "\n".join(rows) + "\n")
    steps = _steps(b)
    assert steps["step"].tolist() == [1, 2] and steps["duration_s"].tolist() == pytest.approx([60.0, 90.0])
    assert b.steps[b.steps["phase"] == "data"]["duration_s"].tolist() == pytest.approx([1.5, 1.5])


def test_a_bare_step_banner_without_a_step_time_stores_nothing(tmp_path):
    rows = ["===== Step 1/3 =====", "  • generation: 31.20s (50.0%)", "===== Step 2/3 =====",
            "  • reward: 0.45", "step 3 step_time 0.5s"]
    steps = _steps(_scan(tmp_path, "\n".join(rows) + "\n"))
    assert steps["step"].tolist() == [3]  # a stage time is not the step's; the banners wait in vain


def test_metric_logger_every_10_iterations_recovers_windows_past_the_20_step_mean(tmp_path):
    own = [3.0] + [0.5] * 24 + [4.0] + [0.5] * 15  # 41 iterations, printed at 0, 10, 20, 30, 40
    rows = [f"Epoch: [0]  [{i:2d}/41]  eta: 0:00:05  loss: 2.1 (2.3)  time: {np.mean(own[max(0, i - 19): i + 1]):.4f}"
            f"  data: 0.0100  max mem: 2547" for i in range(0, 41, 10)]
    steps = _steps(_scan(tmp_path, "\n".join(rows) + "\n"))
    assert steps["duration_s"].to_numpy() == pytest.approx([3.0, 0.5, 0.5, 0.85, 0.5], abs=1e-3)
