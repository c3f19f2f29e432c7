"""One file, read by the reader its content calls for (detect.py), with the checks every input gets first: only
regular files are opened, a damaged compressed stream or a reader bug is one InputError naming the file, and the
playbook's own single-table Parquet files are read back. Folders and run directories: playbook.readers."""

from __future__ import annotations

import itertools
import os
import re
import stat
from pathlib import Path

import pandas as pd

from playbook.core.errors import InputError, PlaybookError, UnknownFormatError
from playbook.model import schema
from playbook.readers import collected, detect, textio

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
    mode = stat_path(path).st_mode
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a folder (use read_paths)")
    if not stat.S_ISREG(mode):
        raise InputError(f"{path}: is a {file_kind(mode)}, not a regular file; not read")
    raw = _head(path)
    if raw.startswith(b"PAR1"):
        return _read_parquet(path)
    head = textio.decode(raw)
    opts = {**opts, "fields": fields, "interval_s": textio.check_interval(interval_s)}
    indent = collected.common_indent(head)  # every line indented: a paste as a code block, a quoted e-mail
    if indent and detect.specific(head) is None:  # no format's reader knows it as it is: read without the indent
        if (dedented := _dedented(path, head, indent, opts)) is not None:
            return dedented
    indent = indent or collected.launcher_label(head)  # torchrun's `[default0]:`: kept where it can be read with it
    try:
        bundle = call_reader(detect.detect(path, head), path, opts)
    except UnknownFormatError:  # no reader knows it, or the one its head called for found nothing it knows
        if textio.is_binary(raw):  # no lines to skip or take out: each preamble try sniffs the head again
            raise
        if indent and (dedented := _dedented(path, head, indent, opts)) is not None:
            return dedented
        if (later := _without_stderr(path, head, opts) or _past_preamble(path, head, opts)) is None:
            raise
        return later
    except InputError:  # the format's reader refused it: without the indent, if there is one
        if indent and (dedented := _dedented(path, head, indent, opts)) is not None:
            return dedented
        if (quiet := _without_stderr(path, head, opts)) is not None:
            return quiet
        raise
    if indent and bundle.is_empty():  # its format's reader found nothing in it as it is: without the indent?
        if (dedented := _dedented(path, head, indent, opts)) is not None and not dedented.is_empty():
            return dedented
    if bundle.is_empty() and (quiet := _without_stderr(path, head, opts)) is not None:
        return quiet
    return bundle


def _without_stderr(path: Path, head: str, opts: dict) -> schema.Bundle | None:
    """A file read without the runtime warnings interleaved in it (collected.STDERR) by the reader its head calls
    for without them; None when its head holds none, or that reader refuses it too or finds nothing in it."""
    raw = head.encode()
    records = collected.stderr_records(raw)
    if not records:
        return None
    token = collected.STDERR.set((collected.STDERR.get() or frozenset()) | {str(path)})
    try:
        bundle = call_reader(detect.detect(path, collected.drop_stderr(raw).decode()), path, opts)
    except PlaybookError:
        return None
    finally:
        collected.STDERR.reset(token)
    if bundle.is_empty():
        return None
    bundle.warnings.insert(0, f"{path}: read without the Python warnings on stderr interleaved in it ({records} in "
                              f"its first {len(head) >> 10 or 1} KiB; line numbers in its warnings count without them)")
    return bundle


def _dedented(path: Path, head: str, indent: str, opts: dict) -> schema.Bundle | None:
    """A file whose every line starts with `indent` (a paste as a Markdown code block, a quoted e-mail), read
    without it (collected.INDENT) by the reader its dedented `head` calls for; None when that reader refuses it."""
    token = collected.INDENT.set({**(collected.INDENT.get() or {}), str(path): indent.encode()})
    try:
        return call_reader(detect.detect(path, collected.dedent(head, indent)), path, opts)
    except PlaybookError:
        return None
    finally:
        collected.INDENT.reset(token)


MAX_PREAMBLE = 60  # lines of a job's stdout before a tool's own output (a banner, wandb's lines, warnings)


