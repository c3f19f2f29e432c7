"""Readers found short by the twenty-sixth held-out round (tests/data/eval/heldout26/SOURCES.md), tested on tables
written here: a clock named by a relative-time word and a unit (`elapsed_sec`), a table of GPU readings alone (a
header written over `--format=csv,noheader` polls: no time, no GPU column), and one damaged cell that must not cost
the row its other readings (a quoted field holding a line break: the writer split nvidia-smi's two-GPU output on
commas only)."""

from __future__ import annotations

import numpy as np

from playbook.readers import read_paths
from playbook.readers.headers import is_telemetry, meaning


def test_relative_time_word_with_a_time_unit_is_a_clock():
    for name, unit in (("elapsed_sec", "s"), ("elapsed_ms", "ms"), ("uptime_s", "s")):
        m = meaning(name)
        assert (m.role, m.unit, m.relative) == ("time", unit, True), name
    assert meaning("elapsed").role is None  # no unit: a count of anything


def test_elapsed_seconds_column_places_the_polls(tmp_path):
    path = tmp_path / "poll.csv"
    path.write_text("elapsed_sec,gpu_util_pct,power_w\n" + "".join(f"{0.5 * i:.2f},{40 + i % 3},{100 + i}\n"
                                                                    for i in range(20)))
    t = read_paths([str(path)]).telemetry
    assert len(t) == 20
    gaps = np.diff(t["time"].astype("int64").to_numpy()) / 1e9
    assert np.allclose(gaps, 0.5)


def test_a_table_of_gpu_readings_alone_is_one_gpus_polls(tmp_path):
    assert is_telemetry(["gpu_util_pct", "mem_used_mib", "power_draw_w", "temp_c"])
    assert not is_telemetry(["gpu_util_pct"])  # one reading alone: too little to call a table telemetry
    assert not is_telemetry(["gpu_util_pct", "loss"])  # a training table that mentions the GPU
    path = tmp_path / "noheader_polls.csv"
    path.write_text("gpu_util_pct,mem_used_mib,power_draw_w,temp_c\n" + "".join(f"{90 + i % 5}, 6000, 70.{i}, 60\n"
                                                                               for i in range(30)))
    b = read_paths([str(path)], interval_s=2.0)
    assert len(b.telemetry) == 30 and b.telemetry["util_pct"].mean() > 90
    assert any("no timestamps" in w for w in b.warnings)


def test_one_damaged_cell_keeps_the_rows_other_readings(tmp_path):
    path = tmp_path / "split_output.csv"
    rows = "".join(f'{i}.0,{30 + i},500,"7{i}.5\n0"\n' for i in range(10))
    path.write_text("elapsed_sec,gpu_util_pct,mem_used_mb,power_w\n" + rows + "10.0,35,500,75.0\n")
    b = read_paths([str(path)])
    t = b.telemetry
    assert len(t) == 11 and t["util_pct"].notna().all()
    assert t["power_w"].isna().sum() == 10 and t["power_w"].dropna().tolist() == [75.0]
    assert any("left 10 unreadable value(s) empty" in w for w in b.warnings)


def test_a_row_with_no_readable_metric_is_still_skipped(tmp_path):
    path = tmp_path / "bad_rows.csv"
    path.write_text("elapsed_sec,gpu_util_pct,power_w\n0,50,100\n1,x,y\n2,52,101\n")
    b = read_paths([str(path)])
    assert len(b.telemetry) == 2
    assert any("skipped 1 of 3 rows" in w for w in b.warnings)


ALIGNED = """GPU monitor - Ctrl+C to stop
==================================================
Time     GPU%   Mem Used   Mem Total  Temp   Power
==================================================
""" + "".join(f"{1.5 * i:8.1f} {20.0 + i % 4:6.1f} {5000 + i:10d} {24576:10d} {50.0:6.1f} {120.0 + i:8.1f}\n"
              for i in range(40))


def test_space_aligned_table_with_names_holding_a_space(tmp_path):
    from playbook.readers import detect
    path = tmp_path / "monitor.log"
    path.write_text(ALIGNED + "partial line\n")
    assert detect.detect(path) == "aligned_table"
    b = read_paths([str(path)])
    t = b.telemetry
    assert len(t) == 40
    assert {"util_pct", "mem_used_mib", "mem_total_mib", "temp_c", "power_w"} <= set(t.columns)
    assert t["mem_used_mib"].iloc[0] == 5000 and t["power_w"].iloc[1] == 121.0
    gaps = np.diff(t["time"].astype("int64").to_numpy()) / 1e9
    assert np.allclose(gaps, 1.5)
    assert any("skipped 1 of 41 rows" in w for w in b.warnings)


def test_aligned_table_wants_numbers_of_the_headers_width():
    from playbook.readers import aligned_table
    assert not aligned_table.sniff("Time     GPU%   Mem Used\nsome words here and more\n")
    assert not aligned_table.sniff("step  loss  lr\n1  0.5  0.1\n")  # no GPU reading named
