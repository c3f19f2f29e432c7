"""AMD rocprof (v1/v2, ROCm ≤ 6) and rocprofv3 CSV outputs → GPU trace rows and the per-profile summaries that
`playbook diagnose` reads from nsys exports (playbook.analysis.nsys_profiles).

Every file is read by its header: column meaning from the words and the unit in each name (headers.tokens:
"TotalDurationNs" → total, duration, ns; "Start_Timestamp" → start, timestamp), never from the file name.

  stats        Name, Calls, TotalDurationNs, AverageNs, Percentage [, MinNs, MaxNs, StdDev]: v1 results.stats.csv,
               hip_stats.csv, hsa_stats.csv, copy_stats.csv; v3 *_kernel_stats.csv, *_hip_api_stats.csv,
               *_memory_copy_stats.csv, *_domain_stats.csv. What a stats file sums is told from its names: HIP /
               CUDA API calls (hip*, __hip*, cuda*) → "cuda_api_sum", HSA calls (hsa_*) → "hsa_api_sum" (the layer
               under HIP: kept apart so that calls are not counted twice), copies (async-copy, *_TO_*, memcpy) →
               "cuda_gpu_mem_time_sum", domains (KERNEL_DISPATCH, HIP_RUNTIME_API, ...) → "domain_sum" (totals of
               the others, not summed again), anything else kernels → "cuda_gpu_kern_sum".
  dispatches   v1 results.csv: KernelName, BeginNs, EndNs (+ gpu-id, queue-id, tid, DurationNs), one kernel a row.
  traces       v3 *_kernel_trace.csv (Kernel_Name, Start_Timestamp, End_Timestamp, Agent_Id, Queue_Id,
               [Stream_Id,] Correlation_Id), *_hip_api_trace.csv / *_hsa_api_trace.csv (Domain, Function, ...,
               Thread_Id), *_memory_copy_trace.csv (Kind, Direction, Source_Agent_Id, Destination_Agent_Id, ...),
               *_marker_api_trace.csv (roctx ranges); rocpd's CSV conversion (a leading Guid column) reads alike.
  json         rocprofv3 --output-format json: {"rocprofiler-sdk-tool": [{"buffer_records": {"kernel_dispatch",
               "hip_api", "hsa_api", "memory_copy", "marker_api": [records]}, "strings": {"buffer_records": [{"kind",
               "operations"}]}, "kernel_symbols", "agents"}]} (fields as rocprofiler-sdk's own tests read them:
               start/end_timestamp, kind and operation → strings, dispatch_info.kernel_id → kernel_symbols'
               formatted_kernel_name, src/dst_agent_id → agents' type 1 CPU / 2 GPU); read whole, within textio's
               size budget. Rows and summaries as from the CSV traces.
  summaries    rocprofv3 -S / -D console tables ("ROCPROFV3 KERNEL_DISPATCH SUMMARY:" over | NAME | DOMAIN | CALLS |
               DURATION (nsec) | AVERAGE (nsec) | ... |), one report per domain (DOMAIN_REPORTS); the closing
               "ROCPROFV3 SUMMARY:" table repeats every domain and is skipped. Found only within the first 64 KiB
               of a file (detection reads that much): a summary after a long application log is not seen.

Summary report names are the nsys ones (the project's names for a kernel / API / copy summary), records carry the
same keys (name, count, total_ns, avg_ns, min_ns, max_ns, stddev_ns, time_pct); all times are ns as written.
Trace rows (schema.TRACE_COLUMNS): cat "kernel" / "gpu_memcpy" (named "[memcpy Host-to-Device]" from the
direction) / "hip_runtime" (API calls; HSA calls "hsa_runtime") / "user_annotation" (markers); ts_us on the
profiler's clock; rank = the `rank` argument, else 0 (one process per file; profile_name groups the files of one
run); pid = the GPU agent (Agent_Id,
"Agent 4" → 4; gpu-id), tid = the queue / stream for GPU rows, the thread for API rows.
A row whose field count differs from its header, or whose times are missing or end before they start, is skipped
and counted (one warning per file); so are the rows past MAX_ROWS.
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
from playbook.readers import headers, nsys, textio

FORMAT = "rocprof / rocprofv3 CSV"
TOOL = "rocprof"
_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9, "nsec": 1.0, "usec": 1e3, "msec": 1e6, "sec": 1e9}
_STATS = {"total": "total_ns", "average": "avg_ns", "avg": "avg_ns", "min": "min_ns", "max": "max_ns"}
_API = re.compile(r"^(?:__)?(?:hip|cuda|cu[A-Z]|rocblas|hipblas|miopen|rccl|nccl)", re.IGNORECASE)
_HSA = re.compile(r"^hsa_", re.IGNORECASE)
_COPY = re.compile(r"copy|memcpy|_TO_", re.IGNORECASE)
_DOMAIN = re.compile(r"^(?:KERNEL_DISPATCH|MEMORY_COPY|MEMORY_ALLOCATION|SCRATCH_MEMORY|[A-Z_]+_API(?:_EXT)?)$")
_AGENT = re.compile(r"(\d+)\s*$")
# rocprofv3 --summary (-S / -D) tables: "ROCPROFV3 KERNEL_DISPATCH SUMMARY:" over a pipe table (NAME | DOMAIN | CALLS |
# DURATION (nsec) | AVERAGE (nsec) | PERCENT (INC) | MIN (nsec) | MAX (nsec) | STDDEV); "ROCPROFV3 SUMMARY:" (no
# domain) is every domain again in one table: skipped, it would count each call twice
_SUMMARY_BANNER = re.compile(r"^\s*ROCPROFV3\s+(?:(?P<domain>[A-Z][A-Z_]*)\s+)?SUMMARY:\s*$")
_PIPE_RULE = re.compile(r"^\s*\|[-|: ]+\|\s*$")
DOMAIN_REPORTS = {"KERNEL_DISPATCH": "cuda_gpu_kern_sum", "HIP_API": "cuda_api_sum", "HIP_RUNTIME_API": "cuda_api_sum",
                  "HIP_RUNTIME_API_EXT": "cuda_api_sum", "HSA_API": "hsa_api_sum", "MEMORY_COPY": "cuda_gpu_mem_time_sum"}
MAX_COLUMNS = 256
_JSON_KEY = '"rocprofiler-sdk-tool"'
MAX_ROWS = 2_000_000  # rows kept per file (a counted warning past it): a runaway trace cannot exhaust memory


def _role(label: str) -> tuple[str, float]:
    """A header label → (role, ns factor): roles name, count, pct, total_ns / avg_ns / min_ns / max_ns /
    stddev_ns, start, end, duration, kernel, function, domain, direction, kind, agent, src_agent, dst_agent,
    queue, stream, thread, process, correlation; "" for a column not used."""
    words = headers.tokens(label)
    unit = words[-1] if words and words[-1] in _UNIT_NS else None
    w = [x for x in words if x not in _UNIT_NS]
    ws = set(w)
    factor = _UNIT_NS.get(unit or "ns", 1.0)
    if w == ["name"] or w == ["kernel", "name"] or w == ["kernelname"]:
        return ("kernel" if "kernel" in ws else "name"), 1.0
    if w in (["calls"], ["count"]):
        return "count", 1.0
    if w in (["percentage"], ["percent"]):
        return "pct", 1.0
    if w == ["std", "dev"] or w == ["stddev"]:
        return "stddev_ns", factor
    if unit and len(w) <= 2 and w and w[0] in _STATS and (len(w) == 1 or w[1] == "duration"):
        return _STATS[w[0]], factor
    if ws & {"start", "begin"} and (unit or "timestamp" in ws):
        return "start", factor
    if "end" in ws and (unit or "timestamp" in ws):
        return "end", factor
    if w == ["duration"] and unit:
        return "duration", factor
    for key in ("function", "domain", "direction", "kind"):
        if w == [key]:
            return key, 1.0
    if "agent" in ws or w[:1] == ["gpu"]:
        return ("src_agent" if "source" in ws else "dst_agent" if "destination" in ws else "agent"), 1.0
    for key in ("queue", "stream", "thread", "process", "correlation"):
        if w and w[0] == key and w[1:] in ([], ["id"]):  # queue-id, not queue-index
            return key, 1.0
    if w == ["tid"]:
        return "thread", 1.0
    return "", 1.0


def _layout(roles: list[str]) -> str | None:
    """stats, trace (with start and end) or None for a header this reader does not know."""
    have = set(roles)
    if {"name", "count", "total_ns"} <= have:
        return "stats"
    if {"start", "end"} <= have and have & {"kernel", "function", "direction"}:
        return "trace"
    return None


def _header(line: str) -> list[str] | None:
    try:
        fields = next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return None
    return fields if 2 <= len(fields) <= MAX_COLUMNS else None


def sniff(head: str) -> bool:
    """A rocprof / rocprofv3 CSV (its first line is a header this reader knows), rocprofv3 summary tables or
    rocprofv3's JSON document."""
    if head.lstrip().startswith("{") and _JSON_KEY in head[:4096]:
        return True
    lines = head.split("\n")
    first = next((ln for ln in lines if ln.strip()), "")
    fields = _header(first)
    if fields and _layout([_role(f)[0] for f in fields]) is not None:
        return True
    return any(_SUMMARY_BANNER.match(ln) or _summary_header(ln) for ln in lines[:2000])


