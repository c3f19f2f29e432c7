"""Readers: the telemetry clusters already write, turned into the playbook's tidy tables (playbook.schema).

    from playbook.readers import read_paths, read_file
    bundle = read_paths(["logs/node1.csv", "logs/node2.csv", "runs/r1", "traces/"])
    bundle.telemetry, bundle.steps, bundle.events, bundle.trace, bundle.warnings

Formats are recognised from content, never from file names (see detect.READERS for the order): nvidia-smi
--query-gpu CSV and polling loops (nvidia_smi), nvidia-smi dmon (dmon), dcgm-exporter / Prometheus / dcgmi dmon
(dcgm; other Prometheus names by their words, e.g. Ray, OpenTelemetry NVML), generic telemetry CSV (generic_csv),
long-layout CSV with a series-name column (long_csv: MLflow history, Grafana rows), InfluxDB line protocol (influx:
Telegraf), gpustat and `nvidia-smi -q` plain text (gpustat_text, smi_query_text), step tables (steps), Kineto
traces (kineto), any other text log
(lines: step lines, NCCL lines, recompiles and events, line by line),
and the playbook's own recordings (run directories, or a single table's .parquet file).

Inputs may be files or folders, mixed freely. A run directory (meta.json with the run marker) is read with
playbook.readers.rundir.read_run; a folder holding only Kineto traces is one input for the Kineto reader (per-rank
traces of one run); any other folder is walked (hidden files and documentation such as README* or *.md are
passed over). A file no reader recognises is an error when named explicitly and a warning inside a folder.

Each file and folder is read once, by its identity (device, inode): a file named twice, or reached again through
a symlink, is skipped with a warning naming both paths. Inside a folder, symlinked folders are not followed (so
`latest -> r1` or `self -> ..` neither doubles samples nor loops; named on the command line, a symlink is
followed). Only regular files are opened: a FIFO, socket or device named explicitly is an error, inside a folder
a warning — never a blocked read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from playbook import schema
from playbook.errors import InputError, PlaybookError, UnknownFormatError
from playbook.readers import detect, textio
from playbook.readers.rundir import read_run
from playbook.rundir import is_run_dir

__all__ = ["read_paths", "read_file", "check_input", "detect"]

_DOC_NAMES = ("readme", "license", "licence", "changelog", "notice", "authors", "citation")
_DOC_SUFFIXES = {".md", ".rst", ".ipynb", ".html", ".htm"}
_TABLE_BUILDERS = {
    "telemetry": (schema.TELEMETRY_COLUMNS, schema.telemetry_frame),
    "steps": (schema.STEP_COLUMNS, schema.steps_frame),
    "events": (schema.EVENT_COLUMNS, schema.events_frame),
    "host": (schema.HOST_COLUMNS, schema.host_frame),
    "trace": (schema.TRACE_COLUMNS, schema.trace_frame),
}


def read_file(path: str | Path, fields: str | list[str] | None = None, interval_s: float | None = None,
              **opts) -> schema.Bundle:
    """Read one file with the reader its content calls for.

    `fields`: the --query-gpu list of a headerless nvidia-smi CSV. `interval_s`: the polling interval (s) used
    to place samples of inputs without timestamps (default 1 s). Raises UnknownFormatError / InputError.
    """
    path = Path(path)
    mode = _stat(path).st_mode
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a folder (use read_paths)")
    if not stat.S_ISREG(mode):
        raise InputError(f"{path}: is a {_kind(mode)}, not a regular file; not read")
    raw = _head(path)
    if raw.startswith(b"PAR1"):
        return _read_parquet(path)
    head = textio.decode(raw)
    name = detect.detect(path, head)
    opts = {**opts, "fields": fields, "interval_s": textio.check_interval(interval_s)}
    return _call(name, path, opts)


def _head(path: Path) -> bytes:
    """The first HEAD_BYTES (decompressed); a damaged compressed stream is an InputError naming the file."""
    import lzma
    import zlib

    try:
        return textio.read_bytes(path, limit=textio.HEAD_BYTES)
    except (EOFError, zlib.error, lzma.LZMAError, ValueError, OSError) as exc:  # OSError: gzip's BadGzipFile
        raise InputError(f"{path}: damaged compressed file ({type(exc).__name__}: {exc})"[:300]) from None


def _call(name: str, path: Path, opts: dict) -> schema.Bundle:
    reader = detect.module(name)
    try:
        bundle = reader.read(path, **opts)
    except PlaybookError:
        raise
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:  # a reader bug must still name the file, in one line
        raise InputError(f"{path}: the {name} reader failed ({type(exc).__name__}: {exc})") from exc
    if str(path) not in bundle.inputs:
        bundle.inputs.append(str(path))
    return bundle


def check_tz(tz: str | None) -> str:
    """`tz` if it names a time zone (IANA, e.g. "Europe/Berlin", or "UTC"), else InputError; None → "UTC"."""
    if not tz or tz.upper() == "UTC":
        return "UTC"
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(f"unknown time zone {tz!r}: use an IANA name such as Europe/Berlin or America/Chicago, "
                         "or UTC") from None
    return tz


def _stat(path: Path) -> os.stat_result:
    """os.stat (following symlinks), as InputError naming the path."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file or directory" + (" (a broken symlink)" if path.is_symlink()
                                                                 else "")) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise InputError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def check_input(path: str | Path) -> Path:
    """`path` if it is a folder or a regular file (symlinks followed), else InputError naming it: what every
    command checks before it opens an input, so a FIFO, socket or device never blocks it."""
    path = Path(path)
    mode = _stat(path).st_mode
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise InputError(f"{path}: is a {_kind(mode)}, not a regular file; not read")
    return path


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


