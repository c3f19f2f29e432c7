"""Nsight Systems `nsys stats` output (`--format csv` / `tsv` exports, or the default column tables users paste) → GPU
trace rows and per-report summary records.

The exact commands (one .nsys-rep per rank: `%q{RANK}` expands an environment variable in the output name)

    nsys profile -t cuda,nvtx,osrt,cudnn,cublas --sample=none --capture-range=cudaProfilerApi \\
        --capture-range-end=stop -o prof/rank%q{RANK} python train.py       # or: torchrun ... train.py
    nsys stats --report cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,cuda_gpu_trace,\\
        nvtx_sum,osrt_sum,cuda_api_sum --format csv --output prof/rank0 prof/rank0.nsys-rep
    playbook diagnose prof/                                                   # reads every rank0_<report>.csv

`--output PREFIX` writes one `PREFIX_<report>.csv` per report; `--output -` (or no --output) prints them all to
stdout, each after a banner (`** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):`, `Processing [...] with
[.../cuda_gpu_kern_sum.py]...`, `Running [.../osrtsum.py x.sqlite]...` or `[3/8] Executing 'cuda_gpu_kern_sum'
stats report`): all are read, several reports per file included. A report retyped as a Markdown (pipe) table — a
header row `| Name | Time (%) | Total Time (ns) | Num Calls | ... |` over a `|---|---|` rule, one `| ... |` row per
line, cells in `code` spans or with a % sign allowed — reads by the same header meaning; a retyped header may call
the name column "Function" / "API Function" and write statistics as "Avg Time (ns)". Without --format csv each report is a column
table: a header over a rule line (` --------  ---------------  ----`) whose dash runs give the column starts; each
cell runs to the next column's start, the last (Name, names with spaces) to the end of the line; figures carry
thousands separators (1,234,567.5). The cells then go through the same header meaning and units as CSV. Older nsys (2021.x)
names are accepted too: gpukernsum, gpumemtimesum, gpumemsizesum, gputrace, nvtxsum, osrtsum, cudaapisum.

What each report is recognised by (its header; a banner, when present, names it outright, and a banner naming a
report not listed here keeps that name: its rows are kept under it and read by no analysis):
  cuda_gpu_kern_sum      "Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",
                         "StdDev (ns)","Name"                        (old: "Time(%)", ..., "Average", ...)
  cuda_gpu_mem_time_sum  ... "Count" ... "Operation"                  (old: "Operations")
  cuda_gpu_mem_size_sum  "Total (MB)","Count","Avg (MB)",...,"Operation" (old: "Total","Operations",... in KiB)
  cuda_gpu_trace         "Start (ns)","Duration (ns)","CorrId","GrdX",...,"Bytes (MB)","Throughput (MB/s)",
                         "SrcMemKd","DstMemKd","Device","Ctx","GreenCtx","Strm","Name"
  nvtx_sum               ... "Instances" ... "Style","Range"          (nvtx_pushpop_sum: banner, or no "Style")
  nvtx_kern_sum          "NVTX Range","Style","PID","TID","NVTX Inst","Kern Inst","Total Time (ns)",...,
                         "Kernel Name"
  osrt_sum / cuda_api_sum  ... "Num Calls" ... "Name"  (told apart by the banner, the file name's report suffix,
                         or the names: cuda*/cu* calls are the CUDA API)
  cuda_kern_exec_sum     "PID","TID","DevId","Count","QCount","TAvg (ns)",...,"AAvg (ns)",...,"QAvg (ns)",...,
                         "KAvg (ns)",...,"KStdDev (ns)","API Name","Kernel Name": per launching thread, API call and
                         kernel, the launch call's time (A*), the queue wait (Q*) and the kernel's time (K*); keys
                         a_avg_ns, k_avg_ns, ..., api_name, name
Units in headers are honoured (--timeunit: ns, us, ms, s; sizes B, KB/KiB, MB/MiB, GB/GiB; nsys's MB is 10^6 B).
Headers without a unit are nanoseconds; old gpumemsizesum sizes without a unit are KiB.

What comes out
  bundle.trace   one row per cuda_gpu_trace row (schema.TRACE_COLUMNS): cat "kernel" / "gpu_memcpy" /
                 "gpu_memset"; memcpy names carry the memory kinds like Kineto's, e.g. "[CUDA memcpy
                 Host-to-Device] (Pageable -> Device)"; ts_us/dur_us on the nsys session clock; stream = Strm,
                 correlation = CorrId, bytes = Bytes; rank = the GPU index from "Device" ("NVIDIA H100 (3)" → 3),
                 i.e. one GPU per rank on one node (pass rank=R to read() for a per-rank report of another node).
  bundle.meta["nsys:<file>"]   {"reports": {report: [records]}, "trace_rows": n}: one record per summary row
                 with keys time_pct, total_ns, count, avg_ns, med_ns, min_ns, max_ns, stddev_ns, name (Name /
                 Operation / Range / Kernel Name), style, range, pid, tid, nvtx_inst, and for sizes total_bytes,
                 avg_bytes, ... (one key per file so that several files merge without overwriting each other;
                 `reports(bundle)` gathers them, grouped by profile: the PREFIX of `--output PREFIX`). playbook.analysis.nsys_profiles.summarize reads them for `diagnose`.
A row whose field count does not match its header is skipped and counted (one warning per file); so is a column
row cut before its last column or with text in a numeric column (a name wrapped onto the next line).
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import headers, textio

FORMAT = "Nsight Systems stats (nsys stats, CSV or column tables)"
META_PREFIX = "nsys:"

KNOWN_REPORTS = ("cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "cuda_gpu_trace",
                 "nvtx_sum", "nvtx_pushpop_sum", "nvtx_kern_sum", "nvtx_startend_sum", "osrt_sum", "cuda_api_sum",
                 "cuda_gpu_sum", "cuda_api_gpu_sum", "cuda_kern_exec_sum")
# `nsys analyze` (expert systems) rules: each prints the events it flags under its banner ("** CUDA Async Memcpy with
# Pageable Memory (cuda_memcpy_async):", or "Processing [x.sqlite] with [.../rules/cuda_memcpy_async.py]..."), a
# column table whose rows carry a Duration (ns); kept as report "rule:<name>" (analysis.nsys_profiles reads them)
KNOWN_RULES = ("cuda_memcpy_async", "cuda_memcpy_sync", "cuda_memset_sync", "cuda_api_sync", "gpu_gaps",
               "gpu_time_util", "dx12_mem_ops")
RULE_PREFIX = "rule:"
OLD_NAMES = {"gpukernsum": "cuda_gpu_kern_sum", "gpumemtimesum": "cuda_gpu_mem_time_sum",
             "gpumemsizesum": "cuda_gpu_mem_size_sum", "gputrace": "cuda_gpu_trace", "nvtxsum": "nvtx_sum",
             "nvtxppsum": "nvtx_pushpop_sum", "nvtxkernsum": "nvtx_kern_sum", "osrtsum": "osrt_sum",
             "cudaapisum": "cuda_api_sum", "gpusum": "cuda_gpu_sum"}

_TIME_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "usec": 1e3, "ms": 1e6, "msec": 1e6, "s": 1e9, "sec": 1e9,
               "nsec": 1.0}
_SIZE_UNITS = {"b": 1.0, "byte": 1.0, "bytes": 1.0, "kb": 1e3, "kib": 1024.0, "mb": 1e6, "mib": 2.0**20,
               "gb": 1e9, "gib": 2.0**30}
# header base name (lower case) -> canonical key stem
_STATS = {"avg": "avg", "average": "avg", "med": "med", "median": "med", "min": "min", "minimum": "min",
          "max": "max", "maximum": "max", "stddev": "stddev", "std dev": "stddev"}
_COUNTS = {"instances": "count", "num calls": "count", "calls": "count", "count": "count", "operations": "count"}
_NAMES = {"name": "name", "operation": "name", "range": "name", "kernel name": "name",
          "function": "name", "api function": "name"}  # the last two: headers retyped by hand (Markdown tables)
_OTHER = {"style": "style", "nvtx range": "range", "pid": "pid", "tid": "tid", "nvtx inst": "nvtx_inst",
          "kern inst": "kern_inst", "category": "category", "corrid": "correlation", "srcmemkd": "src_kind",
          "dstmemkd": "dst_kind", "device": "device", "ctx": "ctx", "greenctx": "green_ctx", "strm": "stream",
          "grdx": "grid_x", "grdy": "grid_y", "grdz": "grid_z", "blkx": "block_x", "blky": "block_y",
          "blkz": "block_z", "reg/trd": "regs_per_thread", "api name": "api_name", "devid": "device_id",
          "qcount": "queued_count"}
_TEXT_KEYS = frozenset({"name", "style", "range", "category", "src_kind", "dst_kind", "device", "api_name"})
# cuda_kern_exec_sum's per-phase statistics: T(otal), A(PI), Q(ueue), K(ernel) × Avg/Med/Min/Max/StdDev ("KAvg (ns)")
_PHASE_STAT = re.compile(r"^([taqk])(avg|med|min|max|stddev)$")

_BANNER = re.compile(r"\(\s*(?P<name>[a-z_]+)(?::[^)]*)?\s*\)\s*:?\s*$")
# the line before each report: "Processing [x.sqlite] with [.../cuda_gpu_kern_sum.py]..." (2022-2023),
# "Running [.../osrtsum.py x.sqlite]..." (2022.1) or "[3/8] Executing 'cuda_gpu_kern_sum' stats report" (2023.2+)
_PROCESSING = re.compile(r"^\s*(?:Processing \[.*?\] with \[|Running \[|\[\d+/\d+\] Executing ')"
                         r"(?:[^\]']*[/\\])?(?P<name>[A-Za-z_]+)(?:\.py\b|')")
_NOISE = re.compile(r"^\s*(Generating|Processing|Running|Using|NOTICE|SKIPPED|WARNING|ERROR|It is assumed|"
                    r"Consider using|Exporting|\*\*|\[\d+/\d+\])")
_DEVICE_INDEX = re.compile(r"\((\d+)\)\s*$")
_RULE_RUN = re.compile(r"-+")
# a header is an nsys one when it names one of these (after unit stripping, lower case)
_MARKERS = ({"time", "total time"}, {"start", "duration", "corrid"}, {"nvtx range", "kern inst"},
            {"total", "operation"}, {"total", "operations", "name"}, {"time", "total time", "operation"}, {"count", "api name", "kernel name", "kavg"})


def canonical_report(name: str) -> str | None:
    """'gpukernsum' / 'cuda_gpu_kern_sum' -> 'cuda_gpu_kern_sum'; None for a name that is not a report."""
    name = (name or "").strip().lower()
    name = OLD_NAMES.get(name, name)
    return name if name in KNOWN_REPORTS else None


def named_report(name: str) -> str | None:
    """The report a banner names: a known one under its canonical name, any other (openmp_sum, um_sum,
    cuda_gpu_kern_gb_sum, ...) under its own, so that its table is never taken for a known report by its header
    (an OpenMP summary's Time (%), Instances, Name read as GPU kernels); None for no report name."""
    known = canonical_report(name)
    if known:
        return known
    name = (name or "").strip().lower()
    if name in KNOWN_RULES:
        return RULE_PREFIX + name
    return name if re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:sum|trace|stats?)", name) else None


