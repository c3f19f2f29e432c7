"""Values against physics (issue 30): a value no GPU can report is read as missing and counted, the rest of its
row kept; repeated timestamps of one GPU are merged with a count; one odd value (a 5,000-digit number, 1e300,
inf) never rejects a file nor shows internal exception text."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from playbook.model import run_layout, schema
from playbook.readers import read_file, read_paths

BIG = "1" * 5000
INTERNAL = re.compile(r"Error\b|Overflow|Recursion|has no attribute|Traceback|reader failed|set_int_max_str_digits")
SMI_HEAD = "timestamp, index, utilization.gpu [%], power.draw [W], clocks.sm [MHz], temperature.gpu\n"


def _smi(rows: list[str]) -> str:
    return SMI_HEAD + "".join(f"2024/01/15 10:00:{k:02d}.000, 0, {row}\n" for k, row in enumerate(rows))


def test_impossible_values_are_missing_and_counted_and_the_row_kept(tmp_path):
    p = tmp_path / "smi.csv"
    p.write_text(_smi(["-50 %, 300 W, 1980 MHz, 60", "1e308 %, 300 W, 1980 MHz, 60", "50 %, inf W, 1980 MHz, 60",
                       "50 %, 1e308 W, 99999 MHz, 400", "50 %, 300 W, 1980 MHz, 60"]))
    b = read_file(p)
    t = b.telemetry
    assert len(t) == 5  # no row dropped
    np.testing.assert_array_equal(t["util_pct"].to_numpy(), [np.nan, np.nan, 50, 50, 50])
    np.testing.assert_array_equal(t["power_w"].to_numpy(), [300, 300, np.nan, np.nan, 300])
    np.testing.assert_array_equal(t["sm_clock_mhz"].to_numpy(), [1980, 1980, 1980, np.nan, 1980])
    np.testing.assert_array_equal(t["temp_c"].to_numpy(), [60, 60, 60, np.nan, 60])
    [w] = [w for w in b.warnings if "outside what a GPU can report" in w]
    assert w.startswith(f"{p}: 6 values") and "util_pct 2" in w and "power_w 2" in w and "temp_c 1" in w


def test_repeated_timestamps_of_a_gpu_are_merged_and_counted(tmp_path):
    p = tmp_path / "smi.csv"
    p.write_text(SMI_HEAD + "".join("2024/01/15 10:00:00.000, 0, 50 %, 300 W, 1980 MHz, 60\n" for _ in range(60))
                 + "2024/01/15 10:00:01.000, 0, 40 %, 300 W, 1980 MHz, 60\n")
    b = read_file(p)
    assert len(b.telemetry) == 2 and list(b.telemetry["util_pct"]) == [50, 40]
    assert any("59 rows repeat the timestamp of an earlier row of the same GPU" in w for w in b.warnings)


def test_a_repeat_fills_fields_the_first_row_lacks():
    t = schema.telemetry_frame({"time": pd.to_datetime([0, 0, 1], unit="s", utc=True), "host": ["h"] * 3,
                                "gpu": [0, 0, 0], "util_pct": [np.nan, 70.0, 20.0], "power_w": [100.0, 200.0, 90.0]})
    t, warnings = schema.check_physics(t, "x")
    assert list(t["util_pct"]) == [70.0, 20.0] and list(t["power_w"]) == [100.0, 90.0] and len(warnings) == 1


@pytest.mark.parametrize("name, text", [
    ("big_time.csv", SMI_HEAD + f"{BIG}, 0, 50 %, 300 W, 1980 MHz, 60\n" + _smi(["40 %, 300 W, 1980 MHz, 60"])
     .split("\n", 1)[1]),
    ("big_util.csv", _smi([f"{BIG} %, 300 W, 1980 MHz, 60", "40 %, 300 W, 1980 MHz, 60"])),
    ("generic.csv", f"time,gpu,util\n2024-03-02T14:00:00Z,0,50\n{BIG},0,50\n2024-03-02T14:00:02Z,0,1e300\n"),
    ("exporter.prom", 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n"} 97 1705312800000\n'
                      f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="n"}} 5 {BIG}\n'
                      'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n"} 1e300 1705312815000\n'),
    ("query_range.json", '{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": '
                         '{"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "n"}, "values": '
                         f'[[1705312800, "97"], [{BIG}, "5"], [1e300, "5"], [1705312815, "1e300"]]}}]}}}}'),
    ("dcgmi.txt", "#Entity   GPUTL   POWER\nID\nGPU 0   50   300\n"
                  f"GPU {BIG}   50   300\nGPU 0   1e300   300\n"),
    ("train.log", "step 1 loss 2.0 step_time: 0.5\n" + f"step {BIG} loss 2.0 step_time: 0.5\n"
                  "step 2 loss 2.0 step_time: 0.5\n"),
    ("steps.jsonl", '{"step": 1, "step_time": 0.5}\n' + f'{{"step": {BIG}, "step_time": 0.5}}\n'
                    '{"step": 1e300, "step_time": 0.5}\n{"step": 2, "step_time": 1e300}\n'
                    '{"step": 3, "step_time": 0.5}\n'),
])
def test_one_odd_value_is_a_counted_bad_row_never_a_rejected_file(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    b = read_file(p)
    assert len(b.telemetry) + len(b.steps) >= 1, b.warnings  # the good rows are read
    for table in (b.telemetry, b.steps):
        values = table.select_dtypes("float64").to_numpy()
        assert not np.isinf(values).any() and not (np.abs(values[np.isfinite(values)]) > 1e12).any()
    said = b.warnings + b.meta.get("lines", {}).get(str(p), {}).get("unread_examples", [])
    assert said and not any(INTERNAL.search(w) for w in said), said  # counted, in words


def test_a_step_longer_than_a_day_is_missing_and_counted(tmp_path):
    p = tmp_path / "steps.csv"
    p.write_text("step,step_time\n1,0.5\n2,200000\n3,0.5\n")
    b = read_file(p)
    assert len(b.steps) == 3 and list(b.steps["duration_s"].isna()) == [False, True, False]
    assert any("1 step durations below 0 s or beyond a day (e.g. 2e+05 s)" in w for w in b.warnings)


def test_run_directory_tables_are_checked_too(tmp_path):
    part = run_layout.init_part(tmp_path / "run", host="h", rank=0)
    pd.DataFrame({"time": pd.to_datetime([0, 1, 1], unit="s", utc=True), "host": "h", "gpu": 0,
                  "util_pct": [50.0, -5.0, 60.0], "power_w": [100.0, 1e308, 90.0]}).to_parquet(part / "telemetry.parquet")
    b = read_paths([tmp_path / "run"])
    assert len(b.telemetry) == 2 and list(b.telemetry["util_pct"]) == [50.0, 60.0]
    assert any("2 values outside" in w for w in b.warnings) and any("1 rows repeat" in w for w in b.warnings)
