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


def test_a_pipe_tables_cells_keep_their_units(tmp_path):
    # the unit a cell states scales it as a CSV cell's does (GiB, GHz, kW): not its bare number in the header's unit
    text = ("| elapsed | GPU0 util | GPU0 memory used | GPU0 memory total | GPU0 SM clock | GPU0 power |\n"
            "|---|---|---|---|---|---|\n"
            + "".join(f"| {s} s | 97% | 15.5 GiB | 24 GiB | 1.98 GHz | 0.3 kW |\n" for s in (1, 2, 3)))
    t = read_paths([_write(tmp_path, "units.md", text)]).telemetry
    assert t["mem_used_mib"].tolist() == [15.5 * 1024] * 3 and t["mem_total_mib"].tolist() == [24 * 1024] * 3
    assert t["sm_clock_mhz"].tolist() == [1980.0] * 3 and t["power_w"].tolist() == [300.0] * 3
    draw = ("| elapsed | GPU0 | power (GPU0) |\n|---|---|---|\n"
            + "".join(f"| {s} s | 70 °C | 250/300 W |\n" for s in (1, 2, 3)))
    t = read_paths([_write(tmp_path, "draw.md", draw)]).telemetry
    assert t["power_w"].tolist() == [250.0] * 3 and t["temp_c"].tolist() == [70.0] * 3
