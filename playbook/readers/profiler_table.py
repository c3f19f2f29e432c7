"""The text table torch.profiler prints (`prof.key_averages().table(...)`, also `print(prof)` and Lightning's
PyTorchProfiler report), read into op-level rows wherever it appears in a text log (a line scanner of lines.py).

The table (torch/autograd/profiler_util.py `_build_table`): a rule of dashes whose runs give the columns, a header
row (`Name  Self CPU %  Self CPU  CPU total %  CPU total  CPU time avg  [Self CUDA  Self CUDA %  CUDA total  CUDA
time avg]  [CPU Mem ...]  # of Calls  [Input Shapes ...]`; the device may be CUDA, XPU, MTIA, PrivateUse1 or
"Device"), a rule, one row per op (times with their units, `12.979us`, `1.665ms`), a rule, then `Self CPU time
total: 9.039ms` and `Self CUDA time total: 9.370ms`. Any sort column and any subset of optional columns: columns are
found by their header words, not their position. The two total lines are also read without the table above them (a
post that quotes only the tail): a summary of the totals alone (`totals_only`, no ops), when both the CPU's and a
device's total are there.

Rows: name, self_cpu_s, cpu_total_s, self_device_s, device_total_s, calls (NaN where the table has no such column).
Summary (`summary()`): ops, the totals, the top ops by self device (else self CPU) time, kernel launches (calls of
cudaLaunchKernel / cuLaunchKernel / hipLaunchKernel, and their self CPU time `launch_s`), the data loader's share of self CPU time (ops named
`enumerate(DataLoader)...`), the CPU time blocked in CUDA synchronisation calls (cuda*Synchronize, cuStreamSynchronize,
hipDeviceSynchronize ...: `sync_s`, `sync_calls`), the CPU time in copy calls (cudaMemcpy*, cuMemcpy*, hipMemcpy*:
`copy_s`) with the device's copy time by direction (rows `Memcpy HtoD (Pageable -> Device)` ...: `h2d_device_s`,
`d2h_device_s`, and the names of those from or to pageable memory: `pageable`), the CPU time in the driver's
allocator (cudaMalloc / cudaFree ...: `alloc_s`) and the profiled steps (`ProfilerStep*` / `ProfilerStep#N` rows
of a `schedule`: `steps`, and `steps_s`, their CPU total: the steps' wall time on the host; `steps_self_s`, their
self CPU: host time inside the steps outside every recorded op). Without the `Self CPU time total` line (a paste cut
short) the total is what the `Self CPU %` column implies.
"""

from __future__ import annotations

import math
import re
import statistics

from playbook.readers import host_calls
from playbook.readers.breakdown_table import BreakdownTable
from playbook.readers.input_pipeline_text import InputPipelineText
from playbook.readers.line_profile import LineProfile
from playbook.readers.platform_rules_text import PlatformRuleText
from playbook.readers.pstats_text import PstatsText
from playbook.readers.stack_samples import FoldedStacks, PySpyDump
from playbook.readers.tfprof_text import TfprofTable
from playbook.readers.variant_table import VariantTable
from playbook.readers.xla_metrics import XlaMetrics

_RULE = re.compile(r"^\s*-{3,}(?:  -{3,})+\s*$")
_GAP = re.compile(r"\s{2,}")
_TIME = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)$")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_TOTAL = re.compile(r"^\s*Self (\w+) time total:\s*(\S+)\s*$")
_LAUNCH = re.compile(r"^(?:cuda|cu|hip)LaunchKernel", re.IGNORECASE)
SYNC_CALLS = re.compile("^" + host_calls.SYNC_API, re.IGNORECASE)
_COPY_CALLS = re.compile(r"^(?:cu(?:da)?|hip)Memcpy", re.IGNORECASE)  # cudaMemcpyAsync, cuMemcpyHtoDAsync_v2 ...
_ALLOC_CALLS = re.compile(r"^(?:cu(?:da)?|hip)(?:Malloc|Free|MemAlloc|MemFree)", re.IGNORECASE)
# the device's copy rows: "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)" (CUPTI's names)
_DEVICE_COPY = re.compile(r"^Memcpy ([HD])to([HD])\b", re.IGNORECASE)
_STEP = re.compile(r"^ProfilerStep(?:\*|#\d+)$")
_PCT = re.compile(r"^-?\d+(?:\.\d+)?%$")
META_PREFIX = "profiler_table:"  # bundle.meta[META_PREFIX + path]: a file's summary()
MAX_OPS = 20_000  # rows kept per file: a log of endless tables cannot grow memory


