"""line_profiler listings (`kernprof -l -v`, `%lprun`, `LineProfiler.print_stats()`) read into the shares of a
profiled function's time its source lines take (a line scanner fed by profiler_table.ProfilerTables).

The format (line_profiler's show_func): `Timer unit: 1e-06 s`, `Total time: 5.39 s`, `File: ...`, `Function: f at
line 3`, then `Line #      Hits         Time  Per Hit   % Time  Line Contents`, a rule of `=`, and one row per source
line: number, hits, time (timer units), time per hit, % of the function's total, the source (a line never run has
its number and source only). A line's time includes what it calls and waits for, so a `for batch in loader` line
holds the wait for the next batch and a `loss.item()` line the wait for the device. The source is matched with
host_calls.py's vocabulary: iterating or `next()`-ing something named a loader (the loop's DataLoader), and the
Tensor calls that wait for the device.
"""

from __future__ import annotations

import re

from playbook.readers import host_calls

_TITLE = ("Line", "#", "Hits", "Time", "Per", "Hit", "%", "Time", "Line", "Contents")
_RULE = re.compile(r"^\s*={10,}\s*$")
_ROW = re.compile(r"^\s*(\d{1,9})\s+(\d{1,15})\s+(\d{1,15}(?:\.\d{1,9})?(?:e[-+]?\d{1,3})?)\s+"
                  r"(\d{1,15}(?:\.\d{1,9})?(?:e[-+]?\d{1,3})?)\s+(\d{1,3}(?:\.\d{1,9})?)\s(.{0,2000})$")
_BARE = re.compile(r"^\s*\d{1,9}(?:\s.{0,2000})?$")  # a line never run: its number and source
_META = re.compile(r"^\s*(?:Timer unit: |Total time: |File: |Function: \S)")
_TOTAL = re.compile(r"^\s*Total time: (\d{1,15}(?:\.\d{1,9})?(?:e[-+]?\d{1,3})?) s\s*$")
_LOADER_SRC = re.compile(r"^\s*(?:for\s[^#]{0,500}?\sin\s[^#]{0,500}?loader|[^#]{0,500}?\bnext\(\s*\w{0,100}"
                         r"(?:loader|_iter|iterator)\w{0,100}\s*\))", re.IGNORECASE)
_SYNC_SRC = re.compile(r"\.(?:" + "|".join(host_calls.SYNC_METHODS) + r")\(|\b(?:torch\.)?(?:cuda\.)?(?:"
                       + "|".join(host_calls.SYNC_BUILTINS) + r")\(")
MAX_FUNCTIONS = 1_000


class LineProfile:
    """Line scanner: feed(body) True when the line belongs to a line_profiler listing."""

    def __init__(self):
        self.functions: list[dict] = []  # {total_s, loader_pct, sync_pct, rows, shown_pct, loader_src, sync_src}
        self._in = False  # inside a listing's rows
        self._total: float | None = None  # the `Total time` stated above the next listing
        self._unit = False  # line_profiler's first line (`Timer unit: ...`) seen

    def feed(self, body: str) -> bool:
        if _META.match(body):  # the lines above a listing: only after its `Timer unit` (another log's
            self._unit = self._unit or body.lstrip().startswith("Timer unit: ")  # "Total time:" is not one)
            if self._unit and (m := _TOTAL.match(body)):
                self._total = float(m.group(1))
            return self._unit
        if tuple(body.split()) == _TITLE:
            if len(self.functions) < MAX_FUNCTIONS:
                self.functions.append({"total_s": self._total, "rows": 0, "shown_pct": 0.0, "loader_pct": 0.0,
                                       "sync_pct": 0.0, "loader_src": "", "sync_src": ""})
            self._total, self._in = None, True
            return True
        if not self._in:
            return False
        if _RULE.match(body):
            return True
        if m := _ROW.match(body):
            self._row(float(m.group(5)), m.group(6).strip())
            return True
        if _BARE.match(body):
            return True
        self._in = False
        return False

    def _row(self, pct: float, source: str) -> None:
        f = self.functions[-1]
        f["rows"] += 1
        f["shown_pct"] += pct
        for kind, pattern in (("loader", _LOADER_SRC), ("sync", _SYNC_SRC)):
            if pattern.search(source):
                f[f"{kind}_pct"] += pct
                if pct > 0 and not f[f"{kind}_src"]:
                    f[f"{kind}_src"] = source[:100]
                break

    def summary(self) -> list[dict] | None:
        """Per listing: total_s (None when not pasted), rows, shown_pct (the rows' % summed: 100 for a whole
        listing), loader_pct and sync_pct with a line of each; None without rows."""
        out = [f for f in self.functions if f["rows"]]
        return out or None
