"""Reading a run directory (the format of playbook/model/run_layout.py) into one Bundle: each part's tables and leftover
flush segments, its profiler traces, and the loose logs beside the parts."""

from __future__ import annotations

import warnings as pywarnings
from pathlib import Path
from typing import Any

import pandas as pd

from playbook.core.errors import InputError, PlaybookError
from playbook.model import schema
from playbook.model.run_layout import (
    RUN_MARKER,
    SEGMENT_DIR,
    TABLE_FILES,
    conform_meta,
    is_run_dir,
    read_meta,
)
from playbook.readers import kineto
from playbook.readers.files import check_values, inside, read_file, read_parquet


def _meta(path: Path, warnings: list[str], what: str) -> dict[str, Any]:
    """read_meta + conform_meta, problems as one warning each; {} when unreadable."""
    try:
        doc = read_meta(path)
    except InputError as exc:
        warnings.append(f"{exc}; {what} read without it")
        return {}
    dropped = conform_meta(doc)
    if dropped:
        warnings.append(f"{path}: fields of the wrong type ignored: {', '.join(dropped[:5])}"
                        + (f" (+{len(dropped) - 5} more)" if len(dropped) > 5 else ""))
    return doc


_BUILDERS = {
    "telemetry": schema.telemetry_frame,
    "steps": schema.steps_frame,
    "events": schema.events_frame,
    "host": schema.host_frame,
    "ib": lambda data: pd.DataFrame(data),
}


def _read_table(part: Path, name: str, warnings: list[str]) -> pd.DataFrame | None:
    """The table file plus any leftover flush segments (a killed writer) as one tidy table, or None when there is
    neither (or its columns cannot be read: a warning)."""
    paths = [part / TABLE_FILES[name]] + sorted((part / SEGMENT_DIR).glob(f"{name}-*.parquet"))
    frames = []
    for path in paths:
        if not path.is_file():
            continue
        if path.is_symlink() and not inside(path, part.parent):
            warnings.append(f"{path}: symlink pointing outside the run directory not followed")
            continue
        try:
            frames.append(read_parquet(path))
        except InputError as exc:
            warnings.append(f"{exc}, skipped")
    frames = [f for f in frames if len(f)]
    if not frames:
        return None
    try:
        raw = pd.concat(frames, ignore_index=True)
        with pywarnings.catch_warnings():  # pandas' "could not infer format" for a text time column
            pywarnings.simplefilter("ignore", UserWarning)
            return _BUILDERS[name]({c: raw[c].to_numpy() for c in raw.columns})
    except Exception as exc:  # columns of the wrong type (a string or list `time`, ...): pandas raises many
        warnings.append(f"{part / TABLE_FILES[name]}: the {name} table's columns are not the playbook's "
                        f"({type(exc).__name__}: {exc})"[:300] + ", skipped")
        return None


def read_run(run_dir: str | Path) -> schema.Bundle:
    """Every part's tables merged into one Bundle; meta["run"] holds meta.json, meta["parts"] each part's."""
    run = Path(run_dir)
    if not is_run_dir(run):
        raise InputError(f"{run}: not a playbook run directory (no meta.json with '{RUN_MARKER}')")
    bundle = schema.Bundle(inputs=[str(run)])
    bundle.meta["run"] = _meta(run / "meta.json", bundle.warnings, "run")
    _warn_incomplete(run, bundle.meta["run"], bundle)
    parts: dict[str, Any] = {}
    pieces = []
    for part in sorted(p for p in run.iterdir() if p.is_dir()):
        meta_path = part / "meta.json"
        if not meta_path.is_file():
            continue
        if part.is_symlink():  # the same rule as folder walks: a linked folder may be another part again
            bundle.warnings.append(f"{part}: symlinked part folder not followed")
            continue
        parts[part.name] = _meta(meta_path, bundle.warnings, "folder")
        _warn_incomplete(part, parts[part.name], bundle)
        piece = schema.Bundle()
        for name in TABLE_FILES:
            table = _read_table(part, name, bundle.warnings)
            if table is not None:
                setattr(piece, name, table)
        traces = part / "traces"
        if traces.is_dir() and not traces.is_symlink() and any(traces.glob("*.json*")):
            try:
                piece.extend(kineto.read(traces))
            except InputError as exc:
                bundle.warnings.append(f"{traces}: profiler traces skipped ({exc})")
            except Exception as exc:  # a reader bug must still name the folder, in one line
                bundle.warnings.append(f"{traces}: profiler traces skipped (the kineto reader failed: "
                                       f"{type(exc).__name__}: {exc})"[:300])
        pieces.append(check_values(piece, str(part)))
    bundle.extend_all(pieces)
    bundle.meta["parts"] = parts
    _read_loose_files(run, bundle)
    return bundle


def _warn_incomplete(where: Path, meta: dict[str, Any], bundle: schema.Bundle) -> None:
    """An "incomplete recording" warning when a meta.json says a write failed, or that `playbook record` never
    finished (killed, still running, or a disk too full to mark the end); the reason is kept in
    bundle.meta["incomplete"][where] too, for the diagnosis (an incomplete recording is never vouched healthy)."""
    lost = meta.get("incomplete")
    if isinstance(lost, list) and lost:
        reason = "; ".join(str(x)[:200] for x in lost[:5])
    elif meta.get("recording") == "in progress":
        reason = "`playbook record` did not finish it (still running, killed, or its disk was full)"
    else:
        return
    bundle.warnings.append(f"{where}: incomplete recording: {reason}")
    bundle.meta.setdefault("incomplete", {})[str(where)] = reason


def _read_loose_files(run: Path, bundle: schema.Bundle) -> None:
    """Logs a workload wrote beside the parts (e.g. NCCL_DEBUG output): read by content; others are warned of."""
    for path in sorted(p for p in run.iterdir() if p.is_file() and p.name != "meta.json"
                       and not p.name.startswith(".")):
        if path.is_symlink() and not inside(path, run):
            bundle.warnings.append(f"{path}: symlink pointing outside the run directory not followed")
            continue
        try:
            bundle.extend(read_file(path))
        except PlaybookError as exc:
            bundle.warnings.append(f"{path}: not read ({exc})")