def _summary_header(line: str) -> list[tuple[str, float]] | None:
    """The column roles of a summary table's header line (NAME | DOMAIN | CALLS | DURATION (nsec) ...), else None."""
    if not line.lstrip().startswith("|") or len(line) > 64 * MAX_COLUMNS:
        return None
    roles = [_role(c) for c in line.strip().strip("|").split("|")]
    roles = [("total_ns", f) if r == "duration" else (r, f) for r, f in roles]
    have = {r for r, _ in roles}
    return roles if {"name", "count", "total_ns", "domain"} <= have else None


def _summary_tables(text: str, skips: schema.SkipCounter) -> dict[str, list[dict[str, Any]]]:
    """The records of every per-domain summary table in the text, by report (see DOMAIN_REPORTS)."""
    reports: dict[str, list[dict[str, Any]]] = {}
    banner, skip, roles = None, False, None
    for i, line in enumerate(text.split("\n"), start=1):
        if m := _SUMMARY_BANNER.match(line):
            banner, skip, roles = m.group("domain"), m.group("domain") is None, None
            continue
        if not line.lstrip().startswith("|") or _PIPE_RULE.match(line):
            roles = roles if _PIPE_RULE.match(line) or not line.strip() else None
            continue
        if roles is None:
            roles = _summary_header(line)
            continue
        if skip:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(roles):
            skips.skip(i, f"{len(cells)} cells where the header has {len(roles)} (a '|' in a name?)")
            continue
        domain = cells[[r for r, _ in roles].index("domain")] or banner or ""
        report, recs = _stats(roles, [cells])
        reports.setdefault(DOMAIN_REPORTS.get(domain.upper(), report), []).extend(recs)
    for report, recs in reports.items():
        if report == "cuda_gpu_mem_time_sum":
            for r in recs:
                r["name"] = _copy_name(r["name"]) if "_TO_" in r["name"].upper() else r["name"]
    return reports


