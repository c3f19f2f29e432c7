"""Shared helpers for the readers: opening (possibly compressed) files, host names, synthetic clocks, units.

Nothing here knows a format; each reader module builds on these.
"""

from __future__ import annotations

import bz2
import codecs
import contextvars
import gzip
import io
import itertools
import json
import lzma
import os
import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.readers import collected

HEAD_BYTES = 64 * 1024
# Leading lines the text stream passes over, by path: set (for one read) by files.read_file when a tool's output
# begins after a job's preamble (read_file's retry); a line ends at \r\n, \r or \n, as `decode` reads it
SKIP_LINES: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar("skip_lines", default=None)
_BREAK = re.compile(rb"\r\n|\r|\n")

# Ticks of inputs without timestamps are placed on this fixed, obviously synthetic clock.
SYNTHETIC_EPOCH = pd.Timestamp("1970-01-01", tz="UTC")
DEFAULT_INTERVAL_S = 1.0

_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bz2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
}
_SUFFIXES = {".gz", ".bz2", ".xz", ".zst", ".zstd", ".csv", ".tsv", ".txt", ".log", ".out", ".json", ".jsonl",
             ".ndjson", ".prom", ".metrics", ".err", ".dat", ".xml"}


def _default_max_bytes() -> int:
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        ram = 16 << 30
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]  # `ulimit -v`: address space, not RAM, is the bound
        if limit != resource.RLIM_INFINITY:
            ram = min(ram, limit)
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    return max(1 << 30, ram // 3)


def max_bytes() -> int:
    """The most (decompressed) bytes one input may hold: env PLAYBOOK_MAX_BYTES (bytes, or with a K/M/G suffix),
    default a third of physical memory or of the address-space limit (`ulimit -v`), at least 1 GiB: a reader holds
    the text once plus its parsed columns, so a third leaves room for both and for the analysis after it."""
    text = os.environ.get("PLAYBOOK_MAX_BYTES", "").strip().upper()
    if text:
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1:], 1)
        try:
            value = int(float(text.rstrip("KMGTB") or "x") * scale)
        except ValueError:
            raise InputError(f"PLAYBOOK_MAX_BYTES must be a size such as 4G, not {text!r}") from None
        if value > 0:
            return value
    return _default_max_bytes()


# A compressed input may expand this many times over its compressed size once past RATIO_FLOOR_BYTES. Real text
# logs compress 5-50x (repeated polling lines under zstd -19 reach ~150x); deflate's ceiling is ~1030x, which is
# what bombs use. Below the floor any ratio is accepted (a small file cannot exhaust memory).
MAX_RATIO = 250
RATIO_FLOOR_BYTES = 256 << 20
STREAM_CHUNK = 1 << 20  # bytes per read when streaming


def compression(prefix: bytes) -> str | None:
    """The compression a file's first bytes announce ("gzip", "bz2", "xz", "zstd") or None."""
    for magic, name in _MAGIC.items():
        if prefix.startswith(magic):
            return name
    return None


def zstandard_error() -> type[Exception]:
    """zstandard's error type (or a placeholder when the package is missing)."""
    try:
        import zstandard

        return zstandard.ZstdError
    except ImportError:  # pragma: no cover - zstandard is a dependency
        return RuntimeError


