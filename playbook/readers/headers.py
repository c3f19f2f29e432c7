"""What a column holds, from the words and units in its name: one tokenizer and one small vocabulary for every
table the readers meet (CSV headers, JSON keys, XML paths).

    >>> meaning("Power (W)").role, meaning("system.gpu.3.smClock").role, meaning("system.gpu.3.smClock").gpu
    ('power_w', 'sm_clock_mhz', 3)

A name is split into lower-case tokens at punctuation, camelCase and letter/digit boundaries ("powerWatts" ->
power, watts; "gpu0_util" -> gpu, 0, util); a trailing "[unit]" / "(unit)" or a unit token ("_mb", "Watts",
"Bytes") gives its unit. Concepts are sets of tokens (power = power/pwr/watts/draw; clock = clock/clk/freq/...),
and a few rules in a fixed order turn concepts into a schema role: a throttle/clocks-event name is the
clock-event mask (or one reason bit), pcie/nvlink + tx/rx a link rate, a clock a clock (memory or SM), power a
power draw or limit, temperature a temperature, utilization a utilization (memory or GPU), memory + used/total
the frame buffer. Names that qualify a reading as something else (max, default, min, threshold, encoder, bar1,
process, ...) mean no role. A "gpu N" inside a name (W&B's `system.gpu.N.*`, `GPU 1 Power`) makes the column a
per-GPU metric of GPU N, and so does a trailing "gpu N" / "_N" (`Utilization GPU 1 (%)`, `util_gpu0`,
`gpu_util_0`) or a label set (`DCGM_FI_DEV_GPU_UTIL{gpu="0"}`, `nvidia_smi_utilization_gpu index=0`: see
split_labels). Only names that say gpu/index/device/bus/uuid/minor are a GPU index; a process, sweep,
rank or job id is not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from playbook.knowledge import ids as cause_ids
from playbook.model import schema

# unit token -> canonical unit (a key of textio.UNIT_FACTORS, or a time unit)
UNIT_WORDS: dict[str, str] = {
    "pct": "%", "percent": "%", "percentage": "%", "%": "%", "ratio": "ratio", "frac": "ratio", "fraction": "ratio",
    "mib": "mib", "mb": "mb", "gib": "gib", "gb": "gb", "kib": "kib", "kb": "kb", "bytes": "b", "byte": "b",
    "megabytes": "megabytes", "gigabytes": "gigabytes", "kilobytes": "kilobytes", "mebibytes": "mib",
    "gibibytes": "gib",
    "w": "w", "watts": "w", "watt": "w", "mw": "mw", "milliwatts": "mw", "kw": "kw",
    "mhz": "mhz", "ghz": "ghz", "khz": "khz", "hz": "hz",
    "c": "c", "celsius": "c", "degc": "c", "celsiusdegree": "c", "°c": "c",
    "s": "s", "sec": "s", "secs": "s", "seconds": "s", "ms": "ms", "us": "us", "ns": "ns",
}
# spelled-out decimal sizes (MLflow's `gpu_0_memory_usage_megabytes` is bytes / 1e6) -> MiB
SI_SIZES = {"megabytes": 1e6 / 2**20, "gigabytes": 1e9 / 2**20, "kilobytes": 1e3 / 2**20}
_RATE_UNITS = {"megabytes": "mb/s", "gigabytes": "gb/s", "kilobytes": "kb/s", "mib": "mib/s", "mb": "mb/s", "kb": "kb/s", "kib": "kib/s", "gb": "gb/s", "gib": "gib/s", "b": "b/s"}

TIME = {"time", "timestamp", "ts", "datetime", "date", "epoch", "walltime", "unix", "unixtime", "runtime", "clock_time"}
RELATIVE_TIME = {"runtime", "elapsed", "relative", "uptime"}
TIME_UNITS = {"s", "ms", "us", "ns"}
HOST = {"host", "hostname", "node", "nodename", "instance", "server", "machine", "kubernetes_node", "ip"}
GPU_INDEX = {"gpu", "index", "idx", "device", "dev", "bus", "uuid", "minor", "entity", "cuda", "gpuid", "gpu_id",
             "aip", "npu", "chip", "phy"}  # Gaudi's AIP (hl-smi), Ascend's NPU / Chip / Phy-ID (npu-smi), TPU chips
NOT_INDEX = {"process", "pid", "sweep", "run", "runtime", "rank", "job", "seed", "step", "trial", "task", "worker", "thread",
             "user", "name", "count", "product", "driver", "serial", "vbios", "model", "brand", "pstate",
             "fan", "state", "mode", *"vdd vin pom warn crit critical threshold".split()}  # a power rail (NVIDIA's
# VDD_ supply, VIN_ input, POM_ power-monitor names) and alarm limits (Jetson stats' `VDD_GPU_SOC-WARN_CURRENT`,
# `-IN_CURRENT`): electrical readings of a rail named for the GPU, no GPU id; "current" alone is no such word
# (`current_device`: the GPU a process runs on)

UTIL = {"util", "utilization", "utilisation", "utl", "gputl", "busy", "load", "aicore", "duty"}  # TPU duty cycle
# AMD's "GFX_ACTIVITY" / "UMC_ACTIVITY" (amd-smi, device-metrics-exporter, rocm-smi's "Memory Read/Write Activity
# (%)"): the share of time the graphics engine / memory controller was busy. A bare "GFX Activity" in rocm-smi --json is
# an accumulated counter: its values (past 100) undo the role (see `settle`).
ACTIVITY = {"activity"}
ACTIVITY_RANK = 3  # an activity's rank: after every utilization, and how `settle` knows an activity from a bare memory
MEM = {"mem", "memory", "fb", "vram", "gram", "framebuffer", "mcutl", "fbusd", "fbttl", "mclk", "mmclk", "hbm", "umc"}
POWER = {"power", "pwr", "watts", "draw", "powerdraw", "pmlmt"}
LIMIT = {"limit", "cap", "enforced", "pmlmt"}
CLOCK = {"clock", "clocks", "clk", "freq", "frequency", "smclk", "mclk", "pclk", "mmclk", "sclk"}
SM = {"sm", "graphics", "gr", "core", "shader", "smclk", "pclk", "sclk", "gfx"}
TEMP = {"temp", "temperature", "tmptr", "gtemp"}
THROTTLE = {"throttle", cause_ids.THROTTLING, "event", "events"}
REASON = {"reason", "reasons"}
PCIE = {"pcie", "pci", "pcitx", "pcirx", "txpci", "rxpci"}
NVLINK = {"nvlink", "nvl", "nvltx", "nvlrx"}
TX = {"tx", "transmit", "sent", "send", "pcitx", "nvltx", "txpci"}
RX = {"rx", "receive", "received", "recv", "pcirx", "nvlrx", "rxpci"}
USED = {"used", "usage", "usd", "fbusd", "allocated", "alloc", "use"}
TOTAL = {"total", "ttl", "fbttl", "capacity", "size"}
ACTIVE = {"active", "smact", "act"}
# qualifiers that make a reading something other than the current value the schema holds
OTHER = {"max", "min", "default", "threshold", "slowdown_temp", "shutdown", "target", "encoder", "decoder", "enc",
         "dec", "jpg", "ofa", "bar1", "video", "applications", "application", "boost", "customer", "free", "reserved",
         "supported", "process", "percent", "pct_of_limit", "mtemp", "state", "pstate", "mode", "fan", "ecc",
         "retired", "errors", "error", "corrected", "uncorrected", "count", "name", "version", "hostmax",
         "gpumax", "requested", "slowdown", "management", "violation", "pviol", "tviol", "tensor", "dram", "fp16",
         "fp32", "fp64", "occupancy", "cpu", "disk", "bar", "network", "net", "proc", "system_memory", "swap",
         "p50", "p90", "p99", "std", "delta",
         # AMD clock domains other than the shader (sclk/gfx) and memory (mclk) clocks; multimedia engines
         "fclk", "socclk", "dcefclk", "vclk", "dclk", "lclk", "mm", "vcn", "jpeg", "sdma", "voltage",
         "level", "od"}  # rocm-smi's "sclk clock level" (a DPM state number), "SCLK OD" (overdrive %)
# per-reason clock-event bits (nvml.h nvmlClocksEventReason*), keyed by the words of the reason's name
REASON_WORDS: tuple[tuple[frozenset[str], int], ...] = (
    (frozenset({"idle"}), 0x1),
    (frozenset({"applications"}), 0x2), (frozenset({"application"}), 0x2),
    (frozenset({"sw", "power"}), 0x4),
    (frozenset({"hw", "thermal"}), 0x40), (frozenset({"hw", "power", "brake"}), 0x80),
    (frozenset({"hw", "slowdown"}), 0x8), (frozenset({"hw"}), 0x8),
    (frozenset({"sync", "boost"}), 0x10),
    (frozenset({"sw", "thermal"}), 0x20),
    (frozenset({"display"}), 0x100),
)

POWER_ROLES = ("power_w", "power_limit_w", "power_default_limit_w")

# GPU-Z's `PerfCap Reason []` (TechPowerUp's sensor log) holds NVAPI's perf-policy mask, not NVML's clock-event
# bits: NV_GPU_PERF_POLICY_ID_SW_POWER = 1, SW_THERMAL = 2, SW_RELIABILITY = 4 (the reliability voltage), SW_OPERATING
# = 8 (the max operating voltage), SW_UTILIZATION = 16, SW_SLI_GPU_BOOST_SYNC = 32, combined by OR; 0 = no cap
# (W1zzard, techpowerup.com forum "GPU-Z numeric PerfCap reasons?"). Power and thermal are NVML's software power cap
# and thermal slowdown; the two voltage limits are where GPU Boost tops out at full load (a reliability bin, no
# slowdown); utilization caps an underused GPU, which its load column says better (GPU-Z writes 16 at 99% load
# too); SLI sync is sync boost.
PERF_CAP = frozenset({"perf", "cap"})
PERF_POLICY = "nvapi_perf_policy"  # the unit a `PerfCap Reason` column is read in (see recode)
_PERF_POLICY_BITS = ((1, schema.THROTTLE_BITS["sw_power_cap"]), (2, schema.THROTTLE_BITS["sw_thermal"]),
                     (32, schema.THROTTLE_BITS["sync_boost"]))


def recode(m: Meaning, values):
    """A column's values in the schema's code where its name gives another (GPU-Z's NVAPI perf-policy mask ->
    NVML clock-event bits); the values unchanged otherwise. A code that is not a whole number from 0 to 63 is
    empty (NaN)."""
    import numpy as np

    if m.unit != PERF_POLICY:
        return values
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v) & (v >= 0) & (v < 64) & (v == np.round(v))
    code = np.where(ok, v, 0).astype(np.int64)
    out = np.zeros(len(v), dtype=np.float64)
    for nvapi, nvml in _PERF_POLICY_BITS:
        out += np.where(code & nvapi, float(nvml), 0.0)
    return np.where(ok, out, np.nan)
@dataclass(frozen=True)
class Meaning:
    """What one column name says. role: a schema column ("time", "host", "gpu", or a TELEMETRY_METRICS name) or
    None; unit: the canonical unit its name gives (None when silent); gpu: the GPU number a per-GPU column names
    (W&B `system.gpu.N.*`), else None; bit: the clock-event reason bit of a one-reason column; relative: a time
    column counting seconds since the start (`_runtime`, `elapsed`); rank: lower is the better of two columns with
    one role (power_draw before average_power_draw; index before uuid)."""
    role: str | None
    unit: str | None = None
    gpu: int | None = None
    bit: int = 0
    relative: bool = False
    rank: int = 0
    host: str | None = None  # the host a labelled per-GPU series names (`{gpu="0", Hostname="n1"}`)


def split_unit(name: str) -> tuple[str, str | None]:
    """'memory.used [MiB]' -> ('memory.used', 'mib'); 'Power (W)' -> ('Power', 'w'). Linear: no regex."""
    text = name.strip()
    if text.endswith(("]", ")")):
        opener = "[" if text.endswith("]") else "("
        start = text.rfind(opener)
        if start >= 0:
            unit = text[start + 1:-1].strip().lower().replace(" ", "") or None
            return text[:start].strip(), unit
    return text, None


# A column name longer than this means nothing: the longest real ones are labelled Prometheus series in a Grafana
# export (~450 characters with a dozen Kubernetes labels); a "name" of a megabyte is a damaged line, and reading
# its words once per table the reader tries cost seconds (fuzz: a 2 MB header-like line, 48 s).
MAX_NAME_CHARS = 4096


def tokens(name: str) -> list[str]:
    """Lower-case words of a name, split at punctuation, camelCase and letter/digit boundaries (none for a name
    longer than MAX_NAME_CHARS)."""
    if len(name) > MAX_NAME_CHARS:
        return []
    out: list[str] = []
    word: list[str] = []
    prev = ""
    for ch in name:
        if ch.isalnum() or ch == "%":
            boundary = word and (
                (ch.isupper() and prev.islower())
                or (ch.isdigit() != prev.isdigit())
                or (ch == "%") != (prev == "%"))
            if boundary:
                out.append("".join(word).lower())
                word = []
            word.append(ch)
        elif word:
            out.append("".join(word).lower())
            word = []
        prev = ch
    if word:
        out.append("".join(word).lower())
    return out


def _unit(words: list[str], bracket: str | None, rate: bool) -> str | None:
    """The unit a name gives; for a link rate (`rate`) the size unit per second ("pcie_tx_bytes" -> b/s)."""
    if bracket is not None:
        return UNIT_WORDS.get(bracket, bracket)
    for w in reversed(words[1:] if len(words) > 1 else []):
        unit = UNIT_WORDS.get(w)
        if unit is None or (rate and unit not in _RATE_UNITS):
            continue
        return _RATE_UNITS[unit] if rate else unit
    return None


def split_labels(name: str) -> tuple[str, dict[str, str]]:
    """A Prometheus series name with its label set, as Grafana and PromQL print it:
    'DCGM_FI_DEV_GPU_UTIL{gpu="0", Hostname="n1"}' -> ('DCGM_FI_DEV_GPU_UTIL', {'gpu': '0', 'Hostname': 'n1'}).
    A name without a trailing {...} comes back unchanged with no labels. Linear: one pass over the braces."""
    text = name.strip()
    start = text.find("{")
    if start <= 0 or not text.endswith("}"):
        if "=" in text and "{" not in text:  # 'nvidia_smi_utilization_gpu index=0' (CloudWatch, Influx style)
            parts = text.replace(",", " ").split()
            pairs = [p.partition("=") for p in parts if "=" in p]
            head = [p for p in parts if "=" not in p]
            if head and all(k and v for k, _eq, v in pairs):
                return " ".join(head), {k: v.strip('"') for k, _eq, v in pairs}
        return text, {}
    labels: dict[str, str] = {}
    for part in text[start + 1:-1].split(","):
        key, eq, value = part.partition("=")
        if eq and key.strip():
            labels[key.strip()] = value.strip().strip('"').strip("'")
    return text[:start].strip(), labels


_STATES = ("used", "free", "reserved")  # what a memory state label says of the bytes a series counts


def _stated(base: str, labels: dict[str, str]) -> str:
    """A series name with the state its `*state` label gives put in place of the state word in the name:
    Cloud Monitoring's `gpu/memory/bytes_used{memory_state="free"}` counts the free bytes, not the used."""
    state = next((v.lower() for k, v in labels.items() if tokens(k)[-1:] == ["state"]), None)
    if state not in _STATES:
        return base
    words = tokens(base)
    held = next((w for w in reversed(words) if w in _STATES), None)
    if held is None or held == state:
        return base
    at = base.lower().rfind(held)
    return base[:at] + state + base[at + len(held):]


