"""Decoding a Kineto trace's byte stream into event columns: bounded decompressed chunks, the `traceEvents`
array split at event boundaries (never rescanned), msgspec structs when installed, salvage of damaged events."""

from __future__ import annotations

import io
import json
import math
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from itertools import compress
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model.schema import SkipCounter
from playbook.readers import textio
from playbook.readers.kineto.durations import Spans
from playbook.readers.kineto.roles import GPU_CATEGORIES, canonical_category, display_name

try:  # optional accelerator; the standard-library path below gives identical results
    import msgspec
except ImportError:  # pragma: no cover - exercised by forcing _MSGSPEC = None in tests
    msgspec = None

# decoded text per chunk (256 KiB): bounds the transient memory of one decode; malloc reuses chunks this small, where
# 2 MiB ones came back from the OS each time (a 53.7 MB trace: 16.5k page faults -> 4.8k, 7% of the read's wall time)
CHUNK_BYTES = 1 << 18
MAX_HEADER_BYTES = 1 << 26  # give up looking for "traceEvents" after 64 MiB, and reading keys after the events
MAX_EVENT_BYTES = 1 << 26  # no event boundary in 64 MiB is damage, not one event: skipped (memory stays bounded)

_TRACE_EVENTS_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
_BOUNDARY_RE = re.compile(rb"\}\s*,\s*\{")
_SPACE = frozenset(b" \t\n\r\f\v")  # what \s matches in a bytes pattern
_ARRAY_END_RE = re.compile(rb"\}\s*\]")
_BOUNDARY_STR_RE = re.compile(r"\}\s*,\s*\{")
_GAP_RE = re.compile(r"[ \t\r\n,]*")
_GAP_B_RE = re.compile(rb"[ \t\r\n,]*")
_GAP_BYTES = b" \t\r\n,"


def byte_chunks(fh: BinaryIO, label: str, size: int = CHUNK_BYTES,
                 problems: list[str] | None = None) -> Iterator[bytes]:
    """Decoded bytes of `fh` in chunks of about `size`, un-gzipping / un-zstd-ing by magic number.

    A truncated or corrupt compressed stream ends the iteration early and appends a reason to `problems`.
    """
    magic = fh.read(4)
    if magic[:2] == b"\x1f\x8b":
        dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = magic
        packed, unpacked, budget = 0, 0, textio.max_bytes()
        while True:
            data = pending + (fh.read(1 << 16) if not dec.unconsumed_tail else b"")
            packed += len(data)
            pending = b""
            if dec.unconsumed_tail:
                data = dec.unconsumed_tail + data
            if not data:
                break
            try:
                out = dec.decompress(data, size)
            except zlib.error as exc:
                if problems is not None:
                    problems.append(f"corrupt gzip data ({exc})")
                return
            unpacked += len(out)
            _check_expansion(label, packed, unpacked, budget)
            if out:
                yield out
            if dec.eof:
                rest = dec.unused_data + fh.read()
                if rest.startswith(b"\x1f\x8b"):  # concatenated gzip members
                    yield from byte_chunks(io.BytesIO(rest), label, size, problems)
                return
        if problems is not None and not dec.eof:
            problems.append("gzip stream truncated")
        return
    if magic == b"\x28\xb5\x2f\xfd":
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(magic + fh.read()))
        try:
            while out := reader.read(size):
                yield out
        except zstandard.ZstdError as exc:
            if problems is not None:
                problems.append(f"corrupt zstd data ({exc})")
        return
    yield magic + fh.read(size - len(magic))
    while out := fh.read(size):
        yield out


def _check_expansion(label: str, packed: int, unpacked: int, budget: int) -> None:
    """The size budget and the ratio cap of textio, for the trace's own streaming gzip decoder."""
    if unpacked > budget:
        raise InputError(f"{label}: more than {budget >> 20} MiB of decompressed data: refusing "
                         "(raise PLAYBOOK_MAX_BYTES to read it)")
    if unpacked > textio.RATIO_FLOOR_BYTES and unpacked > textio.MAX_RATIO * max(packed, 1):
        raise InputError(f"{label}: gzip data expands more than {textio.MAX_RATIO}x: refusing a decompression bomb")


