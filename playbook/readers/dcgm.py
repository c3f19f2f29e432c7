"""DCGM telemetry: dcgm-exporter's Prometheus text and Prometheus `query_range` JSON exports (`dcgmi dmon` text:
readers/dcgmi_dmon.py, with this module's field tags).

Prometheus text exposition (`curl host:9400/metrics`, one or many scrapes appended): lines
`DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-...",Hostname="node1",...} 97 [timestamp_ms]`; the name may also be a
`__name__` label (`promtool tsdb dump`: `{__name__="DCGM_FI_DEV_GPU_UTIL", gpu="0", ...} 97 1764615600000`).
Timestamps are integer milliseconds, or seconds in OpenMetrics (a text ending in `# EOF`, `promtool tsdb
dump-openmetrics`: `... 97 1764615600.000`) and wherever a timestamp has a fraction. The host comes from the
`Hostname` / `hostname` / `kubernetes_node` / `node` / `instance` label, else the file name; the GPU from the
`gpu` label (else the UUID's order of appearance). Without sample timestamps, a scrape ends when a series
repeats or a clock line begins the next (a pasted `while true; do date -u; curl ...; done`: readers.clock_line),
each scrape at its clock line's time; without clock lines, scrapes get synthetic times `interval_s` apart. Prometheus `query_range` exports (`resultType`
"matrix", or "vector") carry their own times (epoch seconds).

Fields kept (others are ignored): GPU_UTIL (203) util_pct, MEM_COPY_UTIL (204) mem_util_pct, FB_USED/FREE/TOTAL
(252/251/250, MiB), POWER_USAGE (155, W), ENFORCED_POWER_LIMIT, SM_CLOCK (100) / MEM_CLOCK (101) MHz, GPU_TEMP
(150, C), CLOCK_THROTTLE_REASONS / CLOCKS_EVENT_REASONS (112, bitmask), PROF_SM_ACTIVE (1002, 0-1),
PROF_GR_ENGINE_ACTIVE (1001, 0-1: the profiling counterpart of GPU_UTIL, read as util_pct x 100 when GPU_UTIL
is absent, as in exporters configured with profiling counters only),
PROF_PCIE_TX/RX_BYTES (1009/1010, bytes/s -> MiB/s), PROF_NVLINK_TX/RX_BYTES (1011/1012), PCIE_REPLAY_COUNTER
(202), PCIE_LINK_GEN/WIDTH (237/238). A change of DCGM_FI_DEV_XID_ERRORS to a non-zero value becomes an `xid`
event. Other Prometheus metric names are read by their words and unit suffix (playbook.readers.headers: Ray's
`ray_node_gpus_utilization{GpuIndex="0"}`, the OpenTelemetry NVML receiver's `nvml_gpu_utilization_ratio`), from
series whose labels name a GPU by an index label (any label name meaning a GPU index) or a UUID.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import clock_line, frames, headers, node_exporter, textio

FORMAT = "DCGM (dcgm-exporter / Prometheus / dcgmi dmon)"

MIB = 1 / 2**20
# metric name -> (schema column, factor, priority; lower priority wins when two metrics feed one column)
METRICS: dict[str, tuple[str, float, int]] = {
    "DCGM_FI_DEV_GPU_UTIL": ("util_pct", 1.0, 0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("mem_util_pct", 1.0, 0),
    "DCGM_FI_DEV_FB_USED": ("mem_used_mib", 1.0, 0),
    "DCGM_FI_DEV_FB_TOTAL": ("mem_total_mib", 1.0, 0),
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1.0, 0),
    "DCGM_FI_DEV_POWER_USAGE_INSTANT": ("power_w", 1.0, 1),
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": ("power_limit_w", 1.0, 0),
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": ("power_limit_w", 1.0, 1),
    "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": ("power_default_limit_w", 1.0, 0),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock_mhz", 1.0, 0),
    "DCGM_FI_DEV_MEM_CLOCK": ("mem_clock_mhz", 1.0, 0),
    "DCGM_FI_DEV_GPU_TEMP": ("temp_c", 1.0, 0),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": ("throttle_reasons", 1.0, 0),
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": ("throttle_reasons", 1.0, 0),
    "DCGM_FI_PROF_SM_ACTIVE": ("sm_active", 1.0, 0),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("util_pct", 100.0, 1),  # time a graphics / compute context was active
    "DCGM_FI_PROF_PCIE_TX_BYTES": ("pcie_tx_mib_s", MIB, 0),
    "DCGM_FI_PROF_PCIE_RX_BYTES": ("pcie_rx_mib_s", MIB, 0),
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": ("pcie_tx_mib_s", 1 / 1024, 1),  # KB/s
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": ("pcie_rx_mib_s", 1 / 1024, 1),
    "DCGM_FI_PROF_NVLINK_TX_BYTES": ("nvlink_tx_mib_s", MIB, 0),
    "DCGM_FI_PROF_NVLINK_RX_BYTES": ("nvlink_rx_mib_s", MIB, 0),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": ("pcie_replay_count", 1.0, 0),
    "DCGM_FI_DEV_PCIE_LINK_GEN": ("pcie_link_gen", 1.0, 0),
    "DCGM_FI_DEV_PCIE_LINK_WIDTH": ("pcie_link_width", 1.0, 0),
    # dcgm-exporter 1.x names
    "dcgm_gpu_utilization": ("util_pct", 1.0, 1),
    "dcgm_mem_copy_utilization": ("mem_util_pct", 1.0, 1),
    "dcgm_fb_used": ("mem_used_mib", 1.0, 1),
    "dcgm_power_usage": ("power_w", 1.0, 2),
    "dcgm_sm_clock": ("sm_clock_mhz", 1.0, 1),
    "dcgm_memory_clock": ("mem_clock_mhz", 1.0, 1),
    "dcgm_gpu_temp": ("temp_c", 1.0, 1),
    # nvidia_gpu_exporter (nvidia-smi based) names
    "nvidia_smi_utilization_gpu_ratio": ("util_pct", 100.0, 2),
    "nvidia_smi_utilization_memory_ratio": ("mem_util_pct", 100.0, 2),
    "nvidia_smi_memory_used_bytes": ("mem_used_mib", MIB, 2),
    "nvidia_smi_memory_total_bytes": ("mem_total_mib", MIB, 2),
    "nvidia_smi_power_draw_watts": ("power_w", 1.0, 3),
    "nvidia_smi_clocks_current_sm_clock_hz": ("sm_clock_mhz", 1e-6, 2),
    "nvidia_smi_temperature_gpu": ("temp_c", 1.0, 2),
}
FB_FREE = "DCGM_FI_DEV_FB_FREE"
XID = "DCGM_FI_DEV_XID_ERRORS"

# dcgmi dmon column tags and numeric field ids -> metric names above
DMON_TAGS: dict[str, str] = {
    "GPUTL": "DCGM_FI_DEV_GPU_UTIL", "MCUTL": "DCGM_FI_DEV_MEM_COPY_UTIL", "FBUSD": "DCGM_FI_DEV_FB_USED",
    "FBTTL": "DCGM_FI_DEV_FB_TOTAL", "FBFRE": FB_FREE, "POWER": "DCGM_FI_DEV_POWER_USAGE",
    "PMLMT": "DCGM_FI_DEV_POWER_MGMT_LIMIT", "PMDEF": "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF",
    "SMCLK": "DCGM_FI_DEV_SM_CLOCK", "MMCLK": "DCGM_FI_DEV_MEM_CLOCK",
    "TMPTR": "DCGM_FI_DEV_GPU_TEMP", "SMACT": "DCGM_FI_PROF_SM_ACTIVE",
    "GRACT": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "PCITX": "DCGM_FI_PROF_PCIE_TX_BYTES",
    "PCIRX": "DCGM_FI_PROF_PCIE_RX_BYTES", "NVLTX": "DCGM_FI_PROF_NVLINK_TX_BYTES",
    "NVLRX": "DCGM_FI_PROF_NVLINK_RX_BYTES",
    "203": "DCGM_FI_DEV_GPU_UTIL", "204": "DCGM_FI_DEV_MEM_COPY_UTIL", "252": "DCGM_FI_DEV_FB_USED",
    "250": "DCGM_FI_DEV_FB_TOTAL", "251": FB_FREE, "155": "DCGM_FI_DEV_POWER_USAGE",
    "164": "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "163": "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF",
    "100": "DCGM_FI_DEV_SM_CLOCK", "101": "DCGM_FI_DEV_MEM_CLOCK",
    "150": "DCGM_FI_DEV_GPU_TEMP", "112": "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "1002": "DCGM_FI_PROF_SM_ACTIVE",
    "1001": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "1009": "DCGM_FI_PROF_PCIE_TX_BYTES", "1010": "DCGM_FI_PROF_PCIE_RX_BYTES",
    "1011": "DCGM_FI_PROF_NVLINK_TX_BYTES", "1012": "DCGM_FI_PROF_NVLINK_RX_BYTES",
    "202": "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "237": "DCGM_FI_DEV_PCIE_LINK_GEN", "238": "DCGM_FI_DEV_PCIE_LINK_WIDTH",
    "230": XID,
}
HOST_LABELS = ("Hostname", "hostname", "kubernetes_node", "node", "nodename", "node_name", "instance", "host", "ip")
GPU_LABELS = ("gpu", "GPU", "index", "minor_number")
ID_LABELS = ("UUID", "uuid", "device", "pci_bus_id")
# dcgm-exporter labels a MIG instance's series with its parent GPU's `gpu` and UUID plus GPU_I_ID (and GPU_I_PROFILE):
# each instance is a device of its own, numbered MIG_BASE x (GPU + 1) + GPU_I_ID (GPU 0's instance 2 is 102), so
# plain GPUs (below MIG_BASE) and the instances of one GPU never share a number
MIG_BASE = 100


# ... and their DCGM_FI_DEV_*_UTIL reads 0 by design (dcgm-exporter#216, #430: not supported for MIG; NVIDIA points
# to DCGM_FI_PROF_GR_ENGINE_ACTIVE): no measurement
MIG_UNSUPPORTED = frozenset({"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL"})


def mig_warning(src: str) -> str:
    """The warning a source whose series named MIG instances (GPU_I_ID) gives: how their devices are numbered."""
    return (f"{src}: MIG instances read as devices of their own, numbered {MIG_BASE} x (GPU + 1) + GPU_I_ID "
            f"(GPU 0's instance 2 is {MIG_BASE + 2}); their DCGM_FI_DEV_GPU_UTIL / MEM_COPY_UTIL (0 on MIG by design) "
            "are not read, their utilization is DCGM_FI_PROF_GR_ENGINE_ACTIVE's")

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)?\s*(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+(?:\.\d*)?))?\s*$")
_EOF = re.compile(r"^# EOF[ \t]*\r?$", re.MULTILINE)  # the last line of an OpenMetrics exposition
_NAME_LABEL = re.compile(r'(?<![A-Za-z0-9_])__name__\s*=\s*"([A-Za-z_:][A-Za-z0-9_:]*)"')
_JSON_START = re.compile(r'^\s*(?:\[|\{\s*(?:"|\}))')  # a JSON array or object, not a `{label="v"} 1` sample
_LABEL = re.compile(r'(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')  # names start once


@functools.lru_cache(maxsize=4096)
def metric(name: str) -> tuple[str, float, int] | None:
    """(schema column, factor, priority) of a Prometheus metric: METRICS' entry, else what the name's words and
    unit suffix say (playbook.readers.headers: `ray_node_gpus_utilization` -> util_pct; the OpenTelemetry NVML
    receiver's `nvml_gpu_utilization_ratio` -> util_pct x 100), ranked after every named metric. Such a name is
    read only from series whose labels name a GPU (see `Samples.identity`)."""
    if name in METRICS:
        return METRICS[name]
    m = headers.meaning(name)
    if m.role not in schema.TELEMETRY_METRICS or m.gpu is not None or m.bit:
        return None
    return m.role, headers.factor(m, ()) if m.unit else 1.0, 10 + m.rank


def _known(name: str) -> bool:
    return metric(name) is not None or name in (FB_FREE, XID)


def _named(name: str) -> bool:
    """A metric this module knows by name (a DCGM field, its exporters' names), not only from its words."""
    return name in METRICS or name in (FB_FREE, XID)


def sniff(head: str) -> bool:
    """dcgm-exporter text (DCGM_FI_* samples) or a Prometheus API JSON answer."""
    if _JSON_START.match(head) and '"resultType"' in head and '"result"' in head:
        return True
    for line in head.split("\n")[:400]:
        line = line.strip()
        sample = _sample(line)
        if sample and (_named(sample[0]) or node_exporter.wanted(sample[0])
                       or (_known(sample[0]) and _gpu_labelled(sample[1]))):
            return True
    return False


def _sample(line: str) -> tuple[str, str | None, str, str | None] | None:
    """(metric name, label text, value, timestamp ms or None) of one exposition line; the name is the
    `__name__` label when it is not written before the braces (`promtool tsdb dump`); None for other lines."""
    m = _SAMPLE.match(line)
    if not m:
        return None
    name, label_text, value, ts = m.groups()
    if name is None:
        found = _NAME_LABEL.search(label_text or "")
        if found is None:
            return None
        name = found.group(1)
    return name, label_text, value, ts


def _gpu_labelled(label_text: str | None) -> bool:
    """True when a sample's labels name a GPU (an index label, or a UUID / device id)."""
    labels = _labels(label_text) or {}
    return headers.label_gpu(labels) is not None or any(labels.get(k) for k in ("UUID", "uuid"))


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read DCGM telemetry (any of the three forms) into a Bundle (telemetry; xid events); `tz`: the zone of a
    pasted loop's clock lines that name none."""
    path = Path(path)
    interval_s = textio.check_interval(interval_s)
    notes: list[str] = []  # lossy decoding, a truncated stream
    text = textio.read_text(path, warnings=notes)
    if _JSON_START.match(text[:4096]):
        bundle = _read_json(path, text, interval_s)
    else:
        bundle = _read_prometheus(path, text, interval_s, tz)
    bundle.warnings[:0] = notes
    return bundle


# --------------------------------------------------------------------------------------------------------------

def host_of(labels: dict[str, str], default: str) -> str:
    """A series' host: the first host label (HOST_LABELS), an `instance` without its port; else `default`."""
    host = next((labels[k] for k in HOST_LABELS if labels.get(k)), default)
    return re.sub(r":\d+$", "", host) if "instance" in labels and host == labels["instance"] else host


class Samples:
    """Long-form samples (time, host, gpu, metric, value) pivoted into a telemetry table at the end."""

    def __init__(self, src: str, default_host: str):
        self.src, self.default_host = src, default_host
        self.time: list[int] = []
        self.host: list[str] = []
        self.gpu: list[int] = []
        self.metric: list[str] = []
        self.value: list[float] = []
        self.uuid_order: dict[tuple[str, str], int] = {}
        self.mig = False  # a MIG instance was read (said in a warning)

    def identity(self, labels: dict[str, str], strict: bool = False) -> tuple[str, int] | None:
        """(host, gpu) of a series; `strict` (a metric known only from its words): only an index or UUID label
        names a GPU, not a `device` label (node_exporter's disks and NICs carry one). A MIG instance (GPU_I_ID) is
        its own device (MIG_BASE)."""
        found = self._device(labels, strict)
        instance = labels.get("GPU_I_ID", "")
        if found is None or not (instance.isdecimal() and len(instance) < 3 and 0 <= found[1] < MIG_BASE):
            return found
        self.mig = True
        return found[0], MIG_BASE * (found[1] + 1) + int(instance)

    def _device(self, labels: dict[str, str], strict: bool) -> tuple[str, int] | None:
        host = host_of(labels, self.default_host)
        for k in GPU_LABELS:
            v = labels.get(k, "")
            if v.isdecimal() and len(v) < 6:
                return host, int(v)
        gpu = headers.label_gpu(labels)  # any label whose name means a GPU index: GpuIndex, gpu_number, ...
        if gpu is not None:
            return host, gpu
        uid = next((labels[k] for k in (("UUID", "uuid") if strict else ID_LABELS) if labels.get(k)), None)
        if uid is None:
            return None
        key = (host, uid)
        if key not in self.uuid_order:
            self.uuid_order[key] = sum(1 for h, _ in self.uuid_order if h == host)
        return host, self.uuid_order[key]

    def add(self, t_ns: int, host: str, gpu: int, metric: str, value: float) -> None:
        self.time.append(t_ns)
        self.host.append(host)
        self.gpu.append(gpu)
        self.metric.append(metric)
        self.value.append(value)

    def bundle(self, interval_s: float | None) -> schema.Bundle:
        bundle = schema.Bundle(inputs=[self.src])
        if not self.time:
            return bundle
        long = pd.DataFrame({"time": self.time, "host": self.host, "gpu": self.gpu, "metric": self.metric,
                             "value": self.value})
        xid = long[long["metric"] == XID]
        if len(xid):
            bundle.events = xid_events(xid, self.src)
        wide = long[long["metric"] != XID].groupby(["time", "host", "gpu", "metric"], sort=False)["value"] \
            .last().unstack("metric").reset_index()
        gpu, gpu_fits = textio.int_array(wide["gpu"].tolist())
        time_ns, time_fits = textio.int_array(wide["time"].tolist())
        fits = gpu_fits & time_fits
        if not fits.all():
            bundle.warnings.append(f"{self.src}: skipped {int((~fits).sum())} samples whose gpu label or "
                                   "timestamp does not fit 64 bits")
            wide, gpu, time_ns = wide[fits], gpu[fits], time_ns[fits]
        if self.mig:
            bundle.warnings.append(mig_warning(self.src))
        columns: dict[str, np.ndarray] = {"time": time_ns, "gpu": gpu}
        columns.update(metric_columns({m: wide[m].to_numpy(np.float64) for m in wide.columns if _known(m)}, gpu))
        if len(wide):
            bundle.telemetry = frames.build_telemetry(columns, wide["host"].astype(str).to_numpy(), self.src,
                                                      interval_s)
        return bundle


def metric_columns(values: dict[str, np.ndarray], gpu: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Schema columns from DCGM metric arrays (metric name -> values, aligned rows): per column and row the metric of
    lowest priority in METRICS that has a value there, scaled by its factor; mem_used_mib from FB_TOTAL - FB_FREE
    when FB_USED is absent. Names METRICS does not map (XID, others) are ignored. `gpu`: the rows' device numbers,
    whose MIG instances (MIG_BASE) have no MIG_UNSUPPORTED values."""
    ranked: dict[str, list[tuple[int, str]]] = {}
    for name in values:
        found = metric(name)
        if found is not None:
            ranked.setdefault(found[0], []).append((found[2], name))
    mig = np.asarray(gpu) >= MIG_BASE if gpu is not None else None
    columns = {}
    for column, names in ranked.items():
        out = None
        for _prio, name in sorted(names):
            x = _scaled(values[name], metric(name)[1])
            if mig is not None and name in MIG_UNSUPPORTED and mig.any():
                x = np.where(mig, np.nan, x)
            out = x if out is None else np.where(np.isnan(out), x, out)
        columns[column] = out
    if "mem_used_mib" not in columns and FB_FREE in values and "mem_total_mib" in columns:
        columns["mem_used_mib"] = columns["mem_total_mib"] - np.asarray(values[FB_FREE], dtype=np.float64)
    return columns


def _scaled(values: np.ndarray, factor: float) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return values if factor == 1.0 else values * factor  # no copy of millions of rows for nothing


def xid_events(xid: pd.DataFrame, src: str) -> pd.DataFrame:
    """`xid` events from DCGM_FI_DEV_XID_ERRORS samples (columns time ns, host, gpu, value): one per change of
    the last-XID gauge to a new non-zero value."""
    rows = []
    for (host, gpu), g in xid.sort_values("time").groupby(["host", "gpu"], sort=True):
        prev = 0.0
        for t, v in zip(g["time"], g["value"], strict=True):
            if np.isfinite(v) and v != 0 and v != prev:
                rows.append({"time": pd.Timestamp(int(t), tz="UTC"), "host": host, "kind": "xid",
                             "detail": f"gpu {gpu}: XID {int(v)}", "source": src})
            prev = v if np.isfinite(v) else prev
    if not rows:
        return schema.events_frame()
    return schema.events_frame({k: [r[k] for r in rows] for k in rows[0]})


def _labels(text: str | None) -> dict[str, str] | None:
    if not text:
        return {}
    found = _LABEL.findall(text)
    if not found and text.strip():
        return None
    return {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in found}


def _read_prometheus(path: Path, text: str, interval_s: float | None, tz: str = "UTC") -> schema.Bundle:
    src = str(path)
    clocks: dict[int, int] = {}  # scrape -> ns UTC of the clock line a pasted loop printed before it
    samples = Samples(src, textio.host_from_path(path))
    skips = schema.SkipCounter(src)
    scrape = 0
    seconds = _EOF.search(text) is not None  # OpenMetrics: timestamps in seconds
    seen: set[tuple] = set()
    stamped = unstamped = 0
    synth: list[int] = []  # positions of samples without a timestamp (their time is the scrape number)
    other: set[str] = set()
    hosts = node_exporter.HostSeries(src)
    unstamped_hosts: list[tuple[int, tuple, int]] = []  # (line, sample, scrape): timed once the clocks are known
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        sample = _sample(line)
        if sample is None and (at := clock_line.clock_ns(line, tz)) is not None:
            if seen or (unstamped_hosts and unstamped_hosts[-1][2] == scrape):  # a clock line opens a scrape
                scrape, seen = scrape + 1, set()
            clocks[scrape] = at
            continue
        if sample is None:
            skips.skip(no, f"not a Prometheus sample {line[:50]!r}")
            continue
        name, label_text, value_text, ts = sample
        if node_exporter.wanted(name):
            if ts is None:
                unstamped_hosts.append((no, sample, scrape))
            else:
                _host_sample(hosts, samples.default_host, no, sample, seconds, skips)
            continue
        if not _known(name):
            other.add(name)
            continue
        labels = _labels(label_text)
        number = _prom_float(value_text)
        if labels is None or number is None:
            skips.skip(no, f"bad sample {line[:60]!r}")
            continue
        ident = samples.identity(labels, strict=not _named(name))
        if ident is None:
            if _named(name):
                skips.skip(no, f"no gpu label {line[:50]!r}")
            else:  # a metric known only from its words, on a series that is not a GPU's: not GPU telemetry
                other.add(name)
            continue
        key = (name, *ident)
        if key in seen:  # a series repeats: the next scrape has begun
            scrape += 1
            seen = set()
        seen.add(key)
        if ts is not None:
            t_ns = _stamp_ns(ts, seconds)
            if t_ns is None:
                skips.skip(no, "timestamp out of range")
                continue
            stamped += 1
        else:
            t_ns = scrape
            unstamped += 1
            synth.append(len(samples.time))
        samples.add(t_ns, ident[0], ident[1], name, number)
    clocked = bool(clocks) and all(k in clocks for _, _, k in unstamped_hosts)
    for no, sample, k in unstamped_hosts:  # node_exporter samples at their scrape's clock line, as the GPU samples
        _host_sample(hosts, samples.default_host, no, sample, seconds, skips, clocks[k] if clocked else None)
    if not samples.time:
        if len(hosts):
            return _host_only(hosts, interval_s, skips)
        what = f" (only other metrics: {', '.join(sorted(other)[:4])})" if other else ""
        raise InputError(f"{src}: no DCGM GPU samples found{what}")
    bundle_warnings = []
    times = np.asarray(samples.time, dtype=np.int64)
    if synth and clocks and all(int(k) in clocks for k in np.unique(times[synth])):
        times[synth] = [clocks[int(k)] for k in times[synth]]  # each scrape at its clock line's time
        samples.time, synth, stamped, unstamped = times.tolist(), [], stamped + unstamped, 0
    elif clocks:
        bundle_warnings.append(f"{src}: {len(clocks)} of {scrape + 1} scrapes follow a clock line; "
                               "all are placed on the synthetic clock")
    synthetic = unstamped > 0
    if synthetic:
        if stamped:
            bundle_warnings.append(f"{src}: {unstamped} samples without timestamps among {stamped} with; "
                                   "the unstamped ones are placed on the synthetic clock")
        times = np.asarray(samples.time, dtype=np.int64)
        times[synth] = textio.synthetic_times(times[synth], interval_s).astype(np.int64)
        samples.time = times.tolist()
        bundle_warnings.append(textio.synthetic_warning(src, "scrapes", interval_s))
    bundle = samples.bundle(interval_s if synthetic and not stamped else None)
    bundle.warnings += bundle_warnings
    bundle.host, host_warnings = hosts.table(interval_s)
    bundle.warnings += host_warnings
    warning = skips.warning(rows_read=len(samples.time) + len(hosts))
    if warning:
        bundle.warnings.append(warning.replace(" rows ", " samples "))
    return bundle


def _host_sample(hosts: node_exporter.HostSeries, default_host: str, no: int, sample: tuple, seconds: bool,
                 skips: schema.SkipCounter, clock_ns: int | None = None) -> None:
    """A node_exporter sample of a text exposition, set aside for the host table; `clock_ns`: the time of the clock
    line before its scrape (for a sample without a timestamp)."""
    name, label_text, value_text, ts = sample
    labels, number = _labels(label_text), _prom_float(value_text)
    t_ns = _stamp_ns(ts, seconds) if ts is not None else clock_ns
    if labels is None or number is None or (ts is not None and t_ns is None):
        skips.skip(no, f"bad sample {name}")
        return
    hosts.add(t_ns, host_of(labels, default_host), name, labels, number)


def _host_only(hosts: node_exporter.HostSeries, interval_s: float | None, skips: schema.SkipCounter
               ) -> schema.Bundle:
    """A Prometheus file holding node_exporter series and no GPU's: its host table alone."""
    bundle = schema.Bundle(inputs=[hosts.src])
    bundle.host, bundle.warnings = hosts.table(interval_s)
    if not len(bundle.host):
        raise InputError(f"{hosts.src}: node_exporter series without two samples of a counter: no host rates "
                         "(and no DCGM GPU series)")
    warning = skips.warning(rows_read=len(hosts))
    if warning:
        bundle.warnings.append(warning.replace(" rows ", " samples "))
    return bundle


def _stamp_ns(ts: str, seconds: bool) -> int | None:
    """A sample's timestamp in ns: integer milliseconds (Prometheus text), seconds when `seconds` (OpenMetrics) or
    when it has a fraction; None out of range."""
    if not seconds and "." not in ts:
        return textio.ms_to_ns(ts)
    value = float(ts)  # the sample pattern admits digits with one point only
    return int(round(value * 1e9)) if abs(value) < textio.MAX_EPOCH_S else None


def _prom_float(text: str) -> float | None:
    t = text.strip()
    low = t.lower()
    if low in ("nan", "+inf", "-inf", "inf"):
        return float(low.replace("+", ""))
    try:
        return float(t)
    except ValueError:
        return None


def _read_json(path: Path, text: str, interval_s: float | None) -> schema.Bundle:
    src = str(path)
    try:
        doc = textio.json_loads(text)
    except ValueError as exc:
        raise InputError(f"{src}: not valid JSON ({textio.json_error(exc)})") from None
    docs = doc if isinstance(doc, list) else list(doc.values()) if isinstance(doc, dict) and "data" not in doc \
        and "status" not in doc else [doc]
    samples = Samples(src, textio.host_from_path(path))
    hosts = node_exporter.HostSeries(src)
    skips = schema.SkipCounter(src)
    series = 0
    other: set[str] = set()
    for d in docs:
        data = d.get("data") if isinstance(d, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("result"), list):
            continue
        for res in data["result"]:
            if not isinstance(res, dict) or not isinstance(res.get("metric"), dict):
                skips.skip(None, "result without a metric")
                continue
            labels = {str(k): str(v) for k, v in res["metric"].items()}
            name = labels.get("__name__", "")
            if node_exporter.wanted(name):
                _host_points(hosts, samples.default_host, name, labels, res, skips)
                continue
            if not _known(name):
                other.add(name or "(unnamed)")
                continue
            ident = samples.identity(labels, strict=not _named(name))
            if ident is None:
                if _named(name):
                    skips.skip(None, f"{name} series without a gpu label")
                else:
                    other.add(name)
                continue
            series += 1
            for t_ns, value in _points(res, name, skips):
                samples.add(t_ns, ident[0], ident[1], name, value)
    if not samples.time:
        if len(hosts):
            return _host_only(hosts, None, skips)
        what = f" (only other metrics: {', '.join(sorted(other)[:4])})" if other else ""
        raise InputError(f"{src}: no DCGM GPU series in this Prometheus JSON{what}")
    bundle = samples.bundle(None)
    bundle.host, host_warnings = hosts.table()
    bundle.warnings += host_warnings
    warning = skips.warning(rows_read=len(samples.time))
    if warning:
        bundle.warnings.append(warning.replace(" rows ", " points "))
    return bundle


def _host_points(hosts: node_exporter.HostSeries, default_host: str, name: str, labels: dict[str, str], res: dict,
                 skips: schema.SkipCounter) -> None:
    """A node_exporter series of a query_range (or instant) answer, set aside for the host table."""
    host = host_of(labels, default_host)
    for t_ns, value in _points(res, name, skips):
        hosts.add(t_ns, host, name, labels, value)


def _points(res: dict, name: str, skips: schema.SkipCounter) -> Iterator[tuple[int, float]]:
    """(ns UTC, value) of a query_range result's `values` (an instant query's `value`); a damaged point (no pair,
    no number, a time past int64 nanoseconds) is a counted skip."""
    for point in (res.get("values") if "values" in res else [res.get("value")]) or []:
        try:
            ts, value = float(point[0]), _prom_float(str(point[1]))
        except (TypeError, ValueError, IndexError, OverflowError):
            value, ts = None, 0.0
        if value is None or not abs(ts) < textio.MAX_EPOCH_S:
            skips.skip(None, f"bad point in {name}")
            continue
        yield int(round(ts * 1e9)), value
