"""A real Prometheus for tests and benchmarks: OpenMetrics written from a telemetry table, backfilled with
`promtool tsdb create-blocks-from openmetrics`, served by `prometheus` on 127.0.0.1 at a free port.

    text = openmetrics_path(tmp / "fleet.om")
    write_openmetrics(text, [(telemetry_frame, {"job": "train"})])
    backfill(text, tmp / "tsdb")
    with PromServer(tmp / "tsdb") as prom:
        prom.url            # prometheus://127.0.0.1:PORT

Metric names and units are the inverse of playbook.readers.dcgm.METRICS (the names dcgm-exporter writes), labels
those dcgm-exporter attaches (gpu, UUID, device, modelName, Hostname) plus any given.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from playbook.readers import dcgm

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
SKIP_REASON = ("needs Debian's `prometheus` package (prometheus and promtool on PATH; .ci/run installs it: "
               "apt-get install prometheus)")


def exporter_names() -> dict[str, tuple[str, float]]:
    """schema column -> (dcgm-exporter metric name, factor from column units to the metric's)."""
    out: dict[str, tuple[str, float]] = {}
    for name, (column, factor, prio) in dcgm.METRICS.items():
        if prio == 0 and name.startswith("DCGM_FI_") and column not in out:
            out[column] = (name, 1.0 / factor)
    return out


def write_openmetrics(path: Path, fleets: list[tuple[pd.DataFrame, dict[str, str]]],
                      xids: dict[tuple[str, int], list[tuple[float, int]]] | None = None,
                      columns: tuple[str, ...] | None = None) -> Path:
    """Write every metric of every fleet (telemetry frame, extra labels) as one OpenMetrics file for promtool.

    xids: (host, gpu) -> [(epoch s, XID code)]: a DCGM_FI_DEV_XID_ERRORS gauge (0, then the code from then on)
    for every GPU of the fleets. columns: only these schema columns (default: all the frames hold)."""
    names = exporter_names()
    with open(path, "w") as out:
        for column, (name, factor) in names.items():
            if columns is not None and column not in columns:
                continue
            if not any(column in f and f[column].notna().any() for f, _ in fleets):
                continue
            out.write(f"# TYPE {name} gauge\n")
            for frame, extra in fleets:
                if column not in frame:
                    continue
                for (host, gpu), g in frame.groupby(["host", "gpu"], sort=True, observed=True):
                    v = g[column].to_numpy(np.float64) * factor
                    t = g["time"].astype("int64").to_numpy() / 1e9
                    ok = np.isfinite(v)
                    prefix = f"{name}{{{_labels(host, gpu, extra)}}} "
                    out.write("".join(f"{prefix}{x:.6g} {s:.3f}\n" for x, s in zip(v[ok], t[ok], strict=True)))
        out.write(f"# TYPE {dcgm.XID} gauge\n")
        for frame, extra in fleets:
            for (host, gpu), g in frame.groupby(["host", "gpu"], sort=True, observed=True):
                t = g["time"].astype("int64").to_numpy() / 1e9
                codes = np.zeros(len(t))
                for at, code in (xids or {}).get((str(host), int(gpu)), []):
                    codes[t >= at] = code
                prefix = f"{dcgm.XID}{{{_labels(host, gpu, extra)}}} "
                out.write("".join(f"{prefix}{int(c)} {s:.3f}\n" for c, s in zip(codes, t, strict=True)))
        out.write("# EOF\n")
    return path


# a fleet with known culprits for the fleet screen: flat GPU index -> what is wrong with it
STRAGGLERS = (11, 24)  # utilization 25 points below the fleet's all the time
SLOW_CLOCK = (22,)  # SM clock 20% below the fleet's while busy (a clock limiter)
SWINGING = (40, 41, 42, 43)  # utilization swinging 97% <-> 20% with a 5-minute period, 75% of the time high
XID_GPU = 50  # an XID 31 half-way, otherwise healthy
SWING_PERIOD_S = 300.0


def culprit_fleet(hosts: int, span_s: float, step_s: float, end: float, seed: int = 0):
    """A healthy fleet of `hosts` × 8 GPUs (utilization ~97%) ending at `end` (epoch s) with the culprits above,
    as (telemetry frame, {"straggler"|"clock"|"swing"|"xid": [gpu id]}, xids for write_openmetrics)."""
    from playbook.labs.synthetic import simulate_telemetry
    from playbook.model import schema

    start = pd.Timestamp(end - span_s, unit="s", tz="UTC").isoformat()
    frame, _ = simulate_telemetry("healthy", hosts=hosts, gpus_per_host=8, duration_s=span_s, interval_s=step_s,
                                  start=start, seed=seed)
    flat = frame["host"].astype(str).str[4:].astype(int).to_numpy() * 8 + frame["gpu"].to_numpy()
    t = frame["time"].astype("int64").to_numpy() / 1e9
    util = frame["util_pct"].to_numpy(np.float64).copy()
    clock = frame["sm_clock_mhz"].to_numpy(np.float64).copy()
    power = frame["power_w"].to_numpy(np.float64).copy()
    slow = np.isin(flat, STRAGGLERS)
    util[slow] -= 25.0
    power[slow] -= 150.0
    clock[np.isin(flat, SLOW_CLOCK)] *= 0.8
    swing = np.isin(flat, SWINGING) & (((t - t.min()) % SWING_PERIOD_S) >= 0.75 * SWING_PERIOD_S)
    util[swing] = 20.0 + (util[swing] - 97.0)
    power[swing] = 150.0
    clock[swing] = 345.0
    frame["util_pct"], frame["sm_clock_mhz"], frame["power_w"] = np.clip(util, 0, 100), clock, power
    def ids(flat_indices) -> list[str]:
        return [schema.gpu_id(f"node{i // 8:02d}", i % 8) for i in flat_indices if i < hosts * 8]

    truth = {"straggler": ids(STRAGGLERS), "clock": ids(SLOW_CLOCK), "swing": ids(SWINGING), "xid": ids([XID_GPU])}
    xids = {(f"node{XID_GPU // 8:02d}", XID_GPU % 8): [(end - span_s / 2, 31)]} if XID_GPU < hosts * 8 else {}
    return frame, truth, xids


def _labels(host: str, gpu: int, extra: dict[str, str]) -> str:
    labels = {"gpu": str(int(gpu)), "UUID": f"GPU-{zlib.crc32(f'{host}:{gpu}'.encode()):08x}-fake",
              "device": f"nvidia{int(gpu)}", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": str(host), **extra}
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def backfill(openmetrics: Path, tsdb: Path, timeout_s: float = 1800) -> None:
    """promtool tsdb create-blocks-from openmetrics OPENMETRICS TSDB (raises with promtool's output on failure)."""
    tsdb.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "-q", str(openmetrics), str(tsdb)],
                          capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"promtool failed ({proc.returncode}): {proc.stderr[-2000:]}")


