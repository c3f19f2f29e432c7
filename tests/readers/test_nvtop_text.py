"""nvtop's screen as text (readers/nvtop_text.py), in the words of nvtop's src/interface.c: the device line with its
current PCIe link and rates, the clock / temperature / fan / power line, the GPU and MEM meters; devices side by
side on a wide terminal; several snapshots; a GPU with its link trained down while idle is not a degraded link
(tests/data/eval/heldout38 holds the real paste, two device lines)."""

from __future__ import annotations

import pytest

from playbook.core.errors import InputError
from playbook.diagnosis import diagnose
from playbook.readers import read_file

_ONE = ("Device 0 [NVIDIA GeForce RTX 3090] PCIe GEN 4@16x RX: 1.250 MiB/s TX: 37.50 KiB/s\n"
        "GPU 1695MHz MEM 9751MHz TEMP  45°C FAN  30% POW 110 / 350 W\n"
        "GPU[||||||               30%] MEM[||||      4.120Gi/24.000Gi]\n")


def test_one_device_block_reads_link_clocks_temperature_power_and_meters(tmp_path):
    p = tmp_path / "nvtop.txt"
    p.write_text(_ONE)
    r = read_file(p).telemetry.iloc[0]
    assert (r["gpu"], r["pcie_link_gen"], r["pcie_link_width"]) == (0, 4, 16)
    assert (r["sm_clock_mhz"], r["mem_clock_mhz"], r["temp_c"], r["power_w"], r["power_limit_w"], r["util_pct"]) == \
        (1695, 9751, 45, 110, 350, 30)
    assert r["mem_used_mib"] == pytest.approx(4.12 * 1024) and r["mem_total_mib"] == pytest.approx(24 * 1024)
    assert r["pcie_rx_mib_s"] == pytest.approx(1.25) and r["pcie_tx_mib_s"] == pytest.approx(37.5 / 1024)


def test_devices_side_by_side_take_their_own_fields_and_a_device_again_is_the_next_snapshot(tmp_path):
    block = ("Device 0 [Tesla V100-SXM2-16GB] PCIe GEN 3@16x RX: 0.000 KiB/s TX: 0.000 KiB/s  "
             "Device 1 [Tesla V100-SXM2-16GB] PCIe GEN 3@16x RX: 0.000 KiB/s TX: 0.000 KiB/s\n"
             "GPU 1530MHz MEM 877MHz TEMP  {t0}°F FAN N/A POW 250 / 300 W  "
             "GPU 135MHz MEM 877MHz TEMP  95°F FAN N/A POW  40 / 300 W\n"
             "GPU[||||||||||||||||{u0}%] MEM[|||  3.500Gi/16.000Gi]  GPU[            0%] MEM[ 1.000Mi/16.000Gi]\n")
    p = tmp_path / "wide.txt"
    p.write_text(block.format(t0=176, u0=98) + block.format(t0=178, u0=97))
    t = read_file(p).telemetry.sort_values(["time", "gpu"])
    assert len(t) == 4 and list(t["gpu"]) == [0, 1, 0, 1]
    assert list(t["util_pct"]) == [98, 0, 97, 0] and list(t["power_w"]) == [250, 40, 250, 40]
    assert list(t["temp_c"]) == [80, 35, 81, 35]  # °F converted
    assert list(t["sm_clock_mhz"]) == [1530, 135, 1530, 135]


def test_a_link_trained_down_on_an_idle_gpu_is_not_the_verdict(tmp_path):
    # nvidia-smi(1): "The current PCI-E link generation. These may be reduced when the GPU is not in use."
    p = tmp_path / "idle.txt"
    p.write_text("Device 0 [GeForce RTX 2080 Ti] PCIe GEN 3@16x RX: 12.00 MiB/s TX: 3.000 MiB/s\n"
                 "GPU 1950MHz MEM 7000MHz TEMP  71°C FAN  60% POW 240 / 250 W\n"
                 "GPU[||||||||||||||||||||97%] MEM[||||||||   9.800Gi/11.000Gi]\n"
                 "Device 1 [GeForce RTX 2080 Ti] PCIe GEN 1@16x RX: 0.000 KiB/s TX: 0.000 KiB/s\n"
                 "GPU 300MHz MEM 405MHz TEMP  31°C FAN  27% POW  12 / 250 W\n"
                 "GPU[                     0%] MEM[   1.000Mi/11.000Gi]\n")
    assert diagnose(read_file(p)).verdict["id"] != "link_degradation"