def _split(header_line: str, delimiter: str = ",") -> list[str] | None:
    """One CSV line's fields; None for a damaged one (strict: a quoted field left open — a file cut inside a kernel
    name — or text after a closing quote)."""
    line = header_line.rstrip(" \r" if delimiter == "\t" else " \t\r")  # a terminal's trailing blanks are no field
    try:
        return next(csv.reader([line], delimiter=delimiter, strict=True))
    except (csv.Error, StopIteration):
        return None


MAX_COLUMNS = 256  # an nsys stats report has at most ~25 columns: a wider line is not its header


def _column(label: str) -> tuple[str, str, str]:
    """A header label -> (key, kind, unit) with kind one of time, size, pct, count, text, num."""
    base, unit = headers.split_unit(label)  # one pass: a regex here backtracked on runs of spaces (fuzz: 33 s)
    base, unit = base.lower(), unit or ""
    if base in ("time", "time(%)") or (base == "time" and unit == "%"):
        return "time_pct", "pct", "%"
    if base.startswith("time(") and base.endswith("%)"):
        return "time_pct", "pct", "%"
    if base == "total time":
        return "total_ns", "time", unit or "ns"
    if base in ("start", "duration"):
        return ("start_ns" if base == "start" else "dur_ns"), "time", unit or "ns"
    if base == "total":
        return "total_bytes", "size", unit
    if base in ("bytes",):
        return "bytes", "size", unit or "B"
    if base == "throughput":
        return "throughput", "num", unit
    if base in ("stcsmem", "dymsmem"):
        return ("static_smem_bytes" if base == "stcsmem" else "dynamic_smem_bytes"), "size", unit or "B"
    if base in _STATS:
        return _STATS[base], "stat", unit
    if base.endswith(" time") and base[:-5] in _STATS:  # "Avg Time (ns)", "Average Time (ns)": retyped headers
        return _STATS[base[:-5]], "stat", unit
    if m := _PHASE_STAT.match(base):
        return f"{m.group(1)}_{_STATS[m.group(2)]}_ns", "time", unit or "ns"
    if base in _COUNTS:
        return "count", "count", ""
    if base in _NAMES:
        return "name", "text", ""
    if base in _OTHER:
        key = _OTHER[base]
        return key, ("text" if key in _TEXT_KEYS else "num"), ""
    return re.sub(r"\W+", "_", base).strip("_") or "column", "text", unit


