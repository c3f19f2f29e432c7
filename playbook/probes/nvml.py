"""NVML sampler: per-GPU telemetry rows from a background thread (schema.telemetry_frame).

    s = NvmlSampler(host="node1", hz=10)        # pynvml is imported only here, in start()
    s.start(); ...; s.stop()
    telemetry = s.to_frame(s.drain())

Two threads, so that slow NVML calls never delay the fast ones:
  fast (`hz`, default 10 Hz), per GPU: utilization.gpu / .memory (nvmlDeviceGetUtilizationRates), memory used /
      total, power draw, SM and memory clocks, temperature, clock-event (throttle) reasons
      (nvmlDeviceGetCurrentClocksEventReasons, or ...ThrottleReasons on old bindings). Source "probe:nvml".
  slow (`slow_hz`, default 1 Hz), per GPU: PCIe TX/RX throughput (nvmlDeviceGetPcieThroughput, KB/s over a 20 ms
      window: the call itself takes that long), current PCIe link generation and width (read under load: a link
      that trained down shows here), the PCIe replay counter, NVLink data throughput (field values 138/139 per
      link, cumulative KiB -> MiB/s) and the enforced power limit. A slow value is written into the first fast
      row of that GPU after it was measured (NaN in the other rows), so every row is a real measurement.
      Every `samples_every_s` (2 s) the slow thread also reads nvmlDeviceGetSamples(GPU_UTILIZATION_SAMPLES):
      the driver's own sub-second utilization samples, deduplicated by timestamp, as rows with source
      "probe:nvml-samples" and only util_pct set.

Failure handling (never raises into the caller): a metric that raises NVMLError_NotSupported (or NoPermission,
FunctionNotFound, a missing binding) reads NaN and is not queried again; other NVML errors on a metric read NaN
and disable it after 10 in a row; NVMLError_GpuIsLost on one GPU marks that GPU lost (one warning, one
"gpu_lost" entry in `gpu_events`, NaN rows from then on) while the other GPUs keep reporting; no NVML at all
(pynvml missing, NVMLError_LibraryNotFound, driver not loaded) logs one line and `start()` returns False, so the
Recorder records host metrics only. Memory is bounded by the row buffer (`max_rows`), drained by the Recorder.
`processes()` lists the compute processes on each GPU with their user and command (for `playbook watch`).
Pass `nvml=` a fake module (playbook.probes.fake_nvml) in tests.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from playbook.model import schema
from playbook.probes._poll import Poller

MIB = 1024.0 * 1024.0
_IDX = {name: i for i, name in enumerate(schema.TELEMETRY_METRICS)}
_N = len(schema.TELEMETRY_METRICS)
SOURCE = "probe:nvml"
SAMPLES_SOURCE = "probe:nvml-samples"
FIELD_NVLINK_LINK_COUNT = 91
FIELD_NVLINK_DATA_TX = 138  # KiB, cumulative, per link (scopeId = link)
FIELD_NVLINK_DATA_RX = 139
_PERMANENT = ("NVMLError_NotSupported", "NVMLError_NoPermission", "NVMLError_FunctionNotFound",
              "NVMLError_InvalidArgument")
MAX_METRIC_FAILURES = 10


class _GpuLost(Exception):
    pass


class _Gpu:
    """Per-GPU state: handle, disabled metrics, failure counts, slow values waiting for the next row."""

    def __init__(self, index: int, handle: Any):
        self.index, self.handle = index, handle
        self.off: set[str] = set()
        self.failures: dict[str, int] = {}
        self.lost = False
        self.pending: dict[str, float] = {}
        self.samples_ts = 0
        self.nvlink_links: int | None = None
        self.nvlink_last: tuple[float, float, float] | None = None  # (NVML stamp s, tx_kib, rx_kib)
        self.latest_util = math.nan


class NvmlSampler(Poller):
    """Samples every GPU NVML sees (or `gpus`, NVML indices) at `hz`; see the module docstring."""

    name = "NVML sampler"

    def __init__(self, host: str, hz: float = 10.0, nvml: Any = None, gpus: list[int] | None = None,
                 slow_hz: float = 1.0, samples_every_s: float = 2.0, util_samples: bool = True, **kwargs: Any):
        super().__init__(hz, **kwargs)
        self.host = host
        self.slow_hz = min(float(slow_hz), float(hz))
        self.samples_every_s = samples_every_s
        self.util_samples = util_samples
        self._nvml = nvml
        self._want = gpus
        self._gpus: list[_Gpu] = []
        self._slow_thread: threading.Thread | None = None
        self._pending_lock = threading.Lock()
        self.gpu_events: list[tuple[int, int, str, str]] = []  # (time_ns, gpu, kind, detail); see drain_events
        self.unsupported: dict[int, list[str]] = {}
        self.names: dict[int, str] = {}
        self.pcie_max: dict[int, tuple[int, int]] = {}  # gpu -> (max gen, max width) the link can train to
        self.available = False
        self.slow_cost_s = 0.0
        self.slow_samples = 0

    # ------------------------------------------------------------------ setup
    def _setup(self) -> bool:
        nv = self._nvml
        if nv is None:
            try:
                import pynvml as nv
            except ImportError as exc:
                self.warn_once("no_nvml", f"NVML not available (pynvml not importable: {exc}); "
                                          "recording host metrics only")
                return False
        self._nvml = nv
        try:
            nv.nvmlInit()
        except Exception as exc:
            self.warn_once("no_nvml", f"NVML not available ({type(exc).__name__}: {exc}); "
                                      "recording host metrics only")
            return False
        try:
            count = nv.nvmlDeviceGetCount()
        except Exception as exc:
            self.warn_once("no_nvml", f"NVML cannot count GPUs ({type(exc).__name__}: {exc}); "
                                      "recording host metrics only")
            return False
        for i in range(count):
            if self._want is not None and i not in self._want:
                continue
            try:
                h = nv.nvmlDeviceGetHandleByIndex(i)
            except Exception as exc:
                g = _Gpu(i, None)
                self._mark_lost(g, f"no handle ({type(exc).__name__}: {exc})")
                self._gpus.append(g)
                continue
            g = _Gpu(i, h)
            g.samples_ts = time.time_ns() // 1000  # the driver's buffer (CPU µs) holds samples from before we came
            try:
                name = nv.nvmlDeviceGetName(h)
                self.names[i] = name.decode() if isinstance(name, bytes) else str(name)
            except Exception:
                self.names[i] = ""
            try:
                self.pcie_max[i] = (int(nv.nvmlDeviceGetMaxPcieLinkGeneration(h)),
                                    int(nv.nvmlDeviceGetMaxPcieLinkWidth(h)))
            except Exception:
                pass
            self._gpus.append(g)
        if not self._gpus:
            self.warn_once("no_gpus", "NVML sees no GPU; recording host metrics only")
            return False
        self.available = True
        return True

    def start(self) -> bool:
        """Set up NVML and start the fast and slow threads; False when NVML is unavailable (said once)."""
        if not super().start():
            return False
        self._slow_thread = threading.Thread(target=self._slow_run, name="playbook-nvml-slow", daemon=True)
        self._slow_thread.start()
        return True

    def _teardown(self) -> None:
        if self._slow_thread is not None:
            self._slow_thread.join(5.0)
        for g in self._gpus:
            self.unsupported[g.index] = sorted(g.off)
        if self.available:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass

    # ------------------------------------------------------------------ queries
    def _q(self, g: _Gpu, metric: str, fn_name: str, *args: Any) -> Any:
        """One NVML call for one metric of one GPU: the value, or None (NaN) when it failed."""
        if metric in g.off:
            return None
        fn = getattr(self._nvml, fn_name, None)
        if fn is None:
            g.off.add(metric)
            return None
        try:
            value = fn(g.handle, *args)
        except Exception as exc:
            self._metric_failed(g, metric, exc)
            return None
        g.failures.pop(metric, None)
        return value

    def _metric_failed(self, g: _Gpu, metric: str, exc: BaseException) -> None:
        nv = self._nvml
        lost_cls = getattr(nv, "NVMLError_GpuIsLost", None)
        if lost_cls is not None and isinstance(exc, lost_cls):
            raise _GpuLost(str(exc))
        kind = type(exc).__name__
        if kind in _PERMANENT or isinstance(exc, (AttributeError, TypeError)):
            g.off.add(metric)  # NaN from now on, never asked again
            return
        n = g.failures.get(metric, 0) + 1
        g.failures[metric] = n
        if n >= MAX_METRIC_FAILURES:
            g.off.add(metric)
            self.warn_once(f"metric:{g.index}:{metric}",
                           f"NVML sampler: GPU {g.index} {metric}: {n} errors in a row ({kind}: {exc}); "
                           "no longer queried")

    def _mark_lost(self, g: _Gpu, why: str) -> None:
        if g.lost:
            return
        g.lost = True
        self.gpu_events.append((time.time_ns(), g.index, "gpu_lost", why))
        self.warn_once(f"lost:{g.index}", f"NVML sampler: GPU {g.index} lost ({why}); its rows read NaN, "
                                          "the other GPUs keep reporting")

    # ------------------------------------------------------------------ fast path
    def _sample(self) -> None:
        nv = self._nvml
        for g in self._gpus:
            t = time.time_ns()
            v = [math.nan] * _N
            if not g.lost:
                try:
                    self._fast(nv, g, v)
                except _GpuLost as exc:
                    self._mark_lost(g, str(exc) or "GPU is lost")
                    v = [math.nan] * _N
            g.latest_util = v[_IDX["util_pct"]]
            self._emit((t, g.index, SOURCE, v))

    def _fast(self, nv: Any, g: _Gpu, v: list[float]) -> None:
        u = self._q(g, "util", "nvmlDeviceGetUtilizationRates")
        if u is not None:
            v[_IDX["util_pct"]], v[_IDX["mem_util_pct"]] = float(u.gpu), float(u.memory)
        m = self._q(g, "memory", "nvmlDeviceGetMemoryInfo")
        if m is not None:
            v[_IDX["mem_used_mib"]], v[_IDX["mem_total_mib"]] = m.used / MIB, m.total / MIB
        p = self._q(g, "power", "nvmlDeviceGetPowerUsage")
        if p is not None:
            v[_IDX["power_w"]] = p / 1000.0
        c = self._q(g, "sm_clock", "nvmlDeviceGetClockInfo", nv.NVML_CLOCK_SM)
        if c is not None:
            v[_IDX["sm_clock_mhz"]] = float(c)
        c = self._q(g, "mem_clock", "nvmlDeviceGetClockInfo", nv.NVML_CLOCK_MEM)
        if c is not None:
            v[_IDX["mem_clock_mhz"]] = float(c)
        tc = self._q(g, "temp", "nvmlDeviceGetTemperature", nv.NVML_TEMPERATURE_GPU)
        if tc is not None:
            v[_IDX["temp_c"]] = float(tc)
        if "throttle" not in g.off and hasattr(nv, "nvmlDeviceGetCurrentClocksEventReasons"):
            r = self._q(g, "throttle", "nvmlDeviceGetCurrentClocksEventReasons")
        else:
            r = self._q(g, "throttle_old", "nvmlDeviceGetCurrentClocksThrottleReasons")
        if r is not None:
            v[_IDX["throttle_reasons"]] = float(r)
        if g.pending:
            with self._pending_lock:
                pending, g.pending = g.pending, {}
            for col, val in pending.items():
                v[_IDX[col]] = val

    # ------------------------------------------------------------------ slow path
    def _slow_run(self) -> None:
        period = 1.0 / self.slow_hz
        next_samples = time.monotonic()
        while not self._stop.is_set():
            t0 = time.perf_counter()
            try:
                do_samples = self.util_samples and time.monotonic() >= next_samples
                if do_samples:
                    next_samples = time.monotonic() + self.samples_every_s
                self.sample_slow_once(util_samples=do_samples)
            except Exception as exc:  # never let the thread die silently
                self.warn_once(f"slow:{type(exc).__name__}", f"NVML sampler (slow metrics) failed: {exc}")
            dt = time.perf_counter() - t0
            self.slow_cost_s += dt
            self.slow_samples += 1
            if self._stop.wait(max(0.0, period - dt)):
                break

    def sample_slow_once(self, util_samples: bool = True) -> None:
        """One round of the slow metrics (and, with `util_samples`, the driver's sample buffer) in the calling
        thread; their values go into the next fast row of each GPU (tests, or a sampler without threads)."""
        for g in self._gpus:
            if g.lost:
                continue
            try:
                self._slow(g)
                if util_samples and self.util_samples:
                    self._samples(g)
            except _GpuLost as exc:
                self._mark_lost(g, str(exc) or "GPU is lost")

    def _slow(self, g: _Gpu) -> None:
        nv = self._nvml
        out: dict[str, float] = {}
        tx = self._q(g, "pcie_tx", "nvmlDeviceGetPcieThroughput", getattr(nv, "NVML_PCIE_UTIL_TX_BYTES", 0))
        if tx is not None:
            out["pcie_tx_mib_s"] = tx * 1000.0 / MIB  # NVML reports KB/s
        rx = self._q(g, "pcie_rx", "nvmlDeviceGetPcieThroughput", getattr(nv, "NVML_PCIE_UTIL_RX_BYTES", 1))
        if rx is not None:
            out["pcie_rx_mib_s"] = rx * 1000.0 / MIB
        gen = self._q(g, "pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration")
        if gen is not None:
            out["pcie_link_gen"] = float(gen)
        width = self._q(g, "pcie_width", "nvmlDeviceGetCurrPcieLinkWidth")
        if width is not None:
            out["pcie_link_width"] = float(width)
        replay = self._q(g, "pcie_replay", "nvmlDeviceGetPcieReplayCounter")
        if replay is not None:
            out["pcie_replay_count"] = float(replay)
        limit = self._q(g, "power_limit", "nvmlDeviceGetEnforcedPowerLimit")
        if limit is not None:
            out["power_limit_w"] = limit / 1000.0
        out.update(self._nvlink(g))
        if out:
            with self._pending_lock:
                g.pending = {**g.pending, **out}

    def _nvlink(self, g: _Gpu) -> dict[str, float]:
        """NVLink data TX/RX in MiB/s from the cumulative per-link KiB counters (field values 138/139)."""
        if "nvlink" in g.off:
            return {}
        if g.nvlink_links is None:
            vals = self._q(g, "nvlink", "nvmlDeviceGetFieldValues", [FIELD_NVLINK_LINK_COUNT])
            if vals is None:
                return {}
            n = _field(vals[0]) if len(vals) else None
            if not n:
                g.off.add("nvlink")  # no NVLink on this GPU
                return {}
            g.nvlink_links = int(n)
        ids = [(f, link) for f in (FIELD_NVLINK_DATA_TX, FIELD_NVLINK_DATA_RX) for link in range(g.nvlink_links)]
        vals = self._q(g, "nvlink", "nvmlDeviceGetFieldValues", ids)
        if vals is None:
            return {}
        tx = rx = 0.0
        ok = 0
        stamp_us = 0
        for fv in vals:
            x = _field(fv)
            if x is None:
                continue
            ok += 1
            stamp_us = max(stamp_us, int(getattr(fv, "timestamp", 0) or 0))
            if fv.fieldId == FIELD_NVLINK_DATA_TX:
                tx += x
            else:
                rx += x
        if not ok:
            g.off.add("nvlink")
            return {}
        # The rate divides by the time between the counters' own NVML timestamps (µs), not by when this thread got
        # to read them: a sampler delayed by a busy host would otherwise report a burst that never happened.
        now = stamp_us / 1e6 if stamp_us else time.monotonic()
        last, g.nvlink_last = g.nvlink_last, (now, tx, rx)
        if last is None or now <= last[0] or tx < last[1] or rx < last[2]:
            return {}
        dt = now - last[0]
        return {"nvlink_tx_mib_s": (tx - last[1]) / 1024.0 / dt, "nvlink_rx_mib_s": (rx - last[2]) / 1024.0 / dt}

    def _samples(self, g: _Gpu) -> None:
        """New entries of the driver's utilization sample buffer, deduplicated by timestamp (µs)."""
        nv = self._nvml
        if "samples" in g.off:
            return
        fn = getattr(nv, "nvmlDeviceGetSamples", None)
        if fn is None:
            g.off.add("samples")
            return
        try:
            _vtype, samples = fn(g.handle, nv.NVML_GPU_UTILIZATION_SAMPLES, g.samples_ts)
        except Exception as exc:
            if type(exc).__name__ == "NVMLError_NotFound":  # no sample newer than samples_ts
                return
            self._metric_failed(g, "samples", exc)
            return
        newest = g.samples_ts
        for s in samples:
            ts = int(s.timeStamp)
            if ts <= g.samples_ts:
                continue
            newest = max(newest, ts)
            v = [math.nan] * _N
            v[_IDX["util_pct"]] = float(s.sampleValue.uiVal)
            self._emit((ts * 1000, g.index, SAMPLES_SOURCE, v))
        g.samples_ts = newest

    # ------------------------------------------------------------------ output
    def drain_events(self) -> list[tuple[int, int, str, str]]:
        """Remove and return GPU events (time_ns, gpu, kind, detail), e.g. kind "gpu_lost"."""
        out, self.gpu_events = self.gpu_events, []
        return out

    def processes(self) -> list[dict[str, Any]]:
        """The compute processes on the sampled GPUs (nvmlDeviceGetComputeRunningProcesses), one dict each: gpu,
        pid, gpu_mem_mib (NaN where the driver hides it), user and command (psutil; "?" for a process this
        host's view cannot see, e.g. in another container). Never raises: a GPU that does not support the call,
        or is lost, lists none."""
        rows = []
        for g in self._gpus:
            if g.lost or g.handle is None:
                continue
            try:
                got = self._q(g, "processes", "nvmlDeviceGetComputeRunningProcesses") or []
            except _GpuLost:
                continue
            for proc in got:
                mem = getattr(proc, "usedGpuMemory", None)
                pid = int(getattr(proc, "pid", -1))
                rows.append({"gpu": g.index, "pid": pid, "gpu_mem_mib": mem / MIB if mem is not None else math.nan,
                             **process_owner(pid)})
        return rows

    def mean_util(self) -> float:
        """Mean of the latest utilization.gpu over GPUs that report it (NaN when none): the live trigger signal."""
        vals = [g.latest_util for g in self._gpus if not math.isnan(g.latest_util)]
        return sum(vals) / len(vals) if vals else math.nan

    def to_frame(self, rows: list[tuple]) -> Any:
        """A schema.telemetry_frame from drained rows (interval_s = 1 / hz)."""
        if not rows:
            return schema.telemetry_frame(interval_s=1.0 / self.hz)
        t, gpu, source, values = zip(*rows, strict=True)
        data: dict[str, Any] = {"time": list(t), "host": self.host, "gpu": list(gpu), "source": list(source)}
        cols = list(zip(*values, strict=True))
        for name, col in zip(schema.TELEMETRY_METRICS, cols, strict=True):
            data[name] = list(col)
        return schema.telemetry_frame(data, interval_s=1.0 / self.hz)

    def stats(self) -> dict[str, Any]:
        out = super().stats()
        out.update({
            "gpus": {g.index: self.names.get(g.index, "") for g in self._gpus},
            "lost": [g.index for g in self._gpus if g.lost],
            "pcie_max": {i: {"gen": gen, "width": w} for i, (gen, w) in self.pcie_max.items()},
            "unsupported": {g.index: sorted(g.off) for g in self._gpus if g.off},
            "slow_hz": self.slow_hz,
            "slow_mean_cost_us": round(1e6 * self.slow_cost_s / self.slow_samples, 1) if self.slow_samples else None,
        })
        return out


def process_owner(pid: int, width: int = 120) -> dict[str, str]:
    """{"user", "command"} of a process (psutil; the command line cut to `width` characters), "?" each where the
    process is gone or not visible from here."""
    try:
        import psutil

        proc = psutil.Process(pid)
        with proc.oneshot():
            user = proc.username()
            command = " ".join(" ".join(proc.cmdline()).split()) or proc.name()  # one line
    except Exception:  # psutil missing, NoSuchProcess, AccessDenied, ZombieProcess
        return {"user": "?", "command": "?"}
    return {"user": user, "command": command if len(command) <= width else command[: width - 1] + "…"}


def _field(fv: Any) -> float | None:
    """The numeric value of an nvmlFieldValue_t, or None when NVML returned an error for it."""
    if getattr(fv, "nvmlReturn", 0) != 0:
        return None
    t = getattr(fv, "valueType", 3)
    val = fv.value
    attr = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}.get(t, "ullVal")
    return float(getattr(val, attr))