def label_gpu(labels: dict[str, str]) -> int | None:
    """The GPU number a label set names: the first label whose key means a GPU index (gpu, GpuIndex, gpu_number,
    index, minor_number ...) holding a plain number."""
    for key, value in labels.items():
        if value.isdecimal() and len(value) < 6 and meaning(key).role == "gpu":
            return int(value)
    return None


def label_host(labels: dict[str, str]) -> str | None:
    """The host a label set names: a host / hostname label first, else node / instance / ip (a port dropped)."""
    found = sorted((meaning(k).rank, i, v) for i, (k, v) in enumerate(labels.items())
                   if v and meaning(k).role == "host")
    if not found:
        return None
    host = found[0][2]
    head, colon, port = host.rpartition(":")
    return head if colon and port.isdecimal() and head else host


MODEL_KEYS = ({"model", "name"}, {"model"}, {"product", "name"}, {"product"}, {"gpu", "name"}, {"gpu", "model"})


def label_model(labels: dict[str, str]) -> str | None:
    """The product name a label set gives its GPU: dcgm-exporter's `modelName`, the Ops Agent's `model`,
    `gpu_name` / `product_name` (a bare `name` is not: it names many things)."""
    return next((v for k, v in labels.items() if v and set(tokens(k)) in MODEL_KEYS), None)


