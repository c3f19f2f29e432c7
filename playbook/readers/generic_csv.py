"""A telemetry CSV written by anything (a monitoring export, a home-grown poller, the telemetry table saved as CSV)
whose header names say what the columns are.

Recognised headers (case, spaces, dots and `[unit]` / `(unit)` suffixes ignored): a time column (time,
timestamp, ts, datetime, epoch, unix_time, time_ms ...: ISO strings, or epoch numbers in s/ms/us/ns from the
name's suffix or their magnitude; small numbers are seconds since the start); a GPU column (gpu, gpu_id,
gpu_index, index, device, entity ...; "GPU 3", "cuda:3" and UUIDs are understood); an optional host column
(host, hostname, node, instance ...); and metric columns such as utilization / util / gpu_util, mem_util,
memory_used (MiB; _mb/_gb/_bytes suffixes converted), power, sm_clock, mem_clock, temperature, throttle_reasons,
sm_active (0-1, or percent), pcie/nvlink tx/rx, plus every schema column name itself. Delimiters: , tab ;.
Values may carry units ("97 %", "70959 MiB"). Rows whose time, GPU or a metric cannot be read are skipped and
counted. Without a time column, ticks (the GPU number stops increasing) get synthetic times `interval_s` apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from playbook import schema
from playbook.errors import InputError
from playbook.readers import textio

FORMAT = "telemetry CSV with named columns"

_ALIASES: dict[str, tuple[str, ...]] = {
    "time": ("time", "timestamp", "ts", "datetime", "date_time", "wall_time", "walltime", "epoch", "epoch_s",
             "epoch_ms", "epoch_us", "epoch_ns", "unix_time", "unixtime", "unix_ts", "time_s", "time_ms",
             "time_us", "time_ns", "timestamp_s", "timestamp_ms", "timestamp_us", "timestamp_ns", "time_utc",
             "timestamp_utc", "sample_time", "date"),
    "host": ("host", "hostname", "node", "node_name", "nodename", "instance", "server", "machine"),
    "gpu": ("gpu", "gpu_id", "gpu_index", "gpu_idx", "index", "device", "device_id", "device_index", "gpu_num",
            "cuda_device", "entity", "entity_id", "idx", "gpu_uuid", "uuid"),
    "util_pct": ("util_pct", "utilization", "util", "gpu_util", "gpu_util_pct", "gpu_utilization",
                 "utilization_gpu", "gputl", "gpu_utilization_pct", "utilization_gpu_pct", "gpu_busy",
                 "dcgm_fi_dev_gpu_util", "gpu_util_ratio", "utilization_ratio", "util_frac"),
    "mem_util_pct": ("mem_util_pct", "mem_util", "memory_util", "utilization_memory", "mcutl", "memory_utilization",
                     "mem_utilization", "dcgm_fi_dev_mem_copy_util"),
    "mem_used_mib": ("mem_used_mib", "memory_used", "mem_used", "memory", "fb_used", "fbusd", "memory_used_mib",
                     "mem_used_mb", "memory_used_mb", "mem_used_gb", "memory_used_gb", "mem_used_gib",
                     "gpu_mem_used", "gpu_memory_used", "mem_used_bytes", "memory_used_bytes", "dcgm_fi_dev_fb_used"),
    "mem_total_mib": ("mem_total_mib", "memory_total", "mem_total", "fb_total", "fbttl", "memory_total_mib",
                      "mem_total_mb", "memory_total_mb", "mem_total_bytes", "memory_total_bytes"),
    "power_w": ("power_w", "power", "power_draw", "power_usage", "pwr", "power_watts", "power_draw_w",
                "power_usage_w", "dcgm_fi_dev_power_usage"),
    "power_limit_w": ("power_limit_w", "power_limit", "enforced_power_limit", "pmlmt"),
    "sm_clock_mhz": ("sm_clock_mhz", "sm_clock", "clocks_sm", "clock_sm", "smclk", "pclk", "graphics_clock",
                     "clocks_gr", "sm_clk", "clocks_current_sm", "dcgm_fi_dev_sm_clock"),
    "mem_clock_mhz": ("mem_clock_mhz", "mem_clock", "clocks_mem", "memory_clock", "mclk", "mmclk",
                      "clocks_current_memory", "dcgm_fi_dev_mem_clock"),
    "temp_c": ("temp_c", "temp", "temperature", "temperature_gpu", "gpu_temp", "gpu_temperature", "tmptr", "gtemp",
               "gpu_temp_c", "dcgm_fi_dev_gpu_temp"),
    "throttle_reasons": ("throttle_reasons", "clocks_event_reasons", "clock_throttle_reasons",
                         "clocks_throttle_reasons", "clocks_throttle_reasons_active", "clocks_event_reasons_active",
                         "dcgm_fi_dev_clock_throttle_reasons", "dcgm_fi_dev_clocks_event_reasons"),
    "sm_active": ("sm_active", "smact", "dcgm_fi_prof_sm_active", "sm_active_pct"),
    "pcie_tx_mib_s": ("pcie_tx_mib_s", "pcie_tx", "pcie_tx_mb_s", "pcitx", "pcie_tx_bytes", "txpci",
                      "dcgm_fi_prof_pcie_tx_bytes"),
    "pcie_rx_mib_s": ("pcie_rx_mib_s", "pcie_rx", "pcie_rx_mb_s", "pcirx", "pcie_rx_bytes", "rxpci",
                      "dcgm_fi_prof_pcie_rx_bytes"),
    "nvlink_tx_mib_s": ("nvlink_tx_mib_s", "nvlink_tx", "nvltx", "nvlink_tx_bytes", "dcgm_fi_prof_nvlink_tx_bytes"),
    "nvlink_rx_mib_s": ("nvlink_rx_mib_s", "nvlink_rx", "nvlrx", "nvlink_rx_bytes", "dcgm_fi_prof_nvlink_rx_bytes"),
    "pcie_link_gen": ("pcie_link_gen", "pcie_gen", "pcie_link_gen_current"),
    "pcie_link_width": ("pcie_link_width", "pcie_width", "pcie_link_width_current"),
    "pcie_replay_count": ("pcie_replay_count", "pcie_replay", "pcie_replay_counter", "dcgm_fi_dev_pcie_replay_counter"),
}
_LOOKUP = {alias: column for column, aliases in _ALIASES.items() for alias in aliases}
# Per-unit factors for names whose unit lives in a suffix ("mem_used_gb") or whose raw unit is bytes/s.
_SUFFIX_UNITS = (("_bytes", "bytes"), ("_gib", "gib"), ("_gb", "gb"), ("_mib", "mib"), ("_mb", "mb"), ("_kb", "kb"))
_BYTES_PER_S = {"pcitx", "pcirx", "pcie_tx_bytes", "pcie_rx_bytes", "nvltx", "nvlrx", "nvlink_tx_bytes",
                "nvlink_rx_bytes", "dcgm_fi_prof_pcie_tx_bytes", "dcgm_fi_prof_pcie_rx_bytes",
                "dcgm_fi_prof_nvlink_tx_bytes", "dcgm_fi_prof_nvlink_rx_bytes"}
_UNIT_IN_NAME = re.compile(r"\s*[\[(]([^\])]*)[\])]\s*$")
_NUM_WITH_UNIT = r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*[A-Za-z%/]*\s*$"


def normalize(name: str) -> tuple[str, str | None]:
    """'memory.used [MiB]' -> ('memory_used', 'mib'); '#Entity' -> ('entity', None)."""
    unit = None
    m = _UNIT_IN_NAME.search(name)
    if m:
        unit = m.group(1).strip().lower() or None
        name = name[: m.start()]
    key = re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")
    return key, unit


def _delimiter(line: str) -> str | None:
    counts = {sep: line.count(sep) for sep in (",", "\t", ";")}
    sep = max(counts, key=counts.get)
    return sep if counts[sep] >= 1 else None


def _header(head: str) -> tuple[int, str, list[str]] | None:
    """(line index, delimiter, names) of the header: the first line that is not blank or a '#' comment."""
    for k, line in enumerate(head.split("\n")[:50]):
        s = line.strip()
        if not s or (s.startswith("#") and not s.lower().startswith("#entity")):
            continue
        sep = _delimiter(s)
        if sep is None:
            return None
        return k, sep, [c.strip().strip('"') for c in s.split(sep)]
    return None


def mapping(names: list[str]) -> dict[str, tuple[int, str | None, str]]:
    """Schema role -> (column position, unit, normalized name) for the header names recognised."""
    out: dict[str, tuple[int, str | None, str]] = {}
    for pos, raw in enumerate(names):
        key, unit = normalize(raw)
        role = _LOOKUP.get(key)
        if role and role not in out:
            out[role] = (pos, unit, key)
    return out


def sniff(head: str) -> bool:
    """A delimited header naming at least one GPU metric and a time or GPU column."""
    found = _header(head)
    if found is None:
        return False
    roles = mapping(found[2])
    metrics = [r for r in roles if r in schema.TELEMETRY_METRICS]
    return bool(metrics) and ("time" in roles or "gpu" in roles)


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read a telemetry CSV with recognisable headers into a Bundle (telemetry)."""
    path = Path(path)
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    raw = textio.read_bytes(path)
    text_head = textio.decode(raw[: textio.HEAD_BYTES])
    found = _header(text_head)
    if found is None:
        raise InputError(f"{src}: no delimited header line")
    skip_lines, sep, names = found
    roles = mapping(names)
    if not any(r in schema.TELEMETRY_METRICS for r in roles):
        raise InputError(f"{src}: no GPU metric among the columns {', '.join(names[:8])}")
    skips = schema.SkipCounter(src)
    table, lines = _parse(raw, sep, names, skip_lines, skips, src)
    frame = {name: table.column(i) for i, name in enumerate(table.column_names)}
    n = table.num_rows
    bad = np.zeros(n, dtype=bool)
    reasons: list[tuple[int, str]] = []

    def drop(mask: np.ndarray, why) -> None:
        new = mask & ~bad
        for i in np.flatnonzero(new)[:3]:
            reasons.append((int(lines[i]), why(int(i))))
        bad[:] |= new

    columns: dict[str, np.ndarray] = {}
    strings = {role: pd.Series(frame[f"c{pos}"].to_pandas(), dtype=object).str.strip() for role, (pos, _u, _k)
               in roles.items()}
    bundle = schema.Bundle(inputs=[src])
    for role, (_pos, unit, key) in roles.items():
        if role not in schema.TELEMETRY_METRICS:
            continue
        values, unparsed = _numbers(strings[role], role)
        drop(unparsed, lambda i, s=strings[role], k=key: f"bad {k} value {str(s.iloc[i])[:30]!r}")
        columns[role] = values * _factor(role, key, unit, values)
    if "sm_active" in columns and np.nanmax(np.r_[columns["sm_active"], 0]) > 1.5:
        columns["sm_active"] = columns["sm_active"] / 100.0  # written as a percentage
    gpu = _gpus(strings.get("gpu"), n, drop)
    columns["gpu"] = gpu
    host: object = textio.host_from_path(path)
    if "host" in strings:
        h = strings["host"].fillna("").astype(str)
        host_values = np.where(h.to_numpy() == "", host, h.to_numpy())
        host = host_values.astype(object)
    time_ns, note = _times(strings.get("time"), roles.get("time"), gpu, tz, interval_s, drop, src)
    if note:
        bundle.warnings.append(note)
    good = ~bad
    for line, why in reasons[: max(0, skips.keep - len(skips.reasons))]:
        skips.reasons.append(f"line {line}: {why}")
    skips.count += int(bad.sum())
    warning = skips.warning(rows_read=int(good.sum()))
    if warning:
        bundle.warnings.append(warning)
    if not good.any():
        return bundle
    columns = {k: v[good] for k, v in columns.items()}
    columns["time"] = time_ns[good]
    if not isinstance(host, str):
        host = host[good]
    synthetic = "time" not in roles
    bundle.telemetry = textio.build_telemetry(columns, host, src, interval_s if synthetic else None)
    return bundle


