"""dmon, DCGM (exporter text, Prometheus JSON, dcgmi dmon), generic CSV and step-log readers on small fixtures."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import dcgm, detect, generic_csv, read_file, textio
from playbook.readers import step_log as steps
from playbook.readers.nvidia_smi import dmon

R = "readers"


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def series(bundle, gpu: int, column: str, host: str | None = None) -> list[float]:
    t = bundle.telemetry
    t = t[(t["gpu"] == gpu) & ((t["host"] == host) if host else True)].sort_values("time")
    return [(-1.0 if math.isnan(v) else v) for v in t[column]]


@pytest.mark.parametrize(("name", "reader"), [
    ("dmon_new.txt", "dmon"), ("dmon_dt_old.txt", "dmon"), ("dmon_time_only.txt", "dmon"),
    ("dcgm_exporter.prom", "dcgm"), ("dcgm_stamped.prom", "dcgm"), ("prom_query_range.json", "dcgm"),
    ("dcgmi_dmon.txt", "dcgmi_dmon"), ("telemetry_epoch_ms.csv", "generic_csv"), ("telemetry_tabs.tsv", "generic_csv"),
    ("steps.csv", "steps"), ("steps.jsonl", "steps"), ("train_mixed.log", "lines"), ("megatron.log", "lines"),
    ("tqdm.log", "lines"), ("smi_units.csv", "nvidia_smi"), ("torchtitan.log", "lines"), ("deepspeed.log", "lines"),
])
def test_detection_by_content(data_dir, name, reader):
    assert detect.detect(data_dir / R / name) == reader


# --- nvidia-smi dmon ---------------------------------------------------------------------------------------------

def test_dmon_new_driver_repeated_headers_dashes_and_damage(data_dir):
    b = read_file(data_dir / R / "dmon_new.txt", interval_s=2)
    t = b.telemetry
    assert len(t) == 5 and set(t["host"]) == {"dmon_new"}
    assert series(b, 0, "util_pct") == [10.0, 90.0, 91.0]
    assert series(b, 1, "util_pct") == [-1.0, 95.0]            # "-" -> NaN
    assert series(b, 0, "power_w") == [69.0, 271.0, 270.0]
    assert series(b, 0, "sm_clock_mhz") == [210.0, 1980.0, 1980.0]  # pclk
    assert series(b, 0, "mem_clock_mhz") == [1593.0] * 3
    assert series(b, 1, "temp_c") == [35.0, 45.0]
    assert list(t[t["gpu"] == 0]["time"]) == [ts("1970-01-01 00:00:00"), ts("1970-01-01 00:00:02"),
                                              ts("1970-01-01 00:00:04")]
    [skip] = [w for w in b.warnings if "skipped" in w]
    assert "skipped 2 of 7 rows" in skip and "line 10: bad pwr value 'xx'" in skip and "line 11: 5 of 12" in skip


def test_dmon_old_driver_with_date_and_time(data_dir):
    b = read_file(data_dir / R / "dmon_dt_old.txt")
    assert b.warnings == [] and len(b.telemetry) == 4
    assert series(b, 1, "temp_c") == [41.0, 43.0]  # old "temp" column
    assert list(b.telemetry[b.telemetry["gpu"] == 0]["time"]) == [ts("2024-01-15 23:59:59"), ts("2024-01-16")]
    local = dmon.read(data_dir / R / "dmon_dt_old.txt", tz="America/New_York")
    assert local.telemetry["time"].min() == ts("2024-01-16 04:59:59")


def test_dmon_time_of_day_rolls_over_midnight(data_dir):
    b = read_file(data_dir / R / "dmon_time_only.txt")
    assert list(b.telemetry["time"]) == [ts("1970-01-01 23:59:59"), ts("1970-01-02 00:00:00")]
    assert any("without a date" in w for w in b.warnings)


# --- DCGM -----------------------------------------------------------------------------------------------------

def test_dcgm_exporter_two_scrapes_without_timestamps(data_dir):
    b = read_file(data_dir / R / "dcgm_exporter.prom", interval_s=15)
    t = b.telemetry
    assert len(t) == 4 and set(t["host"]) == {"node-07"}
    g0 = t[t["gpu"] == 0].sort_values("time")
    assert list(g0["time"]) == [ts("1970-01-01 00:00:00"), ts("1970-01-01 00:00:15")]
    first = g0.iloc[0]
    assert (first["util_pct"], first["sm_active"], first["power_w"], first["mem_used_mib"]) == (100.0, 0.913, 612.5,
                                                                                                70959.0)
    assert (first["sm_clock_mhz"], first["temp_c"], first["throttle_reasons"]) == (1980.0, 61.0, 4.0)
    assert (first["pcie_tx_mib_s"], first["pcie_rx_mib_s"], first["nvlink_tx_mib_s"]) == (1.0, 2.0, 10.0)
    assert series(b, 1, "util_pct") == [100.0, -1.0]  # NaN sample
    assert series(b, 1, "sm_active") == [0.052, 0.061]
    assert any("skipped 1 of 24 samples" in w for w in b.warnings)
    assert any("synthetic" in w for w in b.warnings)


def test_dcgm_timestamps_hostname_labels_and_xid_event(data_dir):
    b = read_file(data_dir / R / "dcgm_stamped.prom")
    t = b.telemetry
    assert series(b, 0, "util_pct", host="gpu-node-3") == [97.0, 12.0]
    assert list(t[t["host"] == "gpu-node-3"]["time"]) == [ts("2024-01-15 10:00:00"), ts("2024-01-15 10:00:15")]
    assert series(b, 0, "util_pct", host="10.0.0.9") == [55.0]  # instance label without its port
    assert b.warnings == []
    [ev] = b.events.itertuples()
    assert (ev.kind, ev.host, ev.time, ev.detail) == ("xid", "gpu-node-3", ts("2024-01-15 10:00:15"), "gpu 0: XID 79")


def test_prometheus_query_range_json(data_dir):
    b = read_file(data_dir / R / "prom_query_range.json")
    t = b.telemetry
    assert set(t["host"]) == {"node-01"} and len(t) == 4
    assert series(b, 0, "util_pct") == [97.0, 12.0, -1.0]
    assert series(b, 0, "sm_active") == [0.5, 0.25, -1.0]
    assert list(t[t["gpu"] == 0]["time"]) == [ts("2024-01-15 10:00:00"), ts("2024-01-15 10:00:15"),
                                              ts("2024-01-15 10:00:30")]
    assert any("skipped 1 of 7 points" in w for w in b.warnings)


def test_dcgmi_dmon(data_dir):
    b = read_file(data_dir / R / "dcgmi_dmon.txt", interval_s=0.5)
    t = b.telemetry
    assert len(t) == 3
    assert series(b, 0, "sm_active") == [0.823, 0.4]
    assert series(b, 1, "util_pct") == [-1.0]  # N/A
    assert series(b, 0, "mem_used_mib") == [70959.0, 70960.0]
    assert list(t[t["gpu"] == 0]["time"]) == [ts("1970-01-01 00:00:00"), ts("1970-01-01 00:00:00.5")]
    assert any("skipped 1 of 4 rows (line 6: bad FBUSD value 'oops')" in w for w in b.warnings)


def test_dcgm_without_gpu_samples_is_an_input_error(tmp_path):
    p = tmp_path / "other.prom"
    p.write_text('DCGM_FI_DEV_GPU_UTIL{Hostname="x"} 5\n')  # no gpu / UUID label
    with pytest.raises(InputError, match="no DCGM GPU samples"):
        dcgm.read(p)


# --- generic CSV ----------------------------------------------------------------------------------------------

def test_generic_csv_epoch_ms_units_hosts(data_dir):
    b = read_file(data_dir / R / "telemetry_epoch_ms.csv")
    t = b.telemetry
    # line 6's unreadable sm_active ("x") is left empty and its other readings kept (heldout26: one damaged cell
    # is no reason to lose a row); line 7, a field short, is skipped
    assert len(t) == 4 and set(t["host"]) == {"node-a"}
    assert series(b, 0, "util_pct") == [97.0, 95.0]
    assert series(b, 1, "util_pct")[0] == 3.0             # "3 %"
    assert series(b, 1, "power_w") == [145.25, 146.0]
    assert series(b, 0, "mem_used_mib") == [69.5 * 1024] * 2  # GB -> MiB
    assert series(b, 0, "sm_active") == [0.91, 0.90]     # percent -> fraction
    assert list(t[t["gpu"] == 0]["time"]) == [ts("2024-01-15 10:00:00"), ts("2024-01-15 10:00:01")]
    skip, blank = b.warnings
    assert "skipped 1 of 5 rows" in skip and "line 7: 6 of 7 fields" in skip
    assert "left 1 unreadable value(s) empty" in blank and "line 6: bad sm_active value 'x'" in blank


def test_generic_csv_tabs_devices_and_iso_times(data_dir):
    b = read_file(data_dir / R / "telemetry_tabs.tsv")
    assert series(b, 0, "util_pct") == [97.0, 96.0] and series(b, 0, "temp_c") == [61.0, 62.0]
    assert b.telemetry["time"].iloc[1] == ts("2024-01-15 10:00:01")


def test_generic_csv_roundtrips_the_telemetry_table(tmp_path, data_dir):
    original = read_file(data_dir / R / "smi_units.csv").telemetry
    p = tmp_path / "export.csv"
    original.to_csv(p, index=False)
    again = read_file(p).telemetry
    assert len(again) == len(original)
    for col in ("util_pct", "power_w", "throttle_reasons", "temp_c"):
        assert again[col].equals(original[col]), col
    assert (again["time"] == original["time"]).all() and (again["host"] == original["host"]).all()
    assert generic_csv.normalize("memory.used [MiB]") == ("memory_used", "mib")


# --- step logs ------------------------------------------------------------------------------------------------

def test_steps_csv_with_ms_durations_ranks_tokens(data_dir):
    b = read_file(data_dir / R / "steps.csv")
    s = b.steps
    assert list(s.columns) == list(schema.STEP_COLUMNS)
    assert list(zip(s["rank"], s["step"], s["duration_s"], strict=True)) == [(0, 1, 0.5), (0, 2, 0.52), (1, 2, 0.65)]
    assert set(s["phase"]) == {"step"} and s["time"].isna().all() and list(s["tokens"]) == [4096.0] * 3
    [skip] = b.warnings
    assert "skipped 2 of 5 rows" in skip and "line 5: 3 of 4 fields" in skip and "line 4: bad step_time_ms" in skip


def test_steps_jsonl_durations_from_timestamps(data_dir):
    b = read_file(data_dir / R / "steps.jsonl")
    s = b.steps.sort_values(["rank", "step"])
    assert list(zip(s["rank"], s["step"], s["duration_s"], strict=True)) == [(0, 2, 1.5), (0, 3, 0.5), (1, 2, 1.25)]
    assert list(s["time"]) == [ts("2024-01-15 10:00:00"), ts("2024-01-15 10:00:01.5"), ts("2024-01-15 10:00:00")]
    assert any("first record of each rank has none and is left out (2)" in w for w in b.warnings)
    assert any("skipped 1 of 4 rows (line 5: not JSON" in w for w in b.warnings)


def test_text_log_steps_ranks_times_and_events(data_dir):
    b = read_file(data_dir / R / "train_mixed.log")
    s = b.steps
    assert list(zip(s["rank"], s["step"], s["duration_s"], strict=True)) == [
        (0, 1, 0.512), (1, 1, 0.6), (0, 2, 0.53), (0, 3, 0.48), (0, 4, 0.25)]
    assert s["time"].iloc[0] == ts("2024-01-15 10:00:01") - pd.Timedelta(seconds=0.512)  # start = log time - step
    assert s["tokens"].iloc[3] == 8192.0
    ev = b.events
    assert list(ev["kind"]) == ["checkpoint", "eval", "recompile"]
    assert list(ev["step"]) == [2, 2, -1] and ev["duration_s"].iloc[0] == 12.5


def test_megatron_and_tqdm_logs(data_dir):
    b = read_file(data_dir / R / "megatron.log")
    assert list(zip(b.steps["step"], b.steps["duration_s"], strict=True)) == [(10, 1.2345), (20, 1.2), (30, 9.1)]
    assert list(b.events["kind"]) == ["checkpoint"] and b.events["step"].iloc[0] == 20
    q = read_file(data_dir / R / "tqdm.log")
    assert list(q.steps["step"]) == [100, 110, 120]
    assert q.steps["duration_s"].tolist() == pytest.approx([1 / 3.33, 1 / 3.0, 1.2])
    assert any("progress-bar" in w for w in q.warnings)


def test_text_without_steps_is_an_input_error(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("step 1 was fine\nstep 2 was fine\n")
    with pytest.raises(InputError, match="no step timings"):
        steps.read(p)


def test_sniffers_reject_each_others_formats(data_dir):
    heads = {n: textio.read_head(data_dir / R / n) for n in ("dmon_new.txt", "dcgm_exporter.prom", "steps.csv",
                                                             "telemetry_epoch_ms.csv", "smi_units.csv")}
    assert not dmon.sniff(heads["dcgm_exporter.prom"]) and not dcgm.sniff(heads["dmon_new.txt"])
    assert not generic_csv.sniff(heads["steps.csv"]) and not steps.sniff(heads["telemetry_epoch_ms.csv"])
    assert not dmon.sniff(heads["smi_units.csv"]) and not dcgm.sniff(heads["smi_units.csv"])


def test_dcgmi_dmon_header_with_field_ids(tmp_path):
    p = tmp_path / "ids.txt"
    p.write_text("# Entity  203   1002   155    252\nID\nGPU 3     88    0.71   301.5  1024\nGPU 3     90    N/A    302.0  1025\n")
    b = read_file(p)
    assert series(b, 3, "util_pct") == [88.0, 90.0] and series(b, 3, "sm_active") == [0.71, -1.0]
    assert series(b, 3, "power_w") == [301.5, 302.0] and series(b, 3, "mem_used_mib") == [1024.0, 1025.0]


def test_timestamped_step_lines_without_durations_give_window_means(data_dir):
    """torchtitan logs `step: N ... tps: ...` every 10 steps with a timestamp: the step time is the window's mean."""
    b = read_file(data_dir / R / "torchtitan.log")
    s = b.steps.sort_values("step")
    assert s["step"].tolist() == [10, 20, 30, 40] and set(s["rank"]) == {0}
    assert s["duration_s"].round(4).tolist() == [0.2592, 0.2333, 0.2223, 0.2333]  # (t_k - t_k-1) / steps between
    assert s["time"].iloc[0] == ts("2025-01-15 10:00:01.123")  # the window's start
    assert "means over logging windows (typically 10 steps)" in b.warnings[0]


