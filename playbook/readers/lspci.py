"""`lspci -vv` (or `-vvv`, or only its grep'd `LnkCap:` / `LnkSta:` lines): each PCIe device's link, the one it can
train to (LnkCap) beside the one it trained to (LnkSta).

    41:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 80GB] (rev a1)
            NUMA node: 0
            ...
                    LnkCap: Port #0, Speed 16GT/s, Width x16, ASPM not supported
                    LnkSta: Speed 2.5GT/s (downgraded), Width x4 (downgraded)

Read from its structure: a device header (`[domain:]bus:dev.fn class: name`) opens a device; its `LnkCap:` line gives
the capable speed and width, its `LnkSta:` line the current ones with lspci's own verdict per field ("(ok)" /
"(downgraded)", printed since pciutils 3.6 by comparing with LnkCap); without those flags a field is downgraded
when it is below LnkCap's. The generation is the speed's: 2.5 / 5 / 8 / 16 / 32 / 64 GT/s = gen 1-6. `LnkCap2:`,
`LnkSta2:` and `LnkCtl:` say other things and are not read. A link line that does not parse is a counted warning.

GPUs are the display-class devices (VGA compatible / 3D / Display controller), numbered in bus order as nvidia-smi
numbers them (by PCI bus id); link lines before any header (a grep'd paste) belong to an unnamed device, kept as a
fact but tied to no GPU. Other devices (bridges, NICs) are counted only.

Output: no table rows; bundle.meta["environment:<file>"] = {"format", "host" (the file's name), "gpus": {index:
{link facts}}, "devices": [link facts of unnamed devices]}; link facts: bus_id, name, line, gen, width, max_gen,
max_width, speed_gt_s, max_speed_gt_s, downgraded (bool), why ("speed", "width"), numa (see
playbook.analysis.topology).
"""

from __future__ import annotations

import re
from pathlib import Path

from playbook.model import schema
from playbook.readers import machine_facts, textio

FORMAT = "lspci -vv"

GEN_OF_GT_S = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}  # PCIe base spec: transfer rate per generation
_HEADER = re.compile(r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+([^:]{3,60}?)(?: \[[0-9a-f]{4}\])?:"
                     r"\s*(.*)$")
_LINK = re.compile(r"^\s+Lnk(Cap|Sta):\s+(.*)$")
_SPEED = re.compile(r"Speed\s+([\d.]+|unknown)\s*GT/s(?:\s+\((ok|downgraded)\))?", re.I)
_SPEED_UNKNOWN = re.compile(r"Speed\s+unknown", re.I)
_WIDTH = re.compile(r"Width\s+x(\d{1,2})(?:\s+\((ok|downgraded)\))?")
_NUMA = re.compile(r"^\s+NUMA node:\s*(\d+)")
_GPU_CLASS = ("vga compatible controller", "3d controller", "display controller")


def sniff(head: str) -> bool:
    """An indented `LnkCap:` or `LnkSta:` line stating a speed in GT/s."""
    return any(_LINK.match(ln) and "GT/s" in ln for ln in head.split("\n")[:5000])


def _link(text: str) -> tuple[float | None, int | None, set[str]] | None:
    """(speed GT/s, width, fields lspci flags as downgraded) of a LnkCap / LnkSta value, or None when it states
    neither a speed nor a width."""
    speed, width = _SPEED.search(text), _WIDTH.search(text)
    if speed is None and width is None:
        return None
    gt = float(speed.group(1)) if speed and speed.group(1).lower() != "unknown" else None
    flags = {name for name, m in (("speed", speed), ("width", width)) if m and m.group(2) == "downgraded"}
    return gt, int(width.group(1)) if width else None, flags


def _facts(dev: dict) -> dict:
    """A device's link facts from its LnkCap / LnkSta readings."""
    cap_gt, cap_w, _ = dev.get("cap") or (None, None, set())
    sta_gt, sta_w, flags = dev.get("sta") or (None, None, set())
    why = set(flags)
    if dev.get("sta") and not dev.get("flagged"):  # an old lspci prints no verdict: compare with LnkCap
        if sta_gt is not None and cap_gt is not None and sta_gt < cap_gt:
            why.add("speed")
        if sta_w is not None and cap_w is not None and sta_w < cap_w:
            why.add("width")
    return {"bus_id": dev.get("bus_id"), "name": dev.get("name"), "line": dev.get("line"), "numa": dev.get("numa"),
            "speed_gt_s": sta_gt, "width": sta_w, "gen": GEN_OF_GT_S.get(sta_gt),
            "max_speed_gt_s": cap_gt, "max_width": cap_w, "max_gen": GEN_OF_GT_S.get(cap_gt),
            "downgraded": bool(why), "why": sorted(why)}


def parse(lines, path: str) -> tuple[dict, list[str]]:
    """(the environment section, warnings) of lspci's text lines."""
    skips = schema.SkipCounter(path)
    devices: list[dict] = []
    dev: dict | None = None
    read = 0
    for no, line in enumerate(lines, start=1):
        text = line.rstrip("\r\n")
        head = _HEADER.match(text)
        if head:
            dev = {"bus_id": head.group(1).lower(), "cls": head.group(2).strip().lower(), "name": head.group(3)[:120],
                   "line": no}
            devices.append(dev)
            continue
        numa = _NUMA.match(text)
        if numa and dev is not None:
            dev["numa"] = numa.group(1)
            continue
        m = _LINK.match(text)
        if m is None:
            continue
        value = _link(m.group(2))
        if value is None:
            skips.skip(no, f"Lnk{m.group(1)} states no speed or width {m.group(2).strip()[:40]!r}")
            continue
        if dev is None:  # link lines pasted without their device header
            dev = {"bus_id": None, "cls": "", "name": None, "line": no}
            devices.append(dev)
        key = "cap" if m.group(1) == "Cap" else "sta"
        if key in dev:
            skips.skip(no, f"a second Lnk{m.group(1)} line for one device (the first is kept)")
            continue
        dev[key] = value
        if key == "sta":
            dev["flagged"] = "(ok)" in m.group(2) or "(downgraded)" in m.group(2)
        read += 1
    linked = [d for d in devices if "cap" in d or "sta" in d]
    gpu_devs = sorted((d for d in devices if d["cls"].startswith(_GPU_CLASS)), key=lambda d: d["bus_id"])
    gpus = {str(i): _facts(d) for i, d in enumerate(gpu_devs) if "cap" in d or "sta" in d}
    unnamed = [_facts(d) for d in linked if d["bus_id"] is None]
    warning = skips.warning(read)
    section = {"format": FORMAT, "host": textio.host_from_path(path), "gpus": gpus, "devices": unnamed,
               "other_devices": len(linked) - len(gpus) - len(unnamed)}
    return section, [warning] if warning else []


def read(path: str | Path, **_opts) -> schema.Bundle:
    """Read one `lspci -vv` paste into a Bundle whose meta holds its environment section."""
    return machine_facts.read(path, parse)
