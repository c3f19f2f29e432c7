"""Live telemetry for `playbook watch`: each source hands over the rows sampled since the last `poll()`.

    src = open_source("auto", interval_s=1.0)   # NVML, else `nvidia-smi -lms` in a subprocess
    src.start(); ...; frame = src.poll(); ...; src.stop()

NvmlSource     probes/nvml.py's NvmlSampler at 1/interval Hz (plus the driver's own sub-second utilization
               samples every 2 s); a fake pynvml module (probes/fake_nvml.py) in tests and demos.
SmiSource      `nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N` in a subprocess, for hosts where
               the NVML library cannot be loaded by Python (a container with the binary but not libnvidia-ml
               bindings, say). Rows are stamped on arrival (nvidia-smi prints local time without a zone).
               Columns come from readers/nvidia_smi/fields.py's METRIC_FIELDS. Lines that are not data (nvidia-smi's
               own error lines) are counted and reported once.
PromSource     a Prometheus API (sources/prometheus.py) re-read over the last `window_s` on every poll: the whole
               window replaces what was there (`replaces = True`).

poll() of NVML and nvidia-smi returns plain rows (time ns, host, gpu, source, values in schema.TELEMETRY_METRICS
order) — no pandas per sample; `rows_frame` makes the table when one is needed. A source never raises from
poll(); what went wrong is in `warnings` (one line each).
"""

from __future__ import annotations

import collections
import math
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema

# nvidia-smi --query-gpu fields asked for; the first four are enough when a driver refuses the others
SMI_FIELDS = ("index", "utilization.gpu", "power.draw", "clocks.sm", "memory.used", "memory.total",
              "utilization.memory", "clocks.mem", "temperature.gpu", "clocks_throttle_reasons.active",
              "pcie.link.gen.current", "pcie.link.width.current")
SMI_BASIC = 4
_IDX = {name: i for i, name in enumerate(schema.TELEMETRY_METRICS)}


def rows_frame(rows: list[tuple], interval_s: float | None = None) -> pd.DataFrame:
    """A telemetry table from poll() rows (time ns, host, gpu, source, values in TELEMETRY_METRICS order):
    built once per refresh or flush, never per sample."""
    if not rows:
        return schema.telemetry_frame(interval_s=interval_s)
    t, host, gpu, source, values = zip(*rows, strict=True)
    data: dict[str, Any] = {"time": np.asarray(t, dtype=np.int64), "host": list(host), "gpu": list(gpu),
                            "source": list(source)}
    block = np.asarray(values, dtype=np.float64)
    for i, name in enumerate(schema.TELEMETRY_METRICS):
        data[name] = block[:, i]
    return schema.telemetry_frame(data)


class NvmlSource:
    """NVML through probes/nvml.py (see the module docstring)."""

    replaces = False

    def __init__(self, interval_s: float = 1.0, host: str | None = None, nvml: Any = None):
        from playbook.probes.nvml import NvmlSampler

        self.host = host or socket.gethostname()
        self.name = "NVML" if nvml is None else f"fake NVML ({getattr(nvml, 'scenario', 'test')})"
        self.sampler = NvmlSampler(self.host, hz=1.0 / interval_s, nvml=nvml)
        self.warnings: list[str] = []
        self.events: list[tuple[int, str, int, str, str]] = []  # (time ns, host, gpu, kind, detail)

    def start(self) -> bool:
        ok = self.sampler.start()
        self.warnings += self.sampler.warnings
        return ok

    def poll(self) -> list[tuple]:
        for t, gpu, kind, detail in self.sampler.drain_events():
            self.events.append((t, self.host, gpu, kind, detail))
        return [(t, self.host, gpu, source, v) for t, gpu, source, v in self.sampler.drain()]

    def stop(self) -> None:
        self.sampler.stop()
        self.warnings += [w for w in self.sampler.warnings if w not in self.warnings]

    def processes(self) -> list[dict]:
        """The compute processes on each GPU (NvmlSampler.processes), with this host's name."""
        return [{"host": self.host, **p} for p in self.sampler.processes()]

    def events_table(self) -> pd.DataFrame:
        return events_frame(self.events, self.name)

    def cost_s(self) -> float:
        """CPU-clock seconds spent sampling so far (the sampler's own accounting)."""
        return self.sampler.cost_s + self.sampler.slow_cost_s


