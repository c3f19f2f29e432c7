"""nvtop's screen as text (a copy of the terminal, or `script`'s log of it), one snapshot or several:

    Device 0 [NVIDIA GeForce RTX 3090] PCIe GEN 4@16x RX: 1.250 MiB/s TX: 37.50 KiB/s
    GPU 1695MHz MEM 9751MHz TEMP  45°C FAN  30% POW 110 / 350 W
    GPU[||||||               30%] MEM[||||      4.120Gi/24.000Gi]

The words are nvtop's own (Syllo/nvtop src/interface.c draw_devices: "Device %-2u" then "[%s]"; "PCIe GEN
%u@%2ux" or "GEN N/A"; " RX: " / " TX: " rates in KiB/s scaled by 1024 (print_pcie_at_scale); "GPU %uMHz", "MEM
%uMHz", "TEMP %3u°C" (°F when configured), "FAN %3u%%", "POW %3u / %3u W" (draw / limit) or "POW %3u W"; the
meters "GPU[… N%]" (with "(eff N%)" on some GPUs) and "MEM[… used/total]" with B, Ki, Mi, Gi, Ti prefixes; nvtop 1.x printed B, k, M, G, T scaled by 1000). A
wide terminal puts several devices side by side: the k-th "GPU …MHz" of a line belongs to the k-th device of the
device line above it (a field nvtop has no value for, "GPU N/A MHz", "TEMP N/A°C", "POW N/A W", keeps its
device's place). A device number seen again starts the next snapshot; the screen carries no time, so
snapshots are placed `interval_s` apart (synthetic, warned). The PCIe generation and width are the link's current
ones (nvtop shows no maximum: an idle GPU may train its link down to save power — readers do not judge that,
analysis/links.py does). Markdown a paste added around words (`**`, `_**…**_`) is dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

from playbook.model import schema
from playbook.readers import documents
from playbook.readers.collected import strip_text_escapes

FORMAT = "nvtop (screen text)"

_MARKDOWN = re.compile(r"\*\*|(?<![\w])_(?=\S)|(?<=\S)_(?![\w])")
_DEVICE = re.compile(r"Device\s{1,3}(\d{1,3})\s{0,3}\[([^\]]{1,80})\]")
_PCIE = re.compile(r"PCIe GEN\s{1,3}(\d{1,2})@\s{0,2}(\d{1,2})x")
_RATE = re.compile(r"\b([RT]X): (\d{1,9}(?:\.\d{1,3})?) (Ki|Mi|Gi|Ti|k|M|G|T)B/s")
# each field also in the form nvtop prints when it has no value ("GPU N/A MHz", "TEMP N/A°C", "POW N/A W", "POW N/A /
# %3u W", "MEM[ N/A]"): a placeholder that keeps its device's place among devices side by side (its value group None)
_CLOCK = re.compile(r"\b(GPU|MEM) (?:(\d{1,6})MHz|N/A ?MHz)\b")
_TEMP = re.compile(r"\bTEMP\s{1,4}(?:(\d{1,4})|N/A)\s?°?\s?([CF])\b")
_POWER = re.compile(r"\bPOW\s{1,4}(?:(\d{1,5})|N/A)(?:\s/\s{1,4}(\d{1,5}))? W\b")
_GPU_METER = re.compile(r"\bGPU\[[| ]{0,400}?(?:(\d{1,3})%(?:\(eff \d{1,3}%\))?|N/A)\]")
_MEM_METER = re.compile(r"\bMEM\[[| ]{0,400}?(?:(\d{1,6}(?:\.\d{1,3})?)( B|Ki|Mi|Gi|Ti|B|k|M|G|T)/"
                        r"(\d{1,6}(?:\.\d{1,3})?)( B|Ki|Mi|Gi|Ti|B|k|M|G|T)|N/A)\]")
# nvtop 1.x printed decimal prefixes (memory_prefix {"B", "k", "M", "G", "T"}, scaled by 1000): its rates from the
# same kB/s count, its meter from bytes
_KIB = {"Ki": 1.0, "Mi": 1024.0, "Gi": 1024.0**2, "Ti": 1024.0**3, "k": 1.0, "M": 1e3, "G": 1e6, "T": 1e9}
_MIB = {" B": 1 / 1024.0**2, "Ki": 1 / 1024.0, "Mi": 1.0, "Gi": 1024.0, "Ti": 1024.0**2,
        "B": 1 / 2.0**20, "k": 1e3 / 2.0**20, "M": 1e6 / 2.0**20, "G": 1e9 / 2.0**20, "T": 1e12 / 2.0**20}


def sniff(head: str) -> bool:
    """An nvtop device line (`Device 0 [name]` with its `PCIe GEN g@wx` or `GEN N/A`) within the first lines."""
    for line in head.split("\n")[:80]:
        line = _clean(line)
        if _DEVICE.search(line) and ("PCIe GEN" in line or "Integrated GPU" in line):
            return True
    return False


def _clean(line: str) -> str:
    return _MARKDOWN.sub("", strip_text_escapes(line)).rstrip()


def _spread(matches: list[re.Match], group: list[dict], put) -> None:
    """The k-th match of a line to the k-th device of the group (devices side by side)."""
    for record, m in zip(group, matches, strict=False):
        put(record, m)


def _records(stream, skips: schema.SkipCounter):
    snapshot: list[tuple[int, dict]] = []
    group: list[dict] = []
    seen: set[str] = set()
    for no, raw in enumerate(stream, start=1):
        line = _clean(raw.decode("utf-8", "replace"))
        if not line.strip():
            continue
        devices = list(_DEVICE.finditer(line))
        if devices:
            if seen & {d.group(1) for d in devices}:  # a device again: the next snapshot
                yield from snapshot
                snapshot, seen = [], set()
            group = [{"index": d.group(1), "name": d.group(2).strip()} for d in devices]
            seen |= {d.group(1) for d in devices}
            snapshot += [(no, r) for r in group]
            pieces = [line[d.start():(devices[i + 1].start() if i + 1 < len(devices) else len(line))]
                      for i, d in enumerate(devices)]
            for record, piece in zip(group, pieces, strict=True):  # each device's own PCIe and rates
                if m := _PCIE.search(piece):
                    record["pcie.link.gen.current"], record["pcie.link.width.current"] = m.group(1), m.group(2)
                for m in _RATE.finditer(piece):
                    record[f"pcie_{m.group(1).lower()}_kib_s"] = str(float(m.group(2)) * _KIB[m.group(3)])
            continue
        if not group:
            skips.skip(no, f"not an nvtop device line {line.strip()[:50]!r}")
            continue
        found = False
        for pattern, put in (
                (_CLOCK, lambda r, m: m.group(2) and r.__setitem__(
                    "clocks.current.graphics" if m.group(1) == "GPU" else "clocks.mem", m.group(2))),
                (_TEMP, lambda r, m: m.group(1) and r.__setitem__("temperature.gpu", str(
                    int(m.group(1)) if m.group(2) == "C" else round((int(m.group(1)) - 32) / 1.8)))),
                (_POWER, lambda r, m: r.update(({"power.draw": m.group(1)} if m.group(1) else {}) | (
                    {"enforced.power.limit": m.group(2)} if m.group(2) else {}))),
                (_GPU_METER, lambda r, m: m.group(1) and r.__setitem__("utilization.gpu", m.group(1))),
                (_MEM_METER, lambda r, m: m.group(1) and r.update({
                    "memory.used": str(float(m.group(1)) * _MIB[m.group(2)]),
                    "memory.total": str(float(m.group(3)) * _MIB[m.group(4)])}))):
            matches = list(pattern.finditer(line))
            if pattern is _CLOCK:  # "GPU nMHz" and "MEM nMHz" per device: spread each kind on its own
                for kind in ("GPU", "MEM"):
                    _spread([m for m in matches if m.group(1) == kind], group, put)
            else:
                _spread(matches, group, put)
            found = found or bool(matches)
        if not found:
            skips.skip(no, f"not an nvtop line {line.strip()[:50]!r}")
    yield from snapshot


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read nvtop's screen text (one snapshot or several) into a Bundle (telemetry)."""
    return documents.read_lines(path, _records, "nvtop device lines", interval_s, tz)
