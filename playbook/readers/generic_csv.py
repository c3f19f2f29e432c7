"""A telemetry CSV written by anything (a monitoring export, a home-grown poller, the telemetry table saved as CSV)
whose header names say what the columns are.

Recognised headers (case, spaces, dots and `[unit]` / `(unit)` suffixes ignored): a time column (time,
timestamp, ts, datetime, epoch, unix_time, time_ms ...: ISO strings, or epoch numbers in s/ms/us/ns from the
name's suffix or their magnitude; small numbers are seconds since the start); a GPU column (gpu, gpu_id,
gpu_index, index, device, entity ...; "GPU 3", "cuda:3" and UUIDs are understood); an optional host column
(host, hostname, node, instance ...); and metric columns such as utilization / util / gpu_util, mem_util,
memory_used (MiB; _mb/_gb/_bytes suffixes converted), power, sm_clock, mem_clock, temperature, throttle_reasons,
sm_active (0-1, or percent), pcie/nvlink tx/rx, plus every schema column name itself. Delimiters: , tab ;.
Values may carry units ("97 %", "70959 MiB"). Rows whose time, GPU or a metric cannot be read are skipped and
counted. Without a time column, ticks (the GPU number stops increasing) get synthetic times `interval_s` apart.
"""

from __future__ import annotations

import csv
import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import frames, headers, local_time, textio

FORMAT = "telemetry CSV with named columns"

BLOCK_BYTES = 8 << 20  # text parsed per block: bounds the transient memory of one pyarrow parse (~10x the block)
MAX_LINE_BYTES = 64 << 20  # a header or row longer than this is not a table
MAX_COLUMNS = 4096  # a wider header is not telemetry (W&B's per-GPU system columns: ~20 a GPU)


def normalize(name: str) -> tuple[str, str | None]:
    """'memory.used [MiB]' -> ('memory_used', 'mib'); '#Entity' -> ('entity', None). Linear in the name."""
    base, unit = headers.split_unit(name)
    return _snake(base), unit


def _snake(text: str) -> str:
    out, gap = [], False
    for ch in text.strip().lower():
        if ch.isascii() and ch.isalnum():
            if gap and out:
                out.append("_")
            out.append(ch)
            gap = False
        else:
            gap = True
    return "".join(out)


def _delimiter(line: str) -> str | None:
    counts = {sep: line.count(sep) for sep in (",", "\t", ";")}
    sep = max(counts, key=counts.get)
    return sep if counts[sep] >= 1 else None


PREAMBLE_LINES = 5  # tool messages a header may follow (rocm-smi's "WARNING: Unlocked monitor_devices lock ...")


_EXCEL_SEP = re.compile(r"\ufeff?sep=[,;\t|]?")  # (`sep=` alone: a tab the line's strip took)


def _header(head: str) -> tuple[int, str, list[str]] | None:
    """(line index, delimiter, names) of the header: the first line that is not blank or a '#' comment, or, when
    that line names no telemetry, one of the next PREAMBLE_LINES lines that does (the lines above it are counted
    as skipped by `read`)."""
    first = None
    above: list[str] = []  # the lines above the candidate
    lines = head.split("\n")[:50]
    for k, line in enumerate(lines):
        s = line.strip()
        if not s or (s.startswith("#") and not s.lower().startswith("#entity")) or _EXCEL_SEP.fullmatch(s):
            continue  # (`sep=,`: the delimiter line Excel reads, Grafana's "Download for Excel" writes first)
        sep = _delimiter(s)
        found = (k, sep, header_names(s, sep)) if sep is not None else None
        if not above:
            first = found
        elif found is not None and _below_messages(found, above, lines[k + 1:k + 3]) \
                and headers.is_telemetry(found[2]) and not _values_not_names(found[2]):
            return found
        if first is not None and not above and headers.is_telemetry(first[2]):
            return first
        above.append(s)
        if len(above) > PREAMBLE_LINES:
            break
    return first


def _below_messages(found: tuple[int, str, list[str]], above: list[str], below: list[str]) -> bool:
    """A header under a tool's messages: three or more names, at least twice the fields of each line above, and a
    row of as many fields under it."""
    _k, sep, names = found
    row = next((x.strip() for x in below if x.strip()), "")
    return (len(names) >= 3 and all(2 * (x.count(sep) + 1) <= len(names) for x in above)
            and row.count(sep) + 1 == len(names))