class SmiSource:
    """`nvidia-smi -lms` in a subprocess (see the module docstring)."""

    replaces = False

    def __init__(self, interval_s: float = 1.0, host: str | None = None, exe: str = "nvidia-smi"):
        self.host = host or socket.gethostname()
        self.interval_s = interval_s
        self.exe = shutil.which(exe) or exe
        self.name = f"nvidia-smi ({self.exe})"
        self.fields: tuple[str, ...] = SMI_FIELDS
        self.proc: subprocess.Popen | None = None
        self.lines: collections.deque[tuple[int, str]] = collections.deque(maxlen=1_000_000)
        self.warnings: list[str] = []
        self.skipped = 0
        self.first_bad: str | None = None
        self.events: list[tuple[int, str, int, str, str]] = []
        self._reader: threading.Thread | None = None

    def _spawn(self) -> subprocess.Popen:
        ms = max(1, int(round(self.interval_s * 1000)))
        cmd = [self.exe, f"--query-gpu={','.join(self.fields)}", "--format=csv,noheader,nounits", "-lms", str(ms)]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                text=True, bufsize=1, start_new_session=True)  # Ctrl-C reaches us, not it

    def start(self, first_line_s: float = 15.0) -> bool:
        """Start nvidia-smi and wait (at most `first_line_s`) for its first line; a driver that refuses a field
        gets the basic field list instead."""
        if shutil.which(self.exe) is None:
            self.warnings.append(f"{self.exe}: not found on PATH")
            return False
        for fields in (SMI_FIELDS, SMI_FIELDS[:SMI_BASIC]):
            self.fields = fields
            try:
                self.proc = self._spawn()
            except OSError as exc:
                self.warnings.append(f"{self.exe}: cannot start ({exc})")
                return False
            self._reader = threading.Thread(target=self._read, name="playbook-nvidia-smi", daemon=True)
            self._reader.start()
            deadline = time.monotonic() + first_line_s
            while not self.lines and self.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            first = self.lines[0][1] if self.lines else ""
            if first and not _is_field_error(first):
                return True
            self._kill()
            self._reader.join(2)
            self.lines.clear()
            if not first or fields is not SMI_FIELDS:
                why = first.strip()[:120] or ("exited" if self.proc.poll() is not None else
                                              f"nothing within {first_line_s:.0f} s")
                self.warnings.append(f"{self.exe} printed no data ({why})")
                return False
        return False

    def _read(self) -> None:
        proc = self.proc
        for line in proc.stdout:
            self.lines.append((time.time_ns(), line))

    def poll(self) -> list[tuple]:
        rows = [self.lines.popleft() for _ in range(len(self.lines))]
        if self.proc is not None and self.proc.poll() is not None and not rows and not self.warnings:
            self.warnings.append(f"{self.exe} exited with status {self.proc.returncode}")
        return self._rows(rows)

    def _rows(self, lines: list[tuple[int, str]]) -> list[tuple]:
        from playbook.readers.nvidia_smi.fields import METRIC_FIELDS
        from playbook.readers.textio import parse_number

        where = [_IDX[METRIC_FIELDS[f][0]] for f in self.fields[1:]]
        hex_at = _IDX["throttle_reasons"]
        out = []
        for t, line in lines:
            cells = [c.strip() for c in line.strip().split(",")]
            if len(cells) != len(self.fields) or not cells[0].isdigit():
                if line.strip():
                    self.skipped += 1
                    self.first_bad = self.first_bad or line.strip()[:80]
                continue
            v = [math.nan] * len(schema.TELEMETRY_METRICS)
            for i, cell in zip(where, cells[1:], strict=True):
                if i == hex_at:
                    v[i] = _hex(cell)
                else:
                    num = parse_number(cell)
                    v[i] = num[0] if num else math.nan
            out.append((t, self.host, int(cells[0]), "nvidia-smi", v))
        return out

    def _kill(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(5)
        except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(5)

    def stop(self) -> None:
        self._kill()
        if self._reader is not None:
            self._reader.join(2)
        if self.skipped:
            self.warnings.append(f"{self.exe}: skipped {self.skipped} non-data line{'s' if self.skipped != 1 else ''}"
                                 f" (first: {self.first_bad!r})")

    def events_table(self) -> pd.DataFrame:
        return events_frame(self.events, self.name)

    def cost_s(self) -> float:
        """CPU seconds of the nvidia-smi child so far (Linux /proc; NaN elsewhere)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, AttributeError, IndexError, ValueError):
            return math.nan


def _is_field_error(line: str) -> bool:
    low = line.lower()
    return "not a valid field" in low or "invalid combination" in low or "unknown option" in low


def _hex(cell: str) -> float:
    try:
        return float(int(cell, 16))
    except ValueError:
        return math.nan


class PromSource:
    """A Prometheus API re-read over the last `window_s` seconds on every poll."""

    replaces = True

    def __init__(self, url: str, window_s: float = 600.0, step_s: float = 15.0, match: str | None = None):
        self.url, self.window_s, self.step_s, self.match = url, window_s, step_s, match
        self.name = f"Prometheus {url}" + (f" {{{match}}}" if match else "")
        self.warnings: list[str] = []
        self.bundle: schema.Bundle | None = None

    def start(self) -> bool:
        from playbook.sources import prometheus

        prometheus.base_url(self.url)  # a malformed address is an error now, not at the first poll
        return True

    def poll(self) -> pd.DataFrame:
        """The whole window, re-read (a telemetry table; empty, with a warning, when the server fails)."""
        from playbook.sources import prometheus

        try:
            self.bundle = prometheus.read(self.url, since_s=self.window_s, step_s=self.step_s, match=self.match)
        except InputError as exc:
            if str(exc) not in self.warnings:
                self.warnings.append(str(exc))
            return schema.telemetry_frame()
        return self.bundle.telemetry

    def stop(self) -> None:
        pass

    def events_table(self) -> pd.DataFrame:
        return self.bundle.events if self.bundle is not None else schema.events_frame()

    def cost_s(self) -> float:
        return math.nan


def open_source(kind: str, interval_s: float = 1.0, nvml: Any = None, window_s: float = 600.0,
                step_s: float = 15.0, match: str | None = None, host: str | None = None):
    """The started source for `kind` ("auto", "nvml", "nvidia-smi" or a prometheus:// URL). "auto" tries NVML,
    then nvidia-smi. InputError (one line, saying why each failed) when none can start."""
    from playbook.sources import is_url

    if is_url(kind):
        src = PromSource(kind, window_s=window_s, step_s=step_s, match=match)
        src.start()
        return src
    tried: list[str] = []
    if kind in ("auto", "nvml"):
        src = NvmlSource(interval_s, host=host, nvml=nvml)
        if src.start():
            return src
        tried.append("; ".join(w.replace("; recording host metrics only", "") for w in src.warnings)
                     or "NVML not available")
    if kind in ("auto", "nvidia-smi"):
        smi = SmiSource(interval_s, host=host)
        if smi.start():
            smi.warnings = [f"NVML not usable ({tried[0]}); sampling with nvidia-smi instead"] if tried else []
            return smi
        tried.append("; ".join(smi.warnings))
    if kind not in ("auto", "nvml", "nvidia-smi"):
        raise InputError(f"unknown source {kind!r}: auto, nvml, nvidia-smi or prometheus://HOST:PORT")
    raise InputError("no GPU telemetry source: " + " | ".join(tried))


def events_frame(events: list[tuple[int, str, int, str, str]], source: str) -> pd.DataFrame:
    """The events table for (time ns, host, gpu, kind, detail) tuples."""
    if not events:
        return schema.events_frame()
    t, host, gpu, kind, detail = zip(*events, strict=True)
    return schema.events_frame({"time": np.asarray(t, dtype=np.int64), "host": list(host), "kind": list(kind),
                                "detail": [f"gpu {g}: {d}" for g, d in zip(gpu, detail, strict=True)],
                                "source": source})