def _past_preamble(path: Path, head: str, opts: dict) -> schema.Bundle | None:
    """A file no reader understood as a whole, read from its first line (among the first MAX_PREAMBLE) where a
    format's own reader recognises what follows (not the catch-all line reader; a monitor script's aligned table with
    a telemetry header counts): `nvidia-smi`'s or `iostat`'s output after the lines a job printed first. None when
    there is no such line or that reader refuses too."""
    tries = max(0, min(MAX_PREAMBLE, head.count("\n") - 1))  # at least two lines left after the skipped ones
    for skip, line_end in enumerate(itertools.islice(re.finditer("\n", head), tries), start=1):
        name = detect.specific(head[line_end.end():], generic=("lines",))  # a monitor's aligned table counts
        if name is None:
            continue
        token = textio.SKIP_LINES.set({**(textio.SKIP_LINES.get() or {}), str(path): skip})
        try:
            bundle = call_reader(name, path, opts)
        except PlaybookError:
            return None
        finally:
            textio.SKIP_LINES.reset(token)
        bundle.warnings.insert(0, f"{path}: read from line {skip + 1} as {name}: the {skip} lines before it are not "
                                  "its output (line numbers in its warnings count from there)")
        return bundle
    return None


def _head(path: Path) -> bytes:
    """The first HEAD_BYTES (decompressed); a damaged compressed stream is an InputError naming the file."""
    import lzma
    import zlib

    try:
        return textio.read_bytes(path, limit=textio.HEAD_BYTES)
    except (EOFError, zlib.error, lzma.LZMAError, ValueError, OSError) as exc:  # OSError: gzip's BadGzipFile
        raise InputError(f"{path}: damaged compressed file ({type(exc).__name__}: {exc})"[:300]) from None


def call_reader(name: str, path: Path, opts: dict) -> schema.Bundle:
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
    return check_values(bundle, str(path))


def check_values(bundle: schema.Bundle, where: str) -> schema.Bundle:
    """The bundle with values no GPU or step can have read as missing, counted in its warnings (schema.check_*)."""
    if len(bundle.telemetry):
        bundle.telemetry, warnings = schema.check_physics(bundle.telemetry, where)
        bundle.warnings += warnings
    if len(bundle.steps):
        bundle.steps, warnings = schema.check_step_times(bundle.steps, where)
        bundle.warnings += warnings
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


def stat_path(path: Path) -> os.stat_result:
    """os.stat (following symlinks), as InputError naming the path."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file or directory" + (" (a broken symlink)" if path.is_symlink()
                                                                 else "")) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise InputError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, its symlinks resolved, lies within the folder `root` (resolved too)."""
    target, top = os.path.realpath(path), os.path.realpath(root)
    return target == top or target.startswith(top.rstrip(os.sep) + os.sep)


def check_input(path: str | Path) -> Path:
    """`path` if it is a folder or a regular file (symlinks followed), else InputError naming it: what every
    command checks before it opens an input, so a FIFO, socket or device never blocks it."""
    path = Path(path)
    mode = stat_path(path).st_mode
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise InputError(f"{path}: is a {file_kind(mode)}, not a regular file; not read")
    return path


def file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


def read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet table, its size checked from the footer before any row is read: rows × columns × 8 bytes within
    textio.max_bytes() (PLAYBOOK_MAX_BYTES). InputError naming the file when it is too big or unreadable."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
        rows, columns = meta.num_rows, meta.num_columns
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise InputError(f"{path}: unreadable Parquet ({type(exc).__name__})") from None
    budget = textio.max_bytes()
    if rows * max(columns, 1) * 8 > budget:
        raise InputError(f"{path}: a Parquet table of {rows:,} rows × {columns} columns, more than the "
                         f"{budget >> 20} MiB budget (raise PLAYBOOK_MAX_BYTES to read it)")
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for damaged files (MemoryError is one)
        raise InputError(f"{path}: unreadable Parquet ({type(exc).__name__})") from None


def _read_parquet(path: Path) -> schema.Bundle:
    """One of the playbook's own tables written alone (telemetry.parquet, steps.parquet, ...)."""
    raw = read_parquet(path)
    cols = set(raw.columns)
    for name, (columns, builder) in _TABLE_BUILDERS.items():
        if {c for c in columns if c != "source" and c not in schema.LATER_COLUMNS} <= cols:
            bundle = schema.Bundle(inputs=[str(path)])
            setattr(bundle, name, builder({c: raw[c].to_numpy() for c in raw.columns if c in columns}))
            return check_values(bundle, str(path))
    shown = ", ".join(map(str, list(raw.columns)[:6]))
    raise UnknownFormatError(f"{path}: not telemetry this playbook can read (looks like a Parquet table with "
                             f"columns {shown})")
