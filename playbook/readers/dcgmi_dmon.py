"""`dcgmi dmon -e 203,1002,155,...` text: a `#Entity GPUTL SMACT POWER ...` header (field tags: dcgm.DMON_TAGS),
then `GPU 0  97  0.823 ...` rows without times; a new tick whenever the GPU number does not increase, ticks on the
synthetic clock `interval_s` apart. GPU instances, NvSwitches and CPUs are passed over (not per-GPU telemetry)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import textio
from playbook.readers.dcgm import DMON_TAGS, Samples

ENTITY = re.compile(r"^#\s*Entity\b", re.IGNORECASE)
_DMON_ROW = re.compile(r"^(GPU|GPU-I|GPU-CI|Switch|Link|CPU|Core)\s+(\d+)\s+(.*)$", re.IGNORECASE)


def sniff(head: str) -> bool:
    """A `#Entity` header among the first 400 lines."""
    return any(ENTITY.match(line.strip()) for line in head.split("\n", 400)[:400])


def read(path: str | Path, interval_s: float | None = None, **_opts) -> schema.Bundle:
    """The telemetry of a `dcgmi dmon` text; ticks on the synthetic clock `interval_s` apart."""
    path = Path(path)
    interval_s = textio.check_interval(interval_s)
    notes: list[str] = []  # lossy decoding, a truncated stream
    text = textio.read_text(path, warnings=notes)
    src = str(path)
    host = textio.host_from_path(path)
    skips = schema.SkipCounter(src)
    tags: list[str] | None = None
    rows: list[tuple[int, int, dict[str, float]]] = []  # (line, gpu, values)
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        if ENTITY.match(line):
            tags = [t.upper() for t in re.sub(r"^#\s*Entity", "", line, flags=re.IGNORECASE).split()]
            continue
        if line.upper() in ("ID", "#ID") or line.startswith("#") or set(line) <= set("-= "):
            continue
        m = _DMON_ROW.match(line)
        if not m or tags is None:
            skips.skip(no, f"not a dcgmi dmon row {line[:50]!r}")
            continue
        if m.group(1).upper() != "GPU":
            continue  # GPU instances, NvSwitches, CPUs: not per-GPU telemetry
        cells = m.group(3).split()
        if len(cells) != len(tags):
            skips.skip(no, f"{len(cells)} of {len(tags)} values {line[:50]!r}")
            continue
        values: dict[str, float] = {}
        bad = None
        for tag, cell in zip(tags, cells, strict=True):
            metric = DMON_TAGS.get(tag)
            if metric is None:
                continue
            if cell.upper() in ("N/A", "-", "NAN"):
                values[metric] = np.nan
                continue
            try:
                values[metric] = float(cell)
            except ValueError:
                bad = f"bad {tag} value {cell!r}"
                break
        if bad:
            skips.skip(no, bad)
            continue
        if len(m.group(2)) > 9:
            skips.skip(no, "GPU number too long")
            continue
        rows.append((no, int(m.group(2)), values))
    if tags is None:
        raise InputError(f"{src}: no dcgmi dmon header ('#Entity ...') found")
    samples = Samples(src, host)
    gpus = np.array([g for _, g, _ in rows], dtype=np.int64)
    ticks = np.cumsum(np.r_[True, gpus[1:] <= gpus[:-1]]) - 1 if len(rows) else np.zeros(0, dtype=np.int64)
    times = textio.synthetic_times(ticks, interval_s).astype(np.int64)
    for (_, gpu, values), t in zip(rows, times, strict=True):
        for metric, v in values.items():
            samples.add(int(t), host, gpu, metric, v)
        if not values:
            samples.add(int(t), host, gpu, "DCGM_FI_DEV_GPU_UTIL", np.nan)
    bundle = samples.bundle(interval_s)
    bundle.warnings[:0] = notes
    bundle.warnings.append(textio.synthetic_warning(src, "dcgmi dmon ticks", interval_s))
    warning = skips.warning(rows_read=len(rows))
    if warning:
        bundle.warnings.append(warning)
    return bundle