def aggregates(names: list[str], metrics: dict[int, Meaning]) -> list[int]:
    """Positions of labelled series that name no GPU beside labelled series of the same metric that do: one
    number for a node or a cluster (a recording rule's `gpustack:worker_node_gpu_utilization_rate{worker=...}`,
    a query's `avg by (Hostname)`), not a GPU of its own — read as one, it would be a phantom GPU beside the real."""
    labelled = {p for p in metrics if split_labels(names[p])[1]}
    per_gpu = {m.role for p, m in metrics.items() if m.gpu is not None and p in labelled}
    return [p for p, m in metrics.items() if m.gpu is None and m.role in per_gpu and p in labelled]


def models(names: list[str], metrics: dict[int, Meaning], host: str) -> dict[str, str]:
    """{GPU id: product name} from the labels of per-GPU series (`modelName="NVIDIA H100 80GB HBM3"`)."""
    out = {}
    for p, m in metrics.items():
        if m.gpu is not None and (model := label_model(split_labels(names[p])[1])):
            out.setdefault(schema.gpu_id(m.host or host, m.gpu), model)
    return out


@lru_cache(maxsize=4096)  # a reader asks for the same names once per block or candidate table
def meaning(name: str) -> Meaning:
    """The schema role a column name asks for (see the module docstring); none for a name longer than
    MAX_NAME_CHARS."""
    if len(name) > MAX_NAME_CHARS:
        return Meaning(None)
    base, labels = split_labels(name)
    if labels:  # a labelled series: the metric from its name, the GPU from its labels
        m = meaning(_stated(base, labels))
        gpu = label_gpu(labels)
        if m.role in schema.TELEMETRY_METRICS and gpu is not None and m.gpu is None:
            return replace(m, gpu=gpu, host=label_host(labels))
        return m
    base, bracket = split_unit(name)
    words = tokens(base)
    gpu = None
    # (isdecimal, not isdigit: int() refuses the superscript digits isdigit accepts)
    # "gpu 3 ..." / "gpu.3.x" / "gpu3_util": a per-GPU metric column, unless the name is just "gpu 3"
    for i in range(len(words) - 1):
        # (rocm-smi --json keys its devices "card0", "card1": `card0.GPU use (%)`)
        if words[i] in ("gpu", "cuda", "device", "card") and words[i + 1].isdecimal() and i + 2 < len(words):
            gpu = int(words[i + 1]) if len(words[i + 1]) < 6 else None
            rest = words[i + 2:]
            if gpu is not None:
                words = [w for w in words[:i] if w not in ("system", "sys")] + rest
                if rest == ["gpu"]:  # W&B `system.gpu.N.gpu`: the utilization
                    words = ["gpu", "util"]
            break
    # the index last: "Utilization GPU 1 (%)", "util_gpu0", "gpu_util_0" (a GPU word earlier in the name)
    if gpu is None and len(words) >= 3 and words[-1].isdecimal() and len(words[-1]) < 6 \
            and any(w in ("gpu", "cuda", "device") for w in words[:-1]):
        gpu = int(words[-1])
        words = words[:-2] if words[-2] in ("gpu", "cuda", "device") else words[:-1]
    if len(words) == 2 and words[1] == "t" and words[0] in ("gpu", "mem", "hotspot", "edge", "junction"):
        words = [words[0], "temp"]  # amd-smi monitor's GPU_T / MEM_T: the temperatures (amd-smi >= 25 abbreviates)
    ws = set(words)
    unit = _unit(words, bracket, rate=bool(ws & (PCIE | NVLINK)))
    if bracket in ("ratio", "fraction"):
        unit = "ratio"
    role, bit, rank = _role(words, ws, unit)
    if role in POWER_ROLES and unit is not None and unit.startswith("%"):
        role = None  # GPU-Z's `Power Consumption (%) [% TDP]`: a share of the board's limit, no watts
    if PERF_CAP <= ws and ws & REASON and not ws & OTHER:
        role, unit, bit, rank = "throttle_reasons", PERF_POLICY, 0, 1  # GPU-Z's `PerfCap Reason []`: NVAPI's code
    if role is None and gpu is not None:
        return Meaning(None)
    relative = role == "time" and bool(ws & RELATIVE_TIME)
    return Meaning(role, unit, gpu if role in schema.TELEMETRY_METRICS else None, bit, relative, rank)


