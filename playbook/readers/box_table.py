"""Box-drawn device tables of accelerator tools, one snapshot or a `watch` loop: Intel Gaudi's `hl-smi`, Huawei
Ascend's `npu-smi info`, Google's `tpu-info`, Intel's `xpu-smi stats` (a vertical `key | value` box, see
_Vertical), and `nvitop -1`'s copy of the nvidia-smi table (a bar-graph cell right of each device line: _fits). A record per device, read by the meaning of its headings (playbook.readers.headers) like a document's.

    | AIP  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncor-Events|      hl-smi: a header of two
    | Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | AIP-Util  Compute M. |      lines, so two lines per
    |===============================+======================+======================|      device
    |   0  HL-225              N/A  | 0000:33:00.0     N/A |                  21  |
    | N/A   35C   P0  525W /  600W  | 94963MiB /  98304MiB |    88%           96% |

    ┃ Device ┃ HBM usage                ┃ Duty cycle ┃                                    tpu-info
    │ 8      │ 18.45 GiB / 31.25 GiB    │    100.00% │

Cells lie between the box's bars (| │ ┃); a cell may hold several headings apart by two or more spaces, and each
value goes to the heading its text overlaps most. The header is the block of lines just above a rule (=, ━, ─ or
-) that names a device column (AIP, NPU / Phy-ID, Device, GPU) and a reading; then every block of as many lines is
one device. A value "used / total" (memory) gives the heading's reading and its total; under a heading "a/b"
(Pwr:Usage/Cap) each side is its own heading (Pwr:Usage, Pwr:Cap). A table with a PID column (the process
tables) is none of a device's readings. Each header starts a new poll (a tick `interval_s` apart: these outputs
carry no clock).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from pathlib import Path

from playbook.model import schema
from playbook.readers import documents, headers

FORMAT = "hl-smi / npu-smi / tpu-info / xpu-smi stats tables (plain text)"

_BARS = "|│┃"
_RULE = re.compile(r"^[\s+|=_\-\u2500-\u257f]+$")  # a line of box drawing (U+2500..U+257F) and + | = - only
_HEADING = re.compile(r"\S+(?: \S+)*")  # headings: words apart by single spaces
_VALUE = re.compile(r"[^\s/]+(?: [^\s/]+)*(?:\s*/\s*[^\s/]+(?: [^\s/]+)*)?")  # a value, "used / total" as one


def _cells(line: str) -> list[tuple[int, str]] | None:
    """(offset, text) of the cells between a line's bars; None for a line that is no table row."""
    text = line.rstrip()
    if not text.lstrip() or text.lstrip()[0] not in _BARS or _RULE.match(text):
        return None
    out, start = [], None
    for i, ch in enumerate(text):
        if ch in _BARS:
            if start is not None:
                out.append((start, text[start:i]))
            start = i + 1
    return out or None


def _headings(cells: list[tuple[int, str]]) -> list[list[tuple[int, int, str]]]:
    """Per cell, its headings as (start, end, name), columns relative to the cell."""
    return [[(m.start(), m.end(), m.group()) for m in _HEADING.finditer(text)] for _o, text in cells]


def _kind(lines: list[list[tuple[int, str]]]) -> str:
    """What a block of lines above a rule is: "header" (a device heading and a reading among its headings),
    "process" (a PID column: a process table's header) or "data"."""
    names = [h for cells in lines for cell in _headings(cells) for _a, _b, h in cell]
    if any(set(headers.tokens(n)) & {"pid", "process"} for n in names):
        return "process"
    roles = {headers.meaning(n).role for n in names} | {headers.meaning(part).role for n in names for part in _parts(n)}
    return "header" if "gpu" in roles and roles & set(schema.TELEMETRY_METRICS) else "data"


def _parts(heading: str) -> list[str]:
    """'Pwr:Usage/Cap' -> ['Pwr:Usage', 'Pwr:Cap']: the headings of a value "a / b"; [] for a plain heading."""
    if "/" not in heading:
        return []
    head, _sep, tail = heading.rpartition(":")
    sides = tail.split("/") if _sep else heading.split("/")
    prefix = f"{head}:" if _sep else ""
    return [f"{prefix}{s.strip()}" for s in sides if s.strip()]


