"""TensorFlow 1.x profiler (tfprof, `tf.profiler.profile` / `print_model_analysis`) text tables read into per-op
totals (a line scanner fed by profiler_table.ProfilerTables).

The table (tensorflow/core/profiler/internal/tfprof_*: the `op` and `code` views): a `Doc:` block, `Profile:`, the
header `node name | requested bytes | total execution time | accelerator execution time | cpu execution time` (any
subset of the selected columns, in that order), then one row per node: its name, then per column `value (cumulative
%, own %)`, the cells separated by `, `. Times print as `us`, `ms` or `sec`. The totals are sums over the profiled
session runs: the accelerator's busy time per op, with no window it ran in (no step time, no wall clock) — so they
name what the device computed, never how much of the run it idled.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*node name \|")
_DOC = re.compile(r"^\s*(?:Doc:|Profile:)\s*$|^\s*(?:op|scope|graph|code|python|node name|requested bytes|"
                  r"(?:total|accelerator|cpu) execution time|peak bytes|residual bytes|output bytes|parameters|"
                  r"float_ops|occurrence|input shapes): [A-Z]")
_CELL = re.compile(r"(\d{1,15}(?:\.\d{1,9})?)(us|ms|sec|B|KB|MB|GB|TB|\b)\s*\((\d{1,3}\.\d{1,3})%, "
                   r"(\d{1,3}\.\d{1,3})%\)")
_UNITS = {"us": 1e-6, "ms": 1e-3, "sec": 1.0,  # seconds; byte columns in bytes, decimal as tfprof prints them
          "B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}  # (tfprof_utils.cc FormatMemory: B, KB = 1e3, MB = 1e6)
MAX_OPS = 20_000


class TfprofTable:
    """Line scanner: feed(body) True when the line belongs to a tfprof table."""

    def __init__(self):
        self.columns: list[str] | None = None
        self.ops: list[dict] = []  # {name, <column>: seconds or bytes}
        self._doc = False

    def feed(self, body: str) -> bool:
        if _HEADER.match(body):
            self.columns = [c.strip() for c in body.split("|")[1:]]
            return True
        if _DOC.match(body):
            self._doc = self._doc or body.strip() == "Doc:"
            return self._doc
        self._doc = False  # the doc block ended: a later `op: Something` line is another text's
        if self.columns is None:
            return False
        cells = _CELL.findall(body)
        if not cells or len(cells) != len(self.columns):
            self.columns = None
            return False
        if len(self.ops) < MAX_OPS:
            op = {"name": body.split()[0]}
            for column, (value, unit, _, _) in zip(self.columns, cells, strict=True):
                op[column] = float(value) * _UNITS[unit] if unit in _UNITS else float(value)
            self.ops.append(op)
        return True

    def summary(self) -> dict | None:
        """{ops, accelerator_s, cpu_s (sums over the rows read, None without the column), top: the rows by
        accelerator time}; None without rows."""
        if not self.ops:
            return None
        acc = [o for o in self.ops if "accelerator execution time" in o]
        cpu = [o for o in self.ops if "cpu execution time" in o]
        top = sorted(acc, key=lambda o: -o["accelerator execution time"])[:3]
        return {"ops": len(self.ops),
                "accelerator_s": sum(o["accelerator execution time"] for o in acc) if acc else None,
                "cpu_s": sum(o["cpu execution time"] for o in cpu) if cpu else None,
                "top": [(o["name"], o["accelerator execution time"]) for o in top]}
