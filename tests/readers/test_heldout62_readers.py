"""The reading the sixty-second held-out round (tests/data/eval/heldout62/SOURCES.md) asked for, on logs written
here apart from the round's own files (LABELED SYNTHETIC), in the tools' layouts:

- GPU-Z's sensor log: `PerfCap Reason []` is NVAPI's perf-policy mask (1 power, 2 thermal, 4 / 8 the voltage limits
  GPU Boost tops out at, 16 utilization, 32 SLI sync), read into NVML's clock-event bits by the header's meaning,
  in any column order; `Power Consumption (%) [% TDP]` is a share of the limit, never watts; the header written
  again inside the file (logging restarted) is a session start, not a bad row;
- MSI Afterburner's `.hml`: records 00 / 01 / 02 / 03 / 80, sensors named in 02 with their units in 03, two adapters
  numbered `GPU1 ...` / `GPU2 ...`, a localised date (dd.mm.yyyy), a second session, 0/1 limit flags.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.model import schema
from playbook.readers import detect, read_paths

SW_POWER, SW_THERMAL = schema.THROTTLE_BITS["sw_power_cap"], schema.THROTTLE_BITS["sw_thermal"]


def _read(tmp_path, text: str, name: str, encoding: str = "latin-1"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return read_paths([str(path)])


# GPU-Z, another card's sensors in another order: PerfCap before the loads, the % TDP column before the watts
GPUZ = (" Date , PerfCap Reason [] , Power Consumption (%) [% TDP] , GPU Load [%] , Board Power Draw [W] , "
        "GPU Clock [MHz] , GPU Temperature [\u00b0C] ,\r\n")
CODES = [0, 1, 2, 3, 18, 4, 8, 16, 33]
WANT = [0, SW_POWER, SW_THERMAL, SW_POWER | SW_THERMAL, SW_THERMAL, 0, 0, 0, SW_POWER | schema.THROTTLE_BITS[
    "sync_boost"]]


def _gpuz_rows(start: int, codes: list[int]) -> str:
    t0 = pd.Timestamp("2025-05-01 10:00:00")
    return "".join(f"{t0 + pd.Timedelta(seconds=start + i):%Y-%m-%d %H:%M:%S} ,   {c}   ,  97.5   ,  98   ,  "
                   f"240.{i}   ,  1890.0   ,  71.0   ,\r\n" for i, c in enumerate(codes))


def test_gpuz_perfcap_is_read_as_clock_event_bits_in_any_column_order(tmp_path):
    tele = _read(tmp_path, GPUZ + _gpuz_rows(0, CODES), "GPU-Z Sensor Log.txt").telemetry
    assert list(tele["throttle_reasons"].astype(int)) == WANT
    # the watts, not the share of TDP written before them
    assert np.allclose(tele["power_w"].to_numpy(), [240 + i / 10 for i in range(len(CODES))])


def test_gpuz_share_of_tdp_alone_is_no_power(tmp_path):
    text = (" Date , GPU Load [%] , Power Consumption (%) [% TDP] , PerfCap Reason [] ,\n"
            "2025-05-01 10:00:00 , 99 , 101.2 , 1 ,\n2025-05-01 10:00:01 , 99 , 100.8 , 1 ,\n")
    tele = _read(tmp_path, text, "log.txt").telemetry
    assert "power_w" not in tele or tele["power_w"].isna().all()
    assert (tele["throttle_reasons"] == SW_POWER).all()


def test_gpuz_header_written_again_is_a_session_start_not_a_bad_row(tmp_path):
    text = GPUZ + _gpuz_rows(0, [0, 0, 0]) + GPUZ + _gpuz_rows(7200, [1, 1])
    bundle = _read(tmp_path, text, "GPU-Z Sensor Log.txt")
    assert len(bundle.telemetry) == 5
    assert not any("bad" in w or "skipped" in w for w in bundle.warnings)
    assert any("written again 1 time" in w for w in bundle.warnings)


# Afterburner with two adapters (an integrated GPU1, the card GPU2), a dd.mm.yyyy date, two logging sessions
NAMES = ["GPU1 temperature", "GPU1 usage", "GPU1 power", "GPU2 temperature", "GPU2 usage", "GPU2 FB usage",
         "GPU2 memory usage", "GPU2 core clock", "GPU2 memory clock", "GPU2 power", "GPU2 power limit", "CPU usage",
         "RAM usage"]
UNITS = ["\u00b0C", "%", "%", "\u00b0C", "%", "%", "MB", "MHz", "MHz", "W", "", "%", "MB"]


def _hml(polls: list[list[float]], day: str = "03.02.2025", second_session: bool = False) -> str:
    def head(t: str) -> list[str]:
        out = [f"00, {day} {t}, Hardware monitoring log v1.6 ", f"01, {day} {t}, Intel(R) UHD Graphics",
               f"01, {day} {t}, NVIDIA GeForce RTX 3060",
               f"02, {day} {t}, " + ",".join(n.ljust(20) for n in NAMES)]
        out += [f"03, {day} {t}, {str(i).ljust(20)},{u.ljust(20)},0.000 ,100.000 ,1 , , ,"
                for i, u in enumerate(UNITS)]
        return out
    lines = head("21:00:00")
    for k, vals in enumerate(polls):
        lines.append(f"80, {day} 21:00:{k:02d}, " + ",".join(f"{v:.3f}".ljust(20) for v in vals))
    if second_session:
        lines += head("22:30:00")
        lines.append(f"80, {day} 22:30:00, " + ",".join(f"{v:.3f}".ljust(20) for v in polls[0]))
    return "\r\n".join(lines) + "\r\n"


POLL = [45, 3, 12, 66, 98, 41, 11800, 1890, 7501, 168.5, 1, 35, 14000]


def test_afterburner_two_adapters_units_and_a_localised_date(tmp_path):
    text = _hml([POLL, POLL[:4] + [97] + POLL[5:10] + [0] + POLL[11:]])
    path = tmp_path / "HardwareMonitoring.hml"
    path.write_bytes(text.encode("cp1252"))
    assert detect.detect(path) == "afterburner_hml"
    tele = read_paths([str(path)]).telemetry.sort_values(["time", "gpu"])
    assert sorted(tele["gpu"].unique()) == [0, 1]
    card = tele[tele["gpu"] == 1]
    assert card["time"].iloc[0] == pd.Timestamp("2025-02-03 21:00:00", tz="UTC")  # day first
    assert list(card["util_pct"]) == [98, 97]
    assert list(card["mem_used_mib"]) == [11800, 11800]
    assert list(card["power_w"]) == [168.5, 168.5]
    assert list(card["sm_clock_mhz"]) == [1890, 1890]
    assert list(card["throttle_reasons"].astype(int)) == [SW_POWER, 0]
    igpu = tele[tele["gpu"] == 0]
    assert list(igpu["util_pct"]) == [3, 3]
    assert igpu["power_w"].isna().all()  # its "power" is in %: no watts


def test_afterburner_second_session_and_a_short_poll(tmp_path):
    text = _hml([POLL, POLL], second_session=True).replace(
        "80, 03.02.2025 21:00:01, ", "80, 03.02.2025 21:00:01, 44.000, 2.000\r\n80, 03.02.2025 21:00:02, ", 1)
    bundle = _read(tmp_path, text, "log.hml", "cp1252")
    tele = bundle.telemetry
    assert len(tele[tele["gpu"] == 1]) == 3  # two polls of the first session, one of the second
    assert tele["time"].max() == pd.Timestamp("2025-02-03 22:30:00", tz="UTC")
    assert any("2 of 13 values" in w for w in bundle.warnings)


def test_afterburner_log_without_its_00_header_is_still_recognised(tmp_path):
    text = "\r\n".join(_hml([POLL, POLL]).split("\r\n")[3:])  # a copy that starts at the 02 line
    path = tmp_path / "cut.txt"
    path.write_bytes(text.encode("cp1252"))
    assert detect.detect(path) == "afterburner_hml"
