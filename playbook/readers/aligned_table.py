"""Space-aligned text tables a GPU monitor script prints: a header whose names are set apart by two or more spaces
(a name may hold one: `Mem Used`), optional title lines above it and rule lines of `=` / `-` around it, then rows of
numbers set apart by spaces, as many as the names:

    GPU Utilization Monitor - Press Ctrl+C to stop
    ============================================================
    Time     GPU%   Mem Used   Mem Total  Temp   Power
    ============================================================
         0.5    9.0       1361       8192   45.0     71.7

The names say what the columns hold (playbook.readers.headers, as for a CSV header); the rows go through the CSV
reader's table builder (generic_csv.TableBuilder: units, time parsing, synthetic ticks without a time column,
skipped and counted rows). Rows of another width, and text lines between the rows, are skipped and counted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import textio
from playbook.readers.generic_csv import TableBuilder
from playbook.readers.headers import is_telemetry

TITLE_LINES = 5  # title or rule lines a header may follow
MIN_NAMES = 3


def _names(line: str) -> list[str]:
    """The names of a line split at runs of two or more spaces (tabs read as spaces)."""
    return [p.strip() for p in line.replace("\t", "  ").split("  ") if p.strip()]


def _rule(line: str) -> bool:
    s = line.strip()
    return len(s) >= 3 and set(s) <= set("=-+ ")


def _numeric_row(line: str, width: int) -> bool:
    fields = line.split()
    return len(fields) == width and all(_number(f) for f in fields)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _header(lines: list[str]) -> tuple[int, list[str]] | None:
    """(line index, names) of the header: within the first TITLE_LINES non-rule lines, a line of MIN_NAMES or more
    names (no comma, tab-free CSV delimiters) that name GPU telemetry, with a row of as many numbers below it (past
    rule lines)."""
    seen = 0
    for k, line in enumerate(lines[:60]):
        if not line.strip() or _rule(line):
            continue
        seen += 1
        if seen > TITLE_LINES + 1:
            return None
        if "," in line or ";" in line:
            continue
        names = _names(line)
        if len(names) < MIN_NAMES or not is_telemetry(names):
            continue
        below = next((x for x in lines[k + 1:k + 4] if x.strip() and not _rule(x)), "")
        if _numeric_row(below, len(names)):
            return k, names
    return None


def sniff(head: str) -> bool:
    """A space-aligned header naming GPU telemetry with a row of numbers of its width below it."""
    return _header(head.split("\n")) is not None


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """The table's rows into a Bundle (telemetry)."""
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    lines = textio.read_text(path).split("\n")
    found = _header(lines)
    if found is None:
        raise InputError(f"{src}: no space-aligned header naming GPU telemetry")
    at, names = found
    skips = schema.SkipCounter(src)
    builder = TableBuilder(src, names, textio.host_from_path(path), skips, tz)
    rows: list[list[str]] = []
    numbers: list[int] = []
    for k, line in enumerate(lines[at + 1:], start=at + 2):
        if not line.strip() or _rule(line):
            continue
        fields = line.split()
        if len(fields) != len(names):
            skips.skip(k, f"{len(fields)} of {len(names)} fields {line.strip()[:50]!r}")
            continue
        rows.append(fields)
        numbers.append(k)
    if rows:
        columns = list(zip(*rows, strict=True))
        table = pa.table({f"c{i}": pa.array(col, type=pa.string()) for i, col in enumerate(columns)})
        builder.add(table, np.array(numbers, dtype=np.int64))
    bundle = builder.bundle(interval_s)
    return bundle
