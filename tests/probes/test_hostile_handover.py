"""Escapes the hostile-input fuzzing (issue 17) found in the table readers, kept as regression tests: each must end
in the project's one-line error (or a reading), never a raw exception or a hang."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from playbook.core.errors import PlaybookError


def test_nvidia_smi_loop_with_a_group_separator_after_a_number(tmp_path):
    from playbook.readers import nvidia_smi

    path = tmp_path / "smi_loop.txt"
    path.write_bytes(b"97, 70959\n3, 34559\n---\n100, 71000\n[\xceN/A], 34600\n---\n08\x1d,\x0070000\n"
                     b"50, 3" + b"," * 20)
    try:
        nvidia_smi.read(path)
    except PlaybookError:
        pass


def test_generic_csv_sniff_on_a_deep_bracket_line_finishes(tmp_path):
    path = tmp_path / "meta.json"
    path.write_text('{"playbook_run": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code = textwrap.dedent(f"""
        from playbook.readers import read_file
        from playbook.core.errors import PlaybookError
        try:
            read_file({str(path)!r})
        except PlaybookError:
            pass
    """)
    subprocess.run([sys.executable, "-c", code], timeout=20, check=True)


def _read_or_one_line(path):
    """read_file's answer, or its PlaybookError: anything else escaping is the failure under test."""
    from playbook.readers import read_file

    try:
        return read_file(path)
    except PlaybookError:
        return None


def test_dmon_date_beyond_nanoseconds_is_one_bad_row(tmp_path, data_dir):
    lines = (data_dir / "readers" / "dmon_dt_old.txt").read_text().splitlines()
    lines[2] = lines[2].replace("20240115", "60241116")  # year 6024: past what int64 nanoseconds hold
    path = tmp_path / "dmon.txt"
    path.write_text("\n".join(lines) + "\n")
    bundle = _read_or_one_line(path)
    assert bundle is not None and len(bundle.telemetry) == len(lines) - 3  # the two header lines and that row
    assert any("skipped 1" in w for w in bundle.warnings), bundle.warnings


def test_step_time_in_year_202_is_not_an_escape(tmp_path):
    path = tmp_path / "steps.csv"
    path.write_text("time,step,step_time_ms\n0202-01-01 10:00:02,1,500\n2024-01-01 10:00:03,2,510\n"
                    "2024-01-01 10:00:04,3,505\n")
    bundle = _read_or_one_line(path)
    assert bundle is None or len(bundle.steps) >= 2


def test_dcgm_labels_and_stamps_past_64_bits_are_skipped_and_counted(tmp_path, data_dir):
    text = (data_dir / "readers" / "dcgm_stamped.prom").read_text()
    text += 'DCGM_FI_DEV_GPU_UTIL{gpu="' + "9" * 30 + '",hostname="gpu-node-3"} 50 1705312830000\n'
    text += 'DCGM_FI_DEV_GPU_UTIL{gpu="1",hostname="gpu-node-3"} 50 ' + "9" * 30 + "\n"
    path = tmp_path / "dcgm.prom"
    path.write_text(text)
    bundle = _read_or_one_line(path)
    assert bundle is not None and len(bundle.telemetry) > 0
    assert bundle is None or not (bundle.telemetry["gpu"] > 10**9).any()


def test_generic_csv_date_beyond_nanoseconds_is_one_bad_row(tmp_path):
    """Fuzz escape (OutOfBoundsDatetime): an ISO date in year 1 is a counted bad row, not a traceback."""
    from playbook.readers import generic_csv

    path = tmp_path / "t.csv"
    path.write_text("time,gpu,util_pct\n0001-01-01T14:00:00,0,50\n2024-01-15T10:00:00,0,60\n2024-01-15T10:00:01,0,70\n")
    b = generic_csv.read(path)
    assert list(b.telemetry["util_pct"]) == [60.0, 70.0]
    assert "line 2: time '0001-01-01T14:00:00' out of range" in b.warnings[0]


def test_per_gpu_columns_with_a_metric_only_one_gpu_has(tmp_path):
    """Fuzz escape (KeyError): W&B-style per-GPU columns where GPU 0 reports a temperature and GPU 1 does not;
    GPU 1's temperature is NaN."""
    from playbook.readers import generic_csv

    path = tmp_path / "wandb.csv"
    path.write_text("_timestamp,system.gpu.0.gpu,system.gpu.0.temp,system.gpu.1.gpu\n"
                    "1705312800,50,60,40\n1705312801,55,61,45\n")
    t = generic_csv.read(path).telemetry
    assert t["util_pct"].tolist() == [50.0, 55.0, 40.0, 45.0]
    assert t["temp_c"].tolist()[:2] == [60.0, 61.0] and t["temp_c"].iloc[2:].isna().all()
