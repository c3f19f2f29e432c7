"""Damaged and hostile inputs to the table readers: odd encodings, gzip bombs and corrupt streams, a size
budget, bad records. Each gives a one-line error or a counted warning, never a traceback or unbounded memory."""

import gzip
import json
import zlib

import pytest

from playbook.core.errors import InputError
from playbook.readers import kineto, read_file, textio

CSV = ("timestamp, index, utilization.gpu [%], power.draw [W]\r\n"
       "2024/01/15 10:00:00.000, 0, 97 %, 612.40 W\r\n"
       "2024/01/15 10:00:00.000, 1, 12 %, 190.10 W\r\n")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_bom_encodings_read_like_utf8(tmp_path, encoding):
    p = tmp_path / "smi.csv"
    p.write_bytes(CSV.encode(encoding))  # PowerShell's `>` writes UTF-16 with a BOM
    t = read_file(p).telemetry
    assert sorted(t["gpu"]) == [0, 1] and sorted(t["util_pct"]) == [12.0, 97.0]


def test_bomless_utf16_nuls_and_latin1_read_with_a_note(tmp_path):
    p = tmp_path / "le.csv"
    p.write_bytes(CSV.encode("utf-16-le"))
    assert len(read_file(p).telemetry) == 2
    q = tmp_path / "latin.csv"
    q.write_bytes(("time,host,gpu,util\n2024-01-15T10:00:00Z,nœud-é,0,97\n2024-01-15T10:00:01Z,nœud-é,0,\x0095\n")
                  .replace("œ", "o").encode("latin-1"))
    b = read_file(q)
    assert set(b.telemetry["host"]) == {"noud-é"} and list(b.telemetry["util_pct"]) == [97.0, 95.0]
    assert any("NUL" in w for w in b.warnings) and any("Latin-1" in w for w in b.warnings)


def _bomb(path, mib: int) -> None:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as fh:
        fh.write(z.compress(b"timestamp, index, utilization.gpu [%]\n"))
        block = b"0" * (1 << 20)
        for _ in range(mib):
            fh.write(z.compress(block))
        fh.write(z.flush())


def test_gzip_bomb_is_a_one_line_refusal(tmp_path, monkeypatch):
    p = tmp_path / "bomb.csv.gz"
    monkeypatch.setattr(textio, "RATIO_FLOOR_BYTES", 4 << 20)  # the same rule, scaled down to stay quick
    _bomb(p, 64)  # 64 MiB of zeros in ~64 KiB: a ratio of ~1000
    with pytest.raises(InputError) as info:
        read_file(p)
    msg = str(info.value)
    assert "\n" not in msg and "decompression bomb" in msg and str(p) in msg


def test_size_budget_is_configurable_and_refuses_in_one_line(tmp_path, monkeypatch):
    p = tmp_path / "smi.csv"
    p.write_text(CSV * 200)
    monkeypatch.setenv("PLAYBOOK_MAX_BYTES", "16K")
    with pytest.raises(InputError, match="more than 16 KiB.*PLAYBOOK_MAX_BYTES") as info:
        read_file(p)
    assert "\n" not in str(info.value)
    monkeypatch.setenv("PLAYBOOK_MAX_BYTES", "lots")
    with pytest.raises(InputError, match="PLAYBOOK_MAX_BYTES must be a size"):
        textio.max_bytes()


def test_corrupt_and_truncated_gzip(tmp_path):
    ticks = "".join(f"2024/01/15 10:{k // 60:02d}:{k % 60:02d}.000, {g}, 50 %, 300.00 W\r\n"
                    for k in range(2000) for g in (0, 1))  # one sample per GPU and second
    good = gzip.compress((CSV + ticks).encode())
    p = tmp_path / "corrupt.csv.gz"
    p.write_bytes(good[:10] + bytes(b ^ 0x5A for b in good[10:200]) + good[200:])
    with pytest.raises(InputError) as info:
        read_file(p)
    assert "\n" not in str(info.value) and str(p) in str(info.value)
    q = tmp_path / "cut.csv.gz"
    q.write_bytes(good[: len(good) // 2])  # a log still being written: keep what decompresses
    b = read_file(q)
    assert len(b.telemetry) > 100 and any("truncated" in w for w in b.warnings)


def test_one_bad_kineto_event_is_skipped_not_the_trace(tmp_path):
    ok = {"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0, "dur": 2.0, "pid": 0, "tid": 7,
          "args": {"stream": 7, "correlation": 5}}
    events = [ok, dict(ok, name={"nested": 1}), dict(ok, ph=["X"]), dict(ok, args={"correlation": 2**70}),
              dict(ok, pid=10**30), dict(ok, ts=10**400), dict(ok, ts=3.0)]
    p = tmp_path / "trace.json"
    p.write_text(json.dumps({"traceEvents": events}))
    b = kineto.read(p)
    assert len(b.trace) == 4  # ok, the huge correlation (-1), the huge pid (-1), ts=3
    assert sorted(b.trace["correlation"]) == [-1, 5, 5, 5]
    [w] = b.warnings
    assert "skipped 3 of 7" in w and "object or list" in w


def test_kineto_whitespace_between_events_is_read(tmp_path):
    ok = json.dumps({"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0, "dur": 2.0, "pid": 0, "tid": 7})
    p = tmp_path / "spaced.json"
    p.write_text('{"traceEvents": [' + ok + "," + " " * (3 << 20) + ok + "\n" * (2 << 20) + "]}")
    assert len(kineto.read(p).trace) == 2


def test_generic_csv_memory_is_bounded_by_the_block_not_the_file(tmp_path, monkeypatch):
    """The named-column CSV reader streams blocks too: a 12 MB table whose text is mostly a column that becomes
    no metric peaks (Python-side, tracemalloc) far below its size."""
    import tracemalloc

    from playbook.readers import generic_csv

    note = "x" * 1500
    path = tmp_path / "wide.csv"
    path.write_text("time,gpu,util_pct,note\n" + "".join(f"{1705312800 + k // 8},{k % 8},{k % 101},{note}\n"
                                                          for k in range(8000)))
    monkeypatch.setattr(generic_csv, "BLOCK_BYTES", 256 << 10)
    tracemalloc.start()
    try:
        bundle = generic_csv.read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(bundle.telemetry) == 8000 and bundle.telemetry["util_pct"].sum() == sum(k % 101 for k in range(8000))
    assert path.stat().st_size > 12e6 and peak < path.stat().st_size / 3, peak
