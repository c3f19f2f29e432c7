"""A line that is nothing but a clock reading, as a shell loop prints one before each snapshot it pastes
(`while true; do date -u; curl -s localhost:9400/metrics; sleep 5; done`): the time of the lines that follow it.

Read: `date`'s C-locale form `Sat May 23 14:02:11 UTC 2026` (the zone word optional, an AM/PM after the seconds as
en_US prints it), `date -R` (`Sat, 23 May 2026 14:02:11 +0000`) and ISO 8601 (`date -Iseconds`,
`2026-05-23T14:02:11+00:00`, a space for the T, fractions). UTC / GMT / Z and numeric offsets are honoured; any
other zone word (CEST, PST: ambiguous abbreviations) and no zone read as local time in the reader's `tz`. A line
holding anything else, or a bare number, is not a clock line. Anchored patterns without nested repeats (linear).
"""

from __future__ import annotations

import re

from playbook.readers.line_prefix import MON, MONTHS, NAT, to_ns

_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_TIME = r"(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
_ZONE = r"(?:\s(UTC|GMT|Z|[A-Z]{2,5}|[+-]\d{2}:?\d{2}))?"
_C_DATE = re.compile(r"^" + _DAY + r"\s" + MON + r"\s{1,2}(\d{1,2})\s" + _TIME + r"(?:\s([AP]M))?" + _ZONE
                     + r"\s(\d{4})$")
_RFC = re.compile(r"^" + _DAY + r",\s(\d{1,2})\s" + MON + r"\s(\d{4})\s" + _TIME + _ZONE + r"$")
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[T ]" + _TIME + r"\s?(Z|[+-]\d{2}:?\d{2})?$")


def _zone(word: str | None) -> str | None:
    """A zone `to_ns` honours: Z for UTC / GMT, a numeric offset as it is; None (local time in `tz`) otherwise."""
    if word in ("UTC", "GMT", "Z"):
        return "Z"
    return word if word and word[0] in "+-" else None


def _hour(h: str, ampm: str | None) -> int:
    """A 12-hour clock's hour on a 24-hour one (12 AM is 0, 12 PM is 12)."""
    hour = int(h)
    if ampm:
        hour = hour % 12 + (12 if ampm == "PM" else 0)
    return hour


def clock_ns(line: str, tz: str = "UTC") -> int | None:
    """ns UTC of a line that is only a date and time (see the module docstring), None for any other line."""
    text = line.strip()
    if not 15 <= len(text) <= 48 or not text[:1].isalnum():
        return None
    if m := _C_DATE.match(text):
        mon, day, h, mi, s, frac, ampm, zone, year = m.groups()
        ns = to_ns(int(year), MONTHS.index(mon.lower()) + 1, int(day), _hour(h, ampm), int(mi), int(s), frac, tz,
                   _zone(zone))
    elif m := _RFC.match(text):
        day, mon, year, h, mi, s, frac, zone = m.groups()
        ns = to_ns(int(year), MONTHS.index(mon.lower()) + 1, int(day), int(h), int(mi), int(s), frac, tz, _zone(zone))
    elif m := _ISO.match(text):
        year, mo, day, h, mi, s, frac, zone = m.groups()
        ns = to_ns(int(year), int(mo), int(day), int(h), int(mi), int(s), frac, tz, _zone(zone))
    else:
        return None
    return None if ns == NAT else ns
