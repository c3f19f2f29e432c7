"""Host telemetry as Linux tools print it → the host table: `vmstat [-t] N`, `iostat [-x] [-t] N` (every sysstat
layout: `rkB/s wkB/s ... %util`, `r/s rkB/s rrqm/s ...`, `-m` MB/s, `kB_read/s`, `Blk_read/s`), `mpstat -P ALL`,
`sar -u [-P ALL]`, `sar -d`, `sar -n DEV`, `sadf -d` (semicolon CSV), `top -b`, `dstat` / `dool --output` CSV, and
sysstat's JSON (`-o JSON`, `sadf -j`: readers/sysstat_json.py).

Meaning comes from the column names and their units, not from which tool printed them (column_meaning): busy =
100 - idle (`%idle`, vmstat `id`, dstat `idl`) - iowait (`%iowait` / `wa` / `wai`: CPUs idle with I/O outstanding,
kept in iowait_pct), the probe's (psutil's) definition, so an input blocked on storage is not read as CPU work; disk
and network rates their unit from the name (`rkB/s` KiB/s, `rMB/s` MiB/s, `rsec/s` and `Blk_read/s` 512-byte
sectors, vmstat `bi` / `bo` KiB/s, dstat's `read` / `writ` / `recv` / `send` bytes/s; such short names only under
their tool's header: vmstat's starts `r b`, so a step table's `id` column is no idle share). Rows per device are summed
per host (loopback and devices stacked on listed disks — partitions, dm-*, md* — left out so no byte counts
twice); rows per CPU give the busiest core (cpu_max_core_pct) and, without an `all` row, the mean (cpu_pct).
Times: a leading time of day (sysstat; `AM`/`PM` read) on the banner's date (`Linux ... (host) 04/18/19 ...`,
rolling over at midnight), vmstat -t's trailing `YYYY-MM-DD HH:MM:SS`, iostat -t's time-stamp line, sadf's and
dstat's own columns; a tool that prints no time gets one sample per report `interval_s` apart (a counted warning
says the times are synthetic). `Average:` summary rows and tables with no column read here (interrupts, NUMA
nodes, errors) are passed over; a row of a table read here that does not fit its header is a counted warning.
rss_mib stays NaN: these tools report the host's memory, not a process tree's resident set. The first report of
vmstat, iostat (without -y) and dstat covers the time since boot; it is kept as printed.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import sysstat_json, textio
from playbook.readers.host_columns import (
    ENTITY,
    MAX_RATE_MIB_S,
    MIB,
    add_value,
    column_meaning,
    counted_devices,
    parse_date,
    utc_ns,
)

FORMAT = "host tools (vmstat, iostat, mpstat, sar, sadf, top, dstat)"

# ------------------------------------------------------------------------------------------------------------
# Detection

_BANNER = re.compile(r"^Linux\s+\S+\s+\(([^)\s]{1,255})\)\s+(\d{2,4}[/.-]\d{2}[/.-]\d{2,4})\s")
_VMSTAT = re.compile(r"^\s*r\s+b\s+swpd\s+free\s")
_TOP = re.compile(r"^top - (\d{1,2}:\d{2}:\d{2})\b")
_TOP_CPU = re.compile(r"^%?Cpu(\d+|\(s\))\s*:")
_DSTAT_TITLE = re.compile(r'^"(?:pcp-)?(?:dstat|dool) [\w.+-]+ CSV output"', re.IGNORECASE)
_SADF = re.compile(r"^#\s*hostname;interval;timestamp;")


def sniff(head: str) -> bool:
    """A host tool's output: dstat / dool CSV, sadf -d, top -b, or text tables whose headers this reader reads
    making up most of the first lines (so a training log with one pasted vmstat line stays a training log)."""
    if sysstat_json.looks_like(head):
        return True
    lines = [ln for ln in head.split("\n")[:400] if ln.strip()]
    if not lines:
        return False
    first = lines[0].strip()
    if _DSTAT_TITLE.match(first) or _SADF.match(first):
        return True
    if _is_top(lines):
        return True
    parser = _TextTables("<head>", "", "UTC")
    for no, line in enumerate(lines, start=1):
        parser.line(no, line)
    if not (parser.header_lines and parser.rows):
        return False
    # under sysstat's banner its other tables (interrupts, paging, ...) are its too; lines that fit no table (a
    # training log that started `iostat 10 &` before its first step) are not
    tables = parser.understood + (parser.unread if _BANNER.match(first) else 0)
    return tables >= 0.6 * len(lines)


def _is_top(lines: list[str]) -> bool:
    """`top -b`: its `top - HH:MM:SS up ...` line within the first 5 lines, a CPU summary within the first 12."""
    return any(_TOP.match(ln.strip()) for ln in lines[:5]) and any(_TOP_CPU.match(ln.strip()) for ln in lines[:12])


def read(path: str | Path, interval_s: float | None = None, tz: str | None = None, **_opts) -> schema.Bundle:
    """Read one host tool's output into a Bundle whose host table holds the samples."""
    path, src = Path(path), str(path)
    notes: list[str] = []
    text = textio.read_text(path, warnings=notes)
    first = next((ln.strip() for ln in text.split("\n", 50) if ln.strip()), "")
    host = textio.host_from_path(path)
    if sysstat_json.looks_like(text[:4096]):
        samples = Samples(src, host)
        records, skipped = sysstat_json.records(src, text, host, tz or "UTC")
        for record in records:
            samples.add(*record)
        for reason in skipped:
            samples.skips.skip(None, reason)
    elif _DSTAT_TITLE.match(first):
        samples = _dstat(src, text, host, tz or "UTC")
    elif _SADF.match(first):
        samples = _sadf(src, text, tz or "UTC")
    elif _is_top([ln for ln in text.split("\n", 50)[:50] if ln.strip()]):
        samples = _top(src, text, host)
    else:
        parser = _TextTables(src, host, tz or "UTC")
        for no, line in enumerate(text.split("\n"), start=1):
            parser.line(no, line)
        samples = parser
    bundle = schema.Bundle(inputs=[src])
    bundle.host, warnings = samples.table(interval_s)
    bundle.warnings += notes + warnings
    if not len(bundle.host):
        skipped = samples.skips.warning(rows_read=0)
        raise InputError(f"{src}: no host samples found" + (f"; {skipped.split(': ', 1)[1]}" if skipped else
                                                            f" (a {FORMAT} header without rows under it)"))
    return bundle


