"""nvidia-smi --query-gpu CSV: every variant the reader claims, on small fixtures in tests/data/readers/."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pandas as pd
import pytest

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import native, nvidia_smi, read_file, textio
from playbook.readers.nvidia_smi import convert as nvidia_smi_convert
from playbook.readers.nvidia_smi import fields as nvidia_smi_fields

R = "readers"


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def row(bundle, gpu: int, k: int) -> pd.Series:
    """The k-th sample (in time order) of GPU `gpu`."""
    t = bundle.telemetry
    return t[t["gpu"] == gpu].sort_values("time").iloc[k]


def test_units_header_index_values_and_na(data_dir):
    b = read_file(data_dir / R / "smi_units.csv")
    t = b.telemetry
    assert list(t.columns) == list(schema.TELEMETRY_COLUMNS)
    assert len(t) == 6 and b.warnings == []
    assert set(t["host"]) == {"smi_units"} and sorted(t["gpu"].unique()) == [0, 1]
    assert str(t["time"].dtype) == "datetime64[ns, UTC]"
    first = row(b, 0, 0)
    assert first["time"] == ts("2024-01-15 10:00:00.250")
    assert (first["util_pct"], first["mem_util_pct"], first["mem_used_mib"], first["mem_total_mib"]) == \
        (97.0, 40.0, 70959.0, 81559.0)
    assert (first["power_w"], first["sm_clock_mhz"], first["temp_c"], first["throttle_reasons"]) == \
        (250.35, 1980.0, 61.0, 0.0)
    assert row(b, 0, 1)["throttle_reasons"] == 4.0  # 0x...04 = SwPowerCap
    assert math.isnan(row(b, 1, 0)["power_w"])        # [N/A]
    assert math.isnan(row(b, 1, 1)["util_pct"])       # [Not Supported]
    assert math.isnan(row(b, 1, 2)["temp_c"])         # [Unknown Error]
    assert row(b, 1, 2)["util_pct"] == 50.0
    assert t["sm_active"].isna().all()                # nvidia-smi has no SM activity
    assert t.attrs["interval_s"] == pytest.approx(1.0)
    # sorted by (host, gpu, time) like schema.telemetry_frame
    assert t.equals(t.sort_values(["host", "gpu", "time"], kind="stable").reset_index(drop=True))


def test_nounits_crlf(data_dir):
    b = read_file(data_dir / R / "smi_nounits_crlf.csv")
    t = b.telemetry
    assert len(t) == 4 and b.warnings == []
    assert row(b, 0, 1)["time"] == ts("2024-01-15 10:00:01")
    assert row(b, 0, 0)["power_w"] == 250.35
    assert math.isnan(row(b, 1, 0)["util_pct"]) and row(b, 1, 0)["mem_used_mib"] == 34559.0
    assert math.isnan(row(b, 1, 1)["power_w"]) and row(b, 1, 1)["util_pct"] == 4.0


def test_damaged_log_counts_every_skipped_line(data_dir):
    b = read_file(data_dir / R / "smi_damaged.csv")
    t = b.telemetry
    assert len(t) == 8
    [skip] = [w for w in b.warnings if "skipped" in w]
    # 8 rows read; skipped: the error line, a 3-field row, a garbage line, a last line cut mid-value
    assert "skipped 4 of 12 rows" in skip and "line 4: nvidia-smi error" in skip and "line 6: 3 of 4 fields" in skip
    assert "+1 more" in skip
    # after the restart the header gained power.draw; before it the column is NaN
    before, after = t[t["time"] < ts("2024-01-15 11:00")], t[t["time"] >= ts("2024-01-15 11:00")]
    assert len(before) == 5 and before["power_w"].isna().all()
    assert len(after) == 3 and list(after.sort_values(["time", "gpu"])["power_w"]) == [200.0, 201.0, 202.0]
    assert row(b, 1, 1)["time"] == ts("2024-01-15 10:00:02")  # the cut row of GPU 1 at 10:00:01 is gone
    kinds = dict(zip(b.events["kind"], b.events["time"], strict=True))
    assert kinds["gpu_error"] == ts("2024-01-15 10:00:00")
    assert kinds["restart"] == ts("2024-01-15 11:00:00")
    assert "GPU0000:3B:00.0" in b.events.loc[b.events["kind"] == "gpu_error", "detail"].iloc[0]


def test_no_index_column_splits_ticks_at_timestamp_gaps(data_dir):
    b = read_file(data_dir / R / "smi_noindex.csv")
    t = b.telemetry
    assert len(t) == 6 and b.warnings == []
    assert sorted(t["gpu"].unique()) == [0, 1, 2]
    assert list(t[t["gpu"] == 2]["util_pct"]) == [30.0, 31.0]
    assert row(b, 2, 1)["time"] == ts("2024-01-15 10:00:05.104")


def test_polling_loop_with_separators_needs_fields_without_units(data_dir):
    path = data_dir / R / "smi_loop_nounits.txt"
    with pytest.raises(InputError, match="--fields"):
        read_file(path)
    b = read_file(path, fields="utilization.gpu,memory.used", interval_s=2)
    t = b.telemetry
    assert len(t) == 6
    assert list(t[t["gpu"] == 1]["util_pct"].fillna(-1)) == [3.0, -1.0, 50.0]  # [N/A] -> NaN
    assert list(t[t["gpu"] == 0]["time"]) == [ts("1970-01-01 00:00:00"), ts("1970-01-01 00:00:02"),
                                              ts("1970-01-01 00:00:04")]
    assert t.attrs["interval_s"] == 2.0
    assert any("synthetic" in w for w in b.warnings)
    with pytest.raises(InputError, match="3 fields but the data has 2"):
        read_file(path, fields="index,utilization.gpu,memory.used")


def test_headerless_units_are_guessed_and_truncated_last_line_skipped(data_dir):
    b = read_file(data_dir / R / "smi_poll_units.txt")
    assert any("guessed fields index,utilization.gpu,memory.used; pass --fields to be sure" in w for w in b.warnings)
    assert any("skipped 1 of 6 rows (line 8: truncated line '1, 100 %')" in w for w in b.warnings)
    t = b.telemetry
    assert len(t) == 5
    assert list(t[t["gpu"] == 0]["util_pct"]) == [0.0, 100.0, 21.0]
    assert list(t[t["gpu"] == 0]["mem_used_mib"]) == [70959.0, 97141.0, 76019.0]
    assert list(t[t["gpu"] == 1]["util_pct"]) == [100.0, 100.0]
    # --fields removes the guess
    b2 = read_file(data_dir / R / "smi_poll_units.txt", fields="index,utilization.gpu,memory.used")
    assert not any("guessed" in w for w in b2.warnings)
    assert b2.telemetry[["gpu", "util_pct"]].equals(t[["gpu", "util_pct"]])


def test_real_sample_reads_as_eight_gpus(data_dir):
    sample = data_dir.parents[1] / "data" / "samples" / "dflash-8gpu" / "nvidia-smi-poll.txt"
    b = read_file(sample, interval_s=2)
    t = b.telemetry
    assert t["gpu"].nunique() == 8 and len(t) == 25
    assert list(t[t["gpu"] == 0]["util_pct"]) == [0.0, 100.0, 100.0, 21.0]
    assert list(t[t["gpu"] == 6]["mem_used_mib"]) == [34559.0, 50235.0, 81759.0]
    assert t.attrs["interval_s"] == 2.0
    assert set(t["host"]) == {"nvidia-smi-poll"}


def test_bus_id_identifies_gpus_in_pci_order(data_dir):
    b = read_file(data_dir / R / "smi_bus_id.csv")
    t = b.telemetry
    assert list(t[t["gpu"] == 0]["util_pct"]) == [10.0, 11.0]  # 00000000:1A:00.0 sorts first
    assert list(t[t["gpu"] == 1]["util_pct"]) == [70.0, 71.0]


def test_gzip_and_local_timezone(tmp_path, data_dir):
    raw = (data_dir / R / "smi_units.csv").read_bytes()
    gz = tmp_path / "node42.csv.gz"
    gz.write_bytes(gzip.compress(raw))
    b = read_file(gz)
    assert set(b.telemetry["host"]) == {"node42"} and len(b.telemetry) == 6
    local = nvidia_smi.read(data_dir / R / "smi_units.csv", tz="Europe/Berlin")
    assert local.telemetry["time"].min() == ts("2024-01-15 09:00:00.250")  # CET = UTC+1 in January


def test_fast_path_equals_line_path(data_dir):
    """The pyarrow path and the line-by-line path give the same table (a damaged line forces the latter)."""
    clean = (data_dir / R / "smi_units.csv").read_text().encode()
    specials = nvidia_smi._scan(clean, nvidia_smi._digit_mode(clean))
    assert [sp.kind for sp in specials] == ["header"] and clean.count(b"\n") == 7
    fast = nvidia_smi.read(data_dir / R / "smi_units.csv").telemetry
    fields, units = nvidia_smi_fields.parse_header(specials[0].text)
    piece = nvidia_smi_convert.Piece(fields, units, None, specials[0].end + 1, len(clean), 2, 7)
    skips = schema.SkipCounter("x")
    slow = nvidia_smi_convert.parse_lines(clean, piece, skips, "UTC")
    assert slow.gpu.tolist() == [0, 1, 0, 1, 0, 1]
    assert np.array_equal(slow.metrics["util_pct"], np.array([97, 3, 100, np.nan, 0, 50.0]), equal_nan=True)
    fast_cols = nvidia_smi_convert.parse_fast(clean, piece, schema.SkipCounter("x"), "UTC")
    for k in slow.metrics:
        assert np.array_equal(slow.metrics[k], fast_cols.metrics[k], equal_nan=True), k
    assert np.array_equal(slow.time_ns, fast_cols.time_ns) and len(fast) == 6


@pytest.mark.parametrize("damage", ["", "[N/A]", "[Not Supported]"])
def test_plain_numbers_parsed_as_numbers_give_the_text_path_table(tmp_path, monkeypatch, damage):
    """nounits values are parsed straight to float64 (layout.number_fields); a value there that is no number
    (`[N/A]` written mid-log) sends the piece back to the text path: the table, warnings and skips are the same."""
    rows = ["timestamp, index, utilization.gpu [%], memory.used [MiB], temperature.gpu, pstate"]
    for t in range(400):
        for g in range(4):
            util = damage if damage and (t, g) == (250, 2) else str((t * 7 + g * 13) % 101)
            rows.append(f"2024/03/01 10:{t // 60:02d}:{t % 60:02d}.125, {g}, {util}, {1000 + t}, {40 + g}, P0")
    path = tmp_path / "nounits.csv"
    path.write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(nvidia_smi, "FAST_MIN_BYTES", 0)
    monkeypatch.setattr(nvidia_smi, "SAMPLE_BYTES", 8192)  # many blocks: one damaged piece among clean ones
    monkeypatch.setattr(native, "C", None)  # the pyarrow paths (C is checked against them apart)
    calls = []
    real = nvidia_smi_convert._parse_blob
    monkeypatch.setattr(nvidia_smi_convert, "_parse_blob", lambda *a: calls.append(a[1]) or real(*a))
    typed = nvidia_smi.read(path, block_bytes=8192)
    assert frozenset({1, 2, 3, 4}) in calls  # index, utilization, memory and temperature were typed
    assert calls.count(frozenset()) == bool(damage) and len(calls) > 5  # only the damaged piece went back to text
    monkeypatch.setattr(nvidia_smi_convert, "number_fields", lambda *a: frozenset())
    text = nvidia_smi.read(path, block_bytes=8192)
    pd.testing.assert_frame_equal(typed.telemetry, text.telemetry)
    assert typed.warnings == text.warnings and len(typed.telemetry) == 1600
    assert typed.telemetry["util_pct"].isna().sum() == bool(damage)


def test_sniff_accepts_variants_and_rejects_others(data_dir):
    for name in ("smi_units.csv", "smi_nounits_crlf.csv", "smi_damaged.csv", "smi_noindex.csv",
                 "smi_loop_nounits.txt", "smi_poll_units.txt", "smi_bus_id.csv"):
        assert nvidia_smi.sniff(textio.read_head(data_dir / R / name)), name
    for name in ("dmon_new.txt", "dcgm_exporter.prom", "telemetry_epoch_ms.csv", "steps.csv", "train_mixed.log"):
        assert not nvidia_smi.sniff(textio.read_head(data_dir / R / name)), name
    assert not nvidia_smi.sniff("hello, world\nthis, is, prose\n")


def test_guess_fields_refuses_ambiguous_columns():
    assert nvidia_smi_fields.guess_fields([["0", " 45", " 70959 MiB"]]) is None  # a bare number could be anything
    fields, _ = nvidia_smi_fields.guess_fields([["2024/01/15 10:00:00.000", " 3", " 97 %", " 40 %", " 250.00 W"],
                                         ["2024/01/15 10:00:00.000", " 0", " 97 %", " 40 %", " 250.00 W"]])
    assert fields == ["timestamp", "index", "utilization.gpu", "utilization.memory", "power.draw"]


def test_guess_fields_reads_temperature_in_celsius():
    fields, note = nvidia_smi_fields.guess_fields([["0", " 97 %", " 61 C", " 1980 MHz"], ["1", " 5 %", " 40 C", " 1410 MHz"]])
    assert fields == ["index", "utilization.gpu", "temperature.gpu", "clocks.sm"]
    assert note == "index,utilization.gpu,temperature.gpu,clocks.sm"


def test_nounits_values_under_a_units_header_keep_the_last_line(tmp_path):
    # `--format=csv,nounits` keeps units in the header but not in the values: the last row is whole.
    path = tmp_path / "nounits.csv"
    path.write_text("timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
                    "2026/01/01 00:00:00.000, 0, 50, 100\n2026/01/01 00:00:01.000, 0, 60, 100\n"
                    "2026/01/01 00:00:02.000, 0, 70, 100\n")
    bundle = read_file(path)
    assert list(bundle.telemetry["util_pct"]) == [50.0, 60.0, 70.0]
    assert not bundle.warnings
    # with units in the values, a last value that lost its unit is still a cut line
    path.write_text("timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
                    "2026/01/01 00:00:00.000, 0, 50 %, 100 MiB\n2026/01/01 00:00:01.000, 0, 60 %, 100 MiB\n"
                    "2026/01/01 00:00:02.000, 0, 70 %, 10\n")
    bundle = read_file(path)
    assert len(bundle.telemetry) == 2 and "truncated" in bundle.warnings[0]


SMI_FIXTURES = ("smi_units.csv", "smi_nounits_crlf.csv", "smi_damaged.csv", "smi_noindex.csv", "smi_loop_nounits.txt",
                "smi_poll_units.txt", "smi_bus_id.csv", "table_smi_event_reasons.csv")


@pytest.mark.parametrize("name", SMI_FIXTURES)
def test_block_edges_change_nothing(tmp_path, data_dir, monkeypatch, name):
    """Streamed in blocks of a few lines (every line edge a block edge somewhere), a log reads as it does whole:
    repeated headers, error and junk lines, separators, tick splits, GPU repeats and cut lines, line numbers too.
    The fixture is repeated so segments, ticks and identities span many blocks."""
    raw = (data_dir / R / name).read_bytes()
    path = tmp_path / name
    path.write_bytes(raw.rstrip(b"\r\n") + b"\n" + raw * 30)  # a cut last line of the fixture lands mid-file
    opts = {"fields": "utilization.gpu,memory.used"} if "nounits" in name and "loop" in name else {}
    whole = nvidia_smi.read(path, **opts)
    monkeypatch.setattr(nvidia_smi, "SAMPLE_BYTES", 4096)  # headerless lines are still judged on 4 KiB
    for block in (40, 97, 1000):
        part = nvidia_smi.read(path, block_bytes=block, **opts)
        pd.testing.assert_frame_equal(part.telemetry, whole.telemetry)
        pd.testing.assert_frame_equal(part.events, whole.events)
        assert [w.split(" rows (")[0] for w in part.warnings] == [w.split(" rows (")[0] for w in whole.warnings]


def test_streaming_memory_is_bounded_by_the_block_not_the_file(tmp_path, monkeypatch):
    """Python-side memory of a read stays near a few blocks plus the numeric columns: a 12 MB log whose text is
    mostly an ignored `name` field peaks far below its size (the whole-file reader held all of it, then more)."""
    import tracemalloc

    name = "NVIDIA H100 80GB HBM3 " * 70  # 1.5 KB of text per row that becomes no column
    lines = [f"2024/01/15 10:{k // 8 // 60 % 60:02d}:{k // 8 % 60:02d}.000, {k % 8}, {k % 101} %, {name}"
             for k in range(8000)]
    path = tmp_path / "wide.csv"
    path.write_text("timestamp, index, utilization.gpu [%], name\n" + "\n".join(lines) + "\n")
    size = path.stat().st_size
    monkeypatch.setattr(nvidia_smi, "SAMPLE_BYTES", 64 << 10)
    tracemalloc.start()
    try:
        bundle = nvidia_smi.read(path, block_bytes=256 << 10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(bundle.telemetry) == 8000 and not bundle.warnings
    assert bundle.telemetry["util_pct"].sum() == sum(k % 101 for k in range(8000))
    assert size > 12e6 and peak < size / 3, (size, peak)  # ~2 MB: blocks of 256 KiB and 8000 rows of numbers


def test_default_power_limit_is_read_beside_the_enforced_one(tmp_path):
    # power.default_limit (and DCGM's power_management_limit_default) is the board's own limit: the reference a
    # cap is read against; min/max limits stay out of the schema
    from playbook.readers import headers

    path = tmp_path / "smi.csv"
    path.write_text("timestamp, index, power.draw [W], power.limit [W], power.default_limit [W], power.max_limit [W]\n"
                    "2026/06/26 10:00:00.000, 0, 493.10 W, 500.00 W, 700.00 W, 700.00 W\n")
    t = read_file(path).telemetry
    assert t["power_limit_w"].tolist() == [500.0] and t["power_default_limit_w"].tolist() == [700.0]
    assert headers.meaning("power_management_limit_default").role == "power_default_limit_w"
    assert headers.meaning("power.max_limit").role is None


@pytest.mark.parametrize("stamped", [True, False])
def test_a_header_every_poll_reads_as_one_header(tmp_path, monkeypatch, stamped):
    """`while true; do nvidia-smi --query-gpu=... --format=csv; sleep 1; done >> log` repeats the header every poll:
    the same rows as one header (each repeat marks the next poll, like `---`), in one segment rather than one per
    poll (10k polls took 15x the time of the same rows under one header). A header with other fields still starts
    a new segment."""
    head = ("timestamp, " if stamped else "") + "index, utilization.gpu [%], power.draw [W]\n"
    polls = [[(f"2024/03/02 14:00:{p:02d}.000, " if stamped else "") + f"{g}, {10 * p + g} %, {100 + g}.00 W\n"
              for g in range(2)] for p in range(5)]
    once, every = tmp_path / "once.csv", tmp_path / "every.csv"
    once.write_text(head + "".join(line for poll in polls for line in poll))
    every.write_text("".join(head + "".join(poll) for poll in polls))
    a = nvidia_smi.read(once).telemetry
    placed, place = [], nvidia_smi._place
    monkeypatch.setattr(nvidia_smi, "_place", lambda *args: placed.append(1) or place(*args))
    b = nvidia_smi.read(every).telemetry
    assert len(placed) == 1  # one segment, not one per poll
    cols = ["gpu", "time", "util_pct", "power_w"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert len(b) == 10 and b.groupby("gpu")["time"].nunique().tolist() == [5, 5]
    other = tmp_path / "other.csv"  # a restart with other fields: its own header, its own columns
    other.write_text(every.read_text() + head.replace("power.draw [W]", "temperature.gpu")
                     + ("2024/03/02 14:00:09.000, " if stamped else "") + "0, 50 %, 40\n")
    c = nvidia_smi.read(other).telemetry
    assert len(c) == 11 and c["temp_c"].notna().sum() == 1 and len(placed) == 3


def test_sniff_leaves_a_training_log_with_a_half_bracket_to_other_readers():
    """`2017-06-11-22:43:00] 1, 8.812, 30.340` (a script's own stamp, then its figures: heldout74's clevr-iep file) is
    no headerless --query-gpu CSV: nvidia-smi brackets only whole values (`[N/A]`), so no "pass --fields" refusal."""
    log = "".join(f"2017-06-11-22:43:{k:02d}] {k}, 0.05{k}, 16.0{k}, 3.0{k}\n" for k in range(20))
    assert not nvidia_smi.sniff(log)
    assert nvidia_smi.sniff("".join(f"{k % 4}, {50 + k}, [N/A], 250.00\n" for k in range(20)))  # whole [N/A]: still
