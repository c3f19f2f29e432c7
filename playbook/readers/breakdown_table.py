"""A step-time breakdown table: the whole step and the categories its time splits into, each with a duration and
its share, as PyTorch Profiler's TensorBoard plugin (torch_tb_profiler) shows it and users paste it (a line scanner of
profiler_table.ProfilerTables, itself one of lines.py's).

The plugin's overview (pytorch/kineto tb_plugin, fe/src/components/transform.ts transformPerformanceIntoTable):
columns `Category`, `Time Duration (us)`, `Percentage (%)`; rows `Average Step Time` (100) then the ProfileRole
categories Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CPU Exec, Other. Pasted as a markdown table
(`| Average Step Time | 2,199,623 | 100 |`, rules `|---|`), as tab- or space-aligned text; renamed cells read alike
(`GPU Kernel`, `CPU Execution`, `DataLoader (Wait time)`, `**Kernel (GPU Execution)**`).

Grammar: a header row of cells (split at `|`, tabs or runs of two or more spaces) with a name column, a time column
whose header states its unit (`(us)`, `[ms]`), optionally a percentage column; then rows of a name and a number
(thousands separators allowed); a rule row is skipped; any other line, or a row naming neither the step nor a
category, ends the table. The header must hold a percentage column beside the time's; it is only seen (another
scanner may read it), the rows are this scanner's. The whole-step row is the one
named for the step (`Average Step Time`, `Step Time`, `Total`); the others are categories, read by their words.
"""

from __future__ import annotations

import re

from playbook.readers.step_log.vocab import TIME_UNITS

_SPLIT = re.compile(r"\s*\|\s*|\t+|\s{2,}")
_UNIT = re.compile(r"[(\[]\s*(ns|us|µs|ms|s|sec)\s*[)\]]", re.IGNORECASE)
_NUMBER = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^-?\d+(?:\.\d+)?$")
_RULE_CHARS = frozenset("|:+- \t")  # a rule row (`|---|:---:|`) holds only these, three dashes in a row
_WHOLE = re.compile(r"^(?:average\s+|avg\.?\s+|mean\s+)?(?:step\s+time|step|total)$", re.IGNORECASE)
# the plugin's categories (ProfileRole), by the words a row names: first match wins, most specific first
CATEGORIES = (("dataloader", re.compile(r"data\s*loader|data\s*loading", re.IGNORECASE)),
              ("memcpy", re.compile(r"memcpy", re.IGNORECASE)),
              ("memset", re.compile(r"memset", re.IGNORECASE)),
              ("communication", re.compile(r"communication|\bcomm\b|nccl", re.IGNORECASE)),
              ("kernel", re.compile(r"kernel", re.IGNORECASE)),
              ("runtime", re.compile(r"runtime", re.IGNORECASE)),
              ("cpu_exec", re.compile(r"\bcpu\b", re.IGNORECASE)),
              ("other", re.compile(r"^other\b", re.IGNORECASE)))
MAX_TABLES = 64  # tables kept per file: a log of endless breakdowns cannot grow memory


def _cells(body: str) -> list[str]:
    return [c.strip().strip("*").strip() for c in _SPLIT.split(body.strip().strip("|")) if c.strip()]


def category(name: str) -> str | None:
    """The plugin category a row's name states, None for none."""
    return next((cat for cat, rx in CATEGORIES if rx.search(name)), None)


class BreakdownTable:
    """feed(body) True when the line belongs to a breakdown table; summary() the tables read."""

    def __init__(self):
        self.tables: list[dict] = []
        self._cols: tuple[int, float] | None = None  # (time column, seconds per unit) of the table being read
        self._rows: dict[str, float] = {}
        self._step: float | None = None

    def feed(self, body: str) -> bool:
        if self._cols is None:
            cells = _cells(body)
            if len(cells) < 2 or _NUMBER.match(cells[0].replace(" ", "")):
                return False
            time = [(i, m) for i, c in enumerate(cells[1:], 1) if (m := _UNIT.search(c)) and "%" not in c]
            if len(time) != 1 or not any("%" in c for c in cells[1:]):
                return False
            self._cols = (time[0][0], TIME_UNITS[time[0][1].group(1).lower()])
            return False  # a header is only seen: another scanner may read it (a step table's), rows tell
        if "---" in body and set(body.strip()) <= _RULE_CHARS:
            return True
        cells = _cells(body)
        col, factor = self._cols
        if len(cells) <= col or not _NUMBER.match(cells[col]):
            self._close()
            return False
        seconds = float(cells[col].replace(",", "")) * factor
        if _WHOLE.match(cells[0]):
            self._step = seconds
        elif (cat := category(cells[0])) is not None:
            self._rows[cat] = self._rows.get(cat, 0.0) + seconds
        else:  # a row naming neither the step nor a category: not a breakdown
            self._close()
            return False
        return True

    def _close(self) -> None:
        if self._step and self._rows and len(self.tables) < MAX_TABLES:
            self.tables.append({"step_s": self._step, "parts": dict(self._rows)})
        self._cols, self._rows, self._step = None, {}, None

    def summary(self) -> dict | None:
        """{"tables": [{step_s, parts {category: seconds}}]}, None when the file holds none."""
        self._close()
        return {"tables": list(self.tables)} if self.tables else None
