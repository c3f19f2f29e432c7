"""`nvidia-smi dmon` output: whitespace-aligned columns under `# gpu pwr gtemp ...` header blocks.

Handles: with or without `-o D/T/DT` date/time columns (`#Date Time gpu ...`); header blocks repeated every
page; the column sets of old drivers (`temp`) and new ones (`gtemp mtemp ... jpg ofa`), any `-s` selection;
`-` for a missing value; `nvidia-smi pmon` (a `pid` column: one row per process) is summed per GPU and poll
(a GPU with no process is idle). Columns read: pwr (W), gtemp/temp (C), sm (% = utilization.gpu), mem (% memory
controller), mclk/pclk (MHz), fb (MB, which dmon means as MiB), rxpci/txpci (MB/s). Without a date and time,
ticks (a new tick whenever the GPU index does not increase) get synthetic times `interval_s` apart. A time of
day without a date is placed on the synthetic epoch's date, rolling over at midnight. Times are read as `tz`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import frames, local_time, textio

FORMAT = "nvidia-smi dmon"

COLUMNS: dict[str, str] = {
    "pwr": "power_w",
    "gtemp": "temp_c",
    "temp": "temp_c",
    "sm": "util_pct",
    "mem": "mem_util_pct",
    "mclk": "mem_clock_mhz",
    "pclk": "sm_clock_mhz",
    "fb": "mem_used_mib",
    "rxpci": "pcie_rx_mib_s",
    "txpci": "pcie_tx_mib_s",
}
PER_PROCESS = {"util_pct", "mem_util_pct"}  # pmon's per-process shares, summed per GPU
KNOWN = set(COLUMNS) | {"mtemp", "enc", "dec", "jpg", "ofa", "bar1", "ccpm", "pviol", "tviol", "sbecc", "dbecc",
                        "pci", "gi", "ci", "type", "fbres", "mbres"}
_HEADER = re.compile(r"^#\s*(?:date\s+)?(?:time\s+)?gpu\b", re.IGNORECASE)
_DATE = re.compile(r"^\d{8}$")
_TIME = re.compile(r"^\d{1,2}:\d{2}:\d{2}$")


def _header_tokens(line: str) -> list[str] | None:
    if not _HEADER.match(line.strip()):
        return None
    tokens = line.strip().lstrip("#").split()
    names = [t.lower() for t in tokens]
    if "gpu" not in names or not (set(names) & KNOWN):
        return None
    return names


def sniff(head: str) -> bool:
    """True when a `# gpu ...` (or `#Date Time gpu ...`) header with dmon column names opens a block."""
    for line in head.split("\n")[:200]:
        if _header_tokens(line):
            return True
    return False


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read `nvidia-smi dmon` output into a Bundle (telemetry)."""
    path = Path(path)
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    notes: list[str] = []  # lossy decoding, a truncated stream
    text = textio.read_text(path, warnings=notes)
    skips = schema.SkipCounter(src)
    names, rows, values, n_rows = _parse_lines(text, skips)
    if names is None:
        raise InputError(f"{src}: no nvidia-smi dmon header ('# gpu ...') found")
    processes = {}
    if "pid" in names and n_rows:
        processes = _processes(rows)
        rows, values, n_rows = _per_device(rows, values)
    gpu = np.asarray(rows["gpu"], dtype=np.int64)
    time_ns, note = _times(rows, gpu, interval_s, tz, skips, src)
    synthetic = n_rows > 0 and rows["date"][0] is None and rows["time"][0] is None
    host = textio.host_from_path(path)
    bundle = frames.telemetry_bundle(src, host, time_ns, gpu, values, skips, note, interval_s if synthetic else None)
    bundle.warnings[:0] = notes
    if processes:
        bundle.meta[schema.GPU_PROCESSES] = {schema.gpu_id(host, g): p for g, p in processes.items()}
    return bundle


def _processes(rows: dict[str, list]) -> dict[int, list[str]]:
    """pmon's processes per GPU (the pids listed, in order of appearance; `-` is no process)."""
    out: dict[int, dict[str, None]] = {}
    for g, p in zip(rows["gpu"], rows["pid"], strict=True):
        if p not in (None, "-"):
            out.setdefault(g, {})[p] = None
    return {g: list(p) for g, p in out.items()}


