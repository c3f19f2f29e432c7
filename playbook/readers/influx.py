"""InfluxDB line protocol: what Telegraf writes (`[[outputs.file]]`, `influx query --raw`, or an exported bucket).

    nvidia_smi,host=node1,index=0,uuid=GPU-...,name=NVIDIA\\ A100 utilization_gpu=96i,memory_used=40000i 1764615600000000000

One line: `measurement[,tag=value...] field=value[,field=value...] [timestamp]` (backslash escapes spaces, commas
and equals signs; string fields are double-quoted; integers end in `i`/`u`). Each field's name is read like a
column name (playbook.readers.headers: `utilization_gpu` -> util_pct, `memory_used` -> MiB used); a field named
`value` takes its meaning from the measurement (`nv_util,type-id=0 value=87`). The GPU comes from a tag whose name
means an index (`index`, `gpu`, `gpu_id` ...) or else the UUID tag; the host from `host` / `hostname`. Timestamps are
epoch numbers whose magnitude gives the precision (s, ms, us or ns); lines without one are placed on ticks
`interval_s` apart (a tick ends when a series repeats).
"""

from __future__ import annotations

import functools
import io
import re
from pathlib import Path

import numpy as np

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import dcgm, headers, textio

FORMAT = "InfluxDB line protocol (Telegraf)"

SNIFF_LINES = 50


def _split(text: str, sep: str, quotes: bool = False) -> list[str]:
    """`text` cut at each `sep` that no backslash escapes (and, with `quotes`, that lies outside "...")."""
    if "\\" not in text:  # nothing escaped (Telegraf's usual line): the same cut by str.split, quotes and all
        return text.split(sep) if not (quotes and '"' in text) else _split_quoted(text, sep)
    piece = _piece_re(sep, quotes)
    out, pos, n = [], 0, len(text)
    while True:  # one regex match per piece: linear in the line, at C speed
        end = piece.match(text, pos).end()
        out.append(text[pos:end])
        if end >= n:
            return out
        pos = end + 1  # past the separator


@functools.lru_cache(maxsize=8)
def _piece_re(sep: str, quotes: bool) -> re.Pattern:
    """One piece up to an unescaped `sep`: runs of other characters, a backslash and the character it escapes
    (or a lone one at the end), and with `quotes` a "..." string (to the end of the text when unclosed)."""
    stop = "\\\\" + re.escape(sep) + ('"' if quotes else "")  # the characters a plain run stops at
    quoted = r'|"(?:[^"\\]++|\\.?)*+"?' if quotes else ""
    return re.compile(rf"(?:[^{stop}]++|\\.?{quoted})*+", re.DOTALL)


def _split_quoted(text: str, sep: str) -> list[str]:
    """_split of a text without backslashes at each `sep` outside "...": the pieces between quotes alternate
    outside, inside."""
    out, cur = [], []
    for k, piece in enumerate(text.split('"')):
        if k:
            cur.append('"')
        if k % 2:
            cur.append(piece)
            continue
        first, *rest = piece.split(sep)
        cur.append(first)
        for cut in rest:
            out.append("".join(cur))
            cur = [cut]
    out.append("".join(cur))
    return out


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return text.replace("\\ ", " ").replace("\\,", ",").replace("\\=", "=").replace('\\"', '"')


def parse(line: str) -> tuple[str, dict[str, str], dict[str, float], int | None] | None:
    """(measurement, tags, numeric fields, timestamp or None) of one line; None when it is not line protocol."""
    parts = [p for p in _split(line.strip(), " ", quotes=True) if p]
    if len(parts) not in (2, 3):
        return None
    series = _series(parts[0])
    if series is None:
        return None
    measurement, tags = series[0], dict(series[1])
    fields: dict[str, float] = {}
    for item in _split(parts[1], ",", quotes=True):
        k, eq, v = item.partition("=")
        if not eq or not k or not v:
            return None
        if v.startswith('"') or v.lower() in ("t", "f", "true", "false"):
            continue  # strings and booleans: not readings
        try:
            fields[_unescape(k)] = float(v[:-1] if v[-1] in "iu" else v)
        except ValueError:
            return None
    ts = None
    if len(parts) == 3:
        if not parts[2].lstrip("-").isdecimal() or len(parts[2]) > 20:
            return None
        ts = int(parts[2])
    return measurement, tags, fields, ts


