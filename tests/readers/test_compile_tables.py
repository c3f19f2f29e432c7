"""A Markdown table of compile times a reporter measured, read by the meaning of its header (readers/runtime_logs.py,
held-out round 57): a compile-time heading above the table's `|---|` rule makes each row whose compile cell is a
duration a `compile` event. Tables written here (LABELED SYNTHETIC), apart from tests/data/eval/heldout57/jaxgcm592:
the unit in the heading, minutes and absl's `3m2s` in the cells, a row without a time, a count of recompiles, and
pipe-separated step lines that only mention compiling."""

from __future__ import annotations

import pytest

from playbook.core.errors import UnknownFormatError
from playbook.diagnosis import diagnose
from playbook.readers import read_file


def _read(tmp_path, text, name="bench.md"):
    path = tmp_path / name
    path.write_text(text)
    return read_file(path)


def test_a_heading_with_its_unit_makes_bare_numbers_seconds(tmp_path):
    text = ("Cold start, one H100:\n\n| config | compilation time (s) | step time (s) |\n|:--|--:|--:|\n"
            "| llama-1b | 41.2 | 0.31 |\n| llama-8b | 118.5 | 1.92 |\n")
    rows = _read(tmp_path, text).events
    assert rows["kind"].tolist() == ["compile", "compile"]
    assert rows["duration_s"].tolist() == [41.2, 118.5]
    assert "llama-8b" in rows["detail"].iloc[1] and "step time (s): 1.92" in rows["detail"].iloc[1]


def test_minutes_and_absl_durations_in_the_cells(tmp_path):
    text = ("| model | Compile | Run |\n| --- | --- | --- |\n| **t5-xl** | 12.5 min | 40 min |\n"
            "| t5-xxl | 3m2s | 1 h |\n| t5-small | n/a | 5 min |\n")
    rows = _read(tmp_path, text).events
    assert rows["duration_s"].tolist() == [750.0, 182.0]  # the row without a compile time is none
    assert rows["detail"].iloc[0].startswith("line 3: compiling t5-xl took 12.5 min")


def test_a_share_column_beside_the_time_is_not_the_time(tmp_path):
    text = "| run | compile share (%) | compile |\n|---|---|---|\n| a | 12 % | 30 s |\n"
    assert _read(tmp_path, text).events["duration_s"].tolist() == [30.0]


def test_a_count_of_recompiles_and_a_table_without_its_rule_are_no_compile_times(tmp_path):
    text = ("| function | recompiles | reason |\n|---|---|---|\n| forward | 8 | shape |\n\n"
            "| step 10 | compile 0 | loss 2.31 |\n| step 11 | compile 0 | loss 2.29 |\n")
    try:
        bundle = _read(tmp_path, text, "train.log")
    except UnknownFormatError:
        return  # refused whole: nothing read as a compile time
    assert bundle.events is None or "compile" not in set(bundle.events["kind"])


def test_a_table_of_compile_times_is_no_healthy_run(tmp_path):
    text = "| run | compile | steady chunk |\n|---|---|---|\n| a | 469 s | 136 s |\n| b | 641 s | 310 s |\n"
    assert diagnose(_read(tmp_path, text)).verdict["id"] in ("recompilation", "insufficient_data")


@pytest.mark.parametrize("cell", ["~45 s", "45 sec", "45 seconds", "0.75 min", "45000 ms"])
def test_duration_cells(tmp_path, cell):
    text = f"| job | compile |\n|---|---|\n| x | {cell} |\n"
    assert _read(tmp_path, text).events["duration_s"].iloc[0] == pytest.approx(45.0)
