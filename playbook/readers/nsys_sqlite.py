"""SQLite profiler databases: Nsight Systems `nsys export --type sqlite` exports (here) and rocpd databases
(rocprofv3's default output, read by playbook.readers.rocpd) → the trace rows and per-report summary records that
playbook.readers.nsys gives for `nsys stats` exports (so playbook.analysis.nsys_profiles reads all alike). The two
are told apart by their tables.

Read with the standard library's sqlite3, read-only, never a whole table at once: the summaries are SQL aggregates
(GROUP BY), trace rows come CHUNK at a time, at most MAX_TRACE_ROWS per table (past it: a counted warning, the
summaries still cover every row). Tables used, from Nsight Systems' "SQLite Export Schema Reference" (they are created
lazily, so any may be absent; columns are looked up, not assumed):

  StringIds(id, value)                                  names
  CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, demangledName | shortName → StringIds)
  CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, correlationId, bytes, copyKind, srcKind, dstKind)
  CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, streamId, correlationId, bytes)
  CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId → StringIds)
  NVTX_EVENTS(start, end, eventType: 59 push/pop range, 60 start/end range; text | textId → StringIds)
  ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND(id, label)  copy direction and memory-kind labels (newer exports; older
                                                        ones hold CUPTI's CUpti_ActivityMemcpyKind / MemoryKind values)
All times are ns on the session clock.

Reports (nsys.py's record keys): cuda_gpu_kern_sum by kernel name; cuda_gpu_mem_time_sum and cuda_gpu_mem_size_sum
by operation ("[CUDA memcpy Host-to-Device]", "[CUDA memset]"); cuda_api_sum by runtime call (the "_v7000" version
suffix dropped, as nsys stats does); nvtx_sum by range text and style (PushPop / StartEnd).
Trace rows (schema.TRACE_COLUMNS): cat "kernel", "gpu_memcpy" (named with the memory kinds like nsys' GPU trace:
"[CUDA memcpy Host-to-Device] (Pageable -> Device)"), "gpu_memset", and "cuda_runtime" (the API calls); rank = the
GPU (deviceId) unless `rank` is given; an API call's rank is its process's GPU (the device it ran most kernels on).
A damaged or compressed file, or a database that is neither, is a one-line InputError naming the file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import nsys, rocpd, rocprof

FORMAT = "Nsight Systems SQLite export (nsys export --type sqlite) or rocpd database (rocprofv3)"
MAGIC = "SQLite format 3"
CHUNK = 65_536
MAX_TRACE_ROWS = 2_000_000  # per table: a 20M-kernel profile keeps its summaries, not every row
KERNEL, MEMCPY, MEMSET, RUNTIME, NVTX = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                         "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")
# CUPTI's CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind, for exports without the ENUM_* label tables
COPY_KINDS = {1: "Host-to-Device", 2: "Device-to-Host", 3: "Host-to-Array", 4: "Array-to-Host", 5: "Array-to-Array",
              6: "Array-to-Device", 7: "Device-to-Array", 8: "Device-to-Device", 9: "Host-to-Host",
              10: "Peer-to-Peer"}
MEM_KINDS = {1: "Pageable", 2: "Pinned", 3: "Device", 4: "Array", 5: "Managed", 6: "Device Static",
             7: "Managed Static"}
NVTX_STYLES = {59: "PushPop", 60: "StartEnd"}


def sniff(head: str) -> bool:
    """An SQLite database (its 16-byte header); read() tells an nsys export from any other."""
    return head.startswith(MAGIC)


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f'PRAGMA table_info("{table}")')}


def _labels(db: sqlite3.Connection, table: str, fallback: dict[int, str]) -> dict[int, str]:
    """id → label from an ENUM_* table when the export has one, else CUPTI's values."""
    if "label" not in _columns(db, table):
        return dict(fallback)
    return {int(i): str(lab) for i, lab in db.execute(f'SELECT id, label FROM "{table}"')}


def _strings(db: sqlite3.Connection, table: str, column: str) -> dict[int, str]:
    """The StringIds values that `table.column` refers to (only those: StringIds may hold millions)."""
    return {int(i): str(v) for i, v in db.execute(
        f'SELECT id, value FROM StringIds WHERE id IN (SELECT DISTINCT "{column}" FROM "{table}")')}


