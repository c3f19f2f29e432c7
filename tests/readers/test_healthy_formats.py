"""Step logs of healthy runs in wordings written apart from round 46's files (tests/data/eval/heldout46): a running
clock printed in minutes with a lower-case `m` (and StyleGAN's clock in parts left as it was), a per-step time named
`*_runtime` on lines without a step counter, and a stated per-step time on other lines than a progress bar's smoothed rate."""

from __future__ import annotations

import pytest

from playbook.readers import read_paths
from playbook.readers.step_log.vocab import unit_kind


def _steps(tmp_path, text: str, name: str = "run.log"):
    p = tmp_path / name
    p.write_text(text)
    return read_paths([str(p)]).steps


@pytest.mark.parametrize("fmt", [
    "step {s} | elapsed {m:.2f}m | loss: 3.1",
    "[step {s}] loss=3.1 elapsed={m:.2f}m",
    "it {s}, elapsed: {m:.2f}m, val 2.9",
])
def test_a_running_clock_in_minutes_is_differenced(tmp_path, fmt):
    # 50 steps between lines, 0.25 min (15 s) each window: 0.3 s a step
    text = "\n".join(fmt.format(s=50 * i, m=0.4 + 0.25 * i) for i in range(8)) + "\n"
    steps = _steps(tmp_path, text)
    assert len(steps) == 7 and steps["duration_s"].round(3).eq(0.3).all()


def test_minutes_spelled_with_their_seconds_are_no_time_of_their_own(tmp_path):
    # StyleGAN's `time 6m 40s` beside `sec/tick`: the tick's seconds stay the step time
    text = "".join(f"tick {i}     kimg {4.0 * i:.1f}      time {i + 1}m 0{i}s       sec/tick 60.{i}   sec/kimg 15.0\n"
                   for i in range(1, 6))
    steps = _steps(tmp_path, text)
    assert steps["duration_s"].round(1).tolist() == [60.1, 60.2, 60.3, 60.4, 60.5]


def test_an_upper_case_m_stays_memory_not_minutes():
    assert unit_kind("M") is None and unit_kind("m") == ("time", 60.0) and unit_kind("ms") == ("time", 1e-3)


def test_memory_in_megabytes_beside_a_step_time_is_no_time(tmp_path):
    text = "".join(f"iter: {i}  time: 0.500  data_time: 0.010  max_mem: 7432M\n" for i in range(20, 120, 20))
    steps = _steps(tmp_path, text)
    whole = steps[steps["phase"] == "step"]
    assert len(whole) == 5 and whole["duration_s"].round(3).eq(0.5).all()


@pytest.mark.parametrize("line", [
    '{{"loss": {l}, "step_runtime": {t}, "epoch": 0.5}}',
    "{{'train_step_runtime': {t}, 'train_step_samples_per_second': 50.0, 'epoch': 0.5}}",
    "loss {l} | batch_runtime={t}s",
])
def test_a_per_step_runtime_without_a_counter_is_each_steps_time(tmp_path, line):
    times = [0.61, 0.63, 0.62, 0.64, 0.6]
    text = "\n".join(line.format(l=2.0 - 0.1 * i, t=t) for i, t in enumerate(times)) + "\n"
    steps = _steps(tmp_path, text)
    assert sorted(steps["duration_s"].round(3)) == sorted(times)


def test_a_stated_step_time_wins_over_a_bar_rate_on_other_lines(tmp_path):
    # a custom callback's per-step print between tqdm refreshes: the bar's rate is smoothed over refreshes
    rows = []
    for i, t in enumerate([0.5, 0.52, 0.49, 0.51, 0.5, 0.5]):
        rows.append(f"{{'step_time': {t}, 'loss': 1.0}}")
        rows.append(f" 50%|#####     | {100 + i}/200 [01:0{i}<01:00,  1.20it/s]")
    steps = _steps(tmp_path, "\n".join(rows) + "\n")
    assert steps["duration_s"].between(0.48, 0.53).all()


def test_a_bar_with_its_own_step_time_on_the_same_line_is_unchanged(tmp_path):
    # NeMo's bar: the rate and `train_step_timing in s` on the same refresh line; no stated time elsewhere
    text = "".join(f"Epoch 0: {i}/500 [00:{10 + i:02d}<04:00, 2.00it/s, v_num=1, reduced_train_loss=3.0, "
                   f"train_step_timing in s=0.490]\n" for i in range(10, 20))
    steps = _steps(tmp_path, text)
    assert len(steps) > 0 and steps["duration_s"].between(0.45, 0.55).all()
