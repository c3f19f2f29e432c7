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
# no wait: a copy asked not to block, or `.to()` of a dtype alone (a cast on the device)
_ASYNC_SRC = re.compile(r"non_blocking\s{0,5}=\s{0,5}True|\.to\(\s{0,5}(?:dtype\s{0,5}=|torch\.(?:u?int\d{1,2}|float\d{1,2}|"
                        r"bfloat16|half|float|double|long|int|bool|complex\d{2,3})\s{0,5}\))")
MAX_FUNCTIONS = 1_000


class LineProfile:
    """Line scanner: feed(body) True when the line belongs to a line_profiler listing."""

    def __init__(self):
        self.functions: list[dict] = []  # {total_s, loader_pct, sync_pct, rows, shown_pct, loader_src, sync_src}
        self._in = False  # inside a listing's rows
        self._total: float | None = None  # the `Total time` stated above the next listing
        self._unit = False  # line_profiler's first line (`Timer unit: ...`) seen, and only its heading lines since
        self._line = 0  # the source line number of the listing's last row: rows are every line, in order

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
            self._total, self._in, self._line = None, True, 0
            return True
        if not self._in:
            self._unit = False  # another text between listings: a later `File:` or `Total time:` is its own
            return False
        if _RULE.match(body):
            return True
        m, bare = _ROW.match(body), _BARE.match(body)
        number = int(body.split()[0]) if (m or bare) else -1
        if number > 0 and (self._line == 0 or number == self._line + 1):  # the function's next source line
            self._line = number
            if m:
                self._row(float(m.group(5)), m.group(6).strip())
            return True
        self._in = False  # `100 steps done`: not the next source line, the listing has ended
        return False

    def _row(self, pct: float, source: str) -> None:
        f = self.functions[-1]
        f["rows"] += 1
        f["shown_pct"] += pct
        for kind, pattern in (("loader", _LOADER_SRC), ("sync", _SYNC_SRC)):
            if pattern.search(source) and not (kind == "sync" and _ASYNC_SRC.search(source)):
                f[f"{kind}_pct"] += pct
                if pct > 0 and not f[f"{kind}_src"]:
                    f[f"{kind}_src"] = source[:100]
                break

    def summary(self) -> list[dict] | None:
        """Per listing: total_s (None when not pasted), rows, shown_pct (the rows' % summed: 100 for a whole
        listing), loader_pct and sync_pct with a line of each; None without rows."""
        out = [f for f in self.functions if f["rows"]]
        return out or None
