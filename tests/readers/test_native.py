"""The C extension (readers/_native.c) changes the readers' speed, never their tables. Its row parser: every value it
accepts is the value the pyarrow path reads, and every row it cannot read the same way it refuses, whole.

Checked here against the pyarrow path itself, on logs drawn at random from values nvidia-smi writes and values
that merely look like them (units glued or spaced, [N/A], exponents, signs, dates that do not exist, clocks in a
zone's DST gap, non-ASCII names, short and long rows), and bit for bit on numbers against Arrow's cast. Its
transpose: a table built from a reader's pieces equals the one built from the joined arrays.
"""

from __future__ import annotations

import random
import shutil
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from playbook.core.errors import InputError
from playbook.readers import native, nvidia_smi
from playbook.readers.nvidia_smi import convert

NATIVE = native.C

needs_native = pytest.mark.skipif(NATIVE is None, reason="the C parser is not built here (no C compiler)")


def test_the_c_parser_is_built_wherever_a_c_compiler_is():
    """`make setup` (pip install -e .) builds it; a silent build failure would leave every log on the slow path."""
    if sys.platform.startswith("linux") and (shutil.which("cc") or shutil.which("gcc")):
        assert NATIVE is not None, "setup.py's extension was not built: run `pip install -e .` again"


NUMBERS = ["0", "7", "79", "100", "250.55", "1e3", "1.5e2", "-3", "-0", "0.000001", "123456789012345",
           "3.14159265358979", "1234567890123456789", ".5", "5.", "+5", "inf", "nan", "0x1F", "1e400", "1e-400",
           "00012", "1e+2", "2E-3", "1e", "--1", "1.2.3"]
SUFFIXES = ["", " %", "%", " MiB", " W", " MHz", " C", " KiB", " GB", "  ", " ms", "s"]  # the last two: no unit
NA_VALUES = ["[N/A]", "[Not Supported]", "N/A", "", " ", "-", "Default", "[GPU is lost]", "n/a"]
TIMES = ["2024/01/15 10:23:45.123", "2024/01/15 10:23:46", "2024-01-15 10:23:47.5", "2024/02/29 00:00:00.000",
         "2023/02/29 00:00:00.000", "2024/13/01 00:00:00", "2024/01/15 24:00:00", "2024/01/15T10:23:45",
         "2024/03/10 02:30:00.000", "1700000000", "2024/01/15 10:23:45.1234567891", "2024/1/15 10:23:45",
         "", "[N/A]", "2024/11/03 01:30:00.250"]
IDENTS = ["00000000:01:00.0", "00000000:02:00.0", "00000000:81:00.0", " 00000000:41:00.0 ", "GPU-4a3b", "[N/A]",
          "", "00000000:C1:00.0\t"]
NAMES = ["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "Tesla V100-PCIE-16GB", "NVIDIA GeForce RTX 4090",
         "Quadro\u00a0RTX", "[N/A]", ""]
FLAGS = ["Active", "Not Active", " Active ", "[N/A]", "active", ""]
HEXES = ["0x0000000000000000", "0x0000000000000001", "0x0000000000000004", "[N/A]", "0x00000000000000G1"]

FIELDS = {  # --query-gpu field: how its values are drawn
    "timestamp": "time", "index": "index", "pci.bus_id": "ident", "name": "name", "utilization.gpu": "num",
    "memory.used": "num", "power.draw": "num", "clocks.sm": "num", "temperature.gpu": "num",
    "clocks_event_reasons.active": "hex", "clocks_event_reasons.sw_power_cap": "flag", "pstate": "text",
}


def _value(rng: random.Random, kind: str, row: int, clean: bool) -> str:
    if kind == "time":
        return f"2024/01/15 10:{row // 600 % 60:02d}:{row // 10 % 60:02d}.{row % 1000:03d}" if clean \
            else rng.choice(TIMES)
    if kind == "index":
        return str(row % 4) if clean else rng.choice(["0", "3", "1.0", "-1", "[N/A]", "2.5", "", "7 %"])
    if kind == "ident":
        return IDENTS[row % 3] if clean else rng.choice(IDENTS)
    if kind == "name":
        return NAMES[0] if clean else rng.choice(NAMES)
    if kind == "flag":
        return rng.choice(FLAGS[:2] if clean else FLAGS)
    if kind == "hex":
        return rng.choice(HEXES[:3] if clean else HEXES)
    if kind == "text":
        return rng.choice(["P0", "P2", "[N/A]"])
    if clean:
        return f"{rng.choice(NUMBERS[:12])}{rng.choice(SUFFIXES[:-2])}"
    return rng.choice([f"{rng.choice(NUMBERS)}{rng.choice(SUFFIXES)}", rng.choice(NA_VALUES)])


