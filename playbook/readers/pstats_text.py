"""cProfile / pstats text read into function rows wherever it appears in a text log: `pstats.Stats(...).print_stats()`,
`python -m cProfile -s cumulative train.py`, the `cProfile output` section of `python -m torch.utils.bottleneck`, and
each action of Lightning's AdvancedProfiler (a line scanner fed by profiler_table.ProfilerTables).

The format (CPython Lib/pstats.py): `print_stats` prints `{N} function calls [({M} primitive calls)] in {T:.3f}
seconds`, `Ordered by: ...`, `List reduced from ...`, then `print_title` (`   ncalls  tottime  percall  cumtime  percall
filename:lineno(function)`) and one `print_line` per function: ncalls (`N`, or `N/M` under recursion), four `%8.3f`
figures (a percall left blank when its count is 0), then `file:line(function)`, `{built-in method name}` or `{method
'name' of 'type' objects}`. The figures are read by the title's column names; a row pasted without its title (cut
above it) is read when it has print_line's exact shape (three decimals each). Lightning's AdvancedProfiler prints
`Profile stats for: {action}` above each action's stats.

Sections: one per `function calls ... in T seconds` line (the profile's stated total, seconds of host time), rows
before any such line in a section without a total. What a section's time is (Python-level names; the findings and
their thresholds are analysis/profiler_ops.py's, as for torch.profiler tables):
  loader_s        the DataLoader's `__next__` (torch/utils/data dataloader.py / fetch.py): the largest cumtime of its
                  rows, which nest (the outermost holds the rest)
  sync_s          own time of calls that return only once the device has answered or a transfer is done: `.item()`,
                  `.cpu()`, `.tolist()`, `.cuda()`, `.to()`, `torch.as_tensor`, the synchronize calls
  blocked_s       own time of torch's own calls held >= BLOCKED_CALL_S per call: a launch takes microseconds, so a
                  call that long waits for room in the device's launch queue (the device is busy) or computes on the
                  host
  device_rows     rows that name CUDA (`.cuda()`, torch/cuda/...): the profile comes from a GPU run
"""

from __future__ import annotations

import math
import re

from playbook.readers import host_calls

_TOTAL = re.compile(r"^\s*(\d{1,18}) function calls(?: \(\d{1,18} primitive calls\))? in (\d{1,15}(?:\.\d{1,9})?) "
                    r"seconds\s*$")
_TITLE_WORDS = ("ncalls", "tottime", "percall", "cumtime", "percall", "filename:lineno(function)")
_ACTION = re.compile(r"^\s*Profile stats for: (\S.*)$")
_ORDER = re.compile(r"^\s*(?:Ordered by: \w|List reduced from \d+ to \d+ due to restriction)")
# print_line: ncalls, then two to four figures, then the function (a figure is blank where its count is 0); digits
# bounded so that int() and float() of a damaged line cannot fail or overflow
_ROW = re.compile(r"^\s*(\d{1,18}(?:/\d{1,18})?)((?:\s+\d{1,15}\.\d{1,9}){2,4})\s+(\S.*)$")
_EXACT = re.compile(r"^(?:\s+\d+\.\d{3}){4}$")  # a row without its title: print_line's own %8.3f figures, all four
_FUNC = re.compile(r"^(?:\{[^{}]*\}|\S[^{}]*:\d+\([^()]*\))$")  # func_std_string: {built-in ...} or file:line(name)
_LOADER_FN = re.compile(r"(?:^|[/\\])(?:" + "|".join(map(re.escape, host_calls.LOADER_FILES)) + r"):\d+\(")
_SYNC_FN = re.compile(r"^\{(?:method '(?:" + "|".join(host_calls.SYNC_METHODS) + r")' of 'torch\.[\w.]+' objects|"
                      r"built-in method (?:torch\.(?:_C\.)?)?(?:" + "|".join(host_calls.SYNC_BUILTINS) + r"))\}$")
_TORCH_CALL = re.compile(r"^\{(?:built-in method (?:torch\.[\w.]+|\w+)|method '\w+' of 'torch\.[\w.]+' objects)\}$")
_DEVICE_FN = re.compile(r"cuda", re.IGNORECASE)
BLOCKED_CALL_S = 1e-3  # 1 ms: ~100x a kernel launch's host cost (5-20 us), so a call held that long waits or computes
MAX_ROWS = 20_000  # rows kept per file: a log of endless profiles cannot grow memory
MAX_SECTIONS = 1_000  # sections kept per file; later total lines add to the last one


