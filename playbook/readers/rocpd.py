"""rocpd databases (rocprofv3's default output since ROCm 7: `<pid>_results.db`, SQLite) → the trace rows and summary
records the rocprof CSV reader gives. Opened by playbook.readers.nsys_sqlite, which tells the two SQLite families
apart by their tables.

Read through the views rocprofiler-sdk defines for querying (share/rocprofiler-sdk-rocpd/data_views.sql), with the
columns looked up, not assumed:
  kernels        name, start, end, agent_absolute_index | agent_logical_index, stream_id | queue_id, correlation_id
  regions        category (HIP_RUNTIME_API[_EXT], HIP_COMPILER_API[_EXT], HSA_*_API, MARKER_*_API, ...), name, start,
                 end, tid, correlation_id: the API calls and roctx ranges
  memory_copies  name (MEMORY_COPY_HOST_TO_DEVICE, ...), start, end, size, stream_id
Times are ns. Summaries are SQL aggregates over every row (kernels → cuda_gpu_kern_sum, HIP calls → cuda_api_sum,
copies → cuda_gpu_mem_time_sum, roctx ranges → nvtx_sum); trace rows come in chunks, at most MAX_TRACE_ROWS per view.
Rows: cat kernel / gpu_memcpy / hip_runtime / hsa_runtime / user_annotation; rank = the `rank` argument, else 0
(one process per database, as the CSV files); pid = the GPU agent, tid = the stream for GPU rows, the thread for
the others.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
import pandas as pd

from playbook.model import schema
from playbook.readers import rocprof

VIEWS = ("kernels", "regions", "memory_copies")


def is_rocpd(tables: set[str]) -> bool:
    """A rocpd database: it has the kernels and regions views (or tables)."""
    return {"kernels", "regions"} <= tables


def _pick(cols: set[str], *names: str, default: str = "NULL") -> str:
    return next((f"`{n}`" for n in names if n in cols), default)


def _region_cat(category: str) -> str:
    c = (category or "").upper()
    return "user_annotation" if c.startswith(("MARKER", "ROCTX")) else "hsa_runtime" if c.startswith("HSA") \
        else "hip_runtime" if c.startswith("HIP") else ""


def _agg(db: sqlite3.Connection, view: str, where: str = "") -> list[dict[str, Any]]:
    out = []
    for name, n, total, lo, hi in db.execute(
            f"SELECT name, count(*), sum(`end` - start), min(`end` - start), max(`end` - start) FROM `{view}` "
            f"{where} GROUP BY name"):
        out.append({"name": str(name), "count": float(n), "total_ns": float(total or 0),
                    "avg_ns": float(total or 0) / max(n, 1), "min_ns": float(lo or 0), "max_ns": float(hi or 0)})
    return out


def reports(db: sqlite3.Connection, tables: set[str]) -> dict[str, list[dict[str, Any]]]:
    """The kernel, HIP API, copy and roctx-range summaries (SQL aggregates over every row)."""
    reps: dict[str, list[dict[str, Any]]] = {"cuda_gpu_kern_sum": _agg(db, "kernels")}
    reps["cuda_api_sum"] = _agg(db, "regions", "WHERE upper(category) LIKE 'HIP%'")
    ranges = _agg(db, "regions", "WHERE upper(category) LIKE 'MARKER%' AND `end` > start")
    if ranges:
        reps["nvtx_sum"] = [dict(r, range=r["name"], style="PushPop") for r in ranges]
    if "memory_copies" in tables:
        copies = _agg(db, "memory_copies")
        for r in copies:
            r["name"] = rocprof._copy_name(r["name"]) if "_TO_" in r["name"].upper() else r["name"]
        reps["cuda_gpu_mem_time_sum"] = copies
    return {k: v for k, v in reps.items() if v}


def trace(db: sqlite3.Connection, tables: set[str], columns, chunks, src: str, rank: int | None,
          note_cut) -> pd.DataFrame:
    """Trace rows of the three views; `columns(view)`, `chunks(sql)` and `note_cut(view)` come from the opener."""
    frames = []
    for view in VIEWS:
        if view not in tables:
            continue
        cols = columns(view)
        who = (_pick(cols, "agent_absolute_index", "agent_logical_index", "agent_id", default="-1")
               if view == "kernels" else _pick(cols, "tid", default="-1") if view == "regions" else "-1")
        lane = _pick(cols, "stream_id", "queue_id", default="-1") if view != "regions" else "-1"
        kind = _pick(cols, "category", default="''") if view == "regions" else "''"
        sql = (f"SELECT {kind}, name, start, `end`, {who}, {lane}, {_pick(cols, 'correlation_id', default='-1')} "
               f"FROM `{view}` ORDER BY start")
        for c in chunks(sql):
            frames.append(_rows(c, view, src, rank))
        note_cut(view)
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else schema.trace_frame()


def _num(values) -> np.ndarray:
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            pass
    return out


def _rows(c: np.ndarray, view: str, src: str, rank: int | None) -> pd.DataFrame:
    if view == "kernels":
        cat = ["kernel"] * len(c)
        name = [str(x) for x in c[:, 1]]
    elif view == "memory_copies":
        cat = ["gpu_memcpy"] * len(c)
        name = [rocprof._copy_name(str(x)) for x in c[:, 1]]
    else:
        cat = [_region_cat(str(x)) for x in c[:, 0]]
        name = [str(x) for x in c[:, 1]]
    keep = np.array([bool(k) for k in cat], dtype=bool)
    start, end = _num(c[:, 2]), _num(c[:, 3])
    keep &= np.isfinite(start) & np.isfinite(end) & (end >= start)
    who, lane = np.nan_to_num(_num(c[:, 4]), nan=-1), np.nan_to_num(_num(c[:, 5]), nan=-1)
    gpu = view != "regions"
    n = int(keep.sum())
    return schema.trace_frame({
        "rank": np.full(n, rank if rank is not None else 0, dtype=np.int64),
        "cat": [x for x, k in zip(cat, keep, strict=True) if k], "name": [x for x, k in zip(name, keep, strict=True)
                                                                       if k],
        "ts_us": start[keep] / 1e3, "dur_us": (end[keep] - start[keep]) / 1e3,
        "pid": (who[keep] if gpu else np.full(n, -1.0)).astype(np.int64),
        "tid": (lane[keep] if gpu else who[keep]).astype(np.int64),
        "stream": lane[keep] if gpu else np.full(n, -1.0),
        "correlation": np.nan_to_num(_num(c[:, 6]), nan=-1)[keep], "bytes": np.full(n, np.nan),
        "source": pd.Categorical([src] * n)})