def _number(text: str) -> float:
    try:
        return float(text.strip().replace(",", "")) if text.strip() else math.nan
    except ValueError:
        return math.nan


def _agent(text: str) -> float:
    """'Agent 4' / '4' / 'GPU 2' → the number; NaN when absent."""
    m = _AGENT.search(text or "")
    return float(m.group(1)) if m else math.nan


def _stats_report(names: list[str]) -> str:
    """What a stats file sums, from its names (see the module docstring)."""
    names = [n.strip() for n in names if n.strip()]
    if not names:
        return "cuda_gpu_kern_sum"
    for report, test in (("domain_sum", _DOMAIN.match), ("hsa_api_sum", _HSA.match), ("cuda_api_sum", _API.match),
                         ("cuda_gpu_mem_time_sum", _COPY.search)):
        if sum(bool(test(n)) for n in names) * 2 > len(names):
            return report
    return "cuda_gpu_kern_sum"


def _copy_name(direction: str) -> str:
    """'HOST_TO_DEVICE' / 'MEMORY_COPY_DEVICE_TO_HOST' → '[memcpy Host-to-Device]' (the words nsys uses)."""
    d = direction.upper().replace("MEMORY_COPY_", "").strip("_ ")
    parts = [p.capitalize() for p in d.split("_TO_")] if "_TO_" in d else []
    return f"[memcpy {'-to-'.join(parts)}]" if len(parts) == 2 else f"[memcpy {direction.strip()}]"