def _role(words: list[str], ws: set[str], unit: str | None) -> tuple[str | None, int, int]:
    """(role, reason bit, rank) from a name's words."""
    if ws & THROTTLE and (ws & REASON or ws & {"throttle", cause_ids.THROTTLING}) or "clocks_event_reasons" in ws:
        # a throttle temperature is the threshold a thermal zone throttles at (Jetson stats'
        # `gpu-thermal-SW_THROTTLING_TEMP`), not the clocks' event reasons
        return _throttle_role(words, ws) if not ws & TEMP else (None, 0, 0)
    if ws & HOST and not ws & (UTIL | MEM | POWER | CLOCK | TEMP | PCIE | NVLINK):
        if ws & HOST == {"node"} and ws & {"id", "number", "num"}:
            return None, 0, 0  # rocm-smi's "Node ID": the device's KFD / NUMA node number, not a machine
        return "host", 0, 0 if ws & {"host", "hostname"} else 1
    other = ws & OTHER
    if ws & UTIL and not ws & (POWER | CLOCK | TEMP):
        other -= {"percent"}  # a utilization's unit ("utilization_percent"); beside power or memory, a share
    if ws & (PCIE | NVLINK):
        return _link_role(ws, other)
    if (ws & ACTIVE and ws & SM) or "smact" in ws:
        return ("sm_active", 0, 0) if not other - {"percent"} else (None, 0, 0)
    if ws & POWER and ws & LIMIT and other - {"management"} == {"default"}:
        # the board's default limit (-q "Default Power Limit", DCGM power_management_limit_default); a module's
        # (Grace Hopper "Module Power Readings") is the CPU+GPU module's, the lesser reading
        return "power_default_limit_w", 0, 1 if "module" in ws else 0
    if other:
        return None, 0, 0
    return _reading_role(words, ws, unit)


