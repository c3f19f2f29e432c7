"""`nvidia-smi -q` as plain text (`nvidia-smi -q -d UTILIZATION,POWER -l 1 > log`): an indented document of
`Key : Value` lines, read by the meaning of each key's path the way the XML form (`-q -x`) is read.

    ==============NVSMI LOG==============
    Timestamp                                 : Mon Dec  1 19:00:00 2025
    Driver Version                            : 535.104.05
    GPU 00000000:07:00.0
        Utilization
            Gpu                               : 96 %
        GPU Power Readings
            Power Draw                        : 388.00 W

Indentation (4 spaces a level) nests sections; a key's path is its sections and itself ("Utilization.Gpu" ->
util_pct, "GPU Power Readings.Power Draw" -> power_w, "FB Memory Usage.Used" -> MiB used; see
playbook.readers.headers). Each `GPU <bus id>` section is one record carrying its log's top-level fields (the
Timestamp); each NVSMI LOG banner (one per `-l` poll) starts a new log. Values keep their units ("96 %", "70959
MiB"). The GPU is the section's Minor Number when printed, else the bus ids numbered in order of appearance.

An excerpt of it, as a shell loop greps it (`while true; do date; nvidia-smi -q -d CLOCK,TEMPERATURE | grep -E
'Graphics|GPU Current Temp'; sleep 1; done`): the leaf lines without their banner, GPU heading or sections, a `date`
line (`Mon Nov 12 22:50:20 EST 2018`, or the day-first `Thu 05 Dec 2024 01:00:08 PM UTC` of newer en_US / en_GB
locales) before each poll. Each date line starts a poll (its time; the lines before the first dated poll have none
and are skipped, counted); without date lines a key seen again starts the next
poll. A leaf under a section heading the grep kept (`grep -A4 Clocks`, its `--` group separators ignored) is read
by its path as in the whole document; a bare leaf's section is read from its value and nvidia-smi's print order: a
clock (`Graphics`, `SM`, `Memory`, `Video` in MHz) is the current one (`Clocks`) the first time in a poll — the
application, default and maximum clocks print after it and are skipped — and a percentage of `Gpu`, `Memory`,
`Encoder`, `Decoder` is Utilization.
"""

from __future__ import annotations

import re
from pathlib import Path

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import documents, machine_facts, textio

FORMAT = "nvidia-smi -q (plain text)"

_BANNER = re.compile(r"^=+\s*NVSMI LOG\s*=+\s*$")
_GPU = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_KV = re.compile(r"^( *)(\S[^:]{0,80}?)\s+:\s?(.*)$")  # bounded key, one separator: linear
INDENT = 4
# `date` in the C locale (coreutils' default format "%a %b %e %H:%M:%S %Z %Y"): the zone abbreviation is dropped (an
# abbreviation names no offset: EST, CST and IST each mean more than one); the reader's tz option places the times
_DATE = re.compile(r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) +(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} +"
                   r"(\d{1,2}:\d{2}:\d{2})(?: +[A-Z][A-Za-z]{1,5}(?:[+-]\d{1,4})?)? +(\d{4})$")
# the same in the day-first locales: glibc 2.29+'s en_US "%a %d %b %Y %r %Z" (12-hour, AM/PM) and en_GB's "%a %d %b %Y
# %T %Z"; read back to the C locale's order, 24-hour
_DATE_DAY_FIRST = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) +(\d{1,2}) +(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|"
                             r"Dec) +(\d{4}) +(\d{1,2}):(\d{2}:\d{2})(?: +([AP]M))?(?: +[A-Z][A-Za-z]{1,5}"
                             r"(?:[+-]\d{1,4})?)?$")


def _poll_time(text: str) -> str | None:
    """A `date` line's time as "Tue Mar 5 09:10:00 2024" (the zone dropped), None for any other line."""
    text = text.strip()
    if m := _DATE.match(text):
        return " ".join(text.split()[:3] + [m.group(1), m.group(2)])
    if m := _DATE_DAY_FIRST.match(text):
        hour = int(m.group(5))
        if m.group(7):  # 12 AM is midnight, 12 PM noon
            hour = hour % 12 + (12 if m.group(7) == "PM" else 0)
        return f"{m.group(1)} {m.group(3)} {int(m.group(2))} {hour:02d}:{m.group(6)} {m.group(4)}"
    return None