def cached_tsdb(cache: Path, frame: pd.DataFrame, columns: tuple[str, ...], xids=None) -> Path:
    """`frame` backfilled into cache/tsdb once (OpenMetrics, then promtool; a `done` marker makes later calls
    reuse it): for benchmarks whose fleets take minutes to write."""
    import time

    tsdb = cache / "tsdb"
    if (tsdb / "done").exists():
        return tsdb
    cache.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    text = write_openmetrics(cache / "fleet.om", [(frame, {"job": "dcgm"})], xids=xids, columns=columns)
    t_write, t = time.perf_counter() - t, time.perf_counter()
    backfill(text, tsdb, timeout_s=7200)
    text.unlink()
    (tsdb / "done").write_text("ok")
    print(f"backfill: OpenMetrics written in {t_write:.0f} s, promtool {time.perf_counter() - t:.0f} s", flush=True)
    return tsdb


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PromServer:
    """`prometheus` serving `tsdb` on 127.0.0.1:<free port> until stop() (a context manager)."""

    def __init__(self, tsdb: Path, workdir: Path | None = None, ready_timeout_s: float = 120.0):
        self.tsdb, self.workdir = Path(tsdb), Path(workdir or Path(tsdb).parent)
        self.ready_timeout_s = ready_timeout_s
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"prometheus://127.0.0.1:{self.port}"

    def start(self) -> PromServer:
        config = self.workdir / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
        self.port = free_port()
        self.log = open(self.workdir / "prometheus.log", "w")
        # retention is measured back from the newest block, so backfilled history of any age is kept
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.tsdb}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=3650d",
             "--log.level=warn"], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited ({self.proc.returncode}): "
                                   f"{(self.workdir / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"prometheus not ready within {self.ready_timeout_s:.0f} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
        if getattr(self, "log", None) is not None:
            self.log.close()
            self.log = None

    def __enter__(self) -> PromServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