if msgspec is not None:
    # gc=False: these structs hold no reference cycles, so the collector need not track a million of them
    class _Args(msgspec.Struct, gc=False):
        stream: int = -1
        correlation: int = -1
        correlation_id: int = msgspec.field(default=-1, name="correlation id")  # Paddle's key
        bytes: float | None = math.nan  # absent from most events: NaN, so the column needs no None check
        name: Any = None
        labels: Any = None

    class _Event(msgspec.Struct, gc=False):
        # text (or a number, or absent): an object or a list here fails the chunk's decode, which then takes the
        # lenient path (add_dicts) that skips and counts such events
        ph: str | int | float | None = None
        cat: str | int | float | None = None
        name: str | int | float | None = None
        ts: float | None = None
        dur: float | None = None
        pid: Any = None
        tid: Any = None
        args: _Args = msgspec.field(default_factory=_Args)  # "args": null takes the lenient path

    _FAST_DECODER = msgspec.json.Decoder(list[_Event])
    _ANY_DECODER = msgspec.json.Decoder()
    _MSGSPEC = msgspec
else:  # pragma: no cover
    _MSGSPEC = None

# RecursionError: JSON nested deeper than the decoder recurses (an event is then salvaged one at a time)
_DECODE_ERRORS: tuple[type[Exception], ...] = (ValueError, RecursionError) + ((msgspec.DecodeError,) if msgspec else ())


