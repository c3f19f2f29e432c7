"""A fake `pynvml` module with named scenarios, for testing the NVML sampler without a GPU.

    from playbook.probes import fake_nvml
    nv = fake_nvml.scenario("gpu_lost_mid_run", gpus=4, lost_gpu=1, lost_after=20)
    sampler = NvmlSampler("node1", hz=50, nvml=nv)

It raises the REAL pynvml exception classes (pynvml.NVMLError_NotSupported, NVMLError_GpuIsLost, ...) and returns
the real ctypes structures (c_nvmlUtilization_t, c_nvmlMemory_t, c_nvmlSample_t, c_nvmlFieldValue_t), so the
sampler's `except` clauses and field decoding run as they would against a driver. Values are deterministic
functions of the time since nvmlInit (so rates and sample timestamps behave like the real counters).

Scenarios (SCENARIOS): healthy, gpu_lost_mid_run, unsupported_fields, no_driver, driver_not_loaded, throttled,
old_bindings, oscillating, pcie_degraded, nvlink_saturated, flaky, data_stall (every GPU idle together 40% of each
`period_s`, power following the work), pipeline (each GPU idle 25% of the period, stage k's idle time lagging k/gpus of
a period: pipeline bubbles). In every scenario each GPU runs one compute process, the one that made the fake
(nvmlDeviceGetComputeRunningProcesses; GpuSpec.processes). `nv.calls[gpu]` counts the calls per GPU.
"""

from __future__ import annotations

import math
import os
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pynvml as _real

MIB = 1024 * 1024

# NVML metric-function names, for GpuSpec.unsupported
POWER = "nvmlDeviceGetPowerUsage"
CLOCKS = "nvmlDeviceGetClockInfo"
SAMPLES = "nvmlDeviceGetSamples"
THROTTLE = "nvmlDeviceGetCurrentClocksEventReasons"
THROTTLE_OLD = "nvmlDeviceGetCurrentClocksThrottleReasons"
PCIE_TP = "nvmlDeviceGetPcieThroughput"
FIELDS = "nvmlDeviceGetFieldValues"
POWER_LIMIT = "nvmlDeviceGetEnforcedPowerLimit"
TEMP = "nvmlDeviceGetTemperature"
REPLAY = "nvmlDeviceGetPcieReplayCounter"
PROCESSES = "nvmlDeviceGetComputeRunningProcesses"


@dataclass
class GpuSpec:
    """One fake GPU. util: % as a function of seconds since init. Rates in MiB/s; replay_per_s: replays/s."""

    name: str = "NVIDIA H100 80GB HBM3"
    util: Callable[[float], float] = lambda t: 97.0 + 2.0 * math.sin(t)
    mem_util: float = 45.0
    mem_total_mib: float = 81559.0
    mem_used_mib: float = 61000.0
    power_w: float = 650.0
    power_limit_w: float = 700.0
    sm_clock_mhz: float = 1980.0
    mem_clock_mhz: float = 2619.0
    temp_c: float = 62.0
    throttle: int = 0
    pcie_gen: int = 5
    pcie_width: int = 16
    pcie_tx_mib_s: float = 900.0
    pcie_rx_mib_s: float = 2500.0
    replay_per_s: float = 0.0
    nvlink_links: int = 18
    nvlink_tx_mib_s: float = 120_000.0
    nvlink_rx_mib_s: float = 120_000.0
    unsupported: set[str] = field(default_factory=set)
    lost_after: int | None = None  # GpuIsLost from this many calls on
    flaky: dict[str, int] = field(default_factory=dict)  # function name -> fail every k-th call (NVMLError_Unknown)
    power_follows_util: bool = False  # power = idle + (power_w - idle) * util / 100, as a real board draws
    idle_power_w: float = 90.0
    processes: list[tuple[int, float | None]] = field(default_factory=list)  # (pid, GPU MiB or None: hidden)


class _Handle:
    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