def check_width(src: str, columns: int, line: int) -> None:
    """InputError when a header holds more than MAX_COLUMNS columns (before any row is parsed)."""
    if columns > MAX_COLUMNS:
        raise InputError(f"{src}: line {line} is a header of {columns:,} columns; a telemetry table has at most "
                         f"{MAX_COLUMNS:,}")


def header_names(line: str, sep: str) -> list[str]:
    """The names of a header line, quoted CSV-style where a name holds the delimiter (Grafana's
    `"DCGM_FI_DEV_GPU_UTIL{gpu=""0"", Hostname=""n1""}"`)."""
    if '"' not in line:
        return [c.strip() for c in line.split(sep)]
    try:
        row = next(csv.reader([line], delimiter=sep, skipinitialspace=True), [])
    except csv.Error:  # a stray carriage return or NUL inside the line: split it plainly
        row = line.split(sep)
    return [c.strip().strip('"') for c in row]


_KEY_VALUE = re.compile(r"^[A-Za-z_][\w ./-]{0,40}[:=]\s*-?\d")


_JSON_OBJECT = re.compile(r"\{\s*\"[^\"]{1,80}\"\s*:")


def _values_not_names(names: list[str]) -> bool:
    """True when most cells of the "header" are `key: value` pairs: a log line with commas (loguru's
    `... - epoch: 1/300, iter: 10/1849, mem: 5123Mb, iter_time: 0.312s`), not a header; or when it holds a JSON
    object (DLLogger's `DLLL {"timestamp": "1615543222.1", ...}`)."""
    pairs = sum(1 for n in names if _KEY_VALUE.match(n))
    return pairs * 2 > len(names) or any(_JSON_OBJECT.search(n) for n in names[:8])


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _a_row(head: str, at: int) -> bool:
    """True when the "header" at line `at` holds numbers and the next non-blank line is the same text but for its
    numbers (and the runs of spaces that align them): a log line like the lines below it (Swin's tab-separated
    `... Train: [14/300][250/1251]\teta 0:10:52 lr 0.000710\ttime 0.6408 (0.6516)\t...\tmem 14764MB`), not a
    header; a header names its columns once, above rows that differ from it in their words."""
    lines = head.split("\n")
    nxt = next((x for x in lines[at + 1:] if x.strip()), None)
    if nxt is None or not _NUMBER.search(lines[at]):
        return False
    shape = lambda text: re.sub(r" +", " ", _NUMBER.sub("#", text.strip()))  # noqa: E731
    return shape(lines[at]) == shape(nxt)


