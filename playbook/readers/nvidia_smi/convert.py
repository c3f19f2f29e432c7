"""Parsing one piece of an nvidia-smi --query-gpu log (the lines between two special lines or block ends) into
numeric columns: pyarrow over the clean bytes, or line by line when a line is damaged; Arrow strings -> numpy."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from playbook.model import schema
from playbook.readers import frames, local_time, native, textio
from playbook.readers.nvidia_smi.fields import (
    HEX_FIELDS,
    IDENT_FIELDS,
    INDEX_FIELDS,
    METRIC_FIELDS,
    NA,
    NAME_FIELDS,
    REASON_BITS,
    TIME_FIELDS,
    reason_field,
)
from playbook.readers.nvidia_smi.layout import number_fields


@dataclass
class Special:
    """A line that is not a data row (a header, separator, blank, error message, junk, a cut last line)."""
    line: int          # 1-based line number
    start: int         # byte offset of the line
    end: int           # byte offset of its newline (or len(data))
    kind: str          # header | separator | blank | error | junk | truncated
    text: str


@dataclass
class Piece:
    """Lines of one segment (the span after one header) within one block of the file; offsets are the block's."""
    fields: list[str] | None
    units: list[str | None]
    header: Special | None
    start: int                      # byte offset of the piece's first line in the block
    end: int                        # byte offset where the piece ends (the next header, or the block's end)
    first_line: int                 # line number (in the file) of the piece's first line
    last_line: int                  # line number of its last line
    specials: list[Special] = field(default_factory=list)


# --------------------------------------------------------------------------------------------------------------
# Column conversion (Arrow strings -> numpy), shared by the fast path and the line-by-line path. Conversion runs
# batch by batch, so a large log never holds more than one batch of strings besides its numeric columns.

_NA_LIST = pa.array(sorted(set(textio.NA_TOKENS) | {"N/A", "[N/A]", "[Not Supported]", "[Unknown Error]",
                                                     "Not Supported", "[GPU is lost]", "-"}))
_NAT = np.iinfo(np.int64).min


class _Rows:
    """Row bookkeeping for one batch: line numbers and the (shared) mask of rows to drop, with reasons."""

    def __init__(self, lines: np.ndarray, bad: np.ndarray, skips: schema.SkipCounter):
        self.lines, self.bad, self.skips = lines, bad, skips

    def drop(self, mask: np.ndarray, reason_of) -> None:
        new = mask & ~self.bad
        idx = np.flatnonzero(new)
        if not len(idx):
            return
        for i in idx[: self.skips.keep]:
            self.skips.skip(int(self.lines[i]), reason_of(int(i)))
        self.skips.count += max(0, len(idx) - self.skips.keep)
        self.bad |= new


