"""The human-readable `nvidia-smi` table, captured in a loop: `nvidia-smi -l 2 > gpu.log`, `watch nvidia-smi`.

Handles: the layouts of old drivers (470: `Persistence-M|` columns) and new ones (535, 550+: wider Bus-Id and
power columns); a date line (`Mon Jan 15 10:23:45 2024`) above each snapshot, or a `watch` header (`Every 2.0s:
nvidia-smi   node7: Mon Jan 15 10:23:45 2024`, which also names the host); `N/A`, `ERR!` and `[N/A]` values; the
Processes and MIG sections (skipped); a truncated last snapshot; the GPU rows pasted alone (no banner, no column
headers, the last row cut after its utilization cell; a repeated GPU number starts the next snapshot). Columns read per GPU: GPU-Util (util_pct),
the product name (Bundle.meta GPU_MODELS, as printed: nvidia-smi cuts a long one with "..."),
Memory-Usage (mem_used_mib, mem_total_mib), Pwr:Usage/Cap (power_w, power_limit_w), Temp (temp_c). Snapshots
without a date line get synthetic times `interval_s` apart (all of them, with a warning, when any lacks one). Dates
are the host's local time, read as `tz`.

The table is made for eyes, not for logs: prefer `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,...
--format=csv -l 1`, which is smaller, timestamped to the millisecond and carries more fields.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import frames, local_time, textio
from playbook.readers.nvidia_smi import processes

FORMAT = "nvidia-smi table (nvidia-smi -l / watch nvidia-smi)"

_BANNER = re.compile(r"\|\s*NVIDIA-SMI\s+\d")
_DATE = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\s+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+"
                   r"\d{1,2}\s+\d{1,2}:\d{2}:\d{2}\s+\d{4}")
_WATCH_HOST = re.compile(r"^Every\s+[\d.]+s:.*?\s(\S+):\s+(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\s")
# Linear patterns: no two adjacent repeats can trade characters ([^|]* is the only repeat before its "|"), and
# numbers start where a digit run starts (the lookbehind), so a long line costs one pass.
_GPU_ROW = re.compile(r"^\|\s*(\d+)\s[^|]*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)")
_MEMORY = re.compile(r"(?<!\d)(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_PERSISTENCE = ("On", "Off", "N/A")  # the Persistence-M value that ends a GPU row's first cell
_SECTION_END = ("Processes:", "MIG devices:")


def sniff(head: str) -> bool:
    """True when the text holds an `| NVIDIA-SMI 550.54 ...` banner and the GPU-Util column header, or GPU rows pasted
    without them (`_headerless`)."""
    return (bool(_BANNER.search(head)) and "GPU-Util" in head) or _headerless(head.split("\n")) or \
        _values_only(head.split("\n")[:-1] or [head]) or processes.sniff(head.split("\n"))


def _headerless(lines: list[str]) -> bool:
    """True when neither a banner nor the rule under column headers (`|====`: hl-smi and other look-alikes have their
    own) is there, but a GPU row (`|   0  Name ... | 00000000:04:00.0 Off |`) is followed by its values line
    (`W / W | MiB / MiB | N%`): the table's rows as users paste them, the units naming the cells."""
    if any(_BANNER.search(line) or line.lstrip().startswith("|=") for line in lines):
        return False
    return any(_GPU_ROW.match(line.strip()) and _metrics(nxt.strip()) is not None
               for line, nxt in zip(lines, lines[1:], strict=False))


MIN_VALUE_LINES = 2  # values lines alone: two polls at least (one line of `| 44C P0 72W / 300W |` is a quote)


def _values_only(lines: list[str]) -> bool:
    """True when the text is the GPUs' values lines alone (`| N/A 44C P0 72W / 300W | 5484MiB / 16130MiB | 0%
    Default |`), as `nvidia-smi -l 1 | grep MiB` leaves them (chaiyujin/dctts-pytorch#5): no banner, no GPU row, at
    least MIN_VALUE_LINES values lines, and every other line a process row (`... 5000MiB |`, grep's other match)."""
    body = [ln.strip() for ln in lines if ln.strip()]
    if any(_BANNER.search(ln) or ln.startswith("|=") or _GPU_ROW.match(ln) for ln in body):
        return False
    values = sum(_metrics(ln) is not None for ln in body)
    return values >= MIN_VALUE_LINES and all(_metrics(ln) is not None or "MiB" in ln for ln in body)