def _parse(raw: bytes, sep: str, names: list[str], skip_lines: int, skips: schema.SkipCounter,
           src: str) -> tuple[pa.Table, np.ndarray]:
    """The rows as string columns, and each row's 1-based line number; damaged rows are skipped and counted."""
    cols = [f"c{i}" for i in range(len(names))]
    offset = 0
    for _ in range(skip_lines):  # drop comment / blank lines above the header
        nl = raw.find(b"\n", offset)
        offset = len(raw) if nl < 0 else nl + 1
    body = raw[offset:]
    bad_rows: list[tuple[int | None, str]] = []

    def on_invalid(row) -> str:
        bad_rows.append((row.number, row.text))
        return "skip"

    try:
        table = pacsv.read_csv(
            pa.py_buffer(body),
            read_options=pacsv.ReadOptions(column_names=cols, skip_rows=1, use_threads=False, encoding="utf8"),
            parse_options=pacsv.ParseOptions(delimiter=sep, invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in cols},
                                                 strings_can_be_null=False))
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0][:120]
        raise InputError(f"{src}: unreadable CSV ({first})") from None
    # pyarrow numbers rows by counting non-empty lines (the header is row 1)
    text = body.decode("utf-8", errors="replace")
    nonempty = np.array([k + 1 + skip_lines for k, ln in enumerate(text.split("\n")) if ln], dtype=np.int64)
    invalid = np.array([number for number, _ in bad_rows if number is not None], dtype=np.int64)
    keep = np.ones(len(nonempty), dtype=bool)
    keep[:1] = False
    keep[invalid[(invalid >= 1) & (invalid <= len(nonempty))] - 1] = False
    lines = nonempty[keep]
    for number, row_text in bad_rows:
        line = None if number is None or number > len(nonempty) else int(nonempty[number - 1])
        skips.skip(line, f"{row_text.count(sep) + 1} of {len(names)} fields {row_text[:50]!r}")
    if len(lines) != table.num_rows:  # not expected with pyarrow's numbering; stay honest if it happens
        lines = np.arange(table.num_rows, dtype=np.int64) + skip_lines + 2
    return table, lines


