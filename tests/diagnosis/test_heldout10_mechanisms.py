"""The reader mechanisms the tenth held-out round (tests/data/eval/heldout10/SOURCES.md) asked for, each on inputs
written here (LABELED SYNTHETIC), apart from the round's own files: `iters` (the plural, pix2pix / CycleGAN's
`(epoch: 1, iters: 100, time: ...)`) is the step counter, not the epoch beside it; a duration spelled in parts
(`time:1 hour 2 minutes 3 seconds`) is one value; a field whose lines all name one step (a progress bar printed only
when complete) times no series when another field spans several steps."""

from __future__ import annotations

import numpy as np

from playbook.readers import read_paths
from playbook.readers.step_log.spelled import join_spelled


def _steps(path, lines):
    path.write_text("\n".join(lines) + "\n")
    steps = read_paths([str(path)]).steps
    return steps[steps["phase"] == "step"]


def test_iters_is_the_step_counter_beside_an_epoch(tmp_path):
    # 3 epochs of 400 iterations, a line every 100 global iterations; the step time rises from 0.20 to 0.32 s
    lines = [f"(epoch: {1 + (it - 1) // 400}, iters: {it}, time: {0.20 + 0.01 * k:.3f}, data: 0.004) G_GAN: 0.812 "
             f"D_real: 0.301 " for k, it in enumerate(range(100, 1300, 100))]
    s = _steps(tmp_path / "pix2pix.log", lines)
    assert s["step"].tolist() == list(range(100, 1300, 100))  # 12 records, not one per epoch
    assert np.isclose(s["duration_s"].max(), 0.31)


def test_a_duration_spelled_in_parts_is_one_value(tmp_path):
    assert join_spelled("time:1 hour 2 minutes 3 seconds.") == "time:3723 s."
    assert join_spelled("took 7 min 50 s") == "took 470 s"
    # a part at or past 60 of its unit, or units that do not fall, are no spelled duration: left as written
    assert join_spelled("5 minutes 75 seconds") == "5 minutes 75 seconds"
    assert join_spelled("3 seconds 2 minutes") == "3 seconds 2 minutes"
    s = _steps(tmp_path / "epochs.log", [
        f"[0102 10:{k:02d}:00 @trainer.py:90] Epoch {k} (global_step {500 * k}) finished, time:{m} minutes {sec} "
        f"seconds." for k, (m, sec) in enumerate([(4, 10), (4, 12), (9, 5), (9, 1), (9, 7)], start=1)])
    assert s["duration_s"].tolist() == [250.0, 252.0, 545.0, 541.0, 547.0]


def test_a_field_on_one_step_only_times_no_series(tmp_path):
    # a bar printed once an epoch, always complete (`500/500`), beside the epoch's stated time
    lines = []
    for k, secs in enumerate([100, 101, 240, 238, 243, 239], start=1):
        lines.append(f"100%|{'#' * 20}|500/500[{secs // 60:02d}:{secs % 60:02d}<00:00, {500 / secs:.2f}it/s]")
        lines.append(f"[0102 10:{k:02d}:00 @trainer.py:90] Epoch {k} (global_step {500 * k}) finished, "
                     f"time:{secs} seconds.")
    s = _steps(tmp_path / "bar.log", lines)
    assert len(s) == 6 and s["duration_s"].tolist() == [100.0, 101.0, 240.0, 238.0, 243.0, 239.0]


def test_the_shift_edge_guard_counts_steps_not_lines():
    import pandas as pd

    from playbook.analysis.step_times import level_shift

    rng = np.random.default_rng(1104)
    d = np.r_[100.0, 240.0 * np.exp(0.01 * rng.standard_normal(7))]  # one fast epoch, then the shift
    # 8 lines of 500 steps each: the first line is the mean of 500 steps, a level of its own
    epochs = pd.DataFrame({"step": 500 * np.arange(1, 9), "duration_s": d, "time": pd.NaT})
    shift = level_shift(epochs, min_steps=8)
    assert shift is not None and shift["shifted"] and shift["step"] == 1000
    # the same values one step a line: one step at the edge is no level (the guard holds)
    single = pd.DataFrame({"step": np.arange(1, 9), "duration_s": d, "time": pd.NaT})
    assert level_shift(single, min_steps=8) is None