def _number(text: str, unit: str | None = None) -> float:
    """`121W` → 121.0 (textio.parse_number); N/A, ERR!, a different `unit` or no number at all → NaN."""
    parsed = textio.parse_number(text)
    return parsed[0] if parsed is not None and (unit is None or parsed[1] in (unit, "")) else np.nan


def _power(cell: str) -> tuple[str, str] | None:
    """('69W', '700W') from the fan/temp/perf/power cell "30%  33C  P0  69W / 700W" (either side may be N/A)."""
    words = cell.split()
    if "/" in words:  # "69W / 700W": the spaced slash
        k = len(words) - 1 - words[::-1].index("/")
        left, right = words[:k], words[k + 1:]
    else:  # "69W/700W"
        joined = next((w for w in reversed(words) if "/" in w and w.upper() != "N/A"), None)
        if joined is None:
            return None
        a, _, b = joined.rpartition("/")
        left, right = words[:words.index(joined)] + [a], [b]
    if right[-1:] == ["W"]:
        right = right[:-1]
    if left[-1:] == ["W"]:
        left = left[:-1]
    if len(right) != 1 or not left:
        return None
    return left[-1], right[0]


def _metrics(line: str) -> dict[str, float] | None:
    """The second line of a GPU's block: fan, temperature, perf state, power | memory | utilization."""
    parts = line.split("|")
    if len(parts) < 4:  # a paste may cut the row after the utilization cell
        return None
    memory = _MEMORY.search(parts[2])
    if memory is None:
        return None
    temp = next((v for tok in parts[1].split() if tok.endswith("C") and np.isfinite(v := _number(tok, "c"))),
                np.nan)
    power = _power(parts[1])
    util = parts[3].split()
    return {"util_pct": _number(util[0], "%") if util else np.nan,
            "mem_used_mib": float(memory.group(1)), "mem_total_mib": float(memory.group(2)),
            "power_w": _number(power[0], "w") if power else np.nan,
            "power_limit_w": _number(power[1], "w") if power else np.nan,
            "temp_c": temp}


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read a log of `nvidia-smi` tables into a Bundle (telemetry)."""
    path = Path(path)
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    notes: list[str] = []  # lossy decoding, a truncated stream
    lines = textio.read_text(path, warnings=notes).split("\n")
    skips = schema.SkipCounter(src)
    host = None
    date: str | None = None  # the last date line seen, for the next banner
    snapshots: list[str | None] = []  # each snapshot's date text (None: none above it)
    rows: dict[str, list] = {"snapshot": [], "gpu": [], "line": [], "ecc": []}
    values: dict[str, list[float]] = {}
    if _values_only(lines):
        return _values_lines(path, lines, interval_s, skips, notes)
    in_gpus = headerless = _headerless(lines)  # rows only: one snapshot, a new one whenever the GPU number repeats
    if headerless:
        snapshots.append(None)
    unread: dict[int, int] = {}  # GPU rows skipped, by snapshot
    models: dict[int, str] = {}  # GPU -> its product name as the row prints it (a long one cut by nvidia-smi)
    modes: dict[int, str] = {}  # GPU -> its compute mode (Default, E. Process ...)
    for no, raw in enumerate(lines, start=1):
        line = raw.strip()  # a table pasted indented (a code block, a quote) or inside a log's indented block
        if host is None and (w := _WATCH_HOST.match(line)):
            host = w.group(1)
        if (d := _DATE.search(line)) and "|" not in line:
            date = d.group(0)
            continue
        if _BANNER.search(line):
            snapshots.append(date)
            date, in_gpus = None, False
            continue
        if not snapshots:
            continue
        if line.startswith("|=") and "+" in line:  # the rule under the column headers: GPU rows follow
            in_gpus = True
            continue
        if any(s in line for s in _SECTION_END):
            in_gpus = False
            continue
        if not in_gpus:
            continue
        first = _GPU_ROW.match(line)
        if first is None:
            continue
        if headerless and rows["gpu"] and int(first.group(1)) <= rows["gpu"][-1]:
            snapshots.append(None)
        nxt = lines[no] if no < len(lines) else ""
        metrics = _metrics(nxt)
        if metrics is None:
            skips.skip(no + 1, f"GPU {first.group(1)}: unreadable values line {nxt.strip()[:60]!r}")
            unread[len(snapshots) - 1] = unread.get(len(snapshots) - 1, 0) + 1
            continue
        rows["snapshot"].append(len(snapshots) - 1)
        rows["gpu"].append(int(first.group(1)))
        if name := _model(line):
            models.setdefault(int(first.group(1)), name)
        if mode := processes.compute_mode(nxt):
            modes[int(first.group(1))] = mode
        rows["line"].append(no)
        cells = line.split("|")
        rows["ecc"].append(_number(cells[3].strip()) if len(cells) > 4 and cells[3].strip().isdigit() else np.nan)
        for column, value in metrics.items():
            values.setdefault(column, []).append(value)
    procs, slices = processes.sections(lines)
    if not snapshots and procs:  # a Processes section alone: who holds each GPU, no GPU rows
        alone = schema.Bundle(inputs=[src], warnings=notes + [
            f"{src}: an nvidia-smi Processes section alone: {len(procs)} processes, no GPU rows (no utilization)"])
        alone = processes.attach(alone, src, host or textio.host_from_path(path), procs, [], {})
        return _with_log_lines(path, lines, alone, tz)  # a job's log that printed the section: its lines too
    if not snapshots:
        raise InputError(f"{src}: no '| NVIDIA-SMI ...' banner found: not an nvidia-smi table log")
    snap = np.asarray(rows["snapshot"], dtype=np.int64)
    if in_gpus and not headerless:  # the file ends inside a table's GPU rows: nvidia-smi -l stopped mid-write
        per = np.bincount(snap, minlength=len(snapshots)) + np.bincount(
            list(unread), weights=list(unread.values()), minlength=len(snapshots)).astype(np.int64)
        for _ in range(int(per.max() - per[-1]) if len(per) else 0):
            skips.skip(len(lines), f"the last table is cut off after {per[-1]} of {per.max()} GPU rows")
    time_ns, note = _times(snapshots, snap, rows["line"], interval_s, tz, skips, src)
    synthetic = any(s is None for s in snapshots)
    bundle = frames.telemetry_bundle(src, host or textio.host_from_path(path), time_ns, rows["gpu"], values, skips,
                                     note, interval_s if synthetic else None)
    if not len(snap):
        bundle.warnings.append(f"{src}: {len(snapshots)} nvidia-smi table(s) but no GPU rows in them")
    bundle.events = _ecc_events(time_ns, rows["gpu"], rows["ecc"], bundle_host(bundle, host, path), src)
    if models:  # the part each GPU is: clocks and power are judged against its own model's (GpuSeries.parts)
        bundle.meta[schema.GPU_MODELS] = {schema.gpu_id(bundle_host(bundle, host, path), g): m
                                          for g, m in models.items()}
    bundle.warnings[:0] = notes
    if len(snap):  # the GPU rows read: who shares them (none read: the bundle stays empty, for files.read_file)
        processes.attach(bundle, src, bundle_host(bundle, host, path), procs, slices, modes)
    return _with_log_lines(path, lines, bundle, tz)


def _values_lines(path: Path, lines: list[str], interval_s: float | None, skips: schema.SkipCounter,
                  notes: list[str]) -> schema.Bundle:
    """The values lines alone (`_values_only`), one poll each: nothing names the GPU, so one GPU is read, polled
    once a line, `interval_s` apart (synthetic times, warned) — refused when the lines' memory totals differ (several
    GPUs' lines interleaved, which no line tells apart)."""
    src = str(path)
    found = [(no, m) for no, raw in enumerate(lines, start=1) if (m := _metrics(raw.strip())) is not None]
    totals = {m["mem_total_mib"] for _, m in found}
    if len(totals) > 1:
        raise InputError(f"{src}:{found[0][0]}: nvidia-smi values lines without their GPU rows, of {len(totals)} "
                         "memory sizes: several GPUs' lines interleaved, and no line names its GPU")
    for no, raw in enumerate(lines, start=1):
        if raw.strip() and _metrics(raw.strip()) is None:
            skips.skip(no, f"not a GPU's values line: {raw.strip()[:60]!r}")
    snap = np.arange(len(found), dtype=np.int64)
    time_ns = textio.synthetic_times(snap, interval_s).astype(np.int64)
    note = textio.synthetic_warning(src, "values lines (no GPU row, banner or date: read as one GPU, one poll a "
                                         "line)", interval_s)
    values = {k: [m[k] for _, m in found] for k in found[0][1]}
    bundle = frames.telemetry_bundle(src, textio.host_from_path(path), time_ns, [0] * len(found), values, skips,
                                     note, interval_s)
    bundle.warnings[:0] = notes
    return bundle


