"""nvidia-smi `--query-gpu=... --format=csv[,noheader][,nounits]` logs, and `---`-separated polling loops.

Handles: units or nounits; a header or none (then `fields`, the comma list given to --query-gpu, names the
columns; without it they are guessed from the units, with a warning); an `index` column or none (then GPUs are
numbered by their order within each polling tick; ticks are separated by `---` lines or by gaps between
timestamps); logs appended across restarts (repeated headers, possibly with other fields); CRLF; `[N/A]`,
`[Not Supported]`, `[Unknown Error]` (NaN); nvidia-smi's own error lines ("Unable to determine the device handle
for GPU...") interleaved, which become `gpu_error` events; a truncated last line. Every skipped line is counted.

nvidia-smi writes its timestamps ("2024/01/15 10:23:45.123") in the machine's local time zone; they are read
as `tz` (default UTC). Without timestamps, ticks get synthetic times `interval_s` apart (default 1 s).

Large logs go through a fast path: special lines are found with one regular-expression pass over the bytes,
the clean remainder is parsed by pyarrow.csv, and columns are converted with Arrow compute kernels. Segments
pyarrow cannot parse cleanly are re-read line by line, so the result is the same either way.
"""

from __future__ import annotations

import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from playbook import schema
from playbook.errors import InputError
from playbook.readers import headers, textio

FORMAT = "nvidia-smi --query-gpu CSV"