def _parse_lines(text: str, skips: schema.SkipCounter
                 ) -> tuple[list[str] | None, dict[str, list], dict[str, list[float]], int]:
    """The header block's column names (None without a header), the rows' date/time/gpu/line, the columns'
    values (schema units; NaN where a row lacks one) and the row count. Unreadable rows are counted in `skips`."""
    names: list[str] | None = None
    units: list[str] = []
    expect_units = False
    rows: dict[str, list] = {"date": [], "time": [], "gpu": [], "pid": [], "line": []}
    values: dict[str, list[float]] = {}
    n_rows = 0
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            header = _header_tokens(line)
            if header is not None:
                names, units, expect_units = header, [""] * len(header), True
            elif expect_units and names is not None and len(line.lstrip("#").split()) == len(names):
                units = [u.lower() for u in line.lstrip("#").split()]
                expect_units = False
            continue
        expect_units = False
        if names is None:
            skips.skip(no, f"data before any header {line[:50]!r}")
            continue
        sample = _sample(line, no, names, units, skips)
        if sample is None:
            continue
        date, tod, gpu, pid, parsed = sample
        rows["date"].append(date)
        rows["time"].append(tod)
        rows["gpu"].append(gpu)
        rows["pid"].append(pid)
        rows["line"].append(no)
        for column in set(values) | set(parsed):
            col = values.get(column)
            if col is None:  # a column first seen now: NaN for the rows before (built once, not on every row)
                col = values[column] = [np.nan] * n_rows
            col.append(parsed.get(column, np.nan))
        n_rows += 1
    return names, rows, values, n_rows


def _sample(line: str, no: int, names: list[str], units: list[str], skips: schema.SkipCounter
            ) -> tuple[str | None, str | None, int, str | None, dict[str, float]] | None:
    """One data line as (date, time of day, GPU index, pmon's pid, {column: value in schema units}); None (counted in
    `skips`) when its column count, GPU index, a value or its date/time cannot be read."""
    cells = line.split()
    if len(cells) != len(names):
        skips.skip(no, f"{len(cells)} of {len(names)} columns {line[:50]!r}")
        return None
    row = dict(zip(names, cells, strict=True))
    gpu_text = row["gpu"]
    if not (gpu_text.isdecimal() and len(gpu_text) < 6):  # an index, not a 20-digit number
        skips.skip(no, f"bad gpu index {gpu_text!r}")
        return None
    parsed, bad = _values(names, cells, units)
    if bad:
        skips.skip(no, bad)
        return None
    date = row.get("date")
    tod = row.get("time")
    if (date is not None and not _DATE.match(date)) or (tod is not None and not _TIME.match(tod)):
        skips.skip(no, f"bad date/time {date or ''} {tod or ''}".rstrip())
        return None
    if row.get("pid") == "-":  # pmon: a GPU running no process is idle
        parsed = {c: (0.0 if c in PER_PROCESS else v) for c, v in parsed.items()}
    return date, tod, int(gpu_text), row.get("pid"), parsed


def _values(names: list[str], cells: list[str], units: list[str]) -> tuple[dict[str, float], str | None]:
    """The read columns' values in schema units (NaN for `-`), and why not when a cell is no number."""
    parsed: dict[str, float] = {}
    for name, cell, unit in zip(names, cells, units, strict=True):
        column = COLUMNS.get(name)
        if column is None:
            continue
        if cell in ("-", "N/A", "n/a"):
            parsed[column] = np.nan
            continue
        number = textio.parse_number(cell)
        if number is None:
            return parsed, f"bad {name} value {cell!r}"
        parsed[column] = number[0] * textio.UNIT_FACTORS.get(unit, 1.0)
    return parsed, None