def _rows(path: Path, text: str, skips: schema.SkipCounter) -> tuple[list[str], list[tuple[str, float]],
                                                                    list[list[str]], list[int]]:
    """The header, its column roles, the rows whose field count fits and their 1-based line numbers."""
    lines = text.split("\n")
    start = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    fields = _header(lines[start]) if start is not None else None
    if not fields:
        raise InputError(f"{path}: no rocprof CSV header")
    roles = [_role(f) for f in fields]
    rows, numbers = [], []
    for i, line in enumerate(lines[start + 1:], start=start + 2):
        if not line.strip():
            continue
        try:  # line by line: one bad line (an over-long field, a stray quote) is one skipped row
            row = next(csv.reader([line]))
        except (csv.Error, StopIteration) as exc:
            skips.skip(i, f"unparseable CSV ({str(exc)[:60]})")
            continue
        if len(row) != len(fields):
            skips.skip(i, f"{len(row)} fields where the header has {len(fields)}")
            continue
        if len(rows) >= MAX_ROWS:
            skips.skip(i, f"past the first {MAX_ROWS:,} rows")
            continue
        rows.append(row)
        numbers.append(i)
    return fields, roles, rows, numbers


def _stats(roles: list[tuple[str, float]], rows: list[list[str]]) -> tuple[str, list[dict[str, Any]]]:
    recs = []
    for row in rows:
        rec: dict[str, Any] = {}
        for (role, factor), cell in zip(roles, row, strict=True):
            if role in ("name", "kernel"):
                rec["name"] = cell.strip()
            elif role == "count":
                rec["count"] = _number(cell)
            elif role == "pct":
                rec["time_pct"] = _number(cell)
            elif role.endswith("_ns"):
                rec[role] = _number(cell) * factor
        recs.append(rec)
    report = _stats_report([r.get("name", "") for r in recs])
    if report == "cuda_gpu_mem_time_sum":
        for r in recs:
            r["name"] = _copy_name(r["name"]) if "_TO_" in r["name"].upper() else r["name"]
    return report, recs


def _trace(roles: list[tuple[str, float]], rows: list[list[str]], numbers: list[int], src: str,
           rank: int | None, skips: schema.SkipCounter) -> pd.DataFrame:
    col = {role: i for i, (role, _) in enumerate(roles) if role}
    f_start, f_end = roles[col["start"]][1], roles[col["end"]][1]
    out: dict[str, list] = {k: [] for k in ("cat", "name", "ts", "end", "pid", "tid", "corr")}
    for n, row in enumerate(rows):
        a, b = _number(row[col["start"]]) * f_start, _number(row[col["end"]]) * f_end
        if not (math.isfinite(a) and math.isfinite(b)) or b < a:
            skips.skip(numbers[n], "start/end missing or reversed")
            continue
        cell = {k: row[i] for k, i in col.items()}
        if "kernel" in cell:
            cat, name = "kernel", cell["kernel"].strip()
            pid, tid = _agent(cell.get("agent", "")), _number(cell.get("stream", cell.get("queue", "")))
        elif "direction" in cell:
            cat, name = "gpu_memcpy", _copy_name(cell["direction"])
            src_a, dst_a = _agent(cell.get("src_agent", "")), _agent(cell.get("dst_agent", ""))
            pid, tid = (dst_a if "HOST_TO" in cell["direction"].upper() else src_a), -1.0
        else:
            domain = cell.get("domain", "").upper()
            cat = ("user_annotation" if "MARKER" in domain or "ROCTX" in domain
                   else "hsa_runtime" if domain.startswith("HSA") else "hip_runtime")
            name, pid, tid = cell["function"].strip(), _number(cell.get("process", "")), _number(cell.get("thread", ""))
        out["cat"].append(cat)
        out["name"].append(name)
        out["ts"].append(a)
        out["end"].append(b)
        out["pid"].append(pid)
        out["tid"].append(tid)
        out["corr"].append(_number(cell.get("correlation", "")))
    n = len(out["cat"])
    ts, end = np.array(out["ts"], dtype=np.float64), np.array(out["end"], dtype=np.float64)
    gpu = np.array([c in ("kernel", "gpu_memcpy") for c in out["cat"]], dtype=bool)
    tid = np.nan_to_num(np.array(out["tid"], dtype=np.float64), nan=-1)
    return schema.trace_frame({
        "rank": np.full(n, rank if rank is not None else 0, dtype=np.int64), "cat": out["cat"], "name": out["name"],
        "ts_us": ts / 1e3, "dur_us": (end - ts) / 1e3,
        "pid": np.nan_to_num(np.array(out["pid"], dtype=np.float64), nan=-1).astype(np.int64),
        "tid": tid.astype(np.int64), "stream": np.where(gpu, tid, -1.0),
        "correlation": np.nan_to_num(np.array(out["corr"], dtype=np.float64), nan=-1),
        "bytes": np.full(n, np.nan), "source": pd.Categorical([src] * n),
    })


