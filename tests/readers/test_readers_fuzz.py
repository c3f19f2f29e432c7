"""Property tests: on arbitrary or damaged input, readers raise nothing but PlaybookError subclasses.

Covers every reader module in detect.READERS.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playbook.core.errors import PlaybookError
from playbook.model import schema
from playbook.readers import detect, read_file

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "data" / "readers").iterdir()) + sorted(
    p for p in (Path(__file__).resolve().parents[1] / "data" / "heldout_telemetry").iterdir()
    if p.name not in ("expected.json", "SOURCES.md"))
FUZZ = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text built from the pieces telemetry formats are made of, so the fuzzer reaches deep into the parsers.
PIECES = st.sampled_from([
    ", ", ",", "\n", "\r\n", "---\n", " %", " MiB", " W", " MHz", "[N/A]", "[Not Supported]", "0x0000000000000004",
    "2024/01/15 10:00:00.000", "2024-01-15T10:00:00Z", "1705312800000", "timestamp, index, utilization.gpu [%]\n",
    "# gpu pwr gtemp sm mem mclk pclk\n", "# Idx W C % % MHz MHz\n", "#Entity GPUTL SMACT\n", "GPU 0 ",
    'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n"} ', '{"status":"success","data":{"resultType":"matrix","result":[',
    '{"step": 1, "time": ', "step 3 ", "sec/batch", "| elapsed time per iteration (ms): ", "it/s]", "s/it]",
    "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n", "-", "NaN", "1e309", "\x00",
    "\ufffd", "node1:12:12 [0] NCCL INFO ", '{"traceEvents": [', '{"ph": "X", "ts": 1, "dur": 2}', "]}", "97", "0",
    "-1", "99999999999999999999", "step,rank,duration_s\n", "time,gpu,util\n", "\t", ";",
])
TEXT = st.lists(PIECES | st.text(max_size=12), max_size=40).map("".join)


def _write(data: bytes | str, suffix: str = ".txt") -> tuple[tempfile.TemporaryDirectory, Path]:
    tmp = tempfile.TemporaryDirectory()
    path = Path(tmp.name) / f"input{suffix}"
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_bytes(data)
    return tmp, path


def _check(bundle: schema.Bundle) -> None:
    assert list(bundle.telemetry.columns) == list(schema.TELEMETRY_COLUMNS)
    assert list(bundle.steps.columns) == list(schema.STEP_COLUMNS)
    assert all(isinstance(w, str) and "\n" not in w for w in bundle.warnings)


@FUZZ
@given(data=st.binary(max_size=2048) | TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_read_file_raises_only_playbook_errors(data):
    tmp, path = _write(data)
    with tmp:
        try:
            _check(read_file(path))
        except PlaybookError as exc:
            assert "\n" not in str(exc)


@pytest.mark.parametrize("name", detect.READERS)
def test_each_reader_on_arbitrary_text(name):
    reader = detect.module(name)

    @FUZZ
    @given(text=TEXT)
    def run(text):
        tmp, path = _write(text.encode("utf-8", "surrogatepass"))
        with tmp:
            try:
                reader.sniff(text)
                _check(reader.read(path))
            except PlaybookError:
                pass

    run()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(FIXTURES) - 1), cuts=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1),
                                                                        PIECES | st.text(max_size=6)), max_size=4),
       keep=st.floats(0.05, 1.0))
def test_damaged_fixtures_keep_what_parses(index, cuts, keep):
    """Fixtures cut short and spliced with junk: the reader that takes them raises only PlaybookError."""
    original = FIXTURES[index].read_text(encoding="utf-8")
    text = original
    for start, length, junk in cuts:
        a = int(start * len(text))
        b = min(len(text), a + int(length * 20))
        text = text[:a] + junk + text[b:]
    text = text[: max(1, int(keep * len(text)))]
    tmp, path = _write(text, FIXTURES[index].suffix)
    fields = "utilization.gpu,memory.used" if "nounits" in FIXTURES[index].name else None
    with tmp:
        try:
            # the detected reader itself, not read_file (whose safety net turns any crash into an InputError)
            reader = detect.module(detect.detect(path))
            _check(reader.read(path, fields=fields, interval_s=None))
        except PlaybookError as exc:
            assert "\n" not in str(exc)


@pytest.mark.parametrize("row_fields", [3, 4])  # a row of the header's width, and one pyarrow calls invalid
def test_bytes_that_are_not_text_in_a_csv_are_one_line_naming_the_line(tmp_path, monkeypatch, row_fields):
    """Binary data passes through untranscoded: a non-UTF-8 byte in a row used to make pyarrow's invalid-row
    callback print a traceback on stderr (found by benchmarks/fuzz.py, reader:generic_csv:mutation:1:6)."""
    import sys

    from playbook.core.errors import InputError
    from playbook.readers import generic_csv

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    path = tmp_path / "gpu.csv"
    bad = b"2024-01-15 10:00:01,0,6\x97" + b",9" * (row_fields - 3)
    path.write_bytes(b"timestamp,gpu,utilization.gpu [%]\n2024-01-15 10:00:00,0,50\x01\n" + bad + b"\n")
    with pytest.raises(InputError, match=r"gpu\.csv: line 3: bytes that are not text"):
        generic_csv.read(path)
    assert unraisable == []


def test_bytes_that_are_not_text_in_an_nvidia_smi_csv_are_a_counted_skip(tmp_path, monkeypatch):
    """The nvidia-smi fast path hands such a segment to the line-by-line parser without pyarrow's traceback."""
    import sys

    from playbook.readers import nvidia_smi

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    lines = (Path(__file__).resolve().parents[1] / "data" / "readers" / "smi_units.csv").read_bytes().splitlines(True)
    path = tmp_path / "smi.csv"
    path.write_bytes(lines[0] + lines[1].rstrip() + b"\x01\n" + lines[2].rstrip() + b",\x97\n" + b"".join(lines[3:]))
    bundle = nvidia_smi.read(path)
    assert len(bundle.telemetry) == len(lines) - 2 and unraisable == []
    assert any("skipped 1 of" in w and "line 3" in w for w in bundle.warnings)