def _is_header(fields: list[str]) -> bool:
    if len(fields) > MAX_COLUMNS:
        return False
    bases = set()
    for f in fields:
        b = headers.split_unit(f)[0].lower()
        bases.add("time" if b.startswith("time(") else b)
    return any(marker <= bases for marker in _MARKERS)


def sniff(head: str) -> bool:
    """An nsys stats CSV header (or banner), or an nsys stats table in the default column format."""
    prev = ""
    for line in head.split("\n")[:200]:
        starts = _rule_starts(line)
        if starts and _is_header(_cut(prev, starts)):
            return True
        header = _pipe_cells(prev, bare=True)
        if header and _is_pipe_rule(_pipe_cells(line, bare=True)) and _is_header(header):
            return True
        prev = line
        banner = _BANNER.search(line) if line.lstrip().startswith("**") else None
        if _PROCESSING.match(line) or (banner and (canonical_report(banner.group("name"))
                                                   or banner.group("name").lower() in KNOWN_RULES)):
            return True
        for delim in (",", "\t"):  # --format csv or tsv
            fields = _split(line, delim) if delim in line else None
            if fields and len(fields) >= 3 and _is_header(fields):
                return True
    return False


# ------------------------------------------------------------------------------------------------ parsing
class _Table:
    """One table of an export: the report its banner named (or None), header fields, data rows; `starts` holds
    the column start offsets of a column-format table (None for CSV)."""

    def __init__(self, report: str | None, header: list[str], line: int, starts: list[int] | None = None,
                 delimiter: str = ","):
        self.report, self.header, self.line, self.starts, self.delimiter = report, header, line, starts, delimiter
        self.rows: list[list[str]] = []
        self.numeric = [_column(h)[1] != "text" for h in header]