# nvidia-smi field -> (schema column, priority: lower wins when several fields feed one column)
METRIC_FIELDS: dict[str, tuple[str, int]] = {
    "utilization.gpu": ("util_pct", 0),
    "utilization.memory": ("mem_util_pct", 0),
    "memory.used": ("mem_used_mib", 0),
    "memory.total": ("mem_total_mib", 0),
    "power.draw": ("power_w", 0),
    "power.draw.instant": ("power_w", 1),
    "power.draw.average": ("power_w", 2),
    "enforced.power.limit": ("power_limit_w", 0),
    "power.limit": ("power_limit_w", 1),
    "clocks.sm": ("sm_clock_mhz", 0),
    "clocks.current.sm": ("sm_clock_mhz", 0),
    "clocks.gr": ("sm_clock_mhz", 1),
    "clocks.current.graphics": ("sm_clock_mhz", 1),
    "clocks.mem": ("mem_clock_mhz", 0),
    "clocks.current.memory": ("mem_clock_mhz", 0),
    "temperature.gpu": ("temp_c", 0),
    "clocks_event_reasons.active": ("throttle_reasons", 0),
    "clocks_throttle_reasons.active": ("throttle_reasons", 0),
    "clock_throttle_reasons.active": ("throttle_reasons", 0),
    "pcie.link.gen.current": ("pcie_link_gen", 0),
    "pcie.link.gen.gpucurrent": ("pcie_link_gen", 1),
    "pcie.link.width.current": ("pcie_link_width", 0),
}
HEX_FIELDS = {"clocks_event_reasons.active", "clocks_throttle_reasons.active", "clock_throttle_reasons.active"}
# Individual clock-event reasons ("Active" / "Not Active"), combined into the bitmask when `.active` is absent.
REASON_BITS: dict[str, int] = {
    "gpu_idle": 0x1, "applications_clocks_setting": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
    "sync_boost": 0x10, "sw_thermal_slowdown": 0x20, "hw_thermal_slowdown": 0x40, "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}
TIME_FIELDS = {"timestamp"}
INDEX_FIELDS = {"index", "minor_number"}
IDENT_FIELDS = {"pci.bus_id", "gpu_bus_id", "uuid", "gpu_uuid", "serial", "gpu_serial"}
OTHER_FIELDS = {
    "name", "gpu_name", "driver_version", "count", "pstate", "fan.speed", "memory.free", "memory.reserved",
    "temperature.memory", "power.default_limit", "power.min_limit", "power.max_limit", "power.management",
    "clocks.video", "clocks.max.sm", "clocks.max.gr", "clocks.max.graphics", "clocks.max.memory",
    "clocks.max.mem", "clocks.applications.graphics", "clocks.applications.memory", "compute_mode",
    "persistence_mode", "display_mode", "display_active", "pcie.link.gen.max", "pcie.link.width.max",
    "pcie.link.gen.hostmax", "vbios_version", "inforom.img", "mig.mode.current", "ecc.mode.current",
    "encoder.stats.sessioncount", "accounting.mode", "gom.current", "clocks_event_reasons.supported",
    "clocks_throttle_reasons.supported", "retired_pages.pending", "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total", "pci.domain", "pci.bus", "pci.device", "pci.device_id",
    "pci.sub_device_id", "protected_memory.used",
}


def _reason_field(name: str) -> str | None:
    for prefix in ("clocks_event_reasons.", "clocks_throttle_reasons.", "clock_throttle_reasons."):
        if name.startswith(prefix) and name[len(prefix):] in REASON_BITS:
            return name[len(prefix):]
    return None


def is_known_field(name: str) -> bool:
    """True for a --query-gpu field name this module knows (read or deliberately ignored)."""
    return (name in METRIC_FIELDS or name in TIME_FIELDS or name in INDEX_FIELDS or name in IDENT_FIELDS
            or name in OTHER_FIELDS or _reason_field(name) is not None)


_FIELD_TOKEN = re.compile(r"^([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)\s*(?:\[([^\]]*)\])?$")
_ERROR_LINE = re.compile(
    r"^(Unable to |Failed to |NVIDIA-SMI has failed|No devices were found|Unknown Error|GPU is lost|"
    r"Error|ERROR|Insufficient Permissions|.*\bis lost\b|.*Unknown Error\s*$)")
_SEPARATOR = re.compile(r"^\s*(-{2,}|={2,})\s*$")
_TIMESTAMP = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?$")
_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
_UUID = re.compile(r"^(GPU|MIG)-[0-9A-Fa-f-]{8,}$")
_UNITS_IN_VALUES = re.compile(r"^\s*[-+]?\d+(\.\d+)?\s(%|MiB|W|MHz|KiB|GiB|C)\s*$")
_NUMERIC = re.compile(r"^\s*[-+]?(\d+(?:\.\d*)?|\.\d+)\s*$")
_NA = re.compile(r"^\s*(\[[^\]]*\]|N/A)\s*$")


def parse_header(line: str) -> tuple[list[str], list[str | None]] | None:
    """'timestamp, utilization.gpu [%]' -> (['timestamp', 'utilization.gpu'], [None, '%']); None if not a header."""
    tokens = [t.strip() for t in line.split(",")]
    names: list[str] = []
    units: list[str | None] = []
    for tok in tokens:
        m = _FIELD_TOKEN.match(tok)
        if not m:
            return None
        names.append(m.group(1))
        units.append(m.group(2))
    if not names:
        return None
    if any(not is_known_field(n) and headers.meaning(n).role in ("time", "host", "gpu") for n in names):
        return None  # a home-made table naming its own time / host / GPU columns: the header-meaning reader's
    known = sum(is_known_field(n) for n in names)
    if known == 0 or (known * 2 < len(names) and not any("." in n and is_known_field(n) for n in names)):
        return None
    return names, units


def parse_fields(fields: str | list[str] | tuple[str, ...] | None) -> list[str] | None:
    """The user's --fields (a comma list or a sequence) as clean field names; None stays None."""
    if fields is None:
        return None
    items = fields.split(",") if isinstance(fields, str) else list(fields)
    names = [str(f).strip().lower() for f in items if str(f).strip()]
    out = []
    for n in names:
        m = _FIELD_TOKEN.match(n)
        if not m:
            raise InputError(f"--fields: {n!r} is not an nvidia-smi field name (e.g. index,utilization.gpu)")
        out.append(m.group(1))
    return out or None


def _looks_like_value(cell: str) -> bool:
    c = cell.strip()
    return bool(_UNITS_IN_VALUES.match(c) or _NUMERIC.match(c) or _NA.match(c) or _TIMESTAMP.match(c)
                or _BUS_ID.match(c) or _UUID.match(c) or c.lower().startswith("0x") or re.match(r"^P\d{1,2}$", c)
                or c in ("Active", "Not Active", "Enabled", "Disabled", "Default"))


def sniff(head: str) -> bool:
    """True when the text looks like nvidia-smi --query-gpu CSV output (with or without header/units)."""
    lines = head.split("\n")
    if len(head) >= textio.HEAD_BYTES - 4 and len(lines) > 1:
        lines = lines[:-1]  # the last line of a head may be cut
    data_like = 0
    smi_specific = 0
    widths: set[int] = set()
    for raw in lines[:400]:
        line = raw.strip()
        if not line or _SEPARATOR.match(line):
            continue
        if parse_header(line) is not None:
            return True
        if _ERROR_LINE.match(line):
            smi_specific += 1
            continue
        if ", " not in line:
            if data_like:
                continue  # a stray line among data is damage, not a different format
            return False
        cells = line.split(", ")
        good = sum(_looks_like_value(c) for c in cells)
        if good < len(cells) - (1 if len(cells) > 2 else 0):
            return False
        if any(_UNITS_IN_VALUES.match(c) or _TIMESTAMP.match(c.strip()) for c in cells):
            smi_specific += 1
        widths.add(len(cells))
        data_like += 1
    if not data_like:
        return smi_specific > 0 and all(not ln.strip() or _ERROR_LINE.match(ln.strip()) or _SEPARATOR.match(ln)
                                        for ln in lines[:400])
    # Comma-space separated numbers of one width: nvidia-smi noheader,nounits output.
    return smi_specific > 0 or (len(widths) <= 2 and max(widths) >= 2)


# --------------------------------------------------------------------------------------------------------------
# Scanning: special lines (headers, separators, blanks, error messages, junk) found in one pass over the bytes.

@dataclass
class _Special:
    line: int          # 1-based line number
    start: int         # byte offset of the line
    end: int           # byte offset of its newline (or len(data))
    kind: str          # header | separator | blank | error | junk | truncated
    text: str


@dataclass
class _Segment:
    fields: list[str] | None
    units: list[str | None]
    header: _Special | None
    start: int                      # byte offset of the first line after the header
    end: int                        # byte offset where the next header starts (or len(data))
    first_line: int                 # line number of the first line after the header
    last_line: int                  # line number of the last line in the segment
    specials: list[_Special] = field(default_factory=list)


def _classify(text: str) -> str:
    s = text.strip()
    if not s:
        return "blank"
    if _SEPARATOR.match(s):
        return "separator"
    if parse_header(s) is not None:
        return "header"
    if _ERROR_LINE.match(s):
        return "error"
    return "junk"


def _scan(data: bytes) -> tuple[list[_Special], int]:
    """Special lines of `data` and the total number of lines."""
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    # Data lines of nvidia-smi start with a digit when the first field is a timestamp, an index or a number;
    # otherwise (name, uuid, pstate first) look only for lowercase starts, dashes, blanks and error phrases.
    first_data = next((ln for ln in data[:65536].split(b"\n") if ln.strip() and _classify(
        ln.decode("utf-8", "replace")) == "junk"), b"0")
    digit_mode = first_data[:1].isdigit()
    if digit_mode:
        pattern = re.compile(rb"\n(?=[^0-9])")
    else:
        pattern = re.compile(rb"\n(?=[a-z\n\-=\s]|Unable|Failed|No devices|Unknown|NVIDIA-SMI|Error|ERROR|GPU is)")
    specials: list[_Special] = []
    line, prev = 1, 0
    candidates = [0] if data else []
    for off in candidates + [m.end() for m in pattern.finditer(data)]:
        if off >= len(data) or (off == 0 and digit_mode and data[:1].isdigit()):
            continue
        line += data.count(b"\n", prev, off)
        prev = off
        end = data.find(b"\n", off)
        end = len(data) if end < 0 else end
        text = data[off:end].decode("utf-8", errors="replace")
        kind = _classify(text)
        if kind == "junk" and "," in text and (not digit_mode or _looks_like_value(text.split(",", 1)[0])):
            continue  # a data line whose first field is text or N/A
        specials.append(_Special(line, off, end, kind, text))
    return specials, n_lines


# --------------------------------------------------------------------------------------------------------------
# Guessing the fields of headerless input from its units.

def guess_fields(rows: list[list[str]]) -> tuple[list[str], str] | None:
    """Field names for headerless rows, from the units in their values; (fields, note) or None when unsure."""
    if not rows:
        return None
    width = max(len(r) for r in rows)
    rows = [r for r in rows if len(r) == width][:200]
    kinds: list[str] = []
    for col in range(width):
        cells = [r[col].strip() for r in rows if not _NA.match(r[col])]
        if not cells:
            kinds.append("na")
            continue
        def all_match(rx: re.Pattern, cells=cells) -> bool:
            return all(rx.match(c) for c in cells)
        units = {c.rsplit(" ", 1)[-1] for c in cells if _UNITS_IN_VALUES.match(c)}
        if len(units) == 1 and all(_UNITS_IN_VALUES.match(c) for c in cells):
            kinds.append(units.pop())
        elif all_match(_TIMESTAMP):
            kinds.append("timestamp")
        elif all(c.lower().startswith("0x") for c in cells):
            kinds.append("hex")
        elif all_match(_BUS_ID):
            kinds.append("bus")
        elif all_match(_UUID):
            kinds.append("uuid")
        elif all(re.match(r"^P\d{1,2}$", c) for c in cells):
            kinds.append("pstate")
        elif all(re.match(r"^\d+$", c) for c in cells):
            kinds.append("int")
        elif all_match(_NUMERIC):
            kinds.append("float")
        else:
            kinds.append("text")

    def constant(col: int) -> bool:
        vals = {r[col].strip() for r in rows}
        return len(vals) == 1 and len(rows) > 1

    out: list[str | None] = [None] * width
    simple = {"timestamp": "timestamp", "hex": "clocks_event_reasons.active", "bus": "pci.bus_id", "uuid": "uuid",
              "pstate": "pstate", "text": "name", "na": "na"}
    for col, kind in enumerate(kinds):
        if kind in simple:
            out[col] = simple[kind]
    by_unit: dict[str, list[int]] = {}
    for col, kind in enumerate(kinds):
        by_unit.setdefault(kind, []).append(col)
    pct = by_unit.get("%", [])
    if len(pct) > 2:
        return None
    for col, name in zip(pct, ("utilization.gpu", "utilization.memory")[: len(pct)], strict=True):
        out[col] = name
    for unit, (single, (big, small)) in {"MiB": ("memory.used", ("memory.total", "memory.used")),
                                         "W": ("power.draw", ("power.limit", "power.draw"))}.items():
        cols = by_unit.get(unit, [])
        if len(cols) == 1:
            out[cols[0]] = single
        elif len(cols) == 2:
            const = [c for c in cols if constant(c)]
            if len(const) != 1:
                return None
            out[const[0]] = big
            out[next(c for c in cols if c != const[0])] = small
        elif len(cols) > 2:
            return None
    temps = by_unit.get("C", [])
    if len(temps) > 1:
        return None
    for col in temps:
        out[col] = "temperature.gpu"
    mhz = by_unit.get("MHz", [])
    if len(mhz) > 2:
        return None
    for col, name in zip(mhz, ("clocks.sm", "clocks.mem")[: len(mhz)], strict=True):
        out[col] = name
    ints = by_unit.get("int", [])
    # An index: the first bare-integer column, when it counts 0, 1, 2... within blocks.
    if ints and (ints[0] == 0 or (ints[0] == 1 and kinds[0] == "timestamp")):
        col = ints[0]
        values = [int(v) for v in (r[col].strip() for r in rows) if v.isdecimal()]  # isdigit() takes '²'; int() does not
        if values and min(values) == 0 and max(values) < 1024:
            out[col] = "index"
    if any(o is None for o in out):
        return None
    if not any(o in METRIC_FIELDS for o in out):
        return None
    fields = [o if o != "na" else "unknown" for o in out]
    return fields, ",".join(fields)


# --------------------------------------------------------------------------------------------------------------
# Column conversion (Arrow strings -> numpy), shared by the fast path and the line-by-line path. Conversion runs
# batch by batch, so a large log never holds more than one batch of strings besides its numeric columns.

_NA_LIST = pa.array(sorted(set(textio.NA_TOKENS) | {"N/A", "[N/A]", "[Not Supported]", "[Unknown Error]",
                                                     "Not Supported", "[GPU is lost]", "-"}))
_NAT = np.iinfo(np.int64).min
_LOCK = threading.Lock()


class _Rows:
    """Row bookkeeping for one batch: line numbers and the (shared) mask of rows to drop, with reasons."""

    def __init__(self, lines: np.ndarray, bad: np.ndarray, skips: schema.SkipCounter):
        self.lines, self.bad, self.skips = lines, bad, skips

    def drop(self, mask: np.ndarray, reason_of) -> None:
        with _LOCK:
            self._drop(mask, reason_of)

    def _drop(self, mask: np.ndarray, reason_of) -> None:
        new = mask & ~self.bad
        idx = np.flatnonzero(new)
        if not len(idx):
            return
        for i in idx[: self.skips.keep]:
            self.skips.skip(int(self.lines[i]), reason_of(int(i)))
        self.skips.count += max(0, len(idx) - self.skips.keep)
        self.bad |= new


def _strip(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Values without padding and unit suffixes ("70959 MiB" -> "70959"); digits are never stripped."""
    return pc.ascii_trim(col, characters=" \t%MiBKGWHzC")


def _to_float(col: pa.ChunkedArray, rows: _Rows, name: str) -> np.ndarray:
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


def _to_time(col: pa.ChunkedArray, rows: _Rows, tz: str) -> np.ndarray:
    """nvidia-smi timestamps ("2024/01/15 10:23:45.123", local time read as `tz`) to int64 ns UTC."""
    x = pc.ascii_trim_whitespace(col)
    try:
        ns = _iso_times(x)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        s = pd.Series(x.to_numpy(zero_copy_only=False), dtype=object)
        parsed = pd.to_datetime(s, format="%Y/%m/%d %H:%M:%S.%f", errors="coerce")
        retry = parsed.isna() & s.notna()
        if retry.any():
            parsed[retry] = pd.to_datetime(s[retry], format="mixed", errors="coerce")
        ns = parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    rows.drop(ns == _NAT, lambda i: f"bad timestamp {str(x[i].as_py())[:40]!r}")
    return _localize(ns, rows, tz, x)


def _localize(ns: np.ndarray, rows: _Rows, tz: str, x: pa.ChunkedArray) -> np.ndarray:
    """Naive local int64 ns (written in `tz`) to UTC; times that do not exist there are dropped."""
    if tz and tz.upper() != "UTC":
        local = pd.DatetimeIndex(ns.view("datetime64[ns]"))
        ns = local.tz_localize(tz, ambiguous="NaT", nonexistent="NaT").tz_convert("UTC").tz_localize(None) \
            .to_numpy(dtype="datetime64[ns]").astype(np.int64)
        rows.drop(ns == _NAT, lambda i: f"timestamp {str(x[i].as_py())[:40]!r} does not exist in {tz}")
    return ns


def _to_index(col: pa.ChunkedArray, rows: _Rows, name: str) -> np.ndarray:
    vals = _to_float(col, rows, name)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(vals) | (vals < 0) | (vals != np.round(vals))
    rows.drop(bad, lambda i: f"bad {name} {str(col[i].as_py()).strip()[:40]!r}")
    return np.where(bad, -1, np.nan_to_num(vals, nan=-1)).astype(np.int64)


@dataclass
class _Columns:
    time_ns: np.ndarray | None = None
    gpu: np.ndarray | None = None          # from index / identity
    gpu_from: str = ""                     # "index", or the identity field the numbers come from
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    bad: np.ndarray | None = None          # rows to drop
    lines: np.ndarray | None = None        # 1-based line number of each row


class _Converter:
    """Turns batches of string columns into numeric arrays for one segment, then assembles the columns."""

    def __init__(self, fields: list[str], lines: np.ndarray, skips: schema.SkipCounter, tz: str):
        self.fields, self.lines, self.skips, self.tz = fields, lines, skips, tz
        self.bad = np.zeros(len(lines), dtype=bool)
        self.rows_done = 0
        chosen: dict[str, tuple[int, int]] = {}
        for pos, name in enumerate(fields):
            if name in METRIC_FIELDS:
                column, prio = METRIC_FIELDS[name]
                if column not in chosen or prio < chosen[column][0]:
                    chosen[column] = (prio, pos)
        self.plan: dict[int, str] = {pos: ("hex" if fields[pos] in HEX_FIELDS else "float")
                                     for _prio, pos in chosen.values()}
        self.metric_of = {pos: column for column, (_prio, pos) in chosen.items()}
        if "throttle_reasons" not in chosen:
            for pos, name in enumerate(fields):
                if _reason_field(name):
                    self.plan[pos] = "flag"
        if "mem_used_mib" not in chosen and "mem_total_mib" in chosen and "memory.free" in fields:
            self.plan[fields.index("memory.free")] = "float"
        for kinds, kind in ((TIME_FIELDS, "time"), (INDEX_FIELDS, "index"), (IDENT_FIELDS, "ident")):
            pos = next((p for p, n in enumerate(fields) if n in kinds), None)
            if pos is not None and (kind != "ident" or "index" not in self.plan.values()):
                self.plan[pos] = kind
        self.chunks: dict[int, list] = {pos: [] for pos in self.plan}   # ident strings, per batch
        self.arrays: dict[int, np.ndarray] = {}                             # numeric kinds, preallocated
        self.pending: list = []

    def add(self, table: pa.Table | pa.RecordBatch, pool: ThreadPoolExecutor | None = None) -> None:
        """Convert one batch (columns in parallel on `pool`; Arrow kernels release the GIL)."""
        self.wait()
        n = table.num_rows
        lo = self.rows_done
        rows = _Rows(self.lines[lo:lo + n], self.bad[lo:lo + n], self.skips)
        for pos, kind in self.plan.items():
            if kind == "ident":
                self.chunks[pos].append(pc.utf8_trim_whitespace(table.column(pos)))
                continue
            if pos not in self.arrays:
                self.arrays[pos] = np.empty(len(self.lines), dtype=np.float64 if kind in ("float", "hex", "flag")
                                            else np.int64)
            if pool is None:
                self._convert(table, pos, kind, rows, lo)
            else:
                self.pending.append(pool.submit(self._convert, table, pos, kind, rows, lo))
        self.rows_done += n

    def _convert(self, table, pos: int, kind: str, rows: _Rows, lo: int) -> None:
        col = table.column(pos)
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

    def wait(self) -> None:
        """Wait for the conversions in flight (re-raising their errors)."""
        pending, self.pending = self.pending, []
        for future in pending:
            future.result()

    def _take(self, pos: int):
        if self.plan[pos] == "ident":
            return pa.chunked_array(self.chunks.pop(pos), type=pa.string())
        if pos in self.arrays:
            return self.arrays.pop(pos)
        return np.zeros(0, dtype=np.int64 if self.plan[pos] in ("time", "index") else np.float64)

    def finish(self) -> _Columns:
        self.wait()
        out = _Columns()
        fields = self.fields
        flags: dict[int, np.ndarray] = {}
        for pos, kind in list(self.plan.items()):
            values = self._take(pos)
            if kind == "time":
                out.time_ns = values
            elif kind == "index":
                out.gpu, out.gpu_from = values, "index"
            elif kind == "ident":
                out.gpu, out.gpu_from = self._ident_numbers(values, fields[pos]), fields[pos]
            elif kind == "flag":
                flags[pos] = values
            elif pos in self.metric_of:
                out.metrics[self.metric_of[pos]] = values
            else:
                out.metrics["_free"] = values
        if flags:
            mask = np.zeros(len(self.lines))
            for pos, values in flags.items():
                mask += REASON_BITS[_reason_field(fields[pos])] * values
            out.metrics["throttle_reasons"] = mask
        free = out.metrics.pop("_free", None)
        if free is not None:
            out.metrics["mem_used_mib"] = out.metrics["mem_total_mib"] - free
        return out

    def _ident_numbers(self, values: pa.ChunkedArray, name: str) -> np.ndarray:
        enc = pc.dictionary_encode(values).combine_chunks() if len(values) else None
        if enc is None:
            return np.zeros(0, dtype=np.int64)
        ids = enc.dictionary.to_pylist()
        # nvidia-smi numbers GPUs in PCI bus order; UUIDs and serials keep their order of first appearance.
        order = sorted(range(len(ids)), key=lambda k: ids[k]) if "bus" in name else range(len(ids))
        rank = np.full(len(ids) + 1, -1, dtype=np.int64)
        for r, k in enumerate(order):
            rank[k] = r
        gpu = rank[enc.indices.fill_null(len(ids)).to_numpy(zero_copy_only=False).astype(np.int64)]
        empty = np.array([not v for v in ids] + [True])[enc.indices.fill_null(len(ids)).to_numpy(
            zero_copy_only=False).astype(np.int64)]
        rows = _Rows(self.lines, self.bad, self.skips)
        rows.drop((gpu < 0) | empty, lambda i: f"missing {name}")
        return gpu


# --------------------------------------------------------------------------------------------------------------
# Parsing a segment: fast (pyarrow over the clean bytes, streamed) or line by line.

def _clean_pieces(data: bytes, seg: _Segment) -> list[memoryview]:
    view = memoryview(data)
    pieces, pos = [], seg.start
    for sp in seg.specials:
        if sp.start > pos:
            pieces.append(view[pos:sp.start])
        pos = min(sp.end + 1, seg.end)
    if seg.end > pos:
        pieces.append(view[pos:seg.end])
    return pieces


def _row_lines(seg: _Segment) -> np.ndarray:
    lines = np.arange(seg.first_line, seg.last_line + 1, dtype=np.int64)
    if seg.specials:
        drop = np.array([sp.line for sp in seg.specials], dtype=np.int64) - seg.first_line
        keep = np.ones(len(lines), dtype=bool)
        keep[drop[(drop >= 0) & (drop < len(lines))]] = False
        lines = lines[keep]
    return lines


def _parse_fast(data: bytes, seg: _Segment, skips: schema.SkipCounter, tz: str) -> _Columns | None:
    """Stream the segment's clean lines through pyarrow; None when a line is damaged (use _parse_lines)."""
    lines = _row_lines(seg)
    attempt = schema.SkipCounter(skips.path, keep=skips.keep)
    conv = _Converter(seg.fields, lines, attempt, tz)
    pieces = _clean_pieces(data, seg)
    if pieces:
        buf = pa.py_buffer(pieces[0] if len(pieces) == 1 else b"".join(pieces))
        names = [f"c{i}" for i in range(len(seg.fields))]
        invalid: list[str] = []

        def on_invalid(row) -> str:
            invalid.append(row.text)
            return "error"  # positions of damaged lines are needed: the caller re-reads line by line

        workers = min(4, os.cpu_count() or 1)
        pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 and len(lines) > 200_000 else None
        try:
            reader = pacsv.open_csv(
                buf,
                read_options=pacsv.ReadOptions(column_names=names, block_size=4 << 20),
                parse_options=pacsv.ParseOptions(delimiter=",", quote_char=False, invalid_row_handler=on_invalid),
                convert_options=pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                                     strings_can_be_null=False, quoted_strings_can_be_null=False))
            for batch in reader:
                if conv.rows_done + batch.num_rows > len(lines):
                    return None
                conv.add(batch, pool)
            conv.wait()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError):
            return None
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        if invalid:
            return None
    if conv.rows_done != len(lines):
        return None
    skips.count += attempt.count
    skips.reasons += attempt.reasons[: max(0, skips.keep - len(skips.reasons))]
    cols = conv.finish()
    cols.bad, cols.lines = conv.bad, lines
    return cols


