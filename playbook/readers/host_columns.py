"""What a host tool's column holds, from its name and unit (vmstat, iostat, mpstat, sar, sadf, dstat, sysstat's
JSON), which devices count towards the host's bytes, the dates sysstat prints and local times placed in UTC: shared
by readers/host_tools.py, readers/sysstat_json.py and readers/node_exporter.py."""

from __future__ import annotations

import re
from functools import lru_cache

import pandas as pd

MIB = 2.0**20
MAX_RATE_MIB_S = 2.0**20  # MiB/s per device (1 TiB/s, past any disk or NIC): a larger rate is a damaged value
_UNIT = {"kb": 1024 / MIB, "mb": 1.0, "gb": 1024.0, "sec": 512 / MIB, "blk": 512 / MIB, "b": 1 / MIB}
_DISK = re.compile(r"^(?:(?P<d1>[rw])(?P<u1>kb|mb|gb|sec|b)/s|(?P<u2>kb|mb|gb|blk)_(?P<d2>read|wrtn)/s)$")
_NET = re.compile(r"^(?P<d>rx|tx)(?P<u>kb|mb|gb)/s$")
PAGE_BYTES = 4096  # sar -W and /proc/vmstat count swap in pages: 4 KiB on x86-64 (an arm64 64 KiB kernel reads 16x low)
# sar -W's pages swapped in / out per second (sysstat's JSON names them without the "/s")
_SYSSTAT = {"%idle": ("idle", 1.0), "%iowait": ("iowait", 1.0), **{
    name: ("swap_mib_s", PAGE_BYTES / MIB) for name in ("pswpin/s", "pswpout/s", "pswpin", "pswpout")}}
SUMMED = frozenset({"swap_mib_s"})  # quantities whose columns add up (swapped in + swapped out)
# Two- to four-letter names mean these only under their tool's own header (an `id` column of a step table is no
# idle share): vmstat's `id` / `wa` (%) and `bi` / `bo` (KiB/s), dstat's `idl` / `wai` (%) and byte rates
TOOL_COLUMNS = {
    "vmstat": {"id": ("idle", 1.0), "wa": ("iowait", 1.0), "bi": ("read_mib_s", 1024 / MIB),
               "bo": ("write_mib_s", 1024 / MIB), "si": ("swap_mib_s", 1024 / MIB),  # KiB/s (-S changes neither)
               "so": ("swap_mib_s", 1024 / MIB)},
    "dstat": {"idl": ("idle", 1.0), "wai": ("iowait", 1.0), "read": ("read_mib_s", 1 / MIB),
              "writ": ("write_mib_s", 1 / MIB), "recv": ("net_rx_mib_s", 1 / MIB), "send": ("net_tx_mib_s", 1 / MIB)},
}
ENTITY = {"cpu": "cpu", "device": "disk", "device:": "disk", "dev": "disk", "iface": "net", "node": "node"}


def add_value(values: dict[str, float], quantity: str, number: float) -> None:
    """Put one column's value in a row's quantities: SUMMED ones add up, any other is set."""
    values[quantity] = values.get(quantity, 0.0) + number if quantity in SUMMED else number


def column_meaning(name: str, tool: str = "") -> tuple[str, float] | None:
    """(quantity, factor to the schema unit) of a tool's column name: idle / iowait shares in %, disk, network and
    swap rates in MiB/s; None for columns this reader does not use. `tool` ("vmstat", "dstat": a key of TOOL_COLUMNS)
    when the header is that tool's, for its short names."""
    n = name.strip().lower()
    if n in _SYSSTAT:
        return _SYSSTAT[n]
    if n in TOOL_COLUMNS.get(tool, {}):
        return TOOL_COLUMNS[tool][n]
    if m := _DISK.match(n):
        direction, unit = (m["d1"], m["u1"]) if m["d1"] else (m["d2"][0], m["u2"])
        return ("read_mib_s" if direction == "r" else "write_mib_s"), _UNIT[unit]
    if m := _NET.match(n):
        return ("net_rx_mib_s" if m["d"] == "rx" else "net_tx_mib_s"), _UNIT[m["u"]]
    return None


@lru_cache(maxsize=256)  # asked once per row with the banner's date: pandas' parse costs ~50 µs
def parse_date(text: str) -> pd.Timestamp | None:
    """sysstat's dates: ISO `2019-04-18`, or the C locale's `%x` (`04/18/19`, `04/18/2019`); dd.mm.yyyy too, and a
    European locale's dd/mm/yyyy when the first number cannot be a month (`19/08/2022`)."""
    for fmt in ("%Y-%m-%d", "%m/%d/%y", "%m/%d/%Y", "%d.%m.%Y", "%d.%m.%y", "%Y/%m/%d", "%d/%m/%Y", "%d/%m/%y"):
        try:
            return pd.Timestamp(pd.to_datetime(text, format=fmt))
        except (ValueError, OverflowError):
            continue
    return None


def utc_ns(t: pd.Timestamp, tz: str) -> int | None:
    """ns UTC of a time read from a tool: as it is when it carries its zone, else as local time in `tz`; None for
    NaT and for a local time `tz` skips or holds twice (a daylight-saving change), as the table readers do."""
    if pd.isna(t):
        return None
    if t.tzinfo is None:
        t = t.tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
        if pd.isna(t):
            return None
    return t.tz_convert("UTC").value


_PARTITION = re.compile(r"^(?P<disk>(?:nvme\d+n\d+|mmcblk\d+))p\d+$|^(?P<sd>[shv]d[a-z]+|xvd[a-z]+)\d+$")


def counted_devices(names: pd.Series, network: pd.Series) -> pd.Series:
    """The device rows whose bytes count towards the host's: not the loopback interface, not a partition of a
    listed disk, not a device-mapper / md device stacked on listed disks (their I/O is the disks' I/O)."""
    listed = set(names[~network])
    physical = {n for n in listed if n and not n.startswith(("dm-", "md"))}

    def counted(name: str, net: bool) -> bool:
        if net:
            return name != "lo"
        m = _PARTITION.match(name)
        if m and (m["disk"] or m["sd"]) in listed:
            return False
        return not (name.startswith(("dm-", "md")) and physical)

    return pd.Series([counted(n, bool(k)) for n, k in zip(names, network, strict=True)], index=names.index,
                     dtype=bool)
