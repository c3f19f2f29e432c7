"""read_paths / read_file: folders, run directories, trace folders, unknown files, Parquet tables; `playbook info`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from playbook.core.errors import InputError, UnknownFormatError
from playbook.model import run_layout, schema
from playbook.readers import detect, read_file, read_paths

R = "readers"


def test_detect_lists_every_reader_and_each_has_sniff_and_read():
    for name in ("nvidia_smi", "dmon", "dcgm", "generic_csv", "steps", "kineto", "lines", "nsys",
                 "flight_recorder"):
        assert name in detect.READERS
    assert all(callable(detect.module(n).sniff) and callable(detect.module(n).read) for n in detect.READERS)


def test_unknown_file_named_explicitly_is_a_one_line_error(tmp_path):
    cases = {
        "notes.txt": (b"Dear diary,\nthe GPUs were idle again.\n", "plain text"),  # never its words
        "empty.csv": (b"", "an empty file"),
        "image.png": (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "a PNG image"),
        "config.json": (json.dumps({"lr": 0.1, "batch": 8}).encode(), "JSON with keys lr, batch"),
        "table.csv": (b"name,colour,size\napple,red,3\n", "a table with columns name, colour, size"),
    }
    for name, (content, looks) in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        with pytest.raises(UnknownFormatError) as info:
            read_file(p)
        msg = str(info.value)
        assert "\n" not in msg and msg.startswith(f"{p}: not telemetry this playbook can read (looks like ")
        assert looks in msg, msg
    with pytest.raises(InputError, match="no such file"):
        read_paths([tmp_path / "missing.csv"])
    with pytest.raises(InputError, match="no inputs"):
        read_paths([])


def test_folder_walk_mixes_formats_and_warns_about_unknown_files(tmp_path, data_dir):
    src = data_dir / R
    for name in ("smi_units.csv", "dmon_dt_old.txt", "steps.csv"):
        shutil.copy(src / name, tmp_path / name)
    (tmp_path / "README.md").write_text("# documentation is passed over\n")
    (tmp_path / ".hidden.csv").write_text("garbage")
    (tmp_path / "random.bin").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "loop.txt").write_text((src / "smi_loop_nounits.txt").read_text())  # needs --fields
    b = read_paths([tmp_path])
    assert set(b.telemetry["host"]) == {"smi_units", "dmon_dt_old"}
    assert len(b.telemetry) == 6 + 4 and len(b.steps) == 3
    skipped = [w for w in b.warnings if w.startswith("skipped ")]
    assert len(skipped) == 2
    assert any("random.bin: not telemetry" in w and "binary data" in w for w in skipped)
    assert any("loop.txt" in w and "--fields" in w for w in skipped)
    assert not any("README" in w or ".hidden" in w for w in b.warnings)
    # the same file named explicitly is an error, and --fields makes it readable
    with pytest.raises(UnknownFormatError):
        read_paths([tmp_path / "random.bin"])
    b2 = read_paths([tmp_path], fields="utilization.gpu,memory.used")
    assert len(b2.telemetry) == 10 + 6


def test_run_directories_and_kineto_folders_inside_a_walk(tmp_path, data_dir):
    run = tmp_path / "runs" / "r1"
    part = run_layout.init_part(run, host="nodeA", rank=0)
    tel = read_file(data_dir / R / "smi_units.csv").telemetry
    run_layout.write_table(part, "telemetry", tel)
    run_layout.write_table(part, "steps", read_file(data_dir / R / "steps.csv").steps)
    b = read_paths([tmp_path / "runs"])
    assert len(b.telemetry) == 6 and len(b.steps) == 3 and "run" in b.meta
    traces = tmp_path / "traces"
    shutil.copytree(data_dir / "kineto" / "hta" / "trace_filter", traces)
    both = read_paths([traces, data_dir / R / "dmon_dt_old.txt"])
    assert sorted(both.trace["rank"].unique()) == [0, 1]
    assert str(traces) in both.inputs and len(both.telemetry) == 4


def test_single_parquet_table_is_read_back(tmp_path, data_dir):
    tel = read_file(data_dir / R / "smi_units.csv").telemetry
    p = tmp_path / "telemetry.parquet"
    tel.to_parquet(p, index=False)
    back = read_file(p).telemetry
    assert len(back) == 6 and back["util_pct"].equals(tel["util_pct"])
    other = tmp_path / "other.parquet"
    tel[["util_pct"]].rename(columns={"util_pct": "x"}).to_parquet(other)
    with pytest.raises(UnknownFormatError, match="Parquet table with columns x"):
        read_file(other)


def test_text_logs_read_by_both_nccl_and_step_readers(tmp_path):
    log = tmp_path / "rank0.log"
    log.write_text(
        "node1:1234:1234 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n"
        "node1:1234:1234 [0] NCCL INFO Channel 00/02 :    0   1\n"
        "step 1, loss = 2.30 (120.1 examples/sec; 0.512 sec/batch)\n"
        "step 2, loss = 2.20 (118.0 examples/sec; 0.530 sec/batch)\n")
    b = read_file(log)
    assert list(b.steps["step"]) == [1, 2]
    assert len(b.nccl) >= 1


def test_reader_failures_name_the_file_in_one_line(tmp_path, monkeypatch):
    p = tmp_path / "x.csv"
    p.write_text("timestamp, index, utilization.gpu [%]\n2024/01/15 10:00:00.000, 0, 5 %\n")
    from playbook.readers import nvidia_smi

    def boom(*_a, **_k):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(nvidia_smi, "read", boom)
    with pytest.raises(InputError, match=r"x.csv: the nvidia_smi reader failed \(ZeroDivisionError: bug\)"):
        read_file(p)


def test_bad_interval_is_an_input_error(data_dir):
    with pytest.raises(InputError, match="positive"):
        read_paths([data_dir / R / "smi_units.csv"], interval_s=0)


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    """Run the playbook CLI in this process: (exit status, stdout, stderr)."""
    from playbook.cli import main

    try:
        code = main(list(args))
    except SystemExit as exc:  # --help exits
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_info_command_text_json_and_errors(data_dir, tmp_path, capsys):
    from playbook.commands import info

    b = read_paths([data_dir / R / "smi_units.csv", data_dir / R / "train_mixed.log"])
    summary = info.summarize(b)
    tel, st = summary["tables"]["telemetry"], summary["tables"]["steps"]
    assert (tel["rows"], tel["gpus"], tel["hosts"], tel["span_s"], tel["median_interval_s"]) == \
        (6, 2, ["smi_units"], 2.001, 1.0)
    assert tel["samples_per_gpu"] == {"min": 3, "median": 3.0, "max": 3}
    assert tel["start"] == "2024-01-15T10:00:00.25Z" and "util_pct" in tel["metrics"]
    assert (st["rows"], st["ranks"], st["steps"], st["median_step_s"]) == (5, [0, 1], 4, 0.512)
    assert summary["tables"]["events"]["kinds"] == {"checkpoint": 1, "eval": 1, "recompile": 1}
    text = info.render(summary)
    assert "telemetry  6 rows; 1 host (smi_units: 2 GPUs); 2 GPUs; 3 samples per GPU" in text
    assert "events     3 rows" in text and "warnings: none" in text

    code, out, err = _cli(capsys, "info", str(data_dir.parents[1] / "data" / "samples" / "dflash-8gpu"), "--interval", "2",
                          "--json")
    assert code == 0, err
    js = json.loads(out)
    assert js["tables"]["telemetry"]["gpus"] == 8 and js["tables"]["telemetry"]["median_interval_s"] == 2.0
    assert any("guessed fields" in w for w in js["warnings"])
    code, out, err = _cli(capsys, "info", str(tmp_path / "nope"))
    assert code == 2 and err.strip().count("\n") == 0 and "no such file" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = _cli(capsys, "info", str(empty))
    assert code == 1 and "no rows read" in out


def test_help_runs(capsys):
    code, out, _ = _cli(capsys, "info", "--help")
    assert code == 0 and "usage: playbook info" in out and "example" in out
    proc = subprocess.run([sys.executable, "-m", "playbook", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "info" in proc.stdout


def test_schema_builders_accept_reader_output(data_dir):
    """Reader tables survive the schema builders unchanged (dtypes and order are the schema's)."""
    tel = read_file(data_dir / R / "smi_units.csv").telemetry
    rebuilt = schema.telemetry_frame({c: tel[c].to_numpy() for c in tel.columns})
    assert list(rebuilt.dtypes.astype(str)) == list(tel.dtypes.astype(str))
    assert rebuilt["util_pct"].equals(tel["util_pct"]) and (rebuilt["time"] == tel["time"]).all()


@pytest.mark.parametrize("layout", ["tick_major", "tick_major_permuted", "shuffled", "two_hosts"])
def test_fast_telemetry_builder_matches_schema(layout):
    """frames.build_telemetry (transpose / radix / lexsort paths) equals schema.telemetry_frame on the same rows."""
    import numpy as np

    from playbook.readers import frames

    rng = np.random.default_rng(7)
    ticks, width = 50, 4
    order_in_tick = [2, 0, 3, 1] if layout == "tick_major_permuted" else [0, 1, 2, 3]
    gpu = np.tile(order_in_tick, ticks)
    time_ns = np.repeat(np.arange(ticks) * 2_000_000_000, width) + 1_700_000_000 * 10**9
    util = rng.uniform(0, 100, ticks * width)
    host = "h1"
    if layout == "shuffled":
        p = rng.permutation(len(gpu))
        gpu, time_ns, util = gpu[p], time_ns[p], util[p]
    if layout == "two_hosts":
        host = np.where(np.arange(len(gpu)) % 3 == 0, "b-host", "a-host").astype(object)
    fast = frames.build_telemetry({"time": time_ns.copy(), "gpu": gpu.copy(), "util_pct": util.copy()}, host, "src")
    slow = schema.telemetry_frame({"time": pd.to_datetime(time_ns, utc=True), "gpu": gpu, "util_pct": util,
                                   "host": host if isinstance(host, str) else list(host), "source": "src"})
    assert list(fast.columns) == list(slow.columns)
    assert list(fast.dtypes.astype(str)) == list(slow.dtypes.astype(str))
    for col in ("time", "host", "gpu", "util_pct"):
        assert (fast[col].to_numpy() == slow[col].to_numpy()).all(), col
    assert fast.attrs["interval_s"] == pytest.approx(slow.attrs["interval_s"])