def sniff(head: str) -> bool:
    """A delimited header whose names (see playbook.readers.headers) hold a GPU metric and a time, GPU or per-GPU
    column."""
    if textio.looks_like_json(head) or head.lstrip().startswith("<"):
        return False  # JSON / XML documents: the documents reader's
    found = _header(head)
    if found is None or _values_not_names(found[2]) or _a_row(head, found[0]):
        return False
    if headers.is_telemetry(found[2]):
        return True
    # a header wider than the head: decide on its visible part (a time or GPU column); `read` sees all of it
    lines = head.split("\n")
    cut = len(head) >= textio.HEAD_BYTES - 4 and len(lines) - 1 <= found[0]
    return cut and any(m.role in ("time", "gpu") for m in headers.assign(found[2]).values())


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read a telemetry CSV whose header names say what the columns hold into a Bundle (telemetry), streaming it
    in blocks of BLOCK_BYTES."""
    path = Path(path)
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    skips = schema.SkipCounter(src)
    with textio.open_text(path) as stream:
        data = stream.read(textio.HEAD_BYTES)
        found = _header(textio.decode(data))
        if found is None:
            raise InputError(f"{src}: no delimited header line")
        skip_lines, sep, _names = found
        start = 0
        for k in range(skip_lines):
            end = data.index(b"\n", start) if b"\n" in data[start:] else len(data)
            text = textio.decode(data[start:end]).strip()
            if text and not text.startswith("#") and not _EXCEL_SEP.fullmatch(text):  # a tool's message above it
                skips.skip(k + 1, f"a line above the header {text[:50]!r}")
            start = min(end + 1, len(data))
        while b"\n" not in data[start:]:  # a header wider than the head: read on to its end
            more = stream.read(BLOCK_BYTES)
            if not more:
                break
            data += more
            if len(data) - start > MAX_LINE_BYTES:
                raise InputError(f"{src}: line {skip_lines + 1} is longer than {MAX_LINE_BYTES >> 20} MiB")
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        check_width(src, data.count(sep.encode(), start, end) + 1, skip_lines + 1)  # before splitting it
        names = header_names(textio.decode(data[start:end]).strip(), sep)
        builder = TableBuilder(src, names, textio.host_from_path(path), skips, tz)
        if not builder.metrics:
            raise InputError(f"{src}: no GPU metric among the columns {', '.join(names[:8])}")
        rest, line = data[end + 1:], skip_lines + 2
        while True:
            more = stream.read(BLOCK_BYTES)
            block = rest + more
            cut = block.rfind(b"\n") + 1 if more else len(block)
            if more and cut == 0:
                if len(block) > MAX_LINE_BYTES:
                    raise InputError(f"{src}: a line after line {line} is longer than {MAX_LINE_BYTES >> 20} MiB")
                rest = block
                continue
            part, rest = block[:cut], block[cut:]
            if part.strip():
                table, lines = _parse_block(part, sep, len(names), line, skips, src)
                builder.add(table, lines)
            line += part.count(b"\n")
            if not more:
                break
    bundle = builder.bundle(interval_s)
    bundle.warnings[:0] = stream.notes
    return bundle


def _parse_block(body: bytes, sep: str, width: int, first_line: int, skips: schema.SkipCounter,
                 src: str) -> tuple[pa.Table, np.ndarray]:
    """One block of data rows as string columns c0..c{width-1}, and each row's 1-based line number (the block
    starts at `first_line`); rows with the wrong number of fields are skipped and counted."""
    cols = [f"c{i}" for i in range(width)]
    bad_rows: list[tuple[int | None, str]] = []
    if not textio.is_utf8(body):  # binary data (text was transcoded by the stream): name the line
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{src}: line {first_line + body.count(NL, 0, exc.start)}: bytes that are not text") \
                from None

    def on_invalid(row) -> str:
        bad_rows.append((row.number, row.text))
        return "skip"

    try:
        table = pacsv.read_csv(
            pa.py_buffer(body),
            read_options=pacsv.ReadOptions(column_names=cols, use_threads=False, encoding="utf8",
                                           block_size=max(1 << 20, len(body) + 1)),
            parse_options=pacsv.ParseOptions(delimiter=sep, invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in cols},
                                                 strings_can_be_null=False))
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0][:120]
        raise InputError(f"{src}: unreadable CSV near line {first_line} ({first})") from None
    # pyarrow numbers rows by counting non-empty lines; line k of the block is line first_line + k
    raw = np.frombuffer(body, dtype=np.uint8)
    ends = np.flatnonzero(raw == 10)
    starts = np.r_[0, ends + 1]
    stops = np.r_[ends, len(raw)]
    length = stops - starts
    cr = (length == 1) & (raw[np.minimum(starts, max(len(raw) - 1, 0))] == 13) if len(raw) else length > 0
    nonempty = np.flatnonzero((length > 0) & ~cr) + first_line
    invalid = np.array([n for n, _ in bad_rows if n is not None], dtype=np.int64)
    keep = np.ones(len(nonempty), dtype=bool)
    keep[invalid[(invalid >= 1) & (invalid <= len(nonempty))] - 1] = False
    for number, row_text in bad_rows:
        line = None if number is None or number > len(nonempty) else int(nonempty[number - 1])
        skips.skip(line, f"{row_text.count(sep) + 1} of {width} fields {row_text[:50]!r}")
    lines = nonempty[keep]
    if len(lines) != table.num_rows:  # not expected with pyarrow's numbering; stay honest if it happens
        lines = np.arange(table.num_rows, dtype=np.int64) + first_line
    if sep == ";":  # Excel and LibreOffice separate fields by ';' where ',' is the decimal mark (de, fr, ...)
        table = pa.table([pc.replace_substring_regex(c, _DECIMAL_COMMA, r"\1.\2") for c in table.columns],
                         names=table.column_names)
    return table, lines


_DECIMAL_COMMA = r"^(\s*-?\d+),(\d+\s*[^\d\s,.:]*\s*)$"  # 97,5 / 250,25 W; not 1,234,5 nor 10:00:00,123


NL = b"\n"
_FLAGS = {"active": 1.0, "not active": 0.0, "enabled": 1.0, "disabled": 0.0, "true": 1.0, "false": 0.0,
          "yes": 1.0, "no": 0.0, "on": 1.0, "off": 0.0}
_NAT = np.iinfo(np.int64).min


class TableBuilder:
    """Turns blocks of string columns named `names` into one telemetry table, by the names' meaning
    (playbook.readers.headers). Used for CSV blocks and for records flattened from JSON / XML documents.

    Rows whose time, GPU or a metric cannot be read are skipped and counted in `skips` with their line (a value
    outside what a GPU can report is read as missing by schema.check_physics, the row kept). Per-GPU columns (W&B's
    `system.gpu.N.*`) give one row per (time, GPU N); rows where GPU N has no value are left out.
    """

    def __init__(self, src: str, names: list[str], host: str, skips: schema.SkipCounter, tz: str = "UTC") -> None:
        self.src, self.names, self.default_host, self.skips, self.tz = src, names, host, skips, tz
        self.where = "line"  # what `lines` number: CSV lines, or records of a document stream
        self.cols = headers.assign(names)
        self.metrics = {pos: m for pos, m in self.cols.items() if m.role in schema.TELEMETRY_METRICS}
        self.aggregated = [names[p] for p in headers.aggregates(names, self.metrics)]
        self.metrics = {p: m for p, m in self.metrics.items() if names[p] not in self.aggregated}
        self.ident = {}
        for pos, m in sorted(self.cols.items(), key=lambda kv: kv[1].rank):
            if m.role in ("time", "host", "gpu"):
                self.ident.setdefault(m.role, (pos, m))
        # per-GPU column groups: (GPU, host or "" for the file's host) of labelled / numbered columns
        self.gpus = sorted({(m.gpu, m.host or "") for m in self.metrics.values() if m.gpu is not None})
        self.plain = any(m.gpu is None for m in self.metrics.values())
        # a table of a training loop (a step column, no clock): rows without any GPU metric are other metrics' rows
        self.sparse = "time" not in self.ident and any(headers.tokens(x) == ["step"] for x in names)
        self.factors: dict[int, float] = {}
        self.time_unit: str | None = None
        self.note: str | None = None
        self.parts: list[dict[str, np.ndarray]] = []
        self.hosts: dict[str, int] = {}
        self.gpu_ids: dict[str, int] = {}
        self.rows = 0
        self.seen = 0  # data rows offered so far (the tick of a row without a time column)
        self.blanked = 0  # unreadable metric cells left empty in rows kept for their other readings
        self.restarts = 0  # the header line written again inside the file (a logger restarted into it: GPU-Z)
        self.blanked_why: list[str] = []

    # ---------------------------------------------------------------------------------------------- per block
    def add(self, table: pa.Table, lines: np.ndarray) -> None:
        """Add one block of rows: `table` has string columns c0.. in header order; `lines` their line numbers."""
        if (keep := headers.header_repeats(table, self.names)) is not None:  # a logger restarted into it
            self.restarts += int(len(keep) - keep.sum())
            table, lines = table.filter(pa.array(keep)), lines[keep]
        n = table.num_rows
        if not n:
            return
        bad = np.zeros(n, dtype=bool)
        drop = self._dropper(lines, bad)
        values = self._metric_values(table, drop, lines)
        gpu = self._gpu_numbers(table, drop, n)
        codes = self._host_codes(table, n)
        if "time" in self.ident:
            time_ns = self._times(table.column(self.ident["time"][0]), drop, n)
        else:  # the row's number: with per-GPU columns each row is one tick (see `bundle`)
            time_ns = np.arange(self.seen, self.seen + n, dtype=np.int64)
        self.seen += n
        self._add_parts(values, gpu, codes, time_ns, ~bad)

    def _dropper(self, lines: np.ndarray, bad: np.ndarray):
        """drop(mask, why): count the rows of `mask` not dropped yet as skips (the first ones with their line and
        `why(row)`) and mark them in `bad`."""
        def drop(mask: np.ndarray, why) -> None:
            new = mask & ~bad
            for i in np.flatnonzero(new)[: max(0, self.skips.keep - len(self.skips.reasons))]:
                self.skips.reasons.append(f"{self.where} {int(lines[i])}: {why(int(i))}")
            self.skips.count += int(new.sum())
            bad[:] |= new

        return drop

    def _metric_values(self, table: pa.Table, drop, lines: np.ndarray) -> dict[int, np.ndarray]:
        """Each metric column's values in the schema's unit (NaN where empty). An unreadable value is left empty
        and counted (the row's other readings stay: one damaged cell is no reason to lose them); a row with no
        readable metric at all is dropped. The first block with values settles each column's meaning and unit
        factor."""
        values: dict[int, np.ndarray] = {}
        damaged: list[tuple[np.ndarray, _LazyStrings, str]] = []
        for pos, m in list(self.metrics.items()):
            lazy = _LazyStrings(table, pos)
            v = _fast_floats(table.column(pos))
            unit = None
            if v is None:
                v, unparsed, unit = _numbers(lazy.get())
                if unparsed.any():
                    damaged.append((unparsed, lazy, self.names[pos]))
            if pos not in self.factors and np.isfinite(v).any():
                m = headers.settle(m, v)
                if m.role is None:  # its values say it is no reading (a counter named like one)
                    del self.metrics[pos]
                    continue
                if m.unit is None and unit:
                    m = dataclasses.replace(m, unit=unit)
                self.metrics[pos] = m
                self.factors[pos] = headers.factor(m, v)
            values[pos] = headers.recode(m, v * self.factors.get(pos, 1.0))  # implausible: schema.check_physics
        if damaged:
            self._blank(damaged, values, drop, lines)
        return values

    def _blank(self, damaged, values: dict[int, np.ndarray], drop, lines: np.ndarray) -> None:
        """Count the unreadable cells left empty; drop the rows where no metric reads at all."""
        n = len(damaged[0][0])
        readable = np.logical_or.reduce([np.isfinite(v) for v in values.values()]) if values else np.zeros(n, bool)
        for mask, lazy, name in damaged:
            drop(mask & ~readable, lambda i, s=lazy, k=name: f"bad {k} value {str(s.get().iloc[i])[:30]!r}")
        for mask, lazy, name in damaged:
            for i in np.flatnonzero(mask & readable):
                self.blanked += 1
                if len(self.blanked_why) < self.skips.keep:
                    cell = str(lazy.get().iloc[i])[:30]
                    self.blanked_why.append(f"{self.where} {int(lines[i])}: bad {name} value {cell!r}")

    def _gpu_numbers(self, table: pa.Table, drop, n: int) -> np.ndarray:
        """The GPU number per row (0 without a GPU column); unreadable ones drop their row."""
        gpu_col = self.ident.get("gpu")
        if not gpu_col:
            return np.zeros(n, dtype=np.int64)
        fast = _fast_floats(table.column(gpu_col[0]))
        if fast is not None and np.isfinite(fast).all() and (fast >= 0).all() and (fast < MAX_GPU_NUMBER).all() \
                and (fast == np.round(fast)).all():
            return fast.astype(np.int64)
        return _gpus(_strings(table, gpu_col[0]), drop, self.gpu_ids)

    def _host_codes(self, table: pa.Table, n: int) -> np.ndarray:
        """The host code per row (into self.hosts): the host column's name, or the file's host where blank."""
        host_col = self.ident.get("host")
        if not host_col:
            return np.full(n, self.hosts.setdefault(self.default_host, len(self.hosts)), dtype=np.int32)
        enc = pc.utf8_trim_whitespace(table.column(host_col[0])).combine_chunks().dictionary_encode()
        local = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        names = [x or self.default_host for x in enc.dictionary.to_pylist()]
        return np.array([self.hosts.setdefault(x, len(self.hosts)) for x in names], dtype=np.int32)[local]

    def _add_parts(self, values: dict[int, np.ndarray], gpu: np.ndarray, codes: np.ndarray, time_ns: np.ndarray,
                   good: np.ndarray) -> None:
        """One part per column group (the plain columns, each per-GPU group) of the `good` rows holding a sample."""
        n = len(good)
        groups = [(None, [p for p, m in self.metrics.items() if m.gpu is None])] if self.plain else []
        groups += [(g, [p for p, m in self.metrics.items() if (m.gpu, m.host or "") == g]) for g in self.gpus]
        for g, positions in groups:
            keep = good.copy()
            has = np.zeros(n, dtype=bool)
            for p in positions:  # an infinite reading is a reading: schema.check_physics counts and blanks it
                has |= ~np.isnan(values[p])
            if g is not None:  # a per-GPU column group: rows where this GPU has any value (an empty cell is no sample)
                keep &= has
            elif self.sparse:  # a training loop's table: rows other loggers wrote (loss only) hold no sample
                keep &= has
            if not keep.any():
                continue
            part = {"time": time_ns[keep], "gpu": (gpu if g is None else np.full(n, g[0], dtype=np.int64))[keep],
                    "host": codes[keep] if g is None or not g[1] else
                    np.full(int(keep.sum()), self.hosts.setdefault(g[1], len(self.hosts)), dtype=np.int32)}
            part.update(self._group_metrics(positions, values, keep))
            self.parts.append(part)
            self.rows += int(keep.sum())

    def _group_metrics(self, positions: list[int], values: dict[int, np.ndarray], keep: np.ndarray
                       ) -> dict[str, np.ndarray]:
        """The group's metric columns on the kept rows: the first column of each role; one-reason columns
        (clock-event bits) summed into throttle_reasons unless a mask column gives it."""
        part: dict[str, np.ndarray] = {}
        for p in positions:
            m = self.metrics[p]
            if m.bit:
                bits = np.where(np.nan_to_num(values[p][keep]) > 0, float(m.bit), 0.0)
                prev = part.get("_bits")
                part["_bits"] = bits if prev is None else prev + bits
            elif m.role not in part:
                part[m.role] = values[p][keep]
        if "_bits" in part:
            bits = part.pop("_bits")
            if "throttle_reasons" not in part:
                part["throttle_reasons"] = bits
        return part

    def _times(self, col, drop, n: int) -> np.ndarray:
        """int64 ns per row from the time column (Arrow strings); _NAT where unreadable (counted)."""
        if col is None:
            return np.full(n, _NAT, dtype=np.int64)  # placed on ticks when the table is built
        pos, m = self.ident["time"]
        numbers = _fast_floats(col) if self.time_unit != "datetime" else None
        s = pd.Series(col.to_pandas(), dtype=object).str.strip() if numbers is None else None
        if numbers is None:
            numbers = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        if self.time_unit != "datetime" and np.isfinite(numbers).sum() >= max(1, int(0.9 * n)):
            if self.time_unit is None:
                unit = m.unit if m.unit in ("s", "ms", "us", "ns") else None
                if unit is None and (m.relative or np.nanmedian(np.abs(numbers)) < 1e8):
                    unit = "s"
                    self.note = (f"{self.src}: the {self.names[pos]} column holds seconds since the start: placed "
                                 f"from {textio.SYNTHETIC_EPOCH:%Y-%m-%dT%H:%M:%SZ}")
                self.time_unit = unit or _epoch_unit(numbers)
            ns, ok = textio.epoch_to_ns(numbers, self.time_unit)
            drop(~ok, lambda i: f"bad time {str(col[i])[:30]!r}")
            return np.where(ok, ns, _NAT)
        self.time_unit = "datetime"
        if s is None:
            s = pd.Series(col.to_pandas(), dtype=object).str.strip()
        try:  # ISO 8601 is parsed vectorised; anything else element by element ("mixed")
            parsed = pd.to_datetime(s, utc=False, format="ISO8601")
        except (ValueError, TypeError):
            try:
                parsed = pd.to_datetime(s, errors="coerce", utc=False, format="mixed")
            except (ValueError, TypeError):  # offsets mixed with naive times: read everything as UTC
                parsed = pd.to_datetime(s, errors="coerce", utc=True, format="mixed")
        if isinstance(parsed.dtype, pd.DatetimeTZDtype):
            parsed = parsed.dt.tz_convert("UTC")
        else:
            parsed = local_time.localize(parsed, self.tz)
        bad = parsed.isna().to_numpy()
        drop(bad, lambda i: f"bad time {str(s.iloc[i])[:30]!r}")
        ns = textio.datetime_ns(parsed)  # a date nanoseconds cannot hold (year 1, 9999) becomes NaT
        drop((ns == _NAT) & ~bad, lambda i: f"time {str(s.iloc[i])[:30]!r} out of range")
        ns[bad] = _NAT
        return ns

    # ---------------------------------------------------------------------------------------------- the table
    def bundle(self, interval_s: float | None = None) -> schema.Bundle:
        """The Bundle: the telemetry table (sorted, schema dtypes) and the warnings (skips, synthetic times)."""
        bundle = schema.Bundle(inputs=[self.src])
        synthetic = "time" not in self.ident
        if self.note:
            bundle.warnings.append(self.note)
        if self.restarts:
            bundle.warnings.append(f"{self.src}: the header line is written again {self.restarts} time(s) inside the "
                                   "file: logging restarted there (rows after it go on from its new start)")
        if self.aggregated:
            bundle.warnings.append(f"{self.src}: {len(self.aggregated)} series with no GPU label beside per-GPU "
                                   f"series of the same metric not read as GPUs: a node's or cluster's aggregate "
                                   f"({self.aggregated[0][:80]})")
        if found := headers.models(self.names, self.metrics, self.default_host):
            bundle.meta[schema.GPU_MODELS] = found
        warning = self.skips.warning(rows_read=self.rows)
        if warning:
            bundle.warnings.append(warning)
        if self.blanked:
            more = f"; +{self.blanked - len(self.blanked_why)} more" if self.blanked > len(self.blanked_why) else ""
            bundle.warnings.append(f"{self.src}: left {self.blanked} unreadable value(s) empty, keeping their rows' "
                                   f"other readings ({'; '.join(self.blanked_why)}{more})")
        if not self.parts:
            return bundle
        columns: dict[str, np.ndarray] = {}
        sizes = [len(p["time"]) for p in self.parts]  # a metric some blocks lack is NaN there
        for key in ("time", "gpu", "host", *schema.TELEMETRY_METRICS):
            if any(key in p for p in self.parts):
                columns[key] = np.concatenate([p.pop(key) if key in p else np.full(size, np.nan)
                                               for p, size in zip(self.parts, sizes, strict=True)])
        self.parts = []
        gpu = columns["gpu"]
        if synthetic and self.gpus and not self.plain:  # per-GPU columns: one row holds every GPU of a tick
            ticks = np.unique(columns["time"], return_inverse=True)[1]
            columns["time"] = textio.synthetic_times(ticks, interval_s).astype(np.int64)
            bundle.warnings.insert(0, textio.synthetic_warning(self.src, "rows (one tick per row)", interval_s))
        elif synthetic:
            ticks = np.cumsum(np.r_[True, gpu[1:] <= gpu[:-1]]) - 1 if len(gpu) else np.zeros(0, dtype=np.int64)
            columns["time"] = textio.synthetic_times(ticks, interval_s).astype(np.int64)
            bundle.warnings.insert(0, textio.synthetic_warning(
                self.src, "rows (a new tick whenever the GPU number stops increasing)", interval_s))
        names = np.array(list(self.hosts), dtype=object)
        codes = columns.pop("host")
        host: object = names[0] if len(names) == 1 else names[codes]
        bundle.telemetry = frames.build_telemetry(columns, host, self.src, interval_s if synthetic else None)
        return bundle


def _strings(table: pa.Table, pos: int) -> pd.Series:
    """Column `pos` of a block as stripped pandas strings."""
    return pd.Series(table.column(pos).to_pandas(), dtype=object).str.strip()


class _LazyStrings:
    """The pandas strings of a column, made only when the fast Arrow path cannot read it."""

    def __init__(self, table: pa.Table, pos: int) -> None:
        self.table, self.pos, self.series = table, pos, None

    def get(self) -> pd.Series:
        if self.series is None:
            self.series = _strings(self.table, self.pos)
        return self.series


def _fast_floats(col) -> np.ndarray | None:
    """float64 from an Arrow string column when every cell is a plain number or empty (NaN); None otherwise."""
    try:
        trimmed = pc.utf8_trim_whitespace(col)
        cleaned = pc.if_else(pc.equal(trimmed, ""), pa.scalar(None, pa.string()), trimmed)
        out = pc.cast(cleaned, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    values = out.to_numpy(zero_copy_only=False) if isinstance(out, pa.Array) else out.combine_chunks().to_numpy(
        zero_copy_only=False)
    return np.asarray(values, dtype=np.float64)


def _epoch_unit(numbers: np.ndarray) -> str:
    finite = np.abs(numbers[np.isfinite(numbers)])
    mag = float(np.median(finite)) if len(finite) else 0.0
    return "ns" if mag > 1e17 else "us" if mag > 1e14 else "ms" if mag > 1e11 else "s"


def _parse(raw: bytes, sep: str, names: list[str], skip_lines: int, skips: schema.SkipCounter,
           src: str) -> tuple[pa.Table, np.ndarray]:
    """The rows below the header as string columns, and each row's 1-based line number (the step-table reader's
    whole-text entry point); damaged rows are skipped and counted, as `_parse_block` does for streamed blocks."""
    offset = 0
    for _ in range(skip_lines + 1):  # comment / blank lines above the header, then the header itself
        nl = raw.find(b"\n", offset)
        offset = len(raw) if nl < 0 else nl + 1
    return _parse_block(raw[offset:], sep, len(names), skip_lines + 2, skips, src)


# linear: no two adjacent repeats can trade characters (a unit must start with a letter, digits are taken once)
# a number and its unit, also after a degree sign ("60.0°C"); parentheses ("(1700Mhz)": rocm-smi's clocks) are
# stripped before (see _numbers)
_NUM_WITH_UNIT = r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*°?(?:([A-Za-z%/]+)\s*)?$"
_HEX = re.compile(r"0[xX][0-9a-fA-F]{1,16}")


def _numbers(s: pd.Series) -> tuple[np.ndarray, np.ndarray, str | None]:
    """Floats from strings (units, hex masks, Active/Not Active flags and N/A tokens understood), the mask of
    unreadable cells, and the unit the values carry ("97 %", "63 W", "0 KB/s" -> the first one seen)."""
    low = s.fillna("").str.lower()
    na = low.isin(textio.NA_TOKENS) | (low.str.startswith("[") & low.str.endswith("]"))
    values = pd.to_numeric(s.where(~na), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan).copy()
    retry = np.isnan(values) & ~na.to_numpy()
    unit = None
    if retry.any():
        sub = s[retry]
        parts = sub.str.strip().str.removeprefix("(").str.removesuffix(")").str.extract(_NUM_WITH_UNIT, expand=True)
        parsed = pd.to_numeric(parts[0], errors="coerce")
        units = parts[1].dropna().str.lower()
        units = units[units != ""]
        if len(units):
            unit = str(units.iloc[0])
        hexes = sub.str.lower().str.startswith("0x")
        if hexes.any():
            parsed[hexes] = [float(int(v, 16)) if _HEX.fullmatch(v) else np.nan for v in sub[hexes].str.strip()]
        flags = low[retry].map(_FLAGS)
        parsed = parsed.where(flags.isna(), flags)
        values[retry] = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
    unparsed = np.isnan(values) & ~na.to_numpy()
    return values, unparsed, unit


_GPU_NUMBER = r"^(?:gpu|cuda|nvidia|device|card)?[\s:#-]*(\d{1,9})$"  # one class, one repeat: linear
MAX_GPU_NUMBER = 1e9  # a GPU number has at most 9 digits (_GPU_NUMBER); past it a column of identifiers


def _gpus(s: pd.Series, drop, ids: dict[str, int]) -> np.ndarray:
    """GPU numbers: "3", "GPU 3", "cuda:3", "card3" (rocm-smi); identifiers (UUIDs, bus ids) are numbered in order of first
    appearance across the whole file (`ids` carries the numbering from block to block)."""
    digits = s.str.extract(_GPU_NUMBER, flags=re.IGNORECASE, expand=False)
    gpu = pd.to_numeric(digits, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    missing = np.isnan(gpu)
    if missing.all() and len(s):
        gpu = np.array([ids.setdefault(v, len(ids)) if v else np.nan for v in s.fillna("")], dtype=np.float64)
        missing = np.isnan(gpu)
    drop(missing, lambda i: f"bad gpu {str(s.iloc[i])[:30]!r}")
    return np.where(missing, -1, gpu).astype(np.int64)
