"""Review r11 of rounds 71 / 68 (readers/pipe_table.py, readers/model_placement.py's Task Manager lines,
readers/trtexec_summary.py): inputs written apart from the rounds' files."""

from __future__ import annotations

from playbook.readers import detect, read_paths


def _write(tmp_path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


LOG_WITH_INVENTORY = ("Environment:\n| GPU | Name | Memory (MiB) | Util (%) |\n|---|---|---|---|\n"
                      "| 0 | A100 | 40536 | 0 |\n| 1 | A100 | 40536 | 0 |\n"
                      + "".join(f"2024-01-15 10:00:{s:02d} INFO step {i} loss 2.{9 - i} step_time {t}s\n"
                                for i, (s, t) in enumerate([(1, 0.51), (2, 0.50), (3, 0.52), (4, 2.50), (7, 0.51),
                                                            (8, 0.51), (9, 0.50), (10, 0.52)], start=1)))


def test_a_training_log_that_printed_a_gpu_table_once_stays_the_line_scanners(tmp_path):
    # a pipe table of the GPUs at start-up, then the run's step lines: the steps are the input, not two idle polls
    path = _write(tmp_path, "train.log", LOG_WITH_INVENTORY)
    assert detect.detect(path) == "lines"
    assert len(read_paths([path]).steps) == 8