class Columns:
    """Accumulates event columns chunk by chunk as compact numpy arrays (names interned as integer codes)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in (
            "cat", "name", "ts", "dur", "pid", "tid", "stream", "correlation", "bytes")}
        self.counts: dict[str, int] = {}
        self.threads: dict[str, str] = {}
        self.processes: dict[str, str] = {}
        self.n = 0
        self.skipped_x = 0  # complete events without a numeric timestamp
        self.spans = Spans()  # "B"/"E" duration events, paired into rows by close_spans (durations.py)

    def _code_list(self, values: list) -> np.ndarray:
        """Integer codes of `values` in the interned string table: a number as its text, None (or NaN) as ""."""
        codes = self.codes
        try:  # most chunks hold only text seen before: one lookup per value
            return np.fromiter(map(codes.__getitem__, values), dtype=np.int32, count=len(values))
        except KeyError:  # a new text, a number or None: intern them in first-seen order
            pass
        local = {u: codes.setdefault(u if type(u) is str else "" if u is None or u != u else str(u), len(codes))
                 for u in dict.fromkeys(values)}  # first-seen order: the table's codes do not depend on hashing
        return np.fromiter(map(local.__getitem__, values), dtype=np.int32, count=len(values))

    def _push(self, cat, name, ts, dur, pid, tid, stream, corr, nbytes, complete: bool = False) -> None:
        """Append one chunk's columns (args.stream taken from `tid` for GPU rows where missing). `complete`: the
        rows are a trace's "X" events as decoded, of which those without a timestamp are skipped (counted) and the
        profiler's own "Trace" span is dropped (its pid is text: "Spans")."""
        cat_codes, ts = self._code_list(cat), _floats(ts)
        if complete:  # NaN: the decoder's None (JSON has no NaN)
            no_ts, trace = np.isnan(ts), cat_codes == self.codes.get("Trace", -1)
            if no_ts.any() or trace.any():  # rare: one chunk of a trace
                keep = ~(no_ts | trace)
                self.skipped_x += int((no_ts & ~trace).sum())
                cat_codes, ts = cat_codes[keep], ts[keep]
                name, dur, pid, tid, stream, corr, nbytes = (list(compress(c, keep)) for c in (
                    name, dur, pid, tid, stream, corr, nbytes))
        p = self.parts
        p["cat"].append(cat_codes)
        p["name"].append(self._code_list(name))
        p["ts"].append(ts)
        p["dur"].append(_floats(dur))
        pid, tid = _ints(pid), _ints(tid)
        p["pid"].append(pid)
        p["tid"].append(tid)
        stream = _ints(stream)
        is_gpu = np.zeros(len(self.codes), dtype=bool)  # by code: a table lookup, not a search per row
        is_gpu[[c for name_, c in self.codes.items() if name_ in GPU_CATEGORIES]] = True
        is_gpu = is_gpu[cat_codes]
        p["stream"].append(np.where(is_gpu, np.where(stream >= 0, stream, tid), -1))
        p["correlation"].append(_ints(corr))
        p["bytes"].append(_floats(nbytes))
        self.n += len(ts)

    def _count(self, phs: list) -> Counter:
        tally = Counter(phs)
        for ph, n in tally.items():
            self.counts[str(ph)] = self.counts.get(str(ph), 0) + n
        return tally

    def close_spans(self, problems: list[str]) -> None:
        """Pair the "B"/"E" events kept aside into rows (durations.py); what cannot be paired goes to `problems`."""
        rows = self.spans.pair(problems)
        if n := len(rows["ts"]):
            self._push(*(rows[k] for k in ("cat", "name", "ts", "dur", "pid", "tid")), [-1] * n, [-1] * n, [None] * n)

    def add_structs(self, events: list, skips: SkipCounter | None = None) -> None:
        """Add msgspec-decoded events (fields already typed by the _Event/_Args structs)."""
        xs = [e for e in events if e.ph == "X"]  # most of a trace: the rest are counted apart
        if xs:
            self.counts["X"] = self.counts.get("X", 0) + len(xs)
        if len(xs) < len(events):
            tally = self._count([e.ph for e in events if e.ph != "X"])  # text or numbers: the struct's types
            if "B" in tally or "E" in tally:  # duration events: kept aside, paired at the end (durations.py)
                for e in events:
                    if e.ph in ("B", "E") and e.ts is not None:
                        self.spans.add(e.ph, e.ts, e.pid, e.tid, e.name, e.cat)
            if "M" in tally:
                self._metadata([(e.name, e.pid, e.tid, e.args.name, e.args.labels) for e in events if e.ph == "M"])
        if not xs:
            return
        args = [e.args for e in xs]
        self._push([e.cat for e in xs], [e.name for e in xs], [e.ts for e in xs], [e.dur for e in xs],
                   [e.pid for e in xs], [e.tid for e in xs], [a.stream for a in args],
                   [a.correlation if a.correlation >= 0 else a.correlation_id for a in args],
                   [a.bytes for a in args], complete=True)

    def add_dicts(self, events: list, skips: SkipCounter | None = None) -> None:
        """Add events decoded as plain dicts (standard-library path), converting leniently."""
        good = [e for e in events if isinstance(e, dict)]
        if skips is not None:
            for _ in range(len(events) - len(good)):
                skips.skip(None, "trace event is not a JSON object")
        typed = [e for e in good if type(e.get("ph")) in _TEXT and type(e.get("name")) in _TEXT
                 and type(e.get("cat")) in _TEXT]
        _skip_typed(skips, len(good) - len(typed))
        good = typed
        tally = self._count([e.get("ph") for e in good])
        if "B" in tally or "E" in tally:
            for e in good:
                if e.get("ph") in ("B", "E") and not np.isnan(ts := _num(e.get("ts"))):
                    self.spans.add(e.get("ph"), ts, e.get("pid"), e.get("tid"), e.get("name"), e.get("cat"))
        meta = [e for e in good if e.get("ph") == "M"]
        if meta:
            self._metadata([(e.get("name"), e.get("pid"), e.get("tid"), _arg(e, "name"), _arg(e, "labels"))
                            for e in meta])
        xs = []
        for e in good:
            if e.get("ph") != "X" or e.get("cat") == "Trace":
                continue
            ts = _num(e.get("ts"))
            if np.isnan(ts):
                self.skipped_x += 1
                continue
            xs.append((e, ts))
        if not xs:
            return
        cat = [str(e.get("cat") or "") for e, _ in xs]
        self._push(
            cat, [e.get("name") for e, _ in xs], [t for _, t in xs], [_num(e.get("dur")) for e, _ in xs],
            [_int(e.get("pid")) for e, _ in xs], [_int(e.get("tid")) for e, _ in xs],
            [_int(_arg(e, "stream")) if _arg(e, "stream") is not None else -1 for e, _ in xs],
            [_int(_arg(e, "correlation") if _arg(e, "correlation") is not None else _arg(e, "correlation id"))
             for e, _ in xs],
            [_num(_arg(e, "bytes")) for e, _ in xs],
        )

    def _metadata(self, rows: list) -> None:
        for kind, pid, tid, name, labels in rows:
            if kind == "thread_name" and isinstance(name, str):
                self.threads.setdefault(f"{pid}:{tid}", name.strip())
            elif kind == "process_labels" and isinstance(labels, str):
                self.processes[str(pid)] = labels
            elif kind == "process_name" and isinstance(name, str):
                self.processes.setdefault(str(pid), name)

    def frame_columns(self) -> dict[str, Any]:
        """Columns for trace_frame, sorted by ts (stable); name and cat decoded to strings after the sort, names
        without a display duration and categories in Kineto's vocabulary (roles.py)."""
        parts = self.parts
        ts = parts.pop("ts")
        ts = np.concatenate(ts) if ts else np.array([], dtype=np.float64)
        order = np.argsort(ts, kind="stable")
        out: dict[str, Any] = {"ts": ts[order]}
        # each other column is joined into the unsorted ts's memory (8 bytes a row, pages already touched) before
        # its sort: a fresh array a column costs its page faults (4 ms of a 123k-row trace on a 2-core VM)
        scratch = ts.view(np.uint8)
        for key in list(parts):
            arrays = parts.pop(key)  # free each column's chunks as soon as it is joined
            if arrays:  # every part of a column has its dtype (int32 codes, int64 or float64: at most 8 bytes)
                dtype = np.result_type(*arrays)
                arr = np.concatenate(arrays, out=scratch[:len(ts) * dtype.itemsize].view(dtype))
            else:
                arr = np.array([], dtype=np.int32 if key in ("cat", "name") else np.float64)
            arr = arr[order]
            if key in ("cat", "name"):
                table = [(canonical_category if key == "cat" else display_name)(c) for c in self.codes]
                out[key] = _strings(arr, table)
            else:
                out[key] = arr
        return out


