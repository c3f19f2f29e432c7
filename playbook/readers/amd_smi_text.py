"""AMD's plain-text tools, logged by a loop or pasted: rocm-smi's tables, rocm-smi's `GPU[N] : key: value` lines and
`amd-smi metric`'s indented sections. Every layout becomes one record per device and poll, read by the meaning of
its keys (playbook.readers.headers) like a document's.

    GPU  Temp   AvgPwr  SCLK    MCLK    Fan     Perf  PwrCap  VRAM%  GPU%          rocm-smi (legacy and concise
    0    31.0c  3.0W    852Mhz  167Mhz  28.63%  auto  170.0W  0%     0%            tables, also `amd-smi monitor`)

    GPU[0]          : Average Graphics Package Power (W): 237.0                  rocm-smi --showpower, -a, ...

    GPU: 0                                                                        amd-smi metric
        USAGE:
            GFX_ACTIVITY: 0 %

A table's cells lie under its header's column starts (headings are separated by two or more spaces; a second
header line, rocm-smi's "(Junction)" / "(Socket)", qualifies the heading above it); its device column is the
first one (GPU / Device), and a row of cells per device follows. Each table, each `ROCm System Management
Interface` banner and each repeat of a device in amd-smi's sections starts a new poll (a tick `interval_s` apart:
these outputs carry no clock). rocm-smi's "Node" column is the device's KFD node, not a machine, and is not read
as a host. "N/A (Secondary die)" is N/A.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from pathlib import Path

from playbook.model import schema
from playbook.readers import documents, headers

FORMAT = "rocm-smi / amd-smi (plain text)"

_BANNER = re.compile(r"ROCm System Management Interface")
_KV_GPU = re.compile(r"^(?:ERROR:\s*)?GPU\[(\d{1,4})\]\s*:\s*(.{0,300})$")  # rocm-smi: GPU[0]   : key: value
_SECTION_GPU = re.compile(r"^GPU:\s*(\d{1,4})\s*$")  # amd-smi metric / static: `GPU: 0`
_INDENTED_KV = re.compile(r"^( +)([A-Za-z][\w ./()%-]{0,60}?):(?:\s+(.*))?$")
# rocm-smi -a's current clocks: "sclk clock level: 2 (2100Mhz)", the level's frequency in parentheses
_LEVEL = re.compile(r"^(.{1,40}?)\s+level$")
_LEVEL_VALUE = re.compile(r"^\d{1,3}\s*\((\d{1,7}(?:\.\d{1,3})?\s*[A-Za-z]{1,4})\)$")
_ROW = re.compile(r"^ {0,4}\d{1,4}\s")
# what a pasted session holds around the tables: the prompt line that ran the tool ("user@host:~$ amd-smi monitor"),
# the notice amd-smi prints right after it ("WARNING: User is missing the following required groups ..."), and
# `amd-smi monitor --process`'s "PROCESS INFO:" title over its process table
_COMMAND = re.compile(r"(?:^|[\s$#>])(?:amd-smi|rocm-smi)(?:\s|$)")
_NOTICE = re.compile(r"^(?:WARNING|ERROR|NOTE)\b")
_TITLE = re.compile(r"^[A-Z][A-Z ]{2,40}:$")
_USED_OF = re.compile(r"^(\d{1,9}(?:\.\d{1,6})?)\s{0,3}/\s{0,3}(\d{1,9}(?:\.\d{1,6})?)\s{0,3}([A-Za-z]{1,3})$")
_DEVICE_HEADINGS = ("gpu", "device")
_CELL = re.compile(r"\S+(?: \S+)*")  # a heading: words apart by single spaces


def sniff(head: str) -> bool:
    """A rocm-smi `GPU[N] : key: value` line or an amd-smi `GPU: N` section holding a reading (a key that means a
    GPU metric), or a device table's header and row. (A log that merely prints `GPU: 0` is left to the line
    scanners, and so is a training log that printed rocm-smi once at its start: these lines must be most of the
    text.)"""
    lines = head.split("\n")[:400]
    if not _mostly_ours(lines):
        return False
    for i, line in enumerate(lines):
        if (m := _KV_GPU.match(line)) and _reading(m.group(2).rpartition(": ")[0]):
            return True
        if _SECTION_GPU.match(line) and _section_reading(lines[i + 1:i + 40]):
            return True
        if _header(line) is not None and any(_ROW.match(x) for x in lines[i + 1:i + 4]):
            return True
    return False


def _mostly_ours(lines: list[str]) -> bool:
    """True when at least half of the non-blank lines are this tool's: banners and rules, GPU[N] and indented
    KEY: value lines, table headers and rows."""
    text = [ln for ln in lines if ln.strip()]
    ours = sum(1 for i, ln in enumerate(text)
               if ln.lstrip().startswith(("=", "(")) or _BANNER.search(ln) or _KV_GPU.match(ln)
               or _SECTION_GPU.match(ln) or _INDENTED_KV.match(ln) or _ROW.match(ln) or _header(ln) is not None
               or _session_line(ln, text[i - 1] if i else ""))
    return 2 * ours >= len(text)


def _session_line(line: str, before: str) -> bool:
    """A pasted session's line around the tables: the prompt that ran the tool, the notice the tool prints right
    after it, a section title or a process table's header (amd-smi monitor --process)."""
    return bool(_COMMAND.search(line) or (_NOTICE.match(line) and _COMMAND.search(before))
                or _TITLE.match(line.strip()) or _header(line, processes=True) is not None)


