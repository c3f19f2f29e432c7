"""Which reader understands a file: decided from its content (never its name), in a fixed order.

Every reader module in READERS exports `sniff(head) -> bool` (head: the first 64 KiB, decompressed and decoded
as UTF-8 with errors replaced) and `read(path, **opts) -> Bundle`. The first module whose `sniff` says yes reads
the file.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from playbook.core.errors import UnknownFormatError
from playbook.readers import textio

# Most specific formats first: structured documents, then line formats with distinctive markers, then the
# generic CSV and step tables; any other text goes to the line scanners (readers/lines.py), which read training
# logs, NCCL lines and events mixed in one file (nccl_log.read stays for NCCL-only use).
READERS: tuple[str, ...] = (
    "notebook",         # Jupyter notebooks: what the cells printed, read as a log (lines)
    "kineto",           # PyTorch profiler Chrome traces (JSON)
    "nsys",             # Nsight Systems exports
    "nsys_sqlite",      # Nsight Systems `nsys export --type sqlite` databases
    "nsys_json",        # Nsight Systems `nsys export --type json` (one event message per line)
    "rocprof",          # AMD rocprof / rocprofv3 CSV (stats, dispatches, kernel / API / copy traces)
    "flight_recorder",  # NCCL / PyTorch flight-recorder dumps
    "dcgmi_dmon",       # dcgmi dmon text (#Entity field tags, GPU rows)
    "dcgm",             # dcgm-exporter text, Prometheus query_range JSON
    "dcgm_diag",        # dcgmi diag results: failed / warned tests per GPU as events
    "slurm_usage",      # a Slurm job's GPU usage after the job: sacct TRESUsageInAve / Max, seff's GPU section
    "job_reports",      # job-efficiency tools: jobstats, reportseff / Job Defense Shield job tables, dcgmi stats
    "container_limits", # a container's limits as the shell prints them: cgroup cpu.stat, df of /dev/shm
    "kube_status",      # kubectl get pods / describe pod / get events: evictions, OOM kills, restarts per pod
    "influx",           # InfluxDB line protocol (Telegraf's nvidia_smi input)
    "dmon",             # nvidia-smi dmon
    "nvidia_smi_table", # the human-readable nvidia-smi table, logged with -l or watch
    "gpustat_text",     # gpustat's plain-text lines ([0] name | 45°C, 96 % | used / total MB)
    "nvtop_text",       # nvtop's screen as text (Device 0 [name] PCIe GEN 4@16x; GPU 1695MHz ...; GPU[|| 30%])
    "tegrastats",       # Jetson tegrastats lines (RAM x/yMB ... CPU [..] ... GR3D_FREQ x%@MHz)
    "afterburner_hml",  # MSI Afterburner hardware monitoring log (.hml: 02 sensor names, 03 units, 80 polls)
    "topo_matrix",      # nvidia-smi topo -m (GPU / NIC connection matrix, CPU / NUMA affinity): environment facts
    "lspci",            # lspci -vv LnkCap / LnkSta lines: each device's PCIe link, capable vs trained
    "nvidia_smi",       # nvidia-smi --query-gpu CSV
    "smi_query_text",   # nvidia-smi -q as plain text (Key : Value sections per GPU)
    "amd_smi_text",     # rocm-smi tables and GPU[N] : key: value lines, amd-smi metric sections
    "pipe_table",       # GPU telemetry as a markdown pipe table pasted into an issue (names read as a CSV header's)
    "box_table",        # box-drawn device tables: hl-smi, npu-smi info, tpu-info, xpu-smi stats
    "trtexec",          # TensorRT trtexec's performance summary and trace lines (read as a log, by lines)
    "host_tools",       # vmstat, iostat, mpstat, sar, sadf -d, top -b, dstat / dool CSV → the host table
    "generic_csv",      # CSV with recognisable telemetry headers
    "long_csv",         # CSV in the long layout: a series-name and a value column (MLflow history, Grafana rows)
    "documents",        # JSON / XML telemetry documents (gpustat --json, W&B system metrics, nvidia-smi -q -x)
    "tfevents",         # TensorBoard event files (events.out.tfevents.*): scalars with wall times and steps
    "metric_file",      # one metric's `<timestamp> <value> <step>` lines, its name in the path (MLflow file store)
    "steps",            # step tables: CSV / JSON Lines with a step and a duration or time column
    "aligned_table",    # space-aligned text tables of a monitor script (names set apart by two or more spaces)
    "lines",            # any other text: every line scanner (steps, NCCL, recompiles, events) reads every line
)
# A reader's name (what users and --help see) → its module under playbook.readers, where the two differ
MODULES = {"dmon": "nvidia_smi.dmon", "nvidia_smi_table": "nvidia_smi.table", "smi_query_text": "nvidia_smi.query_text",
           "steps": "step_log"}

_cache: dict[str, ModuleType] = {}


def module(name: str) -> ModuleType:
    """The module of the reader named `name` (one of READERS: playbook.readers.<name> unless MODULES says), imported
    once."""
    if name not in _cache:
        _cache[name] = importlib.import_module(f"playbook.readers.{MODULES.get(name, name)}")
    return _cache[name]


def matches(head: str) -> list[str]:
    """Every reader whose sniff accepts `head`, in detection order (a sniff that fails says no)."""
    return list(_accepting(head))


def _accepting(head: str) -> Iterator[str]:
    """The readers whose sniff accepts `head`, lazily in detection order (detect stops at the first)."""
    for name in READERS:
        try:
            if module(name).sniff(head):
                yield name
        except Exception:  # a sniffer must never take detection down; treat a crash as "not mine"
            continue


def detect(path: str | Path, head: str | None = None) -> str:
    """The name of the reader for `path`; UnknownFormatError (one line, naming the file) when none fits."""
    if head is None:
        head = textio.read_head(path)
    found = next(_accepting(head), None)
    if found is None:
        raise UnknownFormatError(f"{path}: not telemetry this playbook can read (looks like {describe(path)})")
    return found


GENERIC = ("pipe_table", "aligned_table", "lines")  # the readers of any text: what they accept says nothing of its format


def specific(head: str, generic: tuple[str, ...] = GENERIC) -> str | None:
    """The first reader of a format (not one of `generic`) whose sniff accepts `head`, else None."""
    return next((name for name in _accepting(head) if name not in generic), None)


_MAGIC_NAMES = (
    (b"PAR1", "a Parquet file"), (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"), (b"%PDF", "a PDF document"), (b"PK\x03\x04", "a ZIP archive"),
    (b"\x7fELF", "an executable (ELF)"), (b"SQLite format 3", "an SQLite database"), (b"\x80\x04", "a Python pickle"),
    (b"\x80\x05", "a Python pickle"), (b"\x93NUMPY", "a NumPy array"), (b"\x89HDF", "an HDF5 file"),
)


_HEADER_NAME = re.compile(r"^[A-Za-z_][\w .%/()\[\]-]{0,40}$")


def describe(path: str | Path) -> str:
    """A short guess at what a file is, for error messages: "empty file", "a PNG image", "JSON with keys ...",
    "a table with columns ..." (names only when they look like a header). Never a line of the file's text: it
    may not be telemetry at all (a symlink to a system file, a secret)."""
    try:
        raw = textio.read_bytes(path, limit=4096, convert=False)
    except Exception:  # unreadable or undecompressable: say so rather than fail while describing
        return "an unreadable file"
    if not raw.strip():
        return "an empty file" if not raw else "a blank file"
    for magic, name in _MAGIC_NAMES:
        if raw.startswith(magic):
            return name
    if raw[:262].find(b"ustar") == 257:
        return "a tar archive"
    text = textio.decode(raw)
    utf16 = textio.text_encoding(raw).startswith(("utf-16", "utf-32"))
    bad = text.count("\ufffd") + sum(raw.count(bytes([b])) for b in range(8) if not utf16)
    if bad > max(4, len(text) // 50):
        return "binary data"
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = textio.json_loads(textio.read_text(path)) if len(raw) < 4096 else None
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            return f"JSON with keys {_short(', '.join(map(str, list(doc)[:6])))}"
        keys = re.findall(r'"([^"]{1,40})"\s*:', stripped[:2000])
        if keys:
            return f"JSON with keys {_short(', '.join(dict.fromkeys(keys[:6])))}"
        if doc is not None or textio.looks_like_json(stripped):
            return "JSON"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    for sep in (",", "\t", ";"):
        if first.count(sep) >= 2:
            names = [c.strip() for c in first.split(sep)]
            if all(_HEADER_NAME.match(c) for c in names[:6]):
                return f"a table with columns {_short(', '.join(names[:6]))}"
            return f"a table of {len(names)} columns"
    return "plain text"


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())  # one line, whatever the file holds
    return text if len(text) <= limit else text[: limit - 3] + "..."