# leaf keys of `nvidia-smi -q` whose values carry their unit (nvidia-smi(1), the -q sections Clocks, Temperature,
# GPU Power Readings, Utilization, Fan Speed): the lines an excerpt keeps
_LEAF = re.compile(r"^ +(?:Graphics|SM|Memory|Video|GPU Current Temp|Memory Current Temp|Power Draw|"
                   r"(?:Average|Instantaneous) Power Draw|Gpu|Encoder|Decoder|Fan Speed|Performance State)\s+:\s?"
                   r"(?:\d[\d.]{0,9} ?(?:MHz|C|W|%)|P\d{1,2})\s*$")
# the sections those leaves print under, when the grep keeps them (`grep -A4 Clocks`): a leaf under one is read by its
# path like the whole document's; grep's "--" between its match groups is no line of nvidia-smi's
_HEADING = re.compile(r"^ +(?:Clocks|Applications Clocks|Default Applications Clocks|Max Clocks|"
                      r"Max Customer Boost Clocks|Temperature|GPU Power Readings|Power Readings|Utilization)\s*$")
_CLOCK_KEYS = ("Graphics", "SM", "Memory", "Video")
_UTIL_KEYS = ("Gpu", "Memory", "Encoder", "Decoder")


def _headless(key: str, value: str, seen: dict[str, str]) -> str | None:
    """The path of a leaf printed without its section (an excerpt), by its unit and nvidia-smi's print order; None
    for a later clock section's line (the current clocks print first)."""
    unit = value.split()[-1] if value.split() else ""
    if key in _CLOCK_KEYS and unit == "MHz":
        return None if f"Clocks.{key}" in seen else f"Clocks.{key}"
    if key in _UTIL_KEYS and unit == "%":
        return f"Utilization.{key}"
    return key


# The sections that state a GPU's memory faults (nvidia-smi(1); NVIDIA's "GPU Memory Error Management" guide: a
# pending row remap needs a GPU reset, a failed one a replacement; an uncorrectable error was a fault either way)
_FAULT_SECTIONS = ("Remapped Rows", "Retired Pages", "ECC Errors")


def sniff(head: str) -> bool:
    """The NVSMI LOG banner, a `GPU <bus id>` section followed by indented `Key : Value` lines, a pasted fault
    section of one (`Remapped Rows`, `Retired Pages`, `ECC Errors` over indented `Key : Value` lines), or an
    excerpt's leaf lines (at least 4, of 2 keys or more, every other non-blank line a `date` line)."""
    lines = head.split("\n")[:400]
    if any(_BANNER.match(ln.strip()) for ln in lines[:50]):
        return True
    body = [ln.rstrip() for ln in lines if ln.strip()][:200]
    leaves = [ln for ln in body if _LEAF.match(ln)]
    if len(leaves) >= 4 and len({ln.split(":")[0].strip() for ln in leaves}) >= 2 and \
            all(_LEAF.match(ln) or _poll_time(ln) or _HEADING.match(ln) or ln.strip() == "--"
                for ln in body[:-1]):  # the last line may be cut
        return True
    for i, ln in enumerate(lines[:-1]):
        if ln.strip() in _FAULT_SECTIONS and _KV.match(lines[i + 1]) and \
                len(lines[i + 1]) - len(lines[i + 1].lstrip(" ")) > len(ln) - len(ln.lstrip(" ")):
            return True
    for i, ln in enumerate(lines[:-1]):
        if _GPU.match(ln.rstrip()):
            following = [x for x in lines[i + 1:i + 8] if x.strip()]
            return bool(following) and all(x.startswith(" ") for x in following)
    return False