# ------------------------------------------------------------------------------------------------------------
# Samples → the host table

class Samples:
    """Rows read so far: (time ns or None, sample tick, host, kind, entity, {quantity: value}); built into the host
    table by `table`. `kind`: "host" (one row per sample), "cpu", "disk" or "net" (one row per CPU / device)."""

    def __init__(self, src: str, host: str):
        self.src, self.host = src, host
        self.rows: list[tuple[int | None, int, str, str, str, dict[str, float]]] = []
        self.skips = schema.SkipCounter(src)
        self.notes: list[str] = []
        self.tick = 0
        self._seen: dict[tuple[str, str], set[str]] = {}  # the current sample's quantities per kind and entity

    def add(self, t_ns: int | None, host: str, kind: str, entity: str, values: dict[str, float]) -> None:
        """One row (none without values); without a time, a row giving a quantity the current sample already
        holds for its kind and entity starts the next sample (a new iostat report, the next vmstat line), while
        one adding new quantities joins it (iostat --pretty prints a report's reads and writes in two blocks)."""
        if not values:
            return
        held = self._seen.setdefault((kind, entity), set())
        if held & values.keys():
            self.tick += 1
            self._seen = {(kind, entity): set()}
            held = self._seen[(kind, entity)]
        held.update(values)
        self.rows.append((t_ns, self.tick, host or self.host, kind, entity, values))

    def table(self, interval_s: float | None) -> tuple[pd.DataFrame, list[str]]:
        """The host table (one row per host and sample) and the warnings."""
        warnings = list(self.notes)
        if not self.rows:
            return schema.host_frame(), warnings
        stamped = [r[0] is not None for r in self.rows]
        if all(stamped):
            times = np.array([r[0] for r in self.rows], dtype=np.int64)
        else:
            times = textio.synthetic_times(np.array([r[1] for r in self.rows]), interval_s).astype(np.int64)
            if any(stamped):
                warnings.append(f"{self.src}: {stamped.count(False)} rows without a time among "
                                f"{stamped.count(True)} with; all placed on the synthetic clock")
            warnings.append(textio.synthetic_warning(self.src, "reports", interval_s))
        frame = pd.DataFrame({"time": times, "host": [r[2] for r in self.rows], "kind": [r[3] for r in self.rows],
                              "entity": [r[4] for r in self.rows]})
        values = pd.DataFrame([r[5] for r in self.rows])
        frame = pd.concat([frame, values.reindex(columns=["idle", "iowait", *_RATES])], axis=1)
        frame, repeated = _first_of_repeats(frame)
        if repeated:
            warnings.append(f"{self.src}: {repeated} rows repeat a time and device already read (a report printed "
                            "twice, files appended, or the clock set back); the first kept")
        damaged = _drop_out_of_range(frame)
        if damaged:
            warnings.append(f"{self.src}: {damaged} values out of range (a share outside 0-100 %, a rate below 0 or "
                            "past 1 TiB/s per device) read as missing")
        warning = self.skips.warning(rows_read=len(self.rows))
        if warning:
            warnings.append(warning)
        return _aggregate(frame, self.src), warnings