class PstatsText:
    """Line scanner: feed(body) True when the line belongs to a cProfile / pstats listing."""

    def __init__(self):
        self.sections: list[dict] = []
        self.rows = 0
        self._titled = False  # pstats' title line seen: rows of any shape after it are its rows
        self._action: str | None = None  # the AdvancedProfiler action named above the next total line
        self._open = False  # a total or title line was seen: its `Ordered by` lines belong to it

    def feed(self, body: str) -> bool:
        if m := _ACTION.match(body):
            self._action = m.group(1).strip()
            return True
        if m := _TOTAL.match(body):
            self._section(float(m.group(2)), int(m.group(1)))
            self._open = True
            return True
        if self._open and _ORDER.match(body):
            return True
        if tuple(body.split()) == _TITLE_WORDS:
            self._titled = self._open = True
            return True
        m = _ROW.match(body)
        if not m or not _FUNC.match(name := m.group(3).rstrip()):
            return False
        figures = m.group(2).split()
        if not self._titled and not _EXACT.match(m.group(2)):
            return False
        self._row(m.group(1), figures, name)
        return True

    def _section(self, total_s: float | None, calls: int | None) -> dict:
        if len(self.sections) >= MAX_SECTIONS:
            return self.sections[-1]
        self.sections.append({"action": self._action, "total_s": total_s, "calls": calls, "rows": []})
        self._action = None
        return self.sections[-1]

    def _row(self, ncalls: str, figures: list[str], name: str) -> None:
        if self.rows >= MAX_ROWS:
            return
        section = self.sections[-1] if self.sections else self._section(None, None)
        # tottime percall cumtime percall (_TITLE_WORDS); print_line leaves the first percall blank when the call
        # count is 0 and the second when the primitive count is (never more primitive calls than calls: the first
        # blank implies the second), so cumtime is the last figure of a row with a blank
        cum_i = 2 if len(figures) == 4 else len(figures) - 1
        calls = int(ncalls.split("/")[0])
        section["rows"].append((name, calls, float(figures[0]), float(figures[cum_i])))
        self.rows += 1

    def summary(self) -> dict | None:
        """{sections: [...], rows}: per section its action, stated total (None when the paste has none), the rows'
        own time (`own_s`, the sum of tottime: the profile's total is at least that), loader_s, sync_s (and the
        calls behind it), blocked_s, device_rows and the top functions by own time; None without rows."""
        out = [_summarise(s) for s in self.sections if s["rows"]]
        return {"sections": out, "rows": self.rows} if out else None


def _summarise(section: dict) -> dict:
    rows = section["rows"]
    loader = [cum for name, _, _, cum in rows if _LOADER_FN.search(name)]
    sync = [(name, calls, tot) for name, calls, tot, _ in rows if _SYNC_FN.match(name)]
    blocked = sum(tot for name, calls, tot, _ in rows
                  if calls and tot / calls >= BLOCKED_CALL_S and _TORCH_CALL.match(name) and not _SYNC_FN.match(name))
    top = sorted(rows, key=lambda r: -r[2])[:3]
    return {"action": section["action"], "total_s": section["total_s"], "functions": len(rows),
            "own_s": math.fsum(r[2] for r in rows), "loader_s": max(loader, default=0.0),
            "sync_s": math.fsum(t for _, _, t in sync), "sync_calls": sum(c for _, c, _ in sync),
            "sync_names": sorted({_short(n) for n, _, t in sync if t > 0}),
            "blocked_s": blocked, "device_rows": sum(1 for r in rows if _DEVICE_FN.search(r[0])),
            "top": [(_short(n), tot) for n, _, tot, _ in top]}


def _short(name: str) -> str:
    """`{method 'item' of 'torch._C.TensorBase' objects}` -> `.item()`, `{built-in method torch.as_tensor}` ->
    `torch.as_tensor`, `/a/b/c.py:12(f)` -> `c.py:12(f)`."""
    if m := re.match(r"^\{method '(\w+)' of ", name):
        return f".{m.group(1)}()"
    if name.startswith("{built-in method "):
        return name[len("{built-in method "):-1]
    return re.split(r"[/\\]", name)[-1]
