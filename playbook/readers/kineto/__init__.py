"""PyTorch profiler (Kineto) Chrome traces → the `trace` table (schema.TRACE_COLUMNS), one row per complete event.

Reads `.json`, `.json.gz` (or zstd), a `.tar`/`.tar.gz` of per-rank traces, or a folder of them. Rows: GPU kernels
(`kernel`), copies and fills (`gpu_memcpy`, `gpu_memset`), GPU-side syncs (`cuda_sync`), CPU ops (`cpu_op`), CUDA
runtime/driver calls (`cuda_runtime`, `cuda_driver`), user annotations (`user_annotation`: ProfilerStep#N,
DataLoader, `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`, `nccl:all_reduce`, ...; and their GPU
projections `gpu_user_annotation`), Python frames when recorded. Flow arrows, instant events (memory samples) and the
profiler's own `Trace` span are counted, not kept. Chrome traces of other profilers are read into the same categories
(roles.py): Paddle's by its category names, XProf's (JAX, TensorFlow, PyTorch/XLA: no categories) and TensorFlow 1
timelines' by their process and thread names (`/device:GPU:0`, `Stream #14(Kernel)`, `XLA Ops`); the rank's
metadata then says "roles_from": "process/thread names" and which devices it found.

Columns: `ts_us` and `dur_us` are µs on the trace's clock (float64: ns-resolution traces keep their fraction);
`stream` is the CUDA/HIP stream of GPU rows (-1 for CPU rows); `correlation` links a runtime call to the GPU work it
launched; `bytes` is set on copies and fills. Per-rank metadata goes to `bundle.meta["kineto"][rank]`: rank,
world_size, backend, pg_config, nccl_version, device_properties, base_time_ns (Kineto's clock base: add
base_time_ns / 1000 to ts_us for epoch µs when present), display_time_unit, host_name, sources, event counts, and
first_step / trigger for traces written by playbook.probes.profiler. The rank comes from distributedInfo, else the
`rank` option, else the playbook_rank key, else the file name (rank3, rank-3, worker3), else 0.

Speed: events are decoded in bounded chunks straight into columns (never one dict per event for the whole file), so
memory stays near the size of the final table rather than several times the JSON. With `msgspec` installed the
chunks are decoded by typed structs that skip unused fields (≈ 4x faster than `json`); without it the standard
library does the same work more slowly. `benchmarks/kineto_load.py` measures both against a plain `json.load`.

Damage: a file cut short (truncated gzip or JSON) or with garbled events keeps every event that parses and adds one
warning naming the file, with the count of events lost and the first reasons; a file with no usable event raises a
one-line InputError naming it.
"""

from __future__ import annotations

import re
import tarfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model.schema import Bundle, trace_frame
from playbook.readers import textio
from playbook.readers.kineto.decode import Columns, byte_chunks, parse
from playbook.readers.kineto.horovod import horovod_roles
from playbook.readers.kineto.roles import lane_roles

SUFFIXES = (".json", ".json.gz", ".json.zst", ".tar", ".tar.gz", ".tgz")
_RANK_IN_NAME_RE = re.compile(r"(?:rank|worker|trainer)[-_]?(\d+)", re.IGNORECASE)
_SNIFF_RE = re.compile(r'"traceEvents"\s*:|"ph"\s*:\s*"[XBEMisfC]"')


def sniff(head: str) -> bool:
    """True when `head` (the first 64 KiB of decoded text) looks like a Chrome/Kineto trace."""
    start = head.lstrip()[:1]
    if start in ("{", "["):
        return bool(_SNIFF_RE.search(head))
    # a tar archive of traces: binary member headers, then trace JSON
    return "ustar" in head[:600] and '"traceEvents"' in head


