"""One metric's history as MLflow's file store keeps it: `<run>/metrics/<key>`, one `<timestamp> <value> [<step>]`
line per logged value (mlflow/store/tracking/file_store.py, `_get_metric_from_line`: Unix ms, a float, an int).
The metric's name is only in the path: its key, `/` included (MLflow's system metrics are
`system/gpu_0_utilization_percentage`, `system/gpu_0_memory_usage_megabytes`), read by playbook.readers.headers
like a column name. The run (the folder holding `metrics/`) is the host, so a run's files line up as the samples of
its GPUs. A file whose key means no GPU metric (a loss, the host's CPU) is refused with one line naming it."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import generic_csv, headers, textio

FORMAT = "a metric history file (MLflow file store: <timestamp> <value> <step> lines, the name in the path)"

BLOCK_LINES = 100_000  # lines converted per block (bounds the transient Python lists)
SNIFF_LINES = 200


def _point(line: str) -> tuple[str, str] | None:
    """(timestamp, value) of a `<Unix s or ms> <number> [<int step>]` line, else None."""
    parts = line.split(" ")
    if len(parts) not in (2, 3) or len(parts[0]) not in (10, 13) or not parts[0].isdecimal():
        return None
    try:
        float(parts[1])
        if len(parts) == 3:
            int(parts[2])
    except ValueError:
        return None
    return parts[0], parts[1]


def sniff(head: str) -> bool:
    """The first line and nine in ten of the head's lines (the last one may be cut) are `<timestamp> <value>
    [<step>]` points (a damaged line is counted when read, not a reason to refuse the file)."""
    lines = [ln.strip() for ln in textio.head_lines(head)[:SNIFF_LINES] if ln.strip()]
    if not lines or _point(lines[0]) is None:
        return False
    return sum(_point(ln) is not None for ln in lines) >= 0.9 * len(lines)


def key_and_run(path: Path) -> tuple[str, str]:
    """(metric key, run name) from a metric file's path: the part under the nearest `metrics` folder and the
    folder holding it; without one, the file's name and its folder's."""
    parts = path.resolve().parts
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] == "metrics":
            return "/".join(parts[i + 1:]), parts[i - 1]
    return path.name, path.parent.name or "unknown"


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read one metric history file into a Bundle (telemetry: the metric named by the path)."""
    path = Path(path)
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    key, run = key_and_run(path)
    name = headers.series_name(key)
    if headers.meaning(name).role not in schema.TELEMETRY_METRICS:
        raise InputError(f"{src}: metric {key!r} is no GPU reading this playbook uses (utilization, memory in "
                         "MiB, power, clocks, temperature): not read")
    skips = schema.SkipCounter(src)
    builder = generic_csv.TableBuilder(src, ["timestamp", name], run, skips, tz)
    times: list[str] = []
    values: list[str] = []
    numbers: list[int] = []

    def flush() -> None:
        if times:
            builder.add(pa.table({"c0": pa.array(times, pa.string()), "c1": pa.array(values, pa.string())}),
                        np.asarray(numbers, dtype=np.int64))
            times.clear()
            values.clear()
            numbers.clear()

    with textio.open_text(path) as raw:
        stream = io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace", newline="")
        for no, line in enumerate(stream, start=1):
            text = line.strip()
            if not text:
                continue
            point = _point(text)
            if point is None:
                skips.skip(no, f"not a <timestamp> <value> <step> line {text[:50]!r}")
                continue
            times.append(point[0])
            values.append(point[1])
            numbers.append(no)
            if len(times) >= BLOCK_LINES:
                flush()
        notes = raw.notes
    flush()
    bundle = builder.bundle(interval_s)
    bundle.warnings[:0] = notes
    return bundle
