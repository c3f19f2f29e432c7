"""Duration events of the Trace Event Format ("B" begin / "E" end) paired into complete rows.

Kineto writes only complete events ("X"); other writers (Horovod's timeline, many hand-rolled tracers) write a
"B" when a span opens and an "E" when it closes. The format's rule: on one thread (pid, tid) the spans nest, and an
"E" closes the most recent open "B" of that thread; the "E" may omit the name (Horovod's do). Events of a thread are
taken in timestamp order (ties in file order), so a writer that interleaves threads in its file is read right.

Only traces that hold "B"/"E" events pay for this (decode.Columns keeps them aside when a chunk's phase tally shows
any); Kineto's traces never do.
"""

from __future__ import annotations

from array import array

import numpy as np


class Spans:
    """"B"/"E" events kept aside while a trace is decoded, then paired (`pair`). Kept as columns (a flag, a float and
    three ints an event, ~25 bytes: a Horovod timeline holds millions), texts and threads interned."""

    def __init__(self) -> None:
        self.begin = bytearray()  # 1: "B", 0: "E"
        self.ts = array("d")  # µs
        self.thread = array("q")  # index into self.threads
        self.name = array("q")  # index into self.texts
        self.cat = array("q")
        self.threads: list[tuple] = []  # (pid, tid) as the thread's first event gave them
        self.texts: list = []  # name and cat values (text, number or None)
        self._thread_ids: dict[tuple, int] = {}
        self._text_ids: dict[tuple, int] = {}

    def add(self, ph, ts, pid, tid, name, cat) -> None:
        """Keep one "B" or "E" event (ts in µs; one without a numeric ts is dropped by the caller)."""
        key = (_thread_key(pid), _thread_key(tid))
        if (t := self._thread_ids.get(key)) is None:
            t = self._thread_ids[key] = len(self.threads)
            self.threads.append((pid, tid))
        self.begin.append(ph == "B")
        self.ts.append(ts)
        self.thread.append(t)
        self.name.append(self._text(name))
        self.cat.append(self._text(cat))

    def _text(self, v) -> int:
        key = (v.__class__, v)  # 1, 1.0, True and "1" kept apart
        if (i := self._text_ids.get(key)) is None:
            i = self._text_ids[key] = len(self.texts)
            self.texts.append(v)
        return i

    def pair(self, problems: list[str]) -> dict[str, list]:
        """Rows as column lists cat/name/ts/dur/pid/tid (dur in µs). Spans left open at the end of the file and "E"
        events that close nothing are counted into `problems`: an open span is not a row, its end is unknown (a
        file cut short while it ran)."""
        rows: dict[str, list] = {k: [] for k in ("cat", "name", "ts", "dur", "pid", "tid")}
        ts, thread = np.frombuffer(self.ts, np.float64), np.frombuffer(self.thread, np.int64)
        order = np.lexsort((np.arange(len(ts)), ts, thread))  # per thread, by time, ties in file order
        begin, texts = self.begin, self.texts
        left_open = orphans = 0
        stack: list[int] = []
        current = -1
        for i in order.tolist():
            if self.thread[i] != current:
                left_open += len(stack)
                stack, current = [], self.thread[i]
            if begin[i]:
                stack.append(i)
                continue
            if not stack:
                orphans += 1
                continue
            b = stack.pop()
            cat, name = texts[self.cat[b]], texts[self.name[b]]
            rows["cat"].append(cat if cat is not None else texts[self.cat[i]])
            rows["name"].append(name if name not in (None, "") else texts[self.name[i]])
            rows["ts"].append(self.ts[b])
            rows["dur"].append(self.ts[i] - self.ts[b])
            pid, tid = self.threads[current]
            rows["pid"].append(pid)
            rows["tid"].append(tid)
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