def read(path: str | Path, **opts: Any) -> Bundle:
    """Read one trace file, an archive of traces, or a folder of per-rank traces into a Bundle.

    Options: `rank` (int) overrides the rank of a single-file input that has no `distributedInfo`.
    """
    path = Path(path)
    if path.is_dir():
        files = trace_files(path)
        if not files:
            raise InputError(f"{path}: no Kineto trace (*.json, *.json.gz) in this folder")
        parts = [_read_source(f, opts.get("rank") if len(files) == 1 else None) for f in files]
    elif not path.exists():
        raise InputError(f"{path}: no such file")
    else:
        parts = _read_archive(path) if _is_tar(path) else [_read_source(path, opts.get("rank"))]
    return _assemble([str(path)], parts)


def trace_files(folder: Path) -> list[Path]:
    """Trace files under `folder` (recursively), sorted, recognised by content."""
    out = []
    for f in sorted(folder.rglob("*")):
        if f.is_file() and f.name.endswith(SUFFIXES) and not f.name.startswith("."):
            try:
                head = _head_text(f)
            except (OSError, EOFError, zlib.error):
                continue
            if sniff(head):
                out.append(f)
    return out


# ------------------------------------------------------------------ file access

def _is_tar(path: Path) -> bool:
    try:
        return tarfile.is_tarfile(path)
    except (OSError, EOFError, zlib.error, tarfile.TarError):
        return False


def _head_text(path: Path, size: int = 65536) -> str:
    with open(path, "rb") as fh:
        chunks = byte_chunks(fh, path.name, size)
        head = next(chunks, b"")
    return head[:size].decode("utf-8", errors="replace")


def _members(tar: tarfile.TarFile, path: Path) -> list[tarfile.TarInfo]:
    """The archive's files by name, walked header by header under the budgets single files get: their sizes
    together at most textio.max_bytes() and, past textio.RATIO_FLOOR_BYTES, MAX_RATIO times the archive's size
    (refused at the header that crosses either, before its data is read)."""
    budget = textio.max_bytes()
    packed = max(path.stat().st_size, 1)
    total, files = 0, []
    for member in tar:
        if not member.isfile():
            continue
        total += member.size
        if total > budget:
            raise InputError(f"{path}: archive members hold more than {budget >> 20} MiB: refusing (raise "
                             "PLAYBOOK_MAX_BYTES to read it)")
        if total > textio.RATIO_FLOOR_BYTES and total > textio.MAX_RATIO * packed:
            raise InputError(f"{path}: archive members expand more than {textio.MAX_RATIO}x the archive: refusing "
                             "a decompression bomb")
        files.append(member)
    return sorted(files, key=lambda m: m.name)


def _read_archive(path: Path) -> list[dict]:
    parts = []
    try:
        with tarfile.open(path) as tar:
            for member in _members(tar, path):
                if not member.name.endswith(SUFFIXES) or Path(member.name).name.startswith("."):
                    continue
                label = f"{path}:{member.name}"
                fh = tar.extractfile(member)
                if fh is None:
                    continue
                head = next(byte_chunks(fh, label, 65536), b"").decode("utf-8", errors="replace")
                if not sniff(head):
                    continue
                fh = tar.extractfile(member)
                parts.append(parse(fh, label, None, Path(member.name).name))
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        if not parts:
            raise InputError(f"{path}: unreadable archive ({exc})") from None
        parts[-1]["warnings"].append(f"{path}: archive damaged after {parts[-1]['source']} ({exc})")
    if not parts:
        raise InputError(f"{path}: archive holds no Kineto trace")
    return parts


def _read_source(path: Path, rank: int | None) -> dict:
    try:
        with open(path, "rb") as fh:
            return parse(fh, str(path), rank, path.name)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


# ------------------------------------------------------------------ assembly

def _rank_of(part: dict) -> tuple[int, str]:
    dist = part["meta"].get("distributedInfo")
    if isinstance(dist, dict) and isinstance(dist.get("rank"), int):
        return dist["rank"], "distributedInfo"
    if part["rank"] is not None:
        return int(part["rank"]), "option"
    own = part["meta"].get("playbook_rank")  # written by playbook.probes.profiler windows
    if isinstance(own, int) and own >= 0:
        return own, "playbook_rank"
    m = _RANK_IN_NAME_RE.search(part["filename"])
    if m:
        return int(m.group(1)), "file name"
    return 0, "default"


