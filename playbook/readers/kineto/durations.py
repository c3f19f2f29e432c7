"""Duration events of the Trace Event Format ("B" begin / "E" end) paired into complete rows.

Kineto writes only complete events ("X"); other writers (Horovod's timeline, many hand-rolled tracers) write a
"B" when a span opens and an "E" when it closes. The format's rule: on one thread (pid, tid) the spans nest, and an
"E" closes the most recent open "B" of that thread; the "E" may omit the name (Horovod's do). Events of a thread are
taken in timestamp order (ties in file order), so a writer that interleaves threads in its file is read right.

Only traces that hold "B"/"E" events pay for this (decode.Columns keeps them aside when a chunk's phase tally shows
any); Kineto's traces never do.
"""

from __future__ import annotations

from collections import defaultdict


class Spans:
    """"B"/"E" events kept aside while a trace is decoded, then paired (`pair`)."""

    def __init__(self) -> None:
        self.events: list[tuple] = []  # (ph, ts, pid, tid, name, cat, file order)

    def add(self, ph, ts, pid, tid, name, cat) -> None:
        """Keep one "B" or "E" event (ts in µs; one without a numeric ts is dropped by the caller)."""
        self.events.append((ph, ts, pid, tid, name, cat, len(self.events)))

    def pair(self, problems: list[str]) -> dict[str, list]:
        """Rows as column lists cat/name/ts/dur/pid/tid (dur in µs). Spans left open at the end of the file and "E"
        events that close nothing are counted into `problems`: an open span is not a row, its end is unknown (a
        file cut short while it ran)."""
        threads: dict[tuple, list] = defaultdict(list)
        for ev in self.events:
            threads[(_thread_key(ev[2]), _thread_key(ev[3]))].append(ev)
        rows: dict[str, list] = {k: [] for k in ("cat", "name", "ts", "dur", "pid", "tid")}
        left_open = orphans = 0
        for evs in threads.values():
            evs.sort(key=lambda ev: (ev[1], ev[6]))
            stack: list[tuple] = []
            for ev in evs:
                if ev[0] == "B":
                    stack.append(ev)
                    continue
                if not stack:
                    orphans += 1
                    continue
                begin = stack.pop()
                rows["cat"].append(begin[5] if begin[5] is not None else ev[5])
                rows["name"].append(begin[4] if begin[4] not in (None, "") else ev[4])
                rows["ts"].append(begin[1])
                rows["dur"].append(ev[1] - begin[1])
                rows["pid"].append(begin[2])
                rows["tid"].append(begin[3])
            left_open += len(stack)
        if left_open:
            problems.append(f"{left_open} begin (B) events never ended (no row: their end is unknown)")
        if orphans:
            problems.append(f"{orphans} end (E) events close no begin event (dropped)")
        return rows


def _thread_key(v) -> str:
    """A pid or tid as the text that keys its thread, whatever JSON gave (a number, a text, a list: no traceback; 1 and
    "1" one thread, as both decoding paths read them)."""
    return str(v) if v is None or isinstance(v, (int, str)) else repr(v)
