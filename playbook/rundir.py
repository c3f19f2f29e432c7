"""The run directory: where probes write a recording and where readers find it.

    RUN_DIR/
      meta.json                  run-level: {"playbook_run": 1, "schema_version", "created", "command", "env", ...}
      <host>-rank<R>/            one folder per writer (a torch rank; "<host>-pid<PID>" for a process without one,
        meta.json                e.g. the sampler of `playbook record`): {"host", "rank", "world_size", "pid", ...}
        telemetry.parquet        schema.TELEMETRY_COLUMNS
        steps.parquet            schema.STEP_COLUMNS
        events.parquet           schema.EVENT_COLUMNS
        host.parquet             schema.HOST_COLUMNS
        ib.parquet               InfiniBand port counters as rates (probes/interconnect.py)
        segments/<table>-N.parquet   periodic flushes, merged into the table files when the writer exits
      <host>-pid<PID>.log        what the command of `playbook record` printed (stdout and stderr), read back
                                 like any loose log (step lines become steps)
                                 (a killed writer leaves them behind; read_run reads them too)
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

from playbook import schema
from playbook.errors import InputError, PlaybookError

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
            current = json.loads(path.read_text())
        except (OSError, ValueError):
            current = {}
    current.setdefault(RUN_MARKER, 1)
    current.setdefault("schema_version", schema.SCHEMA_VERSION)
    current.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    for k, v in meta.items():
        current.setdefault(k, v)
    tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(current, indent=2, default=str))
    tmp.replace(path)
    return run


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


def is_run_dir(path: str | Path) -> bool:
    """True when `path` is a run directory (its meta.json carries the run marker)."""
    meta = Path(path) / "meta.json"
    if not meta.is_file():
        return False
    try:
        return RUN_MARKER in json.loads(meta.read_text())
    except (OSError, ValueError):
        return False


_BUILDERS = {
    "telemetry": schema.telemetry_frame,
    "steps": schema.steps_frame,
    "events": schema.events_frame,
    "host": schema.host_frame,
    "ib": lambda data: pd.DataFrame(data),
}


def _read_table(part: Path, name: str, warnings: list[str]) -> pd.DataFrame | None:
    """The table file plus any leftover flush segments (a killed writer), or None when there is neither."""
    paths = [part / TABLE_FILES[name]] + sorted((part / SEGMENT_DIR).glob(f"{name}-*.parquet"))
    frames = []
    for path in paths:
        if not path.is_file():
            continue
        try:
            frames.append(pd.read_parquet(path))
        except Exception as exc:  # pyarrow raises several types for damaged files
            warnings.append(f"{path}: unreadable Parquet ({type(exc).__name__}), skipped")
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else None


def read_run(run_dir: str | Path) -> schema.Bundle:
    """Every part's tables merged into one Bundle; meta["run"] holds meta.json, meta["parts"] each part's."""
    run = Path(run_dir)
    if not is_run_dir(run):
        raise InputError(f"{run}: not a playbook run directory (no meta.json with '{RUN_MARKER}')")
    bundle = schema.Bundle(inputs=[str(run)])
    bundle.meta["run"] = json.loads((run / "meta.json").read_text())
    parts: dict[str, Any] = {}
    for part in sorted(p for p in run.iterdir() if p.is_dir()):
        meta_path = part / "meta.json"
        if not meta_path.is_file():
            continue
        try:
            parts[part.name] = json.loads(meta_path.read_text())
        except ValueError:
            bundle.warnings.append(f"{meta_path}: unreadable meta.json, folder read without it")
            parts[part.name] = {}
        piece = schema.Bundle()
        for name in TABLE_FILES:
            raw = _read_table(part, name, bundle.warnings)
            if raw is not None:
                setattr(piece, name, _BUILDERS[name]({c: raw[c].to_numpy() for c in raw.columns}))
        traces = part / "traces"
        if traces.is_dir() and any(traces.glob("*.json*")):
            from playbook.readers import kineto  # lazy: the readers import this module

            try:
                piece.extend(kineto.read(traces))
            except InputError as exc:
                bundle.warnings.append(f"{traces}: profiler traces skipped ({exc})")
        bundle.extend(piece)
    bundle.meta["parts"] = parts
    _read_loose_files(run, bundle)
    return bundle


def _read_loose_files(run: Path, bundle: schema.Bundle) -> None:
    """Logs a workload wrote beside the parts (e.g. NCCL_DEBUG output): read by content; others are warned of."""
    from playbook.readers import read_file  # lazy: the readers import this module

    for path in sorted(p for p in run.iterdir() if p.is_file() and p.name != "meta.json"
                       and not p.name.startswith(".")):
        try:
            bundle.extend(read_file(path))
        except PlaybookError as exc:
            bundle.warnings.append(f"{path}: not read ({exc})")