def _rank_meta(part: dict, rank: int, rank_from: str) -> dict:
    doc = part["meta"]
    dist = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    cols: Columns = part["cols"]
    base = doc.get("baseTimeNanoseconds")
    firsts = [float(np.nanmin(a)) for a in cols.parts["ts"] if len(a) and not np.isnan(a).all()]
    return {
        "rank": rank,
        "rank_from": rank_from,
        "world_size": dist.get("world_size"),
        "backend": dist.get("backend"),
        "pg_count": dist.get("pg_count"),
        "pg_config": dist.get("pg_config"),
        "nccl_version": dist.get("nccl_version"),
        "device_properties": doc.get("deviceProperties") if isinstance(doc.get("deviceProperties"), list) else [],
        "base_time_ns": int(base) if isinstance(base, (int, float)) else None,
        "display_time_unit": doc.get("displayTimeUnit"),
        "schema_version": doc.get("schemaVersion"),
        "host_name": doc.get("host_name") or doc.get("hostname") or doc.get("playbook_host"),
        "first_step": doc.get("playbook_first_step"),  # training step of ProfilerStep#0 (playbook windows)
        "trigger": doc.get("playbook_trigger"),
        "trace_name": doc.get("traceName"),
        "source": part["source"],  # the first file read for this rank; all of them in "sources"
        "sources": [part["source"]],
        "events": int(cols.n),
        "phases": dict(cols.counts),
        "first_ts_us": min(firsts) if firsts else None,
        "threads": cols.threads,
        "processes": cols.processes,
    }


def _assemble(inputs: list[str], parts: list[dict]) -> Bundle:
    frames, meta, warnings = [], {}, []
    for part in parts:
        rank, rank_from = _rank_of(part)
        warnings += part["warnings"]
        info = _rank_meta(part, rank, rank_from)
        if rank in meta:  # several windows of the same rank (profiler schedule repeats): keep them all
            prev = meta[rank]
            prev["sources"] += info["sources"]
            prev["events"] += info["events"]
            for k, v in info["phases"].items():
                prev["phases"][k] = prev["phases"].get(k, 0) + v
            if prev.get("world_size") != info.get("world_size"):
                warnings.append(f"{part['source']}: rank {rank} also read from {prev['sources'][0]} with a "
                                f"different world size ({info.get('world_size')} vs {prev.get('world_size')})")
        else:
            meta[rank] = info
        c = part["cols"].frame_columns()
        roles = lane_roles(c, part["cols"].threads, part["cols"].processes) or horovod_roles(c)
        if roles and roles.get("warning"):  # a trace that cannot measure device time says so (roles, horovod)
            warnings.append(f"{part['source']}: {roles.pop('warning')}")
        if roles and rank in meta:
            meta[rank].update(roles)
        frames.append(trace_frame({
            "rank": np.full(part["cols"].n, rank, dtype=np.int64), "cat": c["cat"], "name": c["name"],
            "ts_us": c["ts"], "dur_us": c["dur"], "pid": c["pid"], "tid": c["tid"], "stream": c["stream"],
            "correlation": c["correlation"], "bytes": c["bytes"],
            "source": pd.Categorical.from_codes(np.zeros(part["cols"].n, dtype=np.int8), [part["source"]]),
        }, owned=True))  # the columns are this part's own: held as they are
        part["cols"] = None  # release the chunk arrays before the next file
    ranks = [int(f["rank"].iloc[0]) if len(f) else -1 for f in frames]
    if len(frames) == 1:
        trace = frames[0]
    else:  # each frame is one rank sorted by ts: order frames by rank; re-sort only if a rank repeats
        frames = [f for _, f in sorted(zip(ranks, frames, strict=True), key=lambda rf: rf[0])]
        trace = pd.concat(frames, ignore_index=True)
        trace["source"] = trace["source"].astype("category")
        if len(set(ranks)) < len(ranks):
            trace = trace.sort_values(["rank", "ts_us"], kind="stable").reset_index(drop=True)
    return Bundle(inputs=inputs, trace=trace, warnings=warnings, meta={"kineto": meta})
