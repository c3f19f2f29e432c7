"""Readers found short by the thirty-second held-out round (tests/data/eval/heldout32/SOURCES.md), tested on tables
written here: a `timestamp` column of Unix time (a writer that stamped `date +%s` or time.time() beside nvidia-smi's
query fields) is the polls' clock, its unit from the magnitude; a number too small to be Unix time, or a stray word,
is still a bad timestamp, counted with its line."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.readers import read_paths


def _table(tmp_path, times, header="timestamp,memory.used,memory.total,utilization.gpu"):
    path = tmp_path / "poll.csv"
    path.write_text(header + "\n" + "".join(f"{t},{1000 + i}, 24576, {30 + (i * 7) % 60}\n"
                                            for i, t in enumerate(times)))
    return read_paths([str(path)])


def test_unix_seconds_in_the_timestamp_column_are_the_clock(tmp_path):
    b = _table(tmp_path, [1_700_000_000 + 30 * i for i in range(40)])
    t = b.telemetry
    assert len(t) == 40 and t["util_pct"].notna().all() and t["mem_used_mib"].iloc[0] == 1000
    assert t["time"].iloc[0] == pd.Timestamp(1_700_000_000, unit="s", tz="UTC")
    assert np.allclose(np.diff(t["time"].astype("int64").to_numpy()) / 1e9, 30.0)
    assert not any("bad timestamp" in w for w in b.warnings)


def test_unix_milliseconds_and_fractions_keep_their_spacing(tmp_path):
    ms = _table(tmp_path, [1_700_000_000_000 + 500 * i for i in range(20)]).telemetry
    assert np.allclose(np.diff(ms["time"].astype("int64").to_numpy()) / 1e9, 0.5)
    frac = _table(tmp_path, [f"{1_763_736_779.57 + 0.53 * i:.6f}" for i in range(20)]).telemetry
    assert np.allclose(np.diff(frac["time"].astype("int64").to_numpy()) / 1e9, 0.53, atol=1e-6)


def test_numbers_too_small_for_unix_time_and_stray_words_stay_bad_timestamps(tmp_path):
    b = _table(tmp_path, list(range(1, 21)))  # a counter, not a clock: not placed in 1970
    assert len(b.telemetry) == 0 and any("bad timestamp '1'" in w for w in b.warnings)
    b = _table(tmp_path, [1_700_000_000 + 30 * i for i in range(19)] + ["soon"])
    assert len(b.telemetry) == 19 and any("skipped 1 of 20 rows (line 21" in w for w in b.warnings)


def test_nvidia_smi_date_text_is_read_as_before(tmp_path):
    b = _table(tmp_path, [f"2025/01/01 00:{i:02d}:00.000" for i in range(20)])
    assert len(b.telemetry) == 20 and b.telemetry["time"].iloc[0] == pd.Timestamp("2025-01-01", tz="UTC")
