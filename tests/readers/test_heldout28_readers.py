"""Readers found short by the twenty-eighth held-out round (tests/data/eval/heldout28/SOURCES.md), tested on lines
and tables written here from NVIDIA's description of tegrastats (L4T "tegrastats Utility"): each board generation's
GPU load (`GR3D_FREQ X%@MHz`, `GR3D X%@MHz`, `@[MHz,MHz]` per GPC, no clock), its date prefix, the GPU's own rail
against shared ones, the GPU's thermal zone; and a per-second Jetson stats table whose rails' alarm limits and
thermal zones' throttle thresholds are limits, not a GPU id or clock-event reasons."""

from __future__ import annotations

import numpy as np

from playbook.readers import detect, read_paths, tegrastats
from playbook.readers.headers import assign, meaning

TX2 = ("RAM 3120/7850MB (lfb 20x4MB) SWAP 0/3925MB (cached 0MB) CPU [40%@2035,off,off,12%@2035,9%@2035,7%@2035] "
       "EMC_FREQ 9%@1866 GR3D_FREQ {u}%@1300 APE 150 BCPU@40C MCPU@40C GPU@{t}C PLL@40C Tboard@35C "
       "VDD_IN 5100/4800 VDD_CPU 900/880 VDD_GPU {p}/2100 VDD_SOC 800/790 VDD_DDR 1100/1000")
ORIN = ("{d} 09:00:{s:02d} RAM 9000/30536MB (lfb 3x4MB) SWAP 0/15268MB (cached 0MB) CPU [5%@1190,2%@1190,off,off] "
        "EMC_FREQ 2%@2133 GR3D_FREQ {u}%@[918,918] cpu@50.1C soc2@48C gpu@{t}C tj@52C "
        "VDD_GPU_SOC 6000mW/5000mW VDD_CPU_CV 900mW/900mW VIN_SYS_5V0 4000mW/4000mW")


def test_each_generation_s_gpu_fields():
    assert tegrastats.fields(TX2.format(u=87, t=51.5, p=4200)) == {
        "index": "0", "utilization.gpu": "87", "clocks.gr": "1300", "power.draw": "4.2", "temperature.gpu": "51.5"}
    orin = tegrastats.fields(ORIN.format(d="03-02-2025", s=7, u=64, t=55.25))
    assert orin == {"index": "0", "timestamp": "2025-03-02 09:00:07", "utilization.gpu": "64", "clocks.gr": "918",
                    "temperature.gpu": "55.25"}  # VDD_GPU_SOC feeds the GPU and the SoC: not the GPU's power
    old = tegrastats.fields("RAM 1214/3983MB (lfb 19x4MB) cpu [13%,61%,52%,30%]@1734 EMC 5%@1600 GR3D 12%@998")
    assert (old["utilization.gpu"], old["clocks.gr"]) == ("12", "998")
    assert tegrastats.sniff("RAM 1214/3983MB (lfb 19x4MB) cpu [13%,61%,52%,30%]@1734 EMC 5%@1600 GR3D 12%@998")
    nano = tegrastats.fields("RAM 936/3964MB (lfb 366x4MB) CPU [10%@102,off] GR3D_FREQ 99% POM_5V_GPU 3087/1027")
    assert (nano["utilization.gpu"], nano["power.draw"]) == ("99", "3.087") and "clocks.gr" not in nano
    assert tegrastats.fields("CPU [10%@102] GR3D_FREQ 40%") == {}  # no RAM statistic: not a tegrastats line


def test_a_tegrastats_log_is_detected_and_read_on_its_date_prefix(tmp_path):
    path = tmp_path / "stats.log"
    path.write_text("".join(ORIN.format(d="03-02-2025", s=s, u=90 + s % 9, t=50) + "\n" for s in range(30)))
    assert detect.detect(path) == "tegrastats"
    t = read_paths([str(path)]).telemetry
    assert len(t) == 30 and t["gpu"].nunique() == 1 and t["util_pct"].min() >= 90
    assert np.allclose(np.diff(t["time"].astype("int64").to_numpy()) / 1e9, 1.0)


def test_a_log_without_prefix_goes_on_the_synthetic_clock_and_counts_other_lines(tmp_path):
    path = tmp_path / "tegrastats.txt"
    path.write_text("".join(TX2.format(u=u, t=45, p=3000) + "\n" for u in (0, 99, 98, 97)) + "starting run\n")
    b = read_paths([str(path)], interval_s=0.5)
    assert len(b.telemetry) == 4 and b.telemetry["power_w"].max() == 3.0
    assert any("no timestamps" in w for w in b.warnings)
    assert any("skipped 1" in w for w in b.warnings)