def _throttle_role(words: list[str], ws: set[str]) -> tuple[str | None, int, int]:
    """A throttle / clocks-event name: the whole mask, one reason's bit, or nothing (counters, other words)."""
    if ws & {"supported", "counters", "counter", "status"}:  # -q's "Clocks Event Reasons Counters": time spent, in
        return None, 0, 0  # us; amd-smi's THROTTLE_STATUS: THROTTLED / UNTHROTTLED, no reason bits
    after = words[max(i for i, w in enumerate(words) if w in REASON | THROTTLE) + 1:] if ws & REASON else []
    rest = set(after) - REASON - THROTTLE - CLOCK
    if rest and rest != {"active"} and rest != {"mask"}:
        for keys, bit in REASON_WORDS:
            if keys <= rest:
                return "throttle_reasons", bit, 0
        return None, 0, 0
    return "throttle_reasons", 0, 0


def _link_role(ws: set[str], other: set[str]) -> tuple[str | None, int, int]:
    """A PCIe / NVLink name: a tx/rx rate, PCIe replays, link generation or width, or the bus id (a GPU id)."""
    link = "nvlink" if ws & NVLINK else "pcie"
    if ws & TX and not other:
        return f"{link}_tx_mib_s", 0, 0
    if ws & RX and not other:
        return f"{link}_rx_mib_s", 0, 0
    if link == "pcie" and "replay" in ws:
        return "pcie_replay_count", 0, 0
    if link == "pcie" and ws & {"gen", "generation"} and not ws & {"max", "hostmax", "gpumax"}:
        # nvidia-smi -q's "PCIe Generation.Device Current" is --query-gpu's pcie.link.gen.gpucurrent
        return "pcie_link_gen", 0, 1 if "gpucurrent" in ws or {"device", "current"} <= ws else 0
    if link == "pcie" and "width" in ws and not ws & {"max"}:
        return "pcie_link_width", 0, 0
    if ws & {"bus", "id"} and not ws & UTIL:
        return "gpu", 0, 3
    return None, 0, 0


