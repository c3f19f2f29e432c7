"""Damaged run directories and inputs (issue 17): one line or a counted warning, never a traceback."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from playbook import cli
from playbook.core.errors import InputError
from playbook.diagnosis.regression.environment_diff import environment
from playbook.model import run_layout
from playbook.readers import read_file, read_paths

DEEP = "[" * 100_000 + "]" * 100_000


def _run(path, frame=None):
    part = run_layout.init_part(path, host="h", rank=0)
    if frame is not None:
        frame.to_parquet(part / "telemetry.parquet")
    return part


def _telemetry(n=5, **cols):
    base = {"time": pd.to_datetime(range(n), unit="s", utc=True), "host": "h", "gpu": 0, "util_gpu": 50.0}
    return pd.DataFrame({**base, **cols})


@pytest.mark.parametrize("time", [["yesterday"] * 3, [[1], [2], [3]]], ids=["string", "list"])
def test_run_table_with_a_bad_time_column_is_a_warning(tmp_path, time):
    _run(tmp_path / "good", _telemetry())
    _run(tmp_path / "bad", _telemetry(3, time=time))
    b = read_paths([tmp_path / "good", tmp_path / "bad"])
    assert len(b.telemetry) == 5
    (w,) = [w for w in b.warnings if "bad" in w]
    assert "h-rank0/telemetry.parquet: the telemetry table's columns are not the playbook's" in w


def test_deep_or_non_object_meta_json(tmp_path):
    part = _run(tmp_path / "r", _telemetry())
    (tmp_path / "r" / "meta.json").write_text('{"playbook_run": 1, "x": ' + DEEP + "}")
    assert run_layout.is_run_dir(tmp_path / "r")  # damaged, but it names the marker: still a run
    with pytest.raises(InputError, match="meta.json: JSON nested too deep"):
        run_layout.read_meta(tmp_path / "r" / "meta.json")
    (part / "meta.json").write_text("[1, 2]")
    b = read_paths([tmp_path / "r"])
    assert len(b.telemetry) == 5
    assert any("r/meta.json: JSON nested too deep to read; run read without it" in w for w in b.warnings)
    assert any("h-rank0/meta.json: a JSON list, not an object; folder read without it" in w for w in b.warnings)
    (tmp_path / "r" / "meta.json").write_text("[1, 2]")
    assert not run_layout.is_run_dir(tmp_path / "r")
    run_layout.init_run(tmp_path / "r")  # a recording into it starts a fresh meta.json
    assert run_layout.is_run_dir(tmp_path / "r")


def test_meta_fields_of_the_wrong_type_are_dropped_for_compare(tmp_path):
    _run(tmp_path / "r", _telemetry())
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    meta["env"] = {"torch": [1], "nvidia": {"gpus": [{"name": "H100"}, "junk"]}, "cpu": 3, "python": "3.11"}
    (tmp_path / "r" / "meta.json").write_text(json.dumps(meta))
    b = read_paths([tmp_path / "r"])
    (w,) = [w for w in b.warnings if "wrong type" in w]
    assert "env.torch (list)" in w and "env.cpu (int)" in w and "env.nvidia.gpus[] items that are not dict" in w
    env, found = environment(b)
    assert found and env["python"][0] == "3.11"


def test_corrupt_gzip_is_one_line(tmp_path, data_dir):
    raw = gzip.compress((data_dir / "readers" / "smi_units.csv").read_bytes() * 50)
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(raw[:20] + bytes(x ^ 0xFF for x in raw[20:60]) + raw[60:])
    with pytest.raises(InputError, match=r"bad.csv.gz: (cannot decompress gzip data|damaged compressed file)"):
        read_file(path)


def test_cli_guard(tmp_path, capsys, monkeypatch):
    (tmp_path / "FILE").write_text("")
    _run(tmp_path / "r", _telemetry())
    assert cli.main(["report", "--out", str(tmp_path / "FILE" / "sub"), str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "FILE/sub: Not a directory" in err and "Traceback" not in err
    from playbook.commands import info

    def boom(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(info, "run", boom)
    assert cli.main(["info", str(tmp_path / "r")]) == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err and "a bug in the playbook" in err


def test_step_table_time_past_a_float_is_no_time(tmp_path):
    # a JSON integer of 400 digits in a step table's time column: pandas raised OverflowError (the reader failed)
    p = tmp_path / "steps.jsonl"
    p.write_text('{"iteration": 19, "step_time": 0.5, "time": %s}\n{"iteration": 39, "step_time": 0.5, '
                 '"time": 1700000000.5}\n' % ("9" * 400))
    s = read_file(p).steps
    assert s["step"].tolist() == [19, 39] and s["time"].isna().tolist() == [True, False]


def test_a_hex_cell_past_a_float_is_no_number():
    from playbook.readers import textio

    assert textio.parse_number("0x" + "f" * 300) is None  # was OverflowError (an nvidia-smi -q CSV's reader failed)
    assert textio.parse_number("0x10") == (16.0, "")


def test_a_gpu_number_past_int64_is_no_gpu_number(tmp_path):
    # a damaged device column of 20-digit numbers: the fast path cast 1e20 to int64 (INT64_MIN, a RuntimeWarning)
    # and two such devices, equal as floats, became one GPU -9223372036854775808
    p = tmp_path / "gpus.csv"
    p.write_text("time,gpu,util_pct\n1700000000,99999999999999999999,10\n1700000000,99999999999999999998,90\n"
                 "1700000001,99999999999999999999,10\n1700000001,99999999999999999998,90\n")
    t = read_file(p).telemetry
    assert (t["gpu"] >= 0).all() and t["gpu"].nunique() == 2
    assert sorted(t.groupby("gpu")["util_pct"].mean()) == [10.0, 90.0]


def test_step_table_rows_written_twice_are_read_once_with_a_warning(tmp_path):
    # each record twice (two log handlers): the time-gap durations were 0 s for every copy, halving the median step
    rows = [f'{{"step": {i}, "time": {1700000000 + 2 * i}, "rank": 0}}' for i in range(1, 6)]
    p = tmp_path / "steps.jsonl"
    p.write_text("".join(f"{r}\n{r}\n" for r in rows))
    b = read_file(p)
    assert b.steps["step"].tolist() == [2, 3, 4, 5] and b.steps["duration_s"].tolist() == [2.0] * 4
    assert any("5 rows repeat an earlier row exactly (first at line 2)" in w for w in b.warnings)
    csv = tmp_path / "steps.csv"
    csv.write_text("step,rank,step_time_ms\n" + "".join(f"{i},0,500\n{i},0,500\n" for i in range(1, 4)))
    assert read_file(csv).steps["step"].tolist() == [1, 2, 3]


def test_a_truncated_gzip_step_table_says_so(tmp_path):
    rows = "".join(f'{{"step": {i}, "time": {1700000000 + i}, "rank": 0, "step_time": 0.5}}\n' for i in range(2000))
    z = gzip.compress(rows.encode())
    p = tmp_path / "steps.jsonl.gz"
    p.write_bytes(z[: len(z) // 2])
    b = read_file(p)
    assert 0 < len(b.steps) < 2000
    assert any("gzip stream is truncated" in w for w in b.warnings)