_DEVICE_RATES = ("read_mib_s", "write_mib_s", "net_rx_mib_s", "net_tx_mib_s")  # summed over disks / interfaces
_RATES = (*_DEVICE_RATES, "swap_mib_s")  # swap is the host's own
_AGGREGATE_CPU = {"all", "-1", "total"}


def _first_of_repeats(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """One row per (time, host, kind, entity), each quantity its first value (iostat --pretty's two blocks merge),
    and how many rows repeated one (summed over devices, a sar -d log appended twice read twice its traffic)."""
    keys = ["time", "host", "kind", "entity"]
    quantities = [c for c in frame.columns if c not in keys]
    counts = frame.groupby(keys, sort=False)[quantities].count()
    extra = int((counts.max(axis=1) - 1).clip(lower=0).sum())
    return (frame.groupby(keys, sort=False, as_index=False)[quantities].first(), extra) if extra else (frame, 0)


def _drop_out_of_range(frame: pd.DataFrame) -> int:
    """Shares outside 0-100 % and rates below 0 or past MAX_RATE_MIB_S set to NaN in place (a damaged cell: 1e308
    averaged or summed is infinite); how many there were."""
    n = 0
    for cols, hi in ((("idle", "iowait"), 100.0), (_RATES, MAX_RATE_MIB_S)):
        for col in cols:
            bad = frame[col].notna() & ~frame[col].between(0.0, hi)
            n += int(bad.sum())
            frame.loc[bad, col] = np.nan
    return n


def _aggregate(frame: pd.DataFrame, src: str) -> pd.DataFrame:
    """Rows per (time, host, kind, entity) → one host row per (time, host): CPU busy (the `all` row,
    else the mean over CPUs), the busiest core, iowait, disk and network rates summed over devices."""
    frame["busy"] = (100.0 - frame["idle"] - frame["iowait"].fillna(0.0)).clip(0, 100)
    keys = ["time", "host"]
    out = frame[keys].drop_duplicates().set_index(keys)
    host_rows = frame[frame["kind"] == "host"].groupby(keys)
    cpu = frame[frame["kind"] == "cpu"]
    whole = cpu[cpu["entity"].str.lower().isin(_AGGREGATE_CPU)].groupby(keys)
    cores = cpu[~cpu["entity"].str.lower().isin(_AGGREGATE_CPU)].groupby(keys)
    out["cpu_pct"] = _first(whole["busy"].mean(), cores["busy"].mean(), host_rows["busy"].mean(), index=out.index)
    out["cpu_max_core_pct"] = cores["busy"].max().reindex(out.index)
    out["iowait_pct"] = _first(whole["iowait"].mean(), cores["iowait"].mean(), host_rows["iowait"].mean(),
                               index=out.index)
    devices = frame[frame["kind"].isin(("disk", "net"))]
    devices = devices[counted_devices(devices["entity"], devices["kind"] == "net")]
    disks = devices[devices["kind"] == "disk"].groupby(keys)
    nets = devices[devices["kind"] == "net"].groupby(keys)
    for col in _DEVICE_RATES:
        per_device = (disks if col in ("read_mib_s", "write_mib_s") else nets)[col].sum(min_count=1)
        out[col] = _first(per_device, host_rows[col].mean(), index=out.index)
    out["swap_mib_s"] = _first(host_rows["swap_mib_s"].mean(), index=out.index)
    out = out.reset_index()
    data = {c: out[c].to_numpy() for c in out.columns if c in schema.HOST_COLUMNS}
    data["time"] = pd.to_datetime(out["time"].to_numpy(), utc=True)
    data["source"] = src
    return schema.host_frame(data).sort_values(["host", "time"], kind="stable").reset_index(drop=True)


def _first(*series: pd.Series, index: pd.Index) -> np.ndarray:
    """Per index entry the first of `series` that has a value there (NaN when none does)."""
    out = pd.Series(np.nan, index=index)
    for s in series:
        out = out.fillna(s.reindex(index))
    return out.to_numpy(dtype=np.float64)


# ------------------------------------------------------------------------------------------------------------
# Text tables: sysstat (iostat, mpstat, sar), vmstat

_TOD = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})$")
_AMPM = {"am", "pm"}
_DATETIME_TAIL = re.compile(r"(\d{4}-\d{2}-\d{2})\s+(\d{2}:\d{2}:\d{2})\s*$")
_STAMP_LINE = re.compile(r"^(\d{2,4}[/.-]\d{2}[/.-]\d{2,4})[ T](\d{1,2}:\d{2}:\d{2})(?:\s*([AaPp][Mm]))?"
                         r"(?:\s*([+-]\d{4}|Z|UTC))?\s*$")
