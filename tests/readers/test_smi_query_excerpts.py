"""Excerpts of `nvidia-smi -q` as a shell loop greps them (readers/nvidia_smi/query_text.py): leaf lines without
banner, GPU heading or sections, a `date` line before each poll. The section of a bare leaf is read from its unit
and nvidia-smi's print order (the current clocks print before the application / default / max clocks; Temperature
before Clocks); a GPU's key again inside a poll is the poll's next GPU. Written here in nvidia-smi's layout (keys
padded to column 42 on current drivers, 36 on the 2018 drivers of tests/data/eval/heldout38's real paste)."""

from __future__ import annotations

import pytest

from playbook.core.errors import InputError
from playbook.readers import read_file


def _kv(key: str, value: str, width: int = 42, indent: int = 8) -> str:
    return f"{' ' * indent}{key:<{width - indent}}: {value}"


def test_a_dated_loop_reads_each_poll_at_its_date_and_the_current_clocks_only(tmp_path):
    polls = []
    for s, (clock, temp, util) in enumerate([(1980, 61, 97), (1410, 83, 96), (1395, 84, 97), (1980, 62, 98)]):
        polls += [f"Tue Mar  5 09:1{s}:00 UTC 2024",
                  _kv("Gpu", f"{util} %"), _kv("GPU Current Temp", f"{temp} C"), _kv("Power Draw", "388.10 W"),
                  _kv("Graphics", f"{clock} MHz"), _kv("SM", f"{clock} MHz"), _kv("Memory", "1593 MHz"),
                  _kv("Graphics", "1410 MHz"), _kv("Memory", "1593 MHz"),  # Applications Clocks
                  _kv("Graphics", "1980 MHz"), _kv("SM", "1980 MHz"), _kv("Memory", "1593 MHz")]  # Max Clocks
    p = tmp_path / "watch.log"
    p.write_text("\n".join([_kv("GPU Current Temp", "60 C"), _kv("Graphics", "1980 MHz")] + polls) + "\n")
    b = read_file(p)
    t = b.telemetry.sort_values("time")
    assert len(t) == 4 and set(t["gpu"]) == {0}
    assert list(t["sm_clock_mhz"]) == [1980, 1410, 1395, 1980]
    assert list(t["temp_c"]) == [61, 83, 84, 62] and list(t["util_pct"]) == [97, 96, 97, 98]
    assert list(t["power_w"]) == [388.1] * 4 and list(t["mem_clock_mhz"]) == [1593] * 4
    assert [str(x) for x in t["time"].dt.strftime("%H:%M")] == ["09:10", "09:11", "09:12", "09:13"]
    assert "a line before the first `date` line" in " ".join(b.warnings)


def test_a_poll_of_several_gpus_in_print_order_is_one_row_per_gpu(tmp_path):
    lines = []
    for s in range(3):
        lines.append(f"Wed Jan 10 23:59:5{s} CET 2024")
        for gpu, clock in ((0, 1755), (1, 1200)):  # Temperature prints before Clocks in each GPU's section
            lines += [_kv("GPU Current Temp", f"{70 + gpu * 15} C", 36), _kv("Graphics", f"{clock} MHz", 36),
                      _kv("Graphics", "1912 MHz", 36)]  # Max Clocks: skipped
    p = tmp_path / "two.log"
    p.write_text("\n".join(lines) + "\n")
    t = read_file(p).telemetry
    assert len(t) == 6
    per_gpu = t.groupby("gpu")[["sm_clock_mhz", "temp_c"]].mean()
    assert per_gpu.loc[0].tolist() == [1755, 70] and per_gpu.loc[1].tolist() == [1200, 85]


def test_an_undated_excerpt_starts_a_poll_at_each_key_again_on_a_synthetic_clock(tmp_path):
    p = tmp_path / "grep.txt"
    p.write_text("\n".join(x for c in (1500, 1200, 900, 600) for x in (
        _kv("Graphics", f"{c} MHz"), _kv("GPU Current Temp", "90 C"))) + "\n")
    b = read_file(p)
    assert list(b.telemetry.sort_values("time")["sm_clock_mhz"]) == [1500, 1200, 900, 600]
    assert any("synthetic" in w for w in b.warnings)


def test_a_grep_that_kept_the_section_headings_reads_each_leaf_by_its_path(tmp_path):
    lines = []
    for s, clock in enumerate((1410, 1005, 1410)):  # `date; nvidia-smi -q -d CLOCK | grep -A4 Clocks`
        lines += [f"Tue Mar  5 09:1{s}:00 UTC 2024", "    Clocks", _kv("Graphics", f"{clock} MHz"),
                  _kv("SM", f"{clock} MHz"), _kv("Memory", "1593 MHz"), _kv("Video", "1275 MHz"), "--",
                  "    Applications Clocks", _kv("Graphics", "1155 MHz"), _kv("Memory", "1593 MHz"), "--",
                  "    Max Clocks", _kv("Graphics", "1410 MHz"), _kv("SM", "1410 MHz"), _kv("Memory", "1593 MHz"),
                  _kv("Video", "1290 MHz")]
    p = tmp_path / "clocks.log"
    p.write_text("\n".join(lines) + "\n")
    t = read_file(p).telemetry.sort_values("time")
    assert list(t["sm_clock_mhz"]) == [1410, 1005, 1410] and list(t["mem_clock_mhz"]) == [1593] * 3
    assert set(t["gpu"]) == {0}


@pytest.mark.parametrize("text", [
    # other programs' key : value lines, or -q leaf names with the wrong units, are not an excerpt
    "    loss                 : 0.53\n    lr                   : 0.001\n    epoch                : 3\n    step : 4\n",
    "        Graphics                    : enabled\n        Memory                      : 16 GB\n"
    "        Graphics                    : enabled\n        Memory                      : 16 GB\n",
])
def test_other_key_value_text_is_no_excerpt(tmp_path, text):
    p = tmp_path / "other.txt"
    p.write_text(text)
    with pytest.raises(InputError):
        read_file(p)


@pytest.mark.parametrize("stamps", [
    # `date` in the en_US locale of glibc 2.29+ ("%a %d %b %Y %r %Z": 12-hour with AM/PM) and en_GB ("%T")
    ["Thu 05 Dec 2024 11:59:58 AM UTC", "Thu 05 Dec 2024 12:00:03 PM UTC", "Thu 05 Dec 2024 01:00:08 PM UTC"],
    ["Thu 05 Dec 2024 11:59:58 UTC", "Thu 05 Dec 2024 12:00:03 UTC", "Thu 05 Dec 2024 13:00:08 UTC"],
])
def test_a_date_line_in_the_day_first_locales_is_the_poll_time(tmp_path, stamps):
    p = tmp_path / "loop.log"
    p.write_text("\n".join(x for s, c in zip(stamps, (1410, 1005, 900), strict=True) for x in (
        s, _kv("Graphics", f"{c} MHz"), _kv("GPU Current Temp", "80 C"))) + "\n")
    t = read_file(p).telemetry.sort_values("time")
    assert list(t["sm_clock_mhz"]) == [1410, 1005, 900]
    assert [str(x) for x in t["time"].dt.strftime("%H:%M:%S")] == ["11:59:58", "12:00:03", "13:00:08"]
