"""Held-out telemetry from accelerator tools other than NVIDIA's (tests/data/heldout_vendors, sources in its
SOURCES.md): rocm-smi (CSV, JSON, the concise and legacy tables, `GPU[N] : key: value` lines), amd-smi metric,
AMD's device-metrics-exporter, Intel xpu-smi dump, Huawei npu-smi. Every file is read with the devices, values and
clock that expected.json gives; a memory-controller activity is never read as the GPU's utilization."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from playbook import diagnose
from playbook.core.errors import PlaybookError
from playbook.knowledge import ids
from playbook.readers import detect, headers, read_paths

DATA = Path(__file__).parent.parent / "data" / "heldout_vendors"
EXPECTED = {k: v for k, v in json.loads((DATA / "expected.json").read_text()).items() if not k.startswith("_")}


def problems(name: str) -> list[str]:
    """What a read of `name` gets wrong against expected.json (empty: read right); a refused file is one problem."""
    want = EXPECTED[name]
    try:
        tel = read_paths([DATA / name]).telemetry
    except PlaybookError as exc:
        return [f"refused: {str(exc)[:120]}"]
    if want.get("refused"):
        return ["read, though expected.json says it is not yet"]
    if tel.empty:
        return ["no rows read"]
    out = []
    hosts = set(tel["host"])
    got = sorted((h, int(g)) for h, g in {(h, g) for h, g in zip(tel["host"], tel["gpu"], strict=True)})
    if any(h is None for h, _g in want["gpus"]):  # devices on the file's one host
        if len(hosts) != 1 or sorted(g for _h, g in got) != [g for _h, g in want["gpus"]]:
            out.append(f"devices {got} != {want['gpus']}")
    elif got != sorted((h, g) for h, g in want["gpus"]):
        out.append(f"devices {got} != {want['gpus']}")
    if "samples" in want and (tel.groupby(["host", "gpu"]).size() != want["samples"]).any():
        out.append(f"samples per device {tel.groupby(['host', 'gpu']).size().tolist()}")
    if "span_s" in want:
        span = (tel["time"].max() - tel["time"].min()).total_seconds()
        if abs(span - want["span_s"]) > 1e-3:
            out.append(f"span {span} s != {want['span_s']}")
    first = tel.sort_values("time").groupby(["host", "gpu"], sort=False).head(1)
    for metric, per in want.get("values", {}).items():
        for key, value in per.items():
            host, _sep, gpu = key.rpartition(":")
            rows = first[(first["gpu"] == int(gpu)) & ((first["host"] == host) if host else True)]
            if rows.empty:
                out.append(f"{metric} {key}: no device")
                continue
            v = float(rows[metric].iloc[0])
            if value is None and not math.isnan(v):
                out.append(f"{metric} {key}: {v} where the file says N/A")
            elif value is not None and not (abs(v - value) <= 1e-3 * max(1.0, abs(value))):
                out.append(f"{metric} {key}: {v} != {value}")
    for metric in want.get("absent", []):
        if tel[metric].notna().any():
            out.append(f"{metric} read from a column that is no such reading: {tel[metric].dropna().tolist()[:4]}")
    return out


@pytest.mark.parametrize("name", sorted(k for k, v in EXPECTED.items() if not v.get("refused")))
def test_vendor_file_reads(name):
    assert problems(name) == []


@pytest.mark.parametrize("name", sorted(k for k, v in EXPECTED.items() if v.get("refused")))
def test_unread_layout_is_a_one_line_error(name):
    """A layout no reader knows yet (npu-smi's box table) is refused with one line naming the file, never misread."""
    with pytest.raises(PlaybookError) as err:
        read_paths([DATA / name])
    assert name in str(err.value) and "\n" not in str(err.value)


def test_activity_counters_and_memory_activity_are_not_utilization():
    """rocm-smi --json's "GFX Activity" / "Memory Activity" are accumulated counters (values past 100): no reading;
    "GPU memory use (%)" and "GPU Memory Read/Write Activity (%)" are the memory controller's busy share
    (mem_util_pct), never util_pct; a node number is not a host; "VRAM Total Used Memory" is the used size."""
    assert headers.meaning("GPU memory use (%)").role == "mem_util_pct"
    assert headers.meaning("GPU Memory Read/Write Activity (%)").role == "mem_util_pct"
    assert headers.meaning("USAGE.UMC_ACTIVITY").role == "mem_util_pct"
    assert headers.meaning("USAGE.GFX_ACTIVITY").role == "util_pct"
    assert headers.meaning("GPU Memory Allocated (VRAM%)").role is None
    # the concise tables' "VRAM%" is the same share of the size (rocm_smi.py showAllConcise: 100 * used / total of
    # getMemInfo(device, 'vram')); amd-smi monitor's "MEM%" / "MEM_UTIL" stay the memory's busy share
    assert headers.meaning("VRAM%").role is None and headers.meaning("VRAM %").role is None
    assert headers.meaning("MEM%").role == "mem_util_pct" and headers.meaning("MEM_UTIL").role == "mem_util_pct"
    assert headers.meaning("Node ID").role is None
    assert headers.meaning("VRAM Total Used Memory (B)").role == "mem_used_mib"
    assert headers.meaning("POWER.THROTTLE_STATUS").role is None
    assert headers.meaning("GPU Memory Temperature (Celsius Degree)").role is None
    counter = headers.meaning("GFX Activity")
    assert counter.role == "util_pct" and headers.settle(counter, [324450778.0]).role is None
    assert headers.settle(counter, [42.0]).role == "util_pct"
    assert headers.settle(headers.meaning("Memory Activity"), [87110708.0]).role is None
    # a bare "memory" past 100 is still MiB used (W&B), not a counter like an activity's
    assert headers.settle(headers.meaning("memory"), [5000.0]).role == "mem_used_mib"


def test_host_memory_and_runtime_index_are_no_device_readings():
    """neuron-monitor: the host's RAM (system_data.memory_info) is no device memory; a runtime's index is neither
    a clock nor a device; NeuronCores keyed by number are devices."""
    assert headers.meaning("system_data.memory_info.memory_used_bytes").role is None
    assert headers.meaning("memory_info.swap_used_bytes").role is None
    assert headers.meaning("neuron_runtime_index").role is None
    tel = read_paths([DATA / "neuron_monitor_report.json"]).telemetry
    assert tel["util_pct"].tolist() == [42.01, 42.02, 42.03, 42.04]
    assert set(tel["host"]) == {"My_Instance"}


def test_counter_only_activity_column_is_dropped(tmp_path):
    """A document whose only "activity" is a counter reads no utilization from it (the power still read)."""
    path = tmp_path / "rocm.json"
    path.write_text('{"card0": {"Average Graphics Package Power (W)": "144.0", "GFX Activity": "324450778"}}')
    tel = read_paths([path]).telemetry
    assert tel["power_w"].tolist() == [144.0]
    assert tel["util_pct"].isna().all()


def test_rocm_smi_loop_gives_one_tick_per_banner(tmp_path):
    """`watch rocm-smi --showuse` logged twice: two polls of two GPUs, a counted warning for a line without a
    reading."""
    poll = ("======================= ROCm System Management Interface =======================\n"
            "GPU[0]\t\t: GPU use (%): {a}\nGPU[1]\t\t: GPU use (%): {b}\nGPU[1]\t\t: Unable to get GPU use.\n")
    path = tmp_path / "loop.txt"
    path.write_text(poll.format(a=96, b=13) + poll.format(a=12, b=97))
    bundle = read_paths([path])
    tel = bundle.telemetry.sort_values(["gpu", "time"])
    assert tel["util_pct"].tolist() == [96, 12, 13, 97]
    assert tel["time"].nunique() == 2
    assert any("skipped 2" in w and "Unable to get GPU use" in w for w in bundle.warnings), bundle.warnings


def test_diagnose_multi_device_names_the_idle_ones():
    """AMD device-metrics-exporter on two hosts: the busy MI300X is saturated, the idle ones are not called ok."""
    d = diagnose(read_paths([DATA / "amd_device_metrics_exporter.prom"]))
    status = {g["id"]: g["status"] for g in d.gpus}
    assert status == {"tw038:0": "saturated", "tw038:2": "underutilized", "tw009:47": "underutilized"}


def test_diagnose_one_busy_gaudi_among_idle_ones():
    """hl-smi with one Gaudi2 at 88 % and the rest at 0 %: the busy one stands out, no verdict of health."""
    d = diagnose(read_paths([DATA / "hl_smi_table_hl225.txt"]))
    status = {g["id"].rpartition(":")[2]: g["status"] for g in d.gpus}
    assert status.pop("0") == "saturated"
    assert status and "saturated" not in status.values()
    # ok next to their idle peers, and said to be idle (never left to read as healthy and busy)
    assert all(g["evidence"].startswith("idle") for g in d.gpus if not g["id"].endswith(":0"))
    assert d.verdict["id"] != ids.HEALTHY


def test_box_tables_read_each_line_under_its_heading():
    """hl-smi's "Pwr:Usage/Cap" gives the draw and the limit, "used / total" memory both sizes; the process table
    under the devices and tpu-info's TensorCore table (another device numbering, not time busy) add no device."""
    hl = read_paths([DATA / "hl_smi_table_hl225.txt"]).telemetry.sort_values("gpu")
    assert hl["power_limit_w"].tolist() == [600.0] * 8
    assert hl["mem_total_mib"].tolist() == [98304.0] * 8
    tpu = read_paths([DATA / "tpu_info_v6e.txt"]).telemetry
    assert sorted(tpu["gpu"]) == [8, 9, 12, 13]
    assert tpu["util_pct"].tolist() == [100.0] * 4  # the duty cycle, never the TensorCore utilization (13-15 %)


def test_box_table_loop_gives_one_tick_per_table(tmp_path):
    """`watch hl-smi` logged twice: 8 Gaudis at two ticks; a damaged device row is a counted warning."""
    table = (DATA / "hl_smi_table_hl225.txt").read_text()
    damaged = table.replace("|   3  HL-225              N/A  | 0000:9a:00.0     N/A |                   0  |\n",
                            "|   3  HL-225 0000:9a:00.0 |\n")
    path = tmp_path / "watch.log"
    path.write_text(table + damaged)
    bundle = read_paths([path])
    tel = bundle.telemetry
    assert tel["time"].nunique() == 2
    assert (tel.groupby("gpu").size() == [2, 2, 2, 1, 2, 2, 2, 2]).all()
    assert any("skipped 1" in w for w in bundle.warnings), bundle.warnings


def test_xpu_smi_stats_tiles_are_devices():
    """xpu-smi stats: each tile's reading from "Tile 0: 143; Tile 1: 97"; the engine lists over several lines are
    no reading; the memory's used share is not its activity when the bandwidth column is there."""
    tel = read_paths([DATA / "xpu_smi_stats_aurora.txt"]).telemetry.sort_values("gpu")
    assert tel["power_w"].tolist() == [143.0, 97.0]
    assert tel["util_pct"].isna().all() and tel["mem_util_pct"].isna().all()
    assert headers.meaning("GPU Memory Bandwidth (%)").role == "mem_util_pct"


@pytest.mark.parametrize("name", ["hl_smi_table_hl225.txt", "rocm_smi_concise_mi300x.txt"])
def test_training_log_that_printed_a_snapshot_keeps_its_steps(tmp_path, name):
    """A job log that printed hl-smi / rocm-smi once before training is a training log: its 60 step lines are read
    (the tool's lines must be most of a file for its table reader to take it)."""
    steps = "".join(f"2024-05-01 10:00:{i:02d} INFO step {i}/500 | loss {3 - i * 0.01:.3f} | step time 812 ms\n"
                    for i in range(60))
    path = tmp_path / "train.log"
    path.write_text((DATA / name).read_text() + steps)
    assert detect.detect(path) == "lines"
    assert len(read_paths([path]).steps) == 60


def test_message_above_a_csv_header_is_a_counted_skip():
    """rocm-smi --csv after its "WARNING: Unlocked monitor_devices lock" line: the header below it is read and the
    warning line counted, never taken for the header."""
    bundle = read_paths([DATA / "rocm_smi_csv_v2_warning.csv"])
    assert len(bundle.telemetry) == 2
    assert any("line 1: a line above the header 'WARNING" in w for w in bundle.warnings), bundle.warnings


def test_damaged_outputs_are_bounded_and_counted(tmp_path):
    """A tpu-info table of 20,000 rows is read in pieces (all rows kept); 2,000 distinct rocm-smi keys for one GPU
    keep the first 512 and count the rest; a box of lines with no header above a rule is counted, not kept."""
    rows = "".join(f"│ {i % 8}      │ 1.00 GiB / 31.25 GiB     │     {i % 100}.00% │\n" for i in range(20_000))
    table = ("┏━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┓\n"
             "┃ Device ┃ HBM usage                ┃ Duty cycle ┃\n"
             "┡━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━┩\n" + rows +
             "└────────┴──────────────────────────┴────────────┘\n")
    path = tmp_path / "tpu.log"
    path.write_text(table)
    assert len(read_paths([path]).telemetry) == 20_000
    keys = "".join(f"GPU[0]\t\t: Voltage point {i} (mV): {i % 900}\n" for i in range(2_000))
    kv = tmp_path / "kv.txt"
    kv.write_text("GPU[0]\t\t: Average Graphics Package Power (W): 237.0\n" + keys)
    bundle = read_paths([kv])
    assert bundle.telemetry["power_w"].tolist() == [237.0]
    assert any("more than 512 readings" in w for w in bundle.warnings), bundle.warnings
    junk = tmp_path / "junk.txt"
    small = table.split("│ 3 ")[0].rsplit("\n", 1)[0] + "\n└────────┘\nOther table\n"
    junk.write_text(small + "".join("| a | b | c |\n" for _ in range(300)) + "+---+\n")
    bundle = read_paths([junk])
    assert len(bundle.telemetry) == 3
    assert any("box lines without a table header" in w for w in bundle.warnings), bundle.warnings


def test_xpu_smi_device_keeps_at_most_512_readings(tmp_path):
    """xpu-smi stats: sections of ever-new keys under one device (a damaged or endless box) keep the first 512 keys
    and count the rest, like rocm-smi's GPU[N] lines."""
    rule = "+" + "-" * 29 + "+" + "-" * 30 + "+\n"
    sections = "".join("".join(f"| Key {s}.{i:<20d} | {i % 90:<28d} |\n" for i in range(200)) + rule
                       for s in range(4))
    path = tmp_path / "xpu.txt"
    path.write_text(rule + "| Device ID                   | 0                            |\n" + rule +
                    "| GPU Utilization (%)         | 55                           |\n" + rule + sections)
    bundle = read_paths([path])
    assert bundle.telemetry["util_pct"].tolist() == [55.0]
    assert any("skipped 289 of" in w and "more than 512 readings for device 0" in w for w in bundle.warnings), \
        bundle.warnings


@pytest.mark.timeout(120)
def test_wide_tables_are_bounded_work_and_misplaced_rows_counted(tmp_path):
    """A header of 20,000 headings (each value used to be matched against every heading, and each word of
    rocm-smi's second header line against every column: quadratic, minutes) is read in well under a minute; a rocm-smi
    row whose device cell runs into the next column is a counted skip, not a traceback."""
    import time

    n = 20_000
    box = ("| AIP  Util(%)  Temp(C)  " + "  ".join(f"k{i}" for i in range(n)) + " |\n|" + "=" * 20 + "|\n"
           "| 0    5        40       " + "  ".join("1".ljust(len(f"k{i}")) for i in range(n)) + " |\n+" + "-" * 20 + "+\n")
    amd = ("GPU  Temp  Power  " + "  ".join(f"k{i}" for i in range(n)) + "\n     (Junction)    " +
           "  ".join(f"(j{i})" for i in range(n)) + "\n" + "=" * 40 + "\n0    31c   3.0W   " +
           "  ".join("1".ljust(len(f"k{i}")) for i in range(n)) + "\n" + "=" * 40 + "\n")
    real = (DATA / "rocm_smi_concise_mi300x.txt").read_text().split("\n")
    for name, text, reader in (("box.txt", (DATA / "hl_smi_table_hl225.txt").read_text() + "\n" * 70_000 + box,
                                "box_table"),
                               ("amd.txt", "\n".join(real) + "\n" * 70_000 + amd, "amd_smi_text")):
        path = tmp_path / name  # the wide table past the 64 KiB head, so a real table decides the format
        path.write_text(text)
        assert detect.detect(path) == reader
        start = time.perf_counter()
        assert len(read_paths([path]).telemetry) > 0
        # bounded work: a quadratic read took minutes; the linear one takes ~6 s alone on 2 cores and passed 10 s
        # under a loaded -n 2 run (a timing bound a loaded machine must not fail)
        assert time.perf_counter() - start < 60
    real.insert(4, "0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1")
    shifted = tmp_path / "shifted.txt"
    shifted.write_text("\n".join(real))
    bundle = read_paths([shifted])
    assert len(bundle.telemetry) == 8
    assert any("line 5: a row not under the table's columns" in w for w in bundle.warnings), bundle.warnings


def test_no_utilization_is_no_evidence_of_health():
    """xpu-smi printing N/A utilization (intel/xpumanager#98): power and clocks alone never make a Healthy verdict."""
    d = diagnose(read_paths([DATA / "xpu_smi_dump_max1550.csv"]))
    assert d.verdict["id"] != ids.HEALTHY
    assert "no utilization values" in d.verdict["sentence"]


def test_every_corpus_file_has_an_expectation():
    assert {p.name for p in DATA.iterdir() if p.name not in ("expected.json", "SOURCES.md")} == set(EXPECTED)


if __name__ == "__main__":  # score the corpus: read right / misread / refused
    for name in sorted(EXPECTED):
        found = problems(name)
        verdict = ("read right" if not found else "refused" if found[0].startswith(("refused", "no rows"))
                   else "misread")
        print(f"{name:36s} {verdict:10s} {'; '.join(found)[:300]}")


NVITOP = """\
Wed Feb 19 11:44:37 2025
╒═════════════════════════════════════════════════════════════════════════════╕
│ NVITOP 1.4.2       Driver Version: 550.90.12      CUDA Driver Version: 12.4 │
├───────────────────────────────┬──────────────────────┬──────────────────────┤
│ GPU  Name        Persistence-M│ Bus-Id        Disp.A │ MIG M.   Uncorr. ECC │
│ Fan  Temp  Perf  Pwr:Usage/Cap│         Memory-Usage │ GPU-Util  Compute M. │
╞═══════════════════════════════╪══════════════════════╪══════════════════════╪════════════════════╕
│   0  H800                Off  │ 00000000:18:00.0 Off │ Disabled           0 │ MEM: ▏ 0.0%        │
│ N/A   36C    P0    85W / 700W │   3.50MiB / 79.65GiB │      0%      Default │ UTL: ▏ 0%          │
├───────────────────────────────┼──────────────────────┼──────────────────────┼────────────────────┤
│   1  H800                Off  │ 00000000:3A:00.0 Off │ Disabled           0 │ MEM: ▏ 0.0%        │
│ N/A   37C    P0    83W / 700W │   3.50MiB / 79.65GiB │      0%      Default │ UTL: ▏ 0%          │
╘═══════════════════════════════╧══════════════════════╧══════════════════════╧════════════════════╛
[ CPU: ▏ 0.3%                                UPTIME: 22:52:42 ]  ( Load Average:  0.15  0.07  0.08 )

╒══════════════════════════════════════════════════════════════════════════════════════════════════╕
│ Processes:                                                                          root@pm-93f2 │
│ GPU     PID      USER  GPU-MEM %SM  %CPU  %MEM  TIME  COMMAND                                    │
╞══════════════════════════════════════════════════════════════════════════════════════════════════╡
│  No running processes found                                                                      │
╘══════════════════════════════════════════════════════════════════════════════════════════════════╛
"""


def test_nvitop_one_shot_table_reads_its_devices(tmp_path):
    """`nvitop -1` (8 H800 in a public deployment note, code search id 39089211520; the layout is nvitop's
    `header_lines`, code search id 1577286456): the nvidia-smi table drawn with │, and a bar-graph cell right of each
    device line that no heading names. box_table claimed it and read nothing ("no device rows": every device line
    has one cell more than its header line); the extra cell is passed over."""
    path = tmp_path / "nvitop.txt"
    path.write_text(NVITOP)
    assert detect.detect(path) == "box_table"
    tel = read_paths([path]).telemetry
    assert tel["gpu"].tolist() == [0, 1] and tel["util_pct"].tolist() == [0, 0]
    assert tel["power_w"].tolist() == [85, 83] and tel["power_limit_w"].tolist() == [700, 700]
    assert tel["temp_c"].tolist() == [36, 37] and tel["mem_used_mib"].tolist() == [3.5, 3.5]
    assert tel["mem_total_mib"].tolist() == pytest.approx([79.65 * 1024] * 2)
