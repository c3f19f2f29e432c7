"""Building big telemetry tables cheaply from numpy columns (millions of rows): sorting by a transpose or a radix
sort, shared NaN columns, Arrow strings for host names, and handing freed heap memory back to the system."""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from playbook.model import schema
from playbook.readers import native
from playbook.readers.textio import int_array


def release_memory() -> None:
    """Return freed heap pages to the system (glibc's malloc_trim; nothing elsewhere). Column pieces below glibc's
    mmap threshold are freed into the heap, which keeps them resident: a reader that joins many pieces into one big
    column would otherwise hold both in RSS."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


_TRIM: list = []


def _malloc_trim():
    if not _TRIM:
        try:
            _TRIM.append(getattr(ctypes.CDLL(None), "malloc_trim", None))
        except OSError:  # pragma: no cover - no C library to load
            _TRIM.append(None)
    return _TRIM[0]


_HELD = {"users": 0, "huge": True}
_HELD_LOCK = threading.Lock()


@contextlib.contextmanager
def small_pages():
    """Within the block numpy asks for no transparent huge pages (it does for arrays of 4 MiB and more).

    Where the kernel's THP defrag setting is `madvise` (a common default, and this VM's), the first touch of such
    an array compacts and zeroes 2 MiB at once: joining the columns of a 5.5 M-row nvidia-smi log took 1.4 s
    instead of 0.1 s. Nesting and threads are counted: the setting comes back when the last block ends."""
    setter = _madvise_setter()
    if setter is None:  # pragma: no cover - a numpy without the switch
        yield
        return
    with _HELD_LOCK:
        if not _HELD["users"]:
            _HELD["huge"] = setter(False)
        _HELD["users"] += 1
    try:
        yield
    finally:
        with _HELD_LOCK:
            _HELD["users"] -= 1
            if not _HELD["users"]:
                setter(_HELD["huge"])


def _madvise_setter():
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        with contextlib.suppress(ImportError):
            setter = getattr(__import__(module, fromlist=["_"]), "_set_madvise_hugepage", None)
            if setter is not None:
                return setter
    return None  # pragma: no cover


PARALLEL_ROWS = 1_000_000  # columns at least this long are copied on two threads (see map_columns)


class Concat:
    """The rows of several arrays in order, not yet joined into one: a reader's pieces, which build_telemetry
    copies once, straight into the table's (gpu, time) order. `np.asarray(concat)` joins them."""

    __slots__ = ("parts",)

    def __init__(self, parts) -> None:
        self.parts = [q for p in parts for q in (p.parts if isinstance(p, Concat) else [np.asarray(p)])]

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        joined = self.parts[0] if len(self.parts) == 1 else np.concatenate(self.parts)
        return joined if dtype is None else joined.astype(dtype, copy=False)


def joined(parts: list[np.ndarray]):
    """One array of `parts` (itself when there is one), or a Concat of them where the C extension can move them
    into table order without the join (readers/native.py)."""
    if len(parts) == 1:
        return parts[0]
    return Concat(parts) if native.C is not None else np.concatenate(parts)


def map_columns(fn, keys: list, rows: int) -> dict:
    """{key: fn(key)} for each column key; on two threads when the columns hold `rows` >= PARALLEL_ROWS (numpy
    releases the GIL while it copies: joining a 5.5 M-row log's 10 columns 0.28 -> 0.14 s, transposing them
    0.28 -> 0.19 s). `fn` should take its column out of its container, so each input is freed once copied."""
    workers = min(2, os.cpu_count() or 1)
    if rows < PARALLEL_ROWS or workers < 2 or len(keys) < 2:
        return {k: fn(k) for k in keys}
    with ThreadPoolExecutor(workers, thread_name_prefix="columns") as pool:
        return dict(zip(keys, pool.map(fn, keys), strict=True))