def _latin1_fallback(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: bytes that are not UTF-8 are read as Latin-1 (every byte is a Latin-1 character)."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return exc.object[exc.start:exc.end].decode("latin-1"), exc.end


codecs.register_error("playbook-latin1", _latin1_fallback)

_TEXT_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def text_encoding(head: bytes) -> str:
    """The encoding a file's first (decompressed) bytes announce: a UTF-16/32 BOM, or UTF-16 without one (every
    other byte NUL, as Windows tools write ASCII text); otherwise "utf-8" (with a Latin-1 fallback per byte)."""
    for bom, name in _TEXT_BOMS:
        if head.startswith(bom):
            return name
    sample = head[:4096]
    if len(sample) >= 8:
        even, odd = sample[0::2], sample[1::2]
        # ASCII in UTF-16 puts NUL in every second byte; 90% (not 100%) leaves room for non-ASCII characters
        if odd.count(0) >= 0.9 * len(odd) and even.count(0) <= 0.05 * len(even):
            return "utf-16-le"
        if even.count(0) >= 0.9 * len(even) and odd.count(0) <= 0.05 * len(odd):
            return "utf-16-be"
    return "utf-8"


# Control bytes that text logs do not hold (tab, newlines, form feed, ESC of ANSI colours, backspace and bell of
# progress bars, and NUL, which damaged logs do hold, are left out): one of them in the first 4 KiB makes the data
# binary (a pickle, an image), passed through untouched.
_BINARY_BYTES = bytes(b for b in range(32) if b not in (0, 7, 8, 9, 10, 11, 12, 13, 27))
_NOT_BINARY = bytes(b for b in range(256) if b not in _BINARY_BYTES)


def is_binary(head: bytes) -> bool:
    """True when the first bytes hold control characters no text log has (see _BINARY_BYTES), UTF-16/32 aside."""
    sample = head[:4096]
    return bool(sample.translate(None, _NOT_BINARY)) and text_encoding(sample) == "utf-8"


class TextStream(io.RawIOBase):
    """A file's bytes as UTF-8, streamed: decompressed (gzip/bz2/xz/zstd, found from magic bytes, not the name),
    transcoded from UTF-16/32, NUL bytes dropped, bytes that are not UTF-8 read as Latin-1, within the size budget
    (`max_bytes`) and the compression-ratio cap (`MAX_RATIO`). Every failure is an InputError naming the file.

    `notes` collects one-line warnings (lossy decoding, a truncated stream) for the reader's bundle.
    """

    def __init__(self, path: str | Path, budget: int | None = None, convert: bool = True) -> None:
        super().__init__()
        self.convert = convert
        self.path = Path(path)
        self.budget = max_bytes() if budget is None else budget
        self.notes: list[str] = []
        self.kind: str | None = None
        self._out = 0
        self._nul = 0
        self._latin1 = False
        self._pending = b""
        self._eof = False
        try:
            self._raw = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read ({exc.strerror or exc})") from None
        self._src = self._raw
        try:
            self.kind = compression(self._raw.read(6))
            self._raw.seek(0)
            if self.kind == "gzip":
                self._src = gzip.GzipFile(fileobj=self._raw, mode="rb")
            elif self.kind == "bz2":
                self._src = bz2.BZ2File(self._raw, mode="rb")
            elif self.kind == "xz":
                self._src = lzma.LZMAFile(self._raw, mode="rb")
            elif self.kind == "zstd":
                import zstandard

                self._src = zstandard.ZstdDecompressor().stream_reader(self._raw, read_across_frames=True)
            # read1: a truncated stream raises only once nothing more decompresses (read() would drop the last block)
            self._read1 = getattr(self._src, "read1", self._src.read)
            first = self._take(4096)
        except BaseException:
            self._raw.close()
            raise
        self.convert = convert = convert and not is_binary(first)  # binary data is passed through untouched
        self.encoding = text_encoding(first) if convert else "utf-8"
        if self.encoding == "utf-8-sig":
            first, self.encoding = first[len(codecs.BOM_UTF8):], "utf-8"
        self._decoder = None
        if self.encoding != "utf-8":
            # the BOM-consuming codec when there is a BOM ("utf-16"), the byte order found otherwise
            bom = first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
            codec = self.encoding[:6] if bom else self.encoding
            self._decoder = codecs.getincrementaldecoder(codec)(errors="replace")
        self._pending = self._convert(first, final=False)
        self._unwrap = None
        if convert:  # the head decides whether a collector labelled every line (collected.Unwrap)
            while len(self._pending) < HEAD_BYTES and not self._eof:
                data = self._take(HEAD_BYTES)
                self._pending += self._convert(data, final=not data)
            self._unwrap = collected.Unwrap(self._pending, self.path)
            if self._unwrap.label is not None and not self._eof and self.kind is None and self.encoding == "utf-8":
                self._unwrap.tail(_tail(self._raw))  # a plain file's end, read ahead (not a pipe's)
            self._pending = self._unwrap(self._pending, final=self._eof)
            if skip := (SKIP_LINES.get() or {}).get(str(self.path)):  # files.read_file's retry past a job's preamble
                breaks = list(itertools.islice(_BREAK.finditer(self._pending), skip))
                if len(breaks) == skip:
                    self._pending = self._pending[breaks[-1].end():]

    def _take(self, size: int) -> bytes:
        """Up to `size` decompressed bytes (b"" at the end), enforcing the budget and the ratio cap."""
        if self._eof:
            return b""
        try:
            data = self._read1(size)
        except EOFError:
            self.notes.append(f"{self.path}: {self.kind} stream is truncated: kept what decompresses")
            data = b""
        except (OSError, ValueError, zlib.error, lzma.LZMAError, zstandard_error()) as exc:
            if not self._out:
                raise InputError(f"{self.path}: cannot decompress {self.kind} data ({exc})") from None
            self.notes.append(f"{self.path}: corrupt {self.kind} data after {self._out} bytes ({exc}): kept those")
            data = b""
        if not data:
            self._eof = True
            return b""
        self._out += len(data)
        if self._out > self.budget:
            raise InputError(f"{self.path}: more than {_size(self.budget)} of {'decompressed ' if self.kind else ''}"
                             "data: refusing (raise PLAYBOOK_MAX_BYTES to read it)")
        if self.kind and self._out > RATIO_FLOOR_BYTES:
            packed = max(1, self._raw.tell())
            if self._out > MAX_RATIO * packed:
                raise InputError(f"{self.path}: {self.kind} data expands more than {MAX_RATIO}x "
                                 f"({_size(packed)} to over {_size(self._out)}): refusing a decompression bomb")
        return data

    def _convert(self, data: bytes, final: bool) -> bytes:
        """`data` as clean UTF-8 bytes (the common ASCII case is passed through untouched)."""
        if not self.convert:
            return data
        if self._decoder is None and data.isascii():
            if b"\0" in data:
                self._nul += data.count(b"\0")
                data = data.replace(b"\0", b"")
            return data
        if self._decoder is None:
            self._decoder = codecs.getincrementaldecoder("utf-8")(errors="playbook-latin1")
        if self.encoding == "utf-8" and not self._latin1:
            self._latin1 = _has_latin1(self._decoder.getstate()[0] + data, final)
        text = self._decoder.decode(data, final)
        if "\0" in text:
            self._nul += text.count("\0")
            text = text.replace("\0", "")
        return text.encode("utf-8", errors="replace")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes of UTF-8 (all of the rest when size < 0)."""
        parts, have = [], 0
        if self._pending:
            parts.append(self._pending)
            have = len(self._pending)
            self._pending = b""
        while size < 0 or have < size:
            data = self._take(STREAM_CHUNK if size < 0 else max(size - have, 1 << 16))
            out = self._convert(data, final=not data)
            if self._unwrap is not None:
                out = self._unwrap(out, final=not data)
            if out:
                parts.append(out)
                have += len(out)
            if not data:
                break
        blob = b"".join(parts)
        if 0 <= size < len(blob):
            self._pending = blob[size:]
            blob = blob[:size]
        return blob

    def close(self) -> None:
        if not self.closed:
            if self._nul:
                self.notes.append(f"{self.path}: dropped {self._nul} NUL bytes")
            if self._latin1:
                self.notes.append(f"{self.path}: bytes that are not UTF-8 were read as Latin-1")
            try:
                if self._src is not self._raw:
                    self._src.close()
            finally:
                self._raw.close()
        super().close()

    def __exit__(self, *exc) -> None:
        self.close()


def _tail(raw) -> bytes:
    """The last HEAD_BYTES of the open plain file `raw`, without moving its position (b"" for a pipe)."""
    try:
        return os.pread(raw.fileno(), HEAD_BYTES, max(0, os.fstat(raw.fileno()).st_size - HEAD_BYTES))
    except OSError:
        return b""


def _has_latin1(data: bytes, final: bool) -> bool:
    """True when `data` holds bytes that are not UTF-8 (a character cut at the end does not count unless final)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return final or exc.reason != "unexpected end of data"
    return False


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def open_text(path: str | Path) -> TextStream:
    """A streaming UTF-8 view of `path` (see TextStream); use as a context manager."""
    return TextStream(path)


def read_bytes(path: str | Path, limit: int | None = None, warnings: list[str] | None = None,
               convert: bool = True) -> bytes:
    """The file's bytes as UTF-8 (see TextStream: decompressed, transcoded, NULs dropped, within the budget).

    `limit` reads at most that many bytes; `convert=False` keeps the decompressed bytes as they are. One-line notes (lossy decoding, truncation) go to `warnings` when
    given. Raises InputError when the file cannot be read or is over the budget.
    """
    with TextStream(path, convert=convert) as stream:
        data = stream.read(-1 if limit is None else limit)
    if warnings is not None and limit is None:
        warnings.extend(stream.notes)
    return data


def is_utf8(data: bytes | memoryview) -> bool:
    """True when all of `data` is UTF-8, checked in place (no copy): binary data passed through untransformed must
    be refused before pyarrow's CSV reader, whose invalid-row callback prints a traceback on a row that is not."""
    import pyarrow as pa

    buf = pa.py_buffer(data)
    offsets = pa.py_buffer(np.array([0, buf.size], dtype=np.int64))
    try:
        pa.LargeStringArray.from_buffers(1, offsets, buf).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def read_head(path: str | Path, size: int = HEAD_BYTES) -> str:
    """The first `size` bytes (decompressed) decoded as text: what `sniff` sees."""
    return decode(read_bytes(path, limit=size))


def head_lines(head: str) -> list[str]:
    """The lines of a head `read_head` returned, without its last one when the head filled HEAD_BYTES (it may be
    cut mid-line)."""
    lines = head.split("\n")
    return lines[:-1] if len(head) >= HEAD_BYTES - 4 else lines


def decode(raw: bytes) -> str:
    """Text from bytes: a BOM's UTF-16/32 (or BOM-less UTF-16), else UTF-8 with non-UTF-8 bytes read as Latin-1;
    a BOM and NULs dropped; CRLF / lone CR turned into LF. Binary data (`is_binary`) decodes as UTF-8 with
    errors replaced, NULs kept."""
    binary = is_binary(raw)
    encoding = text_encoding(raw)
    text = raw.decode(encoding, errors="replace" if binary or encoding != "utf-8" else "playbook-latin1")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\0" in text and not binary:
        text = text.replace("\0", "")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def read_text(path: str | Path, warnings: list[str] | None = None) -> str:
    """The whole file as text (see `read_bytes` and `decode`)."""
    return decode(read_bytes(path, warnings=warnings))


def host_from_path(path: str | Path) -> str:
    """The host name a file's name implies: its stem without compression / text suffixes ("node3.csv.gz" -> "node3")."""
    name = Path(path).name
    while True:
        suffix = Path(name).suffix.lower()
        if suffix in _SUFFIXES and len(name) > len(suffix):
            name = name[: -len(suffix)]
        else:
            return name or "unknown"


def synthetic_times(ticks: np.ndarray, interval_s: float | None) -> np.ndarray:
    """datetime64[ns] times for integer tick numbers on the synthetic clock, `interval_s` apart (default 1 s)."""
    step = float(interval_s) if interval_s else DEFAULT_INTERVAL_S
    base = SYNTHETIC_EPOCH.tz_localize(None).to_datetime64().astype("datetime64[ns]")
    offsets = np.round(np.asarray(ticks, dtype=np.float64) * step * 1e9).astype("int64")
    return base + offsets.astype("timedelta64[ns]")


def synthetic_warning(path: str | Path, what: str, interval_s: float | None) -> str:
    """The one-line warning every reader gives when it invents times."""
    step = float(interval_s) if interval_s else DEFAULT_INTERVAL_S
    hint = "" if interval_s else "; pass --interval with the real polling interval"
    return (f"{path}: no timestamps in the data; times are synthetic: {what} placed {step:g} s apart from "
            f"{SYNTHETIC_EPOCH:%Y-%m-%dT%H:%M:%SZ}{hint}")


def check_interval(interval_s: float | None) -> float | None:
    """Validate a user-given sampling interval (seconds, > 0)."""
    if interval_s is None:
        return None
    try:
        value = float(interval_s)
    except (TypeError, ValueError):
        raise InputError(f"interval must be a number of seconds, not {interval_s!r}") from None
    if not np.isfinite(value) or value <= 0:
        raise InputError(f"interval must be a positive number of seconds, not {interval_s!r}")
    return value


def datetime_ns(parsed) -> np.ndarray:
    """Parsed datetimes (Series/Index, any unit) as int64 ns since the epoch; a date outside what nanoseconds
    can hold (years before 1677 or after 2262, e.g. a mangled year 202 or 6024) becomes NaT (INT64_MIN), for the
    caller to count as a bad row, instead of raising OutOfBoundsDatetime."""
    idx = pd.DatetimeIndex(parsed)
    try:
        return idx.as_unit("ns").asi8.copy()
    except (pd.errors.OutOfBoundsDatetime, OverflowError):
        lo, hi = pd.Timestamp.min, pd.Timestamp.max
        if idx.tz is not None:
            lo, hi = lo.tz_localize("UTC"), hi.tz_localize("UTC")
        return idx.where((idx >= lo) & (idx <= hi)).as_unit("ns").asi8.copy()


def int_array(values) -> tuple[np.ndarray, np.ndarray]:
    """`values` (Python ints) as (int64 array, mask of those int64 can hold); one that overflows (a GPU index of
    10**30 is damage, not an index) is 0 in the array and False in the mask."""
    try:
        out = np.asarray(values, dtype=np.int64)
        return out, np.ones(len(out), dtype=bool)
    except OverflowError:
        lim = np.iinfo(np.int64)
        ok = np.array([lim.min <= v <= lim.max for v in values], dtype=bool)
        return np.asarray([v if k else 0 for v, k in zip(values, ok, strict=True)], dtype=np.int64), ok


def _json_int(text: str) -> int | float:
    """A JSON integer; one longer than int() reads (4300 digits) becomes a float (±inf), for the range checks."""
    return int(text) if len(text) < 4000 else float(text)


# raw_decode for streams of documents. strict=False: a control character (a tab, \x01) raw inside a string is kept,
# as writers that do not escape them emit (Kineto's C++ writer with names from Python source: pytorch/pytorch#130622,
# where Perfetto's strict parser failed); the strict decoder skipped the whole event or record
JSON_DECODER = json.JSONDecoder(parse_int=_json_int, strict=False)


def json_loads(text: str):
    """json.loads for input text: a number of any length reads (a huge one as ±inf), and a document nested too
    deep is a ValueError like any other invalid JSON (never a RecursionError)."""
    try:
        return JSON_DECODER.decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deep to read") from None


JSON_WINDOW = 4096  # chars a value is first decoded from (a trace event or a record is ~150-1,000 characters)


def raw_decode_at(text: str, pos: int, decoder: json.JSONDecoder = JSON_DECODER) -> tuple[object, int]:
    """(value, end) of the JSON value at `pos`, as decoder.raw_decode(text, pos), but decoded from a window of the
    text, widened 4x while the value may run past it: a decode error counts the lines before it, so decoding in
    place made each garbled value of a stream cost O(pos). A decode error's `pos` is moved to `text`'s."""
    width, n = JSON_WINDOW, len(text)
    while True:
        window = text[pos:pos + width]
        more = pos + width < n
        try:
            obj, used = decoder.raw_decode(window)
        except json.JSONDecodeError as exc:
            if more and (exc.pos >= len(window) - 1 or exc.msg.startswith("Unterminated string")):
                width *= 4  # the window may have cut the value
                continue
            exc.pos += pos
            raise
        if more and used == len(window):  # a number (or anything) ending at the window's edge may go on
            width *= 4
            continue
        return obj, pos + used


def json_error(exc: Exception) -> str:
    """What is wrong with a JSON text, for a user message (no exception class names)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "nested too deep to read"
    return str(exc)[:80]


MAX_EPOCH_S = 9.2e9  # int64 nanoseconds reach the year 2262: a later (or far earlier) epoch second is damage


def ms_to_ns(text: str) -> int | None:
    """Epoch milliseconds written as an integer (Prometheus exposition) as int64 ns; None when it is not one or
    int64 nanoseconds cannot hold it (checked on the text's length first: a 5,000-digit number is never parsed)."""
    digits = text.strip()
    if len(digits.lstrip("+-")) > 16:
        return None
    try:
        ns = int(digits) * 1_000_000
    except ValueError:
        return None
    return ns if abs(ns) < MAX_EPOCH_S * 1e9 else None


def epoch_to_ns(values: np.ndarray, unit: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Epoch numbers to int64 nanoseconds and a mask of the readable ones; the unit (s/ms/us/ns) comes from `unit`
    or from the magnitude. Whole and fractional parts are scaled apart, so 1705312801.25 s stays exact."""
    v = np.asarray(values, dtype=np.float64)
    if unit is None:
        finite = np.abs(v[np.isfinite(v)])
        mag = float(np.median(finite)) if len(finite) else 0.0
        unit = "ns" if mag > 1e17 else "us" if mag > 1e14 else "ms" if mag > 1e11 else "s"
    scale = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[unit]
    ok = np.isfinite(v) & (np.abs(v) < 9e18 / scale)
    safe = np.where(ok, v, 0.0)
    whole = np.floor(safe)
    ns = whole.astype(np.int64) * scale + np.round((safe - whole) * scale).astype(np.int64)
    return ns, ok


# Unit suffixes as they appear in headers ("memory.used [MiB]") and values ("70959 MiB"), and the factor that
# turns a value in that unit into the schema's unit for the same quantity.
UNIT_FACTORS: dict[str, float] = {
    "%": 1.0,
    "mib": 1.0, "mb": 1.0, "kib": 1 / 1024, "kb": 1 / 1024, "gib": 1024.0, "gb": 1024.0, "b": 1 / 2**20,
    "bytes": 1 / 2**20,
    "w": 1.0, "mw": 1e-3, "kw": 1e3,
    "mhz": 1.0, "ghz": 1e3, "khz": 1e-3, "hz": 1e-6,
    "c": 1.0,
    "mib/s": 1.0, "mb/s": 1.0, "kb/s": 1 / 1024, "kib/s": 1 / 1024, "gb/s": 1024.0, "gib/s": 1024.0,
    "b/s": 1 / 2**20, "bytes/s": 1 / 2**20,
}

NA_TOKENS = frozenset({"", "-", "n/a", "na", "nan", "none", "null", "[n/a]", "[not supported]", "[unknown error]",
                       "not supported", "unknown error", "[gpu is lost]", "[insufficient permissions]",
                       "[gpu requires reset]", "[not found]", "[unknown]", "err!", "[err!]"})

# linear: the digits are taken once and a unit must start with a letter, so no two repeats trade characters
_NUM_UNIT = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:([A-Za-z%/]+)\s*)?$")


# an array of numbers goes on (a comma) or closes at the end of its line: "[80746] [rank0]:..." (a counter or a
# process id before a log line) is a log line, "[1, 2]" and "[3]" are JSON
_JSON_START = re.compile(r"^\s*(\{|\[\s*([\[{\"\]]|-?\d[\d.eE+-]*\s*(,|\][ \t\r]*(\n|$|[,\]])))|\[\s*$)")


_MPI_TAG = re.compile(r"^\s*\[\d{1,9},\d{1,9}\]<std(?:out|err)>:")  # Open MPI's --tag-output "[1,0]<stdout>:"


def looks_like_json(text: str) -> bool:
    """True when `text` starts like a JSON document: an object, or an array of values. Log lines that open with a
    bracket ("[rank0]: ...", "[2024-01-15 10:00:00] ...", "[titan] ...", "[80746] [rank0]: ...", mpirun's
    "[1,0]<stdout>:") do not."""
    return bool(_JSON_START.match(text)) and not _MPI_TAG.match(text)


def parse_number(text: str) -> tuple[float, str] | None:
    """'70959 MiB' -> (70959.0, 'mib'); '[N/A]' -> (nan, ''); None when it is not a number at all."""
    t = text.strip()
    if t.lower() in NA_TOKENS or (t.startswith("[") and t.endswith("]")):
        return float("nan"), ""
    if t.lower().startswith("0x"):
        try:
            return float(int(t, 16)), ""
        except (ValueError, OverflowError):  # not hex, or past a float's range
            return None
    m = _NUM_UNIT.match(t)
    if not m:
        return None
    return float(m.group(1)), (m.group(2) or "").lower()


# --------------------------------------------------------------------------------------------------------------
# Streaming lines (the line scanners of readers/lines.py)

MAX_LINE_CHARS = 64 * 1024  # a longer "line" (a binary blob, a minified document) is cut: memory stays bounded


def iter_lines(path: str | Path, chunk_bytes: int = 1 << 20, notes: list[str] | None = None):
    """Yield the lines of a (possibly compressed) text file one at a time, reading `chunk_bytes` at a time.

    The bytes come through TextStream: decompressed within the size budget and the ratio cap, UTF-16/32 transcoded
    (with or without a BOM), NULs dropped, non-UTF-8 bytes read as Latin-1; its one-line notes (lossy decoding, a
    truncated stream) are appended to `notes` when the iteration ends. LF, CRLF and lone CR (progress-bar updates)
    all end a line; lines longer than MAX_LINE_CHARS are cut. Memory: one chunk plus one line. Raises InputError
    when the file cannot be opened or breaks the budget."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a chunk may cut a character in two
    stream = TextStream(path)
    try:
        pending = ""
        while True:
            block = stream.read(chunk_bytes)
            pending += decoder.decode(block, final=not block)
            if not block:
                break
            if "\r" in pending:
                keep_cr = pending.endswith("\r")  # a CRLF may straddle the chunk boundary
                body = pending[:-1] if keep_cr else pending
                parts = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
                pending = parts.pop() + ("\r" if keep_cr else "")
            else:
                parts = pending.split("\n")
                pending = parts.pop()
            for line in parts:
                yield line[:MAX_LINE_CHARS]
            if len(pending) > MAX_LINE_CHARS:
                pending = pending[:MAX_LINE_CHARS]  # the rest of an endless line is dropped
        if pending:
            for line in pending.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
                yield line[:MAX_LINE_CHARS]
    finally:
        stream.close()
        if notes is not None:
            notes.extend(stream.notes)
