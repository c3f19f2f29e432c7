"""`nvidia-smi topo -m`: the connection matrix between a node's GPUs and NICs, and each GPU's CPU / NUMA affinity.

      GPU0  GPU1  NIC0  CPU Affinity  NUMA Affinity  GPU NUMA ID
    GPU0   X   SYS  PIX  0-15,64-79  0    N/A
    GPU1  SYS   X   SYS  16-31,80-95  1    N/A
    NIC0  PIX  SYS   X
    Legend:
      X    = Self
      SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
      ...
    NIC Legend:
      NIC0: mlx5_0

Read from its structure: a header row naming devices (GPU<n>, NIC<n>, or a NIC's own name such as mlx5_0, on older
drivers) and then the affinity columns; each device row its name and one path per device, each path one word of
the legend's grammar: X (self), SYS (across the SMP interconnect between NUMA nodes; SOC on old drivers), NODE
(between host bridges of one NUMA node), PHB (through a host bridge), PXB (several PCIe bridges), PIX (one bridge),
NV<n> (n bonded NVLinks). Cells are read by that grammar, not by column position, so a paste whose tabs were lost
or whose cells were glued ("NODENODE") still reads; a row whose path count differs from the header's device count
is skipped with a counted warning, as is any other line that is neither matrix, legend nor blank.

Output: no table rows; bundle.meta["environment:<file>"] = {"format", "host" (the file's name: the matrix names no
host), "gpus": {index: {"cpu_affinity", "numa", "nic_paths": {nic: path}}} (the rows read), "gpu_count" (the
header's GPU columns), "pairs": {"i-j": path} (each unordered GPU pair once, i < j), "nics": {column: device name}} (see playbook.analysis.topology).
"""

from __future__ import annotations

import re
from pathlib import Path

from playbook.model import schema
from playbook.readers import machine_facts, textio

FORMAT = "nvidia-smi topo -m"

PATH = r"X|SYS|SOC|NODE|PHB|PXB|PIX|NV\d{1,2}"
_CELL = re.compile(rf"({PATH})(?![a-z0-9])")
_BLANK = re.compile(r"[ \t]*")  # the space before a cell: matched at a position, so a row is read in one pass
_GPU = re.compile(r"^GPU(\d{1,3})$")
_DEVICE = re.compile(r"^(GPU\d{1,3}|NIC\d{1,3}|[a-z][a-z0-9]*_\d{1,3})$")  # GPU0, NIC0, mlx5_0, bnxt_re0
_TAIL = (("cpu_affinity", ("CPU", "Affinity")), ("numa", ("NUMA", "Affinity")), ("gpu_numa", ("GPU", "NUMA", "ID")),
         ("numa", ("NUMA",)))
_LEGEND = re.compile(rf"^\s*(?:(?:{PATH}|NV#)\s*=|Legend:|NIC Legend:|NIC\d+\s*:\s*\S+)")
_NIC_NAME = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_AFFINITY = re.compile(r"^(?:\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*|N/A)$")


def _header(line: str) -> tuple[list[str], list[str]] | None:
    """(device columns, tail columns) of a header row, or None: one device name or more starting with GPU0, then
    only the affinity phrases."""
    words = line.split()
    devices = []
    while words and _DEVICE.match(words[0]) and not (words[0] == "GPU" or words[:2] == ["GPU", "NUMA"]):
        devices.append(words.pop(0))
    if not devices or devices[0] != "GPU0":
        return None
    tail = []
    while words:
        for name, phrase in _TAIL:
            if tuple(words[:len(phrase)]) == phrase:
                tail.append(name)
                words = words[len(phrase):]
                break
        else:
            return None
    return devices, tail


def _cells(rest: str) -> tuple[list[str], str]:
    """The path cells at the start of `rest` (glued or spaced) and the text after them."""
    cells, pos = [], 0
    while (m := _CELL.match(rest, _BLANK.match(rest, pos).end())) is not None:
        cells.append(m.group(1))
        pos = m.end()
    return cells, rest[pos:]


def sniff(head: str) -> bool:
    """A header row naming GPU0 (and only devices and affinity columns), followed by a GPU0 row of paths."""
    lines = [ln for ln in head.split("\n")[:200] if ln.strip()]
    for i, ln in enumerate(lines[:-1]):
        hdr = _header(ln)
        if hdr is None:
            continue
        label, _, rest = _split_label(lines[i + 1])
        cells, _ = _cells(rest)
        return label == "GPU0" and len(cells) >= min(2, len(hdr[0]))
    return False


def parse(lines, path: str) -> tuple[dict, list[str]]:
    """(the environment section, warnings) of one matrix's text lines."""
    skips = schema.SkipCounter(path)
    devices: list[str] = []
    tail: list[str] = []
    gpus: dict[str, dict] = {}
    pairs: dict[str, str] = {}
    nics: dict[str, str] = {}
    rows = 0
    for no, line in enumerate(lines, start=1):
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        hdr = _header(text)
        if hdr is not None:
            if devices:
                skips.skip(no, "a second matrix header in one file (only the first matrix is read)")
                break
            devices, tail = hdr
            continue
        named = _NIC_NAME.match(text)
        if named:
            nics[named.group(1)] = named.group(2)
            continue
        if _LEGEND.match(text):
            continue
        label, _, rest = _split_label(text)
        if not devices or label not in devices:
            skips.skip(no, f"not a row of the matrix {text.strip()[:50]!r}")
            continue
        cells, after = _cells(rest)
        if len(cells) != len(devices):
            skips.skip(no, f"{label}: {len(cells)} paths for {len(devices)} devices")
            continue
        rows += 1
        g = _GPU.match(label)
        if g is None:
            continue  # a NIC's row repeats what the GPU rows say
        values = [v for v in after.split() if v]
        facts: dict = {"cpu_affinity": None, "numa": None, "nic_paths": {}}
        for name, value in zip(tail, values, strict=False):  # an empty cell (N/A gaps) ends the values early
            if value == "N/A":
                continue
            if name == "cpu_affinity" and not _AFFINITY.match(value):
                skips.skip(no, f"{label}: CPU affinity {value[:30]!r} is not a CPU list")
                continue
            if name in ("numa", "gpu_numa") and not value.isdigit():
                skips.skip(no, f"{label}: NUMA node {value[:30]!r} is not a number")
                continue
            facts[name] = value
        me = int(g.group(1))
        for dev, cell in zip(devices, cells, strict=True):
            other = _GPU.match(dev)
            if other is None:
                facts["nic_paths"][dev] = cell
            elif int(other.group(1)) != me:
                a, b = sorted((me, int(other.group(1))))
                pairs.setdefault(f"{a}-{b}", cell)
        gpus[str(me)] = facts
    warning = skips.warning(rows)
    section = {"format": FORMAT, "host": textio.host_from_path(path), "gpus": gpus, "pairs": pairs,
               "gpu_count": sum(1 for d in devices if _GPU.match(d)),
               "nics": {d: nics.get(d, d) for d in devices if not _GPU.match(d)}}
    return section, [warning] if warning else []


def _split_label(text: str) -> tuple[str, str, str]:
    """A row's first word (its device) and the rest."""
    stripped = text.strip()
    m = re.match(r"(\S+)", stripped)
    return (m.group(1), "", stripped[m.end():]) if m else ("", "", "")


def read(path: str | Path, **_opts) -> schema.Bundle:
    """Read one `nvidia-smi topo -m` paste into a Bundle whose meta holds its environment section."""
    return machine_facts.read(path, parse)
