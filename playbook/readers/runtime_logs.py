"""Framework-runtime records in text logs: GPU time spent in the framework (compiling, tracing, its allocator)
rather than in the model. One scanner, fed by readers/lines.py before the others, turning each record into the
event rows readers/lines.py keeps (kind `recompile`, `compile`, `memory_pressure`, `oom`):

  TF retracing     TensorFlow's frequent-tracing warning (def_function.py / polymorphic_function.py,
                   `_FrequentTracingDetector`: at least FREQUENT_TRACING_WARNING_THRESHOLD = 5 traces among calls
                   at most FREQUENT_TRACING_WARNING_MAX_CALL_HISTORY = 10 apart): "N out of the last M calls to
                   <function F at 0x..> triggered tf.function retracing. Tracing is expensive ..." → one
                   `recompile` event on F: TensorFlow's own statement that F traced anew on N of M calls
  JAX compiles     `jax_log_compiles` / JAX_LOG_COMPILES=1 (jax/_src/dispatch.py, interpreters/pxla.py): "Finished
                   tracing + transforming F for pjit in S sec", "Compiling F with global shapes and types [...].
                   Argument mapping: [...]." (older: "Compiling F (id) for args (...)."), "Finished jaxpr to MLIR
                   module conversion jit(F) in S sec", "Finished XLA compilation of jit(F) in S sec" → a `compile`
                   event per compilation (duration: its last tracing + lowering + XLA seconds), `recompile` when the
                   same process compiles the same function again
  dynamo, 2.0      PyTorch 2.0's TORCH_LOGS=recompiles record, logged as a tuple's repr: "('Recompiling function F
                   in PATH', "triggered by the following guard failure: GUARD")" → `recompile` with its guard
  CompileProfiler  torch._dynamo.utils.CompileProfiler.report(): "Torchdynamo Profiler Report", its Recompilation
                   table (tabulate: `Function  Recompiles  Recompile Reasons`, a row per frame, one reason per
                   line) → one `recompile` event per recompile the row counts (MAX_PROFILER_EVENTS in a report), with its
                   first reason
  XLA alarms       XLA's slow-operation alarm (xla/service/slow_operation_alarm.cc, LOG(ERROR) once an operation
                   outlasts its timeout): constant folding (service/constant_folding.cc: "Constant folding an
                   instruction is taking > 1s:", the instruction, an explanation) and the compile watchdog ("[Compiling
                   module M] Very slow compile? If you want to file a bug, ..." between `****` rules); when the
                   operation ends, "The operation took 8m6.96s" (absl::FormatDuration) → a `compile` event (its
                   seconds: the time taken, else the alarm's threshold, a lower bound); the message's other lines are
                   read as the same record
  compile tables   a Markdown (pipe) table a reporter measured, its header naming a compile-time column (`| run |
                   compile | steady chunk |`, `| config | compilation time (s) | step time (s) |`) above its `|---|`
                   rule → a `compile` event per row whose compile cell is a duration (a unit in the cell or the
                   header: s, sec, ms, min, h, or absl's `3m2s`), the row's first cell and other cells in its detail
  memory_summary   torch.cuda.memory_summary() (torch/cuda/memory.py): "|  CUDA OOMs: N  |  cudaMalloc retries: R  |"
                   → `memory_pressure` when R ≥ 1 (memory_stats()["num_alloc_retries"]: cudaMalloc calls that
                   failed, freed every cached block and were retried, each a synchronous free near the memory
                   limit), `oom` when N ≥ 1 (counts since the process started: a summary printed again is an
                   event only where they rose); the box's other rows are read as the same record (the peak
                   allocated memory goes into the event)

Every pattern is linear; a line is tried only when it holds one of the few needles below.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from playbook.knowledge import ids as cause_ids
from playbook.readers.keras_statements import KerasLines
from playbook.readers.step_log.vocab import TIME_UNITS as _UNIT_S

# TensorFlow: "<function F at 0x7f..>", "<function Outer.<locals>.f at 0x..>", and Keras objects ("<tensorflow...
# Sequential object at 0x7f2185a37630>")
_TF_RETRACE = re.compile(r"\b(\d{1,9}) out of the last (\d{1,9}) calls to <(?:function )?([^<>\s]{1,300}(?:<locals>"
                         r"[^<>\s]{0,200}){0,4})(?: object)?(?: at 0x[0-9a-fA-F]{1,16})?> triggered tf\.function "
                         r"retracing")
_JAX_TRACE = re.compile(r"Finished tracing \+ transforming (\S{1,300}) for (?:p?jit|pmap) in ([\d.eE+-]{1,30}) sec")
# the argument list may run to thousands of characters (a model's parameters): its first 400 are enough
_JAX_COMPILING = re.compile(r"\bCompiling (\S{1,300}) (?:with global shapes and types (.{0,400})|\(\d{1,20}\) for args "
                            r"(.{0,400}))")
_JAX_STAGE = re.compile(r"Finished (?:jaxpr to MLIR module conversion|XLA compilation of) (\S{1,300}) in "
                        r"([\d.eE+-]{1,30}) sec")
_DYNAMO_TUPLE = re.compile(r"\('Recompiling function (\S{1,300}) in ([^'\s]{1,400})',\s{0,20}\"triggered by the following "
                           r"guard failures?:\s{0,20}(.{0,300}?)\"\)")
_PROFILER_TITLE = "Torchdynamo Profiler Report"
_PROFILER_HEAD = re.compile(r"^\s*Function\s{2,}Recompiles\s{2,}Recompile Reasons\s*$")
# a row (its line rstripped): every run bounded, so a long line is no quadratic search
_PROFILER_ROW = re.compile(r"^(\S.{0,300}?)\s{2,400}(\d{1,9})\s{2,400}(\S.{0,300})$")
_BREAK_HEAD = re.compile(r"^Graph Break Reason\s{2,}Count$")  # graph_break_report(): tabulate, a row per reason
_PROFILER_NONE = "No recompilation detected."  # report()'s last line in place of the table
_PROFILER_MORE = re.compile(r"^\s{8,400}(\S.{0,300})$")
MAX_PROFILER_EVENTS = 10_000  # recompiles one report's rows may turn into events (each row one at least)
PROFILER_PROSE = 40  # lines of a report's section before its recompile table (its prose is about 10 each)
_MEM_HEAD = re.compile(r"\|\s*CUDA OOMs:\s*(\d{1,12})\s*\|\s*cudaMalloc retries:\s*(\d{1,12})\s*\|")
_MEM_TITLE = re.compile(r"\|\s*PyTorch CUDA memory summary, device ID (\d{1,4})\s*\|")
# the box's rows: its rules, the `Metric | Cur Usage | ...` header, and a metric's row of four sizes or counts
# (`|  10344 MiB |`, `|      0 B   |`, `|    1234 K  |`; MB / KB before torch 1.10): a `| step 5 | loss 1.2 |` line is none
_MEM_ROW = re.compile(r"^\|[=-]{20,}\|?$|^\|\s{0,12}Metric\s{0,12}\|.{0,200}\|$|"
                      r"^\|[^|]{1,40}\|(?:\s{0,12}\d{1,12}(?:\.\d{1,6})?\s{0,3}(?:[KMGTP]i?B|B|[KM])?\s{0,12}\|){4}$")
_MEM_ALLOC = re.compile(r"^\|\s*Allocated memory\s*\|\s*([\d.]+ \w?i?B)\s*\|\s*([\d.]+ \w?i?B)\s*\|")
# XLA's slow-operation alarm: its opening lines, the line that ends it, and the lines of its message between
_XLA_FOLD = re.compile(r"Constant folding an instruction is taking > ([\w.]{1,40}):?\s*$")
_XLA_SLOW = re.compile(r"(?:\[Compiling module ([^\]\s]{1,300})\] )?(?:Very s|S)low compile\?")
_XLA_TOOK = re.compile(r"The operation took (\d[\w.]{0,60})")
_XLA_MESSAGE = re.compile(r"slow_operation_alarm\.cc:\d{1,6}\]\s*$|^\s*\*{8,}\s*$|This isn't necessarily a bug; constant-"
                          r"folding|^If you'd like to file a bug, run with envvar|(?:XLA|ZKX) was built without compiler "
                          r"optimizations")
_ABSL = re.compile(r"(?:(\d{1,6})h)?(?:(\d{1,6})m(?![sn]))?(?:(\d{1,12}(?:\.\d{1,12})?)(s|ms|us|ns))?")
# a compile-time column's heading (not "Recompiles", a count), and a duration cell: a number and its unit
_COMPILE_HEAD = re.compile(r"(?<![a-z])compil(?:e|ation|ing)\b", re.I)
_DURATION_CELL = re.compile(r"~?\s*(\d{1,9}(?:\.\d{1,9})?)\s*(ms|s|sec|secs|seconds?|min|mins|minutes?|h|hr|hrs|hours?)?\.?")
_HEAD_UNIT = re.compile(r"[(\[]\s*(ms|s|sec|secs|seconds?|min|mins|minutes?|h|hr|hrs|hours?)\s*[)\]]", re.I)
ALARM_LINES = 12  # lines an alarm's message may take (the instruction, the explanation, its rules) before it ends
_NEEDLES = ("retracing", "Finished ", "Compiling ", "Recompiling function", _PROFILER_TITLE, "|", "slow_operation_alarm",
            "onstant folding", "low compile?", "The operation took")


def compile_column(header: str) -> bool:
    """Whether a table's column holds compile times (`compilation time (s)`; a count of recompiles is not)."""
    return bool(_COMPILE_HEAD.search(header)) and "recompil" not in header.lower()