_NUMBER = re.compile(r"^[-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?$")


class _TextTables(Samples):
    """Whitespace-aligned tables under header lines, read line by line (`line`)."""

    def __init__(self, src: str, host: str, tz: str):
        super().__init__(src, host)
        self.tz = tz
        self.columns: list[str] | None = None  # the current header's column names (time tokens removed)
        self.tool = ""  # "vmstat" under vmstat's header (its procs columns `r b` first): its short names read
        self.useful = False  # whether the current header holds a column this reader reads
        self.date: str | None = None  # the banner's date
        self.stamp: int | None = None  # iostat -t: the last time-stamp line's time (None: it could not be placed)
        self.stamp_line = 0  # that line's number (0: none yet)
        self.zone: str | None = None  # vmstat -t: the zone its header names
        self.last_tod: tuple[int, int] | None = None  # (day offset, seconds) of the last time of day
        self.header_lines = 0
        self.understood = 0
        self.unread = 0  # lines of tables this reader does not read (interrupts, paging, ...): their headers and rows
        self.undated = False  # the note on times without a date given
        self.zone_said = False  # the note on vmstat -t's zone given
        # a read table's header while lines without numbers that followed it wait to be told from a new header
        self.prior: tuple[list[str], str] | None = None
        self.strays: list[tuple[int, str]] = []  # (line, text) of those lines

    def line(self, no: int, raw: str) -> None:
        text = raw.strip()
        if not text:
            return
        if m := _BANNER.match(text):
            self.host, self.date = m.group(1), m.group(2)
            self.understood += 1
            return
        if m := _STAMP_LINE.match(text):
            self.stamp = self._stamp(m.group(1), m.group(2), m.group(3), m.group(4))
            self.stamp_line = no
            self.understood += 1
            return
        if text.startswith("#") or set(text) <= set("-=# ") or text.startswith("procs ") or "--" in text[:12]:
            self.understood += 1  # comments, rules and the group lines above a vmstat header
            return
        tokens = text.split()
        lead, body = self._leading_time(tokens)
        if body and body[0].rstrip(":").lower() == "average":
            self.understood += 1
            return
        tail = _DATETIME_TAIL.search(text) if body and _NUMBER.match(body[0]) else None
        if tail:
            body = body[:-2]
        if not any(_NUMBER.match(t) or _HUMAN.match(t) for t in body):
            self._header(body, no, text)
            return
        self._row(no, lead, body, tail, group=raw[:1] == " " and not lead)

    def _header(self, tokens: list[str], no: int = 0, text: str = "") -> None:
        if tokens and tokens[0].endswith(":") and tokens[0].lower() not in ENTITY:  # avg-cpu:
            tokens = tokens[1:]
        if self.useful and self.columns is not None:
            self.prior, self.strays = (self.columns, self.tool), []
        self.strays.append((no, text))
        self.columns = tokens
        self.tool = "vmstat" if [t.lower() for t in tokens[:2]] == ["r", "b"] else ""
        self.useful = any(column_meaning(t, self.tool) for t in tokens)
        self.unread += not self.useful
        if self.useful:
            self.prior, self.strays = None, []
            self.header_lines += 1
            self.understood += 1
            last = tokens[-1] if tokens else ""
            if _VMSTAT.match(" ".join(tokens)) and last.isalpha() and len(last) <= 5 and last not in ("st", "gu"):
                self.zone, self.columns = last, tokens[:-1]

    def _row(self, no: int, lead: list[str], body: list[str], tail: re.Match | None, group: bool) -> None:
        """One data row under the current header; `group`: the line is indented, which under a header that
        starts with the device column marks an `iostat -g` group's total (left out: its devices are listed)."""
        if self.columns is not None and not self.useful and self.prior and len(body) == len(self.prior[0]) != \
                len(self.columns):
            self._resume()
        if self.columns is None or not self.useful:
            self.unread += self.columns is not None and len(body) == len(self.columns)
            return  # a table this reader does not use (interrupts, errors, paging, ...)
        cols = self.columns
        if group and ENTITY.get(cols[0].lower()) == "disk":
            self.understood += 1
            return
        if len(body) != len(cols):
            self.skips.skip(no, f"{len(body)} values under {len(cols)} columns")
            return
        kind, entity, values = "host", "", {}
        for name, cell in zip(cols, body, strict=True):
            low = name.lower()
            if low in ENTITY:
                kind, entity = ENTITY[low], cell
                continue
            meaning = column_meaning(name, self.tool)
            if meaning is None:
                continue
            quantity, factor = meaning
            number = _value(cell, factor)
            if number is None:
                self.skips.skip(no, f"bad {name} value {cell!r}")
                return
            add_value(values, quantity, number)
        if kind == "node":
            return
        t_ns = self._row_time(lead, tail)
        if t_ns is None and (lead or tail or self.stamp_line):
            self.skips.skip(no, f"a time not placed in {self.tz} (no such date, or a daylight-saving change)")
            return
        self.understood += 1
        self.add(t_ns, self.host, kind, entity, values)

    def _resume(self) -> None:
        """A row that fits the last read table and not the line(s) without numbers since (a kernel message, a job
        notice, junk in `vmstat 1 | tee`): those were no header; they are counted and the table read on."""
        (self.columns, self.tool), self.useful = self.prior, True
        for no, text in self.strays:
            self.unread -= 1
            self.skips.skip(no, f"not a row of the table above {text[:50]!r}")
        self.prior, self.strays = None, []

    def _leading_time(self, tokens: list[str]) -> tuple[list[str], list[str]]:
        """(the leading time-of-day tokens, the rest): `13:20:19`, `12:44:56 PM`."""
        if tokens and _TOD.match(tokens[0]):
            n = 2 if len(tokens) > 1 and tokens[1].lower() in _AMPM else 1
            return tokens[:n], tokens[n:]
        return [], tokens

    def _row_time(self, lead: list[str], tail: re.Match | None) -> int | None:
        if tail:
            utc = self.zone in (None, "UTC", "GMT")
            if not utc and not self.zone_said:
                self.zone_said = True
                self.notes.append(f"{self.src}: vmstat -t times are in {self.zone}; read as {self.tz} (pass --tz "
                                  "with the zone's IANA name to place them)")
            return self._stamp(tail.group(1), tail.group(2), None, "UTC" if utc else None)
        if lead:
            h, m, s = (int(x) for x in _TOD.match(lead[0]).groups())
            if len(lead) == 2:
                h = h % 12 + (12 if lead[1].lower() == "pm" else 0)
            secs = h * 3600 + m * 60 + s
            day = self.last_tod[0] if self.last_tod else 0
            if self.last_tod and secs < self.last_tod[1] - 43200:
                day += 1  # past midnight
            self.last_tod = (day, secs)
            return self._on_banner_date((day * 86400 + secs) * 1_000_000_000)
        return self.stamp

    def _on_banner_date(self, offset_ns: int) -> int | None:
        """ns UTC of the local time `offset_ns` after the banner date's midnight, read in `tz` (each time on its
        own: a log may span a daylight-saving change); without a banner, after the synthetic epoch (said once)."""
        day = parse_date(self.date) if self.date else None
        if day is not None:
            local = day.value + offset_ns
            return local if self.tz == "UTC" else utc_ns(pd.Timestamp(local), self.tz)
        if not self.undated:
            self.undated = True
            self.notes.append(f"{self.src}: times of day without a date: placed on "
                              f"{textio.SYNTHETIC_EPOCH:%Y-%m-%d} and the days after")
        return textio.SYNTHETIC_EPOCH.value + offset_ns

    def _stamp(self, date: str, tod: str, ampm: str | None, zone: str | None) -> int | None:
        day = parse_date(date)
        if day is None:
            return None
        h, m, s = (int(x) for x in tod.split(":"))
        if ampm:
            h = h % 12 + (12 if ampm.lower() == "pm" else 0)
        t = pd.Timestamp(day) + pd.Timedelta(seconds=h * 3600 + m * 60 + s)
        if zone and zone not in ("UTC", "Z"):
            return (t - pd.Timedelta(minutes=_offset_minutes(zone))).tz_localize("UTC").value
        return utc_ns(t, "UTC" if zone else self.tz)


