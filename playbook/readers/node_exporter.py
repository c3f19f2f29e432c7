"""node_exporter series → the host table, from the samples the Prometheus readers (readers/dcgm.py: text
exposition, `promtool tsdb dump`, `query_range` JSON) set aside, so one scrape or dump may hold GPU and host series.

Counters become rates over each series' own sample interval: `node_cpu_seconds_total{cpu, mode}` (before
node_exporter 0.16: `node_cpu`) gives per CPU busy = 100 × (1 - (Δidle + Δiowait) / Δall modes: psutil's
definition, as the probe's) and iowait = 100 × Δiowait / Δall, then cpu_pct (mean over CPUs) and cpu_max_core_pct
(the busiest); `node_disk_read_bytes_total` /
`node_disk_written_bytes_total` (`node_disk_bytes_read` / `_written`) and `node_network_receive_bytes_total` /
`node_network_transmit_bytes_total` (`..._bytes`) are summed over devices (loopback, partitions and devices
stacked on listed disks left out: host_columns.counted_devices), in MiB/s; `node_vmstat_pswpin` + `_pswpout`
(pages) are the host's swap traffic. A counter that falls (a restart) gives
no rate for that interval. A single scrape has no interval: its counters give no rate (said in a warning).
`node_memory_*` is the host's memory, not a process tree's resident set: rss_mib stays NaN.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.model import schema
from playbook.readers import textio
from playbook.readers.host_columns import MAX_RATE_MIB_S, MIB, PAGE_BYTES, counted_devices

CPU = {"node_cpu_seconds_total", "node_cpu"}
RATES = {"node_disk_read_bytes_total": "read_mib_s", "node_disk_bytes_read": "read_mib_s",
         "node_disk_written_bytes_total": "write_mib_s", "node_disk_bytes_written": "write_mib_s",
         "node_network_receive_bytes_total": "net_rx_mib_s", "node_network_receive_bytes": "net_rx_mib_s",
         "node_network_transmit_bytes_total": "net_tx_mib_s", "node_network_transmit_bytes": "net_tx_mib_s",
         "node_vmstat_pswpin": "swap_mib_s", "node_vmstat_pswpout": "swap_mib_s"}
PAGES = {"node_vmstat_pswpin", "node_vmstat_pswpout"}  # /proc/vmstat's pages swapped in / out (PAGE_BYTES each)


def wanted(name: str) -> bool:
    """Whether a Prometheus metric name is a node_exporter series read into the host table."""
    return name in CPU or name in RATES


class HostSeries:
    """node_exporter samples set aside while a Prometheus file is read; `table` turns them into host rows."""

    def __init__(self, src: str):
        self.src = src
        self.time: list[int] = []
        self.host: list[str] = []
        self.metric: list[str] = []
        self.entity: list[str] = []
        self.mode: list[str] = []
        self.value: list[float] = []
        self._ticks: list[int] = []  # positions of samples whose time is a scrape number
        self._seen: set[tuple] = set()
        self._scrape = 0

    def __len__(self) -> int:
        return len(self.time)

    def add(self, t_ns: int | None, host: str, name: str, labels: dict[str, str], value: float) -> None:
        """One sample; `t_ns` None (a scrape without timestamps): the scrape number, counted from repeats."""
        if t_ns is None:
            key = (host, name, labels.get("cpu", ""), labels.get("device", ""), labels.get("mode", ""))
            if key in self._seen:
                self._scrape += 1
                self._seen = set()
            self._seen.add(key)
            self._ticks.append(len(self.time))
            t_ns = self._scrape
        self.time.append(t_ns)
        self.host.append(host)
        self.metric.append("cpu" if name in CPU else RATES[name])
        self.entity.append(labels.get("cpu", "") if name in CPU else name if name in PAGES else labels.get("device", ""))
        self.mode.append(labels.get("mode", ""))
        self.value.append(value * PAGE_BYTES if name in PAGES else value)

    def table(self, interval_s: float | None = None) -> tuple[pd.DataFrame, list[str]]:
        """The host table (one row per host and sample time after the first) and warnings; scrapes without
        timestamps are placed `interval_s` apart."""
        if not self.time:
            return schema.host_frame(), []
        times = np.asarray(self.time, dtype=np.int64)
        notes = []
        if self._ticks:
            times[self._ticks] = textio.synthetic_times(times[self._ticks], interval_s).astype(np.int64)
            notes.append(textio.synthetic_warning(self.src, "node_exporter scrapes", interval_s))
        long = pd.DataFrame({"time": times, "host": self.host, "metric": self.metric, "entity": self.entity,
                             "mode": self.mode, "value": np.asarray(self.value, dtype=np.float64)})
        long = long.groupby(["host", "metric", "entity", "mode", "time"], sort=True)["value"].last().reset_index()
        if long["time"].nunique() < 2:
            return schema.host_frame(), [f"{self.src}: node_exporter counters from one scrape only: rates need "
                                         "two; no host rows"]
        parts = [_cpu(long[long["metric"] == "cpu"]), _rates(long[long["metric"] != "cpu"])]
        wide = pd.concat([p for p in parts if len(p)], axis=1) if any(len(p) for p in parts) else pd.DataFrame()
        if wide.empty:
            return schema.host_frame(), [f"{self.src}: node_exporter counters without two samples of one series"]
        wide = wide.reset_index()
        data = {c: wide[c].to_numpy() for c in wide.columns if c in schema.HOST_COLUMNS}
        data["time"] = pd.to_datetime(wide["time"].to_numpy(), utc=True)
        data["source"] = self.src
        return schema.host_frame(data).sort_values(["host", "time"], kind="stable").reset_index(drop=True), notes


def _deltas(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per series (keys) the counter's rise and the seconds since its previous sample; a fall (a restart) is NaN."""
    frame = frame.sort_values([*keys, "time"])
    grouped = frame.groupby(keys, sort=False)
    rise = grouped["value"].diff()
    seconds = grouped["time"].diff() / 1e9
    return frame.assign(rise=rise.where(rise >= 0), seconds=seconds).dropna(subset=["seconds"])