def _jax_name(name: str) -> str:
    """`jit(f)` / `pjit(f)` / `f` → f (the function a compile log line names)."""
    m = re.fullmatch(r"p?jit\((.{1,300})\)|pmap\((.{1,300})\)", name)
    return (m.group(1) or m.group(2)) if m else name


class RuntimeLines:
    """The scanner: `feed(line)` → the counts key of what it understood ("recompile", "events") or None; events are
    added through `add(line, kind, detail, duration)` (readers/lines.py `_EventLines._add`, returning the row's
    index in `rows`)."""

    def __init__(self, add: Callable[..., int], rows: list[dict]):
        self.add, self.rows = add, rows
        self.keras = KerasLines(add)  # what TensorFlow / Keras state about the run's pace (keras_statements.py)
        # keyed by (rank, function): each process of a job compiles its own functions (one file may hold several)
        self.jax_compiled: set[tuple] = set()  # the functions compiled so far in this log
        self.jax_open: dict[tuple, int] = {}  # function -> its latest compile event's row, to add its stage times
        # function -> the seconds of its latest trace not yet compiled; a jit called inside another jit logs its trace
        # within the outer one's (and is compiled as part of it): the next "Compiling" line on the rank settles them
        self.jax_traced: dict[tuple, float] = {}
        self.profiler = ""  # "" outside a CompileProfiler report; "report" in it; "table" in its recompile table
        self.profiler_row: int | None = None
        self.profiler_left = 0  # lines of prose the report may still take (its sections, without the table)
        self.profiler_budget = 0  # events the report's rows may still add
        self.profiler_breaks = 0  # the width of its graph-break table (tabulate pads every row to its header's)
        self.memory: int | None = None  # the row of the memory summary being read (-1: one with nothing to flag)
        self.memory_rows = False  # whether the box's metric rows have begun (its next `|===|` rule closes it)
        self.memory_device = -1  # the device its title names
        self.memory_seen: dict[tuple, tuple[int, int]] = {}  # (rank, device) -> (OOMs, retries) its last summary said
        self.alarm: int | None = None  # the row of the XLA alarm whose message is being read (until it took, or ends)
        self.alarm_left = 0  # lines its message may still take
        self.alarm_what = ""  # "fold" while the constant-folding alarm still owes its instruction's line
        self.table: dict | None = None  # a compile-time table: its heading cells, compile column, unit, rule seen

    def feed(self, ln) -> str | None:
        body = ln.body
        if self.alarm_left and (key := self._alarm(ln)):
            return key
        if key := self.keras.feed(ln):
            return key
        if not any(n in body for n in _NEEDLES) and not self.profiler:
            self.memory = self.table = None
            return None
        if self.profiler or _PROFILER_TITLE in body:
            return self._profiler(ln)
        if "|" in body and (key := self._memory(ln)):
            return key
        self.memory = None
        if "|" not in body:
            self.table = None
        elif key := self._compile_table(ln):  # a header row is no record alone: it stays open for its rule
            return key
        if "retracing" in body and (m := _TF_RETRACE.search(body)):
            self.add(ln, "recompile", f"line {ln.lineno}: recompiling {m.group(3)} in tf.function; traced anew on "
                                      f"{m.group(1)} of the last {m.group(2)} calls (TensorFlow's warning of "
                                      f"frequent retracing)")
            return "recompile"
        if "Recompiling function" in body and (m := _DYNAMO_TUPLE.search(body)):
            self.add(ln, "recompile", f"line {ln.lineno}: recompiling {m.group(1)} in {m.group(2)}; guard: "
                                      f"{m.group(3)}")
            return "recompile"
        if key := self._alarm(ln):
            return key
        return self._jax(ln)

    def _alarm(self, ln) -> str | None:
        """XLA's slow-operation alarm: its opening line opens a `compile` event, "The operation took D" gives it
        the time taken; the lines of its message in between are the same record (the folded instruction goes into
        the event's detail)."""
        body = ln.body
        self.alarm_left = max(self.alarm_left - 1, 0)
        if m := _XLA_TOOK.search(body):
            secs = _absl_seconds(m.group(1))
            if secs is None:
                return None
            row = self.alarm
            if row is None or row >= len(self.rows):
                if "slow_operation_alarm" not in ln.raw:
                    return None  # "The operation took 3s" of another tool, no alarm before it
                row = self.add(ln, "compile", f"line {ln.lineno}: an XLA operation outlasted its slow-operation alarm")
            self.rows[row]["duration_s"] = secs
            self.rows[row]["detail"] = (self.rows[row]["detail"] + f"; it took {secs:.4g} s")[:300]
            self.alarm, self.alarm_left, self.alarm_what = None, 0, ""
            return "events"
        if m := _XLA_FOLD.search(body):
            limit = _absl_seconds(m.group(1))
            self.alarm = self.add(ln, "compile", f"line {ln.lineno}: XLA constant folding at compile time, taking more "
                                                 f"than {m.group(1)}", np.nan if limit is None else limit)
            self.alarm_left, self.alarm_what = ALARM_LINES, "fold"
            return "events"
        if m := _XLA_SLOW.search(body):
            module = f" of module {m.group(1)}" if m.group(1) else ""
            self.alarm = self.add(ln, "compile", f"line {ln.lineno}: a very slow XLA compilation{module} "
                                                 f"(XLA's compile-time alarm)")
            self.alarm_left, self.alarm_what = ALARM_LINES, ""
            return "events"
        if _XLA_MESSAGE.search(body):
            if "slow_operation_alarm" in body:
                self.alarm_left = max(self.alarm_left, 2)  # a prefix alone: its message starts on the next line
            return "events"
        if (self.alarm_what == "fold" and self.alarm is not None and self.alarm < len(self.rows) and body.strip()
                and (body[:1] in " \t" or "(displaying the full instruction" in body)):
            # the instruction, indented (`  %reduce.8 = f64[200000,10] reduce(...)`, or its name and "(displaying the
            # full instruction incurs a runtime overhead ...)" below XLA's verbose level 4): no other line is it
            row = self.rows[self.alarm]
            instr = body.strip().split(" (displaying the full instruction")[0][:100]
            row["detail"] = (row["detail"] + f"; instruction {instr}")[:300]
            self.alarm_what = ""
            return "events"
        return None

    def _compile_table(self, ln) -> str | None:
        """A Markdown table of compile times: its header row (a compile-time heading), its rule, then a `compile`
        event per row whose compile cell is a duration; anything else ends it."""
        cells = _cells(ln.body)
        if cells is None:
            return None
        t = self.table
        if t is not None and not t["rule"]:
            if len(cells) == len(t["head"]) and all(set(c) <= set("-: ") and c for c in cells):
                t["rule"] = True
                return "events"
            t = self.table = None
        if t is None:
            heads = [i for i, c in enumerate(cells) if compile_column(c)]
            if len(cells) >= 2 and heads:
                units = [_HEAD_UNIT.search(cells[i]) for i in heads]
                self.table = {"head": cells, "cols": heads, "rule": False,
                              "units": [_UNIT_S[u.group(1).lower()] if u else None for u in units]}
            return None  # a header alone is no record: its rule below makes it one
        if len(cells) != len(t["head"]):
            self.table = None
            return None
        # the compile-time column: the first compile heading whose cell is a duration (`compile as % of a step` is not)
        got = next(((c, secs) for c, u in zip(t["cols"], t["units"], strict=True) if (secs := _duration(cells[c], u)) is not None),
                   None)
        if got is None:
            return None
        col, secs = got
        others = "; ".join(f"{h}: {c}" for i, (h, c) in enumerate(zip(t["head"], cells, strict=True)) if i not in (0, col) and c)
        self.add(ln, "compile", f"line {ln.lineno}: compiling {cells[0] or 'a row'} took {cells[col]} "
                                f"({t['head'][col]}){'; ' + others if others else ''} (a table of compile times)", secs)
        return "events"

    def _jax(self, ln) -> str | None:
        body = ln.body
        if m := _JAX_TRACE.search(body):
            key = (ln.rank, _jax_name(m.group(1)))
            self.jax_traced[key] = _seconds(m.group(2))
            self.jax_open.pop(key, None)  # a new trace: the stages that follow are the next compilation's
            return "events"
        if m := _JAX_COMPILING.search(body):
            key = (ln.rank, name := _jax_name(m.group(1)))
            shapes = (m.group(2) or m.group(3) or "").split(". Argument mapping")[0].strip()[:120]
            again = key in self.jax_compiled
            self.jax_compiled.add(key)
            traced = self.jax_traced.pop(key, 0.0)
            self.jax_traced = {k: v for k, v in self.jax_traced.items() if k[0] != ln.rank}  # nested, or never compiled
            detail = (f"line {ln.lineno}: recompiling {name} in jit; compiled again, shapes and types {shapes}" if again
                      else f"line {ln.lineno}: compiling {name} in jit, shapes and types {shapes}")
            self.jax_open[key] = self.add(ln, "recompile" if again else "compile", detail, traced or np.nan)
            return "recompile" if again else "events"
        if m := _JAX_STAGE.search(body):
            row = self.jax_open.get((ln.rank, _jax_name(m.group(1))))
            if row is not None and row < len(self.rows):
                before = self.rows[row]["duration_s"]
                self.rows[row]["duration_s"] = (0.0 if before != before else before) + _seconds(m.group(2))
            return "events"
        return None

    def _profiler(self, ln) -> str | None:
        body = ln.body.rstrip()
        if _PROFILER_TITLE in body:
            self.profiler, self.profiler_row, self.profiler_left = "report", None, PROFILER_PROSE
            self.profiler_breaks, self.profiler_budget = 0, MAX_PROFILER_EVENTS
            return "events"
        if self.profiler == "report" and _PROFILER_HEAD.match(body):
            self.profiler = "table"
            return "events"
        if self.profiler == "table":
            if (m := _PROFILER_ROW.match(body)) and not set(body) <= set("- "):
                n = min(int(m.group(2)), max(self.profiler_budget, 1))  # each row one event at least
                self.profiler_budget -= n
                for _ in range(n):
                    self.profiler_row = self.add(ln, "recompile", f"line {ln.lineno}: recompiling "
                                                 f"{_frame(m.group(1))}; guard: {m.group(3)} (dynamo's "
                                                 f"CompileProfiler: {m.group(2)} recompiles)")
                return "recompile"
            if set(body) <= set("- ") and body.strip():
                return "events"  # tabulate's rule under the header
            if _PROFILER_MORE.match(body) and self.profiler_row is not None:
                return "events"  # a further reason of the same frame
            self.profiler = ""  # the table is the report's last section: a blank line or anything else ends it
            return "events" if not body.strip() else None
        if body == "Recompilation":
            self.profiler_left = PROFILER_PROSE  # its last section's heading
        if body.strip() == _PROFILER_NONE:
            self.profiler = ""  # the report's last line when no frame recompiled
            return "events"
        if _BREAK_HEAD.match(body):
            self.profiler_breaks = len(body)
            return "events"
        if self.profiler_breaks and len(body) == self.profiler_breaks and body[-1:].isdigit():
            return "events"  # a row of the graph-break table, as wide as its header (its count right-aligned)
        self.profiler_left -= 1
        if self.profiler_left < 0:
            self.profiler = ""
            return None
        # the report's headings and prose; an indented line (a graph-break reason's next line) is left to the others
        return "events" if not body.strip() or not body.startswith(" ") else None

    def _memory(self, ln) -> str | None:
        """A box of memory_summary(): its title or count row opens it; the box's rows that follow (_MEM_ROW) are the
        same record up to its closing `|===|` rule (the first one after its `Metric` header), so `| ... |` lines
        after it (pipe-separated step lines) are read by the other scanners."""
        body = ln.body.strip()
        if m := _MEM_TITLE.search(body):
            self.memory, self.memory_rows, self.memory_device = -1, False, int(m.group(1))
            return "events"
        if m := _MEM_HEAD.search(body):
            # its counts are the process's since it started (memory_stats() num_ooms, num_alloc_retries): a summary
            # printed again restates them, so only what rose since the device's last summary is an event
            ooms, retries = int(m.group(1)), int(m.group(2))
            key = (ln.rank, self.memory_device)
            seen_ooms, seen_retries = self.memory_seen.get(key, (0, 0))
            self.memory_seen[key] = (ooms, retries)
            self.memory, self.memory_rows, self.memory_device = -1, False, -1
            new_ooms, new_retries = max(ooms - seen_ooms, 0), max(retries - seen_retries, 0)
            if new_ooms or new_retries:
                kind = "oom" if new_ooms else cause_ids.MEMORY_PRESSURE
                more = "" if (seen_ooms, seen_retries) == (0, 0) else (
                    f" ({new_retries} more cudaMalloc retries, {new_ooms} more CUDA OOMs since its last summary)")
                self.memory = self.add(ln, kind, f"line {ln.lineno}: torch.cuda.memory_summary(): {retries} cudaMalloc "
                                                 f"retries (the caching allocator freed its cache and retried), "
                                                 f"{ooms} CUDA OOMs{more}")
            return "events"
        if self.memory is not None and _MEM_ROW.match(body):
            if body.startswith("|=") and self.memory_rows:
                self.memory = None  # the box's closing rule
                return "events"
            self.memory_rows = self.memory_rows or "Metric" in body
            if self.memory >= 0 and (m := _MEM_ALLOC.match(body)) and self.memory < len(self.rows):
                row = self.rows[self.memory]
                if "allocated" not in row["detail"]:
                    row["detail"] = (row["detail"] + f"; allocated {m.group(1)} now, peak {m.group(2)}")[:300]
            return "events"
        return None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return 0.0
    return value if 0.0 <= value < 1e7 else 0.0