def _offset_minutes(zone: str) -> int:
    sign = -1 if zone[0] == "-" else 1
    return sign * (int(zone[1:3]) * 60 + int(zone[3:5]))


_HUMAN = re.compile(r"^([-+]?\d+(?:[.,]\d+)?)([BkMGTP%])$")
_HUMAN_MIB = {"B": 1 / MIB, "k": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


def _value(cell: str, factor: float) -> float | None:
    """A cell in the schema's unit: the number times the column's `factor`; a sysstat --human cell carries its
    own unit (`222.1k` KiB, `1.5G` GiB: read as MiB whatever the column's name says; `56.0%` a share)."""
    if m := _HUMAN.match(cell):
        number = float(m.group(1).replace(",", "."))
        if not np.isfinite(number):
            return None
        return number if m.group(2) == "%" else number * _HUMAN_MIB[m.group(2)]
    number = _number(cell)
    return None if number is None else number * factor


def _number(cell: str) -> float | None:
    """A tool's number; a decimal comma (locales that print `50,6`) is read as a point."""
    if not _NUMBER.match(cell):
        return None
    value = float(cell.replace(",", "."))
    return value if np.isfinite(value) else None


# ------------------------------------------------------------------------------------------------------------
# top -b, sadf -d, dstat / dool CSV

# bounded pieces and no match inside a longer number: linear on any line
_TOP_FIELD = re.compile(r"(?<![\d.,])(\d{1,3}(?:[.,]\d{1,3})?)\s{0,4}%?\s{0,4}(us|sy|ni|id|wa|hi|si|st)\b")


def _top(src: str, text: str, host: str) -> Samples:
    """`top -b`: one block per refresh, its time of day on the `top - HH:MM:SS up ...` line; `%Cpu(s):` (or
    `Cpu(s):`) the whole host, `%Cpu0 :` ... each CPU when per-CPU display is on."""
    samples = _TextTables(src, host, "UTC")
    t_ns: int | None = None
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if m := _TOP.match(line):
            t_ns = samples._row_time([m.group(1)], None)
            continue
        if not (m := _TOP_CPU.match(line)):
            continue
        fields = {name: float(v.replace(",", ".")) for v, name in _TOP_FIELD.findall(line[m.end():])}
        if "id" not in fields:
            samples.skips.skip(no, f"no idle share in {line[:50]!r}")
            continue
        values = {"idle": fields["id"], "iowait": fields.get("wa", np.nan)}
        cpu = m.group(1)
        samples.add(t_ns, host, "host" if cpu == "(s)" else "cpu", "" if cpu == "(s)" else cpu, values)
    return samples


def _sadf(src: str, text: str, tz: str) -> Samples:
    """`sadf -d` (database-friendly CSV): `# hostname;interval;timestamp;<entity>;<columns>` headers, rows of
    `host;interval;timestamp;...` with the timestamp in UTC (`... UTC`), local time (-T) or epoch seconds (-U)."""
    samples = Samples(src, "")
    columns: list[str] | None = None
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            columns = line.lstrip("# ").split(";")[3:]
            continue
        cells = line.split(";")
        if columns is None or len(cells) != len(columns) + 3:
            samples.skips.skip(no, f"{len(cells)} fields under a {0 if columns is None else len(columns) + 3}-field "
                                   "header")
            continue
        t_ns, zone = _sadf_time(cells[2], tz)
        if t_ns is None:
            samples.skips.skip(no, f"bad timestamp {cells[2][:40]!r}")
            continue
        if zone and not samples.notes:
            samples.notes.append(f"{src}: sadf times are in {zone}; read as {tz} (pass --tz with the zone's IANA "
                                 "name to place them)")
        kind, entity, values = "host", "", {}
        for name, cell in zip(columns, cells[3:], strict=True):
            if name.lower() in ENTITY:
                kind, entity = ENTITY[name.lower()], ("all" if cell == "-1" else cell)
            elif (meaning := column_meaning(name)) and (number := _number(cell)) is not None:
                add_value(values, meaning[0], number * meaning[1])
        if kind != "node":
            samples.add(t_ns, cells[0], kind, entity, values)
    return samples


def _sadf_time(text: str, tz: str) -> tuple[int | None, str | None]:
    """(ns UTC, the zone abbreviation when it is not UTC) of `2019-04-18 13:20:19 UTC`, `... EST` (-T: local
    time, read as `tz`), epoch seconds (-U) or a date and time without a zone (read as `tz`)."""
    text = text.strip()
    if text.isdigit():
        return (int(text) * 1_000_000_000 if int(text) < textio.MAX_EPOCH_S else None), None
    if not text[:1].isdigit():  # pandas would read words ("now", "today") as a time
        return None, None
    stamp, _, zone = text.rpartition(" ")
    if not (zone.isalpha() and stamp):
        stamp, zone = text, ""
    try:
        t = pd.Timestamp(stamp)
    except (ValueError, OverflowError):
        return None, None
    utc = zone.upper() in ("UTC", "GMT")
    return utc_ns(t, "UTC" if utc else tz), (zone if zone and not utc else None)


_CMD_INTERVAL = re.compile(r"(?:^|\s)(\d+(?:\.\d+)?)(?:\s|$)")


def _dstat(src: str, text: str, host: str, tz: str) -> Samples:
    """`dstat` / `dool` / `pcp-dstat --output FILE`: per run (a file written again gets another run appended)
    lines of metadata (Host:, Cmdline:, Date:), a row of group titles (`total cpu usage`, `dsk/total`,
    `net/total`, `epoch`, `system`, `cpuN usage`, `dsk/sda`, ...) and a row of column names above the samples.
    Times: an `epoch` column, a `time` column (`dd-mm HH:MM:SS`, the year from Date:), else Date: plus the row
    number times the interval on the command line (1 s by default)."""
    samples = Samples(src, host)
    meta: dict[str, str] = {}
    header: list[list[str]] = []  # the group row, then the name row, of the current run
    roles: list[tuple[str, str, str, float]] = []
    n = 0
    for no, line in enumerate(text.split("\n"), start=1):
        try:  # a line at a time (dstat quotes no line break): a damaged line is one counted skip
            cells = next(csv.reader([line]), [])
        except csv.Error as exc:
            samples.skips.skip(no, f"unreadable CSV ({exc})")
            continue
        if not any(c.strip() for c in cells) or _DSTAT_TITLE.match(f'"{cells[0]}"'):
            continue
        if cells[0].rstrip(":").lower() in ("author", "host", "cmdline"):
            meta.update({cells[0].rstrip(":").lower(): cells[1]} if len(cells) > 1 else {})
            meta.update({cells[5].rstrip(":").lower(): cells[6]} if len(cells) > 6 else {})
            header, roles = [], []
            continue
        if len(header) < 2:
            header.append(cells)
            if len(header) == 2:
                roles, n = _dstat_roles(_ffill(header[0]), [c.strip().lower() for c in header[1]]), 0
                run = _DstatRun(meta, host, tz, samples)
            continue
        if len(cells) != len(roles):
            samples.skips.skip(no, f"{len(cells)} values under {len(roles)} columns")
            continue
        run.row(n, roles, cells)
        n += 1
    return samples


class _DstatRun:
    """One dstat run's clock and host, from its metadata."""

    def __init__(self, meta: dict[str, str], host: str, tz: str, samples: Samples):
        self.samples, self.tz = samples, tz
        self.host = meta.get("host") or host
        self.start, zone = _sadf_time(meta.get("date", ""), tz)
        if zone and not samples.notes:
            samples.notes.append(f"{samples.src}: dstat times are in {zone}; read as {tz} (pass --tz with the "
                                 "zone's IANA name to place them)")
        step = _CMD_INTERVAL.search(meta.get("cmdline", ""))
        self.step_s = float(step.group(1)) if step else 1.0
        self.year = pd.Timestamp(self.start, tz="UTC").year if self.start is not None else \
            textio.SYNTHETIC_EPOCH.year

    def row(self, n: int, roles: list[tuple[str, str, str, float]], cells: list[str]) -> None:
        """The n-th sample of the run: its time and one row per kind and entity."""
        per: dict[tuple[str, str], dict[str, float]] = {}
        t_ns = None if self.start is None else self.start + int(round(n * self.step_s * 1e9))
        for (kind, entity, quantity, factor), cell in zip(roles, cells, strict=True):
            if kind == "epoch":
                seconds = _number(cell)
                if seconds is not None and abs(seconds) < textio.MAX_EPOCH_S:
                    t_ns = int(round(seconds * 1e9))
            elif kind == "time":
                stamp = pd.to_datetime(f"{self.year}-{cell}", format="%Y-%d-%m %H:%M:%S", errors="coerce")
                placed = utc_ns(stamp, self.tz)
                t_ns = placed if placed is not None else t_ns
            elif kind and (number := _number(cell)) is not None:
                add_value(per.setdefault((kind, entity), {}), quantity, number * factor)
        for (kind, entity), values in per.items():
            self.samples.add(t_ns, self.host, kind, entity, values)


def _ffill(cells: list[str]) -> list[str]:
    out, last = [], ""
    for c in cells:
        last = c.strip().lower() or last
        out.append(last)
    return out


def _dstat_roles(groups: list[str], names: list[str]) -> list[tuple[str, str, str, float]]:
    """Per column (kind, entity, quantity, factor): kind "" for a column not read; per-device groups only when
    the file has no total for them."""
    totals = {g.split("/")[0] for g in groups if g.endswith("/total") or g == "total cpu usage"}
    out = []
    for group, name in zip(groups, names, strict=False):
        meaning = column_meaning(name, "dstat")
        if group == "epoch" or name == "epoch":
            out.append(("epoch", "", "", 1.0))
        elif name == "time":
            out.append(("time", "", "", 1.0))
        elif meaning is None:
            out.append(("", "", "", 1.0))
        elif group == "total cpu usage" or group.endswith("/total"):
            out.append(("host", "", *meaning))
        elif m := re.match(r"^cpu(\d+) usage$", group):
            out.append(("cpu", m.group(1), *meaning))
        elif "/" in group and group.split("/")[0] not in totals:
            kind = {"dsk": "disk", "net": "net"}.get(group.split("/")[0], "")
            out.append((kind, group.split("/", 1)[1], *meaning))
        else:
            out.append(("", "", "", 1.0))
    out += [("", "", "", 1.0)] * (len(names) - len(out))
    return out
