"""The one data model: tidy tables with units in their column names.

Every reader and every probe produces these tables; every analysis consumes them.

telemetry  one row per (time, host, gpu) sample of a GPU counter source (nvidia-smi, dmon, DCGM, NVML probe).
           `time` is a UTC timestamp (datetime64[ns, UTC]); `host` a string; `gpu` the device index on that host. A GPU's identity is
           "host:gpu" (see `gpu_id`). Metric columns are float64, NaN where the source lacks the field:
             util_pct          utilization.gpu: % of the sample window in which *any* kernel ran (0-100)
             mem_util_pct      utilization.memory: % of the window the memory controller was busy (0-100)
             mem_used_mib      framebuffer memory used, MiB
             mem_total_mib     framebuffer memory total, MiB
             power_w           board power draw, W
             power_limit_w     enforced power limit, W
             power_default_limit_w  the board's default power limit (the limit it ships with), W: an enforced
                               limit below it is a cap someone set (nvidia-smi power.default_limit, -q Default
                               Power Limit, DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF)
             sm_clock_mhz      current SM clock, MHz
             mem_clock_mhz     current memory clock, MHz
             temp_c            GPU temperature, degrees C
             throttle_reasons  clock-event reason bitmask (NVML/nvidia-smi clocks_event_reasons.active); exact in
                               float64 up to 2**53. Bits: GpuIdle 0x1, AppClocks 0x2, SwPowerCap 0x4,
                               HwSlowdown 0x8, SyncBoost 0x10, SwThermal 0x20, HwThermal 0x40, HwPowerBrake 0x80
             sm_active         DCGM_FI_PROF_SM_ACTIVE, fraction of time at least one warp was resident (0-1)
             pcie_tx_mib_s     PCIe transmit throughput, MiB/s
             pcie_rx_mib_s     PCIe receive throughput, MiB/s
             pcie_link_gen     current PCIe link generation
             pcie_link_width   current PCIe link width (lanes)
             pcie_replay_count cumulative PCIe replay counter
             nvlink_tx_mib_s   NVLink transmit throughput summed over links, MiB/s
             nvlink_rx_mib_s   NVLink receive throughput summed over links, MiB/s
           plus `source` (the file or probe it came from). `attrs["interval_s"]` holds the median sampling
           interval in seconds.

steps      one row per (rank, step, phase): time (UTC start, NaT when only durations are known), host, rank, step,
           phase ("step" is the whole step; others: data, h2d, fwd, bwd, collective, optimizer, checkpoint, eval,
           log, ...), duration_s, tokens (per step, NaN when unknown), work (the step's stated token count, input
           size, sequence length or batch size — never a rate times the duration; NaN when unknown: step time may
           follow it), source.

events     one row per event: time (UTC), host, rank, step (-1 when unknown), kind (checkpoint, eval, recompile,
           gc, log, restart, gpu_error, xid, gpu_lost, profiler, ...), duration_s (NaN when instantaneous), detail (free text), source.

host       one row per (time, host) host-probe sample: cpu_pct (all cores, 0-100), cpu_max_core_pct,
           rss_mib (the observed process tree), read_mib_s, write_mib_s, net_rx_mib_s, net_tx_mib_s, source.

trace      (Kineto) one row per trace event per rank: rank, cat, name, ts_us (µs, trace clock), dur_us, pid, tid,
           stream (-1 for CPU rows), correlation (-1 when absent), bytes (NaN unless a memcpy), source.

ib         (probes/interconnect.py) one row per (time, host, device, port) of InfiniBand counters as rates:
           link_layer, state, phys_state, rate_gbps, width, tx_mib_s, rx_mib_s, util_pct (of rate_gbps / 8),
           xmit_wait_per_s, errors_per_s, the cumulative IB_ERROR_COLUMNS, source.

A `Bundle` carries the tables read from a set of inputs together with the warnings raised while reading them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

SCHEMA_VERSION = 1

TELEMETRY_METRICS: tuple[str, ...] = (
    "util_pct",
    "mem_util_pct",
    "mem_used_mib",
    "mem_total_mib",
    "power_w",
    "power_limit_w",
    "power_default_limit_w",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "temp_c",
    "throttle_reasons",
    "sm_active",
    "pcie_tx_mib_s",
    "pcie_rx_mib_s",
    "pcie_link_gen",
    "pcie_link_width",
    "pcie_replay_count",
    "nvlink_tx_mib_s",
    "nvlink_rx_mib_s",
)
TELEMETRY_COLUMNS: tuple[str, ...] = ("time", "host", "gpu", *TELEMETRY_METRICS, "source")

STEP_COLUMNS: tuple[str, ...] = ("time", "host", "rank", "step", "phase", "duration_s", "tokens", "work", "source")
EVENT_COLUMNS: tuple[str, ...] = ("time", "host", "rank", "step", "kind", "duration_s", "detail", "source")
HOST_METRICS: tuple[str, ...] = (
    "cpu_pct",
    "cpu_max_core_pct",
    "rss_mib",
    "read_mib_s",
    "write_mib_s",
    "net_rx_mib_s",
    "net_tx_mib_s",
)
# iowait_pct: the share of time the CPUs sat idle with disk I/O outstanding (vmstat wa, %iowait); swap_mib_s: memory
# swapped in plus out (vmstat si + so, sar -W, node_vmstat_pswpin/out, the probe's psutil.swap_memory), MiB/s;
# iowait comes from host tools only (readers/host_tools.py, node_exporter series), not the probe
HOST_COLUMNS: tuple[str, ...] = ("time", "host", *HOST_METRICS, "iowait_pct", "swap_mib_s", "source")
LATER_COLUMNS = frozenset({"iowait_pct", "swap_mib_s"})  # added after tables were first written: a table without them still reads
TRACE_COLUMNS: tuple[str, ...] = (
    "rank", "cat", "name", "ts_us", "dur_us", "pid", "tid", "stream", "correlation", "bytes", "source",
)
IB_COLUMNS: tuple[str, ...] = (
    "time", "host", "device", "port", "link_layer", "state", "phys_state", "rate_gbps", "width", "tx_mib_s",
    "rx_mib_s", "util_pct", "xmit_wait_per_s", "errors_per_s", "symbol_error", "link_downed",
    "link_error_recovery", "port_rcv_errors", "port_xmit_discards", "source",
)
IB_ERROR_COLUMNS: tuple[str, ...] = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
                                     "port_xmit_discards")  # cumulative counts: a rise means a failing link

# Clock-event (throttle) reason bits, from nvml.h (nvmlClocksEventReason*).
THROTTLE_BITS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal": 0x20,
    "hw_thermal": 0x40,
    "hw_power_brake": 0x80,
    "display_clocks": 0x100,
}
# Reasons that mean the GPU is slowed by something other than normal full-load power management.
THROTTLE_HARMFUL = (
    THROTTLE_BITS["hw_slowdown"] | THROTTLE_BITS["sw_thermal"] | THROTTLE_BITS["hw_thermal"]
    | THROTTLE_BITS["hw_power_brake"]
)

PHASES: tuple[str, ...] = ("data", "h2d", "fwd", "bwd", "collective", "optimizer", "checkpoint", "eval", "log")


DCGM_DIAG = "dcgm_diag:"  # Bundle.meta key prefix: a `dcgmi diag` file's test counts (readers/dcgm_diag.py)
# a text log's stated device efficiency (model TFLOP/s per device, MFU), per input: readers/lines.py, step_log/columns.py
STATED_EFFICIENCY = "stated_efficiency:"
# Megatron's StragglerDetector reports in a text log, per input: each figure's least and most across ranks
# (readers/rank_reports.StragglerReports)
STRAGGLER_REPORTS = "straggler_reports:"
# a serving engine's scheduler records in a text log, per input (readers/serving_metrics.ServingLines.summary)
SERVING = "serving:"
GPU_MODELS = "gpu_models"  # Bundle.meta key: {gpu_id: product name} where the input names each GPU's part
GPU_PROCESSES = "gpu_processes"  # Bundle.meta key: {gpu_id: [pid, ...]} where the input lists each GPU's processes
# who shares each GPU, per input (readers/nvidia_smi/processes.py, readers/gpustat_text.py): {"host", "processes":
# [{gpu, pid, user, type, name, mem_mib}], "mig": [{gpu, gi, ci, dev, mem_used_mib, mem_total_mib, sm}], "modes":
# {gpu: compute mode}}; analysis.gpu_sharing reads it
GPU_SHARING = "gpu_sharing:"
# the devices a job says it sees and computes on, per input (readers/device_lines.DeviceLines.summary): a trainer's
# accelerator summary, the devices it shards batches over, each task's `nvidia-smi -L`; analysis.device_use reads it
DEVICE_USE = "device_use:"
RECORD_UNITS = "record_units"  # Bundle.meta key: {source: "epoch"} where a step reader's rows are epochs, not steps
EPOCH_STEPS = "epoch_steps"  # Bundle.meta key: {source: N} where a step log states its epochs' N steps (`[i/N]`)


def record_unit(bundle: Bundle) -> str:
    """What one row of `bundle.steps` stands for: "epoch" when every source of its rows logs epochs (a per-epoch
    history: Ultralytics' results.csv, fastai's CSVLogger, epoch-time lines), else "step"."""
    units = bundle.meta.get(RECORD_UNITS) or {}
    if not units or not len(bundle.steps):
        return "step"
    sources = {str(s) for s in bundle.steps["source"].unique()}  # the distinct sources, not a text per row
    return "epoch" if sources and all(units.get(s) == "epoch" for s in sources) else "step"


def gpu_id(host: str, gpu: int) -> str:
    """The identity of a physical GPU: "host:index"."""
    return f"{host}:{int(gpu)}"


def throttle_names(mask: float) -> list[str]:
    """Names of the clock-event reason bits set in `mask` (NaN → [])."""
    if mask is None or (isinstance(mask, float) and np.isnan(mask)):
        return []
    m = int(mask)
    return [name for name, bit in THROTTLE_BITS.items() if m & bit]


def _frame(columns: tuple[str, ...], data: dict[str, Any] | None, strings: tuple[str, ...],
           ints: tuple[str, ...], times: tuple[str, ...], owned: bool = False) -> pd.DataFrame:
    """Build a frame with exactly `columns`, coercing dtypes; missing columns are filled with NaN/NaT/"".
    Columns that already have their dtype (int64/float64 arrays, string Series without NA) are taken as they are.
    `owned`: the caller gives its arrays away, so the frame holds them without a copy and without consolidating
    them into 2-D blocks (each a copy: 15 ms of a 123k-row Kineto trace's 285 ms read)."""
    if not data:
        return _empty_frame(columns, strings, ints, times)
    n = len(next(iter(data.values())))
    out: dict[str, Any] = {}
    for col in columns:
        if col in data:
            values = data[col]
        elif col in times:
            values = pd.NaT
        elif col in strings:
            values = ""
        elif col in ints:
            values = -1
        else:
            values = np.nan
        out[col] = _typed(col, values, n, strings, ints, times, owned)
    return pd.DataFrame(out, columns=list(columns), copy=not owned)


def _empty_frame(columns: tuple[str, ...], strings: tuple[str, ...], ints: tuple[str, ...],
                 times: tuple[str, ...]) -> pd.DataFrame:
    """`_frame` of no rows, built from empty arrays of each dtype (the coercions of `_typed` cost ~8 ms a table,
    paid by every Bundle; a Series a column ~4 ms more for a process's first Bundle)."""
    text = pd.array([], dtype="string")

    def empty(col: str) -> Any:
        if col == "source":
            return pd.Categorical([], categories=pd.Index([], dtype="str"))
        if col in times:
            return pd.DatetimeIndex([], dtype="datetime64[ns, UTC]")
        return text if col in strings else np.empty(0, dtype=np.int64 if col in ints else np.float64)
    return pd.DataFrame({col: empty(col) for col in columns}, columns=list(columns))


def _typed(col: str, values: Any, n: int, strings: tuple[str, ...], ints: tuple[str, ...],
           times: tuple[str, ...], owned: bool = False) -> pd.Series:
    """One column of `_frame` in its schema dtype (an array of that dtype taken without a copy when `owned`)."""
    if isinstance(values, np.ndarray) and col not in times and col not in strings and values.ndim == 1:
        if values.dtype == (np.int64 if col in ints else np.float64):
            return pd.Series(values, copy=not owned)
    if (isinstance(values, pd.Series) and col in strings and col != "source"
            and isinstance(values.dtype, pd.StringDtype) and not values.hasnans):
        return values.reset_index(drop=True)
    if col in times:
        s = pd.Series(values, index=range(n)) if np.isscalar(values) or values is pd.NaT else pd.Series(values)
        s = pd.to_datetime(s, utc=True).dt.as_unit("ns")
    elif col in strings:
        s = pd.Series(values, index=range(n)) if np.isscalar(values) else pd.Series(values)
        s = s.astype("string").fillna("") if col != "source" else s.astype("category")
    elif col in ints:
        s = pd.Series(values, index=range(n)) if np.isscalar(values) else pd.Series(values)
        s = pd.to_numeric(s, errors="coerce").fillna(-1).astype("int64")
    else:
        s = pd.Series(values, index=range(n)) if np.isscalar(values) else pd.Series(values)
        s = pd.to_numeric(s, errors="coerce").astype("float64")
    return s.reset_index(drop=True)


def telemetry_frame(data: dict[str, Any] | None = None, interval_s: float | None = None) -> pd.DataFrame:
    """A telemetry table from column arrays (any subset of TELEMETRY_COLUMNS), sorted by host, gpu, time."""
    df = _frame(TELEMETRY_COLUMNS, data, strings=("host", "source"), ints=("gpu",), times=("time",))
    df = df.sort_values(["host", "gpu", "time"], kind="stable").reset_index(drop=True)
    df.attrs["interval_s"] = interval_s if interval_s is not None else median_interval_s(df)
    return df


def steps_frame(data: dict[str, Any] | None = None) -> pd.DataFrame:
    """A steps table from column arrays (any subset of STEP_COLUMNS)."""
    return _frame(STEP_COLUMNS, data, strings=("host", "phase", "source"), ints=("rank", "step"), times=("time",))


def events_frame(data: dict[str, Any] | None = None) -> pd.DataFrame:
    """An events table from column arrays (any subset of EVENT_COLUMNS)."""
    return _frame(EVENT_COLUMNS, data, strings=("host", "kind", "detail", "source"), ints=("rank", "step"),
                  times=("time",))


def host_frame(data: dict[str, Any] | None = None) -> pd.DataFrame:
    """A host-probe table from column arrays (any subset of HOST_COLUMNS)."""
    return _frame(HOST_COLUMNS, data, strings=("host", "source"), ints=(), times=("time",))


def trace_frame(data: dict[str, Any] | None = None, owned: bool = False) -> pd.DataFrame:
    """A Kineto trace table from column arrays (any subset of TRACE_COLUMNS); `owned`: the arrays are given away
    (held without a copy, see _frame)."""
    return _frame(TRACE_COLUMNS, data, strings=("cat", "name", "source"),
                  ints=("rank", "pid", "tid", "stream", "correlation"), times=(), owned=owned)


def median_interval_s(telemetry: pd.DataFrame) -> float:
    """Median time between consecutive samples of the same GPU, in seconds (NaN with < 2 samples)."""
    if len(telemetry) < 2:
        return float("nan")
    t = telemetry["time"].astype("int64").to_numpy()
    host = pd.factorize(telemetry["host"])[0].astype(np.int64)  # numeric keys: 7x the `host:gpu` text keys at 14.7 M rows
    gpu = pd.factorize(telemetry["gpu"])[0].astype(np.int64)
    key = host * (int(gpu.max()) + 1) + gpu
    order = np.lexsort((t, key))
    t, key = t[order], key[order]
    dt = np.diff(t)
    dt = dt[(key[1:] == key[:-1]) & (dt > 0)]
    return float(np.median(dt) / 1e9) if len(dt) else float("nan")


@cache
def _empty_template(builder) -> pd.DataFrame:
    return builder()


def _empty(builder):
    """A default_factory returning an empty table of `builder`'s schema, cheaply (copy-on-write copies)."""
    return lambda: _empty_template(builder).copy(deep=False)


empty_telemetry = _empty(telemetry_frame)  # an empty telemetry table, cheaply (a copy of one built once)


@dataclass
class Bundle:
    """Tables read from a set of inputs, plus what went wrong while reading them.

    Any table may be empty. `warnings` are one-line, human-readable, each naming its file.
    `meta` holds per-input metadata (e.g. Kineto rank/world size, run-directory meta.json contents; GPU_MODELS:
    each GPU's product name where the input gives it; GPU_PROCESSES: the pids nvidia-smi pmon lists on each GPU).
    """

    inputs: list[str] = field(default_factory=list)
    telemetry: pd.DataFrame = field(default_factory=empty_telemetry)
    steps: pd.DataFrame = field(default_factory=_empty(steps_frame))
    events: pd.DataFrame = field(default_factory=_empty(events_frame))
    host: pd.DataFrame = field(default_factory=_empty(host_frame))
    trace: pd.DataFrame = field(default_factory=_empty(trace_frame))
    nccl: pd.DataFrame = field(default_factory=pd.DataFrame)
    ib: pd.DataFrame = field(default_factory=pd.DataFrame)
    warnings: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    TABLES = ("telemetry", "steps", "events", "host", "trace", "nccl", "ib")

    def extend(self, other: Bundle) -> Bundle:
        """Append `other`'s rows, warnings and metadata to this bundle (in place) and return it."""
        return self.extend_all([other])

    def extend_all(self, others: list[Bundle]) -> Bundle:
        """Append many bundles at once (in place): each table is concatenated (and sorted) once, so reading N
        files is linear in N."""
        seen = set(self.inputs)
        for other in others:
            for i in other.inputs:
                if i not in seen:
                    seen.add(i)
                    self.inputs.append(i)
        for name in self.TABLES:
            frames = [t for t in [getattr(self, name)] + [getattr(o, name) for o in others] if len(t)]
            if not frames:
                continue
            if len(frames) == 1:
                setattr(self, name, frames[0])
                continue
            merged = pd.concat(frames, ignore_index=True)
            if "source" in merged:
                merged["source"] = merged["source"].astype("category")
            if name == "telemetry":
                merged = merged.sort_values(["host", "gpu", "time"], kind="stable").reset_index(drop=True)
                merged.attrs["interval_s"] = median_interval_s(merged)
            setattr(self, name, merged)
        for other in others:
            self.warnings += other.warnings
            for key, value in other.meta.items():  # per-input sections (e.g. meta["kineto"][rank]) merge one deep
                mine = self.meta.get(key)
                self.meta[key] = {**mine, **value} if isinstance(mine, dict) and isinstance(value, dict) else value
        return self

    # meta sections of readers whose output is a summary, not table rows (readers/nsys.py, flight_recorder.py;
    # "environment:": facts about the machine, readers/topo_matrix.py and lspci.py)
    SUMMARY_META_PREFIXES = ("nsys:", "flight_recorder:", "profiler_table:", "environment:", DCGM_DIAG,
                             "nccl_tests:", "job_usage:", "container_limits:", STRAGGLER_REPORTS, SERVING,
                             GPU_SHARING, DEVICE_USE)

    def is_empty(self) -> bool:
        """True when no table holds a row and no reader left a summary in meta: nothing to analyse."""
        return (all(len(getattr(self, name)) == 0 for name in self.TABLES)
                and not any(str(key).startswith(self.SUMMARY_META_PREFIXES) for key in self.meta))


def meta_sections(meta: dict[str, Any] | None, prefix: str) -> list[tuple[str, dict]]:
    """(input, section) of each per-input section of a bundle's `meta`: keys `prefix` + the input's path whose value
    is a dict (a summary reader's output: nsys reports, flight-recorder dumps, job usage figures ...), in meta order."""
    return [(key[len(prefix):], value) for key, value in (meta or {}).items()
            if isinstance(key, str) and key.startswith(prefix) and isinstance(value, dict)]


class SkipCounter:
    """Counts rows a reader had to skip and keeps the first few reasons, for one warning line per file.

    >>> sk = SkipCounter("gpu.csv"); sk.skip(17, "bad number 'x'"); sk.warning(rows_read=99)
    "gpu.csv: skipped 1 of 100 rows (line 17: bad number 'x')"
    """

    def __init__(self, path: str, keep: int = 3, unit: str = "line"):
        self.path, self.keep, self.unit = str(path), keep, unit  # unit: what a number names ("record" in a binary)
        self.count = 0
        self.reasons: list[str] = []

    def skip(self, line: int | None, reason: str) -> None:
        """Record one skipped row; `line` is 1-based (None when unknown)."""
        self.count += 1
        if len(self.reasons) < self.keep:
            self.reasons.append(f"{self.unit} {line}: {reason}" if line is not None else reason)

    def warning(self, rows_read: int) -> str | None:
        """One warning line, or None when nothing was skipped."""
        if not self.count:
            return None
        more = f"; +{self.count - len(self.reasons)} more" if self.count > len(self.reasons) else ""
        return (f"{self.path}: skipped {self.count} of {rows_read + self.count} rows "
                f"({'; '.join(self.reasons)}{more})")


# What a GPU can report, in each telemetry column's unit; a value outside (or ±inf) is a damaged record.
# Generous: the largest GPUs today draw ~1.2 kW, hold ~288 GB and clock below 4 GHz.
TELEMETRY_RANGES: dict[str, tuple[float, float]] = {
    "util_pct": (0, 100), "mem_util_pct": (0, 100), "mem_used_mib": (0, 4e6), "mem_total_mib": (0, 4e6),
    "power_w": (0, 5000), "power_limit_w": (0, 5000), "power_default_limit_w": (0, 5000),
    "sm_clock_mhz": (0, 10_000), "mem_clock_mhz": (0, 10_000), "temp_c": (-40, 150),
    "throttle_reasons": (0, 2.0**53), "sm_active": (0, 1), "pcie_tx_mib_s": (0, 1e8), "pcie_rx_mib_s": (0, 1e8),
    "nvlink_tx_mib_s": (0, 1e8), "nvlink_rx_mib_s": (0, 1e8), "pcie_link_gen": (0, 16), "pcie_link_width": (0, 64),
    "pcie_replay_count": (0, 2.0**63),
}
MAX_STEP_S = 86_400.0  # a step (or phase) longer than a day is a damaged record


def check_physics(telemetry: pd.DataFrame, where: str) -> tuple[pd.DataFrame, list[str]]:
    """The telemetry table with values a GPU cannot report (outside TELEMETRY_RANGES, ±inf) set to NaN (the row's
    other fields kept) and rows repeating a GPU's timestamp merged into the first (its missing fields filled
    from the repeats), with one counted warning each naming `where`."""
    telemetry, warnings = _checked(telemetry, np.zeros(len(telemetry), dtype=np.int64), [where])
    return telemetry, warnings.get(where, [])


def check_physics_by_source(telemetry: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """check_physics of a table holding many files' rows, each file's warnings its own (source → warnings): the
    same values read as missing, repeats merged only within a file, and the same warnings as check_physics of each
    file's rows apart."""
    source = telemetry["source"]
    return _checked(telemetry, source.cat.codes.to_numpy(), [str(c) for c in source.cat.categories])


def _checked(telemetry: pd.DataFrame, codes: np.ndarray, names: list[str]) -> tuple[pd.DataFrame, dict]:
    """check_physics per group of rows (`codes` into `names`): name → its warnings."""
    bad: dict[int, list[str]] = {}
    totals = np.zeros(len(names), dtype=np.int64)
    for column in (c for c in TELEMETRY_RANGES if c in telemetry):  # column by column: no copy of the table
        v = telemetry[column].to_numpy(dtype=np.float64)
        out = _outside(v, *TELEMETRY_RANGES[column])
        if not out.any():
            continue
        idx = np.flatnonzero(out)
        per = np.bincount(codes[idx], minlength=len(names))
        which, at = np.unique(codes[idx], return_index=True)  # each group's first bad value, in row order
        for c, i in zip(which.tolist(), idx[at].tolist(), strict=True):
            bad.setdefault(c, []).append(f"{column} {int(per[c])} (e.g. {v[i]:.4g})")
        totals += per
        telemetry[column] = np.where(out, np.nan, v)
    warnings = {names[c]: [f"{names[c]}: {int(totals[c])} values outside what a GPU can report were read as "
                           f"missing, the rest of their rows kept ({', '.join(b)})"] for c, b in bad.items()}
    keys = ["host", "gpu", "time"]
    if not _may_repeat(telemetry):
        return telemetry, warnings
    keyed = telemetry[keys].assign(_group=codes)
    repeated = keyed.duplicated(keep=False).to_numpy()
    if not repeated.any():
        return telemetry, warnings
    groups = telemetry[repeated].assign(_group=codes[repeated]).groupby(["_group", *keys], sort=False, observed=True)
    merged = groups.first().reset_index()
    extra = np.bincount(codes[repeated], minlength=len(names)) - np.bincount(merged["_group"], minlength=len(names))
    interval = telemetry.attrs.get("interval_s")
    telemetry = pd.concat([telemetry[~repeated], merged[list(telemetry.columns)]], ignore_index=True)
    telemetry = telemetry_frame({c: telemetry[c].to_numpy() for c in telemetry.columns}, interval_s=interval)
    for c in np.flatnonzero(extra):
        warnings.setdefault(names[c], []).append(
            f"{names[c]}: {int(extra[c])} rows repeat the timestamp of an earlier row of the same GPU; merged into "
            "it (the first value of each field kept)")
    return telemetry, warnings


def _outside(values: np.ndarray, lo, hi) -> np.ndarray:
    """Mask of values (not NaN) outside [lo, hi] (±inf included), with a 1e-9 relative tolerance for unit scaling."""
    return ~np.isnan(values) & ~((values >= lo - 1e-9 * np.abs(lo)) & (values <= hi + 1e-9 * np.abs(hi)))


def _may_repeat(telemetry: pd.DataFrame) -> bool:
    """Whether two neighbouring rows share GPU and time (tables are sorted by host, gpu, time, so repeats are
    neighbours): a cheap test before the full duplicate search."""
    if len(telemetry) < 2:
        return False
    t = pd.DatetimeIndex(telemetry["time"]).asi8
    g = telemetry["gpu"].to_numpy()
    return bool(np.any((t[1:] == t[:-1]) & (g[1:] == g[:-1])))


def check_step_times(steps: pd.DataFrame, where: str) -> tuple[pd.DataFrame, list[str]]:
    """The steps table with durations outside [0, MAX_STEP_S] (or ±inf) set to NaN, with a counted warning."""
    if "duration_s" not in steps or not len(steps):
        return steps, []
    d = steps["duration_s"].to_numpy(dtype=np.float64)
    out = ~np.isnan(d) & ~((d >= 0) & (d <= MAX_STEP_S))
    n = int(np.count_nonzero(out))
    if not n:
        return steps, []
    steps["duration_s"] = np.where(out, np.nan, d)
    return steps, [f"{where}: {n} step durations below 0 s or beyond a day (e.g. {d[np.flatnonzero(out)[0]]:.4g} s) "
                   "were read as missing"]