def _reading_role(words: list[str], ws: set[str], unit: str | None) -> tuple[str | None, int, int]:
    """A name without qualifiers: a clock, power, temperature, utilization, memory, time or GPU index."""
    if ws & CLOCK or unit in ("mhz", "ghz", "khz", "hz"):
        if ws & MEM:
            return "mem_clock_mhz", 0, 0
        return "sm_clock_mhz", 0, 0 if ws & {"sm", "smclk", "pclk"} else 1
    if ws & POWER and unit in ("%", "ratio"):
        return None, 0, 0  # MLflow's gpu_0_power_usage_percentage: a share of the limit, not a draw
    if ws & POWER or unit in ("w", "mw", "kw"):
        if ws & LIMIT:
            return "power_limit_w", 0, 0 if ws & {"enforced", "pmlmt"} else 1
        if ws & {"avg", "average", "mean", "instant"}:  # the draw nvidia-smi reports is the 1 s average
            return "power_w", 0, 3 if ws & {"instant"} else 2
        return "power_w", 0, 0 if ws & {"draw", "usage"} or words[-1:] in (["power"], ["pwr"]) else 1
    if ws & TEMP or unit == "c":  # among several zones, the one named for the GPU (`gpu-thermal-CURR_TEMP`)
        return ("temp_c", 0, 0 if ws & {"gpu", "gtemp"} else 1) if not ws & MEM else (None, 0, 0)
    if ws & UTIL:
        if ws & MEM:
            return "mem_util_pct", 0, 0
        return "util_pct", 0, 0
    if ws & {"use", "usage"} and unit in ("%", "ratio") and not ws & MEM:
        return "util_pct", 0, 1  # rocm-smi's "GPU use (%)": a share of time in use, not a size
    if ws & MEM and "use" in ws and not ws & (USED | TOTAL) - {"use"} and unit == "%":
        # rocm-smi's "GPU memory use (%)" (--showmemuse) is the memory controller's busy share (sysfs
        # mem_busy_percent, ROCm/rocm_smi_lib#120), the NVIDIA utilization.memory reading, not a size
        return "mem_util_pct", 0, 1
    if ws & ACTIVITY and unit in ("%", None) and not ws & (POWER | TEMP):
        # a vendor's "activity" percentage: GFX (graphics / compute engine) or UMC / memory (memory controller);
        # ranked after an explicit utilization of the same file
        return ("mem_util_pct" if ws & MEM else "util_pct"), 0, ACTIVITY_RANK
    if ws & MEM and "bandwidth" in ws and unit == "%":
        # xpu-smi's "GPU Memory Bandwidth (%)" is the memory's activity; beside it, its "GPU Memory Util (%)" is the
        # used share of the size (xpumanager exports them as memory_bandwidth_ratio and memory_ratio): ranked first
        return "mem_util_pct", 0, -1
    if ws & MEM and not ws & {"host", "ram", "dram", "swap"} and not (ws & {"system", "machine"} and not ws & GPU_INDEX):
        # (neuron-monitor's system_data.memory_info.memory_used_bytes, ClearML's :monitor:machine/memory_used_gb:
        # the host's)
        return _memory_role(ws, unit)
    if ws & MEM:
        return None, 0, 0
    # a relative-time word with a time unit is a clock too (`elapsed_sec`, `uptime_ms`: seconds since the start)
    timed = ws & TIME or (ws & RELATIVE_TIME and unit in TIME_UNITS)
    if timed and not ws & {"step", "index", "idx"}:  # neuron-monitor's neuron_runtime_index: no clock
        return "time", 0, 0 if ws & {"timestamp", "time", "ts", "datetime"} else 1
    if ws & GPU_INDEX and not ws & NOT_INDEX and unit is None:  # a name with a unit is a reading, not an id
        # a qualified name that says GPU ranks before a bare index: "index" / "idx" also count rows (pandas' index,
        # the `idx` of Aim's Metric.dataframe beside its `metric.context.gpu`); a bare "gpu" ties with "index" (the
        # first wins): a column named just `gpu` may hold the product name beside a real index
        qualified = ws & {"minor", "gpuid", "aip", "phy"} or (ws & {"gpu"} and len(words) > 1)
        return "gpu", 0, 0 if qualified else 1 if ws & {"index", "idx", "gpu"} \
            else 2 if ws & {"device", "dev", "cuda", "entity"} else 3
    if ws & {"util"} or words in (["sm"], ["gpu", "util"]) or (words[:1] == ["gpu"] and unit == "%" and len(ws) == 2):
        return "util_pct", 0, 1
    if unit == "%" and len(ws - {"%"}) == 1 and ws & (SM - CLOCK):
        return "util_pct", 0, 1  # an engine's busy share: amd-smi monitor's "GFX%" (as dmon's bare "sm" column)
    return None, 0, 0