def _strings(codes: np.ndarray, categories: list[str]) -> pd.Series:
    """A "string" Series from integer codes into `categories`, built in Arrow (no Python str per row)."""
    import pyarrow as pa

    if not categories:
        return pd.Series(pd.array([], dtype="string"))
    sizes = np.array([len(c.encode("utf-8", "surrogatepass")) for c in categories], dtype=np.int64)
    # 32-bit offsets decode 6x faster than 64-bit ones (123k kernel names: 2.9 ms against 17 ms); pandas keeps
    # the text as large_string either way, so 64-bit offsets are asked for only past 2 GiB
    kind = pa.string() if int(sizes[codes].sum()) < 2**31 - 1 else pa.large_string()
    decoded = pa.DictionaryArray.from_arrays(pa.array(codes, type=pa.int32()),
                                             pa.array(categories, type=kind)).dictionary_decode()
    try:
        return pd.Series(pd.array(decoded, dtype=pd.StringDtype("pyarrow")))
    except (TypeError, ValueError):  # pandas configured for Python string storage
        return pd.Series(decoded.to_pylist(), dtype="string")


def _floats(values: list) -> np.ndarray:
    """float64 array from a list of numbers (None as NaN); fromiter is ~1.6x np.array on a list of floats."""
    try:
        return np.fromiter(values, dtype=np.float64, count=len(values))
    except (TypeError, ValueError):  # None (an absent dur or bytes): np.array takes it as NaN
        return np.array(values, dtype=np.float64)


