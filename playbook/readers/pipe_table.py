"""GPU telemetry as a markdown pipe table, as users paste a monitor's samples into an issue or a PR:

    | elapsed | GPU0 | GPU1 | fan (GPU0) | power (GPU0) | SM clock (GPU0) |
    |---:|---:|---:|---:|---:|---:|
    | 0 s (idle, pool unloaded) | 58 °C | 53 °C | 42% | — | — |
    | 78 s | 85 °C | 82 °C | 66% | 140/140 W | 1215 MHz |
    | 105 s | **thermal slowdown active** | 87 °C | 70% | 140/140 W | 1155 MHz |

Grammar: a header row of cells split at `|` (variant_table.cells), a rule row (cells of dashes and colons), then rows
of at most as many cells (a short row's missing cells are empty, as GitHub renders it); any other line ends the table. The names say what the columns hold (playbook.readers.headers, as
for a CSV header), after three readings of a pasted table's habits:
  a GPU named in brackets (`power (GPU0)`, `SM clock [gpu 1]`) is the column's GPU, not its unit → `GPU0 power`;
  a column named for a GPU alone (`GPU0`) holds the reading its cells' unit names (`58 °C` a temperature, `140 W` a
      power draw, `1215 MHz` an SM clock, `42%` a utilization) → `GPU0 temperature`;
  a relative-time name (elapsed, runtime, uptime, t) whose cells are durations (`78 s`, `1.5 min`) → seconds, where
      they never run back (else each row's own duration, an epoch's `time`: no clock).
A cell is read as its leading number (`**`, backticks and a trailing `(note)` dropped; `—`, `-`, `n/a` are missing);
a `draw/limit W` cell is a power draw and its limit. A cell of words naming a clock slowdown in a GPU's column
(`thermal slowdown active`, `HW slowdown`, `power brake`, `throttled`) sets that GPU's clock-event reasons in that row
(a thermal one: HW thermal slowdown, 0x40; a power brake 0x80; other slowdown words HW slowdown, 0x08) and leaves its
reading missing. Only a table whose names hold GPU telemetry (headers.is_telemetry) is read, in a text such tables
make at least half of (a log that printed one among its own lines is the line scanners'); a table of runs
(readers/variant_table.py) is not this.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import headers, textio
from playbook.readers.generic_csv import TableBuilder
from playbook.readers.variant_table import cells

MAX_ROWS = 100_000
_RULE = re.compile(r"^:?-{2,}:?$")
_BRACKET_GPU = re.compile(r"[(\[]\s*(gpu\s?\d{1,3})\s*[)\]]\s*$", re.IGNORECASE)  # searched: the name before
_GPU_ONLY = re.compile(r"^gpu\s?(\d{1,3})$", re.IGNORECASE)
_RELATIVE = {"elapsed", "runtime", "uptime", "t", "time"}
_LEAD = re.compile(r"^[-+]?\d{1,12}(?:\.\d{1,9})?")
_MISSING = {"", "—", "–", "-", "n/a", "na", "none", "null"}
_UNIT_ROLE = (("°c", "temperature"), ("c", "temperature"), ("w", "power"), ("mhz", "SM clock"), ("%", "utilization"))
_CELL_UNIT = re.compile(r"^[-+]?\d{1,12}(?:\.\d{1,9})?\s?(°c|°|c|w|mhz|%)$", re.IGNORECASE)
_DURATION = re.compile(r"^(\d{1,9}(?:\.\d{1,9})?)\s?(ms|s|sec|secs|seconds?|min|mins|minutes?|h)\b", re.IGNORECASE)
_TO_S = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0,
         "minute": 60.0, "minutes": 60.0, "h": 3600.0}
_PAIR_W = re.compile(r"^(\d{1,6}(?:\.\d{1,3})?)\s?W?\s?/\s?(\d{1,6}(?:\.\d{1,3})?)\s?W$", re.IGNORECASE)
_UNIT = re.compile(r"^\s?°?[A-Za-z%]{1,6}$")  # a unit after a cell's number: `GiB`, `GHz`, `°C`, `%`
_SLOW = re.compile(r"\b(thermal|power brake|slowdown|throttl\w*)\b", re.IGNORECASE)


def _clean(cell: str) -> str:
    c = cell.replace("**", "").replace("`", "").strip()
    if c.endswith(")"):  # a trailing `(note)` of at most 120 characters (found by position: linear on a long cell)
        if (i := c.find("(", max(c.rfind(")", 0, len(c) - 1) + 1, len(c) - 122))) >= 0:
            c = c[:i]
    return c.strip()


def _flag(cell: str) -> int:
    """The clock-event reason bits a cell of words states (0 for none)."""
    c = _clean(cell).lower()
    if not c or _LEAD.match(c) or not _SLOW.search(c):
        return 0
    if "brake" in c:
        return schema.THROTTLE_BITS["hw_power_brake"]
    return schema.THROTTLE_BITS["hw_thermal" if "thermal" in c else "hw_slowdown"]


def _names(header: list[str], rows: list[list[str]]) -> list[str]:
    """The header's names as the readers' vocabulary reads them (see the module docstring)."""
    out = []
    for k, name in enumerate(header):
        n = name.replace("**", "").replace("`", "").strip()
        if m := _BRACKET_GPU.search(n):
            n = f"{m.group(1).replace(' ', '')} {n[:m.start()].strip()}".strip()
        col = [_clean(r[k]) for r in rows if _clean(r[k]).lower() not in _MISSING]
        if m := _GPU_ONLY.match(n):
            units = {u.group(1).lower() for c in col if (u := _CELL_UNIT.match(c))}
            role = next((r for u, r in _UNIT_ROLE if u in units or (u == "°c" and "°" in units)), None)
            n = f"GPU{m.group(1)} {role}" if role else n
        elif n.lower() in _RELATIVE and col and all(_DURATION.match(c) for c in col):
            # `t`, `time`, `uptime` whose cells are durations: seconds since the start, where they never run back;
            # else each row's own duration (an epoch's `time`): no clock
            n = "elapsed (s)" if _rising([_seconds(c) for c in col]) else "duration"
        out.append(n)
    return out


def _seconds(cell: str) -> float:
    d = _DURATION.match(cell)
    return float(d.group(1)) * _TO_S[d.group(2).lower()] if d else float("nan")


def _rising(values: list[float]) -> bool:
    return all(b >= a for a, b in zip(values, values[1:], strict=False))


def _tables(lines: list[str]) -> list[tuple[int, list[str], list[tuple[int, list[str]]], int]]:
    """(header line, header cells, [(line number, row cells)] (the first MAX_ROWS), last line) of each pipe table
    with a rule row."""
    found, k = [], 0
    while k < len(lines) - 2:
        head = cells(lines[k]) if "|" in lines[k] else None
        rule = cells(lines[k + 1]) if head and "|" in lines[k + 1] else None
        if not (head and rule and len(head) >= 3 and len(rule) == len(head) and all(_RULE.match(c.strip())
                                                                                    for c in rule)):
            k += 1
            continue
        rows, j = [], k + 2
        while j < len(lines) and (r := cells(lines[j]) if "|" in lines[j] else None) and 2 <= len(r) <= len(head):
            if len(rows) < MAX_ROWS:  # a short row has empty cells at its end (as GitHub renders it)
                rows.append((j + 1, r + [""] * (len(head) - len(r))))
            j += 1
        if rows:
            found.append((k + 1, head, rows, j))
        k = j
    return found


def _telemetry(lines: list[str]):
    for at, head, rows, end in _tables(lines):
        names = _names(head, [r for _, r in rows])
        if headers.is_telemetry(names):
            yield at, names, rows, end


def sniff(head: str) -> bool:
    """A pipe table (header, rule row, a row) whose names hold GPU telemetry, its lines at least half of the text's
    non-blank lines: a training log that printed a table of its GPUs once is the line scanners' (as box_table's)."""
    if "|" not in head:
        return False
    lines = head.split("\n")
    tables = [end - at + 1 for at, _, _, end in _telemetry(lines)]
    return bool(tables) and 2 * sum(tables) >= sum(1 for ln in lines if ln.strip())


def _value(cell: str, name: str, role: str | None) -> str:
    """The cell as the table builder reads it: a metric's number with the unit it states (`15.5 GiB`, `1.98 GHz`:
    the builder scales it as a CSV cell's, where the name states none), else its leading number (a `draw/limit W`
    cell's draw); a relative time's seconds; any other cell (an absolute time, a host, a GPU index) as written."""
    c = _clean(cell)
    if c.lower() in _MISSING or _flag(cell):
        return ""
    if name == "elapsed (s)" and _DURATION.match(c):
        return repr(_seconds(c))
    if role not in schema.TELEMETRY_METRICS:
        return c
    m = _LEAD.match(c)
    if m and _UNIT.match(c[m.end():]):
        return c
    return m.group(0) if m else c


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """The first telemetry pipe table's rows into a Bundle (telemetry); the others are said in a warning."""
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    lines = textio.read_text(path).split("\n")
    tables = _telemetry(lines)
    found = next(tables, None)
    if found is None:
        raise InputError(f"{src}: no pipe table naming GPU telemetry")
    at, names, rows, end = found
    cols = headers.assign(names)
    gpu_of = {k: m.gpu for k, m in cols.items() if m.gpu is not None}
    extra: dict[str, list[str]] = {}  # derived columns: power limits of `draw/limit W` cells, clock-event reasons
    for i, (_, row) in enumerate(rows):
        for k, cell in enumerate(row):
            g = gpu_of.get(k)
            if g is None:
                continue
            if (bits := _flag(cell)) and (key := f"GPU{g} clocks_event_reasons"):
                extra.setdefault(key, [""] * len(rows))[i] = repr(float(bits))
            if (p := _PAIR_W.match(_clean(cell))) and cols[k].role == "power_w":
                extra.setdefault(f"GPU{g} power limit", [""] * len(rows))[i] = p.group(2)
    all_names = names + list(extra)
    columns = [[_value(r[k], names[k], cols[k].role if k in cols else None) for _, r in rows]
               for k in range(len(names))] + list(extra.values())
    skips = schema.SkipCounter(src)
    builder = TableBuilder(src, all_names, textio.host_from_path(path), skips, tz)
    table = pa.table({f"c{i}": pa.array(col, type=pa.string()) for i, col in enumerate(columns)})
    builder.add(table, np.array([n for n, _ in rows], dtype=np.int64))
    bundle = builder.bundle(interval_s)
    if (left := end - at - 1 - len(rows)) > 0:
        bundle.warnings.append(f"{src}: read the first {len(rows):,} rows of the table at line {at}; the {left:,} "
                               f"after them (to line {end}) are not read")
    if more := [str(t[0]) for t in tables]:
        bundle.warnings.append(f"{src}: read the telemetry table at line {at}; {len(more)} more telemetry table"
                               f"{'s' if len(more) > 1 else ''} (line {', '.join(more[:5])}) not read: give each "
                               "its own file to read it")
    return bundle
