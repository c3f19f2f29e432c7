"""Readers: the telemetry clusters already write, turned into the playbook's tidy tables (playbook.model.schema).

    from playbook.readers import read_paths, read_file
    bundle = read_paths(["logs/node1.csv", "logs/node2.csv", "runs/r1", "traces/"])
    bundle.telemetry, bundle.steps, bundle.events, bundle.trace, bundle.warnings

Formats are recognised from content, never from file names (see detect.READERS for the order): nvidia-smi
--query-gpu CSV and polling loops (nvidia_smi), nvidia-smi dmon (dmon), dcgmi dmon (dcgmi_dmon), dcgm-exporter /
Prometheus (dcgm; other Prometheus names by their words, e.g. Ray, OpenTelemetry NVML; node_exporter's counters as host
rates), generic telemetry CSV (generic_csv), long-layout CSV with a series-name column (long_csv: MLflow history,
Grafana rows), InfluxDB line protocol (influx: Telegraf), gpustat and `nvidia-smi -q` plain text (gpustat_text,
smi_query_text), rocm-smi / amd-smi text (amd_smi_text), box-drawn device tables of hl-smi, npu-smi, tpu-info and
xpu-smi (box_table), Linux host tools into the host table (host_tools: vmstat, iostat, mpstat, sar, sadf, top,
dstat, sysstat's JSON), JSON / XML documents (documents), a Slurm job's sacct / seff GPU figures (slurm_usage), job-efficiency tools' reports: jobstats, reportseff / Job Defense Shield job tables, dcgmi stats (job_reports), a container's cgroup cpu.stat and /dev/shm size (container_limits), kubectl's pod statuses and events (kube_status), step tables (steps), Kineto traces (kineto), nsys stats
exports (nsys), NCCL flight-recorder dumps (flight_recorder), any other text log (lines: step lines, NCCL lines,
recompiles and events, line by line) — also as a Jupyter notebook's printed output (notebook), and the playbook's own recordings (run directories, or a single table's
.parquet file).

Inputs may be files or folders, mixed freely. A run directory (meta.json with the run marker) is read with
playbook.readers.rundir.read_run; a folder holding only Kineto traces is one input for the Kineto reader (per-rank
traces of one run); any other folder is walked (hidden files and documentation such as README* or *.md are
passed over; a notebook is read when named, not inside a folder). A file no reader recognises is an error when named explicitly and a warning inside a folder.

Each file and folder is read once, by its identity (device, inode): a file named twice, or reached again through
a symlink, is skipped with a warning naming both paths. Inside a folder, symlinked folders are not followed (so
`latest -> r1` or `self -> ..` neither doubles samples nor loops), nor are symlinked files whose target lies
outside the folder given (one counted warning names them; a link within the folder is read; named on the command
line, a symlink is followed). Only regular files are opened: a FIFO, socket or device named explicitly is an error, inside a folder
a warning — never a blocked read.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from playbook.core.errors import InputError, PlaybookError
from playbook.model import schema
from playbook.model.run_layout import is_run_dir
from playbook.readers import detect, frames, textio
from playbook.readers.files import call_reader, check_input, check_tz, file_kind, inside, read_file, stat_path
from playbook.readers.rundir import read_run

__all__ = ["read_paths", "read_file", "check_input", "detect"]

_DOC_NAMES = ("readme", "license", "licence", "changelog", "notice", "authors", "citation")
_DOC_SUFFIXES = {".md", ".rst", ".ipynb", ".html", ".htm"}


class _Reading:
    """One read_paths call: what has been read (by device and inode), the pieces read, and the options."""

    def __init__(self, fields, interval_s, tz):
        self.opts = {"fields": fields, "interval_s": interval_s, "tz": tz}
        self.seen: dict[tuple[int, int], Path] = {}
        self.pieces: list[schema.Bundle | None] = []  # None: a file read with others into an earlier slot
        self.warnings: list[str] = []
        self.outside: list[Path] = []  # symlinked files pointing out of the folder given: not read
        self.pending: list[tuple[int, Path]] = []  # files of a folder to read: (their slot in pieces, path)

    def later(self, path: Path) -> None:
        """Keep a slot in `pieces` for a folder's file, read with the others by `read_pending`."""
        self.pending.append((len(self.pieces), path))
        self.pieces.append(None)

    def read_pending(self) -> None:
        """Read the folder's files into their slots: in one process, or in a pool of forked processes when there
        are many (see PARALLEL_FILES); a file no reader takes becomes a warning."""
        jobs, self.pending = self.pending, []
        for (slot, _path), (piece, skipped) in zip(jobs, _read_files([p for _s, p in jobs], self.opts), strict=True):
            self.pieces[slot] = piece
            self.warnings += skipped

    def warn_outside(self, root: Path) -> None:
        """One counted warning for the symlinked files under `root` that point outside it."""
        if self.outside:
            names = ", ".join(str(p) for p in self.outside[:3])
            more = f" (+{len(self.outside) - 3} more)" if len(self.outside) > 3 else ""
            self.warnings.append(f"{root}: {len(self.outside)} symlinked files point outside the folder and were not "
                                 f"followed: {names}{more}; name them to read them")
            self.outside = []

    def first_time(self, path: Path, st: os.stat_result) -> bool:
        """True the first time this file or folder is met; later meetings are warned of and skipped."""
        key = (st.st_dev, st.st_ino)
        first = self.seen.setdefault(key, path)
        if first is path:
            return True
        self.warnings.append(f"{path}: skipped, the same {'folder' if stat.S_ISDIR(st.st_mode) else 'file'} "
                             f"as {first} (read once)")
        return False


