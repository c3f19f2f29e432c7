"""Nsight Systems `nsys export --type json` → the trace rows and summary records nsys.py gives for `nsys stats`.

The export is one serialized message per line (Nsight Systems exporter docs, "JSON and Text Format Description"):
every event first, then the strings, then stdout/stderr streams and thread names. Events are told by their message
key, not their numeric Type:

  {"Type":79,"CudaEvent":{"startNs":"...","endNs":"...","correlationId":745,"deviceId":1,"streamId":"7",
      "globalPid":"...","kernel":{"demangledName":"316","shortName":"316",...}}}        a kernel (names: string ids)
  {"Type":80,"CudaEvent":{..., "memcpy":{"sizebytes":"58720256","copyKind":"2",...}}}   a copy (CUPTI copy kinds)
  {"Type":48,"TraceProcessEvent":{"startNs":"...","endNs":"...","correlationId":745,"name":"330",
      "globalTid":"..."}}                                                                 a CUDA API call
  {"Type":59,"NvtxEvent":{"Timestamp":"...","EndTimestamp":"...","Text":"iteration 16",...}}  an NVTX range
  {"data":["[Unknown]", ...]}  or, with --separate-strings, {"type":"String","id":"3720","value":"..."}  strings

Read line by line (textio.iter_lines: memory is one line plus the rows kept); the summaries (kernels, copies, API
calls, NVTX ranges) count every event, the trace keeps at most MAX_TRACE_ROWS rows (a counted warning past it).
Names are string ids until the strings arrive at the end; a string table longer than a line may be (textio's
MAX_LINE_CHARS) cannot be read whole: names then stay "#<id>" with a warning (export with --separate-strings=true).
Rows and reports as in nsys_sqlite: cat kernel / gpu_memcpy / cuda_runtime, rank = deviceId unless `rank` is given.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import nsys, textio
from playbook.readers.nsys_sqlite import COPY_KINDS, MAX_TRACE_ROWS, _api_name

FORMAT = "Nsight Systems JSON export (nsys export --type json)"
_SNIFF = re.compile(r'^\{"Type":\d+,"(?:CudaEvent|TraceProcessEvent|NvtxEvent|CommEvent|SchedEvent)":\{', re.M)


def sniff(head: str) -> bool:
    """Lines of serialized Nsight Systems event messages."""
    return bool(_SNIFF.search(head))


def _int(x: Any) -> float:
    try:
        return float(int(x))
    except (TypeError, ValueError):
        return math.nan


class _Collector:
    """Trace rows (at most MAX_TRACE_ROWS) and per-name sums of every event, names as string ids."""

    def __init__(self):
        self.rows: list[tuple] = []  # (cat, name key, start, end, device, stream, correlation, bytes)
        self.cut = 0
        self.sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, math.inf, 0.0])

    def add(self, cat: str, key: str, start: float, end: float, *rest: float) -> None:
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            return
        s = self.sums[(cat, key)]
        d = end - start
        s[0] += 1
        s[1] += d
        s[2] = min(s[2], d)
        s[3] = max(s[3], d)
        if cat == "nvtx":
            return
        if len(self.rows) < MAX_TRACE_ROWS:
            self.rows.append((cat, key, start, end, *rest))
        else:
            self.cut += 1

    def event(self, msg: dict) -> None:
        if (cuda := msg.get("CudaEvent")) is not None:
            dev, stream = _int(cuda.get("deviceId")), _int(cuda.get("streamId"))
            corr, a, b = _int(cuda.get("correlationId")), _int(cuda.get("startNs")), _int(cuda.get("endNs"))
            if isinstance(k := cuda.get("kernel"), dict):
                self.add("kernel", str(k.get("demangledName", k.get("shortName", ""))), a, b, dev, stream, corr,
                         math.nan)
            elif isinstance(m := cuda.get("memcpy"), dict):
                kind = COPY_KINDS.get(int(_int(m.get("copyKind")) if math.isfinite(_int(m.get("copyKind"))) else 0),
                                      "Unknown")
                self.add("gpu_memcpy", f"[CUDA memcpy {kind}]", a, b, dev, stream, corr, _int(m.get("sizebytes")))
            elif isinstance(m := cuda.get("memset"), dict):
                self.add("gpu_memset", "[CUDA memset]", a, b, dev, stream, corr, _int(m.get("sizebytes")))
        elif (api := msg.get("TraceProcessEvent")) is not None and _int(api.get("correlationId")) > 0:
            self.add("cuda_runtime", str(api.get("name", "")), _int(api.get("startNs")), _int(api.get("endNs")),
                     -1.0, -1.0, _int(api.get("correlationId")), math.nan)
        elif (nv := msg.get("NvtxEvent")) is not None and nv.get("EndTimestamp") is not None:
            text = nv.get("Text")
            key = str(text) if text is not None else f"#{nv.get('TextId', '')}"
            self.add("nvtx", key, _int(nv.get("Timestamp")), _int(nv.get("EndTimestamp")))


def _strings(msg: dict, table: dict[str, str]) -> bool:
    """Add a string-table message to `table`; False when the message is no string table."""
    if isinstance(msg.get("data"), list) and len(msg) == 1:
        table.update({str(i): str(v) for i, v in enumerate(msg["data"])})
        return True
    if msg.get("type") == "String" and "id" in msg:
        table[str(msg["id"])] = str(msg.get("value", ""))
        return True
    return False


def _name(cat: str, key: str, strings: dict[str, str]) -> str:
    if cat in ("kernel", "cuda_runtime"):
        name = strings.get(key, f"#{key}")
        return _api_name(name) if cat == "cuda_runtime" else name
    return key


def read(path: str | Path, rank: int | None = None, **_opts) -> schema.Bundle:
    """Read an `nsys export --type json` file (see the module docstring) into a Bundle (trace; meta)."""
    path = Path(path)
    src = str(path)
    col, strings = _Collector(), {}
    skips = schema.SkipCounter(src)
    notes: list[str] = []
    events = 0
    for i, line in enumerate(textio.iter_lines(path, notes=notes), start=1):
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            skips.skip(i, "not one JSON message (cut or damaged)" + (
                "; names stay string ids" if line.startswith('{"data":[') else ""))
            continue
        if not isinstance(msg, dict) or _strings(msg, strings):
            continue
        col.event(msg)
        events += 1
    if not col.sums:
        raise InputError(f"{src}: no CUDA or NVTX event in this Nsight Systems JSON export")
    bundle = schema.Bundle(inputs=[src])
    bundle.trace = _trace(col, strings, src, rank)
    bundle.meta[nsys.META_PREFIX + src] = {"reports": _reports(col, strings), "trace_rows": int(len(bundle.trace)),
                                           "profile": nsys.profile_name(path), "rank": rank, "tool": "nsys"}
    w = skips.warning(events)
    bundle.warnings += ([w] if w else []) + notes
    if col.cut:
        bundle.warnings.append(f"{src}: the trace keeps the first {MAX_TRACE_ROWS:,} GPU/API rows; {col.cut:,} more "
                               "are in the summaries only")
    return bundle


_REPORTS = {"kernel": "cuda_gpu_kern_sum", "gpu_memcpy": "cuda_gpu_mem_time_sum",
            "gpu_memset": "cuda_gpu_mem_time_sum", "cuda_runtime": "cuda_api_sum", "nvtx": "nvtx_sum"}


def _reports(col: _Collector, strings: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    reports: dict[str, list[dict[str, Any]]] = {}
    for (cat, key), (n, total, lo, hi) in col.sums.items():
        rec = {"name": _name(cat, key, strings), "count": n, "total_ns": total, "avg_ns": total / max(n, 1),
               "min_ns": lo, "max_ns": hi}
        if cat == "nvtx":
            rec.update(range=rec["name"], style="PushPop")
        reports.setdefault(_REPORTS[cat], []).append(rec)
    return reports


def _trace(col: _Collector, strings: dict[str, str], src: str, rank: int | None) -> pd.DataFrame:
    if not col.rows:
        return schema.trace_frame()
    cat, key, start, end, dev, stream, corr, nbytes = zip(*col.rows, strict=True)
    start, end = np.array(start, dtype=np.float64), np.array(end, dtype=np.float64)
    dev, stream = np.array(dev, dtype=np.float64), np.array(stream, dtype=np.float64)
    n = len(col.rows)
    gpu_dev = dev[dev >= 0]
    host_rank = int(np.bincount(gpu_dev.astype(np.int64)).argmax()) if len(gpu_dev) else 0
    ranks = np.full(n, rank, dtype=np.int64) if rank is not None else np.where(dev >= 0, dev, host_rank).astype(np.int64)
    frame = schema.trace_frame({
        "rank": ranks, "cat": list(cat), "name": [_name(c, k, strings) for c, k in zip(cat, key, strict=True)],
        "ts_us": start / 1e3, "dur_us": (end - start) / 1e3, "pid": np.where(dev >= 0, dev, -1).astype(np.int64),
        "tid": np.nan_to_num(stream, nan=-1).astype(np.int64), "stream": np.nan_to_num(stream, nan=-1),
        "correlation": np.nan_to_num(np.array(corr, dtype=np.float64), nan=-1),
        "bytes": np.array(nbytes, dtype=np.float64), "source": pd.Categorical([src] * n)})
    return frame.sort_values(["rank", "ts_us"], kind="stable").reset_index(drop=True)