def _rule_starts(line: str) -> list[int] | None:
    """The column start offsets of a column-format rule line (` --------  ---------------  ----`), else None."""
    if "-" not in line or line.strip(" -\r\t") or len(line) > 64 * MAX_COLUMNS:
        return None
    starts = [m.start() for m in _RULE_RUN.finditer(line)]
    return starts if 2 <= len(starts) <= MAX_COLUMNS else None


def _cut(line: str, starts: list[int]) -> list[str]:
    """A column-format line cut at the rule's column starts; the last column runs to the end (names)."""
    return [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None], strict=True)]


_PIPE_RULE = re.compile(r"^:?-+:?$")  # GFM's delimiter row: one hyphen or more a cell, colons for alignment


def _pipe_cells(line: str, bare: bool = False) -> list[str] | None:
    """The cells of a Markdown (pipe) table row `| a | `b` | 34.2% |` (code-span backticks and bold marks dropped),
    else None. `bare`: also a row without its outer pipes (`a | b`: GFM makes them optional), for the lines where a
    row is expected (a header over its rule, a rule, the rows of a table begun)."""
    t = line.strip()
    if len(t) < 3 or "|" not in t or len(t) > 64 * MAX_COLUMNS:
        return None
    if t.startswith("|") and t.endswith("|"):
        t = t[1:-1]
    elif bare:
        t = t.removeprefix("|").removesuffix("|")
    else:
        return None
    return [c.strip().strip("`*").strip() for c in t.split("|")]