@functools.lru_cache(maxsize=4096)
def _series(head: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """(measurement, tag items) of a line's first part, None when it is not one; cached: a file repeats few."""
    measurement, *items = _split(head, ",")
    measurement = _unescape(measurement)
    if not measurement or measurement.startswith("#"):
        return None
    tags = []
    for item in items:
        k, eq, v = item.partition("=")
        if not eq or not k:
            return None
        tags.append((_unescape(k), _unescape(v)))
    return measurement, tuple(tags)


@functools.lru_cache(maxsize=4096)
def _name(measurement: str, field: str) -> str:
    """The metric name of a field: its own name, or the measurement's when the field is just "value"."""
    return f"{measurement}_{field}" if headers.tokens(field) in (["value"], ["val"], ["gauge"]) else field


def _gpu_tags(tags: dict[str, str]) -> bool:
    return headers.label_gpu(tags) is not None or any(tags.get(k) for k in ("uuid", "UUID"))


def sniff(head: str) -> bool:
    """Line-protocol lines, one of them a GPU metric field on a series whose tags name a GPU."""
    seen = 0
    for line in head.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        seen += 1
        if seen > SNIFF_LINES:
            break
        found = parse(line)
        if found is None:
            return False
        measurement, tags, fields, _ts = found
        if _gpu_tags(tags) and any(dcgm.metric(_name(measurement, f)) for f in fields):
            return True
    return False


# epoch magnitude -> factor to ns (ns > 1e17, us > 1e14, ms > 1e11, else s: dates 1973-2286 in every precision)
_SCALE_BY_MAGNITUDE = ((1e17, 1), (1e14, 1_000), (1e11, 1_000_000), (0.0, 1_000_000_000))


def read(path: str | Path, interval_s: float | None = None, **_opts) -> schema.Bundle:
    """Read line-protocol telemetry into a Bundle (telemetry)."""
    path = Path(path)
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    samples = dcgm.Samples(src, textio.host_from_path(path))
    skips = schema.SkipCounter(src)
    other: set[str] = set()
    synth: list[int] = []
    seen: set[tuple] = set()
    tick = 0
    with textio.open_text(path) as stream:
        for no, raw in enumerate(io.BufferedReader(stream), start=1):
            line = raw.decode("utf-8", "replace").strip()
            if not line or line.startswith("#"):
                continue
            found = parse(line)
            if found is None:
                skips.skip(no, f"not line protocol {line[:50]!r}")
                continue
            measurement, tags, fields, ts = found
            names = {f: _name(measurement, f) for f in fields}
            known = {f: n for f, n in names.items() if dcgm.metric(n)}
            ident = samples.identity(tags, strict=True) if known else None
            if ident is None:
                other.add(measurement)
                continue
            if ts is None:
                key = (measurement, *ident)
                if key in seen:
                    tick, seen = tick + 1, set()
                seen.add(key)
                t_ns = tick
                synth.append(len(samples.time))
            else:
                t_ns = ts * next(scale for bound, scale in _SCALE_BY_MAGNITUDE if abs(ts) >= bound)
                if not -2**63 < t_ns < 2**63:  # beyond year 2262: not a time
                    skips.skip(no, f"timestamp out of range {line[:50]!r}")
                    continue
            for f, n in known.items():
                samples.add(t_ns, ident[0], ident[1], n, fields[f])
        notes = stream.notes
    if not samples.time:
        what = f" (only other measurements: {', '.join(sorted(other)[:4])})" if other else ""
        raise InputError(f"{src}: no GPU metric fields on series that name a GPU{what}")
    warnings = []
    if synth:
        times = np.asarray(samples.time, dtype=np.int64)
        times[synth] = textio.synthetic_times(times[synth], interval_s).astype(np.int64)
        samples.time = times.tolist()
        warnings.append(textio.synthetic_warning(src, "lines without timestamps", interval_s))
    bundle = samples.bundle(interval_s if synth and len(synth) == len(samples.time) else None)
    bundle.warnings[:0] = notes + warnings
    warning = skips.warning(rows_read=len(samples.time))
    if warning:
        bundle.warnings.append(warning)
    return bundle