def test_window_means_run_on_across_lines_that_share_a_time_stamp(tmp_path):
    """Whole-second stamps on ~0.5 s steps: two lines share each second. A window is measured between the first
    lines of two stamps and spans the steps between them (0.5 s a step); it was the one step after the shared stamp
    (1.0 s a step for rows standing for two: the run read twice its wall time, 298 s for 150 s)."""
    lines = [f"2026-12-03 10:00:{(i - 1) // 2:02d} step {i} loss 2.0" for i in range(1, 101)]
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    s = read_file(p).steps.sort_values("step")
    assert s["step"].tolist() == list(range(3, 101, 2)) and s["duration_s"].tolist() == [0.5] * 49


def test_deepspeed_rank_tag_and_its_untagged_timer_line_count_once(data_dir):
    b = read_file(data_dir / R / "deepspeed.log")
    s = b.steps.sort_values("step")
    assert s[["rank", "step", "duration_s"]].values.tolist() == [[0, 20, 1.0], [0, 30, 1.0]]


@pytest.mark.parametrize(("text", "json_like"), [
    ('{"traceEvents": []}', True), ("[\n  {\"a\": 1}\n]", True), ("[1, 2]", True), ("[]", True), ("[\n", True),
    ("[rank0]: step 3", False), ("[2024-01-15 10:00:00] step 3", False), ("[titan] 2025-01-15 ...", False),
    ("step 3", False), ("[3]\n", True), ("[3]\n[4]\n", True), ("[1.5e3,\n", True),
    ("[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] ...", False),  # a process-id counter
])
def test_a_json_document_is_told_from_a_bracketed_log_line(text, json_like):
    assert textio.looks_like_json(text) is json_like


def test_semicolon_csv_reads_decimal_commas(tmp_path):
    # a ';'-separated export (Excel / LibreOffice in a de/fr locale): every value was 'bad util value 97,5'
    p = tmp_path / "gpu.csv"
    p.write_text("time;gpu;util;power\n" + "".join(f"2024-01-15 10:00:0{i},250;0;97,5;250,25 W\n" for i in range(3)))
    b = read_file(p)
    t = b.telemetry
    assert t["util_pct"].tolist() == [97.5] * 3 and t["power_w"].tolist() == [250.25] * 3
    assert not b.warnings and t["time"].iloc[1] - t["time"].iloc[0] == pd.Timedelta(seconds=1)