def _numbers(s: pd.Series, role: str) -> tuple[np.ndarray, np.ndarray]:
    """Floats from strings (units, hex masks and N/A tokens understood) and the mask of unreadable cells."""
    low = s.fillna("").str.lower()
    na = low.isin(textio.NA_TOKENS) | (low.str.startswith("[") & low.str.endswith("]"))
    values = pd.to_numeric(s.where(~na), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan).copy()
    retry = np.isnan(values) & ~na.to_numpy()
    if retry.any():
        sub = s[retry]
        hexes = sub.str.lower().str.startswith("0x")
        parsed = pd.to_numeric(sub.str.extract(_NUM_WITH_UNIT, expand=False), errors="coerce")
        if hexes.any():
            parsed[hexes] = [float(int(v, 16)) if re.fullmatch(r"0x[0-9a-fA-F]+", v) else np.nan
                             for v in sub[hexes].str.strip()]
        values[retry] = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
    unparsed = np.isnan(values) & ~na.to_numpy()
    return values, unparsed


def _factor(role: str, key: str, unit: str | None, values: np.ndarray) -> float:
    if key in _BYTES_PER_S:
        return 1 / 2**20
    if unit:
        u = unit.replace(" ", "")
        return textio.UNIT_FACTORS.get(u, 100.0 if u in ("ratio", "fraction") and role.endswith("_pct") else 1.0)
    for suffix, u in _SUFFIX_UNITS:
        if key.endswith(suffix) and role.endswith("_mib"):
            return textio.UNIT_FACTORS[u]
    if role.endswith("_pct") and (key.endswith(("_ratio", "_frac"))):
        return 100.0
    return 1.0


