"""The run-directory FORMAT: names, layout and meta.json schema that probes write with (readers/rundir.py reads it).

    RUN_DIR/
      meta.json                  run-level: {"playbook_run": 1, "schema_version", "created", "command", "env", ...;
                                 from `playbook record`: "recording": "in progress" | "complete" | "incomplete",
                                 "incomplete": [what was lost]}
      .playbook-record.lock      the pid of the `playbook record` writing the run (create-exclusive; removed at the end)
      <host>-rank<R>/            one folder per writer (a torch rank; "<host>-pid<PID>" for a process without one,
        meta.json                e.g. the sampler of `playbook record`): {"host", "rank", "world_size", "pid", ...,
                                 "incomplete": [rows a failed write lost]}
        telemetry.parquet        schema.TELEMETRY_COLUMNS
        steps.parquet            schema.STEP_COLUMNS
        events.parquet           schema.EVENT_COLUMNS
        host.parquet             schema.HOST_COLUMNS
        ib.parquet               InfiniBand port counters as rates (probes/interconnect.py)
        segments/<table>-N.parquet   periodic flushes, merged into the table files when the writer exits
      <host>-pid<PID>.log        what the command of `playbook record` printed (stdout and stderr), read back
                                 like any loose log (step lines become steps)
                                 (a killed writer leaves them behind; readers/rundir.read_run reads them too)
        traces/                  Kineto traces (*.pt.trace.json[.gz]) written by profiler windows
      *.log, ...                 loose files beside the parts (e.g. NCCL_DEBUG logs) are read by content

Each writer owns its folder, so a multi-node run merges by copying folders into one RUN_DIR.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema

RUN_MARKER = "playbook_run"
TABLE_FILES = {
    "telemetry": "telemetry.parquet",
    "steps": "steps.parquet",
    "events": "events.parquet",
    "host": "host.parquet",
    "ib": "ib.parquet",
}
SEGMENT_DIR = "segments"


def part_name(host: str | None = None, rank: int | None = None) -> str:
    """The folder name a writer owns: "<host>-rank<R>"."""
    return f"{host or socket.gethostname()}-rank{-1 if rank is None else int(rank)}"


def init_run(run_dir: str | Path, **meta: Any) -> Path:
    """Create RUN_DIR and its run-level meta.json if missing (existing keys are kept, new ones added)."""
    run = Path(run_dir)
    run.mkdir(parents=True, exist_ok=True)
    path = run / "meta.json"
    current: dict[str, Any] = {}
    if path.exists():
        try:
            current = read_meta(path)
        except InputError:
            current = {}
    current.setdefault(RUN_MARKER, 1)
    current.setdefault("schema_version", schema.SCHEMA_VERSION)
    current.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    for k, v in meta.items():
        current.setdefault(k, v)
    write_json(path, current)
    return run


def write_json(path: Path, obj: Any) -> None:
    """Write `obj` as JSON to `path` atomically (a temporary file, then a rename); OSError when it cannot be
    written, with no temporary file left behind."""
    tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(obj, indent=2, default=str))
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def update_run(run_dir: str | Path, **fields: Any) -> None:
    """Set `fields` in RUN_DIR/meta.json (replacing their values), atomically; OSError when it cannot be written."""
    path = Path(run_dir) / "meta.json"
    try:
        current = read_meta(path)
    except InputError:
        current = {RUN_MARKER: 1}
    current.update(fields)
    write_json(path, current)


def init_part(run_dir: str | Path, host: str | None = None, rank: int | None = None, name: str | None = None,
              **meta: Any) -> Path:
    """Create the writer's folder (`name`, default part_name(host, rank)) with its meta.json and return it."""
    run = init_run(run_dir)
    host = host or socket.gethostname()
    part = run / (name or part_name(host, rank))
    part.mkdir(parents=True, exist_ok=True)
    info = {"host": host, "rank": -1 if rank is None else int(rank), "pid": os.getpid(), **meta}
    (part / "meta.json").write_text(json.dumps(info, indent=2, default=str))
    return part


def write_table(part: str | Path, name: str, frame: pd.DataFrame) -> Path:
    """Write one tidy table (telemetry / steps / events / host) into a writer's folder, atomically."""
    path = Path(part) / TABLE_FILES[name]
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(path)
    return path


MAX_META_BYTES = 16 << 20  # a meta.json holds a command line and an environment: kilobytes


def read_meta(path: Path) -> dict[str, Any]:
    """A meta.json as a dict; InputError naming the file when it is unreadable, too big, too deep or not an
    object."""
    try:
        if not path.is_file():
            raise InputError(f"{path}: not a regular file")
        if path.stat().st_size > MAX_META_BYTES:
            raise InputError(f"{path}: over {MAX_META_BYTES >> 20} MiB, not a playbook meta.json")
        doc = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise InputError(f"{path}: invalid JSON ({exc})"[:300]) from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deep to read") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: a JSON {type(doc).__name__}, not an object")
    return doc


# The nested fields analyses read from a meta.json, with the container each must be (a nested dict: a dict
# whose own fields are checked; [dict]: a list of dicts). A field of another type is dropped with a warning, so
# that analyses (regression.environment, links) can trust the shape of what they read.
META_SHAPE: dict[str, Any] = {
    "env": {"torch": dict, "nvidia": {"gpus": [dict]}, "cpu": dict, "packages": dict, "env": dict,
            "compile_cache": dict},
    "probes": {"nvml": {"pcie_max": dict}},
}


def conform_meta(doc: dict[str, Any], shape: dict[str, Any] = META_SHAPE, where: str = "") -> list[str]:
    """Drop (in place) the fields of `doc` whose type is not `shape`'s; returns their dotted names."""
    dropped: list[str] = []
    for key, want in shape.items():
        if key not in doc or doc[key] is None:
            continue
        value, name = doc[key], f"{where}{key}"
        if isinstance(want, dict):
            if not isinstance(value, dict):
                dropped.append(f"{name} ({type(value).__name__})")
                del doc[key]
            else:
                dropped += conform_meta(value, want, name + ".")
        elif isinstance(want, list):
            if not isinstance(value, list):
                dropped.append(f"{name} ({type(value).__name__})")
                del doc[key]
            elif any(not isinstance(v, want[0]) for v in value):
                dropped.append(f"{name}[] items that are not {want[0].__name__}")
                doc[key] = [v for v in value if isinstance(v, want[0])]
        elif not isinstance(value, want):
            dropped.append(f"{name} ({type(value).__name__})")
            del doc[key]
    return dropped


def is_run_dir(path: str | Path) -> bool:
    """True when `path` is a run directory: its meta.json is an object carrying the run marker, or is damaged
    (unparseable) but names the marker in its first 4 KiB (then readers.rundir.read_run warns and reads the parts)."""
    meta = Path(path) / "meta.json"
    if not meta.is_file():
        return False
    try:
        return RUN_MARKER in read_meta(meta)
    except InputError:
        try:
            with open(meta, "rb") as fh:
                return f'"{RUN_MARKER}"'.encode() in fh.read(4096)
        except OSError:
            return False
