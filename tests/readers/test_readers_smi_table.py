"""The human-readable nvidia-smi table logged in a loop (`nvidia-smi -l`, `watch nvidia-smi`): old and new driver
layouts, N/A and ERR! values, the Processes section, a truncated last snapshot, time zones and missing dates."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from playbook.core.errors import InputError
from playbook.readers import detect, nvidia_smi, read_file, read_paths, textio
from playbook.readers.nvidia_smi import table as nvidia_smi_table

R = "readers"


def _rows(bundle, gpu):
    t = bundle.telemetry
    return t[t["gpu"] == gpu].sort_values("time")


@pytest.mark.parametrize("name", ["smi_table_h100.log", "smi_table_v100_watch.log"])
def test_detected_by_content_and_not_by_the_csv_reader(data_dir, name):
    assert detect.detect(data_dir / R / name) == "nvidia_smi_table"
    assert not nvidia_smi_table.sniff(textio.read_head(data_dir / R / "smi_units.csv"))
    assert not nvidia_smi.sniff(textio.read_head(data_dir / R / name))


def test_new_driver_layout_values_errors_and_a_truncated_last_snapshot(data_dir):
    b = read_file(data_dir / R / "smi_table_h100.log")
    t = b.telemetry
    assert len(t) == 5 and set(t["host"]) == {"smi_table_h100"}  # 3 snapshots x 2 GPUs, the last row cut off
    g0 = _rows(b, 0)
    assert g0["util_pct"].tolist() == [97.0, 100.0, 99.0] and g0["power_w"].tolist() == [121.0, 455.0, 401.0]
    assert g0["time"].tolist() == [pd.Timestamp(f"2024-01-15 10:23:{s}", tz="UTC") for s in (45, 47, 49)]
    assert (g0["mem_used_mib"] == 71234).all() and (g0["mem_total_mib"] == 81559).all() and g0["temp_c"].max() == 36
    g1 = _rows(b, 1)
    assert g1["util_pct"].iloc[0] == 3.0 and math.isnan(g1["util_pct"].iloc[1]) and math.isnan(g1["power_w"].iloc[1])
    assert g1["power_limit_w"].tolist() == [700.0, 700.0]  # ERR! reads NaN, the cap beside it stays
    assert len(b.warnings) == 1 and "skipped 1 of 6 rows (line 63: GPU 1: unreadable values line" in b.warnings[0]


def test_old_driver_layout_under_watch_names_the_host_and_reads_local_time(data_dir):
    b = read_paths([data_dir / R / "smi_table_v100_watch.log"], tz="America/New_York")
    t = b.telemetry.sort_values("gpu")
    assert set(t["host"]) == {"gpu-node-07"} and not b.warnings
    assert t["util_pct"].tolist() == [0.0, 88.0] and t["mem_used_mib"].tolist() == [0.0, 15000.0]
    assert t["temp_c"].tolist() == [34.0, 61.0] and t["power_limit_w"].tolist() == [300.0, 300.0]
    assert (t["time"] == pd.Timestamp("2024-03-05 19:02:11", tz="UTC")).all()  # EST = UTC-5


def test_snapshots_without_dates_get_synthetic_times_and_say_so(tmp_path, data_dir):
    text = (data_dir / R / "smi_table_v100_watch.log").read_text()
    body = text[text.index("+---"):]
    p = tmp_path / "nodate.log"
    p.write_text(body + body)
    b = read_file(p, interval_s=2.0)
    assert len(b.telemetry) == 4 and "no timestamps in the data" in b.warnings[0]
    for gpu in (0, 1):
        t = _rows(b, gpu)["time"]
        assert ((t - t.iloc[0]).dt.total_seconds()).tolist() == [0.0, 2.0]


def test_a_banner_without_gpu_rows_warns_and_garbage_is_not_sniffed(tmp_path):
    p = tmp_path / "empty.log"
    p.write_text("| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15 |\n| GPU-Util |\n")
    b = nvidia_smi_table.read(p)
    assert b.telemetry.empty and "no GPU rows" in b.warnings[0]
    q = tmp_path / "other.log"
    q.write_text("GPU-Util is high today\n")
    assert not nvidia_smi_table.sniff(q.read_text())
    with pytest.raises(InputError, match="no '\\| NVIDIA-SMI ...' banner"):
        nvidia_smi_table.read(q)


def _ecc_table(date: str, counts: tuple[str, str]) -> str:
    rows = "".join(f"|   {g}  Tesla V100-PCIE...  On   | 00000000:{3 + g:02X}:00.0 Off | {c:>20} |\n"
                   f"| N/A   50C    P0   219W / 250W |   4617MiB / 32510MiB |    100%      Default |\n"
                   "+-------------------------------+----------------------+----------------------+\n"
                   for g, c in enumerate(counts))
    return (f"{date}\n+-----------------------------------------------------------------------------+\n"
            "| NVIDIA-SMI 450.51.05    Driver Version: 450.51.05    CUDA Version: 11.0     |\n"
            "|-------------------------------+----------------------+----------------------+\n"
            "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
            "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
            "|===============================+======================+======================|\n" + rows + "\n")


def test_volatile_uncorrectable_ecc_count_becomes_an_event_each_time_it_rises(tmp_path):
    # NVIDIA/k8s-device-plugin#267: "GPU 1 has 1 Volatile Uncorr. ECC"; N/A (GeForce) and 0 are no event
    path = tmp_path / "ecc.log"
    path.write_text(_ecc_table("Wed Apr 28 08:39:21 2021", ("0", "N/A")) +
                    _ecc_table("Wed Apr 28 08:39:23 2021", ("0", "1")) +
                    _ecc_table("Wed Apr 28 08:39:25 2021", ("0", "1")) +
                    _ecc_table("Wed Apr 28 08:39:27 2021", ("0", "3")))
    ev = read_file(path).events
    assert ev["kind"].tolist() == ["ecc", "ecc"]
    assert ev["time"].tolist() == [pd.Timestamp("2021-04-28 08:39:23", tz="UTC"),
                                   pd.Timestamp("2021-04-28 08:39:27", tz="UTC")]
    assert ev["detail"].str.startswith("gpu 1: ").all() and "3 volatile uncorrectable" in ev["detail"].iloc[1]
    assert ev["host"].tolist() == ["ecc", "ecc"]


def test_a_table_cut_off_inside_its_gpu_rows_counts_the_rows_it_lost(tmp_path, data_dir):
    # nvidia-smi -l killed while writing GPU 1's row of the second table: that row vanished without a warning
    lines = (data_dir / "readers" / "smi_table_h100.log").read_text().splitlines(keepends=True)
    cut = tmp_path / "node1.log"
    cut.write_text("".join(lines[:36]) + lines[36][:40])
    b = read_file(cut)
    assert len(b.telemetry) == 3
    assert any("line 37: the last table is cut off after 1 of 2 GPU rows" in w for w in b.warnings)


def test_each_gpu_rows_product_name_is_its_model(tmp_path, data_dir):
    """The GPU rows' names (a long one cut with "..." by nvidia-smi) are the parts the GPUs are judged against: a box
    of two models says so (heldout12's mixed boxes were CSVs; the table is the commoner paste)."""
    from playbook.model import schema

    text = (data_dir / "readers" / "smi_table_h100.log").read_text().replace(
        "|   1  NVIDIA H100 80GB HBM3          On  |", "|   1  NVIDIA A100-SXM4-80GB...     On  |")
    p = tmp_path / "mixed.log"
    p.write_text(text)
    models = read_file(p).meta[schema.GPU_MODELS]
    assert models == {"mixed:0": "NVIDIA H100 80GB HBM3", "mixed:1": "NVIDIA A100-SXM4-80GB"}


def test_values_lines_alone_read_as_one_gpu_polled_once_a_line(tmp_path):
    """`nvidia-smi -l 2 | grep MiB`: the GPUs' values lines without the banner or the GPU rows; one GPU, one poll a
    line, synthetic times said in a warning; lines of two memory sizes (two GPUs interleaved) are refused."""
    rows = [f"| 30%   51C    P2   {w}W / 250W |   9120MiB / 11264MiB |     {u}%      Default |"
            for w, u in ((60, 0), (210, 97), (62, 0), (215, 99), (61, 2), (208, 96))]
    path = tmp_path / "grep.txt"
    path.write_text("\n".join(rows) + "\n")
    assert detect.detect(path) == "nvidia_smi_table"
    b = read_file(path, interval_s=2.0)
    assert b.telemetry["util_pct"].tolist() == [0, 97, 0, 99, 2, 96] and set(b.telemetry["gpu"]) == {0}
    assert b.telemetry["power_w"].tolist()[:2] == [60, 210]
    assert (b.telemetry["time"].diff().dropna().dt.total_seconds() == 2.0).all()
    assert any("one GPU, one poll a line" in w for w in b.warnings)
    two = rows[:2] + [r.replace("11264MiB", "16384MiB") for r in rows[2:4]]
    path.write_text("\n".join(two) + "\n")
    with pytest.raises(InputError, match="2 memory sizes"):
        read_file(path)
    path.write_text(rows[0] + "\n")  # one values line is a quote, not a log
    assert not nvidia_smi_table.sniff(path.read_text())