def _memory_role(ws: set[str], unit: str | None) -> tuple[str | None, int, int]:
    """A memory name: the total, the used size (bytes; a percentage of the total is no size), or a bare
    "memory" (a utilization until its values say otherwise)."""
    # an accelerator's HBM before its other memory (npu-smi's DDR "Memory-Usage", 0 / 0 on HBM chips)
    other = 0 if "hbm" in ws else 1
    if ws & TOTAL and not ws & {"used", "usd"}:  # rocm-smi's "VRAM Total Used Memory (B)" is the used size
        return "mem_total_mib", 0, other
    byte_unit = unit in ("mib", "mb", "gib", "gb", "kib", "kb", "b", *SI_SIZES)
    if ws & USED or byte_unit:
        # W&B's memoryAllocated is a percentage of the total, its memoryAllocatedBytes the bytes
        if unit in ("%", "ratio") or (ws & {"allocated", "alloc"} and not byte_unit):
            return None, 0, 0
        return "mem_used_mib", 0, 0 if ws & {"used", "usd", "fbusd"} or not other else 1
    if "vram" in ws and unit in ("%", "ratio"):
        # the VRAM names the memory itself, not its controller: rocm-smi's concise "VRAM%" is 100 * used / total of
        # getMemInfo(device, 'vram') (rocm_smi.py showAllConcise), a share of the size — no column
        return None, 0, 0
    if len(ws - MEM - {"gpu", "%"}) == 0:
        # a bare "memory": W&B's GPU memory utilization (%); the value range decides (see `settle`)
        return "mem_util_pct", 0, 2
    return None, 0, 0


def settle(m: Meaning, values) -> Meaning:
    """Refine a meaning with the column's values: a bare "memory" holding more than 100 is MiB used, not %; an
    "activity" without a % unit holding more than 100 is a counter (rocm-smi --json "GFX Activity"), no reading."""
    import numpy as np

    if m.role in ("util_pct", "mem_util_pct") and m.rank == ACTIVITY_RANK and m.unit is None:
        v = np.asarray(values, dtype=np.float64)
        v = v[np.isfinite(v)]
        if len(v) and float(np.max(v)) > 100.5:
            return Meaning(None)
    if m.role == "mem_util_pct" and m.rank == 2 and m.unit is None:
        v = np.asarray(values, dtype=np.float64)
        v = v[np.isfinite(v)]
        if len(v) and float(np.max(v)) > 100.5:
            return replace(m, role="mem_used_mib", unit=None)
    return m


