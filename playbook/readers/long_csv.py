"""A telemetry table in the long layout: one row per (time, series, value), the series' name in a column.

MLflow's metric history (`key,value,timestamp,step` with keys `system/gpu_0_utilization_percentage`), Grafana's
"series as rows" CSV export (`"Series";"Time";"Value"` with `DCGM_FI_DEV_GPU_UTIL{gpu="0", ...}`), and any
`time,metric,value` dump. The layout is recognised from the header: a name column (key, metric, series, name,
metric_name, field, measurement) and a value column (value, val, metric_value), beside a time, GPU or step
column. Each series name is read by playbook.readers.headers like a column name (so the GPU comes from
`gpu_0_...`, `gpu.0.`, `{gpu="0"}` or a gpu column, the unit from `_percentage`, `_megabytes`, `(%)`), and the
rows are pivoted into the wide table the generic CSV reader builds (generic_csv.TableBuilder). Series whose name
means no GPU metric (CPU, loss, ...) are passed over.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pyarrow as pa

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import generic_csv, headers, textio

FORMAT = "telemetry CSV in the long layout (one row per series and time)"

NAME_COLUMNS = ({"key"}, {"metric"}, {"series"}, {"name"}, {"metric", "name"}, {"field"}, {"measurement"},
                {"metric", "key"}, {"series", "name"})
VALUE_COLUMNS = ({"value"}, {"val"}, {"metric", "value"}, {"reading"})
MAX_SERIES = 10_000  # distinct GPU-metric series kept: a wider pivot is not one run's telemetry
SNIFF_ROWS = 400


def _layout(names: list[str]) -> tuple[int, int, list[int]] | None:
    """(name column, value column, identity columns: time / GPU / host / step) of a long header, else None."""
    words = [set(headers.tokens(n)) for n in names]
    key = next((i for i, w in enumerate(words) if w in NAME_COLUMNS), None)
    value = next((i for i, w in enumerate(words) if w in VALUE_COLUMNS), None)
    if key is None or value is None:
        return None
    roles = headers.assign(names)
    ident = [i for i, m in roles.items() if m.role in ("time", "gpu", "host") and i not in (key, value)]
    ident += [i for i, w in enumerate(words) if w == {"step"} and i not in ident]
    return (key, value, sorted(ident)) if ident else None


def sniff(head: str) -> bool:
    """A delimited header with a name and a value column whose first rows name a GPU metric series."""
    if textio.looks_like_json(head) or head.lstrip().startswith("<"):
        return False
    found = generic_csv._header(head)
    if found is None:
        return False
    skip, sep, names = found
    layout = _layout(names)
    if layout is None:
        return False
    key, _value, ident = layout
    lines = textio.head_lines(head)[skip + 1: skip + 1 + SNIFF_ROWS]  # (the last line of a cut head may be cut)
    try:
        series = {headers.series_name(row[key].strip()) for row in csv.reader(lines, delimiter=sep) if len(row) > key}
    except csv.Error:  # a NUL byte, a field past the csv module's limit: not a table this reader takes
        return False
    return headers.is_telemetry([names[i] for i in ident] + sorted(series))


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read a long-layout telemetry CSV into a Bundle (telemetry), pivoting series into columns."""
    path = Path(path)
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    skips = schema.SkipCounter(src)
    found = generic_csv._header(textio.read_head(path))
    if found is None:
        raise InputError(f"{src}: no delimited header line")
    skip, sep, names = found
    generic_csv.check_width(src, len(names), skip + 1)
    layout = _layout(names)
    if layout is None:
        raise InputError(f"{src}: no name and value columns among {', '.join(names[:8])}")
    key, value, ident = layout
    width = max([key, value, *ident]) + 1
    rows: dict[tuple[str, ...], int] = {}
    first_line: list[int] = []
    cells: dict[str, dict[int, str]] = {}  # series -> row -> value text
    passed: set[str] = set()
    dropped = 0
    with textio.open_text(path) as raw:
        text = io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace", newline="")
        reader = csv.reader(text, delimiter=sep)
        try:
            for no, row in enumerate(reader, start=1):
                if no <= skip + 1 or not row or not "".join(row).strip():
                    continue
                if len(row) < width:
                    skips.skip(reader.line_num, f"{len(row)} of {len(names)} fields {sep.join(row)[:50]!r}")
                    continue
                name = headers.series_name(row[key].strip())
                if name in passed:
                    continue
                if name not in cells:
                    m = headers.meaning(name)
                    if m.role not in schema.TELEMETRY_METRICS or len(cells) >= MAX_SERIES:
                        dropped += m.role in schema.TELEMETRY_METRICS
                        passed.add(name)
                        continue
                    cells[name] = {}
                r = rows.setdefault(tuple(row[i].strip() for i in ident), len(rows))
                if r == len(first_line):
                    first_line.append(reader.line_num)
                cells[name][r] = row[value]
        except csv.Error as exc:  # a NUL byte, a field past the csv module's limit
            raise InputError(f"{src}: unreadable CSV at line {reader.line_num} ({exc})") from None
        notes = raw.notes
    if not cells:
        raise InputError(f"{src}: no GPU metric series among the {names[key]} values")
    series = sorted(cells)
    columns = [[ids[j] for ids in rows] for j in range(len(ident))]
    columns += [[cells[s].get(r, "") for r in range(len(rows))] for s in series]
    table = pa.table({f"c{i}": pa.array(c, pa.string()) for i, c in enumerate(columns)})
    builder = generic_csv.TableBuilder(src, [names[i] for i in ident] + series, textio.host_from_path(path), skips,
                                       tz)
    builder.add(table, np.asarray(first_line, dtype=np.int64))
    bundle = builder.bundle(interval_s)
    if dropped:
        bundle.warnings.append(f"{src}: {dropped} GPU metric series past the first {MAX_SERIES} not read")
    bundle.warnings[:0] = notes
    return bundle