def _parse_lines(data: bytes, seg: _Segment, skips: schema.SkipCounter, tz: str) -> _Columns:
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
    conv.add(pa.table({f"c{i}": pa.array(c, pa.string()) for i, c in enumerate(cols)}))
    out = conv.finish()
    out.bad, out.lines = conv.bad, line_arr
    return out


# --------------------------------------------------------------------------------------------------------------

def _tick_split(time_ns: np.ndarray) -> np.ndarray:
    """Tick boundaries of index-less timestamped rows: True where a row starts a new polling tick.

    Rows of one tick carry (nearly) the same timestamp; ticks are separated by the polling interval. The
    threshold is the widest gap in the sorted log-differences, so it adapts to any polling rate.
    """
    n = len(time_ns)
    starts = np.zeros(n, dtype=bool)
    if n == 0:
        return starts
    starts[0] = True
    if n == 1:
        return starts
    dt = np.diff(time_ns).astype(np.float64)
    logs = np.log10(np.maximum(np.abs(dt), 1e5))  # differences below 0.1 ms count as "same tick"
    uniq = np.unique(logs)
    if len(uniq) == 1:
        same_tick = uniq[0] <= 5.0 + 1e-9
        starts[1:] = not same_tick
        return starts
    gaps = np.diff(uniq)
    k = int(np.argmax(gaps))
    if gaps[k] < np.log10(3):  # no clear two-level structure: every row is its own tick
        starts[1:] = True
        return starts
    threshold = (uniq[k] + uniq[k + 1]) / 2
    starts[1:] = (logs > threshold) | (dt < 0)
    return starts