class _Reading:
    """One read_paths call: what has been read (by device and inode), the pieces read, and the options."""

    def __init__(self, fields, interval_s, tz):
        self.opts = {"fields": fields, "interval_s": interval_s, "tz": tz}
        self.seen: dict[tuple[int, int], Path] = {}
        self.pieces: list[schema.Bundle] = []
        self.warnings: list[str] = []

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
        st = _stat(path)
        if stat.S_ISDIR(st.st_mode):
            if reading.first_time(path, st):
                _read_folder(path, reading)
        elif not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: is a {_kind(st.st_mode)}, not a regular file; not read")
        elif reading.first_time(path, st):
            reading.pieces.append(read_file(path, **reading.opts))
    bundle = schema.Bundle()
    bundle.extend_all(reading.pieces)
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
            reading.pieces.append(_call("kineto", folder, {}))
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
            if not stat.S_ISREG(st.st_mode):
                reading.warnings.append(f"{path}: skipped, a {_kind(st.st_mode)}, not a regular file")
                continue
            if not reading.first_time(path, st):
                continue
            try:
                reading.pieces.append(read_file(path, **reading.opts))
            except InputError as exc:
                reading.warnings.append(f"skipped {exc}")
        todo.extend(reversed(subfolders))
        if not found:
            reading.warnings.append(f"{folder}: empty folder")


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


def _read_parquet(path: Path) -> schema.Bundle:
    """One of the playbook's own tables written alone (telemetry.parquet, steps.parquet, ...)."""
    try:
        raw = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise InputError(f"{path}: unreadable Parquet ({type(exc).__name__})") from None
    cols = set(raw.columns)
    for name, (columns, builder) in _TABLE_BUILDERS.items():
        if {c for c in columns if c != "source"} <= cols:
            bundle = schema.Bundle(inputs=[str(path)])
            setattr(bundle, name, builder({c: raw[c].to_numpy() for c in raw.columns if c in columns}))
            return bundle
    shown = ", ".join(map(str, list(raw.columns)[:6]))
    raise UnknownFormatError(f"{path}: not telemetry this playbook can read (looks like a Parquet table with "
                             f"columns {shown})")
