"""PyTorch/XLA's own account of its time: metrics reports and the PT_XLA_DEBUG auto-metrics analysis, read wherever
they appear in a text log (a line scanner fed by profiler_table.ProfilerTables).

The metrics report (`torch_xla.debug.metrics.metrics_report()`, `short_metrics_report()`, `XLA_METRICS_FILE`; printed
by torch_xla/csrc/runtime/metrics.cc `EmitMetricInfo` / `EmitCounterInfo`):
  [MetricsData; step=N]                 XLA_METRICS_FILE's header before each report (debug/metrics_saver.py)
  Metric: CompileTime                   a timed metric: each sample one event (a graph compiled)
    TotalSamples: 92                    how many since the process started (the report is cumulative)
    Accumulator: 02m44s963ms609.866us   their sum (2019 builds print `Counter:` here); times as [Nd][Nh][Nm][Ns]
                                        [Nms][N.Nus], sizes as 3.44KB, plain values as 1382.00
    ValueRate: ... / second, Rate: ... / second, Percentiles: 1%=..; 5%=..; 50%=..; ...  (XRT metrics: Mean, StdDev)
  Counter: aten::nonzero                a counter, its value on the next line
    Value: 4
The metrics read: CompileTime (graph compilations), ExecuteTime (graph executions), TransferFromServerTime /
TransferFromDeviceTime (copies device → host), TransferToServerTime / TransferToDeviceTime; the counters MarkStep
(steps), CachedCompile / UncachedCompile, `aten::_local_scalar_dense` (device scalars read into Python: `.item()`,
`if t:`, printing) and every other `aten::OP` counter: an op without an XLA lowering, run on the CPU (the tool's own
rule, csrc/runtime/metrics_analysis.cc `UnloweredOp`). A report starts at its header, or where a metric already read
appears again (reports printed one after another).

Each line may stand behind torch_xla.distributed.xla_dist's `10.164.0.25 [0] ` (a worker's address and ordinal).

PT_XLA_DEBUG=1 (metrics_analysis.cc, prefix `pt-xla-profiler`; also behind a logger's `WARNING:` or a progress bar):
  pt-xla-profiler: CompileTime too frequent: 21 counts during 11 steps
  pt-xla-profiler: TransferFromDeviceTime too frequent: 11 counts during 11 steps   (older: TransferFromServerTime)
  pt-xla-profiler: CompileTime too slow: longest instance took 14m30s... Please open a GitHub issue ...
  pt-xla-profiler: Op(s) not lowered: aten::_ctc_loss, aten::_ctc_loss_backward,  Please open a GitHub issue ...

PT_XLA_DEBUG's graph analysis (torch_xla/csrc/debug_util.cpp `analyze_graph_execution_python_frame`: level 1 the
compilations, level 2 the executions too), one block per graph, every line behind its prefix:
  Compilation Analysis: Compilation Cause          (`Execution Analysis: Execution Cause`, `Unexpected Execution
  Compilation Analysis:   user mark_step            Analysis: ...`); the cause is one of: user mark_step, mark_step
  Compilation Analysis: Graph Info:                 in parallel loader at step end, torch_xla.compile, dynamo ...,
  Compilation Analysis:   Graph Hash: 32202b3d...   most likely user code trying to access tensor value before
  Compilation Analysis: Python Frame Triggered Execution:          mark_step (later: torch_xla.sync)
  Compilation Analysis:   mark_step (/.../torch_xla/core/xla_model.py:826)
  Compilation Analysis:   train_loop_fn (/.../train.py:47)    (then `..........`, a rule, `=====`)
→ `graphs`: one {kind: "compilation" | "execution", cause, hash, site} per block, `site` the first frame outside
torch_xla's and torch's own files (where the user's code asked for the graph). `Post Compilation Analysis:` lines
(sizes) are read as the tool's and not kept.

Summary (`summary()`): `reports`, one per report read: {step (None without a header), metrics: name → {samples,
total (seconds for times, bytes for sizes, else the value), unit ("s", "B" or ""), p50}, counters: name → value};
`frequent`: metric → [(counts, steps)] per line; `slow`: metric → the longest instance's seconds; `unlowered`: the
ops the lines name; `graphs` (up to MAX_GRAPHS). None when the file holds none of these.
"""

from __future__ import annotations

import math
import re

_HEADER = re.compile(r"^\s*\[MetricsData; step=(\d{1,12})\]\s*$")
_METRIC = re.compile(r"^\s*Metric: (\S{1,200})\s*$")
_COUNTER = re.compile(r"^\s*Counter: (\S{1,200})\s*$")
_FIELD = re.compile(r"^\s+(TotalSamples|Accumulator|Counter|Value|ValueRate|Rate|Percentiles|Mean|StdDev|Min|Max): ?"
                    r"(.{0,4000})$")
