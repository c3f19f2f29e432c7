"""Influx line protocol: the escape-aware split is linear (a regex per piece, not a loop per character) and cuts
exactly as the protocol's rules read one character at a time."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from playbook.readers import influx


def _reference_split(text: str, sep: str, quotes: bool) -> list[str]:
    """The rule, character by character: a backslash escapes the next character (kept as written); with `quotes`
    a `"` opens or closes a string inside which `sep` does not cut."""
    out, cur, esc, inq = [], "", False, False
    for ch in text:
        if esc:
            cur, esc = cur + ch, False
        elif ch == "\\":
            cur, esc = cur + ch, True
        elif quotes and ch == '"':
            cur, inq = cur + ch, not inq
        elif ch == sep and not inq:
            out, cur = out + [cur], ""
        else:
            cur += ch
    return out + [cur]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["\\", '"', " ", ",", "=", "a", "1i", "\\ ", '\\"', "é"]), max_size=16).map("".join))
def test_split_cuts_as_the_rule_reads(text):
    for sep, quotes in ((" ", True), (",", False), (",", True)):
        assert influx._split(text, sep, quotes) == _reference_split(text, sep, quotes)


def test_escapes_in_tags_and_fields():
    line = r'nvidia_smi,host=node\ 1,index=0,name=NVIDIA\ A100\,SXM4 utilization_gpu=96i,note="a \"b\", c" 1764615600'
    measurement, tags, fields, ts = influx.parse(line)
    assert (measurement, tags["host"], tags["name"]) == ("nvidia_smi", "node 1", "NVIDIA A100,SXM4")
    assert fields == {"utilization_gpu": 96.0} and ts == 1764615600


def test_backslash_heavy_megabyte_lines_are_linear():
    """1 MB lines of escapes, quoted escapes and escaped separators: each parsed (or refused) in well under a
    second-scale bound (a loop per character took seconds; a backtracking regex would take minutes)."""
    for body in ("\\", '\\"', "\\ ", "\\,", '"\\', "a\\=b,"):
        line = "m,index=0 " + body * ((1 << 20) // len(body)) + "=1 17"
        started = time.perf_counter()
        influx.parse(line)
        assert time.perf_counter() - started < 5


def test_telegraf_file_of_escaped_names(tmp_path):
    """Telegraf escapes the space in every GPU name: 20,000 such lines, every value read."""
    lines = [f"nvidia_smi,host=n1,index={i % 4},name=NVIDIA\\ A100-SXM4-80GB,uuid=GPU-{i % 4} "
             f"utilization_gpu={i % 100}i,memory_used={i}i {1764615600 + i // 4}000000000" for i in range(20_000)]
    p = tmp_path / "telegraf.influx"
    p.write_text("\n".join(lines) + "\n")
    tel = influx.read(p).telemetry
    assert len(tel) == 20_000 and sorted(tel["gpu"].unique()) == [0, 1, 2, 3]
    assert tel["util_pct"].sum() == sum(i % 100 for i in range(20_000))