def _cpu(cpu: pd.DataFrame) -> pd.DataFrame:
    """cpu_pct, cpu_max_core_pct and iowait_pct per (host, time) from node_cpu_seconds_total."""
    if cpu.empty:
        return pd.DataFrame()
    d = _deltas(cpu, ["host", "entity", "mode"])
    per = d.pivot_table(index=["host", "time", "entity"], columns="mode", values="rise", aggfunc="sum")
    total = per.sum(axis=1, min_count=1)
    waiting = per["iowait"] if "iowait" in per else pd.Series(np.nan, index=per.index)
    busy = 100.0 * (1.0 - (per.get("idle", np.nan) + waiting.fillna(0.0)) / total)
    iowait = 100.0 * waiting / total
    rows = pd.DataFrame({"busy": busy.clip(0, 100), "iowait": iowait.clip(0, 100)}).groupby(["host", "time"])
    return pd.DataFrame({"cpu_pct": rows["busy"].mean(), "cpu_max_core_pct": rows["busy"].max(),
                         "iowait_pct": rows["iowait"].mean()})


def _rates(series: pd.DataFrame) -> pd.DataFrame:
    """read/write/net MiB/s per (host, time): each device's rise over its interval, summed over devices (NaN
    where every device's counter fell: a restart is no rate, not 0 MiB/s)."""
    if series.empty:
        return pd.DataFrame()
    d = _deltas(series, ["host", "metric", "entity"])
    d = d[counted_devices(d["entity"], d["metric"].str.startswith("net"))]
    rate = d["rise"] / d["seconds"] / MIB
    d = d.assign(rate=rate.where(rate <= MAX_RATE_MIB_S))  # a damaged counter's leap is no rate
    return d.groupby(["host", "time", "metric"])["rate"].sum(min_count=1).unstack("metric")
