"""Readers: the telemetry clusters already write, turned into the playbook's tidy tables (playbook.schema).

    from playbook.readers import read_paths, read_file
    bundle = read_paths(["logs/node1.csv", "logs/node2.csv", "runs/r1", "traces/"])
    bundle.telemetry, bundle.steps, bundle.events, bundle.trace, bundle.warnings

Formats are recognised from content, never from file names (see detect.READERS for the order): nvidia-smi
--query-gpu CSV and polling loops (nvidia_smi), nvidia-smi dmon (dmon), dcgm-exporter / Prometheus / dcgmi dmon
(dcgm), generic telemetry CSV (generic_csv), step tables (steps), Kineto traces (kineto), any other text log
(lines: step lines, NCCL lines, recompiles and events, line by line),
and the playbook's own recordings (run directories, or a single table's .parquet file).

Inputs may be files or folders, mixed freely. A run directory (meta.json with the run marker) is read with
playbook.rundir.read_run; a folder holding only Kineto traces is one input for the Kineto reader (per-rank
traces of one run); any other folder is walked (hidden files and documentation such as README* or *.md are
passed over). A file no reader recognises is an error when named explicitly and a warning inside a folder.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from playbook import rundir, schema
from playbook.errors import InputError, PlaybookError, UnknownFormatError
from playbook.readers import detect, textio

__all__ = ["read_paths", "read_file", "detect"]

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
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir():
        raise InputError(f"{path}: is a folder (use read_paths)")
    raw = textio.read_bytes(path, limit=textio.HEAD_BYTES)
    if raw.startswith(b"PAR1"):
        return _read_parquet(path)
    head = textio.decode(raw)
    name = detect.detect(path, head)
    opts = {**opts, "fields": fields, "interval_s": textio.check_interval(interval_s)}
    return _call(name, path, opts)


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


def read_paths(paths: str | Path | Iterable[str | Path], fields: str | list[str] | None = None,
               interval_s: float | None = None, tz: str | None = None) -> schema.Bundle:
    """Read files and folders (mixed freely) into one Bundle; see the module docstring for folder rules.

    `tz`: the time zone that timestamps without one (nvidia-smi, dmon, step logs, CSV) were written in; they
    are converted to UTC (default: read as UTC)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    interval_s = textio.check_interval(interval_s)
    tz = check_tz(tz)
    bundle = schema.Bundle()
    paths = list(paths)
    if not paths:
        raise InputError("no inputs given")
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise InputError(f"{path}: no such file or directory")
        if path.is_dir():
            _read_folder(path, bundle, fields, interval_s, tz)
        else:
            bundle.extend(read_file(path, fields=fields, interval_s=interval_s, tz=tz))
    return bundle


def _read_folder(folder: Path, bundle: schema.Bundle, fields, interval_s, tz: str = "UTC") -> None:
    if rundir.is_run_dir(folder):
        bundle.extend(rundir.read_run(folder))
        return
    if _is_trace_folder(folder):
        bundle.extend(_call("kineto", folder, {}))
        return
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise InputError(f"{folder}: cannot list ({exc.strerror or exc})") from None
    found = False
    for entry in entries:
        if entry.name.startswith(".") or _is_documentation(entry):
            continue
        if entry.is_dir():
            _read_folder(entry, bundle, fields, interval_s, tz)
            found = True
            continue
        if not entry.is_file():
            continue
        found = True
        try:
            bundle.extend(read_file(entry, fields=fields, interval_s=interval_s, tz=tz))
        except UnknownFormatError as exc:
            bundle.warnings.append(f"skipped {exc}")
        except InputError as exc:
            bundle.warnings.append(f"skipped {exc}")
    if not found:
        bundle.warnings.append(f"{folder}: empty folder")


def _is_documentation(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and (name.startswith(_DOC_NAMES) or path.suffix.lower() in _DOC_SUFFIXES)


def _is_trace_folder(folder: Path) -> bool:
    """True when every visible file directly in `folder` is a Kineto trace (and there is at least one)."""
    kineto = detect.module("kineto")
    if kineto is None:
        return False
    files = [p for p in folder.iterdir() if not p.name.startswith(".") and not _is_documentation(p)]
    if not files or any(not p.is_file() for p in files):
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