def _model(row: str) -> str:
    """The product name in a GPU row's first cell ("   0  NVIDIA H100 80GB HBM3          On  ": the index, the
    name, Persistence-M), "" when the cell holds none; a long name cut by nvidia-smi loses its "..."."""
    cells = row.strip().split("|")
    words = cells[1].split() if len(cells) > 2 else []
    if len(words) < 3 or not words[0].isdigit() or words[-1] not in _PERSISTENCE:
        return ""
    return " ".join(words[1:-1]).rstrip(". ")


PASTE_LINES = 200


def _with_log_lines(path: Path, lines: list[str], bundle: schema.Bundle, tz: str) -> schema.Bundle:
    """A training log that printed `nvidia-smi` once or twice (modded-nanogpt's records: the script, a table, then
    its step lines) holds more text than tables: its lines are read too (steps, events), beside the tables. So are
    a paste's (at most PASTE_LINES lines: a table or two and the lines of the log pasted with it, a trainer's
    statement of the devices it uses); a long `nvidia-smi -l` log's lines between its tables are its banners."""
    table = sum(1 for ln in lines if ln.lstrip().startswith(("|", "+")))
    other = sum(1 for ln in lines if ln.strip()) - table
    if other <= table and (len(lines) > PASTE_LINES or not other):
        return bundle
    from playbook.readers import lines as line_scan

    try:
        return bundle.extend(line_scan.scan(path, tz=tz))
    except InputError:  # nothing but the tables to read
        return bundle