def _records(stream, skips: schema.SkipCounter):
    """(line number, record) per GPU section: its key paths -> value texts, plus its log's top-level fields."""
    top: dict[str, str] = {}
    record: dict[str, str] | None = None
    start = 0
    stack: list[tuple[int, str]] = []  # (indent, section name) above the current line
    excerpt = True  # no banner or GPU heading (yet)
    poll: str | None = None  # an excerpt's current `date` (its poll's time)
    gpu_no = 0  # the excerpt's GPU within its poll, in order of appearance
    undated: list[tuple[int, str, str]] = []  # an excerpt's leaf lines before any `date`: dropped at the first one
    section: tuple[int, str] | None = None  # the heading an excerpt's grep kept above its leaves (indent, name)
    for no, raw in enumerate(stream, start=1):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line.strip():
            continue
        if _BANNER.match(line.strip()):
            if record is not None:
                yield start, record
            top, record, stack, excerpt = {}, None, [], False
            continue
        gpu = _GPU.match(line.rstrip())
        if gpu:
            if record is not None:
                yield start, record
            record, start, stack, excerpt = {**top, "bus_id": gpu.group(1)}, no, [], False
            continue
        date = _poll_time(line) if excerpt else None
        if date:  # an excerpt's poll: `date` before the nvidia-smi call
            if record is not None:
                yield start, record
            for first, _, _ in undated:
                skips.skip(first, "a line before the first `date` line (no time)")
            undated = []
            poll, gpu_no, record, stack = date, 0, None, []
            section = None
            continue
        indent = len(line) - len(line.lstrip(" "))
        kv = _KV.match(line)
        if excerpt and not stack and (line.strip() == "--" or (kv is None and _HEADING.match(line))):
            section = None if line.strip() == "--" else (indent, line.strip())
            continue
        if excerpt and kv is not None and indent > 0 and not stack:
            name = kv.group(2).strip()
            if section is not None and indent > section[0]:
                name = f"{section[1]}.{name}"  # under a heading the grep kept: its path, as in the document
            else:
                section = None
        if excerpt and kv is not None and indent > 0 and not stack and poll is None:
            undated.append((no, name, kv.group(3).strip()))
            continue
        if excerpt and kv is not None and indent > 0 and not stack:
            key = _headless(name, kv.group(3).strip(), record or {})
            if record is not None and key is not None and key in record:  # a GPU's key again: the poll's next GPU
                yield start, record
                record, gpu_no = None, gpu_no + 1
            if record is None:
                record, start = ({"Timestamp": poll} if poll else {}) | {"index": str(gpu_no)}, no
            if key is None:
                skips.skip(no, f"a later clock section's {kv.group(2).strip()!r} (the current clocks print first)")
            else:
                record[key] = kv.group(3).strip()
            continue
        if kv is None and record is not None and (indent == 0 or indent % INDENT):
            # no heading of a GPU's section sits at the margin or off the 4-space grid: another program's line
            # printed into the output (a warning on stderr) is skipped, the section goes on
            skips.skip(no, f"a line that is not nvidia-smi's inside a GPU section {line.strip()[:50]!r}")
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if kv is None:  # a section heading
            stack.append((indent, line.strip()))
            continue
        key = ".".join([s for _, s in stack] + [kv.group(2).strip()])
        value = kv.group(3).strip()
        if record is None and indent > 0 and stack and stack[0][1] in _FAULT_SECTIONS:
            record, start = {**top, "bus_id": ""}, no  # a fault section pasted without its GPU's heading
        if record is None:
            if indent == 0:
                top[key] = value
        elif indent > 0:
            record[key] = value
        else:
            skips.skip(no, f"top-level line inside a GPU section {line[:50]!r}")
    if record is not None:
        yield start, record
    yield from _undated_polls(undated, skips)