def _strip(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Values without padding and unit suffixes ("70959 MiB" -> "70959"); digits, and the letters of a leading
    word ("inf W" -> "inf"), are never stripped."""
    return pc.ascii_ltrim_whitespace(pc.ascii_rtrim(col, characters=" \t%MiBKGWHzC"))


def _to_float(col: pa.ChunkedArray, rows: _Rows, name: str) -> np.ndarray:
    if pa.types.is_floating(col.type):  # parsed as a number by pyarrow (layout.py)
        return col.to_numpy(zero_copy_only=False)
    x = _strip(col)
    try:
        return pc.cast(x, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    na = pc.or_(pc.starts_with(x, "["), pc.is_in(x, value_set=_NA_LIST))
    x = pc.if_else(na, pa.scalar(None, pa.string()), x)
    try:
        return pc.cast(x, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    s = pd.Series(x.to_numpy(zero_copy_only=False), dtype=object)
    num = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.isnan(num) & s.notna().to_numpy()
    texts = s.to_numpy()
    rows.drop(bad, lambda i: f"bad {name} value {str(texts[i])[:40]!r}")
    return num


def _dict_map(col: pa.ChunkedArray, fn) -> np.ndarray:
    """Apply a Python function to the distinct values only (masks, flags, ids have few)."""
    enc = pc.dictionary_encode(pc.utf8_trim_whitespace(col))
    enc = enc.combine_chunks() if isinstance(enc, pa.ChunkedArray) else enc
    mapped = np.array([fn(v) for v in enc.dictionary.to_pylist()] + [np.nan], dtype=np.float64)
    idx = enc.indices.fill_null(len(mapped) - 1).to_numpy(zero_copy_only=False).astype(np.int64)
    return mapped[idx]


def _hex_value(v: str | None) -> float:
    parsed = textio.parse_number(v) if v is not None else None
    return np.nan if parsed is None else parsed[0]


def _flag_value(v: str | None) -> float:
    v = (v or "").strip().lower()
    return 1.0 if v == "active" else 0.0 if v == "not active" else np.nan


def _iso_times(x: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """int64 ns of "YYYY/MM/DD HH:MM:SS[.fff]" strings via Arrow's ISO parser (raises ArrowInvalid on bad ones).

    The rows of one polling tick share a timestamp, so each distinct value is converted once.
    """
    out = []
    for chunk in (x.chunks if isinstance(x, pa.ChunkedArray) else [x]):
        if not len(chunk):
            continue
        probe = chunk.slice(0, 512)
        if pc.count_distinct(probe).as_py() * 2 <= len(probe):
            enc = pc.dictionary_encode(chunk)
            values = pc.cast(pc.replace_substring(enc.dictionary, "/", "-"), pa.timestamp("ns"))
            codes = enc.indices.fill_null(len(values)).to_numpy(zero_copy_only=False).astype(np.int64)
            table = np.append(values.to_numpy(zero_copy_only=False).astype("datetime64[ns]").view(np.int64), _NAT)
            out.append(table[codes])
        else:
            t = pc.cast(pc.replace_substring(chunk, "/", "-"), pa.timestamp("ns"))
            out.append(t.to_numpy(zero_copy_only=False).astype("datetime64[ns]", copy=False).view(np.int64))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _datetime_ns(parsed: pd.Series) -> np.ndarray:
    """Naive datetimes of any resolution (pandas picks s/ms/us/ns per parse) as int64 ns; NaT and times beyond
    int64 ns (after 2262) are _NAT."""
    v = parsed.to_numpy()
    per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[np.datetime_data(v.dtype)[0]]
    raw = v.view(np.int64)
    ok = ~np.isnat(v) & (np.abs(raw) < np.iinfo(np.int64).max // per)
    out = np.full(len(v), _NAT, dtype=np.int64)
    out[ok] = raw[ok] * per
    return out


# Unix seconds before 1973 (or as many ms/us/ns) are no clock a poller stamped: a counter, an index
_MIN_UNIX_S = 1e8


def _unix_times(x: pa.ChunkedArray) -> np.ndarray | None:
    """int64 ns of a time column whose every non-empty value is a plain number: a writer that stamped `date +%s` or
    time.time() beside nvidia-smi's fields. The unit (s/ms/us/ns) comes from the magnitude; None when any value is
    not a number, or the numbers are too small to be Unix time. A sample of the first values decides first: the
    whole column's cast cost a 14.7 M-row log 1.5 s when its stamps are dates."""
    head = [v for v in x.slice(0, 64).to_pylist() if v]
    try:
        if not head or not all(map(math.isfinite, map(float, head))):
            return None
    except ValueError:  # a date, or any text that is no number
        return None
    blank = pc.equal(x, "")
    try:
        v = pc.cast(pc.if_else(blank, pa.scalar(None, pa.string()), x), pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    values = v.to_numpy(zero_copy_only=False).astype(np.float64)
    finite = np.abs(values[np.isfinite(values)])
    if not len(finite) or float(np.median(finite)) < _MIN_UNIX_S:
        return None
    ns, ok = textio.epoch_to_ns(values)
    return np.where(ok, ns, _NAT)


def _to_time(col: pa.ChunkedArray, rows: _Rows, tz: str) -> np.ndarray:
    """nvidia-smi timestamps ("2024/01/15 10:23:45.123", local time read as `tz`) to int64 ns UTC."""
    x = pc.ascii_trim_whitespace(col)
    unix = _unix_times(x)
    if unix is not None:  # Unix time is UTC already: no local zone to apply
        rows.drop(unix == _NAT, lambda i: f"bad timestamp {str(x[i].as_py())[:40]!r}")
        return unix
    try:
        ns = _iso_times(x)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        s = pd.Series(x.to_numpy(zero_copy_only=False), dtype=object)
        ns = _datetime_ns(pd.to_datetime(s, format="%Y/%m/%d %H:%M:%S.%f", errors="coerce"))
        retry = (ns == _NAT) & s.notna().to_numpy()
        if retry.any():
            # utc=True: a value with its own offset (any of them) is that instant, read as UTC wall time
            again = pd.to_datetime(s[retry], format="mixed", errors="coerce", utc=True).dt.tz_localize(None)
            ns[retry] = _datetime_ns(again)
    rows.drop(ns == _NAT, lambda i: f"bad timestamp {str(x[i].as_py())[:40]!r}")
    return _localize(ns, rows, tz, x)


def _localize(ns: np.ndarray, rows: _Rows, tz: str, x: pa.ChunkedArray) -> np.ndarray:
    """Naive local int64 ns (written in `tz`, in file order) to UTC; times that do not exist there are dropped."""
    if tz and tz.upper() != "UTC":
        local = pd.Series(ns.view("datetime64[ns]"))
        ns = textio.datetime_ns(local_time.localize(local, tz))
        rows.drop(ns == _NAT, lambda i: f"timestamp {str(x[i].as_py())[:40]!r} does not exist in {tz}")
    return ns


def _to_index(col: pa.ChunkedArray, rows: _Rows, name: str) -> np.ndarray:
    vals = _to_float(col, rows, name)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(vals) | (vals < 0) | (vals != np.round(vals))
    rows.drop(bad, lambda i: f"bad {name} {str(col[i].as_py()).strip()[:40]!r}")
    return np.where(bad, -1, np.nan_to_num(vals, nan=-1)).astype(np.int64)


@dataclass
class Columns:
    time_ns: np.ndarray | None = None
    gpu: np.ndarray | None = None          # from index / identity
    gpu_from: str = ""                     # "index", or the identity field the numbers come from
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    bad: np.ndarray | None = None          # rows to drop
    lines: np.ndarray | None = None        # 1-based line number of each row
    ident_ids: list | None = None          # distinct GPU identities of a piece (numbered by `merge`)
    ident_codes: np.ndarray | None = None  # each row's index into ident_ids (-1: none)
    model_ids: list | None = None          # distinct product names (the `name` field) of a piece, then a segment
    model_codes: np.ndarray | None = None  # each row's index into model_ids (-1: none)


def _plan(fields: list[str]) -> tuple[dict[int, str], dict[int, str]]:
    """How to convert each field read: {position: kind (float, hex, flag, time, index, ident, name)}, and the schema
    column of each metric position (the highest-priority field of each column; memory.free stands in for used)."""
    chosen: dict[str, tuple[int, int]] = {}
    for pos, name in enumerate(fields):
        if name in METRIC_FIELDS:
            column, prio = METRIC_FIELDS[name]
            if column not in chosen or prio < chosen[column][0]:
                chosen[column] = (prio, pos)
    plan: dict[int, str] = {pos: ("hex" if fields[pos] in HEX_FIELDS else "float") for _prio, pos in chosen.values()}
    metric_of = {pos: column for column, (_prio, pos) in chosen.items()}
    if "throttle_reasons" not in chosen:
        for pos, name in enumerate(fields):
            if reason_field(name):
                plan[pos] = "flag"
    if "mem_used_mib" not in chosen and "mem_total_mib" in chosen and "memory.free" in fields:
        plan[fields.index("memory.free")] = "float"
    for kinds, kind in ((TIME_FIELDS, "time"), (INDEX_FIELDS, "index"), (IDENT_FIELDS, "ident"),
                        (NAME_FIELDS, "name")):
        pos = next((p for p, n in enumerate(fields) if n in kinds), None)
        if pos is not None and (kind != "ident" or "index" not in plan.values()):
            plan[pos] = kind
    return plan, metric_of


class _Converter:
    """Turns batches of string columns into numeric arrays for one segment, then assembles the columns."""

    def __init__(self, fields: list[str], lines: np.ndarray, skips: schema.SkipCounter, tz: str):
        self.fields, self.lines, self.skips, self.tz = fields, lines, skips, tz
        self.bad = np.zeros(len(lines), dtype=bool)
        self.rows_done = 0
        self.plan, self.metric_of = _plan(fields)
        self.chunks: dict[int, list] = {pos: [] for pos in self.plan}   # ident strings, per batch
        self.arrays: dict[int, np.ndarray] = {}                             # numeric kinds, preallocated
        self.coded: dict[int, tuple[list, np.ndarray]] = {}                 # ident / name (distinct, codes), native

    def add(self, column, n: int) -> None:
        """Convert one batch of `n` rows; `column(pos)`: the Arrow array of field `pos` (text, or float64 numbers)."""
        lo = self.rows_done
        rows = _Rows(self.lines[lo:lo + n], self.bad[lo:lo + n], self.skips)
        for pos, kind in self.plan.items():
            if kind in ("ident", "name"):
                self.chunks[pos].append(pc.utf8_trim_whitespace(column(pos)))
                continue
            if pos not in self.arrays:
                self.arrays[pos] = np.empty(len(self.lines), dtype=np.float64 if kind in ("float", "hex", "flag")
                                            else np.int64)
            self._convert(column(pos), pos, kind, rows, lo)
        self.rows_done += n

    def _convert(self, col, pos: int, kind: str, rows: _Rows, lo: int) -> None:
        name = self.fields[pos]
        if kind == "float":
            out = _to_float(col, rows, name)
        elif kind == "hex":
            out = _dict_map(col, _hex_value)
        elif kind == "flag":
            out = _dict_map(col, _flag_value)
        elif kind == "time":
            out = _to_time(col, rows, self.tz)
        else:
            out = _to_index(col, rows, name)
        self.arrays[pos][lo:lo + len(out)] = out

    def _take(self, pos: int):
        if pos in self.coded:
            return self.coded.pop(pos)
        if self.plan[pos] in ("ident", "name"):  # (distinct values, each row's code)
            return self._ident_codes(pa.chunked_array(self.chunks.pop(pos), type=pa.string()))
        if pos in self.arrays:
            return self.arrays.pop(pos)
        return np.zeros(0, dtype=np.int64 if self.plan[pos] in ("time", "index") else np.float64)

    def finish(self) -> Columns:
        out = Columns()
        fields = self.fields
        flags: dict[int, np.ndarray] = {}
        for pos, kind in list(self.plan.items()):
            values = self._take(pos)
            if kind == "time":
                out.time_ns = values
            elif kind == "index":
                out.gpu, out.gpu_from = values, "index"
            elif kind == "ident":
                out.ident_ids, out.ident_codes = values
                out.gpu_from = fields[pos]
            elif kind == "name":
                out.model_ids, out.model_codes = values
            elif kind == "flag":
                flags[pos] = values
            elif pos in self.metric_of:
                out.metrics[self.metric_of[pos]] = values
            else:
                out.metrics["_free"] = values
        if flags:
            mask = np.zeros(len(self.lines))
            for pos, values in flags.items():
                mask += REASON_BITS[reason_field(fields[pos])] * values
            out.metrics["throttle_reasons"] = mask
        free = out.metrics.pop("_free", None)
        if free is not None:
            out.metrics["mem_used_mib"] = out.metrics["mem_total_mib"] - free
        return out

    @staticmethod
    def _ident_codes(values: pa.ChunkedArray) -> tuple[list, np.ndarray]:
        """The distinct identities (in order of first appearance) and each row's code (-1: none)."""
        if not len(values):
            return [], np.zeros(0, dtype=np.int64)
        enc = pc.dictionary_encode(values).combine_chunks()
        codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        return enc.dictionary.to_pylist(), codes


def merge(chunks: list[Columns], skips: schema.SkipCounter) -> Columns:
    """One segment's columns from the columns of its pieces (emptying `chunks`, so each array is held once).

    GPU identities (bus ids, UUIDs) are numbered over the whole segment: nvidia-smi numbers GPUs in PCI bus order;
    UUIDs and serials keep their order of first appearance."""
    out = Columns(gpu_from=chunks[0].gpu_from if chunks else "")
    if not chunks:
        out.bad, out.lines = np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
        return out

    rows = sum(len(c.lines) for c in chunks)

    def join(arrays: list[np.ndarray]) -> np.ndarray:
        if len(arrays) == 1:
            return arrays[0]
        out = np.concatenate(arrays)
        arrays.clear()  # the pieces' heap pages are reused by the next column's join (a trim per column would
        return out      # hand them back only to fault fresh ones in: ~1 s per 5 M rows on this machine)

    attrs = ["lines", "bad", "time_ns", "gpu"]

    def take(key: str) -> np.ndarray | None:
        if key in attrs:
            arrays = [getattr(c, key) for c in chunks]
            for c in chunks:
                setattr(c, key, None)  # each piece's array is freed once joined
            return None if arrays[0] is None else join(arrays)
        return frames.joined([c.metrics.pop(key) for c in chunks])  # metrics: joined as the table is built

    models = _merge_codes(chunks) if chunks[0].model_ids is not None else None
    joined = frames.map_columns(take, attrs + list(chunks[0].metrics), rows)
    out.lines, out.bad, out.time_ns, out.gpu = (joined.pop(a) for a in attrs)
    out.metrics.update(joined)
    if out.gpu is None and chunks[0].ident_ids is not None:
        known: dict = {}
        coded = []
        for c in chunks:
            remap = np.array([known.setdefault(v, len(known)) for v in c.ident_ids] + [-1], dtype=np.int64)
            coded.append(remap[c.ident_codes])  # code -1 picks the trailing -1
        ids = list(known)
        order = sorted(range(len(ids)), key=lambda k: ids[k]) if "bus" in out.gpu_from else range(len(ids))
        rank = np.full(len(ids) + 1, -1, dtype=np.int64)
        for r, k in enumerate(order):
            rank[k] = r
        codes = join(coded)
        out.gpu = rank[codes]
        empty = np.array([not v for v in ids] + [True])[codes]
        _Rows(out.lines, out.bad, skips).drop((out.gpu < 0) | empty, lambda i: f"missing {out.gpu_from}")
    if models is not None:  # each row's product name as a code carried with the metrics (dropped rows and all)
        out.model_ids, codes = models
        out.metrics["_model"] = np.where(codes >= 0, codes, np.nan)
    chunks.clear()
    if rows > 100_000:  # the pieces were heap-sized: hand their pages back once all columns are joined
        frames.release_memory()
    return out


def _merge_codes(chunks: list[Columns]) -> tuple[list, np.ndarray]:
    """The segment's distinct product names (in order of first appearance) and each row's code into them."""
    known: dict = {}
    coded = []
    for c in chunks:
        remap = np.array([known.setdefault(v, len(known)) for v in c.model_ids] + [-1], dtype=np.int64)
        coded.append(remap[c.model_codes])  # code -1 picks the trailing -1
    return list(known), np.concatenate(coded) if len(coded) > 1 else coded[0]


def gpu_models(part: dict[str, np.ndarray], ids: list | None) -> dict[int, str]:
    """GPU number -> its product name (the most frequent of its rows'), popping the part's `_model` codes."""
    codes = part.pop("_model", None)
    if codes is None or not ids:
        return {}
    out: dict[int, str] = {}
    ok = np.isfinite(codes)
    for g in np.unique(part["gpu"][ok]):
        c = codes[ok & (part["gpu"] == g)].astype(np.int64)
        name = str(ids[int(np.bincount(c).argmax())])
        if name and not NA.match(name):
            out[int(g)] = name
    return out


# --------------------------------------------------------------------------------------------------------------
# Parsing a segment: fast (pyarrow over the clean bytes, streamed) or line by line.

def _clean_pieces(data: bytes, seg: Piece) -> list[memoryview]:
    view = memoryview(data)
    pieces, pos = [], seg.start
    for sp in seg.specials:
        if sp.start > pos:
            pieces.append(view[pos:sp.start])
        pos = min(sp.end + 1, seg.end)
    if seg.end > pos:
        pieces.append(view[pos:seg.end])
    return pieces


def _row_lines(seg: Piece) -> np.ndarray:
    lines = np.arange(seg.first_line, seg.last_line + 1, dtype=np.int64)
    if seg.specials:
        drop = np.array([sp.line for sp in seg.specials], dtype=np.int64) - seg.first_line
        keep = np.ones(len(lines), dtype=bool)
        keep[drop[(drop >= 0) & (drop < len(lines))]] = False
        lines = lines[keep]
    return lines


def parse_fast(data: bytes, seg: Piece, skips: schema.SkipCounter, tz: str) -> Columns | None:
    """Stream the segment's clean lines through pyarrow; None when a line is damaged (use parse_lines).

    Tried first with the plain-number fields parsed as float64 (layout.py), kept only when every row converts
    cleanly; otherwise (or when no field is a plain number) every field is read as text."""
    lines = _row_lines(seg)
    pieces = _clean_pieces(data, seg)
    blob = (pieces[0] if len(pieces) == 1 else b"".join(pieces)) if pieces else b""
    if blob and not textio.is_utf8(blob):
        return None  # pyarrow's invalid-row callback would print a traceback on such a row
    if blob and native.C is not None:  # the one-pass C parser (readers/_native.c)
        cols = _parse_native(blob, seg.fields, lines, tz)
        if cols is not None:
            return cols
    head = bytes(blob[:4096])
    sample = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    numbers = number_fields(sample, _plan(seg.fields)[0], len(seg.fields))
    for typed in ([numbers] if numbers else []) + [frozenset()]:
        cols = _parse_blob(blob, typed, seg.fields, lines, skips, tz)
        if cols is not None:
            return cols
    return None


def _parse_blob(blob, numbers: frozenset[int], fields: list[str], lines: np.ndarray, skips: schema.SkipCounter,
                tz: str) -> Columns | None:
    """The columns of `blob` (the piece's clean lines), the fields `numbers` parsed as float64 and the rest as
    text; None when a line has another number of fields, or a typed field's value is not a number."""
    attempt = schema.SkipCounter(skips.path, keep=skips.keep)
    conv = _Converter(fields, lines, attempt, tz)
    if blob:
        names = [f"c{i}" for i in range(len(fields))]
        invalid: list[str] = []

        def on_invalid(row) -> str:
            invalid.append(row.text)
            return "error"  # positions of damaged lines are needed: the caller re-reads line by line

        try:
            reader = pacsv.open_csv(
                pa.py_buffer(blob),
                read_options=pacsv.ReadOptions(column_names=names, block_size=4 << 20,
                                               use_threads=len(blob) > 1 << 20),  # a small file: no thread hand-offs
                parse_options=pacsv.ParseOptions(delimiter=",", quote_char=False, invalid_row_handler=on_invalid),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.float64() if i in numbers else pa.string() for i, n in enumerate(names)},
                    include_columns=[names[pos] for pos in conv.plan],
                    strings_can_be_null=False, quoted_strings_can_be_null=False,
                    check_utf8=False))  # is_utf8 checked the whole blob
            for batch in reader:
                if conv.rows_done + batch.num_rows > len(lines):
                    return None
                conv.add(lambda pos, b=batch: b.column(names[pos]), batch.num_rows)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError):
            return None
        if invalid:
            return None
    if conv.rows_done != len(lines):
        return None
    skips.count += attempt.count
    skips.reasons += attempt.reasons[: max(0, skips.keep - len(skips.reasons))]
    cols = conv.finish()
    cols.bad, cols.lines = conv.bad, lines
    return cols