def _per_device(rows: dict[str, list], values: dict[str, list]) -> tuple[dict[str, list], dict[str, list], int]:
    """`nvidia-smi pmon` rows (one per process) summed into one row per GPU and poll: the processes' SM and
    memory-controller shares add up to the device's (capped at 100 %). A poll ends where the GPU number
    decreases (several processes share one GPU number within a poll) or a GPU's process (or its idle `-` row) is
    listed again (one GPU: its number never falls), or at a new time when pmon prints times."""
    gpu = np.asarray(rows["gpu"], dtype=np.int64)
    stamp = [f"{d or ''} {t or ''}" for d, t in zip(rows["date"], rows["time"], strict=True)]
    if rows["time"][0] is None and rows["date"][0] is None:
        poll = np.cumsum(_new_polls(gpu, rows["pid"])) - 1
    else:
        poll = pd.Series(stamp).ne(pd.Series(stamp).shift()).cumsum().to_numpy()
    frame = pd.DataFrame({"poll": poll, "gpu": gpu, **{c: np.asarray(v, dtype=np.float64) for c, v in values.items()}})
    first = pd.DataFrame({"poll": poll, "gpu": gpu, "i": np.arange(len(gpu))}).groupby(["poll", "gpu"], sort=False)["i"].first()
    summed = frame.groupby(["poll", "gpu"], sort=False).sum(min_count=1)
    out_rows = {k: [rows[k][i] for i in first.to_numpy()] for k in rows}
    out_values = {c: (summed[c].clip(upper=100.0) if c in PER_PROCESS else summed[c]).tolist() for c in values}
    return out_rows, out_values, len(first)


def _new_polls(gpu: np.ndarray, pid: list) -> np.ndarray:
    """Per pmon row without a time, whether it opens a poll: the first row, a GPU number below the last one's, a
    (GPU, pid) pair the current poll already listed, or a GPU listed both idle (pid `-`) and busy (a poll lists a
    GPU's processes or its one idle row)."""
    out = np.zeros(len(gpu), dtype=bool)
    seen: set = set()  # (GPU, pid) pairs of the current poll
    listed: set = set()  # its GPUs
    for i, (g, p) in enumerate(zip(gpu.tolist(), pid, strict=True)):
        if i == 0 or gpu[i] < gpu[i - 1] or (g, p) in seen or (g, "-") in seen or (p == "-" and g in listed):
            out[i], seen, listed = True, set(), set()
        seen.add((g, p))
        listed.add(g)
    return out


def _times(rows: dict[str, list], gpu: np.ndarray, interval_s: float | None, tz: str,
           skips: schema.SkipCounter, src: str) -> tuple[np.ndarray, str | None]:
    """int64 ns UTC per row (INT64_MIN for rows whose time cannot be read) and a warning when synthetic."""
    n = len(gpu)
    nat = np.iinfo(np.int64).min
    if n == 0:
        return np.zeros(0, dtype=np.int64), None
    dates, tods = rows["date"], rows["time"]
    if dates[0] is None and tods[0] is None:
        new_tick = np.r_[True, gpu[1:] <= gpu[:-1]]
        ticks = np.cumsum(new_tick) - 1
        return (textio.synthetic_times(ticks, interval_s).astype(np.int64),
                textio.synthetic_warning(src, "dmon ticks", interval_s))
    note = None
    if dates[0] is None:
        # Time of day only: place it on the synthetic epoch's date and roll over at midnight.
        secs = np.array([sum(int(p) * m for p, m in zip(t.split(":"), (3600, 60, 1), strict=True)) for t in tods],
                        dtype=np.int64)
        days = np.cumsum(np.r_[0, np.diff(secs) < -43200])
        base = textio.SYNTHETIC_EPOCH.value
        note = (f"{src}: dmon times of day without a date (-o T): placed on "
                f"{textio.SYNTHETIC_EPOCH:%Y-%m-%d} and the days after; use -o DT for real dates")
        return base + (days * 86400 + secs) * 1_000_000_000, note
    stamps = pd.to_datetime(pd.Series([f"{d} {t or '00:00:00'}" for d, t in zip(dates, tods, strict=True)]),
                            format="%Y%m%d %H:%M:%S", errors="coerce")
    stamps = local_time.localize(stamps, tz)
    ns = textio.datetime_ns(stamps)
    bad = ns == np.iinfo(np.int64).min
    for i in np.flatnonzero(bad)[: skips.keep]:
        skips.skip(rows["line"][i], f"bad date {dates[i]} {tods[i]}")
    skips.count += max(0, int(bad.sum()) - skips.keep)
    ns[bad] = nat
    return ns, note