def _undated_polls(leaves: list[tuple[int, str, str]], skips: schema.SkipCounter):
    """An excerpt without `date` lines, one untimed record per poll: the polls are the shortest period its keys
    repeat with (a loop prints the same lines each poll; the last poll may be cut), one GPU each."""
    keys = [k for _, k, _ in leaves]
    period = next((p for p in range(1, len(keys) // 2 + 1)
                   if all(keys[i] == keys[i + p] for i in range(len(keys) - p))), len(keys))
    for first in range(0, len(leaves), period or 1):
        record: dict[str, str] = {"index": "0"}
        for no, key, value in leaves[first:first + period]:
            path = _headless(key, value, record)
            if path is None:
                skips.skip(no, f"a later clock section's {key!r} (the current clocks print first)")
            else:
                record[path] = value
        yield leaves[first][0], record


_MAX = {"max_gen": "PCI.GPU Link Info.PCIe Generation.Max", "max_width": "PCI.GPU Link Info.Link Width.Max"}


def _link_maxima(records, maxima: dict[str, dict]):
    """The records, passed on, noting each GPU's `GPU Link Info` maxima (what its link can train to; the current
    generation and width are telemetry columns) by its Minor Number, else its bus id's order of appearance."""
    order: dict[str, int] = {}
    for no, record in records:
        bus = record.get("bus_id", "")
        order.setdefault(bus, len(order))
        minor = record.get("Minor Number", "")
        gpu = str(int(minor)) if minor.isdigit() else str(order[bus])
        for key, name in _MAX.items():
            value = re.match(r"\s*(\d{1,2})\s*x?\s*$", record.get(name, ""))
            if value:
                maxima.setdefault(gpu, {})[key] = int(value.group(1))
        yield no, record


def _count(value: str) -> int:
    m = re.match(r"\s*(\d{1,12})\b", value)
    return int(m.group(1)) if m else 0


def memory_faults(record: dict[str, str]) -> list[str]:
    """What a GPU section states about failing memory (`ecc` events): a row remap pending or failed, pages pending
    retirement, uncorrectable (double-bit) errors since the driver loaded (the Volatile counters; Aggregate ones
    may be years old and are not read)."""
    said = []
    for key, value in record.items():
        path = key.split(".")
        if "Remapped Rows" in path:
            if path[-1] == "Pending" and value.strip().lower() == "yes":
                said.append("a row remap is pending (reset the GPU)")
            elif path[-1] == "Remapping Failure Occurred" and value.strip().lower() == "yes":
                said.append("row remapping failed (the GPU needs replacing)")
            elif path[-1] == "Uncorrectable Error" and _count(value):
                said.append(f"{_count(value)} rows remapped for uncorrectable errors")
        elif "Retired Pages" in path and path[-1].startswith("Pending") and value.strip().lower() == "yes":
            said.append("pages are pending retirement")
        elif "ECC Errors" in path and "Volatile" in path and _count(value) and (
                "Uncorrectable" in path[-1] or "Double Bit" in path):
            said.append(f"{_count(value)} uncorrectable ECC errors ({' '.join(path[path.index('Volatile') + 1:])})")
    return said


def _faults(records, found: list[dict]):
    """The records, passed on, noting each one's memory faults (memory_faults) with its GPU."""
    for no, record in records:
        said = memory_faults(record)
        if said:
            found.append({"gpu": record.get("Minor Number") or record.get("bus_id") or "", "said": said})
        yield no, record


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read `nvidia-smi -q` text (one or many polls) into a Bundle (telemetry; memory faults as `ecc` events); each
    GPU's link maxima go to bundle.meta["environment:<file>"] (playbook.analysis.topology.stated_maxima)."""
    maxima: dict[str, dict] = {}
    faults: list[dict] = []
    try:
        bundle = documents.read_lines(
            path, lambda stream, skips: _link_maxima(_faults(_records(stream, skips), faults), maxima),
            "GPU sections in this nvidia-smi -q text", interval_s, tz)
    except InputError:
        if not faults:  # a fault section alone has no metric to read: its events are the content
            raise
        bundle = schema.Bundle(inputs=[str(path)])
    if faults:
        bundle.events = schema.events_frame({
            "host": [textio.host_from_path(path)] * len(faults), "kind": ["ecc"] * len(faults),
            "detail": [f"GPU {f['gpu'] or '(unnamed)'}: nvidia-smi -q: {'; '.join(f['said'])}" for f in faults],
            "source": [str(path)] * len(faults)})
    if maxima:
        bundle.meta[machine_facts.META_PREFIX + str(path)] = {"format": FORMAT, "host": textio.host_from_path(path),
                                                   "gpus": maxima}
    return bundle
