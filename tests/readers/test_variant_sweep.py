"""A sweep of one numeric knob pasted as a table of runs (readers/variant_table.py): the first column names the rows
even when its values are numbers. Written apart from the held-out file (tests/data/eval/heldout65, a PaddleClas batch
size table), in other layouts users paste: a GPU-count scaling table with the unit in the header, a num_workers sweep
with outer pipes dropped and aligned rules, a table whose first column is text (unchanged); the numbers are made up
(LABELED SYNTHETIC)."""

from __future__ import annotations

from playbook.readers.variant_table import VariantTable


def _read(text: str):
    t = VariantTable()
    for line in text.strip("\n").splitlines():
        t.feed(line)
    return t.summary()


def test_a_gpu_count_sweep_with_the_unit_in_the_header():
    s = _read("""
| GPUs | Step time (s) |
|---:|---:|
| 1 | 0.412 |
| 2 | 0.431 |
| 4 | 0.465 |
| 8 | 0.702 |
""")
    (table,) = s["tables"]
    assert table["settings"] == ["GPUs"] and [r["label"] for r in table["rows"]] == ["1", "2", "4", "8"]
    assert table["rows"][-1]["whole_s"] == 0.702


def test_a_num_workers_sweep_without_outer_pipes_keeps_its_measure():
    s = _read("""
num_workers | epoch time | GPU util
:--|:--|:--
0 | 310s | 35%
4 | 122s | 81%
8 | 118s | 84%
""")
    (table,) = s["tables"]
    assert table["settings"] == ["num_workers"] and table["rows"][0]["measures"] == {"GPU util": "35%"}


def test_a_text_first_column_stays_the_setting_and_a_table_without_time_is_none():
    s = _read("""
| model | batch | step time |
|---|---|---|
| resnet50 | 64 | 0.21s |
| resnet50 | 128 | 0.40s |
""")
    assert s["tables"][0]["settings"] == ["model"]
    assert _read("""
| batch | accuracy |
|---|---|
| 64 | 76.1 |
| 128 | 76.3 |
""") is None