def _json_tool(doc: Any) -> dict:
    """The tool entry of a rocprofv3 JSON document (a list of one entry in newer versions, a dict in older)."""
    tool = doc.get("rocprofiler-sdk-tool") if isinstance(doc, dict) else None
    tool = tool[0] if isinstance(tool, list) and tool else tool
    if not isinstance(tool, dict):
        raise InputError("no rocprofiler-sdk-tool entry")
    return tool


def _json_rows(tool: dict) -> list[tuple[str, str, float, float, float, float, float]]:
    """(cat, name, start, end, agent or thread, queue, correlation) for every kernel, API call and copy."""
    kinds = (tool.get("strings") or {}).get("buffer_records") or []
    symbols = tool.get("kernel_symbols") or {}
    agents = {str((a.get("id") or {}).get("handle")): a.get("type") for a in tool.get("agents") or []
              if isinstance(a, dict)}

    def kind_of(rec: dict) -> tuple[str, list]:
        k = rec.get("kind")
        entry = kinds[k] if isinstance(k, int) and 0 <= k < len(kinds) and isinstance(kinds[k], dict) else {}
        return str(entry.get("kind", "")), entry.get("operations") or []

    def symbol(kid: Any) -> str:
        sym = symbols.get(str(kid), symbols.get(kid)) if isinstance(symbols, dict) else (
            symbols[kid] if isinstance(kid, int) and 0 <= kid < len(symbols) else None)
        return str((sym or {}).get("formatted_kernel_name") or (sym or {}).get("kernel_name") or f"kernel {kid}")

    rows = []
    records = tool.get("buffer_records") or {}
    for section, recs in records.items():
        for rec in recs if isinstance(recs, list) else []:
            if not isinstance(rec, dict):
                continue
            kind, ops = kind_of(rec)
            op = rec.get("operation")
            op_name = str(ops[op]) if isinstance(op, int) and 0 <= op < len(ops) else ""
            a, b = _number(str(rec.get("start_timestamp", ""))), _number(str(rec.get("end_timestamp", "")))
            corr = _number(str((rec.get("correlation_id") or {}).get("internal", "")))
            if "dispatch_info" in rec:
                info = rec["dispatch_info"]
                rows.append(("kernel", symbol(info.get("kernel_id")), a, b,
                             _number(str((info.get("agent_id") or {}).get("handle", ""))),
                             _number(str((info.get("queue_id") or {}).get("handle", ""))), corr))
            elif section.startswith("memory_copy") or kind == "MEMORY_COPY":
                src_t = agents.get(str((rec.get("src_agent_id") or {}).get("handle")))
                dst_t = agents.get(str((rec.get("dst_agent_id") or {}).get("handle")))
                types = {1: "HOST", 2: "DEVICE"}
                direction = op_name or f"{types.get(src_t, 'UNKNOWN')}_TO_{types.get(dst_t, 'UNKNOWN')}"
                rows.append(("gpu_memcpy", _copy_name(direction), a, b, -1.0, -1.0, corr))
            elif kind.endswith(("_API", "_API_EXT")) and op_name:
                cat = ("user_annotation" if kind.startswith("MARKER") else
                       "hsa_runtime" if kind.startswith("HSA") else "hip_runtime")
                rows.append((cat, op_name, a, b, _number(str(rec.get("thread_id", ""))), -1.0, corr))
    return rows