def _reading(key: str) -> bool:
    return headers.meaning(key.strip()).role in schema.TELEMETRY_METRICS


def _section_reading(lines: list[str]) -> bool:
    """True when the indented `KEY: value` lines below a `GPU: N` line hold a reading (their section path read)."""
    path: list[tuple[int, str]] = []
    for line in lines:
        m = _INDENTED_KV.match(line)
        if m is None:
            if line.strip() and not line.startswith(" "):
                return False
            continue
        indent, key, value = len(m.group(1)), m.group(2).strip(), (m.group(3) or "").strip()
        while path and path[-1][0] >= indent:
            path.pop()
        if not value:
            path.append((indent, key))
        elif _reading(".".join([k for _i, k in path] + [key])):
            return True
    return False


def _header(line: str, processes: bool = False) -> list[tuple[int, str]] | None:
    """(start column, heading) of a device table's header: a device heading first and two readings among the rest;
    none for a process table (a PID column: `amd-smi monitor -q`'s PROCESS INFO) — or, with `processes`, that
    process table's header only."""
    cells = [(m.start(), m.group()) for m in _CELL.finditer(line.rstrip())]
    cells = [(c, h) for c, h in cells if not h.startswith("=")]
    if len(cells) < 3 or cells[0][1].lower() not in _DEVICE_HEADINGS or cells[0][0] > 2:
        return None
    if any(set(headers.tokens(h)) & {"pid", "process"} for _c, h in cells) != processes:
        return None
    if processes:
        return cells
    metrics = sum(headers.meaning(h).role in schema.TELEMETRY_METRICS for _c, h in cells[1:])
    return cells if metrics >= 2 else None


def _cuts(table: list[tuple[int, str]], row: str) -> list[int]:
    """Where a row's cells begin: at the headings' starts when the row's values are left-aligned under them
    (rocm-smi), else just past the previous heading's end (right-aligned values: amd-smi monitor)."""
    starts = [c for c, _h in table]
    ends = [c + len(h) for c, h in table]
    begins = {m.start() for m in _CELL.finditer(row)}
    finishes = {m.end() for m in _CELL.finditer(row)}
    if len(begins & set(starts)) >= len(finishes & set(ends)):
        return starts
    return [0] + ends[:-1]


def _current_level(key: str, value: str) -> tuple[str, str]:
    """rocm-smi -a's "sclk clock level: 2 (2100Mhz)" is the clock now: ("sclk clock", "2100Mhz"); other pairs as
    they are."""
    level, reading = _LEVEL.match(key), _LEVEL_VALUE.match(value)
    return (level.group(1), reading.group(1)) if level and reading else (key, value)


def _split(line: str, cuts: list[int]) -> list[str]:
    """The cells of a table row: the text from each cut to the next one."""
    ends = cuts[1:] + [max(len(line), cuts[-1] + 1)]
    return [line[a:b].strip() for a, b in zip(cuts, ends, strict=True)]


def _na(value: str) -> str:
    """rocm-smi's "N/A (Secondary die)" and other N/A notes are N/A."""
    return "N/A" if value.upper().startswith("N/A") else value


MAX_READINGS = 512  # keys one device may have in one poll (rocm-smi -a prints ~150): more is a damaged file


