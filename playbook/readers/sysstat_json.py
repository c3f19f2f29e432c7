"""sysstat's JSON (`mpstat -o JSON`, `iostat -o JSON`, `sadf -j`) → host rows for readers/host_tools.py.

`{"sysstat": {"hosts": [{"nodename", "date", "statistics": [...]}]}}`; each statistics entry is one sample:
`avg-cpu` (iostat: idle, iowait), `cpu-load` (per CPU, `all` the whole host), `disk` (per device: `rkB/s` /
`wkB/s` from iostat, `rkB` / `wkB` per second from sadf), `filesystem` (cifsiostat: a CIFS mount's `rB/s` / `rkB/s`
..., reads the disks do not see, counted as the host's), `network.net-dev` (per interface: `rxkB` / `txkB` per
second; a name with a leading space is an `iostat -g` group's total, left out). A document whose sections hold
none of these (tapestat's `tape`, pidstat's `task-cpu-load`) is an error naming the sections. Its `timestamp` is a time of day on
the host's `date` (mpstat, iostat -t), an object {date, time, tz} (sadf -j), or absent (iostat without -t: samples
`interval_s` apart on the synthetic clock).
"""

from __future__ import annotations

import math
import re

import pandas as pd

from playbook.core.errors import InputError
from playbook.readers import textio
from playbook.readers.host_columns import add_value, column_meaning, parse_date, utc_ns

Record = tuple[int | None, str, str, str, dict[str, float]]  # (ns UTC or None, host, kind, entity, quantities)
_OPEN = re.compile(r'^\s*\{\s*"sysstat"\s*:')

_ENTITY_KEYS = (("cpu-load", "cpu", ("cpu",)), ("disk", "disk", ("disk_device", "disk-device")),
                ("filesystem", "disk", ("fs_name",)))
_SHARES = {"idle": "idle", "iowait": "iowait"}
_SADF_RATE = re.compile(r"^(?:r|w|rx|tx)(?:kB|MB)$")  # sadf -j's per-second rates lack the "/s"


def looks_like(head: str) -> bool:
    """sysstat's JSON document: it opens with the `sysstat` key."""
    return _OPEN.match(head) is not None


def records(src: str, text: str, host: str, tz: str) -> tuple[list[Record], list[str]]:
    """The document's rows (kinds as host_tools.Samples takes them: host, cpu, disk, net) and the reasons for the
    parts that were skipped."""
    try:
        doc = textio.json_loads(text)
    except ValueError as exc:
        raise InputError(f"{src}: not valid sysstat JSON ({textio.json_error(exc)})") from None
    hosts = doc.get("sysstat", {}).get("hosts") if isinstance(doc, dict) and isinstance(doc.get("sysstat"), dict) \
        else None
    if not isinstance(hosts, list):
        raise InputError(f"{src}: sysstat JSON without a hosts list")
    out: list[Record] = []
    skipped: list[str] = []
    sections: set[str] = set()
    for h in hosts:
        if not isinstance(h, dict) or not isinstance(h.get("statistics"), list):
            skipped.append("a host without statistics")
            continue
        name = str(h.get("nodename") or host)
        day = parse_date(str(h.get("date") or h.get("file-date") or ""))
        for n, stat in enumerate(h["statistics"]):
            if isinstance(stat, dict):
                out += _sample(name, _time(stat.get("timestamp"), day, tz), stat)
                sections |= {str(k) for k in stat if k != "timestamp"}
            else:
                skipped.append(f"statistics entry {n} is not an object")
    if not any(values for *_, values in out) and sections:
        held = ", ".join(f"'{k}'" for k in sorted(sections)[:6]) + (", ..." if len(sections) > 6 else "")
        raise InputError(f"{src}: sysstat JSON whose statistics hold {held}: none of the host metrics read here "
                         "(mpstat / iostat / cifsiostat -o JSON, sadf -j: avg-cpu, cpu-load, disk, filesystem, "
                         "network, swap-pages)")
    return out, skipped


def _time(stamp, day: pd.Timestamp | None, tz: str) -> int | None:
    """ns UTC of a statistics entry's timestamp; None without one (the sample number places it)."""
    if isinstance(stamp, dict):
        utc = str(stamp.get("tz", "")).upper() in ("UTC", "GMT")
        text = f"{stamp.get('date', '')} {stamp.get('time', '')}".strip()
    elif isinstance(stamp, str) and day is not None:
        utc, text = False, f"{day:%Y-%m-%d} {stamp}"
    else:
        return None
    if not text[:1].isdigit():  # pandas would read words ("now", "today") as a time
        return None
    try:
        t = pd.Timestamp(text)
    except (ValueError, OverflowError):
        return None
    return utc_ns(t, "UTC" if utc else tz)


def _sample(host: str, t_ns: int | None, stat: dict) -> list[Record]:
    """One statistics entry's rows: the host's CPU shares, per CPU, per disk and per interface."""
    out: list[Record] = []
    for key in ("avg-cpu", "swap-pages"):  # iostat's CPU shares; sar -W's pages swapped in / out per second
        if isinstance(stat.get(key), dict):
            out.append((t_ns, host, "host", "", _values(stat[key])))
    for key, kind, names in _ENTITY_KEYS:
        for row in _list(stat.get(key)):
            if isinstance(row, dict):
                entity = next((str(row[k]) for k in names if k in row), "")
                if not entity.startswith(" "):  # " disks": an iostat -g group's total, not one more device
                    out.append((t_ns, host, kind, entity, _values(row)))
    network = stat.get("network")
    for row in _list(network.get("net-dev")) if isinstance(network, dict) else []:
        if isinstance(row, dict):
            out.append((t_ns, host, "net", str(row.get("iface", "")), _values(row)))
    return out


def _list(value) -> list:
    """A JSON array as a list; anything else (a damaged document's number or string) as no rows."""
    return value if isinstance(value, list) else []


def _values(row: dict) -> dict[str, float]:
    """{quantity: value in schema units} of one JSON row: idle / iowait shares, kB / MB rates (`rkB/s`, and sadf's
    `rkB` / `rxkB`, which are per second too); a number past a float's range is no value."""
    out: dict[str, float] = {}
    for key, value in row.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        try:
            number = float(value)
        except OverflowError:  # an integer too large for a float
            continue
        if not math.isfinite(number):
            continue
        if key in _SHARES:
            out[_SHARES[key]] = number
        elif meaning := column_meaning(f"{key}/s" if _SADF_RATE.match(key) else key):
            add_value(out, meaning[0], number * meaning[1])
    return out