def _total(heading: str) -> str:
    """The name of a "used / total" value's total: 'HBM-Usage(MB)' -> 'HBM-Usage total (MB)'."""
    base, unit = headers.split_unit(heading)
    return f"{base} total" + (f" ({unit})" if unit else "")


def _read_line(header: list[tuple[int, str]], row: list[tuple[int, str]], rec: dict[str, str]) -> None:
    """Put one data line's values into `rec` under the headings of the header line above it."""
    for (_ro, rtext), heads in zip(row, _headings(header), strict=False):
        if not heads:
            continue
        starts, ends = [h[0] for h in heads], [h[1] for h in heads]
        for m in _VALUE.finditer(rtext):
            a, b = m.start(), m.end()
            name = _overlapping(heads, starts, ends, a, b)[2]
            value = m.group()
            if "/" in value and value.upper() != "N/A":
                used, _sep, total = value.partition("/")
                parts = _parts(name)
                if len(parts) == 2:
                    rec[parts[0]], rec[parts[1]] = used.strip(), total.strip()
                else:
                    rec[name], rec[_total(name)] = used.strip(), total.strip()
            else:
                rec[name] = value


def _overlapping(heads: list[tuple[int, int, str]], starts: list[int], ends: list[int], a: int, b: int
                 ) -> tuple[int, int, str]:
    """The heading the text at columns [a, b) overlaps most (ties: the one starting nearest a); with none
    overlapping, the nearest. Headings are disjoint and in order, so only those overlapping and the one on each
    side are candidates (bisect: linear in the line, however many headings it has)."""
    first = bisect_right(ends, a)  # the first heading ending past a
    stop = bisect_left(starts, b)  # the first heading starting at or past b
    candidates = heads[max(0, first - 1):stop + 1]
    return max(candidates, key=lambda h: (min(b, h[1]) - max(a, h[0]), -abs(a - h[0])))


def _records(stream, skips: schema.SkipCounter):
    """(line number, record) per device of every device table, in order."""
    block: list[tuple[int, list[tuple[int, str]]]] = []  # content lines since the last rule
    header: list[list[tuple[int, str]]] | None = None
    vertical = _Vertical(skips)
    for no, raw in enumerate(stream, start=1):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        cells = _cells(line)
        if cells is not None:
            block.append((no, cells))
            if header is not None and len(block) >= FLUSH_LINES:  # a long table: its whole devices so far
                cut = len(block) - len(block) % len(header)
                yield from _device_records(header, block[:cut], skips)
                block = block[cut:]
            elif header is None and len(block) > MAX_SECTION_LINES:
                skips.skip(block[0][0], f"{len(block)} box lines without a table header")
                block = []
            continue
        if _RULE.match(line) and line.strip():
            kind = _kind([c for _n, c in block]) if block else None
            if kind == "header":
                yield from vertical.flush()
                header = [c for _n, c in block]
            elif kind == "process":
                header = None  # the process table below the devices: none of theirs
            elif kind == "data" and header is not None:
                yield from _device_records(header, block, skips)
            elif kind == "data":
                yield from vertical.take(block)
            block = []  # (data without a header: a banner, hl-smi's versions, another table)
            continue
        if block and header is not None:  # the table ends without a closing rule
            yield from _device_records(header, block, skips)
        if line.strip():
            yield from vertical.flush()
        block, header = [], None if line.strip() else header
    if block and header is not None:
        yield from _device_records(header, block, skips)
    yield from vertical.flush()


MAX_READINGS = 512  # keys one xpu-smi device may hold (it prints ~40): more is a damaged file
MAX_SECTION_LINES = 256  # lines between two rules without a table header: no header block, no xpu-smi section
FLUSH_LINES = 4096  # a table's rows are given out in pieces of about this many lines (bounded memory)


_TILE = re.compile(r"Tile (\d{1,3}):\s*([^;]{0,80})")