def _is_pipe_rule(cells: list[str] | None) -> bool:
    return bool(cells) and all(_PIPE_RULE.match(c) for c in cells)


def _column_row(line: str, table: _Table) -> tuple[list[str] | None, str]:
    """The cells of one column-format data row, or (None, why it is not one: a cut or wrapped row)."""
    if len(line.rstrip()) <= table.starts[-1]:
        return None, f"row ends before the {table.header[-1]!r} column (cut or wrapped)"
    cells = _cut(line, table.starts)
    numbers = [c for c, num in zip(cells, table.numeric, strict=True) if num and c]
    if not numbers:
        return None, "no figures in the numeric columns (a wrapped name?)"
    bad = next((c for c in numbers if _number(c) != _number(c) and c.lower() not in _NA), None)
    if bad is not None:
        return None, f"{bad[:40]!r} in a numeric column (misaligned or wrapped row)"
    return cells, ""


def _tables(text: str, skips: schema.SkipCounter) -> list[_Table]:
    """Every table in the text (CSV, or column format: a header over a `----  ----` rule line), each with the
    report its banner named (None when no banner)."""
    tables: list[_Table] = []
    pending: str | None = None
    current: _Table | None = None
    prev = ""  # the line before, a column-format header when this one is its rule
    for i, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            current, prev = None, ""
            continue
        m = _PROCESSING.match(raw)
        b = _BANNER.search(line) if line.startswith("**") else None
        if m or b:
            pending, current = named_report((m or b).group("name")), None
            continue
        if _NOISE.match(raw) and not (line.startswith("**") and "|" in line):  # not a bold cell of a bare row
            current = None
            continue
        cells = _pipe_cells(raw)
        if cells is None and "|" in line:  # a row without outer pipes: a rule, or a row of the table begun
            bare = _pipe_cells(raw, bare=True)
            if bare and (_is_pipe_rule(bare) or (current is not None and current.delimiter == "|"
                                                 and len(bare) == len(current.header))):
                cells = bare
        if cells is not None:
            before, prev = prev, raw
            if _is_pipe_rule(cells):
                header = _pipe_cells(before, bare=True) or []
                if len(header) == len(cells) and _is_header(header):
                    current, pending = _Table(pending, header, i - 1, delimiter="|"), None
                    tables.append(current)
                continue
            if current is not None and current.delimiter == "|":
                if len(cells) != len(current.header):
                    skips.skip(i, f"{len(cells)} cells where the header has {len(current.header)}")
                else:
                    current.rows.append(cells)
            continue
        if current is not None and current.delimiter == "|":
            current = None  # the Markdown table ended (a fence, a heading, prose)
        starts = _rule_starts(raw)
        header = _cut(prev, starts) if starts else []
        prev = raw
        ruled = bool(pending and pending.startswith(RULE_PREFIX) and "dur_ns" in {_column(h)[0] for h in header})
        if starts and (_is_header(header) or ruled):
            current, pending = _Table(pending, header, i - 1, starts), None
            tables.append(current)
            continue
        if current is not None and current.starts is not None:
            cells, why = _column_row(raw, current)
            if cells is None:
                skips.skip(i, why)
            else:
                current.rows.append(cells)
            continue
        delim = current.delimiter if current is not None else ("\t" if raw.count("\t") >= 2 else ",")
        fields = _split(raw, delim)
        if fields is None:
            if current is not None:
                skips.skip(i, "unparseable CSV line")
            continue
        if len(fields) >= 3 and not _looks_numeric(fields) and _is_header(fields):
            current, pending = _Table(pending, fields, i, delimiter=delim), None
            tables.append(current)
            continue
        if current is None:
            continue  # text before the first table
        if len(fields) != len(current.header):
            skips.skip(i, f"{len(fields)} fields where the header has {len(current.header)}")
            continue
        current.rows.append(fields)
    return tables


def _looks_numeric(fields: list[str]) -> bool:
    return _number(fields[0]) == _number(fields[0])  # not NaN


_NA = ("nan", "-nan", "n/a", "-", "none", "null")


def _number(text: str) -> float:
    """A figure as nsys prints it (thousands separators in column format: 1,234,567.5); NaN when absent."""
    t = (text or "").strip().replace(",", "").removesuffix("%").rstrip()  # "34.2%": a retyped Time (%) cell
    if not t or t.lower() in _NA:
        return math.nan
    try:
        return float(t)
    except ValueError:
        return math.nan