def _repeats(gpu: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """True where a row starts a new tick: at a forced break, or when its GPU was already seen in this tick."""
    out = breaks.copy()
    seen: set[int] = set()
    for i, g in enumerate(gpu.tolist()):
        if out[i] or g in seen:
            out[i] = True
            seen = set()
        seen.add(g)
    return out


def _place(seg: _Segment, cols: _Columns, clock: dict, interval_s: float | None, bundle: schema.Bundle,
           src: str) -> dict[str, np.ndarray]:
    """GPU numbers and times for a segment's rows (drops the rows marked bad): the columns of one part."""
    good = ~cols.bad
    all_good = bool(good.all())
    lines = cols.lines if all_good else cols.lines[good]

    def kept(a: np.ndarray) -> np.ndarray:
        return a if all_good else a[good]

    n = len(lines)
    seps = np.array([sp.line for sp in seg.specials if sp.kind == "separator"], dtype=np.int64)
    sep_tick = np.searchsorted(seps, lines) if len(seps) else np.zeros(n, dtype=np.int64)
    time_ns = kept(cols.time_ns) if cols.time_ns is not None else None
    if cols.gpu is not None:
        gpu = kept(cols.gpu)
        if time_ns is None:  # a tick ends at a separator, or where the index starts again / a GPU repeats
            sep_break = np.r_[True, sep_tick[1:] != sep_tick[:-1]] if n else np.zeros(0, dtype=bool)
            if cols.gpu_from == "index":
                new_tick = sep_break | np.r_[True, gpu[1:] <= gpu[:-1]] if n else sep_break
            else:
                new_tick = _repeats(gpu, sep_break)
            tick = np.cumsum(new_tick) - 1
    else:
        # GPUs in order within each tick; a tick ends at a separator or at a gap between timestamps.
        if time_ns is not None:
            new_tick = _tick_split(time_ns) | (np.r_[True, sep_tick[1:] != sep_tick[:-1]] if n else False)
        elif len(seps):
            new_tick = np.r_[True, sep_tick[1:] != sep_tick[:-1]] if n else np.zeros(0, dtype=bool)
        else:
            bundle.warnings.append(f"{src}: no index column, no timestamps and no '---' separators: read as one "
                                   "GPU, one row per tick")
            new_tick = np.ones(n, dtype=bool)
        tick = np.cumsum(new_tick) - 1
        idx = np.arange(n)
        gpu = idx - np.maximum.accumulate(np.where(new_tick, idx, 0)) if n else idx
    if time_ns is None:
        clock["synthetic"] = True
        ticks = clock["tick_base"] + tick
        clock["tick_base"] = int(ticks[-1]) + 1 if n else clock["tick_base"]
        time_ns = textio.synthetic_times(ticks, interval_s).astype(np.int64)
    part = {"time": time_ns, "gpu": gpu, "_lines": lines}
    for column in list(cols.metrics):
        part[column] = kept(cols.metrics.pop(column))
    return part


def read(path: str | Path, fields: str | list[str] | None = None, interval_s: float | None = None,
         tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read an nvidia-smi --query-gpu CSV log into a Bundle (telemetry; gpu_error/restart events)."""
    path = Path(path)
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    user_fields = parse_fields(fields)
    notes: list[str] = []  # lossy decoding, a truncated stream
    data = textio.read_bytes(path, warnings=notes)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    host = textio.host_from_path(path)
    bundle = schema.Bundle(inputs=[src], warnings=notes)
    skips = schema.SkipCounter(src)
    specials, n_lines = _scan(data)
    segments = _segments(data, specials, n_lines, user_fields, path, bundle)
    _check_edges(data, segments)

    parts: list[dict[str, np.ndarray]] = []
    events: list[dict] = []
    clock = {"tick_base": 0, "synthetic": False}
    shifted_warning = False
    for k, seg in enumerate(segments):
        errors = [sp for sp in seg.specials if sp.kind in ("error", "junk", "truncated")]
        for sp in errors:
            what = {"error": "nvidia-smi error", "junk": "not a data line", "truncated": "truncated line"}[sp.kind]
            skips.skip(sp.line, f"{what} {sp.text.strip()[:60]!r}")
        if seg.fields is None:
            continue
        cols = _parse_fast(data, seg, skips, tz)
        if cols is None:
            cols = _parse_lines(data, seg, skips, tz)
        if k == len(segments) - 1:
            del data  # the numeric columns are all that is left to hold
        if cols.gpu is None and errors and not shifted_warning:
            shifted_warning = True
            bundle.warnings.append(f"{src}: no index column and nvidia-smi error lines: GPUs after a failed one "
                                   "may be numbered one too low; add index to --query-gpu")
        part = _place(seg, cols, clock, interval_s, bundle, src)
        events += _segment_events(seg, part.pop("_lines"), part["time"], host, src)
        parts.append(part)

    synthetic = clock["synthetic"]
    if synthetic:
        bundle.warnings.append(textio.synthetic_warning(src, "polling ticks", interval_s))
    n_rows = sum(len(p["time"]) for p in parts)
    warning = skips.warning(rows_read=n_rows)
    if warning:
        bundle.warnings.append(warning)
    bundle.telemetry = _telemetry(parts, host, src, interval_s if synthetic else None)
    if events:
        bundle.events = schema.events_frame({k: [e[k] for e in events] for k in events[0]})
    return bundle


def _segments(data: bytes, specials: list[_Special], n_lines: int, user_fields: list[str] | None, path: Path,
              bundle: schema.Bundle) -> list[_Segment]:
    headers = [sp for sp in specials if sp.kind == "header"]
    segs: list[_Segment] = []
    bounds = [None, *headers]
    for k, head in enumerate(bounds):
        nxt = headers[k] if k < len(headers) else None
        start = 0 if head is None else min(head.end + 1, len(data))
        end = len(data) if nxt is None else nxt.start
        first_line = 1 if head is None else head.line + 1
        last_line = n_lines if nxt is None else nxt.line - 1
        if head is None:
            if nxt is not None and nxt.start == 0:
                continue
            fields, units = user_fields, [None] * len(user_fields or [])
        else:
            fields, units = parse_header(head.text.strip())
            if user_fields and user_fields != fields:
                bundle.warnings.append(f"{path}: line {head.line}: the header's fields differ from --fields; "
                                       "the header wins")
        seg = _Segment(fields, units, head, start, end, first_line, last_line)
        seg.specials = [sp for sp in specials if first_line <= sp.line <= last_line and sp.kind != "header"]
        segs.append(seg)
    lead = segs[0] if segs and segs[0].header is None else None
    if lead is None:
        return segs
    sample = _sample_rows(data, lead)
    if not sample:
        lead.fields = None
        return segs
    width = len(sample[0])
    if lead.fields is not None:
        if len(lead.fields) != width:
            raise InputError(f"{path}: --fields names {len(lead.fields)} fields but the data has {width} columns")
        return segs
    later = next((s for s in segs[1:] if s.fields and len(s.fields) == width), None)
    if later is not None:
        lead.fields, lead.units = later.fields, later.units
        bundle.warnings.append(f"{path}: lines 1-{lead.last_line} have no header; read with the fields "
                               f"of the header at line {later.header.line}")
        return segs
    guessed = guess_fields(sample)
    if guessed is not None:
        lead.fields, note = guessed
        lead.units = [None] * len(lead.fields)
        bundle.warnings.append(f"{path}: guessed fields {note}; pass --fields to be sure")
    elif len(segs) > 1:
        _lines_to_junk(data, lead)  # a few stray lines before the first header: counted, not fatal
    else:
        raise InputError(
            f"{path}: headerless nvidia-smi CSV whose columns cannot be told from their units; pass --fields "
            "with the list given to --query-gpu (e.g. --fields index,utilization.gpu,memory.used)")
    return segs


def _lines_to_junk(data: bytes, seg: _Segment) -> None:
    special = {sp.line for sp in seg.specials}
    pos = seg.start
    for k in range(seg.last_line - seg.first_line + 1):
        end = data.find(b"\n", pos, seg.end)
        end = seg.end if end < 0 else end
        no = seg.first_line + k
        text = data[pos:end].decode("utf-8", errors="replace")
        if no not in special and text.strip():
            seg.specials.append(_Special(no, pos, end, "junk", text))
        pos = end + 1
        if pos >= seg.end:
            break
    seg.specials.sort(key=lambda sp: sp.line)


def _sample_rows(data: bytes, seg: _Segment, limit: int = 200) -> list[list[str]]:
    special = {sp.line for sp in seg.specials}
    out: list[list[str]] = []
    chunk = data[seg.start:min(seg.end, seg.start + (1 << 20))].decode("utf-8", errors="replace")
    for k, line in enumerate(chunk.split("\n")):
        if seg.first_line + k in special or not line.strip() or seg.first_line + k > seg.last_line:
            continue
        out.append([c for c in line.split(",")])
        if len(out) >= limit:
            break
    if out:
        width = max(set(len(r) for r in out), key=[len(r) for r in out].count)
        out = [r for r in out if len(r) == width]
    return out


def _check_edges(data: bytes, segments: list[_Segment]) -> None:
    """Mark a last line cut short (and a line cut short just before a restart's header) as truncated."""
    for seg in segments:
        if seg.fields is None or seg.start >= seg.end:
            continue
        special = {sp.line for sp in seg.specials}
        # the segment's last non-blank line
        end = seg.end
        while end > seg.start and data[end - 1:end] == b"\n":
            end -= 1
        start = data.rfind(b"\n", seg.start, end) + 1
        start = max(start, seg.start)
        line_no = seg.last_line - data.count(b"\n", end, seg.end) + (data[seg.end - 1:seg.end] == b"\n")
        if line_no in special or start >= end:
            continue
        text = data[start:end].decode("utf-8", errors="replace")
        cells = text.split(",")
        cut = len(cells) != len(seg.fields)
        unit = None
        if not cut:  # do the values carry units (header units alone say nothing: `--format=csv,nounits`)?
            prev_start = data.rfind(b"\n", seg.start, max(start - 1, seg.start)) + 1
            prev = data[prev_start:max(start - 1, prev_start)].decode("utf-8", errors="replace").split(",")
            m = _UNITS_IN_VALUES.match(prev[-1]) if len(prev) == len(cells) else None
            unit = m.group(2) if m else None
        if not cut and unit and not _NA.match(cells[-1]) and not cells[-1].strip().endswith(unit.strip()):
            cut = True  # a unit-bearing last value that lost its unit was cut mid-number
        if cut:
            seg.specials.append(_Special(line_no, start, end, "truncated", text))
            seg.specials.sort(key=lambda sp: sp.line)


def _segment_events(seg: _Segment, lines: np.ndarray, time_ns: np.ndarray, host: str, src: str) -> list[dict]:
    out: list[dict] = []

    def time_near(line: int):
        if not len(lines):
            return pd.NaT
        k = int(np.searchsorted(lines, line))
        k = k - 1 if k > 0 else 0
        return pd.Timestamp(int(time_ns[k]), tz="UTC")

    for sp in seg.specials:
        if sp.kind == "error":
            out.append({"time": time_near(sp.line), "host": host, "kind": "gpu_error",
                        "detail": f"line {sp.line}: {sp.text.strip()[:200]}", "source": src})
    if seg.header is not None and seg.header.line > 1 and len(lines):
        out.append({"time": pd.Timestamp(int(time_ns[0]), tz="UTC"), "host": host, "kind": "restart",
                    "detail": f"line {seg.header.line}: nvidia-smi logging restarted (repeated header)",
                    "source": src})
    return out


def _telemetry(parts: list[dict[str, np.ndarray]], host: str, src: str, interval_s: float | None) -> pd.DataFrame:
    """Concatenate the parts (emptying the list, so each array is held once) into the telemetry table."""
    if not sum(len(p["time"]) for p in parts):
        parts.clear()
        return schema.telemetry_frame()
    names = list(dict.fromkeys(k for p in parts for k in p))
    sizes = [len(p["time"]) for p in parts]
    merged: dict[str, np.ndarray] = {}
    for c in names:
        chunks = [p.pop(c) if c in p else np.full(size, np.nan) for p, size in zip(parts, sizes, strict=True)]
        merged[c] = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
    parts.clear()
    return textio.build_telemetry(merged, host, src, interval_s)