def read_paths(paths: str | Path | Iterable[str | Path], fields: str | list[str] | None = None,
               interval_s: float | None = None, tz: str | None = None) -> schema.Bundle:
    """Read files and folders (mixed freely) into one Bundle; see the module docstring for folder rules.

    `tz`: the time zone that timestamps without one (nvidia-smi, dmon, step logs, CSV) were written in; they
    are converted to UTC (default: read as UTC)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    reading = _Reading(fields, textio.check_interval(interval_s), check_tz(tz))
    paths = list(paths)
    if not paths:
        raise InputError("no inputs given")
    for p in paths:
        path = Path(p)
        st = stat_path(path)
        if stat.S_ISDIR(st.st_mode):
            if reading.first_time(path, st):
                _read_folder(path, reading)
                reading.warn_outside(path)
        elif not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: is a {file_kind(st.st_mode)}, not a regular file; not read")
        elif reading.first_time(path, st):
            reading.pieces.append(read_file(path, **reading.opts))
    bundle = schema.Bundle()
    bundle.extend_all([p for p in reading.pieces if p is not None])
    bundle.warnings += reading.warnings
    return bundle


def _read_folder(root: Path, reading: _Reading) -> None:
    """Walk `root` depth-first in name order (iteratively: any depth), not following symlinked folders."""
    todo = [root]
    while todo:
        folder = todo.pop()
        if is_run_dir(folder):
            reading.pieces.append(read_run(folder))
            continue
        if _is_trace_folder(folder):
            reading.pieces.append(call_reader("kineto", folder, {}))
            continue
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if folder == root:
                raise InputError(f"{folder}: cannot list ({exc.strerror or exc})") from None
            reading.warnings.append(f"{folder}: cannot list ({exc.strerror or exc}), skipped")
            continue
        found, subfolders = False, []
        for entry in entries:
            path = Path(entry.path)
            if entry.name.startswith(".") or _is_documentation(path):
                continue
            try:
                st = entry.stat()  # follows a symlink
            except OSError:
                reading.warnings.append(f"{path}: skipped, a broken symlink" if entry.is_symlink()
                                        else f"{path}: skipped, cannot stat")
                continue
            if stat.S_ISDIR(st.st_mode):
                found = True
                if entry.is_symlink():
                    reading.warnings.append(f"{path}: symlinked folder not followed (-> {os.readlink(path)}); "
                                            "name it to read it")
                elif reading.first_time(path, st):
                    subfolders.append(path)
                continue
            found = True
            if entry.is_symlink() and not inside(path, root):
                reading.outside.append(path)
                continue
            if not stat.S_ISREG(st.st_mode):
                reading.warnings.append(f"{path}: skipped, a {file_kind(st.st_mode)}, not a regular file")
                continue
            if reading.first_time(path, st):
                reading.later(path)
        todo.extend(reversed(subfolders))
        if not found:
            reading.warnings.append(f"{folder}: empty folder")
    reading.read_pending()


# A folder of more files than this is read by a pool of forked processes, one per core (at most MAX_WORKERS; on
# Linux, from a single-threaded process: see _can_fork): a small file costs ~1.3 ms of Python to read
# (benchmarks/folders.py), so 256 of them take ~0.3 s, past the ~0.1 s a fork costs; the workers' tables come
# back merged, one per worker chunk.
PARALLEL_FILES = 256
MAX_WORKERS = 16
CHUNK_FILES = 1024  # files read together in one process (their small tables built as one: readers.frames)


def _read_files(paths: list[Path], opts: dict) -> list[tuple[schema.Bundle | None, list[str]]]:
    """(bundle, skip warnings) per file of `paths`, in order; files read together by a worker come back as one
    merged bundle in the first file's slot (and None after it)."""
    workers = min(MAX_WORKERS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    merged = None
    if len(paths) > PARALLEL_FILES and workers >= 2 and _can_fork():
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        chunks = _chunks(paths, -(-len(paths) // (workers * 4)))  # 4 a worker: an uneven one leaves no core idle
        try:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                merged = list(pool.map(_read_chunk, chunks, [opts] * len(chunks)))
        except BrokenProcessPool:  # a worker was killed (out of memory?): read in this process instead
            merged = None
    if merged is None:
        chunks = _chunks(paths, CHUNK_FILES)
        merged = [_read_chunk(chunk, opts) for chunk in chunks]
    out: list[tuple[schema.Bundle | None, list[str]]] = []
    for chunk, result in zip(chunks, merged, strict=True):
        out += [result] + [(None, [])] * (len(chunk) - 1)
    return out


def _chunks(paths: list[Path], size: int) -> list[list[Path]]:
    return [paths[i:i + size] for i in range(0, len(paths), size)]


def _can_fork() -> bool:
    """Whether a pool may fork here: on Linux, from a process with no other Python thread (a lock another thread
    holds at the fork stays held in the child: a hang; Jupyter's kernel threads make it read in one process) and
    outside a pool's own worker (a daemon may not have children)."""
    import multiprocessing
    import threading

    return (sys.platform.startswith("linux") and threading.active_count() == 1
            and not multiprocessing.current_process().daemon)


def _read_chunk(paths: list[Path], opts: dict) -> tuple[schema.Bundle, list[str]]:
    """The files of `paths` read and merged into one bundle, and a warning per file no reader takes. Small
    telemetry tables are built together (frames.deferred_tables): one table, not one per file."""
    pieces, skipped = [], []
    pending: list[tuple[schema.Bundle, frames.Pending]] = []
    rows = 0
    with frames.deferred_tables():
        for path in paths:
            try:
                piece = read_file(path, **opts)
            except InputError as exc:
                skipped.append(f"skipped {exc}")
                continue
            pieces.append(piece)
            part = frames.take_pending(piece.telemetry)
            if part is not None:
                pending.append((piece, part))
                rows += part.rows
                if rows >= frames.DEFER_FLUSH_ROWS:
                    pieces.append(_built(pending))
                    rows = 0
    if pending:
        pieces.append(_built(pending))
    return (pieces[0] if len(pieces) == 1 else schema.Bundle().extend_all(pieces)), skipped


def _built(pending: list[tuple[schema.Bundle, frames.Pending]]) -> schema.Bundle:
    """A bundle of the pending files' telemetry, built as one table; each file's physics warnings go to its own
    bundle (so they keep their place among the files' warnings). `pending` is emptied."""
    table, warnings = frames.build_pending([part for _piece, part in pending])
    for piece, part in pending:
        piece.warnings += warnings.get(str(part.src), [])
    pending.clear()
    return schema.Bundle(telemetry=table)


def _is_documentation(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and (name.startswith(_DOC_NAMES) or path.suffix.lower() in _DOC_SUFFIXES)


def _is_trace_folder(folder: Path) -> bool:
    """True when every visible file directly in `folder` is a Kineto trace (and there is at least one)."""
    kineto = detect.module("kineto")
    try:
        files = [p for p in folder.iterdir() if not p.name.startswith(".") and not _is_documentation(p)]
    except OSError:
        return False
    if not files or any(p.is_symlink() or not p.is_file() for p in files):
        return False
    for p in files:
        try:
            if not kineto.sniff(textio.read_head(p)):
                return False
        except PlaybookError:
            return False
    return True
