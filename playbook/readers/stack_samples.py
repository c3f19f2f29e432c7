"""Stack samples pasted as text: folded (collapsed) stacks and py-spy dumps, read into what the host was doing
(line scanners fed by profiler_table.ProfilerTables; the call vocabulary is host_calls.py's).

Folded stacks (Brendan Gregg's stackcollapse format, written by `py-spy record --format raw`, perf through
stackcollapse-perf.pl, austin, and torch.profiler's `export_stacks`): one line per distinct stack, its frames root
first joined by `;`, a space, then a count (samples; for export_stacks the metric's microseconds). Frames are
`function (file:line)` (py-spy), `file(line):_function` (export_stacks, spaces written `_`) or a bare symbol (perf,
native, torch ops). Each stack's count goes to the kind of its innermost frame that has one (host_calls.innermost):
the loader's and the syncs' shares of all the samples. A sampler records the host only (py-spy without --idle even
drops the threads that wait), so the shares are of the host's samples, never of the device's time.

py-spy dump (src/dump.rs print_traces): `Process {pid}: {cmdline}`, `Python v{version} ({exe})`, then per thread
`Thread {tid} ({idle|active|active+gil|gil}): "{name}"` and its frames innermost first, indented, `function
(file:line)`. One instant per thread: where each thread is, not for how long. Thread headers pasted back to back
share the stack that follows them (how people group the identical stacks of many ranks by hand; py-spy prints every
thread's own frames).
"""

from __future__ import annotations

import re

from playbook.readers import host_calls

# `function (file:line)` / `function (library.so)` (py-spy); bounded, no nested quantifiers: linear on any line
_PYSPY_FRAME = re.compile(r"^(\S[^()]{0,500}?) \(([^()]{1,1000}?)(?::(\d{1,9}))?\)$")
_TORCH_FRAME = re.compile(r"^([^();]{1,1000})\((\d{1,9})\):_?(.{1,500})$")  # export_stacks: file(line):_function
_THREAD = re.compile(r'^\s*Thread (0x[0-9A-Fa-f]{1,16}|\d{1,12}) \((idle|active|active\+gil|gil)\): "(.{0,200})"\s*$')
_HEADER = re.compile(r"^\s*(?:Process \d{1,12}: |Python v\d{1,3}\.\d{1,3})")
MAX_STACKS = 50_000  # folded lines kept per file
MAX_THREADS = 10_000  # dump threads kept per file


def split_frame(frame: str) -> tuple[str, str]:
    """(function, file) of one frame in any of the forms above; ("symbol", "") for a native or op frame."""
    frame = frame.strip()
    if m := _PYSPY_FRAME.match(frame):
        where = m.group(2)
        return m.group(1), "" if where == "?" or where.endswith((".so", ".dll", ".dylib")) or ".so." in where \
            else where
    if m := _TORCH_FRAME.match(frame):
        return m.group(3), m.group(1)
    return frame, ""


class FoldedStacks:
    """Line scanner: feed(body) True when the line is a folded stack (`a;b;c 12`)."""

    def __init__(self):
        self.counts: dict[str, float] = {"total": 0.0}
        self.stacks = 0
        self.examples: dict[str, str] = {}  # kind -> the innermost frame of its largest stack

    def feed(self, body: str) -> bool:
        stack, _, count = body.strip().rpartition(" ")
        if ";" not in stack or not count.isdigit() or len(count) > 18 or stack.startswith((";", "|")):
            return False
        parts = stack.split(";")
        if not all(p and (not any(c.isspace() for c in p) or "::" in p or _PYSPY_FRAME.match(p)) for p in parts):
            return False  # a frame is one symbol, `function (file:line)` or a C++ name: not words of a sentence
        frames = [split_frame(f) for f in reversed(parts)]
        if self.stacks < MAX_STACKS:
            n = float(count)
            kind = host_calls.innermost(frames) or "other"
            self.counts[kind] = self.counts.get(kind, 0.0) + n
            self.counts["total"] += n
            self.examples.setdefault(kind, frames[0][0][:120])
        self.stacks += 1
        return True

    def summary(self) -> dict | None:
        """{stacks, samples, loader, sync, collective (counts of samples), examples}; None without stacks."""
        if not self.stacks:
            return None
        c = self.counts
        return {"stacks": self.stacks, "samples": c["total"], **{k: c.get(k, 0.0) for k in (
            host_calls.LOADER, host_calls.SYNC, host_calls.COLLECTIVE)}, "examples": dict(self.examples)}


class PySpyDump:
    """Line scanner: feed(body) True when the line belongs to a py-spy dump."""

    def __init__(self):
        self.threads: list[dict] = []  # {name, state, frames: [(function, file)] innermost first}
        self._waiting: list[dict] = []  # thread headers still without frames (grouped by hand)
        self._process = False  # a `Process N: ...` line seen: its `Python v...` line belongs to it

    def feed(self, body: str) -> bool:
        if _HEADER.match(body):
            self._process = self._process or body.lstrip().startswith("Process ")
            return self._process
        if m := _THREAD.match(body):
            if len(self.threads) < MAX_THREADS:
                thread = {"name": m.group(3), "state": m.group(2), "frames": []}
                if self._waiting and self._waiting[-1]["frames"]:
                    self._waiting = []
                self._waiting.append(thread)
                self.threads.append(thread)
            return True
        if not self._waiting or not body.startswith((" ", "\t")) or not _PYSPY_FRAME.match(body.strip()):
            self._waiting = [] if body.strip() and not body.startswith((" ", "\t")) else self._waiting
            return False
        frame = split_frame(body)
        for thread in self._waiting:
            thread["frames"].append(frame)
        return True

    def summary(self) -> dict | None:
        """{threads, main: [{state, kind, top}] for the threads named MainThread (one per process)}; None without
        threads."""
        if not self.threads:
            return None
        main = [{"state": t["state"], "kind": host_calls.innermost(t["frames"]),
                 "top": t["frames"][0][0] if t["frames"] else ""}
                for t in self.threads if t["name"] == "MainThread"]
        return {"threads": len(self.threads), "main": main}