def _gpus(s: pd.Series | None, n: int, drop) -> np.ndarray:
    if s is None:
        return np.zeros(n, dtype=np.int64)
    digits = s.str.extract(r"^(?:gpu|cuda|nvidia|device)?\s*[:#-]?\s*(\d+)$", flags=re.IGNORECASE, expand=False)
    gpu = pd.to_numeric(digits, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    missing = np.isnan(gpu)
    if missing.all() and n:
        # identifiers (UUIDs, bus ids): number them in order of first appearance
        codes, _ = pd.factorize(s)
        gpu = codes.astype(np.float64)
        gpu[codes < 0] = np.nan
        missing = np.isnan(gpu)
    drop(missing, lambda i: f"bad gpu {str(s.iloc[i])[:30]!r}")
    return np.where(missing, -1, gpu).astype(np.int64)


def _times(s: pd.Series | None, role: tuple[int, str | None, str] | None, gpu: np.ndarray, tz: str,
           interval_s: float | None, drop, src: str) -> tuple[np.ndarray, str | None]:
    n = len(gpu)
    if s is None:
        ticks = np.cumsum(np.r_[True, gpu[1:] <= gpu[:-1]]) - 1 if n else np.zeros(0, dtype=np.int64)
        return (textio.synthetic_times(ticks, interval_s).astype(np.int64),
                textio.synthetic_warning(src, "rows (a new tick whenever the GPU number stops increasing)",
                                         interval_s))
    key = role[2] if role else "time"
    numbers = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    note = None
    if np.isfinite(numbers).sum() >= max(1, int(0.9 * n)):
        unit = next((u for u in ("ns", "us", "ms", "s") if key.endswith("_" + u)), None)
        if unit is None and np.nanmedian(np.abs(numbers)) < 1e8:
            unit = "s"
            note = (f"{src}: the {key} column holds small numbers: read as seconds since the start, placed from "
                    f"{textio.SYNTHETIC_EPOCH:%Y-%m-%dT%H:%M:%SZ}")
        ns, ok = textio.epoch_to_ns(numbers, unit)
        drop(~ok, lambda i: f"bad time {str(s.iloc[i])[:30]!r}")
        return np.where(ok, ns, 0), note
    try:
        parsed = pd.to_datetime(s, errors="coerce", utc=False, format="mixed")
    except (ValueError, TypeError):  # offsets mixed with naive times: read everything as UTC
        parsed = pd.to_datetime(s, errors="coerce", utc=True, format="mixed")
    if isinstance(parsed.dtype, pd.DatetimeTZDtype):
        parsed = parsed.dt.tz_convert("UTC")
    else:
        parsed = parsed.dt.tz_localize(tz or "UTC", ambiguous="NaT", nonexistent="NaT").dt.tz_convert("UTC")
    bad = parsed.isna().to_numpy()
    drop(bad, lambda i: f"bad time {str(s.iloc[i])[:30]!r}")
    ns = pd.DatetimeIndex(parsed).as_unit("ns").asi8.copy()
    ns[bad] = 0
    return ns, note