class _Polls:
    """Records per (poll, device), given out in device order when a poll ends (a poll's devices in increasing order:
    the table builder starts a tick where the device number stops increasing)."""

    def __init__(self, skips: schema.SkipCounter) -> None:
        self.poll: dict[int, dict[str, str]] = {}
        self.lines: dict[int, int] = {}
        self.skips = skips

    def put(self, gpu: int, key: str, value: str, no: int) -> None:
        """Keep a reading; words without a number (auto, UNTHROTTLED, ENABLED) are states, no reading."""
        value = _na(value)
        if value != "N/A" and not any(ch.isdigit() for ch in value):
            return
        rec = self.poll.setdefault(gpu, {"gpu": str(gpu)})
        if (pair := _USED_OF.match(value)) and headers.meaning(key).role == "mem_used_mib":
            # amd-smi monitor's VRAM_USAGE "3.0/191.7 GB": the used size and the total, in one unit
            value, rec[f"{key} total"] = f"{pair.group(1)} {pair.group(3)}", f"{pair.group(2)} {pair.group(3)}"
        self.lines.setdefault(gpu, no)
        if key not in rec and len(rec) > MAX_READINGS:
            self.skips.skip(no, f"more than {MAX_READINGS} readings for GPU {gpu} in one poll")
            return
        rec[key] = value

    def end(self):
        out = [(self.lines[g], self.poll[g]) for g in sorted(self.poll)]
        self.poll, self.lines = {}, {}
        return out


def _records(stream, skips: schema.SkipCounter):
    """(line number, record) per device and poll of any of the three layouts, mixed or repeated."""
    polls = _Polls(skips)
    table: list[tuple[int, str]] | None = None  # the current table's columns
    section: list[tuple[int, str]] = []  # amd-smi: (indent, section) above the current line
    section_gpu: int | None = None
    for no, raw in enumerate(stream, start=1):
        line = raw.decode("utf-8", "replace").rstrip("\r\n").replace("\t", "    ")
        if not line.strip():
            continue
        if table is not None:
            if _ROW.match(line):
                cells = _split(line, _cuts(table, line))
                if not cells[0].isdecimal():  # the device cell runs into the next column: cells out of place
                    skips.skip(no, f"a row not under the table's columns {line.strip()[:50]!r}")
                    continue
                for (_c, name), value in zip(table[1:], cells[1:], strict=True):
                    if headers.meaning(name).role != "host":  # rocm-smi's Node: a KFD node number
                        polls.put(int(cells[0]), name, value, no)
                continue
            if line.startswith((" ", "(")) and not line.lstrip().startswith("="):
                table = _subheading(table, line) if not polls.poll else table  # rocm-smi's second header line
                continue
            if line.lstrip().startswith("="):
                if polls.poll:
                    table = None
                    yield from polls.end()
                continue
            table = None
            yield from polls.end()
        if _BANNER.search(line):
            yield from polls.end()
            continue
        if (cells := _header(line)) is not None:
            yield from polls.end()
            table = cells
            continue
        if m := _KV_GPU.match(line):
            key, sep, value = m.group(2).rpartition(": ")
            if sep and key.strip():
                key, value = _current_level(key.strip(), value.strip())
                polls.put(int(m.group(1)), key, value, no)
            else:
                skips.skip(no, f"no reading in {line.strip()[:50]!r}")
            continue
        if m := _SECTION_GPU.match(line):
            section_gpu = int(m.group(1))
            if section_gpu in polls.poll:  # the device again: a new poll
                yield from polls.end()
            section = []
            continue
        if section_gpu is not None and (m := _INDENTED_KV.match(line)):
            indent, key, value = len(m.group(1)), m.group(2).strip(), (m.group(3) or "").strip()
            while section and section[-1][0] >= indent:
                section.pop()
            if not value:
                section.append((indent, key))
            elif not value.startswith("["):  # a list (VCN / JPEG activity per engine): no single reading
                polls.put(section_gpu, ".".join([s for _i, s in section] + [key]), value, no)
    yield from polls.end()


def _subheading(table: list[tuple[int, str]], line: str) -> list[tuple[int, str]]:
    """The table's headings with a second header line's words (rocm-smi's "(Junction)") added to the column each
    word starts under."""
    starts = [c for c, _h in table]
    extra = ["" for _ in table]
    for m in _CELL.finditer(line):
        col = max(bisect_right(starts, m.start()) - 1, 0)  # the last column starting at or before the word
        extra[col] = f"{extra[col]} {m.group().strip('()')}".strip()
    return [(c, f"{h} {x}".strip() if i else h) for i, ((c, h), x) in enumerate(zip(table, extra, strict=True))]


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read rocm-smi / amd-smi text (one or many polls) into a Bundle (telemetry)."""
    return documents.read_lines(path, _records, "device readings in this rocm-smi / amd-smi text", interval_s, tz)