def bundle_host(bundle: schema.Bundle, host: str | None, path: Path) -> str:
    """The host the telemetry rows carry (the watch header's, else the file's name)."""
    tele = bundle.telemetry
    return str(tele["host"].iloc[0]) if len(tele) else (host or textio.host_from_path(path))


def _ecc_events(time_ns: np.ndarray, gpus: list[int], counts: list[float], host: str, src: str):
    """`ecc` events from the Volatile Uncorr. ECC column: the count of uncorrectable ECC errors since the driver
    loaded, per GPU — one event where it is first read above zero and each time it rises."""
    rows = []
    last: dict[int, float] = {}
    for t, g, n in zip(time_ns, gpus, counts, strict=True):
        if not np.isfinite(n) or t == np.iinfo(np.int64).min:
            continue
        if n > last.get(g, 0.0):
            rows.append({"time": pd.Timestamp(int(t), tz="UTC"), "host": host, "kind": "ecc",
                         "detail": f"gpu {g}: {n:.0f} volatile uncorrectable ECC error{'s' if n != 1 else ''} "
                                   "(nvidia-smi's Volatile Uncorr. ECC)", "source": src})
        last[g] = max(n, last.get(g, 0.0))
    return schema.events_frame({k: [r[k] for r in rows] for k in rows[0]} if rows else None)


def _times(snapshots: list[str | None], snap: np.ndarray, lines: list[int], interval_s: float | None, tz: str,
           skips: schema.SkipCounter, src: str) -> tuple[np.ndarray, str | None]:
    """int64 ns UTC per GPU row (INT64_MIN where the date cannot be read) and a warning when synthetic."""
    nat = np.iinfo(np.int64).min
    if not len(snap):
        return np.zeros(0, dtype=np.int64), None
    if any(s is None for s in snapshots):
        dated = sum(s is not None for s in snapshots)
        what = "snapshots" + (f" ({dated} of {len(snapshots)} had a date line)" if dated else "")
        return (textio.synthetic_times(snap, interval_s).astype(np.int64),
                textio.synthetic_warning(src, what, interval_s))
    text = pd.Series([" ".join(s.split()) for s in snapshots])
    stamps = pd.to_datetime(text, format="%a %b %d %H:%M:%S %Y", errors="coerce")
    stamps = local_time.localize(stamps, tz)
    per_snapshot = textio.datetime_ns(stamps)  # a year past 2262: NaT, counted below
    per_snapshot[stamps.isna().to_numpy()] = nat
    ns = per_snapshot[snap]
    for i in np.flatnonzero(ns == nat)[: skips.keep]:
        skips.skip(lines[i], f"date {snapshots[snap[i]]!r} does not read as a time in {tz}")
    skips.count += max(0, int((ns == nat).sum()) - skips.keep)
    return ns, None