def test_rail_limits_and_throttle_thresholds_are_no_gpu_id_or_reasons():
    assert meaning("VDD_GPU_SOC-WARN_CURRENT").role is None
    assert meaning("VDD_GPU_SOC-CRIT_CURRENT").role is None
    assert meaning("gpu-thermal-SW_THROTTLING_TEMP").role is None
    assert meaning("clocks_throttle_reasons.sw_thermal_slowdown").role == "throttle_reasons"  # still a reason
    names = ["System-Time", "cv0-thermal-CURR_TEMP", "gpu-thermal-CURR_TEMP", "IGPU0-CURR_LOAD"]
    roles = {names[i]: m.role for i, m in assign(names).items()}
    assert roles["gpu-thermal-CURR_TEMP"] == "temp_c" and roles["IGPU0-CURR_LOAD"] == "util_pct"
    assert "cv0-thermal-CURR_TEMP" not in roles  # the zone named for the GPU, not the first zone


def test_a_jetson_stats_table_is_one_gpu_without_throttling(tmp_path):
    path = tmp_path / "jetson.csv"
    head = ("System-Time,IGPU0-CURR_FREQ,IGPU0-CURR_LOAD,gpu-thermal-CURR_TEMP,gpu-thermal-SW_THROTTLING_TEMP,"
            "VDD_GPU_SOC-WARN_CURRENT,VDD_GPU_SOC-IN_POWER\n")
    path.write_text(head + "".join(f"10:00:{s:02d},1300.5,{95 - s % 2},60.{s % 10},112.0,81900,9000\n"
                                   for s in range(40)))
    t = read_paths([str(path)]).telemetry
    assert t["gpu"].nunique() == 1 and len(t) == 40
    assert "throttle_reasons" not in t or t["throttle_reasons"].fillna(0).eq(0).all()
    assert t["temp_c"].between(60, 61).all()


def test_a_step_log_with_a_tegrastats_line_pasted_in_stays_a_step_log(tmp_path):
    # LABELED SYNTHETIC: 60 step lines with one tegrastats line among them; sniffed on any one line, the file read as
    # tegrastats, its 60 step lines skipped (review1). A tegrastats log with a stray line stays tegrastats
    steps = [f"iter {10 * i}: loss 3.00, time 450.00ms" for i in range(1, 61)]
    mixed = tmp_path / "train.log"
    mixed.write_text("\n".join(steps[:20] + [TX2.format(u=99, t=40, p=3000)] + steps[20:]) + "\n")
    assert len(read_paths([str(mixed)]).steps) == 60
    stray = tmp_path / "tegrastats.log"
    stray.write_text("\n".join([TX2.format(u=90, t=40, p=3000)] * 5 + ["tegrastats: warning"]
                               + [TX2.format(u=90, t=40, p=3000)] * 5) + "\n")
    assert len(read_paths([str(stray)]).telemetry) == 10


def test_current_device_is_still_a_gpu_id_and_a_rail_never_is():
    # "current" as a NOT_INDEX word took `current_device` (torch.cuda.current_device(), the GPU a row is about) off
    # the GPU id (review1); the rail prefixes say the electrical reading instead, bare rails included
    names = ["timestamp", "current_device", "utilization.gpu [%]"]
    assert {names[i]: m.role for i, m in assign(names).items()}["current_device"] == "gpu"
    for rail in ("VDD_GPU_SOC-IN_CURRENT", "VDD_GPU_SOC-WARN_CURRENT", "POM_5V_GPU", "VDD_GPU"):
        assert meaning(rail).role != "gpu", rail


def test_lines_under_a_second_apart_spread_over_their_second(tmp_path):
    # LABELED SYNTHETIC: `tegrastats --interval 100` with the date prefix (to the second): ten lines a second, the
    # GPU at 99% for five and 0% for five. Merged into each second's first line, the run read 99% throughout and
    # "healthy (confirmed)" (review1); spread 100 ms apart, half the time is idle
    path = tmp_path / "stats.log"
    path.write_text("".join(ORIN.format(d="03-02-2025", s=i // 10, u=99 if i % 10 < 5 else 0, t=50) + "\n"
                            for i in range(600)))
    t = read_paths([str(path)]).telemetry
    assert len(t) == 600 and abs(t["util_pct"].mean() - 49.5) < 1
    assert np.allclose(np.diff(t["time"].astype("int64").to_numpy()) / 1e9, 0.1)