def _classify(table: _Table, hint: str | None) -> str:
    """The report a header belongs to (see the module docstring)."""
    if table.report:
        return table.report
    keys = {_column(h)[0] for h in table.header}
    lowered = {h.strip().lower() for h in table.header}
    if {"start_ns", "dur_ns"} <= keys and ("correlation" in keys or "stream" in keys):
        return "cuda_gpu_trace"
    if "range" in keys and "kern_inst" in keys:
        return "nvtx_kern_sum"
    if "api_name" in keys and "k_avg_ns" in keys:
        return "cuda_kern_exec_sum"
    name_at = next((i for i, h in enumerate(table.header) if _column(h)[0] == "name"), None)
    names = [r[name_at] for r in table.rows] if name_at is not None else []
    if names and all(n.strip().startswith("[CUDA ") for n in names):  # "[CUDA memcpy HtoD]", "[CUDA memset]"
        return "cuda_gpu_mem_size_sum" if "total_bytes" in keys else "cuda_gpu_mem_time_sum"
    if "total_bytes" in keys and "operation" in lowered:
        return "cuda_gpu_mem_size_sum"
    if "category" in keys:
        return "cuda_gpu_sum"
    if "operation" in lowered:
        return "cuda_gpu_mem_time_sum"
    if "range" in lowered:
        return hint if hint in ("nvtx_sum", "nvtx_pushpop_sum", "nvtx_startend_sum") else "nvtx_sum"
    if lowered & {"num calls", "calls"}:
        if hint in ("osrt_sum", "cuda_api_sum"):
            return hint
        cuda = sum(n.strip().startswith(("cuda", "cu")) for n in names)
        return "cuda_api_sum" if names and cuda * 2 >= len(names) else "osrt_sum"
    if "instances" in lowered and "name" in keys:
        return "cuda_gpu_kern_sum"
    return hint or "unknown"


def _records(table: _Table, report: str) -> list[dict[str, Any]]:
    cols = [_column(h) for h in table.header]
    old_sizes = report == "cuda_gpu_mem_size_sum" and not any(u for k, kind, u in cols if kind == "size")
    size_report = report == "cuda_gpu_mem_size_sum"
    out = []
    for row in table.rows:
        rec: dict[str, Any] = {}
        for (key, kind, unit), value in zip(cols, row, strict=True):
            if kind == "text":
                rec[key] = value.strip()
                continue
            x = _number(value)
            if kind == "time":
                x *= _TIME_UNITS.get(unit.lower(), 1.0)
            elif kind == "size":
                x *= 1024.0 if (old_sizes and not unit) else _SIZE_UNITS.get(unit.lower(), 1.0)
            elif kind == "stat":
                if size_report:
                    x *= 1024.0 if (old_sizes and not unit) else _SIZE_UNITS.get(unit.lower(), 1.0)
                    key = f"{key}_bytes"
                else:
                    x *= _TIME_UNITS.get(unit.lower(), 1.0)
                    key = f"{key}_ns"
            rec[key] = x
        out.append(rec)
    return out


def _trace_rows(records: list[dict[str, Any]], src: str, rank: int | None) -> pd.DataFrame:
    n = len(records)
    cat, name, dev = [], [], np.full(n, -1, dtype=np.int64)
    for i, r in enumerate(records):
        nm = r.get("name", "")
        if nm.startswith("[CUDA memcpy"):
            cat.append("gpu_memcpy")
            kinds = [k for k in (r.get("src_kind", ""), r.get("dst_kind", "")) if k]
            nm = f"{nm} ({' -> '.join(kinds)})" if len(kinds) == 2 else nm
        elif nm.startswith("[CUDA memset"):
            cat.append("gpu_memset")
        else:
            cat.append("kernel")
        name.append(nm)
        m = _DEVICE_INDEX.search(r.get("device", ""))
        if m:
            dev[i] = int(m.group(1))
        elif r.get("device", "").strip().isdecimal():
            dev[i] = int(r["device"])

    def col(key: str) -> np.ndarray:
        return np.array([r.get(key, math.nan) for r in records], dtype=np.float64)

    stream = col("stream")
    corr = col("correlation")
    return schema.trace_frame({
        "rank": np.full(n, rank, dtype=np.int64) if rank is not None else dev,
        "cat": cat, "name": name, "ts_us": col("start_ns") / 1e3, "dur_us": col("dur_ns") / 1e3, "pid": dev,
        "tid": np.nan_to_num(stream, nan=-1).astype(np.int64), "stream": np.nan_to_num(stream, nan=-1),
        "correlation": np.nan_to_num(corr, nan=-1), "bytes": col("bytes"),
        "source": pd.Categorical([src] * n),
    })


