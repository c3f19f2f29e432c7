"""NVIDIA Jetson `tegrastats` lines (TX1/TX2, Nano, Xavier, Orin; `tegrastats --interval MS --logfile F`):

    RAM 2135/7855MB (lfb 1057x4MB) CPU [2%@2035,off] EMC_FREQ 1%@1866 GR3D_FREQ 0%@1300 GPU@29C VDD_GPU 145/207
    10-01-2025 20:06:10 RAM 5454/6834MB ... GR3D_FREQ 99% ... GPU@43.5C VDD_IN 13671mW/7822mW
    07-21-2025 16:33:42 RAM 17953/62841MB ... GR3D_FREQ 39%@[305,0] ... gpu@40.093C VDD_GPU_SOC 2798mW/2798mW

Read by NVIDIA's description of the statistics (L4T "tegrastats Utility", DRIVE OS "Reported Statistics"):
`GR3D_FREQ X%@Y` (older boards `GR3D X%@Y`) is the GPU engine's load X % at Y MHz, Y a bracketed list on boards
with several GPCs (`@[305,0]`: the first is the clock read here), the clock absent on some releases; `NAME@T C` a
thermal zone (`GPU@`, `gpu@`: the GPU's temperature); a rail `NAME X/Y` or `NAME XmW/YmW` is its current and average
power in mW. A rail whose name ends in `_GPU` (`VDD_GPU`, `POM_5V_GPU`, `VDD_SYS_GPU`) feeds the GPU alone and is its
power; shared rails (`VDD_GPU_SOC`, `VDD_CPU_GPU_CV`) are not. One line is one sample of the board's one GPU (index
0); the `MM-DD-YYYY HH:MM:SS` prefix of newer releases is its time, else the samples go on a synthetic clock
(`--interval`; tegrastats' default is 1000 ms). RAM is shared with the CPUs, so it is not read as GPU memory.
"""

from __future__ import annotations

import re
from pathlib import Path

from playbook.model import schema
from playbook.readers import documents

FORMAT = "tegrastats (Jetson)"

# every pattern is anchored on one token or a bounded prefix, no nested repeats: linear
_STAMP = re.compile(r"^(\d{2})-(\d{2})-(\d{4}) (\d{2}:\d{2}:\d{2}) ")
_RAM = re.compile(r"\bRAM \d{1,9}/\d{1,9}MB\b")
_GR3D = re.compile(r"^(\d{1,3}(?:\.\d{1,3})?)%(?:@\[?(\d{1,6}))?")
_TEMP = re.compile(r"^([A-Za-z][\w-]{0,30})@(-?\d{1,4}(?:\.\d{1,4})?)C$")
_RAIL = re.compile(r"^(\d{1,7})(?:mW)?/\d{1,7}(?:mW)?$")
_NAME = re.compile(r"^[A-Z][A-Z0-9_]{1,40}$")


def sniff(head: str) -> bool:
    """Tegrastats lines (`RAM used/totalMB` and a `CPU [` load list, `cpu [` on TX1 releases) are at least half the
    first non-empty lines: a training log with a tegrastats line pasted in stays a step log (read as tegrastats, its
    step lines were all skipped)."""
    lines = [line for line in head.split("\n")[:40] if line.strip()]
    hits = sum(bool(_RAM.search(line)) and "CPU [" in line.upper() for line in lines)
    return hits > 0 and 2 * hits >= len(lines)


def fields(line: str) -> dict[str, str]:
    """One tegrastats line as nvidia-smi query fields: timestamp (ISO) when prefixed, utilization.gpu, clocks.gr
    (MHz), temperature.gpu (C), power.draw (W, from the GPU's own rail); {} when the line is not tegrastats."""
    if not _RAM.search(line):
        return {}
    out = {"index": "0"}
    stamp = _STAMP.match(line)
    if stamp:
        month, day, year, clock = stamp.groups()
        out["timestamp"] = f"{year}-{month}-{day} {clock}"
    tokens = line[stamp.end() if stamp else 0:].split()
    for name, value in zip(tokens, tokens[1:], strict=False):
        if name in ("GR3D_FREQ", "GR3D") and (m := _GR3D.match(value)):
            out["utilization.gpu"] = m.group(1)
            if m.group(2):
                out["clocks.gr"] = m.group(2)
        elif name.endswith("_GPU") and _NAME.match(name) and (m := _RAIL.match(value)):
            out.setdefault("power.draw", str(int(m.group(1)) / 1000))
    for token in tokens:
        if (m := _TEMP.match(token)) and m.group(1).lower() == "gpu":
            out["temperature.gpu"] = m.group(2)
    return out


def _records(stream, skips: schema.SkipCounter):
    """(line number, fields) per tegrastats line; the k lines stamped with one second (`--interval` under 1000 ms:
    the prefix has no fraction) spread evenly over it, line i at i/k s, not merged into its first."""
    second: list[tuple[int, dict[str, str]]] = []
    for no, raw in enumerate(stream, start=1):
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        record = fields(line)
        if not record:
            skips.skip(no, f"not a tegrastats line {line[:50]!r}")
            continue
        if second and record.get("timestamp") != second[0][1].get("timestamp"):
            yield from _spread(second)
            second = []
        second.append((no, record))
    yield from _spread(second)


def _spread(second: list[tuple[int, dict[str, str]]]):
    """The records of one stamped second, line i of k at i/k s into it (unstamped records as they are)."""
    k = len(second)
    for i, (no, record) in enumerate(second):
        if k > 1 and record.get("timestamp"):
            record = dict(record, timestamp=f"{record['timestamp']}.{i * 1_000_000 // k:06d}")
        yield no, record


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read a tegrastats log (one line a sample) into a Bundle (telemetry of the board's GPU)."""
    return documents.read_lines(path, _records, "tegrastats lines", interval_s, tz)