def _api_name(name: str) -> str:
    """'cudaLaunchKernel_v7000' → 'cudaLaunchKernel' (nsys stats drops the version suffix)."""
    head, _, tail = name.rpartition("_v")
    return head if head and tail.isdigit() else name


def _chunks(db: sqlite3.Connection, sql: str, limit: int):
    """The rows of `sql` as numpy object arrays, CHUNK rows at a time, `limit` rows at most."""
    cur = db.execute(f"{sql} LIMIT {int(limit)}")
    while rows := cur.fetchmany(CHUNK):
        yield np.array(rows, dtype=object)


class _Export:
    """One open database: what it holds and how to name it."""

    def __init__(self, db: sqlite3.Connection, path: Path):
        self.db, self.path = db, path
        self.tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        self.cols = {t: _columns(db, t) for t in (KERNEL, MEMCPY, MEMSET, RUNTIME, NVTX) if t in self.tables}
        self.copy_kinds = _labels(db, "ENUM_CUDA_MEMCPY_OPER", COPY_KINDS) if MEMCPY in self.cols else {}
        self.mem_kinds = _labels(db, "ENUM_CUDA_MEM_KIND", MEM_KINDS) if MEMCPY in self.cols else {}

    def kernel_name_column(self) -> str | None:
        cols = self.cols.get(KERNEL, set())
        return next((c for c in ("demangledName", "shortName", "mangledName") if c in cols), None)

    def copy_op(self, kind: Any) -> str:
        return f"[CUDA memcpy {self.copy_kinds.get(int(kind), 'Unknown')}]"


