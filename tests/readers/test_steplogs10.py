"""The step grammar's mechanisms from round steplogs10, on lines written apart from tests/data/steplogs9 (LABELED
SYNTHETIC: each follows a print statement cited in tests/data/steplogs9/SOURCES.md, with other numbers and shapes)."""

from __future__ import annotations

import pytest

from playbook.readers import read_file
from playbook.readers.event_lexicon import CHECKPOINT


def _steps(tmp_path, text: str):
    (tmp_path / "run.log").write_text(text)
    s = read_file(tmp_path / "run.log").steps
    return s[s["phase"] == "step"], s[s["phase"] == "data"].set_index("step")["duration_s"]


def test_an_epoch_bracket_then_a_batch_bracket_and_a_step_noun_written_with_a_point_is_a_time(tmp_path):
    """Pointcept's AverageMeter line: `[e/E][i/N]` is batch i of epoch e; `Batch 1.000 (0.600)` is the batch's time
    (a point makes it a time, even when it is a whole number), `Data` its wait."""
    rows = [(1, 39, 0.500, 0.020), (1, 40, 1.000, 0.600), (2, 1, 0.450, 0.010), (2, 2, 0.470, 0.015)]
    text = "".join(f"[2024-01-02 03:04:{k:02d},000 INFO train.py line 9 77] Train: [{e}/5][{i}/40] Data {d:.3f} "
                   f"({d:.3f}) Batch {b:.3f} (0.600) Remain 0:12:00 loss: 0.5 Lr: 0.01\n"
                   for k, (e, i, b, d) in enumerate(rows))
    steps, data = _steps(tmp_path, text)
    assert steps["step"].tolist() == [39, 40, 41, 42]
    assert steps["duration_s"].tolist() == pytest.approx([0.5, 1.0, 0.45, 0.47])
    assert data.tolist() == pytest.approx([0.02, 0.6, 0.01, 0.015])


def test_a_bracketed_name_labels_the_bracketed_value_after_the_first(tmp_path):
    """BasicSR's `time (data): 1.2s (0.3s)` (its epoch-mode variant, with units): 1.2 s the step, 0.3 s the wait."""
    text = "".join(f"[model..][epoch:{e:3d}, iter:{it:8,d}, lr:(1.000e-04,)] [eta: 0:10:00, time (data): {t:.1f}s "
                   f"({d:.1f}s)] l_pix: 1.0e-02\n" for e, it, t, d in [(1, 200, 1.2, 0.3), (1, 400, 1.4, 0.5),
                                                                       (2, 600, 1.1, 0.2)])
    steps, data = _steps(tmp_path, text)
    assert steps["step"].tolist() == [200, 400, 600]
    assert steps["duration_s"].tolist() == pytest.approx([1.2, 1.4, 1.1])
    assert data.tolist() == pytest.approx([0.3, 0.5, 0.2])


def test_saving_models_is_a_checkpoint_and_saving_a_model_summary_is_not():
    assert CHECKPOINT.search("2024-01-01 10:00:00,000 INFO: Saving models and training states.")
    assert CHECKPOINT.search('[2024-01-01:10:00:00:INFO:root:save_parameters] Saved params/state_dict to "m/p.0003"')
    assert not CHECKPOINT.search("Model summary: 12 layers, saving none")


def test_indented_rows_under_a_dated_head_are_its_fields_and_a_step_time_short_of_its_stamps_leaves_out_the_wait(
        tmp_path):
    """Coqui Trainer: the head's date is its time stamp, no time field; `| > step_time` / `| > loader_time` rows are
    the record's fields, not steps of their own; where the heads' stamps (50 steps apart) match step_time +
    loader_time and not step_time alone, the step is both (step_time times the optimize call alone)."""
    blocks, clock = [], 0.0
    for k, (st, lt) in enumerate([(0.30, 0.02)] * 3 + [(0.30, 0.80)] * 3):
        clock += 50 * (st + lt)
        blocks.append(f"\n   --> TIME: 2023-06-01 08:{int(clock) // 60:02d}:{int(clock) % 60:02d} -- STEP: {50 * k + 49}/"
                      f"900 -- GLOBAL_STEP: {50 * k + 100}\n     | > loss: 1.5  (1.6)\n"
                      f"     | > step_time: {st:.2f}  ({st:.2f})\n     | > loader_time: {lt:.2f}  ({lt:.2f})\n")
    steps, data = _steps(tmp_path, "".join(blocks))
    assert steps["step"].tolist() == [100, 150, 200, 250, 300, 350]
    assert steps["duration_s"].tolist() == pytest.approx([0.32] * 3 + [1.10] * 3)
    assert data.tolist() == pytest.approx([0.02] * 3 + [0.80] * 3)
    (tmp_path / "undated.log").write_text("".join(blocks).replace("TIME: 2023-06-01 ", "TIME: "))
    undated = read_file(tmp_path / "undated.log").steps
    # without stamps the waits still tell: 0.80 s of loader_time cannot fit inside a 0.30 s step_time
    assert undated[undated["phase"] == "step"]["duration_s"].tolist() == pytest.approx([0.32] * 3 + [1.10] * 3)
    (tmp_path / "short.log").write_text("".join(blocks[:3]).replace("TIME: 2023-06-01 ", "TIME: "))
    short = read_file(tmp_path / "short.log").steps  # every wait shorter than its step, no stamps: nothing to tell
    assert short[short["phase"] == "step"]["duration_s"].tolist() == pytest.approx([0.30] * 3)


