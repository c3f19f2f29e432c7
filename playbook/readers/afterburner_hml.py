"""MSI Afterburner's hardware monitoring log (`HardwareMonitoring.hml`, "Log history to file"), as the tool writes it:

    00, 07-12-2024 23:49:46, Hardware monitoring log v1.6
    01, 07-12-2024 23:49:46, Radeon RX 560 Series
    02, 07-12-2024 23:49:46, GPU temperature     ,GPU usage           ,FB usage   ,Memory usage ,Core clock ,...
    03, 07-12-2024 23:49:46, 0                   ,°C                  ,0.000      ,100.000      ,10         ,...
    80, 07-12-2024 23:49:46, 46.000              ,0.000               ,0.000      ,829.055      ,214.000    ,...

Every line is a record type, the time (day first: dd-mm-yyyy hh:mm:ss, local time) and fields padded with spaces:
`00` opens a logging session (the file's header, written again when logging restarts), `01` names the GPU, `02` the
sensors in column order, `03` one sensor's index, unit, graph minimum and maximum, and `80` one poll's values in the
`02` order. The sensors are what the user enabled: the GPU's (`GPU usage`, `FB usage` — the frame-buffer controller's
load —, `Memory usage` in MB, `Core clock`, `Memory clock`, `Power` in W, `GPU temperature`) beside the host's (`CPU1
usage`, `RAM usage`, ...). With two adapters each GPU sensor carries the adapter's number (`GPU1 usage`, `GPU2
memory usage`, `GPU2 power`): GPU n is index n - 1. NVIDIA boards add 0/1 limit flags (`Power limit`, `Temp limit`),
read as the clock-event reasons software power cap and thermal slowdown. A sensor whose `03` unit is not the one
the schema reads (a power in %, a temperature in °F) is left out; a poll with fewer values than the sensors named
is skipped and counted.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from playbook.model import schema
from playbook.readers import documents

FORMAT = "MSI Afterburner hardware monitoring log (.hml)"

# `TT, dd-mm-yyyy hh:mm:ss, rest`; the date's separators and order as a localised Windows writes it (day first), or
# ISO; bounded pieces, no nested repeats: linear
_LINE = re.compile(r"^(\d{2}),\s{0,8}(\d{1,4})[-./](\d{1,2})[-./](\d{1,4}) (\d{1,2}):(\d{2}):(\d{2}),(.*)$")
_HEADER = re.compile(r"^00,[^,]{8,30},\s*Hardware monitoring log v\d", re.IGNORECASE)
_ADAPTER = re.compile(r"^gpu(\d{1,2})\s+(.+)$")

# a GPU sensor's name (adapter number taken off) -> (the nvidia-smi query field it is, the 03 units it may carry)
SENSORS: dict[str, tuple[str, tuple[str, ...]]] = {
    "usage": ("utilization.gpu [%]", ("%", "")),
    "fb usage": ("utilization.memory [%]", ("%", "")),
    "memory usage": ("memory.used [MiB]", ("mb", "mib")),
    "core clock": ("clocks.sm [MHz]", ("mhz",)),
    "memory clock": ("clocks.mem [MHz]", ("mhz",)),
    "power": ("power.draw [W]", ("w",)),
    "temperature": ("temperature.gpu", ("°c", "c", "\u00b0c", "Â°c")),
}
LIMIT_FLAGS = {"power limit": schema.THROTTLE_BITS["sw_power_cap"], "temp limit": schema.THROTTLE_BITS["sw_thermal"]}
_GPU_ONLY = {"fb usage", "memory usage", "core clock", "memory clock", "power", *LIMIT_FLAGS}  # unnumbered: the GPU's


def sniff(head: str) -> bool:
    """The log's `00` header line, or a `02` sensor line followed by `80` polls, within the first lines."""
    lines = head.split("\n")[:200]
    if any(_HEADER.match(line.strip()) for line in lines[:20]):
        return True
    kinds = [m.group(1) for m in map(_LINE.match, (line.strip() for line in lines)) if m]
    return "02" in kinds and "80" in kinds[kinds.index("02"):]


def _sensor(name: str) -> tuple[int, str] | None:
    """(GPU index, the sensor's name without the adapter number) of a GPU sensor, else None (the host's)."""
    low = " ".join(name.lower().split())
    m = _ADAPTER.match(low)
    if m:
        return max(int(m.group(1)) - 1, 0), m.group(2)
    if low.startswith("gpu "):
        return 0, low[4:]
    return (0, low) if low in _GPU_ONLY else None


def _time(m: re.Match) -> str | None:
    """The line's time as ISO text (day first unless the year leads); None when it is no date."""
    a, b, c = m.group(2), m.group(3), m.group(4)
    year, month, day = (int(a), int(b), int(c)) if len(a) == 4 else (int(c), int(b), int(a))
    try:
        return datetime(year, month, day, int(m.group(5)), int(m.group(6)), int(m.group(7))).isoformat()
    except ValueError:
        return None


def _columns(names: list[str], units: dict[int, str]) -> list[tuple[int, int, str | int]]:
    """(field position, GPU index, query field or limit bit) of each GPU sensor the schema reads."""
    out: list[tuple[int, int, str | int]] = []
    for pos, name in enumerate(names):
        found = _sensor(name)
        if found is None:
            continue
        gpu, base = found
        unit = units.get(pos, "").lower()
        if base in LIMIT_FLAGS:
            out.append((pos, gpu, LIMIT_FLAGS[base]))
        elif base in SENSORS and (pos not in units or unit in SENSORS[base][1]):
            out.append((pos, gpu, SENSORS[base][0]))
    return out


def _records(stream, skips: schema.SkipCounter):
    names: list[str] = []
    units: dict[int, str] = {}
    columns: list[tuple[int, int, str | int]] | None = None
    for no, raw in enumerate(stream, start=1):
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        m = _LINE.match(line)
        if m is None:
            skips.skip(no, f"not an Afterburner record {line[:40]!r}")
            continue
        kind, fields = m.group(1), [f.strip() for f in m.group(8).split(",")]
        if kind == "02":
            names, units, columns = fields, {}, None
        elif kind == "03" and fields and fields[0].isdecimal() and len(fields) > 1:
            units[int(fields[0])] = fields[1]
            columns = None
        elif kind == "80":
            if columns is None:
                columns = _columns(names, units)
            when = _time(m)
            if len(fields) < len(names) or when is None or not columns:
                skips.skip(no, f"a poll with {len(fields)} of {len(names)} values" if when else "a bad date")
                continue
            yield from _polls(no, when, fields, columns)
        elif kind not in ("00", "01", "03"):
            skips.skip(no, f"record type {kind} not read")


def _polls(no: int, when: str, fields: list[str], columns):
    """One record per GPU of an `80` poll; limit flags summed into the clock-event mask."""
    per: dict[int, dict[str, str]] = {}
    masks: dict[int, int] = {}
    for pos, gpu, what in columns:
        rec = per.setdefault(gpu, {"timestamp": when, "index": str(gpu)})
        value = fields[pos]
        if isinstance(what, int):
            try:
                masks[gpu] = masks.get(gpu, 0) | (what if float(value) > 0 else 0)
            except ValueError:
                continue
        else:
            rec[what] = value
    for gpu, rec in sorted(per.items()):
        if gpu in masks:
            rec["clocks_event_reasons.active"] = hex(masks[gpu])
        yield no, rec


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read an Afterburner hardware monitoring log into a Bundle (telemetry; times local, read in `tz`)."""
    return documents.read_lines(path, _records, "Afterburner GPU polls", interval_s, tz)
