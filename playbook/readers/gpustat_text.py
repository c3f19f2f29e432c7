"""gpustat's plain-text output, one query or a watch log (`gpustat -i 1 --no-color > log`):

    node1                     Mon Dec  1 19:00:00 2025  535.104.05
    [0] NVIDIA A100-SXM4-80GB | 45°C,  96 % | 40000 / 81920 MB | alice(39500M)

A header line (host name, query time, driver version) starts each query; each `[N] name | ... | used / total MB`
line is GPU N. The middle fields are read by their units: `°C` the temperature, the last `%` the utilization (with
`--show-fan` the fan speed comes first), `W` the power draw (`draw / limit W` with `--show-power=draw,limit`).
Colour escapes are stripped. Lines before the first header get synthetic times `interval_s` apart. The lines recast
as a Markdown table (`| [0] name | 45'C, 96 % | 40000 / 81920 MB | alice(39500M) |`, a header row and its `| --- |`
rule above) read the same.

The processes after the memory, `user(memM)` (`user:command/pid(memM)` with `-c -p`), are who holds each GPU: kept
as the input's sharing summary (schema.GPU_SHARING: each process's user, pid, memory; analysis.gpu_sharing).
"""

from __future__ import annotations

import re
from pathlib import Path

from playbook.model import schema
from playbook.readers import documents, textio
from playbook.readers.collected import strip_text_escapes
from playbook.readers.nvidia_smi import processes

FORMAT = "gpustat (plain text)"

# [N] name | fields | used / total MB [| processes]; bounded pieces, no nested repeats: linear
_GPU = re.compile(r"^\[(\d{1,4})\]\s*([^|]{1,80}?)\s*\|([^|]{1,120})\|\s*(\d{1,9})\s*/\s*(\d{1,9})\s*MB\s*(?:\|(.*))?$")
# user(memM), user:command(memM), user:command/pid(memM): the user first, the pid after the last slash
_PROCESS = re.compile(r"([^\s():/]{1,64})(?::([^\s()]{0,255}?))?(?:/(\d{1,10}))?\((\d{1,9})M\)")
_RULE = frozenset(" \t:|-")  # the characters of a Markdown table's rule under its header row (`| --- | :-: |`)
_HEADER = re.compile(r"^(\S{1,255})\s{2,}+(.{8,60}?)\s{2,}+(\d{2,4}\.\d{1,4}(?:\.\d{1,4})?)\s*$")
_TEMP = re.compile(r"^(-?\d{1,4})\s*+(?:°|')?\s*+C$")
_PCT = re.compile(r"^(\d{1,4})\s*%$")
_WATTS = re.compile(r"^(\d{1,5})\s*(?:/\s*(\d{1,5})\s*)?W$")


def sniff(head: str) -> bool:
    """A gpustat GPU line (`[0] name | 45°C, 96 % | 40000 / 81920 MB`) within the first lines."""
    for line in head.split("\n")[:60]:
        if _GPU.match(_unframe(strip_text_escapes(line).strip())):
            return True
    return False


def _unframe(line: str) -> str:
    """A Markdown table row's cells without the frame (`| [0] name | ... |` -> `[0] name | ...`)."""
    if len(line) > 2 and line[0] == "|" and line[-1] == "|":
        return line[1:-1].strip()
    return line


def _processes(text: str | None) -> list[dict]:
    """The processes gpustat lists after a GPU's memory: [{user, name, pid, mem_mib}]."""
    return [{"user": m.group(1), "name": m.group(2) or "", "pid": m.group(3), "mem_mib": float(m.group(4))}
            for m in _PROCESS.finditer(text or "")]


def _fields(middle: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in middle.split(","):
        item = item.strip()
        if m := _TEMP.match(item):
            out["temperature.gpu"] = m.group(1)
        elif m := _PCT.match(item):
            out["utilization.gpu"] = m.group(1)  # the last percentage: fan speed, when shown, comes first
        elif m := _WATTS.match(item):
            out["power.draw"] = m.group(1)
            if m.group(2):
                out["enforced.power.limit"] = m.group(2)
    return out


def _records(stream, skips: schema.SkipCounter, procs: list[dict] | None = None):
    header: dict[str, str] = {}
    polls: dict[str | None, tuple[int, int]] = {}  # host -> (its snapshot, its last GPU index)
    for no, raw in enumerate(stream, start=1):
        line = _unframe(strip_text_escapes(raw.decode("utf-8", "replace")).strip())
        if not line or ("-" in line and set(line) <= _RULE):
            continue
        gpu = _GPU.match(line)
        if gpu:
            index, host = int(gpu.group(1)), header.get("hostname")
            snapshot, last = polls.get(host, (0, -1))
            snapshot = snapshot + (index <= last)
            polls[host] = (snapshot, index)
            if procs is not None:  # each host's own (a file of several hosts' queries, one after the other)
                procs += [{**p, "gpu": index, "type": "", "host": host, "snapshot": snapshot}
                          for p in _processes(gpu.group(6))]
            yield no, {**header, "index": gpu.group(1), **_fields(gpu.group(3)), "memory.used": gpu.group(4),
                       "memory.total": gpu.group(5)}
            continue
        head = _HEADER.match(line)
        if head:
            header = {"hostname": head.group(1), "query_time": head.group(2)}
        elif not line.startswith(("├", "└", "│")):  # process trees of --show-full-cmd
            skips.skip(no, f"not a gpustat line {line[:50]!r}")


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read gpustat text output (one query or a watch log) into a Bundle (telemetry; who holds each GPU in meta)."""
    procs: list[dict] = []
    bundle = documents.read_lines(path, lambda stream, skips: _records(stream, skips, procs), "gpustat GPU lines",
                                  interval_s, tz)
    tele = bundle.telemetry
    host = str(tele["host"].iloc[0]) if len(tele) else textio.host_from_path(path)
    return processes.attach(bundle, str(path), host, procs, [], {})