_TIME = re.compile(r"^(?:(\d{1,9})d)?(?:(\d{1,9})h)?(?:(\d{1,9})m(?!s))?(?:(\d{1,9})s)?(?:(\d{1,9})ms)?"
                   r"(?:(\d{1,9}(?:\.\d{1,9})?)us)?$")
_SIZE = re.compile(r"^(\d{1,15}(?:\.\d{1,9})?)(PB|TB|GB|MB|KB|B)$")
_SIZES = {"B": 1.0, "KB": 1024.0, "MB": 1024.0 ** 2, "GB": 1024.0 ** 3, "TB": 1024.0 ** 4, "PB": 1024.0 ** 5}
_P50 = re.compile(r"(?:^|;\s*)50%=(\S{1,60}?)(?:;|$)")
_PROFILER = re.compile(r"pt-xla-profiler:\s?")
_FREQUENT = re.compile(r"^(\w{1,100}) too frequent: (\d{1,15}) counts during (\d{1,15}) steps")
_SLOW = re.compile(r"^(\w{1,100}) too slow: longest instance took (\S{1,60}?)\.?(?:\s|$)")
_UNLOWERED = re.compile(r"^Op\(s\) not lowered: ")  # the ops up to `Please open` (a lazy match with \s* is quadratic)
ATEN_OP = re.compile(r"aten::\w{1,200}")  # an op's counter name (analysis.xla_runtime reads them too)
_ANALYSIS = re.compile(r"^\s*(?:Unexpected )?(Compilation|Execution|Post Compilation) Analysis: ?(.{0,2000})$")
_FRAME = re.compile(r"^\s+(\S{1,300}) \((.{1,1000}):(\d{1,9})\)\s*$")
_OWN_FILES = re.compile(r"[/\\](?:torch_xla|torch)[/\\]")  # frames of torch_xla's and torch's own code
_WORKER = re.compile(r"\d{1,3}(?:\.\d{1,3}){3} \[\d{1,5}\] ")  # xla_dist's `ADDRESS [ORDINAL] ` before a worker's line
MAX_GRAPHS = 100_000
MAX_REPORTS = 10_000  # reports kept per file: a log of endless reports cannot grow memory
SCALAR_READS = "aten::_local_scalar_dense"


def quantity(text: str) -> tuple[float, str]:
    """A report's value → (number, unit): seconds ("s") for `02m44s963ms609.866us`, bytes ("B") for `3.44KB`, the
    plain number ("") for `1382.00`; (nan, "") when it is none of these (`nanB`, damage)."""
    text = text.strip()
    if re.fullmatch(r"-?\d{1,15}(?:\.\d{1,9})?(?:[eE][-+]?\d{1,3})?", text):
        return float(text), ""
    if (m := _SIZE.match(text)) is not None:
        return float(m.group(1)) * _SIZES[m.group(2)], "B"
    if text and (m := _TIME.match(text)) is not None and any(m.groups()):
        d, h, mi, s, ms, us = (float(g) if g else 0.0 for g in m.groups())
        return d * 86400 + h * 3600 + mi * 60 + s + ms * 1e-3 + us * 1e-6, "s"
    return math.nan, ""