def median_interval_sorted(time_ns: np.ndarray, key: np.ndarray, max_gaps: int = 1_000_000) -> float:
    """Median positive gap (s) between consecutive samples of one key, for arrays sorted by (key, time).

    Beyond `max_gaps` gaps an evenly strided subset is used (the median of a million gaps is exact enough).
    """
    if len(time_ns) < 2:
        return float("nan")
    stride = max(1, (len(time_ns) - 1) // max_gaps)
    dt = time_ns[1::stride] - time_ns[:-1:stride]
    same = key[1::stride] == key[:-1:stride]
    dt = dt[same & (dt > 0)]
    return float(np.median(dt) / 1e9) if len(dt) else float("nan")


def _transpose(block: np.ndarray, perm: np.ndarray | None, tile: int = 128) -> np.ndarray:
    """block[:, perm].T flattened, copied a tile × tile square at a time (both sides stay in cache: 2-4x a
    plain transpose of a wide block)."""
    ticks, width = block.shape
    out = np.empty((width, ticks), dtype=block.dtype)
    for c in range(0, width, tile):
        cols = slice(c, c + tile) if perm is None else perm[c:c + tile]
        for start in range(0, ticks, tile):
            out[c:c + tile, start:start + tile] = block[start:start + tile, cols].T
    return out.ravel()


def _tick_major(time_ns: np.ndarray, gpu: np.ndarray, host_codes: np.ndarray) -> tuple[int, np.ndarray | None] | None:
    """(GPUs per tick, column order) when rows repeat the same GPU sequence every tick with times rising per GPU.

    That is how pollers write logs; reordering them by (host, gpu, time) is then a cheap transpose.
    """
    n = len(time_ns)
    first_host = host_codes[0] if n else 0
    if n < 4 or not np.all(host_codes == first_host):
        return None
    repeat = np.flatnonzero(gpu == gpu[0])
    width = int(repeat[1]) if len(repeat) > 1 else n
    if width < 1 or n % width or width == n:
        return None
    block = gpu.reshape(-1, width)
    if not np.all(block == block[0]) or len(np.unique(block[0])) != width:
        return None
    t = time_ns.reshape(-1, width)
    if not np.all(t[1:] >= t[:-1]):
        return None
    perm = np.argsort(block[0], kind="stable")
    return width, (None if np.all(perm == np.arange(width)) else perm)


def _sort_order(time_ns: np.ndarray, gpu: np.ndarray, host_codes: np.ndarray) -> np.ndarray | None:
    """The permutation that sorts rows by (host, gpu, time), or None when they already are.

    Logs are written tick by tick, so each GPU's rows are usually already in time order: a stable radix sort on
    the small (host, gpu) key then suffices; a full lexsort runs only when times go backwards within a GPU.
    """
    n = len(time_ns)
    if n < 2:
        return None
    gmin, gmax = int(gpu.min()), int(gpu.max())
    hmax = int(host_codes.max())
    if gmin >= 0 and (hmax + 1) * (gmax + 1) < 65536:
        key = (host_codes.astype(np.int64) * (gmax + 1) + gpu).astype(np.uint16)
        order = np.argsort(key, kind="stable")
        t = time_ns[order]
        k = key[order]
        if np.all((t[1:] >= t[:-1]) | (k[1:] != k[:-1])):
            return None if np.all(order[1:] > order[:-1]) else order
    return np.lexsort((time_ns, gpu, host_codes))


def telemetry_bundle(src: str, host: str, time_ns: np.ndarray, gpu: np.ndarray, values: dict[str, list[float]],
                     skips, note: str | None = None, synthetic_interval_s: float | None = None):
    """The Bundle a line-oriented telemetry reader returns. Rows whose time could not be read (INT64_MIN in
    `time_ns`, already counted in `skips`) are left out; `note` (e.g. the synthetic-times warning) and the skip
    warning become its warnings. `values`: column → one value per row. `synthetic_interval_s`: as build_telemetry."""
    bundle = schema.Bundle(inputs=[src])
    if note:
        bundle.warnings.append(note)
    good = time_ns != np.iinfo(np.int64).min
    gpu, fits = int_array(gpu)
    if not fits.all():
        bundle.warnings.append(f"{src}: skipped {int((~fits).sum())} rows whose GPU index does not fit 64 bits")
    good &= fits
    warning = skips.warning(rows_read=int(good.sum()))
    if warning:
        bundle.warnings.append(warning)
    if not len(gpu):
        bundle.telemetry = schema.telemetry_frame()
        return bundle
    columns = {"time": time_ns[good], "gpu": gpu[good]}
    for column, vals in values.items():
        columns[column] = np.asarray(vals, dtype=np.float64)[good]
    bundle.telemetry = build_telemetry(columns, host, src, synthetic_interval_s)
    return bundle


def build_telemetry(columns: dict[str, np.ndarray], host: str | np.ndarray, src: str,
                    interval_s: float | None = None) -> pd.DataFrame:
    """A schema telemetry table from int64-ns `time`, `gpu` and metric arrays, built without extra copies.

    Equivalent to `schema.telemetry_frame` (same columns, dtypes, order and attrs) but fast for millions of
    rows: the arrays are sorted once, absent metrics share one read-only NaN column, host and source are
    Arrow strings / categoricals. Falls back to schema.telemetry_frame if the schema's dtypes ever differ.
    `interval_s` (when given) is stored as the sampling interval; otherwise the median gap is measured.
    `columns` is emptied as its arrays move into the frame, so each array is held only once.

    Inside `deferred_tables()`, a small table with measured times is not built: an empty table comes back with
    the columns in its attrs["pending"] (a Pending), for `build_pending` to build with other files' in one go.
    """
    if _DEFER.get() and interval_s is None and len(columns["time"]) <= DEFER_MAX_ROWS:
        frame = schema.empty_telemetry()
        frame.attrs["pending"] = Pending(columns, host, src)
        return frame
    time_ns = np.asarray(columns.pop("time")).astype(np.int64, copy=False)
    host_codes, host_names = _host_codes(host, len(time_ns))
    return _build(columns, time_ns, host_codes, host_names, np.zeros(len(time_ns), dtype=np.int32), [str(src)],
                  interval_s)


# ------------------------------------------------------------------ many small files: one table built, not N
# A small file's table costs ~1 ms of pandas to build and ~0.5 ms to check (benchmarks/folders.py): a folder of
# thousands keeps their columns as arrays (build_telemetry inside deferred_tables) and builds one table per
# DEFER_FLUSH_ROWS rows of them, checked once, each file's warnings still its own.
DEFER_MAX_ROWS = 65_536  # a file of more rows is built on its own (its table costs more than the building)
DEFER_FLUSH_ROWS = 2_000_000  # pending rows held at most before they are built (≤ ~400 MB of columns)
_DEFER: contextvars.ContextVar[bool] = contextvars.ContextVar("playbook_defer_tables", default=False)


@dataclass
class Pending:
    """A small file's telemetry columns (as build_telemetry takes them), not yet built into a table."""

    columns: dict[str, np.ndarray]
    host: str | np.ndarray
    src: str

    @property
    def rows(self) -> int:
        return len(self.columns["time"])


@contextlib.contextmanager
def deferred_tables():
    """Within: build_telemetry leaves small tables pending (see build_telemetry)."""
    token = _DEFER.set(True)
    try:
        yield
    finally:
        _DEFER.reset(token)


def take_pending(frame: pd.DataFrame) -> Pending | None:
    """The Pending a deferred build_telemetry left on `frame`, removed from it; None if there is none."""
    return frame.attrs.pop("pending", None) if len(frame.attrs) else None


def build_pending(parts: list[Pending]) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """One telemetry table from many files' pending columns (rows of equal host, GPU and time keep the files'
    order) and each file's physics warnings (schema.check_physics_by_source), by source. `parts` is emptied."""
    n = sum(p.rows for p in parts)
    names = list(dict.fromkeys(k for p in parts for k in p.columns if k != "time"))
    hosts: dict[str, int] = {}
    host_codes = np.empty(n, dtype=np.int32)
    source_codes = np.empty(n, dtype=np.int32)
    sources: dict[str, int] = {}
    pos = 0
    for p in parts:
        k = p.rows
        local, local_names = _host_codes(p.host, k)
        host_codes[pos:pos + k] = np.array([hosts.setdefault(h, len(hosts)) for h in local_names], np.int32)[local]
        source_codes[pos:pos + k] = sources.setdefault(str(p.src), len(sources))
        pos += k
    columns = {c: np.concatenate([np.asarray(p.columns[c]) if c in p.columns else np.full(p.rows, np.nan)
                                  for p in parts]) for c in names}
    time_ns = np.concatenate([np.asarray(p.columns["time"]).astype(np.int64, copy=False) for p in parts])
    parts.clear()
    # names sorted, as build_telemetry's factorize sorts hosts (the table's order is host, gpu, time) and as a
    # merge of many files' tables orders its sources (Bundle.extend_all)
    host_codes, host_names = _sorted_codes(host_codes, hosts)
    source_codes, source_names = _sorted_codes(source_codes, sources)
    frame = _build(columns, time_ns, host_codes, host_names, source_codes, source_names, None)
    return schema.check_physics_by_source(frame)


def _sorted_codes(codes: np.ndarray, names: dict[str, int]) -> tuple[np.ndarray, list[str]]:
    """`codes` into `names` (name → code) recoded so that the names are in sorted order."""
    by_name = sorted(names)
    remap = np.empty(len(names), dtype=np.int32)
    remap[[names[h] for h in by_name]] = np.arange(len(by_name), dtype=np.int32)
    return remap[codes], by_name


def _host_codes(host: str | np.ndarray, n: int) -> tuple[np.ndarray, list[str]]:
    if isinstance(host, str):
        return np.zeros(n, dtype=np.int32), [host]
    codes, cats = pd.factorize(pd.Series(np.asarray(host, dtype=object)).fillna("").astype(str), sort=True)
    return codes.astype(np.int32), [str(c) for c in cats]


def _build(columns: dict[str, np.ndarray], time_ns: np.ndarray, host_codes: np.ndarray, host_names: list[str],
           source_codes: np.ndarray, source_names: list[str], interval_s: float | None) -> pd.DataFrame:
    """build_telemetry's table from its parts: host and source as codes into their names (host names sorted)."""
    gpu = np.asarray(columns.pop("gpu")).astype(np.int64, copy=False)
    n = len(time_ns)
    regular = _tick_major(time_ns, gpu, host_codes)
    if regular is not None:
        # rows written tick by tick, the same GPUs in the same order every tick: sorting is a transpose
        width, perm = regular
        perm_bytes = (np.arange(width) if perm is None else perm).astype(np.int64).tobytes()

        def reorder(a) -> np.ndarray:
            parts = a.parts if isinstance(a, Concat) else [np.asarray(a)]
            dtype = parts[0].dtype
            if native.C is not None and dtype.itemsize in (4, 8) and all(p.dtype == dtype for p in parts):
                out = np.empty(n, dtype=dtype)
                native.C.transpose([np.ascontiguousarray(p) for p in parts], width, dtype.itemsize, perm_bytes, out)
                return out
            return _transpose(np.asarray(a).reshape(-1, width), perm)
    else:
        order = _sort_order(time_ns, gpu, host_codes)

        def reorder(a) -> np.ndarray:
            return np.asarray(a) if order is None else np.take(np.asarray(a), order)
    columns.update({"time": time_ns, "gpu": gpu})
    if len(host_names) > 1:  # one host: its codes are all 0, nothing to move (nor to key the intervals by)
        columns["_host"] = host_codes
    if len(source_names) > 1:
        columns["_source"] = source_codes
    del time_ns, gpu, host_codes

    def moved(k: str) -> np.ndarray:
        a = columns.pop(k)
        out = reorder(a)
        if isinstance(a, Concat):  # its pieces were small enough to live in the heap, which keeps freed pages
            a.parts.clear()        # resident: handed back column by column, or RSS holds pieces and table at once
            release_memory()
        return out

    columns.update(map_columns(moved, list(columns), n))
    time_ns, gpu, host_codes = columns.pop("time"), columns.pop("gpu"), columns.pop("_host", None)
    source_codes = columns.pop("_source", source_codes)
    key = gpu if host_codes is None else host_codes.astype(np.int64) * (1 << 32) + gpu
    measured = median_interval_sorted(time_ns, key)
    nan_column = np.full(n, np.nan)
    nan_column.flags.writeable = False
    host_arrow = _repeat_string(host_names[0], n) if len(host_names) == 1 else pc_take([*host_names], host_codes)
    data: dict[str, object] = {
        "time": pd.DatetimeIndex(time_ns.view("datetime64[ns]")).tz_localize("UTC"),
        "host": pd.arrays.ArrowStringArray(host_arrow),
        "gpu": gpu,
    }
    for metric in schema.TELEMETRY_METRICS:
        values = columns.pop(metric, None)
        data[metric] = nan_column if values is None else np.asarray(values, dtype=np.float64)
    small = np.int8 if len(source_names) < 128 else np.int32
    data["source"] = pd.Categorical.from_codes(source_codes.astype(small, copy=False),
                                               categories=pd.Index([str(s) for s in source_names]))
    frame = pd.DataFrame(data, columns=list(schema.TELEMETRY_COLUMNS), copy=False)
    frame.attrs["interval_s"] = interval_s if interval_s is not None else measured
    template = _schema_dtypes()
    dtypes = frame.dtypes  # one Series: per-column frame[c] would copy attrs for each of 23 columns
    same = all(
        (dtypes[c] == dtype) if c != "source" else isinstance(dtypes[c], pd.CategoricalDtype)
        for c, dtype in template.items())
    if not same or list(frame.columns) != list(template):
        raw = {c: frame[c].to_numpy() for c in frame.columns}
        frame = schema.telemetry_frame(raw, interval_s=frame.attrs["interval_s"])
    return frame


_TEMPLATE: dict[str, object] = {}


def _schema_dtypes() -> dict[str, object]:
    """Column -> dtype of schema.telemetry_frame() (computed once per process)."""
    if not _TEMPLATE:
            _TEMPLATE.update(schema.telemetry_frame().dtypes.to_dict())
    return _TEMPLATE


_REPEAT_CHUNK = 1 << 16  # rows per chunk of a repeated string: every chunk shares one chunk's buffers


def _repeat_string(text: str, n: int):
    """A chunked Arrow string array of `text` repeated n times: one chunk of up to _REPEAT_CHUNK rows built from
    buffers, repeated (its buffers shared, not copied: a 5.5 M-row host column costs ~1.4 MB, not ~140 MB)."""
    import pyarrow as pa

    raw = text.encode("utf-8")
    rows = min(n, _REPEAT_CHUNK, (2**31 - 1) // max(1, len(raw)))  # a chunk's offsets are int32
    if not raw or not rows:
        return pc_take([text], np.zeros(n, dtype=np.int32))
    offsets = (np.arange(rows + 1, dtype=np.int32) * len(raw)).tobytes()
    chunk = pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(raw * rows))
    whole, rest = divmod(n, rows)
    return pa.chunked_array([chunk] * whole + ([chunk.slice(0, rest)] if rest else []), type=pa.string())


def pc_take(names: list[str], codes: np.ndarray):
    """A chunked Arrow string array holding names[codes] (cheap for millions of repeated host names)."""
    import pyarrow as pa

    return pa.chunked_array([pa.array(names, pa.string()).take(pa.array(codes))])
