"""Host probe (psutil): CPU per core, RSS of the observed process tree, disk and network rates.

Rows are schema.host_frame: cpu_pct (mean over cores since the previous sample, 0-100), cpu_max_core_pct (the
busiest core: a single-threaded loader or a Python GIL-bound main thread pins one core at 100 while the mean
stays low), rss_mib (resident set of the process tree rooted at `pid`, summed: shared pages are counted once per
process, so it over-counts forked DataLoader workers), read/write_mib_s (all block devices), net_rx/tx_mib_s
(all interfaces), swap_mib_s (memory swapped in plus out: a host short of memory stalls the loader and the trainer
alike). Rates are differences between consecutive samples divided by the elapsed time.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

from playbook.model import schema
from playbook.probes._poll import Poller

MIB = 1024.0 * 1024.0


class HostProbe(Poller):
    """Samples host metrics at `hz` on a background thread. `pid`: root of the process tree for RSS."""

    name = "host probe"

    def __init__(self, host: str, hz: float = 2.0, pid: int | None = None, source: str = "probe:host",
                 children_every_s: float = 5.0, **kwargs: Any):
        super().__init__(hz, **kwargs)
        self.host, self.source = host, source
        self.pid = pid or os.getpid()
        self.children_every_s = children_every_s
        self._psutil: Any = None
        self._root: Any = None
        self._procs: list[Any] = []
        self._procs_t = -math.inf
        self._last: tuple[float, Any, Any, Any] | None = None

    def _setup(self) -> bool:
        import psutil

        self._psutil = psutil
        self._root = psutil.Process(self.pid)
        psutil.cpu_percent(percpu=True)  # prime: the next call returns usage since now
        self._last = (time.monotonic(), _safe(psutil.disk_io_counters), _safe(psutil.net_io_counters),
                      _safe(psutil.swap_memory))
        return True

    def _tree(self) -> list[Any]:
        now = time.monotonic()
        if now - self._procs_t >= self.children_every_s:
            try:
                self._procs = [self._root, *self._root.children(recursive=True)]
            except self._psutil.Error:
                self._procs = [self._root]
            self._procs_t = now
        return self._procs

    def _sample(self) -> None:
        ps = self._psutil
        wall = time.time_ns()
        now = time.monotonic()
        cores = ps.cpu_percent(percpu=True)
        rss = 0
        alive = []
        for p in self._tree():
            try:
                rss += p.memory_info().rss
                alive.append(p)
            except ps.Error:
                continue
        if len(alive) != len(self._procs):
            self._procs = alive
        disk, net, swap = _safe(ps.disk_io_counters), _safe(ps.net_io_counters), _safe(ps.swap_memory)
        t_prev, disk_prev, net_prev, swap_prev = self._last
        dt = now - t_prev
        self._last = (now, disk, net, swap)
        self._emit((
            wall,
            sum(cores) / len(cores) if cores else math.nan,
            max(cores) if cores else math.nan,
            rss / MIB if alive else math.nan,
            _rate(disk, disk_prev, "read_bytes", dt),
            _rate(disk, disk_prev, "write_bytes", dt),
            _rate(net, net_prev, "bytes_recv", dt),
            _rate(net, net_prev, "bytes_sent", dt),
            _rate(swap, swap_prev, "sin", dt) + _rate(swap, swap_prev, "sout", dt),
        ))

    def to_frame(self, rows: list[tuple]) -> Any:
        """A schema.host_frame from drained rows."""
        if not rows:
            return schema.host_frame()
        cols = list(zip(*rows, strict=True))
        data: dict[str, Any] = {"time": list(cols[0]), "host": self.host, "source": self.source}
        for name, values in zip((*schema.HOST_METRICS, "swap_mib_s"), cols[1:], strict=True):
            data[name] = list(values)
        return schema.host_frame(data)


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception:  # no disks/interfaces visible in some containers
        return None


def _rate(now: Any, prev: Any, field: str, dt: float) -> float:
    if now is None or prev is None or dt <= 0:
        return math.nan
    delta = getattr(now, field) - getattr(prev, field)
    return delta / MIB / dt if delta >= 0 else math.nan  # counters reset (device hot-plug): no rate