def _absl_seconds(text: str) -> float | None:
    """absl::FormatDuration's text (`2.216622055s`, `8m6.9600373s`, `1h2m`, `150ms`) in seconds; None for other text."""
    m = _ABSL.fullmatch(text.strip())
    if not m or not any(m.groups()):
        return None
    h, mi, v, unit = m.groups()
    scale = _UNIT_S[unit or "s"]
    return int(h or 0) * 3600.0 + int(mi or 0) * 60.0 + float(v or 0.0) * scale


def _cells(body: str) -> list[str] | None:
    """A Markdown table row's cells (`| a | 469 s |` → [a, 469 s]; bold marks dropped); None for another line."""
    line = body.strip()
    if len(line) < 3 or line[0] != "|" or line[-1] != "|" or len(line) > 2000:
        return None
    return [c.strip().strip("*`").strip() for c in line[1:-1].split("|")]


def _duration(cell: str, unit: float | None) -> float | None:
    """A duration cell in seconds: `469 s`, `1.5 min`, `3m2s`, or a bare number under a heading's unit."""
    if (absl := _absl_seconds(cell)) is not None and not re.fullmatch(r"[\d.]+", cell):
        return absl
    m = _DURATION_CELL.fullmatch(cell.replace(",", ""))
    if not m or (m.group(2) is None and unit is None):
        return None
    return float(m.group(1)) * (_UNIT_S[m.group(2).lower()] if m.group(2) else unit)


def _frame(cell: str) -> str:
    """A CompileProfiler row's function cell, `'forward' (2657887092.py:11)` → `forward in 2657887092.py:11`."""
    m = re.fullmatch(r"'?([^'\s]{1,200})'?\s*\(([^()\s]{1,300})\)", cell.strip())
    return f"{m.group(1)} in {m.group(2)}" if m else cell.strip()
