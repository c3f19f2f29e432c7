"""Interconnect counters: InfiniBand / RoCE ports from sysfs as rates (ib.parquet), and link health.

InfiniBand (`IbProbe`): every port under /sys/class/infiniband/<device>/ports/<port>/ is read at `hz` (default
1 Hz): counters/port_xmit_data and port_rcv_data (in 4-byte words, as the IB spec defines them) become tx/rx
MiB/s; counters/port_xmit_wait (ticks a port had data but no credit to send: congestion) becomes a rate; error
counters (symbol_error, link_downed, link_error_recovery, port_rcv_errors, port_xmit_discards,
port_rcv_remote_physical_errors, local_link_integrity_errors, excessive_buffer_overrun_errors) are kept
cumulative and summed into errors_per_s; `rate` ("400 Gb/sec (4X NDR)") gives the current speed and width,
`state` / `phys_state` whether the link is up. The sysfs root is injectable (tests use tests/data/sysfs/).

The IB table (schema.IB_COLUMNS, one row per (time, host, device, port)):
    time (UTC), host, device (e.g. mlx5_0), port (int), link_layer (InfiniBand / Ethernet), state (ACTIVE...),
    phys_state (LinkUp...), rate_gbps (current signalling rate, Gb/s), width ("4X"), tx_mib_s, rx_mib_s,
    util_pct (max(tx, rx) / capacity, capacity = rate_gbps / 8 in MiB/s), xmit_wait_per_s, errors_per_s,
    symbol_error, link_downed, link_error_recovery, port_rcv_errors, port_xmit_discards (cumulative counts),
    source.

GPU links (PCIe and NVLink) come from the NVML sampler into the telemetry table: pcie_tx/rx_mib_s,
pcie_link_gen/width (current: read under load), pcie_replay_count (cumulative), nvlink_tx/rx_mib_s; the
sampler's stats hold each GPU's maximum PCIe generation and width.

playbook.analysis.links.link_status turns both into one verdict per link (saturated / degraded / ok).
"""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path
from typing import Any

import pandas as pd

from playbook.model.schema import IB_COLUMNS, IB_ERROR_COLUMNS
from playbook.probes._poll import Poller

MIB = 1024.0 * 1024.0
ERROR_COUNTERS = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_xmit_discards",
                  "port_rcv_remote_physical_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors")
_RATE = re.compile(r"([\d.]+)\s*Gb/sec(?:\s*\((\d+X)?\s*([A-Za-z0-9]+)?\))?")


def parse_rate(text: str) -> tuple[float, str]:
    """'400 Gb/sec (4X NDR)' -> (400.0, '4X'); unparseable -> (NaN, '')."""
    m = _RATE.search(text or "")
    if not m:
        return math.nan, ""
    return float(m.group(1)), m.group(2) or ""


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _state(text: str | None) -> str:
    """'4: ACTIVE' -> 'ACTIVE'."""
    return (text or "").split(":", 1)[-1].strip()


def find_ports(root: str | os.PathLike = "/sys") -> list[tuple[str, int, Path]]:
    """(device, port, path) of every InfiniBand/RoCE port under root/class/infiniband."""
    base = Path(root) / "class" / "infiniband"
    out = []
    if not base.is_dir():
        return out
    for dev in sorted(base.iterdir()):
        ports = dev / "ports"
        if not ports.is_dir():
            continue
        for p in sorted(ports.iterdir(), key=lambda x: int(x.name) if x.name.isdigit() else 0):
            if p.name.isdigit():
                out.append((dev.name, int(p.name), p))
    return out


class IbProbe(Poller):
    """Reads InfiniBand port counters at `hz` (default 1 Hz); `start()` is False when there is no port."""

    name = "InfiniBand probe"

    def __init__(self, host: str, hz: float = 1.0, root: str | os.PathLike = "/sys", source: str = "probe:ib",
                 **kwargs: Any):
        super().__init__(hz, **kwargs)
        self.host, self.root, self.source = host, Path(root), source
        self.ports: list[tuple[str, int, Path]] = []
        self._last: dict[tuple[str, int], tuple[float, dict[str, int | None]]] = {}

    def _setup(self) -> bool:
        self.ports = find_ports(self.root)
        return bool(self.ports)

    def _sample(self) -> None:
        for dev, port, path in self.ports:
            self._emit(self._read_port(dev, port, path))

    def _read_port(self, dev: str, port: int, path: Path) -> tuple:
        wall, now = time.time_ns(), time.monotonic()
        c = path / "counters"
        counts = {name: _int(c / name) for name in ("port_xmit_data", "port_rcv_data", "port_xmit_wait",
                                                     *ERROR_COUNTERS)}
        rate, width = parse_rate(_read(path / "rate") or "")
        prev = self._last.get((dev, port))
        self._last[(dev, port)] = (now, counts)

        def per_s(name: str, scale: float = 1.0) -> float:
            if prev is None or counts[name] is None or prev[1][name] is None or now <= prev[0]:
                return math.nan
            d = counts[name] - prev[1][name]
            return d * scale / (now - prev[0]) if d >= 0 else math.nan  # negative: counters were reset

        tx, rx = per_s("port_xmit_data", 4 / MIB), per_s("port_rcv_data", 4 / MIB)
        cap = rate * 1e9 / 8 / MIB if rate == rate else math.nan
        util = 100.0 * max(tx, rx) / cap if cap and not (math.isnan(tx) or math.isnan(rx)) else math.nan
        errs = [per_s(n) for n in ERROR_COUNTERS if counts[n] is not None]
        err_rate = math.nan if not errs or any(math.isnan(e) for e in errs) else float(sum(errs))
        return (
            wall, dev, port, _read(path / "link_layer") or "", _state(_read(path / "state")),
            _state(_read(path / "phys_state")), rate, width, tx, rx, util, per_s("port_xmit_wait"), err_rate,
            *(math.nan if counts[n] is None else float(counts[n]) for n in IB_ERROR_COLUMNS),
        )

    def to_frame(self, rows: list[tuple]) -> pd.DataFrame:
        """The IB table (IB_COLUMNS) from drained rows."""
        return ib_frame(rows, self.host, self.source)


def ib_frame(rows: list[tuple], host: str = "", source: str = "probe:ib") -> pd.DataFrame:
    """Build the IB table from probe rows (everything but host and source, in IB_COLUMNS order)."""
    cols = [c for c in IB_COLUMNS if c not in ("host", "source")]
    df = pd.DataFrame(rows, columns=cols) if rows else pd.DataFrame({c: [] for c in cols})
    df["time"] = pd.to_datetime(df["time"].astype("int64"), utc=True).dt.as_unit("ns")
    df.insert(1, "host", pd.Series([host] * len(df), dtype="string"))
    for c in ("device", "link_layer", "state", "phys_state", "width"):
        df[c] = df[c].astype("string")
    df["port"] = df["port"].astype("int64")
    for c in IB_COLUMNS:
        if c not in ("time", "host", "device", "port", "link_layer", "state", "phys_state", "width", "source"):
            df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    df["source"] = pd.Series([source] * len(df), dtype="category")
    return df[list(IB_COLUMNS)]