class XlaMetrics:
    """Line scanner: feed(body) True when the line belongs to a metrics report or is a pt-xla-profiler line."""

    def __init__(self):
        self.reports: list[dict] = []
        self.frequent: dict[str, list[tuple[int, int]]] = {}
        self.slow: dict[str, float] = {}
        self.unlowered: list[str] = []
        self._step: int | None = None  # the header's step, for the report that follows it
        self._open: tuple[str, str] | None = None  # ("metric" | "counter", name) whose fields come next
        self._pending: tuple[str, str] | None = None  # a Metric: / Counter: line not yet confirmed by its field
        self._cur: dict | None = None  # the report being read
        self._kept = False  # whether it is in self.reports
        self.graphs: list[dict] = []
        self._graph: dict | None = None  # the analysis block being read
        self._in_frames = False

    def _report(self, fresh: bool = False) -> dict:
        """The report being read; a new one when `fresh` (or none is open), kept (`_keep`) at its first block."""
        if fresh or self._cur is None:
            self._cur, self._kept = {"step": self._step, "metrics": {}, "counters": {}}, False
            self._step = None
        return self._cur

    def _keep(self, report: dict) -> None:
        """Keep a report that holds a block: the first MAX_REPORTS - 1 and the latest (a metrics file gains one a
        step: its last is the one judged)."""
        if not self._kept:
            if len(self.reports) < MAX_REPORTS:
                self.reports.append(report)
            else:
                self.reports[-1] = report
            self._kept = True

    def feed(self, body: str) -> bool:
        if body[:1].isdigit() and (w := _WORKER.match(body)) is not None:
            body = body[w.end():]
        if (m := _ANALYSIS.match(body)) is not None:
            return self._analysis(m.group(1), m.group(2))
        if (m := _PROFILER.search(body)) is not None:
            return self._profiler(body[m.end():])
        if (m := _HEADER.match(body)) is not None:
            self._step, self._open, self._pending = int(m.group(1)), None, None
            self._report(fresh=True)
            return True
        if (m := _METRIC.match(body) or _COUNTER.match(body)) is not None:
            kind = "metric" if body.lstrip().startswith("Metric:") else "counter"
            name = m.group(1)
            if kind == "counter" and self._open and self._open[0] == "metric" and not math.isnan(quantity(name)[0]):
                return self._field("Accumulator", name)  # a 2019 build's accumulator (`  Counter: 07s501ms...`)
            self._pending, self._open = (kind, name), None
            return True
        if (m := _FIELD.match(body)) is not None and (self._pending or self._open):
            return self._field(m.group(1), m.group(2))
        self._open = self._pending = None
        return False

    def _field(self, key: str, value: str) -> bool:
        if self._pending is not None:  # the first field confirms the block and places it in a report
            kind, name = self._pending
            report = self._report()
            if report["metrics"].get(name) or name in report["counters"]:
                report = self._report(fresh=True)  # the same metric again: the next report printed
            self._keep(report)
            if kind == "metric":
                report["metrics"][name] = {"samples": None, "total": math.nan, "unit": "", "p50": math.nan}
            self._open, self._pending = (kind, name), None
        if self._open is None:
            return False
        kind, name = self._open
        report = self._report()
        if kind == "counter":
            if key == "Value" and re.fullmatch(r"\s*\d{1,18}\s*", value):
                report["counters"][name] = int(value)
            return True
        metric = report["metrics"].setdefault(name, {"samples": None, "total": math.nan, "unit": "", "p50": math.nan})
        if key == "TotalSamples" and re.fullmatch(r"\s*\d{1,18}\s*", value):
            metric["samples"] = int(value)
        elif key in ("Accumulator", "Counter"):
            metric["total"], metric["unit"] = quantity(value)
        elif key == "Percentiles" and (p := _P50.search(value)) is not None:
            metric["p50"] = quantity(p.group(1))[0]
        return True

    def _profiler(self, text: str) -> bool:
        self._open = self._pending = None
        if (m := _FREQUENT.match(text)) is not None and int(m.group(3)) > 0:  # the tool judges no step 0: damage
            self.frequent.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3))))
        elif (m := _SLOW.match(text)) is not None:
            sec, unit = quantity(m.group(2))
            if unit == "s":
                self.slow[m.group(1)] = max(self.slow.get(m.group(1), 0.0), sec)
        elif (m := _UNLOWERED.match(text)) is not None:
            for op in ATEN_OP.findall(text[m.end():m.end() + 4000].split("Please open", 1)[0]):
                if op not in self.unlowered and op != SCALAR_READS:
                    self.unlowered.append(op)
        return True  # any other pt-xla-profiler line (frame analysis, rules): the tool's, read as such

    def _analysis(self, kind: str, text: str) -> bool:
        """One line of a graph analysis block (module docstring)."""
        self._open = self._pending = None
        if kind == "Post Compilation":
            return True
        if text.strip() in ("Compilation Cause", "Execution Cause"):
            self._graph, self._in_frames = {"kind": kind.lower(), "cause": "", "hash": "", "site": ""}, False
            if len(self.graphs) < MAX_GRAPHS:
                self.graphs.append(self._graph)
            return True
        g = self._graph
        if g is None:
            return True
        line = text.rstrip()
        if line.startswith("  ") and not g["cause"] and not line.strip().startswith("Graph"):
            g["cause"] = line.strip()[:200]
        elif line.strip().startswith("Graph Hash:"):
            g["hash"] = line.split(":", 1)[1].strip()[:64]
        elif line.startswith("Python Frame Triggered Execution"):
            self._in_frames = True
        elif self._in_frames and (f := _FRAME.match(line)) is not None and not g["site"]:
            if not _OWN_FILES.search(f.group(2)):
                g["site"] = f"{f.group(1)} ({f.group(2).rsplit('/', 1)[-1]}:{f.group(3)})"
        elif line.startswith(("---", "===")):
            self._in_frames = False
        return True

    def summary(self) -> dict | None:
        reports = [r for r in self.reports if r["metrics"] or r["counters"]]
        if not (reports or self.frequent or self.slow or self.unlowered or self.graphs):
            return None
        return {"reports": reports, "frequent": self.frequent, "slow": self.slow, "unlowered": self.unlowered,
                "graphs": self.graphs}