class _Vertical:
    """xpu-smi stats: a box of `| key | value |` lines per device, opened by `| Device ID | N |` and split by rules
    into sections. A value "Tile 0: 143; Tile 1: 97" is one reading per tile: each tile is a device of its own,
    numbered device * tiles + tile (the order Intel's flat device hierarchy lists them in); a value for the whole
    device goes to each of its tiles; a value over several lines (the engines of an engine group) is none. A device
    keeps at most MAX_READINGS keys (xpu-smi prints ~40); more are counted, not kept."""

    def __init__(self, skips: schema.SkipCounter) -> None:
        self.device: int | None = None
        self.no = 0
        self.values: dict[str, str] = {}
        self.skips = skips

    def take(self, block: list[tuple[int, list[tuple[int, str]]]]):
        """Read one section; a `Device ID` section starts a new device (and gives out the previous one)."""
        if any(len(cells) != 2 for _no, cells in block):
            return
        key, value = block[0][1][0][1].strip(), block[0][1][1][1].strip()
        if len(block) == 1 and headers.meaning(key).role == "gpu" and value.isdecimal():
            yield from self.flush()
            self.device, self.no = int(value), block[0][0]
            return
        if self.device is None:
            return
        last = None
        for no, ((_o, k), (_p, v)) in block:
            if k.strip():
                last = k.strip()
                if last not in self.values and len(self.values) >= MAX_READINGS:
                    self.skips.skip(no, f"more than {MAX_READINGS} readings for device {self.device}")
                    last = None
                    continue
                self.values[last] = v.strip()
            elif last is not None and v.strip():
                self.values[last] = ""  # continued on more lines: no single reading

    def flush(self):
        if self.device is None:
            return
        tiles = {k: dict(_TILE.findall(v)) for k, v in self.values.items() if v.startswith("Tile")}
        numbers = sorted({int(t) for per in tiles.values() for t in per})
        whole = {k: v for k, v in self.values.items() if k not in tiles and ":" not in v}
        if not numbers:
            yield self.no, {"Device ID": str(self.device), **whole}
        for t in numbers:
            per_tile = {k: per.get(str(t), "").strip() for k, per in tiles.items()}
            yield self.no, {"Device ID": str(self.device * len(numbers) + t), **whole, **per_tile}
        self.device, self.values = None, {}


def _fits(cells: list[tuple[int, str]], heading: list[tuple[int, str]]) -> bool:
    """Whether a data line has its header line's cells: as many, or more whose first ones start where the header's
    do (nvitop draws a bar-graph cell right of the table: `│ MEM: ▏ 0.0% │`, no heading of its own)."""
    return len(cells) == len(heading) or (len(cells) > len(heading) and
                                          [o for o, _t in cells[:len(heading)]] == [o for o, _t in heading])


def _device_records(header, block, skips: schema.SkipCounter):
    """The records of the data lines in `block`: every len(header) lines are one device; a block whose lines do
    not have the header's cells is counted as a skip (another table's rows)."""
    n = len(header)
    for i in range(0, len(block), n):
        group = block[i:i + n]
        if len(group) < n or not all(_fits(cells, h) for (_no, cells), h in zip(group, header, strict=False)):
            skips.skip(group[0][0], "a line without the table's cells")
            continue
        rec: dict[str, str] = {}
        for (_no, cells), hline in zip(group, header, strict=True):
            _read_line(hline, cells, rec)
        yield group[0][0], rec


def sniff(head: str) -> bool:
    """A box-drawn header block naming a device column and a reading, above a rule and a data line; or an
    xpu-smi stats box: `| Device ID | N |`, a rule, then `| key | value |` lines with a reading among the keys. The
    box lines must be at least half of the text's non-blank lines."""
    lines = head.split("\n")[:400]
    text = [ln for ln in lines if ln.strip()]
    if 2 * sum(1 for ln in text if _cells(ln) is not None or _RULE.match(ln)) < len(text):
        return False  # mostly something else: a training log that printed hl-smi once is the line scanners'
    block: list[list[tuple[int, str]]] = []
    device = False  # a `| Device ID | N |` block just ended
    for i, line in enumerate(lines):
        cells = _cells(line)
        if cells is not None:
            block.append(cells)
            continue
        if _RULE.match(line) and line.strip() and block:
            if _kind(block) == "header":
                return any(_cells(x) for x in lines[i + 1:i + 3])
            if device and all(len(c) == 2 for c in block) and any(
                    headers.meaning(c[0][1].strip()).role in schema.TELEMETRY_METRICS for c in block):
                return True
            device = len(block) == 1 and len(block[0]) == 2 and headers.meaning(block[0][0][1].strip()).role == "gpu"
        block = []
    return False


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read hl-smi / npu-smi / tpu-info tables (one snapshot or a loop) into a Bundle (telemetry)."""
    return documents.read_lines(path, _records, "device rows in these hl-smi / npu-smi / tpu-info tables",
                                interval_s, tz)