_NATIVE_KINDS = {"float": "f", "index": "i", "time": "t", "ident": "d", "name": "d", "hex": "d", "flag": "d"}
_DICT_VALUE = {"hex": _hex_value, "flag": _flag_value}


def _parse_native(blob, fields: list[str], lines: np.ndarray, tz: str) -> Columns | None:
    """The columns of `blob` parsed by the C parser (readers/_native.c) in one pass, the GIL released; None when a row is
    not the simple case it reads (then the pyarrow path reads it, and names any bad value)."""
    conv = _Converter(fields, lines, schema.SkipCounter(""), tz)
    n = len(lines)
    outs = [np.empty(n, dtype=np.float64 if conv.plan[pos] == "float" else np.int64) if pos in conv.plan else None
            for pos in range(len(fields))]
    kinds = "".join(_NATIVE_KINDS[conv.plan[pos]] if pos in conv.plan else "-" for pos in range(len(fields)))
    distinct = native.C.parse_rows(blob, kinds.encode(), outs, n)
    if distinct is None:
        return None
    for pos, kind in conv.plan.items():
        values = outs[pos]
        if kind in ("ident", "name"):
            conv.coded[pos] = (distinct[pos], values)
            continue
        if kind in _DICT_VALUE:
            values = np.array([_DICT_VALUE[kind](v) for v in distinct[pos]], dtype=np.float64)[values]
        elif kind == "time" and tz and tz.upper() != "UTC":
            values = textio.datetime_ns(local_time.localize(pd.Series(values.view("datetime64[ns]")), tz))
            if (values == _NAT).any():
                return None  # a time that does not exist there: the pyarrow path names it
        conv.arrays[pos] = values
    conv.rows_done = n
    cols = conv.finish()
    cols.bad, cols.lines = conv.bad, lines
    return cols


def parse_lines(data: bytes, seg: Piece, skips: schema.SkipCounter, tz: str) -> Columns:
    """The exact, slower path: split each line in Python, count damaged ones, then convert like the fast path."""
    width = len(seg.fields)
    special_lines = {sp.line for sp in seg.specials}
    cols: list[list[str]] = [[] for _ in range(width)]
    lines: list[int] = []
    text = data[seg.start:seg.end].decode("utf-8", errors="replace")
    for k, line in enumerate(text.split("\n")):
        no = seg.first_line + k
        if no in special_lines or no > seg.last_line or not line.strip():
            continue
        cells = line.split(",")
        if len(cells) != width:
            skips.skip(no, f"{len(cells)} of {width} fields {line.strip()[:60]!r}")
            continue
        for c, v in zip(cols, cells, strict=True):
            c.append(v)
        lines.append(no)
    line_arr = np.asarray(lines, dtype=np.int64)
    conv = _Converter(seg.fields, line_arr, skips, tz)
    conv.add(lambda pos: pa.array(cols[pos], pa.string()), len(line_arr))
    out = conv.finish()
    out.bad, out.lines = conv.bad, line_arr
    return out