def _read_json(path: Path, text: str, rank: int | None, skips: schema.SkipCounter) -> pd.DataFrame:
    """The trace of a rocprofv3 JSON document (rows with missing or reversed times skipped and counted)."""
    try:
        tool = _json_tool(textio.json_loads(text))
    except (ValueError, InputError) as exc:
        raise InputError(f"{path}: not a readable rocprofv3 JSON document ({str(exc)[:80]})") from None
    rows = _json_rows(tool)
    keep = [r for r in rows if math.isfinite(r[2]) and math.isfinite(r[3]) and r[3] >= r[2]]
    for _ in range(len(rows) - len(keep)):
        skips.skip(None, "start/end missing or reversed")
    keep = keep[:MAX_ROWS]
    n = len(keep)
    cat = [r[0] for r in keep]
    gpu = np.array([c in ("kernel", "gpu_memcpy") for c in cat], dtype=bool)
    start = np.array([r[2] for r in keep], dtype=np.float64)
    end = np.array([r[3] for r in keep], dtype=np.float64)
    who = np.nan_to_num(np.array([r[4] for r in keep], dtype=np.float64), nan=-1)
    queue = np.nan_to_num(np.array([r[5] for r in keep], dtype=np.float64), nan=-1)
    return schema.trace_frame({
        "rank": np.full(n, rank if rank is not None else 0, dtype=np.int64), "cat": cat,
        "name": [r[1] for r in keep], "ts_us": start / 1e3, "dur_us": (end - start) / 1e3,
        "pid": np.where(gpu, who, -1).astype(np.int64), "tid": np.where(gpu, queue, who).astype(np.int64),
        "stream": np.where(gpu, queue, -1.0),
        "correlation": np.nan_to_num(np.array([r[6] for r in keep], dtype=np.float64), nan=-1),
        "bytes": np.full(n, np.nan), "source": pd.Categorical([str(path)] * n)})


def profile_name(path: str | Path) -> str:
    """The run a file belongs to: rocprofv3's `<pid>_kernel_trace.csv`, `<pid>_results.json` → `<dir>/<pid>`;
    v1's results.csv,
    results.stats.csv, results.hip_stats.csv → `<dir>/results` (the name before the first dot)."""
    path = Path(path)
    stem = textio.host_from_path(path).split(".")[0]
    m = re.match(r"^(?:(.*?)_)?(?:(?:kernel|hip_api|hsa_api|memory_copy|memory_allocation|marker_api|"
                 r"scratch_memory|rccl_api|domain|counter_collection|agent_info)(?:_trace|_stats|_info)|results)$",
                 stem)
    if m:  # `-o NAME` gives NAME_kernel_trace.csv; without a prefix the folder is the run
        return str(path.with_name(m.group(1)) if m.group(1) else path.parent)
    return str(path.with_name(stem))


def read(path: str | Path, rank: int | None = None, **_opts) -> schema.Bundle:
    """Read one rocprof / rocprofv3 CSV (see the module docstring) into a Bundle (trace; meta)."""
    path = Path(path)
    src = str(path)
    skips = schema.SkipCounter(src)
    text = textio.read_text(path)
    bundle = schema.Bundle(inputs=[src])
    if text.lstrip().startswith("{") and _JSON_KEY in text[:4096]:
        bundle.trace = _read_json(path, text, rank, skips)
        bundle.meta[nsys.META_PREFIX + src] = {"reports": {}, "trace_rows": int(len(bundle.trace)),
                                               "profile": profile_name(path), "rank": rank, "tool": TOOL}
        w = skips.warning(len(bundle.trace))
        bundle.warnings += [w] if w else []
        return bundle
    first = next((ln for ln in text.split("\n") if ln.strip()), "")
    fields = _header(first)
    if not fields or _layout([_role(f)[0] for f in fields]) is None:
        reports = _summary_tables(text, skips)
        if not reports:
            raise InputError(f"{src}: no rocprof CSV header and no rocprofv3 summary table")
        bundle.meta[nsys.META_PREFIX + src] = {"reports": reports, "trace_rows": 0, "profile": profile_name(path),
                                               "rank": rank, "tool": TOOL}
        w = skips.warning(sum(len(r) for r in reports.values()))
        bundle.warnings += [w] if w else []
        return bundle
    fields, roles, rows, numbers = _rows(path, text, skips)
    layout = _layout([r for r, _ in roles])
    reports = {}
    if layout == "stats":
        report, recs = _stats(roles, rows)
        reports[report] = recs
    else:
        bundle.trace = _trace(roles, rows, numbers, src, rank, skips)
    bundle.meta[nsys.META_PREFIX + src] = {"reports": reports, "trace_rows": int(len(bundle.trace)),
                                           "profile": profile_name(path), "rank": rank, "tool": TOOL}
    w = skips.warning(len(bundle.trace) if layout == "trace" else len(rows))
    if w:
        bundle.warnings.append(w)
    return bundle