class FakeNvml(types.ModuleType):
    """A module object standing in for pynvml (constants and exception classes copied from the real one)."""

    def __init__(self, gpus: list[GpuSpec], init_error: type[Exception] | None = None, name: str = "healthy",
                 old_bindings: bool = False, sample_period_s: float = 1 / 6, driver: str = "550.54.15"):
        super().__init__(f"fake_pynvml[{name}]")
        for attr in dir(_real):
            if attr.startswith(("NVML_", "NVMLError")) or attr.startswith("c_nvml"):
                setattr(self, attr, getattr(_real, attr))
        self.scenario = name
        self.gpus = gpus
        self.init_error = init_error
        self.sample_period_s = sample_period_s
        self.driver = driver
        self.t0: float | None = None
        self.inits = 0
        self.calls: dict[int, int] = {i: 0 for i in range(len(gpus))}
        self.fn_calls: dict[str, int] = {}
        if not old_bindings:  # pynvml before 12.535 only has the ...ThrottleReasons name
            self.nvmlDeviceGetCurrentClocksEventReasons = self._clocks_event_reasons

    # ------------------------------------------------------------ library
    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error()
        self.inits += 1
        if self.t0 is None:
            self.t0 = time.time()

    def nvmlShutdown(self) -> None:
        if self.inits <= 0:
            raise _real.NVMLError_Uninitialized()
        self.inits -= 1

    def _check_init(self) -> None:
        if self.inits <= 0:
            raise _real.NVMLError_Uninitialized()

    def nvmlSystemGetDriverVersion(self) -> str:
        self._check_init()
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._check_init()
        return 12040

    def nvmlDeviceGetCount(self) -> int:
        self._check_init()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> _Handle:
        self._check_init()
        if not 0 <= i < len(self.gpus):
            raise _real.NVMLError_InvalidArgument()
        return _Handle(i)

    # ------------------------------------------------------------ per-device
    def _gpu(self, h: _Handle, fn: str) -> GpuSpec:
        self._check_init()
        g = self.gpus[h.index]
        self.calls[h.index] += 1
        self.fn_calls[fn] = self.fn_calls.get(fn, 0) + 1
        if g.lost_after is not None and self.calls[h.index] > g.lost_after:
            raise _real.NVMLError_GpuIsLost()
        if fn in g.unsupported:
            raise _real.NVMLError_NotSupported()
        k = g.flaky.get(fn)
        if k and self.fn_calls[fn] % k == 0:
            raise _real.NVMLError_Unknown()
        return g

    def _t(self) -> float:
        return time.time() - (self.t0 or time.time())

    def nvmlDeviceGetName(self, h: _Handle) -> str:
        return self._gpu(h, "nvmlDeviceGetName").name

    def nvmlDeviceGetUUID(self, h: _Handle) -> str:
        self._gpu(h, "nvmlDeviceGetUUID")
        return f"GPU-fake-{h.index:04d}"

    def nvmlDeviceGetUtilizationRates(self, h: _Handle) -> Any:
        g = self._gpu(h, "nvmlDeviceGetUtilizationRates")
        u = _real.c_nvmlUtilization_t()
        u.gpu = int(round(min(100.0, max(0.0, g.util(self._t())))))
        u.memory = int(g.mem_util)
        return u

    def nvmlDeviceGetMemoryInfo(self, h: _Handle, version: Any = None) -> Any:
        g = self._gpu(h, "nvmlDeviceGetMemoryInfo")
        m = _real.c_nvmlMemory_t()
        m.total, m.used = int(g.mem_total_mib * MIB), int(g.mem_used_mib * MIB)
        m.free = m.total - m.used
        return m

    def nvmlDeviceGetPowerUsage(self, h: _Handle) -> int:
        g = self._gpu(h, POWER)
        if not g.power_follows_util:
            return int(g.power_w * 1000)
        busy = min(100.0, max(0.0, g.util(self._t()))) / 100.0
        return int((g.idle_power_w + (g.power_w - g.idle_power_w) * busy) * 1000)

    def nvmlDeviceGetEnforcedPowerLimit(self, h: _Handle) -> int:
        return int(self._gpu(h, POWER_LIMIT).power_limit_w * 1000)

    def nvmlDeviceGetClockInfo(self, h: _Handle, kind: int) -> int:
        g = self._gpu(h, CLOCKS)
        return int(g.sm_clock_mhz if kind == _real.NVML_CLOCK_SM else g.mem_clock_mhz)

    def nvmlDeviceGetTemperature(self, h: _Handle, sensor: int) -> int:
        return int(self._gpu(h, TEMP).temp_c)

    def _clocks_event_reasons(self, h: _Handle) -> int:
        return self._gpu(h, THROTTLE).throttle

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: _Handle) -> int:
        return self._gpu(h, THROTTLE_OLD).throttle

    def nvmlDeviceGetPcieThroughput(self, h: _Handle, counter: int) -> int:
        g = self._gpu(h, PCIE_TP)
        mib_s = g.pcie_tx_mib_s if counter == _real.NVML_PCIE_UTIL_TX_BYTES else g.pcie_rx_mib_s
        return int(mib_s * MIB / 1000)  # KB/s

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: _Handle) -> int:
        return self._gpu(h, "nvmlDeviceGetCurrPcieLinkGeneration").pcie_gen

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: _Handle) -> int:
        return self._gpu(h, "nvmlDeviceGetCurrPcieLinkWidth").pcie_width

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: _Handle) -> int:
        self._gpu(h, "nvmlDeviceGetMaxPcieLinkGeneration")
        return 5

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: _Handle) -> int:
        self._gpu(h, "nvmlDeviceGetMaxPcieLinkWidth")
        return 16

    def nvmlDeviceGetPcieReplayCounter(self, h: _Handle) -> int:
        g = self._gpu(h, REPLAY)
        return int(g.replay_per_s * self._t())

    def nvmlDeviceGetComputeRunningProcesses(self, h: _Handle) -> list[Any]:
        """The compute processes on the GPU, as pynvml returns them: objects with .pid and .usedGpuMemory
        (bytes; None where the driver cannot tell, e.g. WDDM or a MIG instance seen from outside)."""
        g = self._gpu(h, PROCESSES)
        return [types.SimpleNamespace(pid=pid, usedGpuMemory=None if mib is None else int(mib * MIB),
                                      gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
                for pid, mib in g.processes]

    def nvmlDeviceGetSamples(self, h: _Handle, kind: int, last_ts: int) -> tuple[int, list[Any]]:
        g = self._gpu(h, SAMPLES)
        now = time.time()
        t0 = self.t0 or now
        n = int((now - t0) / self.sample_period_s)
        first = max(0, n - 100)  # the driver keeps a ring buffer of recent samples
        out = []
        for k in range(first, n + 1):
            ts = int((t0 + k * self.sample_period_s) * 1e6)
            if ts <= last_ts:
                continue
            s = _real.c_nvmlSample_t()
            s.timeStamp = ts
            s.sampleValue.uiVal = int(round(min(100.0, max(0.0, g.util(k * self.sample_period_s)))))
            out.append(s)
        if not out:
            raise _real.NVMLError_NotFound()
        return _real.NVML_VALUE_TYPE_UNSIGNED_INT, out

    def nvmlDeviceGetFieldValues(self, h: _Handle, field_ids: list[Any]) -> Any:
        g = self._gpu(h, FIELDS)
        arr = (_real.c_nvmlFieldValue_t * len(field_ids))()
        now = time.time()
        t = now - (self.t0 or now)  # one reading time for every field, as NVML stamps them
        for i, fid in enumerate(field_ids):
            fid, scope = fid if isinstance(fid, tuple) else (fid, 0)
            fv = arr[i]
            fv.fieldId, fv.scopeId = fid, scope
            fv.timestamp = int(now * 1e6)
            fv.valueType = _real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            if fid == _real.NVML_FI_DEV_NVLINK_LINK_COUNT:
                fv.valueType = _real.NVML_VALUE_TYPE_UNSIGNED_INT
                fv.value.uiVal = g.nvlink_links
            elif fid in (_real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, _real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX):
                if g.nvlink_links == 0 or scope >= g.nvlink_links:
                    fv.nvmlReturn = _real.NVML_ERROR_NOT_SUPPORTED
                    continue
                rate = g.nvlink_tx_mib_s if fid == _real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX else g.nvlink_rx_mib_s
                fv.value.ullVal = int(rate * 1024 / g.nvlink_links * t)  # KiB, cumulative, this link
            else:
                fv.nvmlReturn = _real.NVML_ERROR_NOT_SUPPORTED
        return arr


def _square(period_s: float, high: float = 100.0, low: float = 0.0, duty: float = 0.5) -> Callable[[float], float]:
    return lambda t: high if (t % period_s) < duty * period_s else low


SCENARIOS = ("healthy", "gpu_lost_mid_run", "unsupported_fields", "no_driver", "driver_not_loaded", "throttled",
             "old_bindings", "oscillating", "pcie_degraded", "nvlink_saturated", "flaky", "data_stall", "pipeline")


def scenario(name: str, gpus: int = 4, lost_gpu: int = 1, lost_after: int = 20, period_s: float = 0.5,
             bad_gpu: int = 0) -> FakeNvml:
    """A fake pynvml for a named scenario (see SCENARIOS and the module docstring).

    gpus: how many GPUs; lost_gpu/lost_after: which GPU raises GpuIsLost after how many calls on it;
    period_s: the square-wave period of "oscillating", "data_stall" and "pipeline"; bad_gpu: the GPU that is throttled / degraded / flaky.
    """
    # each fake GPU is held by the process that made the fake (so a process view can name its user and command)
    specs = [GpuSpec(processes=[(os.getpid(), GpuSpec.mem_used_mib)]) for _ in range(gpus)]
    if name == "healthy":
        return FakeNvml(specs, name=name)
    if name == "gpu_lost_mid_run":
        specs[lost_gpu].lost_after = lost_after
        return FakeNvml(specs, name=name)
    if name == "unsupported_fields":  # e.g. a consumer or virtual GPU: utilization and memory only
        for s in specs:
            s.unsupported = {POWER, POWER_LIMIT, CLOCKS, SAMPLES, THROTTLE, THROTTLE_OLD, PCIE_TP, FIELDS, REPLAY,
                             PROCESSES}
        return FakeNvml(specs, name=name)
    if name == "no_driver":
        return FakeNvml(specs, init_error=_real.NVMLError_LibraryNotFound, name=name)
    if name == "driver_not_loaded":
        return FakeNvml(specs, init_error=_real.NVMLError_DriverNotLoaded, name=name)
    if name == "throttled":  # hardware slowdown + thermal on one GPU: lower clock, lower util
        g = specs[bad_gpu]
        g.throttle = 0x8 | 0x40
        g.sm_clock_mhz, g.temp_c, g.power_w = 1005.0, 91.0, 420.0
        return FakeNvml(specs, name=name)
    if name == "old_bindings":
        for s in specs:
            s.throttle = 0x4  # power cap at full load: normal
        return FakeNvml(specs, name=name, old_bindings=True)
    if name == "oscillating":  # the whole node idles half of every period (a data stall, say)
        for s in specs:
            s.util = _square(period_s)
        return FakeNvml(specs, name=name)
    if name == "data_stall":  # every GPU idles together for 40% of each period (input pipeline runs dry); power
        for s in specs:        # follows the work, so the drop is real, not a sampling artefact
            s.util, s.power_follows_util = _square(period_s, high=98.0, low=0.0, duty=0.6), True
        return FakeNvml(specs, name=name)
    if name == "pipeline":  # pipeline-parallel stages: each GPU busy 3/4 of the period, the stages' bubbles
        for k, s in enumerate(specs):  # staggered by 1/gpus of a period (stage k starts k micro-batches late)
            work = _square(period_s, high=98.0, low=0.0, duty=0.75)
            s.util = (lambda w, lag: lambda t: w(t - lag))(work, k * period_s / gpus)
            s.power_follows_util = True
        return FakeNvml(specs, name=name)
    if name == "pcie_degraded":  # one GPU's link retrained to gen3 x8 and replays keep rising
        g = specs[bad_gpu]
        g.pcie_gen, g.pcie_width, g.replay_per_s = 3, 8, 50.0
        return FakeNvml(specs, name=name)
    if name == "nvlink_saturated":  # NVLink at ~ its 450 GB/s-per-direction capacity (H100 SXM: 18 links)
        for s in specs:
            s.nvlink_tx_mib_s = s.nvlink_rx_mib_s = 420_000.0
        return FakeNvml(specs, name=name)
    if name == "flaky":  # one GPU's power reading fails every 3rd call with NVMLError_Unknown
        specs[bad_gpu].flaky = {POWER: 3}
        return FakeNvml(specs, name=name)
    raise ValueError(f"unknown fake NVML scenario {name!r}; known: {', '.join(SCENARIOS)}")