def _ints(values: list) -> np.ndarray:
    """int64 array from a list of ints, with anything that is not an integer (None, "Spans", 1.5e20) as -1."""
    try:  # the common case, all ints within int64: fromiter is ~1.8x np.array's type inference
        return np.fromiter(values, dtype=np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        pass
    try:
        arr = np.array(values)
        if arr.ndim == 1 and (arr.dtype.kind == "i" or (arr.dtype.kind == "u" and (
                not len(arr) or int(arr.max()) <= _INT64[1]))):
            return arr.astype(np.int64, copy=False)
    except (ValueError, OverflowError):
        pass
    return np.array([_int(v) for v in values], dtype=np.int64)


_INT64 = (-(2**63), 2**63 - 1)
# ph / name / cat must be text (or a number, or absent): an object or a list there makes the event unreadable
_TEXT = (str, int, float, type(None))


def _skip_typed(skips: SkipCounter | None, n: int) -> None:
    """Count `n` events skipped for a ph / name / cat that is an object or a list."""
    if skips is not None and n > 0:
        skips.skip(None, "trace event with an object or list as its ph, name or cat")
        skips.count += n - 1


def _int(v: Any) -> int:
    """An int64 from a JSON value or the number that opens a text ("4242(C++)": Paddle's thread ids); -1 for anything
    else (None, "Spans", 1.5e20, an id beyond int64)."""
    try:
        i = v if type(v) is int else int(v)
    except (TypeError, ValueError, OverflowError):
        head, paren, _ = v.partition("(") if isinstance(v, str) else ("", "", "")
        if not (paren and head.removeprefix("-").isdigit() and head.isascii()):
            return -1
        i = int(head)
    return i if _INT64[0] <= i <= _INT64[1] else -1


def _num(v: Any) -> float:
    if type(v) is float:
        return v
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return np.nan


def _arg(e: dict, key: str) -> Any:
    a = e.get("args")
    return a.get(key) if isinstance(a, dict) else None


def _decode_list(payload: bytes, cols: Columns, skips: SkipCounter) -> None:
    """Decode `[ev, ev, ...]` into `cols`; raises a decode error when `payload` is not valid JSON."""
    if _MSGSPEC is not None:
        try:
            cols.add_structs(_FAST_DECODER.decode(payload), skips)
            return
        except _MSGSPEC.ValidationError:  # valid JSON, unusual types: take the lenient path
            cols.add_dicts(_ANY_DECODER.decode(payload), skips)
            return
    cols.add_dicts(json.loads(bytes(payload)), skips)


def _salvage(text: str, cols: Columns, skips: SkipCounter, byte_offset: int, final: bool) -> tuple[str, bool]:
    """Decode events one at a time from `text`, skipping garbled ones up to the next event boundary.

    Returns (unconsumed rest, array_closed). Without `final`, an incomplete last event is left in the rest.
    Events decode from a window of the text (textio.raw_decode_at): a garbled one costs its own length, not the
    text's before it.
    """
    decoder = textio.JSON_DECODER
    pos, n, good = 0, len(text), []
    while True:
        pos = _GAP_RE.match(text, pos).end()
        if pos >= n:
            break
        if text[pos] == "]":
            cols.add_dicts(good, skips)
            return text[pos + 1:], True
        try:
            obj, end = textio.raw_decode_at(text, pos, decoder)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, or an event nested too deep
            at = getattr(exc, "pos", pos)
            nxt = _BOUNDARY_STR_RE.search(text, at if at > pos else pos + 1)
            if nxt is None and not final:
                break  # possibly an event cut by the chunk edge: wait for more text
            skips.skip(None, f"near byte ~{byte_offset + pos}: "  # chars = bytes for ASCII
                             f"{getattr(exc, 'msg', None) or textio.json_error(exc)}")
            if nxt is None:
                pos = n
                break
            pos = nxt.end() - 1
            continue
        good.append(obj)
        pos = end
    cols.add_dicts(good, skips)
    return text[pos:], False


def parse(fh: BinaryIO, label: str, rank: int | None, filename: str) -> dict:
    """Stream-parse one trace into columns + metadata. Returns a part dict for _assemble."""
    problems: list[str] = []
    skips = SkipCounter(label)
    cols = Columns()
    chunks = byte_chunks(fh, label, CHUNK_BYTES, problems)
    buf = bytearray()  # in the events state buf[0] is always a delimiter (space or comma) before an event
    header = trailer = b""
    state = "head"
    consumed = 0  # bytes of decoded text already consumed before buf
    scanned = 0  # buf[:scanned] holds no event boundary (see below)
    dropping = False  # inside a stretch without event boundaries longer than MAX_EVENT_BYTES
    for chunk in chunks:
        if state == "tail":
            if len(trailer) > MAX_HEADER_BYTES:
                problems.append(f"more than {MAX_HEADER_BYTES >> 20} MiB after the traceEvents array (not read)")
                break
            trailer += chunk
            continue
        buf += chunk
        if state == "head":
            opened = _open_events(buf, label, len(buf) - len(chunk))
            if opened is None:
                continue  # the traceEvents array has not started yet
            header, buf, skipped = opened
            consumed += skipped
            state, chunk = "events", bytes(buf)
        # Only the bytes not yet searched are scanned for an event boundary (plus a `}` left waiting at the end of
        # the last search): each byte is searched about once, however long an event or a run of whitespace is.
        if _GAP_B_RE.fullmatch(chunk):
            continue  # whitespace cannot complete a boundary (`}, {` needs its `{`)
        cut = _last_boundary(buf, scanned)
        if cut is None:
            body = len(chunk.rstrip(b" \t\r\n,"))
            run = len(buf) - len(chunk) + body  # where the trailing whitespace/comma run starts
            scanned = run - 1 if run > 0 and buf[run - 1] == 0x7D else run  # 0x7D: "}"
            if len(buf) > MAX_EVENT_BYTES:  # damage, not an event: dropped unless the array closes in it
                closed_at = _try_close(bytes(buf), cols, skips)
                if closed_at is not None:
                    state, trailer, buf = "tail", bytes(buf[closed_at:]), bytearray()
                    continue
                consumed, buf, scanned = _skip_unbounded(buf, scanned, consumed, None if dropping else skips)
                dropping = True  # counted once per damaged stretch (until the next boundary)
            continue
        scanned = 0
        if dropping:  # the damaged stretch ends at its first boundary: drop the rest of it (counted already)
            first = _BOUNDARY_RE.search(buf).start() + 1
            consumed, cut, dropping = consumed + first, cut - first, False
            del buf[:first]
            if cut == 0:
                continue
        if _decode_in_place(buf, cut, cols, skips):
            consumed += cut
            del buf[:cut]
            continue
        # the array closes inside this chunk, or an event is garbled
        closed_at = _try_close(bytes(buf), cols, skips)
        if closed_at is not None:
            state, trailer, buf = "tail", bytes(buf[closed_at:]), bytearray()
            continue
        rest, closed = _salvage(buf.decode("utf-8", errors="replace"), cols, skips, consumed, False)
        rest_b = rest.encode()
        consumed += len(buf) - len(rest_b)
        buf = bytearray(b" ") + rest_b
        if closed:
            state, trailer, buf = "tail", bytes(rest_b), bytearray()
    if state == "head":
        what = "empty file" if not buf.strip() else "not a Kineto/Chrome trace (no traceEvents array)"
        raise InputError(f"{label}: {problems[0] if problems and not buf.strip() else what}")
    truncated = False
    if state == "events":
        trailer, closed = _finish(bytes(buf), cols, skips, consumed)
        truncated = not closed
    meta_doc, meta_problem = _header_meta(header, trailer, truncated)
    if meta_problem:
        problems.append(meta_problem)
    if truncated:
        problems.append("JSON ends before the traceEvents array closes")
    cols.close_spans(problems)
    return {"cols": cols, "meta": meta_doc, "source": label, "filename": filename, "rank": rank,
            "warnings": _part_warnings(label, cols, skips, problems)}


def _decode_in_place(buf: bytearray, cut: int, cols: Columns, skips: SkipCounter) -> bool:
    """Decode buf[0:cut+1] framed as a JSON array in place (buf[0] and buf[cut] are delimiters: space/comma, put
    back after); False when it is not valid JSON."""
    saved = buf[cut]
    buf[0], buf[cut] = 0x5B, 0x5D  # "[" and "]"
    try:
        with memoryview(buf) as view:
            _decode_list(view[:cut + 1], cols, skips)
        return True
    except _DECODE_ERRORS:
        return False
    finally:
        buf[0], buf[cut] = 0x20, saved


def _skip_unbounded(buf: bytearray, scanned: int, consumed: int,
                    skips: SkipCounter | None) -> tuple[int, bytearray, int]:
    """buf holds more than MAX_EVENT_BYTES without an event boundary: count it as one skipped (damaged) event
    (unless `skips` is None: the same stretch) and keep only its end that may begin a boundary (`}` and the
    whitespace/comma run after it, when short). Returns (consumed, buf, scanned) for parse."""
    if skips is not None:
        skips.skip(None, f"near byte ~{consumed}: no event boundary in {MAX_EVENT_BYTES >> 20} MiB (skipped)")
    tail = buf[scanned:] if len(buf) - scanned <= 4096 else b""
    consumed += len(buf) - len(tail)
    return consumed, bytearray(b" ") + tail, 1


def _open_events(buf: bytearray, label: str, old: int) -> tuple[bytes, bytearray, int] | None:
    """Where the events start in the head of a trace: (header before them, buf from a delimiter before the first
    event, bytes consumed); None while more text is needed. Raises InputError when it is not a trace. buf[:old]
    was searched before: only its last 64 bytes are searched again, for a key cut by the chunk's edge (each byte
    about once: a 64 MiB head without the key is not rescanned per chunk)."""
    first = _GAP_B_RE.match(buf).end()  # leading whitespace (and commas: then not a trace either)
    if buf[first:first + 1] == b"[":  # a bare event array
        return b"", bytearray(b" ") + buf[first + 1:], first + 1
    m = _TRACE_EVENTS_RE.search(buf, max(0, old - 64))
    if m is None:
        if len(buf) > MAX_HEADER_BYTES or (first < len(buf) and buf[first:first + 1] != b"{"):
            raise InputError(f"{label}: not a Kineto/Chrome trace (no traceEvents array)")
        return None
    return bytes(buf[:m.start()]), bytearray(b" ") + buf[m.end():], m.end()


def _part_warnings(label: str, cols: Columns, skips: SkipCounter, problems: list[str]) -> list[str]:
    """The file's warning lines (at most one); InputError when nothing usable was read and something was wrong."""
    if cols.skipped_x:
        skips.skip(None, "complete event without a numeric ts")
        skips.count += cols.skipped_x - 1
    if cols.n == 0 and (problems or skips.count):
        reasons = "; ".join(problems + skips.reasons[:2])
        raise InputError(f"{label}: no usable trace event ({reasons})")
    warnings = []
    w = skips.warning(rows_read=cols.n)
    if problems:  # one line per file: what went wrong, what was kept, and the skipped events if any
        skipped = f" ({w[len(label) + 2:]})" if w else ""
        warnings.append(f"{label}: {'; '.join(problems)}; kept {cols.n} events{skipped}")
    elif w:
        warnings.append(w)
    return warnings


def _last_boundary(buf: bytes, start: int = 0) -> int | None:
    """Index just past the `}` of the last `}, {` event boundary in buf[start:] (None when there is none): the
    last match of _BOUNDARY_RE, found searching back from the end (a few steps, not every boundary of the chunk;
    the regex takes over after 64 braces that open no event, so hostile input stays at C speed)."""
    end = len(buf)
    for _ in range(64):
        brace = buf.rfind(b"{", start, end)
        if brace <= start:
            return None
        j = brace - 1
        while j > start and buf[j] in _SPACE:
            j -= 1
        if buf[j] == 0x2C:  # ","
            j -= 1
            while j >= start and buf[j] in _SPACE:
                j -= 1
            if j >= start and buf[j] == 0x7D:  # "}"
                return j + 1
        end = brace
    found = None
    for found in _BOUNDARY_RE.finditer(buf, start, end + 1):  # noqa: B007 - keep the last match
        pass
    return None if found is None else found.start() + 1


def _try_close(buf: bytes, cols: Columns, skips: SkipCounter, attempts: int = 16) -> int | None:
    """If the traceEvents array closes in `buf` after complete events, decode them; return the index after `]`."""
    first = _GAP_B_RE.match(buf).end()  # a regex, not lstrip: C speed on runs of megabytes
    if buf[first:first + 1] == b"]":
        return first + 1
    for attempt, m in enumerate(_ARRAY_END_RE.finditer(buf)):
        if attempt >= attempts:
            break
        try:
            _decode_list(b"[" + buf[first:m.start() + 1] + b"]", cols, skips)
        except _DECODE_ERRORS:
            continue
        return m.end()
    return None


def _finish(buf: bytes, cols: Columns, skips: SkipCounter, consumed: int) -> tuple[bytes, bool]:
    """Decode the last events and find where the array closes. Returns (trailer bytes, closed)."""
    closed_at = _try_close(buf, cols, skips)
    if closed_at is not None:
        return buf[closed_at:], True
    rest, closed = _salvage(buf.decode("utf-8", errors="replace"), cols, skips, consumed, True)
    return rest.encode(), closed


def _header_meta(header: bytes, trailer: bytes, truncated: bool) -> tuple[dict, str | None]:
    """The trace document without its events: the keys before and after the traceEvents array."""
    head = header.strip()
    if head[:1] == b"{":
        head = head[1:]
    head = head.strip().rstrip(b",")
    tail = trailer.strip()
    if truncated:
        tail = b""
    if tail.endswith(b"}"):
        tail = tail[:-1]
    tail = tail.strip().lstrip(b",")
    body = b",".join(p for p in (head, tail) if p.strip())
    if not body:
        return {}, None
    try:
        doc = textio.json_loads((b"{" + body + b"}").decode("utf-8", "replace"))
        return (doc if isinstance(doc, dict) else {}), None
    except ValueError:
        try:  # the keys before the events are the ones that matter most (distributedInfo, deviceProperties)
            doc = textio.json_loads((b"{" + head + b"}").decode("utf-8", "replace")) if head else {}
            return doc, "unreadable keys after traceEvents"
        except ValueError:
            return {}, "unreadable trace header (rank and world size unknown)"
