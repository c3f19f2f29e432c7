"""nvidia-smi `--query-gpu` field names: what each one means for the schema, the header and value patterns, and
the guess of a headerless log's fields from the units in its values."""

from __future__ import annotations

import re

from playbook.core.errors import InputError
from playbook.readers import headers

# nvidia-smi field -> (schema column, priority: lower wins when several fields feed one column)
METRIC_FIELDS: dict[str, tuple[str, int]] = {
    "utilization.gpu": ("util_pct", 0),
    "utilization.memory": ("mem_util_pct", 0),
    "memory.used": ("mem_used_mib", 0),
    "memory.total": ("mem_total_mib", 0),
    "power.draw": ("power_w", 0),
    # power.draw is the 1 s average on Ampere and newer (nvidia-smi --help-query-gpu): the average comes next
    "power.draw.average": ("power_w", 1),
    "power.draw.instant": ("power_w", 2),
    "enforced.power.limit": ("power_limit_w", 0),
    "power.limit": ("power_limit_w", 1),
    "power.default_limit": ("power_default_limit_w", 0),
    "clocks.sm": ("sm_clock_mhz", 0),
    "clocks.current.sm": ("sm_clock_mhz", 0),
    "clocks.gr": ("sm_clock_mhz", 1),
    "clocks.current.graphics": ("sm_clock_mhz", 1),
    "clocks.mem": ("mem_clock_mhz", 0),
    "clocks.current.memory": ("mem_clock_mhz", 0),
    "temperature.gpu": ("temp_c", 0),
    "clocks_event_reasons.active": ("throttle_reasons", 0),
    "clocks_throttle_reasons.active": ("throttle_reasons", 0),
    "clock_throttle_reasons.active": ("throttle_reasons", 0),
    "pcie.link.gen.current": ("pcie_link_gen", 0),
    "pcie.link.gen.gpucurrent": ("pcie_link_gen", 1),
    "pcie.link.width.current": ("pcie_link_width", 0),
    # Intel Gaudi's hl-smi -Q / --query-aip speaks the same CSV with its own names (docs.habana.ai, hl-smi options)
    "utilization.aip": ("util_pct", 0),
    "temperature.aip": ("temp_c", 0),
}
HEX_FIELDS = {"clocks_event_reasons.active", "clocks_throttle_reasons.active", "clock_throttle_reasons.active"}
# Individual clock-event reasons ("Active" / "Not Active"), combined into the bitmask when `.active` is absent.
REASON_BITS: dict[str, int] = {
    "gpu_idle": 0x1, "applications_clocks_setting": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
    "sync_boost": 0x10, "sw_thermal_slowdown": 0x20, "hw_thermal_slowdown": 0x40, "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}
TIME_FIELDS = {"timestamp"}
INDEX_FIELDS = {"index", "minor_number"}
IDENT_FIELDS = {"pci.bus_id", "gpu_bus_id", "uuid", "gpu_uuid", "serial", "gpu_serial", "bus_id"}
NAME_FIELDS = {"name", "gpu_name"}  # the product name: which part each GPU is (a box may mix models)
OTHER_FIELDS = {
    "driver_version", "count", "pstate", "fan.speed", "memory.free", "memory.reserved",
    "temperature.memory", "power.min_limit", "power.max_limit", "power.management",
    "clocks.video", "clocks.max.sm", "clocks.max.gr", "clocks.max.graphics", "clocks.max.memory",
    "clocks.max.mem", "clocks.applications.graphics", "clocks.applications.memory", "compute_mode",
    "persistence_mode", "display_mode", "display_active", "pcie.link.gen.max", "pcie.link.width.max",
    "pcie.link.gen.hostmax", "vbios_version", "inforom.img", "mig.mode.current", "ecc.mode.current",
    "encoder.stats.sessioncount", "accounting.mode", "gom.current", "clocks_event_reasons.supported",
    "clocks_throttle_reasons.supported", "retired_pages.pending", "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total", "pci.domain", "pci.bus", "pci.device", "pci.device_id",
    "pci.sub_device_id", "protected_memory.used",
    "module_id", "stats.violation.power", "stats.violation.thermal",  # hl-smi's
}


def reason_field(name: str) -> str | None:
    for prefix in ("clocks_event_reasons.", "clocks_throttle_reasons.", "clock_throttle_reasons."):
        if name.startswith(prefix) and name[len(prefix):] in REASON_BITS:
            return name[len(prefix):]
    return None


def is_known_field(name: str) -> bool:
    """True for a --query-gpu field name this module knows (read or deliberately ignored)."""
    return (name in METRIC_FIELDS or name in TIME_FIELDS or name in INDEX_FIELDS or name in IDENT_FIELDS
            or name in NAME_FIELDS or name in OTHER_FIELDS or reason_field(name) is not None)


FIELD_TOKEN = re.compile(r"^([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)\s*(?:\[([^\]]*)\])?$")
ERROR_LINE = re.compile(
    r"^(Unable to |Failed to |NVIDIA-SMI has failed|No devices were found|Unknown Error|GPU is lost|"
    r"Error|ERROR|Insufficient Permissions|.*\bis lost\b|.*Unknown Error\s*$)")
SEPARATOR = re.compile(r"^\s*(-{2,}|={2,})\s*$")
TIMESTAMP = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?$")
BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
UUID = re.compile(r"^(GPU|MIG)-[0-9A-Fa-f-]{8,}$")
UNITS_IN_VALUES = re.compile(r"^\s*[-+]?\d+(\.\d+)?\s(%|MiB|W|MHz|KiB|GiB|C)\s*$")
NUMERIC = re.compile(r"^\s*[-+]?(\d+(?:\.\d*)?|\.\d+)\s*$")
NA = re.compile(r"^\s*(\[[^\]]*\]|N/A)\s*$")


MAX_FIELDS = 1024  # `nvidia-smi --help-query-gpu` lists ~250 fields; a wider line is not its header


def parse_header(line: str) -> tuple[list[str], list[str | None]] | None:
    """'timestamp, utilization.gpu [%]' -> (['timestamp', 'utilization.gpu'], [None, '%']); None if not a header
    (nor one wider than MAX_FIELDS: --query-gpu knows a few hundred fields)."""
    if line.count(",") >= MAX_FIELDS:
        return None
    tokens = [t.strip() for t in line.split(",")]
    names: list[str] = []
    units: list[str | None] = []
    for tok in tokens:
        m = FIELD_TOKEN.match(tok)
        if not m:
            return None
        names.append(m.group(1))
        units.append(m.group(2))
    if not names:
        return None
    if any(not is_known_field(n) and headers.meaning(n).role in ("time", "host", "gpu") for n in names):
        return None  # a home-made table naming its own time / host / GPU columns: the header-meaning reader's
    known = sum(is_known_field(n) for n in names)
    if known == 0 or (known * 2 < len(names) and not any("." in n and is_known_field(n) for n in names)):
        return None
    return names, units


def parse_fields(fields: str | list[str] | tuple[str, ...] | None) -> list[str] | None:
    """The user's --fields (a comma list or a sequence) as clean field names; None stays None."""
    if fields is None:
        return None
    items = fields.split(",") if isinstance(fields, str) else list(fields)
    names = [str(f).strip().lower() for f in items if str(f).strip()]
    out = []
    for n in names:
        m = FIELD_TOKEN.match(n)
        if not m:
            raise InputError(f"--fields: {n!r} is not an nvidia-smi field name (e.g. index,utilization.gpu)")
        out.append(m.group(1))
    return out or None


def looks_like_value(cell: str) -> bool:
    c = cell.strip()
    return bool(UNITS_IN_VALUES.match(c) or NUMERIC.match(c) or NA.match(c) or TIMESTAMP.match(c)
                or BUS_ID.match(c) or UUID.match(c) or c.lower().startswith("0x") or re.match(r"^P\d{1,2}$", c)
                or c in ("Active", "Not Active", "Enabled", "Disabled", "Default"))



# --------------------------------------------------------------------------------------------------------------
# Guessing the fields of headerless input from its units.

def guess_fields(rows: list[list[str]]) -> tuple[list[str], str] | None:
    """Field names for headerless rows, from the units in their values; (fields, note) or None when unsure."""
    if not rows:
        return None
    width = max(len(r) for r in rows)
    if width > MAX_FIELDS:  # no nvidia-smi query is this wide: not its rows
        return None
    rows = [r for r in rows if len(r) == width][:200]
    kinds = [_column_kind([r[col].strip() for r in rows if not NA.match(r[col])]) for col in range(width)]
    out = _name_columns(kinds, rows)
    if out is None or any(o is None for o in out):
        return None
    if not any(o in METRIC_FIELDS for o in out):
        return None
    fields = [o if o != "na" else "unknown" for o in out]
    return fields, ",".join(fields)


def _column_kind(cells: list[str]) -> str:
    """What one column's non-N/A cells hold: their common unit (`%`, `MiB`, `W`...), "timestamp", "hex", "bus",
    "uuid", "pstate", "int", "float", "text", or "na" when every cell is N/A."""
    if not cells:
        return "na"

    def all_match(rx: re.Pattern) -> bool:
        return all(rx.match(c) for c in cells)

    units = {c.rsplit(" ", 1)[-1] for c in cells if UNITS_IN_VALUES.match(c)}
    if len(units) == 1 and all(UNITS_IN_VALUES.match(c) for c in cells):
        return units.pop()
    if all_match(TIMESTAMP):
        return "timestamp"
    if all(c.lower().startswith("0x") for c in cells):
        return "hex"
    if all_match(BUS_ID):
        return "bus"
    if all_match(UUID):
        return "uuid"
    if all(re.match(r"^P\d{1,2}$", c) for c in cells):
        return "pstate"
    if all(re.match(r"^\d+$", c) for c in cells):
        return "int"
    if all_match(NUMERIC):
        return "float"
    return "text"


def _name_columns(kinds: list[str], rows: list[list[str]]) -> list[str | None] | None:
    """A field name per column from the column kinds (None where none fits); None when the kinds are ambiguous
    (more columns of a unit than nvidia-smi has fields in it)."""
    def constant(col: int) -> bool:
        vals = {r[col].strip() for r in rows}
        return len(vals) == 1 and len(rows) > 1

    out: list[str | None] = [None] * len(kinds)
    simple = {"timestamp": "timestamp", "hex": "clocks_event_reasons.active", "bus": "pci.bus_id", "uuid": "uuid",
              "pstate": "pstate", "text": "name", "na": "na"}
    for col, kind in enumerate(kinds):
        if kind in simple:
            out[col] = simple[kind]
    by_unit: dict[str, list[int]] = {}
    for col, kind in enumerate(kinds):
        by_unit.setdefault(kind, []).append(col)
    pct = by_unit.get("%", [])
    if len(pct) > 2:
        return None
    for col, name in zip(pct, ("utilization.gpu", "utilization.memory")[: len(pct)], strict=True):
        out[col] = name
    for unit, (single, (big, small)) in {"MiB": ("memory.used", ("memory.total", "memory.used")),
                                         "W": ("power.draw", ("power.limit", "power.draw"))}.items():
        cols = by_unit.get(unit, [])
        if len(cols) == 1:
            out[cols[0]] = single
        elif len(cols) == 2:
            const = [c for c in cols if constant(c)]
            if len(const) != 1:
                return None
            out[const[0]] = big
            out[next(c for c in cols if c != const[0])] = small
        elif len(cols) > 2:
            return None
    temps = by_unit.get("C", [])
    if len(temps) > 1:
        return None
    for col in temps:
        out[col] = "temperature.gpu"
    mhz = by_unit.get("MHz", [])
    if len(mhz) > 2:
        return None
    for col, name in zip(mhz, ("clocks.sm", "clocks.mem")[: len(mhz)], strict=True):
        out[col] = name
    ints = by_unit.get("int", [])
    # An index: the first bare-integer column, when it counts 0, 1, 2... within blocks.
    if ints and (ints[0] == 0 or (ints[0] == 1 and kinds[0] == "timestamp")):
        col = ints[0]
        values = [int(v) for v in (r[col].strip() for r in rows)
                  if v.isdecimal() and len(v) < 19]  # isdigit() takes '²'; int() does not
        if values and min(values) == 0 and max(values) < 1024:
            out[col] = "index"
    return out