def _log(rng: random.Random, rows: int) -> str:
    """An nvidia-smi log of a random field set; most rows clean, some pieces with one odd value or row."""
    names = rng.sample(list(FIELDS), rng.randint(2, len(FIELDS)))
    if rng.random() < 0.8:
        names = ["timestamp"] + [n for n in names if n != "timestamp"]
    header = ", ".join(f"{n} [%]" if FIELDS[n] == "num" and rng.random() < 0.3 else n for n in names)
    odd = rng.random() < 0.6
    lines = [header]
    for r in range(rows):
        cells = [_value(rng, FIELDS[n], r, clean=not (odd and rng.random() < 0.02)) for n in names]
        line = ", ".join(cells)
        if odd and rng.random() < 0.003:
            line = rng.choice([line + ", 5", line.rsplit(",", 1)[0], "", "  "])
        lines.append(line)
    return "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")


def _read(path, use_c: bool, tz: str):
    native.C = NATIVE if use_c else None
    try:
        bundle = nvidia_smi.read(path, tz=tz)
    except InputError as exc:
        return str(exc)
    finally:
        native.C = NATIVE
    return bundle


@needs_native
@pytest.mark.parametrize("seed", range(40))
def test_random_logs_read_the_same_with_and_without_the_c_parser(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(nvidia_smi, "FAST_MIN_BYTES", 0)  # every piece through the fast paths, small as it is
    rng = random.Random(seed)
    path = tmp_path / "smi.csv"
    path.write_text(_log(rng, rng.choice([3, 40, 400])), encoding="utf-8")
    tz = rng.choice(["UTC", "UTC", "America/New_York"])
    slow, fast = _read(path, False, tz), _read(path, True, tz)
    if isinstance(slow, str):
        assert fast == slow
        return
    pd.testing.assert_frame_equal(fast.telemetry, slow.telemetry, check_exact=True)
    assert fast.warnings == slow.warnings
    assert fast.meta == slow.meta
    if slow.events is None:
        assert fast.events is None
    else:
        pd.testing.assert_frame_equal(fast.events, slow.events)


@needs_native
def test_the_c_parser_reads_clean_pieces_and_refuses_odd_ones():
    """Which of the random logs' pieces the C parser took: it must take the clean ones (or it saves nothing) and
    refuse a piece with any value it cannot read as the pyarrow path does."""
    outs = [np.empty(2, dtype=np.int64), np.empty(2), np.empty(2, dtype=np.int64)]
    rows = b"2024/01/15 10:23:45.123, 79 %, 00000000:01:00.0\n2024/01/15 10:23:45.123, [N/A], 00000000:02:00.0\n"
    assert NATIVE.parse_rows(rows, b"tfd", outs, 2) == [None, None, ["00000000:01:00.0", "00000000:02:00.0"]]
    assert outs[1][0] == 79 and np.isnan(outs[1][1]) and list(outs[2]) == [0, 1]
    assert outs[0][0] == pd.Timestamp("2024-01-15 10:23:45.123").value
    outs3 = [np.empty(3, dtype=np.int64), np.empty(3), np.empty(3, dtype=np.int64)]
    for odd in (b"2024/01/15 10:23:45.123, N/A, x\n", b"2024/01/15 10:23:45.123, 79 %\n",
                b"2024/01/15 10:23:45.123, 79 %, x, y\n", b"1705314225, 79 %, x\n", b"2024/01/15 10:23:45, 7e %, x\n"):
        assert NATIVE.parse_rows(odd + rows, b"tfd", outs3, 3) is None
    assert NATIVE.parse_rows(rows, b"tfd", outs3, 3) is None  # fewer lines than rows expected
    assert NATIVE.parse_rows(rows, b"tfd", outs, 1) is None  # more


@needs_native
def test_numbers_are_arrows_numbers_bit_for_bit():
    rng = np.random.default_rng(7)
    values = [f"{v:.{d}f}" for v, d in zip(rng.uniform(-1e6, 1e6, 4000), rng.integers(0, 9, 4000), strict=True)]
    values += [f"{v:.{d}e}" for v, d in zip(rng.uniform(-1e3, 1e3, 2000), rng.integers(0, 12, 2000), strict=True)]
    values += [str(int(v)) for v in rng.integers(0, 10**15, 2000)]
    data = "".join(v + "\n" for v in values).encode()
    out = np.empty(len(values))
    assert NATIVE.parse_rows(data, b"f", [out], len(values)) is not None
    expected = pc.cast(pa.array(values), pa.float64()).to_numpy()
    assert out.view(np.int64).tolist() == expected.view(np.int64).tolist()


@needs_native
def test_newline_offsets_match_numpys():
    data = bytes(np.random.default_rng(3).choice([10, 44, 48, 65], size=100_000).astype(np.uint8))
    expected = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    assert np.frombuffer(NATIVE.newlines(data), dtype=np.int64).tolist() == expected.tolist()
    assert NATIVE.newlines(b"") == b"" and NATIVE.newlines(b"abc") == b""


@needs_native
def test_the_c_parser_takes_most_random_logs_written_cleanly(tmp_path, monkeypatch):
    """The equality test above proves nothing if every piece is refused: most of its logs must go through C."""
    monkeypatch.setattr(nvidia_smi, "FAST_MIN_BYTES", 0)
    taken = []
    real = convert._parse_native
    monkeypatch.setattr(convert, "_parse_native", lambda *a: taken.append(real(*a) is not None) or real(*a))
    for seed in range(40):
        rng = random.Random(seed)
        path = tmp_path / f"smi{seed}.csv"
        path.write_text(_log(rng, rng.choice([3, 40, 400])), encoding="utf-8")
        _read(path, True, "UTC")
    assert sum(taken) >= len(taken) // 2, f"{sum(taken)} of {len(taken)} pieces read in C"


@needs_native
@pytest.mark.parametrize("width,ticks,dtype", [(1, 7, np.float64), (3, 5, np.int32), (8, 300, np.int64),
                                               (64, 50, np.float64), (500, 3, np.int64)])
def test_transpose_moves_pieces_into_gpu_order_as_numpy_does(width, ticks, dtype):
    rng = np.random.default_rng(width)
    rows = rng.integers(-1000, 1000, width * ticks).astype(dtype)
    perm = rng.permutation(width)
    pieces = np.split(rows, sorted(rng.integers(0, len(rows), 4)))  # cuts anywhere, empty pieces too
    out = np.empty_like(rows)
    NATIVE.transpose(pieces, width, rows.itemsize, perm.astype(np.int64).tobytes(), out)
    assert out.tolist() == rows.reshape(-1, width)[:, perm].T.ravel().tolist()


@needs_native
def test_transpose_refuses_what_is_not_a_table():
    rows, out = np.arange(12.0), np.empty(12)
    for width, perm, target in ((5, np.arange(5), out), (4, np.array([0, 1, 1, 3]), out), (4, np.arange(4), out[:8]),
                                (4, np.array([0, 1, 2, 4]), out), (0, np.arange(0), out)):
        with pytest.raises(ValueError):
            NATIVE.transpose([rows], width, 8, perm.astype(np.int64).tobytes(), target)


@needs_native
def test_a_table_built_from_pieces_is_the_table_built_from_joined_arrays():
    from playbook.readers import frames

    ticks, width = 40, 4
    time_ns = np.repeat(np.arange(ticks) * 10**9, width) + 1_700_000_000 * 10**9
    gpu = np.tile([2, 0, 3, 1], ticks)
    util = np.random.default_rng(1).uniform(0, 100, ticks * width)

    def table(pieces: bool):
        native.C = NATIVE if pieces else None
        try:
            cols = {"time": time_ns.copy(), "gpu": gpu.copy(),
                    "util_pct": frames.joined(np.array_split(util, 7)) if pieces else util.copy()}
            return frames.build_telemetry(cols, "node1", "smi.csv")
        finally:
            native.C = NATIVE

    built = table(True)
    pd.testing.assert_frame_equal(built, table(False), check_exact=True)
    assert built["gpu"].tolist()[:ticks] == [0] * ticks and built["util_pct"].iloc[0] == util[1]
    assert np.asarray(frames.Concat([util[:3], frames.Concat([util[3:5]])])).tolist() == util[:5].tolist()


@needs_native
def test_many_distinct_texts_keep_their_codes_and_too_many_are_refused():
    ids = [f"GPU-{k:08x}" for k in range(5000)]
    rows = [ids[k % 5000] if k % 3 else ids[(k * 7) % 5000] for k in range(20000)]
    out = np.empty(len(rows), dtype=np.int64)
    distinct = NATIVE.parse_rows("".join(r + "\n" for r in rows).encode(), b"d", [out], len(rows))[0]
    assert [distinct[c] for c in out] == rows and len(distinct) == 5000
    assert distinct == list(dict.fromkeys(rows))  # in order of first appearance, as Arrow's dictionary_encode
    many = [f"x{k}" for k in range(70000)]
    out = np.empty(len(many), dtype=np.int64)
    assert NATIVE.parse_rows("".join(r + "\n" for r in many).encode(), b"d", [out], len(many)) is None