def profile_name(path: str | Path) -> str:
    """The profile a file belongs to: its path without the `_<report>.csv` suffix that `nsys stats --output
    PREFIX` adds (prof/rank0_cuda_gpu_kern_sum.csv -> prof/rank0), else the path without its extensions."""
    path = Path(path)
    stem = textio.host_from_path(path)
    for name in sorted(KNOWN_REPORTS + tuple(OLD_NAMES), key=len, reverse=True):
        if stem.lower().endswith("_" + name) and len(stem) > len(name) + 1:
            return str(path.with_name(stem[: -len(name) - 1]))
    return str(path.with_name(stem))


def _report_hint(path: Path) -> str | None:
    """The report named in a `--output PREFIX` file name (PREFIX_cuda_gpu_kern_sum.csv); None when absent."""
    stem = textio.host_from_path(path).lower()
    for name in sorted(KNOWN_REPORTS + tuple(OLD_NAMES), key=len, reverse=True):
        if stem.endswith(name):
            return canonical_report(name)
    return None


def read(path: str | Path, rank: int | None = None, **_opts) -> schema.Bundle:
    """Read an `nsys stats --format csv` export (one or several reports) into a Bundle (trace; meta)."""
    path = Path(path)
    src = str(path)
    text = textio.read_text(path)
    skips = schema.SkipCounter(src)
    try:
        tables = _tables(text, skips)
    except InputError as exc:
        raise InputError(str(exc).replace("{path}", src)) from None
    if not tables:
        raise InputError(f"{src}: no nsys stats CSV table (expected a header such as "
                         f"\"Time (%)\",\"Total Time (ns)\",... or \"Start (ns)\",\"Duration (ns)\",...)")
    hint = _report_hint(path)
    bundle = schema.Bundle(inputs=[src])
    reports: dict[str, list[dict[str, Any]]] = {}
    trace_frames = []
    rows_read = 0
    for t in tables:
        report = _classify(t, hint if len(tables) == 1 else None)
        recs = _records(t, report)
        rows_read += len(recs)
        if report == "cuda_gpu_trace":
            if recs:
                trace_frames.append(_trace_rows(recs, src, rank))
            continue
        reports.setdefault(report, []).extend(recs)
    if trace_frames:
        trace = pd.concat(trace_frames, ignore_index=True) if len(trace_frames) > 1 else trace_frames[0]
        trace["source"] = trace["source"].astype("category")
        bundle.trace = trace.sort_values(["rank", "ts_us"], kind="stable").reset_index(drop=True)
    bundle.meta[META_PREFIX + src] = {"reports": reports, "trace_rows": int(len(bundle.trace)),
                                      "profile": profile_name(path), "rank": rank,
                                      "rank_from": "argument" if rank is not None else "device"}
    w = skips.warning(rows_read)
    if w:
        bundle.warnings.append(w)
    return bundle


def reports(bundle: schema.Bundle) -> dict[str, pd.DataFrame]:
    """Every nsys summary report in `bundle.meta`, one frame per report name: the rows of all files, with `source`
    (the file) and `profile` (see profile_name: the reports of one `nsys stats --output PREFIX` share it)."""
    frames: dict[str, list[pd.DataFrame]] = {}
    for src, value in schema.meta_sections(getattr(bundle, "meta", None), META_PREFIX):
        for name, recs in (value.get("reports") or {}).items():
            if recs:
                frames.setdefault(name, []).append(
                    pd.DataFrame(recs).assign(source=src, profile=value.get("profile") or profile_name(src)))
    return {name: pd.concat(fs, ignore_index=True) for name, fs in frames.items()}


def has_nsys(bundle: schema.Bundle) -> bool:
    """True when the bundle holds anything read from nsys exports."""
    return bool(schema.meta_sections(getattr(bundle, "meta", None), META_PREFIX))

