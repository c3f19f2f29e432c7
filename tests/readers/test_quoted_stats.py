"""Stats a JSON or dict log line holds as text (fairseq's and metaseq's json progress bar: `format_stat` turns every
meter into a string, `"ups": "0.68"`) read as the numbers they are; counters and rates named for the training split
(fairseq's epoch summary: `"train_num_updates": "643"`, `"train_ups": "0.32"`) read as the training's. The lines
below are written to fairseq's log layout (`<date> | INFO | train_inner | {json}`), with values of their own."""

from __future__ import annotations

import numpy as np

from playbook.readers import read_paths
from playbook.readers.step_log.vocab import classify, unquote_numbers


def _read(tmp_path, lines: list[str]):
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return read_paths([str(path)]).steps


def test_numbers_held_as_text_in_a_json_or_dict_line_become_numbers():
    assert unquote_numbers('{"loss": "15.6", "clip": "100%", "lr": "1.25e-05", "arch": "transformer"}') == \
        '{"loss": 15.6, "clip": 100%, "lr": 1.25e-05, "arch": "transformer"}'
    assert unquote_numbers("{'ups': '0.68', 'note': 'v2 3'}") == "{'ups': 0.68, 'note': 'v2 3'}"
    assert unquote_numbers('model "7" loaded') == 'model "7" loaded'  # no object: left as it is


def test_train_inner_lines_with_quoted_stats_are_steps(tmp_path):
    lines = [f'2023-02-0{1 + i // 20} {10 + i % 20:02d}:00:00 | INFO | train_inner | {{"epoch": 1, "update": '
             f'"{0.01 * i:.3f}", "loss": "{9 - i * 0.1:.3f}", "wps": "8120.5", "ups": "{ups}", "wpb": "4001.2", '
             f'"bsz": "128", "num_updates": "{100 * (i + 1)}", "lr": "0.0005", "gnorm": "1.2", "train_wall": '
             f'"{100 / float(ups):.0f}", "gb_free": "10.1", "wall": "{3600 * i}"}}'
             for i, ups in enumerate(["1.25"] * 6 + ["0.5"] + ["1.25"] * 5)]
    steps = _read(tmp_path, lines)
    assert steps["step"].tolist() == [100 * (i + 1) for i in range(12)]
    assert np.allclose(steps["duration_s"], [0.8] * 6 + [2.0] + [0.8] * 5)  # 1 / ups


def test_metaseq_lines_with_other_keys_read_the_same_way(tmp_path):
    lines = [f'2022-05-03 17:{i:02d}:00 | INFO | train_inner | {{"epoch": 1, "actv_norm": "101.2", "pos_norm": '
             f'"0.2", "loss": "{8 - i * 0.01:.2f}", "ppl": "250.1", "wps": "51234", "ups": "0.25", "wpb": "204800", '
             f'"bsz": "100", "num_updates": "{10 * i + 10}", "lr": "3e-05", "gnorm": "0.9", "clip": "0", '
             f'"loss_scale": "8", "train_wall": "40", "cuda_gb_allocated": "21.3", "wall": "{40 * i + 40}"}}'
             for i in range(8)]
    steps = _read(tmp_path, lines)
    assert len(steps) == 8 and np.allclose(steps["duration_s"], 4.0)


def test_an_epoch_summary_names_its_counter_and_rate_for_the_split(tmp_path):
    lines = []
    for e in range(5):
        lines += [f'2021-01-05 2{e}:00:00 | INFO | train | {{"epoch": {e + 1}, "train_loss": "8.1", "train_wps": '
                  f'"2990.8", "train_ups": "0.4", "train_wpb": "9392.2", "train_num_updates": "{50 * (e + 1)}", '
                  f'"train_lr": "2.4e-05", "train_train_wall": "125", "train_wall": "{3600 * (e + 1)}"}}',
                  f"2021-01-05 2{e}:00:00 | INFO | fairseq.trainer | begin training epoch {e + 2}"]
    steps = _read(tmp_path, lines)
    assert steps["step"].tolist() == [50, 100, 150, 200, 250]
    assert np.allclose(steps["duration_s"], 2.5)  # 1 / train_ups


def test_the_split_prefix_is_read_only_when_the_whole_key_means_nothing():
    assert classify("train_ups", None) == classify("ups", None) != None  # noqa: E711
    assert classify("train_time", None) != classify("time", None)  # a whole key keeps its own meaning
    assert classify("train_loss", None) is None


def test_a_long_run_of_digits_in_quotes_is_bounded_work():
    """A quoted value of 100,000 digits with no closing quote (a damaged or hostile line): the number pattern may
    split the digits only one way. `\\d+\\.?\\d*` split them every way, tried at each end: ~6 minutes for this line
    (20,000 digits took 14 s); linear, milliseconds. Run apart, so a regression fails by its timeout, not hangs."""
    import subprocess
    import sys

    code = ("from playbook.readers.step_log.vocab import unquote_numbers as u; "
            "s = u('{\"loss\": \"' + '1' * 100_000); print(len(s))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == str(len('{"loss": "') + 100_000)