def test_a_step_time_that_holds_its_wait_is_not_summed_with_it(tmp_path):
    """The other way round (PyTorch's `Time` meter holds its `Data`): never shorter than the wait, left as it is."""
    text = "".join(f"Epoch: [0][{i}/100]\tTime {t:.3f} ({t:.3f})\tData {d:.3f} ({d:.3f})\tLoss 1.0 (1.0)\n"
                   for i, t, d in [(10, 0.5, 0.1), (20, 0.9, 0.85), (30, 0.5, 0.1)])
    steps, _ = _steps(tmp_path, text)
    assert steps["duration_s"].tolist() == pytest.approx([0.5, 0.9, 0.5])


def test_one_letter_epoch_and_batch_and_updates_per_second(tmp_path):
    """Sockeye's Speedometer `E=e B=b ... u/sec=r`: the batch restarts each epoch and counts on; u/sec inverted."""
    rows = [(0, 100, 4.0), (0, 200, 4.0), (1, 100, 2.0), (1, 200, 4.0)]
    text = "".join(f"[2023-02-01:09:00:{k:02d}:INFO:sockeye.training:__call__] E={e} B={b}\ts/sec=100.00 "
                   f"tok/sec=2000.00 u/sec={u:.2f}\tperplexity=50.000000 \n" for k, (e, b, u) in enumerate(rows))
    steps, _ = _steps(tmp_path, text)
    assert steps["step"].is_monotonic_increasing and len(steps) == 4
    assert steps["duration_s"].tolist() == pytest.approx([0.25, 0.25, 0.5, 0.25])


def test_step_rate_lines_before_a_step_line_give_that_step_its_mean_pace(tmp_path):
    """Pax: `steps/sec:` every 10 steps, the step on the `[PAX STATUS] step_i:` line after them; its time is the
    mean of the rates' seconds per step (2 and 4 steps/s: 0.375 s)."""
    text = ("steps/sec: 2.000000\nsteps/sec: 4.000000\n[PAX STATUS] step_i: 20, train loss: 2.5\n"
            "steps/sec: 5.000000\nsteps/sec: 5.000000\n[PAX STATUS] step_i: 40, train loss: 2.4\n")
    steps, _ = _steps(tmp_path, text)
    assert steps["step"].tolist() == [20, 40]
    assert steps["duration_s"].tolist() == pytest.approx([0.375, 0.2])


def test_a_total_since_the_epoch_began_times_each_epochs_first_line_by_its_position(tmp_path):
    """Flair's `time (sec)` restarts each epoch with `iter`: an epoch's first line is its total over its iter."""
    rows = [(2 * k, 1, 20 * k, 2.0 * k) for k in range(1, 6)] + [(12 + 3 * k, 2, 20 * k, 3.0 * k) for k in range(1, 6)]
    text = "".join(f"2022-01-01 10:00:{at:02d},000 epoch {e} - iter {i}/100 - loss 0.5 - time (sec): {t:.2f} - "
                   f"samples/sec: 80.00 - lr: 0.100000\n" for at, e, i, t in rows)  # (stamp s, epoch, iter, total s)
    steps, _ = _steps(tmp_path, text)
    assert steps["step"].tolist() == [20, 40, 60, 80, 100, 120, 140, 160, 180, 200]
    assert steps["duration_s"].tolist() == pytest.approx([0.1] * 5 + [0.15] * 5)


def test_a_date_inside_a_step_line_is_no_value_and_no_part_of_the_next_key(tmp_path):
    """`TIME: 2024-03-05 10:00:13` mid-line: no time of 2024 s, and `time: 0.5` after it keeps its own key (an
    impossible date too)."""
    text = ("step 5 TIME: 2024-02-03 10:00:13 time: 0.50\nstep 6 TIME: 2024-13-45 99:99:99 time: 0.60\n"
            "step 7 time: 0.70\n")
    steps, _ = _steps(tmp_path, text)
    assert steps["step"].tolist() == [5, 6, 7]
    assert steps["duration_s"].tolist() == pytest.approx([0.5, 0.6, 0.7])


def test_a_micro_step_counter_counts_the_steps(tmp_path):
    # LABELED SYNTHETIC: a loop that counts gradient-accumulation micro-steps (`micro_step N`) was 'not telemetry'
    steps, _ = _steps(tmp_path, "".join(f"micro_step {s} loss 2.31 time 0.120s\n" for s in range(1, 41)))
    assert list(steps["step"]) == list(range(1, 41))
    assert steps["duration_s"].round(3).eq(0.12).all()