def _seconds(text: str) -> float:
    m = _TIME.match(text.strip())
    return float(m.group(1)) * _UNITS[m.group(2)] if m else math.nan


def _column_roles(header: list[str]) -> dict[str, int]:
    """role -> column index, from the header cells."""
    roles: dict[str, int] = {}
    for i, cell in enumerate(header):
        c = " ".join(cell.split())
        low = c.lower()
        if i == 0 and low == "name":
            roles["name"] = i
        elif c == "Self CPU":
            roles["self_cpu_s"] = i
        elif c == "Self CPU %":
            roles["self_cpu_pct"] = i
        elif c == "CPU total":
            roles["cpu_total_s"] = i
        elif low.startswith("self ") and not low.endswith(("%", "mem")) and "cpu" not in low:
            roles["self_device_s"] = i  # Self CUDA / Self XPU / Self Device
        elif low.endswith(" total") and "cpu" not in low and not low.endswith("%"):
            roles["device_total_s"] = i
        elif low == "# of calls":
            roles["calls"] = i
    return roles


# Lightning's SimpleProfiler report (pytorch_lightning/profilers/simple.py summary(): "FIT Profiler Report", then
# `|  {action}\t|  {mean}\t|  {num_calls}\t|  {total}\t|  {percentage}\t|` under a header of those names, or
# `{action}\t|  {mean}\t|  {total}` without extended=True): the actions' total seconds. The loop's wait for the next
# training batch is `[_TrainingEpochLoop].train_dataloader_next` (Lightning 2.x) or `get_train_batch` (1.x).
FIT_LOADER = re.compile(r"(?:^|[].])train_dataloader_next$|^get_train_batch$")
_FIT_EPOCH = re.compile(r"^run_training_epoch$")


class FitReport:
    """Line scanner for Lightning's SimpleProfiler report: feed(body) True when the line belongs to one."""

    def __init__(self):
        self.totals: dict[str, float] = {}  # action -> total seconds, summed over the reports in the file
        self._cols: dict[str, int] | None = None

    def feed(self, body: str) -> bool:
        cells = [c.strip() for c in body.strip().strip("|").split("|")] if "|" in body else []
        if self._cols is None:
            if len(cells) >= 3 and cells[0] == "Action" and any(c.startswith("Total time") for c in cells):
                self._cols = {"total": next(i for i, c in enumerate(cells) if c.startswith("Total time"))}
                return True
            return False
        if re.fullmatch(r"\s*-{3,}\s*", body):
            return True
        if len(cells) <= self._cols["total"]:
            self._cols = None  # the report ended
            return False
        total = cells[self._cols["total"]]
        if re.fullmatch(r"\d+(?:\.\d*)?(?:[eE][-+]?\d+)?", total):
            self.totals[cells[0]] = self.totals.get(cells[0], 0.0) + float(total)
        return True

    def summary(self, actions: dict[str, float] | None = None) -> dict:
        """`fit_epoch_s` (run_training_epoch's total, else the report's Total) and `fit_loader_s` (the waits for
        the next training batch), over this report's actions and `actions` (action -> seconds: the AdvancedProfiler's
        sections, pstats_text.py); {} without either."""
        totals = dict(self.totals)
        for k, v in (actions or {}).items():
            totals[k] = totals.get(k, 0.0) + v
        if not totals:
            return {}
        epoch = sum(v for k, v in totals.items() if _FIT_EPOCH.match(k)) or totals.get("Total", 0.0)
        return {"fit_epoch_s": epoch, "fit_loader_s": sum(v for k, v in totals.items() if FIT_LOADER.search(k))}