def factor(m: Meaning, values) -> float:
    """Factor that turns the column's values into the schema's unit: from the name's unit, else from the value
    range (NVML reports power in mW: a "power" above 5 kW is mW; clocks above 100 GHz-as-MHz are Hz; memory above
    4 TiB-as-MiB is bytes; a utilization within [0, 1] with fractions is a ratio)."""
    import numpy as np

    from playbook.readers import textio

    role, unit = m.role, m.unit
    if role is None or role in ("time", "host", "gpu"):
        return 1.0
    if unit in ("ratio",) and (role.endswith("_pct")):
        return 100.0
    if unit in SI_SIZES and role in ("mem_used_mib", "mem_total_mib"):
        return SI_SIZES[unit]
    if unit and unit in textio.UNIT_FACTORS:
        f = textio.UNIT_FACTORS[unit]
        if role in POWER_ROLES and unit not in ("w", "mw", "kw"):
            return 1.0
        return f
    v = np.asarray(values, dtype=np.float64)
    v = np.abs(v[np.isfinite(v)])
    if not len(v):
        return 1.0
    top, med = float(np.max(v)), float(np.median(v))
    if role in POWER_ROLES and med > 5000:
        return 1e-3
    if role in ("sm_clock_mhz", "mem_clock_mhz") and med > 1e5:
        return 1e-6
    if role in ("mem_used_mib", "mem_total_mib") and med > 4e6:
        return 1 / 2**20
    if role.endswith("_pct") and top <= 1.0 and np.any((v > 0) & (v < 1)):
        return 100.0
    if role == "sm_active" and top > 1.5:
        return 0.01
    return 1.0


def series_name(name: str) -> str:
    """The name a measured series is read by: a series named by its subject alone, the GPU (`__system__gpu` of
    Aim's resource tracker; NVML's `utilization.gpu` field is `gpu`, W&B's `system.gpu.N.gpu`), is that GPU's
    utilization, not a GPU index: a series' values are readings. Other names are returned as they are."""
    words = [w for w in tokens(split_unit(name)[0]) if w not in ("system", "sys")]
    return f"{name} utilization" if words == ["gpu"] else name


def assign(names: list[str]) -> dict[int, Meaning]:
    """Column position -> Meaning for the columns that have a role; of several columns for one role (per GPU),
    the best-ranked wins (ties: the first)."""
    best: dict[tuple[str, int | None, int], tuple[int, int]] = {}
    found: dict[int, Meaning] = {}
    # beside a training step, a bare "epoch" counts training epochs (Lightning's CSVLogger), not epoch seconds
    training = any(tokens(n) == ["step"] for n in names)
    for pos, name in enumerate(names):
        m = meaning(name)
        if m.role is None or (training and m.role == "time" and tokens(split_unit(name)[0]) == ["epoch"]):
            continue
        found[pos] = m
        key = (m.role, m.gpu, m.bit, m.host)
        if key not in best or m.rank < best[key][0]:
            best[key] = (m.rank, pos)
    keep = {pos for _rank, pos in best.values()}
    return {pos: m for pos, m in found.items() if pos in keep}


def is_telemetry(names: list[str]) -> bool:
    """True when the names hold at least one GPU metric and a time, GPU, per-GPU or training-step column (a
    training loop's device-stats table, e.g. Lightning's DeviceStatsMonitor in a CSVLogger metrics.csv), or are
    all GPU readings (two or more: one GPU's polls without times). A table
    with a process-id column is one row per process (`amd-smi process --csv`, `--query-compute-apps`): its memory
    and engine times are the process's, not the device's telemetry."""
    if any(tokens(n) in (["pid"], ["process", "id"]) for n in names):
        return False
    ms = assign(names).values()
    metrics = [m for m in ms if m.role in schema.TELEMETRY_METRICS]
    # or nothing but GPU readings, two or more (`gpu_util_pct,mem_used_mib,power_draw_w,temp_c`: a header written
    # over `--query-gpu ... --format=csv,noheader` polls): one GPU's polls, their times unknown
    only_readings = len(metrics) >= 2 and len(metrics) == len(names)
    return bool(metrics) and (any(m.role in ("time", "gpu") for m in ms) or any(m.gpu is not None for m in metrics)
                              or any(tokens(n) == ["step"] for n in names) or only_readings)


def header_repeats(table, names: list[str]):
    """A keep-mask (numpy bool) of the rows of `table` (Arrow, text columns) that do not repeat the header's first
    two `names` — a logger that appends to its file writes its header again when logging restarts (GPU-Z's sensor
    log) — or None when no row does."""
    import numpy as np
    import pyarrow.compute as pc

    if len(names) < 2 or not table.num_rows:
        return None
    same = None
    for k in (0, 1):
        eq = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(table.column(k)), names[k].strip()), False)
        same = eq if same is None else pc.and_(same, eq)
    if not int(pc.sum(same).as_py() or 0):
        return None
    return np.asarray(pc.invert(same).to_numpy(zero_copy_only=False), dtype=bool)
