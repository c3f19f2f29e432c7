"""Interconnect counters: InfiniBand / RoCE ports from sysfs as rates (ib.parquet), and link health.

InfiniBand (`IbProbe`): every port under /sys/class/infiniband/<device>/ports/<port>/ is read at `hz` (default
1 Hz): counters/port_xmit_data and port_rcv_data (in 4-byte words, as the IB spec defines them) become tx/rx
MiB/s; counters/port_xmit_wait (ticks a port had data but no credit to send: congestion) becomes a rate; error
counters (symbol_error, link_downed, link_error_recovery, port_rcv_errors, port_xmit_discards,
port_rcv_remote_physical_errors, local_link_integrity_errors, excessive_buffer_overrun_errors) are kept
cumulative and summed into errors_per_s; `rate` ("400 Gb/sec (4X NDR)") gives the current speed and width,
`state` / `phys_state` whether the link is up. The sysfs root is injectable (tests use tests/data/sysfs/).

The IB table (IB_COLUMNS, one row per (time, host, device, port)):
    time (UTC), host, device (e.g. mlx5_0), port (int), link_layer (InfiniBand / Ethernet), state (ACTIVE...),
    phys_state (LinkUp...), rate_gbps (current signalling rate, Gb/s), width ("4X"), tx_mib_s, rx_mib_s,
    util_pct (max(tx, rx) / capacity, capacity = rate_gbps / 8 in MiB/s), xmit_wait_per_s, errors_per_s,
    symbol_error, link_downed, link_error_recovery, port_rcv_errors, port_xmit_discards (cumulative counts),
    source.

GPU links (PCIe and NVLink) come from the NVML sampler into the telemetry table: pcie_tx/rx_mib_s,
pcie_link_gen/width (current: read under load), pcie_replay_count (cumulative), nvlink_tx/rx_mib_s; the
sampler's stats hold each GPU's maximum PCIe generation and width.

`link_status(ib=..., telemetry=...)` turns both into one verdict per link: "saturated" (busy near capacity: the
link is the bottleneck but healthy), "degraded" (errors rising, link down, or trained below its peers / its
maximum: a hardware problem to hand to the cluster team), or "ok".
"""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.probes._poll import Poller

MIB = 1024.0 * 1024.0
IB_COLUMNS: tuple[str, ...] = (
    "time", "host", "device", "port", "link_layer", "state", "phys_state", "rate_gbps", "width", "tx_mib_s",
    "rx_mib_s", "util_pct", "xmit_wait_per_s", "errors_per_s", "symbol_error", "link_downed",
    "link_error_recovery", "port_rcv_errors", "port_xmit_discards", "source",
)
ERROR_COUNTERS = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_xmit_discards",
                  "port_rcv_remote_physical_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors")
KEPT_ERRORS = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_xmit_discards")
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
            *(math.nan if counts[n] is None else float(counts[n]) for n in KEPT_ERRORS),
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


# ---------------------------------------------------------------------- link health
def link_status(ib: pd.DataFrame | None = None, telemetry: pd.DataFrame | None = None,
                pcie_max: dict[tuple[str, int], tuple[float, float]] | None = None,
                busy_pct: float = 80.0, nvlink_capacity_mib_s: float | None = None) -> pd.DataFrame:
    """One row per link: host, link ("mlx5_0/1", "gpu0/pcie", "gpu0/nvlink"), status, evidence.

    status "degraded": error counters rose during the recording, the port went down, or the link trained below
    its peers (same kind of link on any host) / its own maximum (`pcie_max[(host, gpu)] = (gen, width)`);
    "saturated": the 90th percentile of its busy share ≥ `busy_pct` (IB: util_pct; NVLink: only with
    `nvlink_capacity_mib_s`); "ok" otherwise. PCIe throughput from NVML is not compared with a capacity (the
    20 ms windows are too noisy); PCIe is judged by gen/width and replays. Degraded wins over saturated.
    """
    rows: list[dict[str, Any]] = []
    if ib is not None and len(ib):
        best_rate = ib.groupby("link_layer")["rate_gbps"].max()
        for (host, dev, port), g in ib.groupby(["host", "device", "port"], sort=True):
            why = []
            for name in KEPT_ERRORS:
                s = g[name].dropna()
                if len(s) >= 2 and s.iloc[-1] > s.iloc[0]:
                    why.append(f"{name} +{int(s.iloc[-1] - s.iloc[0])}")
            if (g["state"] != "ACTIVE").any() or (g["phys_state"].isin(["Disabled", "Polling", "LinkDown"])).any():
                why.append("port not ACTIVE/LinkUp in some samples")
            rate = g["rate_gbps"].min()
            peer = best_rate.get(g["link_layer"].iloc[0], np.nan)
            if np.isfinite(rate) and np.isfinite(peer) and rate < peer:
                why.append(f"rate {rate:g} Gb/s below peers' {peer:g} Gb/s")
            util = g["util_pct"].dropna()
            p90 = float(util.quantile(0.9)) if len(util) else math.nan
            status = "degraded" if why else ("saturated" if p90 >= busy_pct else "ok")
            if status == "saturated":
                why.append(f"p90 utilization {p90:.0f}% of {g['rate_gbps'].max():g} Gb/s")
            rows.append({"host": host, "link": f"{dev}/{port}", "kind": "ib", "status": status,
                         "evidence": "; ".join(why) or f"p90 utilization {p90:.0f}%"})
    if telemetry is not None and len(telemetry):
        t = telemetry
        best_gen, best_width = t["pcie_link_gen"].max(), t["pcie_link_width"].max()
        for (host, gpu), g in t.groupby(["host", "gpu"], sort=True):
            why = []
            gen, width = g["pcie_link_gen"].dropna(), g["pcie_link_width"].dropna()
            if len(gen) and len(width):
                mx = (pcie_max or {}).get((str(host), int(gpu)))
                ref_gen, ref_width = (mx if mx else (best_gen, best_width))
                if gen.max() < ref_gen or width.max() < ref_width:
                    why.append(f"PCIe gen{gen.max():g} x{width.max():g} under load, expected gen{ref_gen:g} "
                               f"x{ref_width:g}")
            rep = g["pcie_replay_count"].dropna()
            if len(rep) >= 2 and rep.iloc[-1] > rep.iloc[0]:
                why.append(f"PCIe replays +{int(rep.iloc[-1] - rep.iloc[0])}")
            if gen.size or rep.size:
                rows.append({"host": host, "link": f"gpu{gpu}/pcie", "kind": "pcie",
                             "status": "degraded" if why else "ok", "evidence": "; ".join(why)})
            nv = g[["nvlink_tx_mib_s", "nvlink_rx_mib_s"]].max(axis=1).dropna()
            if len(nv):
                p90 = float(nv.quantile(0.9))
                sat = nvlink_capacity_mib_s is not None and p90 >= busy_pct / 100 * nvlink_capacity_mib_s
                rows.append({"host": host, "link": f"gpu{gpu}/nvlink", "kind": "nvlink",
                             "status": "saturated" if sat else "ok",
                             "evidence": f"p90 {p90:,.0f} MiB/s" + (
                                 f" of {nvlink_capacity_mib_s:,.0f}" if nvlink_capacity_mib_s else "")})
    return pd.DataFrame(rows, columns=["host", "link", "kind", "status", "evidence"])