class ProfilerTables:
    """The line scanner: feed(body) for every line; True when the line belongs to a profiler table (also fed to the
    other profilers' texts: pstats_text, stack_samples, line_profile, tfprof_text, breakdown_table, xla_metrics,
    input_pipeline_text, platform_rules_text, variant_table)."""

    def __init__(self):
        self.fit = FitReport()
        self.pstats = PstatsText()
        self.texts = (FoldedStacks(), PySpyDump(), LineProfile(), TfprofTable(),  # the other profilers' texts
                      BreakdownTable(), XlaMetrics(), InputPipelineText(), PlatformRuleText(), VariantTable())
        self.rows: list[dict] = []
        self.tables = 0
        self.totals: dict[str, float] = {}
        self._spans: list[tuple[int, int]] | None = None  # the columns of the table being read
        self._roles: dict[str, int] | None = None
        self._state = ""  # "" outside, "header" after the first rule, "rows" after the second

    def feed(self, body: str) -> bool:
        if self._state == "" and (self.fit.feed(body) or self.pstats.feed(body)
                                  or any(t.feed(body) for t in self.texts)):
            return True
        if _RULE.match(body):
            if self._state == "":
                self._spans = [m.span() for m in re.finditer(r"-+", body)]
                self._state = "header"
            elif self._state == "header" and self._roles is not None:
                self._state = "rows"
            else:  # the closing rule
                self._state, self._roles = "", None
            return True
        if self._state == "header":
            cells = self._cells(body)
            roles = _column_roles(cells)
            if "name" not in roles or not ({"self_cpu_s", "self_device_s"} & roles.keys()):
                self._state, self._spans = "", None  # another dashed table
                return False
            self._roles = roles
            self.tables += 1
            return True
        if self._state == "rows":
            self._row(self._cells(body))
            return True
        if (m := _TOTAL.match(body)) and math.isfinite(sec := _seconds(m.group(2))):
            # after a table, or alone: the table's fixed tail quoted without the rows above it (a post or paste
            # that keeps the two totals); a line not of that form (no unit) is not read
            self.totals[m.group(1)] = self.totals.get(m.group(1), 0.0) + sec
            return True
        return False

    def _cells(self, body: str) -> list[str]:
        """A row's cells: split at runs of two or more spaces (cells are right-aligned, two spaces apart, and
        hold single spaces only: a pasted table whose padding moved still reads), else at the rule's columns."""
        spans = self._spans or []
        cells = _GAP.split(body.strip())
        if len(cells) == len(spans):
            return cells
        out = [body[a:b] for a, b in spans[:-1]]
        if spans:
            out.append(body[spans[-1][0]:])  # the last column may run past its rule (input shapes)
        return [c.strip() for c in out]

    def _row(self, cells: list[str]) -> None:
        if len(self.rows) >= MAX_OPS or not cells or not cells[0]:
            return
        roles = self._roles or {}
        row = {"name": cells[roles["name"]]}
        for key in ("self_cpu_s", "cpu_total_s", "self_device_s", "device_total_s"):
            row[key] = _seconds(cells[roles[key]]) if key in roles and roles[key] < len(cells) else math.nan
        calls = cells[roles["calls"]] if "calls" in roles and roles["calls"] < len(cells) else ""
        row["calls"] = float(calls) if calls.isdigit() else math.nan
        pct = cells[roles["self_cpu_pct"]] if "self_cpu_pct" in roles and roles["self_cpu_pct"] < len(cells) else ""
        row["self_cpu_share"] = float(pct[:-1]) / 100 if _PCT.match(pct) else math.nan
        row["table"] = self.tables
        self.rows.append(row)

    def _self_cpu_total(self) -> float:
        """Self CPU time of the tables in seconds: their `Self CPU time total` lines, else (a paste cut before them)
        what each table's own `Self CPU %` column implies (a row's self CPU over its share of the total: the median
        over rows of at least 1%, whose two printed decimals keep it within 1%), else the sum of the rows read."""
        if self.totals.get("CPU"):
            return self.totals["CPU"]
        total = 0.0
        for t in sorted({r["table"] for r in self.rows}):
            rows = [r for r in self.rows if r["table"] == t]
            implied = [r["self_cpu_s"] / r["self_cpu_share"] for r in rows
                       if r["self_cpu_share"] >= 0.01 and math.isfinite(r["self_cpu_s"])]
            total += statistics.median(implied) if implied else _sum(rows, "self_cpu_s")
        return total

    def summary(self) -> dict | None:
        """What the tables hold (see the module docstring), the Lightning report's (FitReport.summary) and the
        cProfile listings' (`pstats`: PstatsText.summary, whose AdvancedProfiler actions join the Lightning report's);
        None when the file printed none of them."""
        pstats = self.pstats.summary()
        actions: dict[str, float] = {}
        for s in (pstats or {}).get("sections", []):
            if s["action"] and s["total_s"] is not None:
                actions[s["action"]] = actions.get(s["action"], 0.0) + s["total_s"]
        extra = {**self.fit.summary(actions), **({"pstats": pstats} if pstats else {}),
                 **{key: part for key, t in zip(("stacks", "dump", "line_profile", "tfprof", "breakdown", "xla",
                                                 "input_pipeline", "platform_rules", "variants"), self.texts,
                                                strict=True)
                    if (part := t.summary())}}
        if not self.rows:
            if self.totals.get("CPU") and len(self.totals) > 1:
                # the totals alone (the tail quoted without its rows): the window's self CPU time against the
                # device's kernel time; no op, so no cause is named from it
                return {"tables": self.tables, "ops": 0, "totals_only": True,
                        "self_cpu_total_s": self.totals["CPU"],
                        "self_device_total_s": next(v for k, v in self.totals.items() if k != "CPU"), **extra}
            return extra or None
        rows = self.rows
        device = any(math.isfinite(r["self_device_s"]) for r in rows)
        key = "self_device_s" if device else "self_cpu_s"
        top = sorted((r for r in rows if math.isfinite(r[key]) and r[key] > 0), key=lambda r: -r[key])[:5]
        self_cpu = self._self_cpu_total()
        loader = _sum(rows, "cpu_total_s", lambda n: n.startswith("enumerate(DataLoader)"))
        sync = [r for r in rows if SYNC_CALLS.match(r["name"])]
        steps = [r for r in rows if _STEP.match(r["name"])]
        copies = [(m.group(1).upper() + m.group(2).upper(), r) for r in rows if (m := _DEVICE_COPY.match(r["name"]))]
        return {"tables": self.tables, "ops": len(rows),
                "self_cpu_total_s": self_cpu,
                "self_device_total_s": next((v for k, v in self.totals.items() if k != "CPU"), None),
                "top_by": key, "top": [(r["name"], r[key]) for r in top],
                "kernel_launches": int(sum(r["calls"] for r in rows if _LAUNCH.match(r["name"])
                                           and math.isfinite(r["calls"]))),
                "launch_s": _sum(rows, "self_cpu_s", _LAUNCH.match),
                "device_total_stated": any(k != "CPU" for k in self.totals),
                "loader_share": (loader / self_cpu) if loader and self_cpu else None,
                "sync_s": _sum(sync, "self_cpu_s"), "sync_calls": int(_sum(sync, "calls")),
                "copy_s": _sum(rows, "self_cpu_s", _COPY_CALLS.match),
                "h2d_device_s": _sum([r for d, r in copies if d == "HD"], "self_device_s"),
                "d2h_device_s": _sum([r for d, r in copies if d == "DH"], "self_device_s"),
                "pageable": sorted({r["name"] for _, r in copies if "pageable" in r["name"].lower()}),
                "alloc_s": _sum(rows, "self_cpu_s", _ALLOC_CALLS.match),
                "steps": int(_sum(steps, "calls")), "steps_s": _sum(steps, "cpu_total_s"),
                "steps_self_s": _sum(steps, "self_cpu_s"), **extra}


def _sum(rows: list[dict], key: str, keep=lambda name: True) -> float:
    """The sum of `key` over the rows whose name `keep` accepts (NaN cells left out)."""
    return float(sum(r[key] for r in rows if keep(r["name"]) and math.isfinite(r[key])))