def test_markdown_a_paste_added_is_dropped(tmp_path):
    p = tmp_path / "paste.md"
    p.write_text("Device 0 [GeForce GTX 1080] **PCIe GEN 2@ 8x**\n")
    r = read_file(p).telemetry.iloc[0]
    assert (r["pcie_link_gen"], r["pcie_link_width"]) == (2, 8)


def test_words_of_other_tools_are_no_nvtop_screen(tmp_path):
    p = tmp_path / "other.txt"
    p.write_text("Device 0 [cpu] started\nGPU 1500MHz requested\n")
    with pytest.raises(InputError):
        read_file(p)


def test_a_field_nvtop_prints_as_n_a_keeps_its_device_column_side_by_side(tmp_path):
    # interface.c prints an unknown field as "GPU N/A MHz", "MEM N/A MHz", "TEMP N/A°C", "POW N/A W" or
    # "POW N/A / %3u W": the value to its right is the next device's, never this one's
    p = tmp_path / "nvtop.txt"
    p.write_text("Device 0 [Tesla T4] PCIe GEN 3@16x RX: N/A TX: N/A     "
                 "Device 1 [Tesla T4] PCIe GEN 3@16x RX: 1.000 MiB/s TX: 2.000 MiB/s\n"
                 "GPU N/A MHz MEM N/A MHz TEMP N/A°C FAN N/A  POW N/A / 70 W   "
                 "GPU 1590MHz MEM 5000MHz TEMP  61°C FAN N/A  POW  68 /  70 W\n"
                 "GPU[                     0%] MEM[ N/A]      GPU[||||||||||||    97%] MEM[|||  3.000Gi/15.000Gi]\n")
    t = read_file(p).telemetry.set_index("gpu")
    assert t.loc[1, "sm_clock_mhz"] == 1590 and t.loc[1, "mem_clock_mhz"] == 5000
    assert t.loc[1, "temp_c"] == 61 and t.loc[1, "power_w"] == 68 and t.loc[1, "util_pct"] == 97
    assert t.loc[1, "mem_used_mib"] == pytest.approx(3 * 1024)
    for col in ("sm_clock_mhz", "mem_clock_mhz", "temp_c", "power_w", "mem_used_mib"):
        assert col not in t or t[col].isna()[0], col
    assert t.loc[0, "power_limit_w"] == 70 and t.loc[0, "util_pct"] == 0


def test_nvtop_1_units_are_read_at_their_own_decimal_scale(tmp_path):
    # nvtop 1.x (interface.c then): memory_prefix {"B", "k", "M", "G", "T"}, the meter "%.1f%s/%.1f%s" of bytes and
    # print_pcie_at_scale from its kB/s, both scaled by 1000
    p = tmp_path / "nvtop1.txt"
    p.write_text("Device 0 [GeForce GTX 1080 Ti] PCIe GEN 3@16x RX: 1.500 MB/s TX: 250.0 kB/s\n"
                 "GPU 1911MHz MEM 5505MHz TEMP  70°C FAN  45% POW 230 / 250 W\n"
                 "GPU[||||||||||||||||||||||     98%] MEM[||||||||        5.2G/11.7G]\n")
    r = read_file(p).telemetry.iloc[0]
    assert r["mem_used_mib"] == pytest.approx(5.2e9 / 2**20) and r["mem_total_mib"] == pytest.approx(11.7e9 / 2**20)
    assert r["pcie_rx_mib_s"] == pytest.approx(1500 / 1024) and r["pcie_tx_mib_s"] == pytest.approx(250 / 1024)
    assert r["util_pct"] == 98