def _summary(db: sqlite3.Connection, sql: str, names: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """Records of a GROUP BY query selecting key, count, total, min, max[, bytes] (times in ns)."""
    out = []
    for key, n, total, lo, hi, *rest in db.execute(sql):
        name = names.get(int(key), str(key)) if names is not None and key is not None else str(key)
        rec = {"name": name, "count": float(n), "total_ns": float(total or 0), "avg_ns": float(total or 0) / max(n, 1),
               "min_ns": float(lo or 0), "max_ns": float(hi or 0)}
        if rest:
            rec["total_bytes"] = float(rest[0] or 0)
        out.append(rec)
    total = sum(r["total_ns"] for r in out)
    for r in out:
        r["time_pct"] = 100.0 * r["total_ns"] / total if total > 0 else float("nan")
    return out


def _reports(ex: _Export) -> dict[str, list[dict[str, Any]]]:
    db, reps = ex.db, {}
    agg = 'count(*), sum("end" - start), min("end" - start), max("end" - start)'
    name_col = ex.kernel_name_column()
    if name_col:
        reps["cuda_gpu_kern_sum"] = _summary(db, f'SELECT "{name_col}", {agg} FROM {KERNEL} GROUP BY 1',
                                             _strings(db, KERNEL, name_col))
    copies = []
    if "copyKind" in ex.cols.get(MEMCPY, set()):
        copies = _summary(db, f"SELECT copyKind, {agg}, sum(bytes) FROM {MEMCPY} GROUP BY 1")
        for r in copies:
            r["name"] = ex.copy_op(r["name"])
    if MEMSET in ex.cols:
        sets = _summary(db, f"SELECT '[CUDA memset]', {agg}, sum(bytes) FROM {MEMSET}")
        copies += [r for r in sets if r["count"]]
    if copies:
        reps["cuda_gpu_mem_time_sum"] = copies
        reps["cuda_gpu_mem_size_sum"] = [{"name": r["name"], "count": r["count"], "total_bytes": r["total_bytes"]}
                                         for r in copies]
    if "nameId" in ex.cols.get(RUNTIME, set()):
        api = _summary(db, f"SELECT nameId, {agg} FROM {RUNTIME} GROUP BY 1", _strings(db, RUNTIME, "nameId"))
        for r in api:
            r["name"] = _api_name(r["name"])
        reps["cuda_api_sum"] = api
    if NVTX in ex.cols:
        reps["nvtx_sum"] = _nvtx(ex)
    return reps


def _nvtx(ex: _Export) -> list[dict[str, Any]]:
    cols = ex.cols[NVTX]
    text = "text" if "text" in cols else "NULL"
    if "textId" in cols and "StringIds" in ex.tables:
        text = f"coalesce({text}, (SELECT value FROM StringIds WHERE id = textId))"
    styles = ", ".join(map(str, NVTX_STYLES))
    recs = []
    for t, style, n, total, lo, hi in ex.db.execute(
            f'SELECT {text}, eventType, count(*), sum("end" - start), min("end" - start), max("end" - start) '
            f'FROM {NVTX} WHERE eventType IN ({styles}) AND "end" IS NOT NULL AND "end" >= start GROUP BY 1, 2'):
        recs.append({"name": str(t or ""), "range": str(t or ""), "style": NVTX_STYLES.get(int(style), str(style)),
                     "count": float(n), "total_ns": float(total or 0), "avg_ns": float(total or 0) / max(n, 1),
                     "min_ns": float(lo or 0), "max_ns": float(hi or 0)})
    return recs


def _trace(ex: _Export, src: str, rank: int | None, notes: list[str]) -> pd.DataFrame:
    """Trace rows of the GPU tables and the runtime calls, each table read CHUNK rows at a time."""
    frames = []
    name_col = ex.kernel_name_column()
    specs = []
    if name_col:
        specs.append(("kernel", KERNEL, f'"{name_col}"', "NULL", _strings(ex.db, KERNEL, name_col)))
    if MEMCPY in ex.cols:
        kinds = [c if c in ex.cols[MEMCPY] else "0" for c in ("copyKind", "srcKind", "dstKind")]
        specs.append(("gpu_memcpy", MEMCPY, f"{kinds[0]} * 65536 + {kinds[1]} * 256 + {kinds[2]}", "bytes", None))
    if MEMSET in ex.cols:
        specs.append(("gpu_memset", MEMSET, "0", "bytes", None))
    for cat, table, key, nbytes, names in specs:
        cols = ex.cols[table]
        dev = "deviceId" if "deviceId" in cols else "-1"
        stream = "streamId" if "streamId" in cols else "-1"
        corr = "correlationId" if "correlationId" in cols else "-1"
        sql = f'SELECT start, "end", {dev}, {stream}, {corr}, {nbytes}, {key} FROM {table} ORDER BY start'
        frames += [_gpu_rows(c, cat, names, ex, src, rank) for c in _chunks(ex.db, sql, MAX_TRACE_ROWS)]
        _note_cut(ex.db, table, notes)
    if "nameId" in ex.cols.get(RUNTIME, set()) and "globalTid" in ex.cols[RUNTIME]:
        frames += _runtime_rows(ex, src, rank, notes)
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else schema.trace_frame()


def _note_cut(db: sqlite3.Connection, table: str, notes: list[str]) -> None:
    """A note when `table` holds more rows than the trace keeps."""
    n = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    if n > MAX_TRACE_ROWS:
        notes.append(f"{table}: {n:,} rows; the trace keeps the first {MAX_TRACE_ROWS:,} (summaries cover all)")


def _gpu_rows(c: np.ndarray, cat: str, names: dict[int, str] | None, ex: _Export, src: str,
              rank: int | None) -> pd.DataFrame:
    start, end = c[:, 0].astype(np.float64), c[:, 1].astype(np.float64)
    dev = c[:, 2].astype(np.int64)
    keys = c[:, 6]
    if cat == "kernel":
        name = [names.get(int(k), str(k)) for k in keys]
    elif cat == "gpu_memcpy":
        name = [f"{ex.copy_op(int(k) >> 16)} ({ex.mem_kinds.get((int(k) >> 8) & 255, 'Unknown')} -> "
                f"{ex.mem_kinds.get(int(k) & 255, 'Unknown')})" for k in keys]
    else:
        name = ["[CUDA memset]"] * len(c)
    stream = c[:, 3].astype(np.float64)
    return schema.trace_frame({
        "rank": np.full(len(c), rank, dtype=np.int64) if rank is not None else dev, "cat": [cat] * len(c),
        "name": name, "ts_us": start / 1e3, "dur_us": (end - start) / 1e3, "pid": dev,
        "tid": stream.astype(np.int64), "stream": stream, "correlation": c[:, 4].astype(np.float64),
        "bytes": np.array([np.nan if b is None else float(b) for b in c[:, 5]], dtype=np.float64),
        "source": pd.Categorical([src] * len(c))})


def _runtime_rows(ex: _Export, src: str, rank: int | None, notes: list[str]) -> list[pd.DataFrame]:
    """The CUDA API calls; each process's calls get the rank of the GPU it ran most kernels on."""
    device: dict[int, int] = {}
    if KERNEL in ex.cols and {"globalPid", "deviceId"} <= ex.cols[KERNEL]:
        for pid, dev, _n in ex.db.execute(f"SELECT globalPid, deviceId, count(*) FROM {KERNEL} GROUP BY 1, 2 "
                                          "ORDER BY 3"):
            device[int(pid) >> 24] = int(dev)  # the largest count comes last and wins
    names = {k: _api_name(v) for k, v in _strings(ex.db, RUNTIME, "nameId").items()}
    corr = "correlationId" if "correlationId" in ex.cols[RUNTIME] else "-1"
    sql = f'SELECT start, "end", globalTid, {corr}, nameId FROM {RUNTIME} ORDER BY start'
    out = []
    for c in _chunks(ex.db, sql, MAX_TRACE_ROWS):
        start, end = c[:, 0].astype(np.float64), c[:, 1].astype(np.float64)
        gtid = c[:, 2].astype(np.int64)
        pid = (gtid >> 24) & 0xFFFFFF
        ranks = np.array([device.get(int(p), 0) for p in pid], dtype=np.int64) if rank is None \
            else np.full(len(c), rank, dtype=np.int64)
        out.append(schema.trace_frame({
            "rank": ranks, "cat": ["cuda_runtime"] * len(c), "name": [names.get(int(k), str(k)) for k in c[:, 4]],
            "ts_us": start / 1e3, "dur_us": (end - start) / 1e3, "pid": pid, "tid": gtid & 0xFFFFFF,
            "stream": np.full(len(c), -1.0), "correlation": c[:, 3].astype(np.float64),
            "bytes": np.full(len(c), np.nan), "source": pd.Categorical([src] * len(c))}))
    _note_cut(ex.db, RUNTIME, notes)
    return out


def read(path: str | Path, rank: int | None = None, **_opts) -> schema.Bundle:
    """Read an `nsys export --type sqlite` database (see the module docstring) into a Bundle (trace; meta)."""
    path = Path(path)
    src = str(path)
    with open(path, "rb") as fh:
        if not fh.read(len(MAGIC)).startswith(MAGIC.encode()):
            raise InputError(f"{src}: a compressed SQLite database; decompress it first (SQLite reads plain files)")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, ValueError) as exc:
        raise InputError(f"{src}: cannot open as an SQLite database ({exc})") from None
    notes: list[str] = []
    tool, profile = "nsys", nsys.profile_name(path)
    try:
        ex = _Export(db, path)
        if not ex.cols and rocpd.is_rocpd(ex.tables):
            tool, profile = rocprof.TOOL, rocprof.profile_name(path)
            reports = rocpd.reports(db, ex.tables)
            trace = rocpd.trace(db, ex.tables, lambda v: _columns(db, v),
                                lambda sql: _chunks(db, sql, MAX_TRACE_ROWS), src, rank,
                                lambda v: _note_cut(db, f"`{v}`", notes))
        elif not ex.cols:
            found = ", ".join(sorted(ex.tables)[:5]) or "no tables"
            raise InputError(f"{src}: an SQLite database but no Nsight Systems export or rocpd database (no "
                             f"CUPTI_ACTIVITY_KIND_* / NVTX_EVENTS table, no kernels / regions view; found {found})")
        else:
            reports = _reports(ex)
            trace = _trace(ex, src, rank, notes)
    except sqlite3.Error as exc:
        raise InputError(f"{src}: damaged SQLite database ({' '.join(str(exc).split())})") from None
    finally:
        db.close()
    bundle = schema.Bundle(inputs=[src])
    if len(trace):
        trace["source"] = trace["source"].astype("category")
        bundle.trace = trace.sort_values(["rank", "ts_us"], kind="stable").reset_index(drop=True)
    bundle.meta[nsys.META_PREFIX + src] = {"reports": reports, "trace_rows": int(len(bundle.trace)),
                                           "profile": profile, "rank": rank,
                                           "rank_from": "argument" if rank is not None else "device", "tool": tool}
    bundle.warnings += [f"{src}: {n}" for n in notes]
    return bundle
