"""Text logs, line by line: every line scanner sees every line of the file, streamed, and the bundle keeps what
each understood.

A line's prefixes (rank, time, level, logger head: line_prefix.py) are read once; a line without a rank takes the
one its path names (`rank3.log`, `rank_03/`, `worker-3`). JSON Lines of flat records too. The scanners:

  steps      step records from the grammar in step_grammar.py (step counter + typed fields)
  nccl       NCCL INFO/WARN lines (with or without `host:pid:tid [dev]`), PyTorch watchdogs (nccl_log.NcclLines)
  recompile  torch._dynamo's TORCH_LOGS=recompiles records (`Recompiling function f in file.py:3` + `triggered by
             the following guard failure(s):` + `- 0/0: <guard>`), `hit config.recompile_limit`, graph breaks
             → `recompile` events with the failing guard and time; runtime_logs.py, first: TF retracing, JAX
             compile logs, dynamo 2.0 records and its CompileProfiler report, torch.cuda.memory_summary()
  events     checkpoint save / evaluation / validation / garbage-collection markers → events tied to the last
             step seen on that rank (a run of evaluation lines is one event, until its first line comes again);
             a step logged again on its rank → a `restart` event (step_log/reruns.py); lines that name a cause
             (event_lexicon.py: ECC, Xid, OOM, NCCL timeouts, CUDA-graph re-records, ...)
  profiler   torch.profiler's key_averages().table() text, Lightning's profiler reports and cProfile / pstats
             listings → rows summarised in the file's meta (profiler_table.py, pstats_text.py)
  nccl_tests nccl-tests result tables (all_reduce_perf ...) → busbw per size in the file's meta (nccl_tests.py)
  serving    a serving engine's scheduler lines, preemptions, CUDA-graph captures → meta (serving_metrics.py)
  resumes    a trainer's resume and a launcher's worker-group restart → `resume` / `worker_restart` events with the
             steps computed again and the time without a step (restart_lines.py)

Lines no scanner understood are counted as blank, traceback, source code, banner, or unread (the first few kept);
`bundle.meta["lines"][file]` holds the counts (`playbook info`). A file is refused only when no line is understood.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from playbook.core.errors import UnknownFormatError
from playbook.model import schema
from playbook.readers import (
    event_lexicon,
    marker_sections,
    nccl_log,
    nccl_tests,
    profiler_table,
    rank_reports,
    restart_lines,
    textio,
)
from playbook.readers.line_prefix import LOUD, Prefix, rank_from_path, stamp_ns
from playbook.readers.runtime_logs import RuntimeLines
from playbook.readers.serving_metrics import ServingLines, store
from playbook.readers.step_log import epoch_length
from playbook.readers.step_log import epochs as step_epochs
from playbook.readers.step_log import grammar as step_grammar
from playbook.readers.step_log.vocab import blank_options

FORMAT = "text log (every line scanned: steps, NCCL, recompiles, events)"
NAT = step_grammar.NAT
EXAMPLES_KEPT = 5

_TRACE_START = re.compile(r"^\s*Traceback \(most recent call last\):|^\s*During handling of the above exception|"
                          r"^\s*The above exception was the direct cause")
_TRACE_LINE = re.compile(r"^\s+File \"|^\s{2,}\S|^\s*\^+\s*$|^\s*~+\^*~*\s*$")
_EXC_LINE = re.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Warning|Failure)\b:?")
_CODE = re.compile(r"^\s*(?:import \w|from [\w.]+ import |def \w+\s*\(|class \w+[(:]|@\w|#|if .*:\s*$|elif |"
                   r"else\s*:|for .* in .*:\s*$|while .*:\s*$|with .*:\s*$|try\s*:|except\b|finally\s*:|return\b|"
                   r"raise\b|yield\b|assert |print\(|pass\s*$|break\s*$|continue\s*$|[\w.\[\]'\"]+\s*[+\-*/]?=\s*\S|"
                   r"[\w.]+\(.*\)\s*(?:#.*)?$|[)\]}]+[,:]?\s*$|\"\"\"|''')")
_BANNER = re.compile(r"^\s*[=\-*#~_+<>|.:]{3,}.*$|^[^\w]*$")

_RECOMPILING = re.compile(r"Recompiling function (\S+) in (\S+)")
_GUARD = re.compile(r"^\s*-\s*(?:\d+/\d+:\s*)?(.+?)\s*$")
_LIMIT = re.compile(r"hit config\.(recompile_limit|cache_size_limit|accumulated_recompile_limit)|"
                    r"recompile_limit|cache_size_limit reached", re.IGNORECASE)
_LIMIT_TAIL = ("To log all recompilation reasons", "To diagnose recompilation issues")
_GRAPH_BREAK = re.compile(r"Graph break(?: in user code)?(?: at| from| \(|:)\s*(.*)$")
_DYNAMO_TAG = re.compile(r"^(?:\[[\d/]+\]\s*)?(?:\[__\w+\]\s*)?")
# torch's compile id heading a TORCH_LOGS line (torch/_guards.py CompileId: "[frame/attempt]", a restart
# "[0/3_1]"), on a compiler's line: attempt 1, 2, ... of a frame is that frame compiled again
_COMPILE_ID = re.compile(r"^\[(\d{1,6})/(\d{1,6})(?:_\d{1,4})?\]\s+(?=.{0,200}?(?:torch|dynamo|inductor|create_env\b|"
                         r"create_symbol\b|produce_guards\b|set_replacement\b))")
MAX_COMPILE_IDS = 100_000  # compile ids remembered per file
# torch elastic's ChildFailedError summary (torch/distributed/elastic/multiprocessing/errors/__init__.py): the
# failure's "time : 2025-05-21_15:43:03", "host : node7", "rank : 0 (local_rank: 0)" before its "exitcode : -9"
_FAILURE_FIELD = re.compile(r"^\s{1,8}(time|host|rank)\s{1,12}: (\S{1,200})")
# its heading of the failure it saw first, listed after the others ("Failures:" are often the ranks it then
# stopped); the event read below it carries ROOT_CAUSE, which the run's end prefers (evidence/from_events.run_end)
_ROOT_CAUSE = re.compile(r"^\s{0,8}Root Cause \(first observed failure\):")
ROOT_CAUSE = " [the launcher's root cause: its first observed failure]"


class Line:
    """One line as the scanners see it: number, text after the prefix, rank (-1 unknown), time (ns UTC or NAT)."""

    __slots__ = ("lineno", "raw", "body", "rank", "time", "evaluating", "progress", "host", "uptime")

    def __init__(self, lineno: int, raw: str, body: str, rank: int, time: int, host: str = "",
                 uptime: float | None = None):
        self.lineno, self.raw, self.body, self.rank, self.time = lineno, raw, body, rank, time
        self.host, self.uptime = host, uptime  # a system log's host ("" for the file's), seconds since boot
        self.evaluating = False
        self.progress = False  # a training bar before its end (set by the step scanner): its val_loss is stale


class _EventLines:
    """Checkpoint / eval / GC markers, and dynamo recompiles and graph breaks, as event rows."""

    def __init__(self, steps: step_grammar.StepLines):
        self.steps = steps
        self.rows: list[dict] = []
        # (kind, rank) -> (row, step records when it opened, its first line without numbers)
        self.open_eval: dict[tuple, tuple[int, int, str]] = {}
        self.in_code = False  # the line before was source code (a script printing itself): its comments are no markers
        self.ended_eval: set[tuple] = set()  # (kind, rank) of sections an end line closed (MLPerf eval_stop)
        self.recompile: int | None = None  # row index of a recompile still collecting its guard lines
        self.compile_ids: set[tuple[str, str]] = set()  # (frame, attempt) of the compile ids seen
        self.counts = {"events": 0, "recompile": 0}
        self.failure: dict[str, str] = {}  # the fields of a ChildFailedError summary read so far
        self.stalls = rank_reports.StallLines()
        self.timings, self.timing_row = rank_reports.RankTimings(), -1
        self.straggler_reports = rank_reports.StragglerReports()
        self.root_cause = False  # under a ChildFailedError summary's "Root Cause" heading
        self.runtime = RuntimeLines(self._add, self.rows)
        self.resumes = restart_lines.ResumeLines(self._add, NAT)  # resume / worker-restart statements
        self.previous = NAT  # the time of this line rank's last time-stamped line a scanner read

    def _add(self, ln: Line, kind: str, detail: str, duration: float = np.nan, host: str = "") -> int:
        """An event row; `host` "" for the file's host."""
        # "step 10: val loss ...": the line's own step; an evaluation's own counter (`| Test ... Step=20`) counts
        # its batches, not the training step
        own = step_grammar.KEYWORD.search(ln.body) if kind != "recompile" and not ln.evaluating else None
        self.rows.append({"time": ln.time, "host": host, "rank": ln.rank,
                          "step": int(own["i"]) if own and len(own["i"]) < 18 else self.steps.last_step.get(ln.rank, -1),
                          "kind": kind,
                          "duration_s": duration,
                          "detail": detail[:300],
                          "epoch": self.steps.epochs.current.get(ln.rank, -1)})  # the step when epochs are the rows
        return len(self.rows) - 1

    def feed_recompile(self, ln: Line) -> bool:
        cid = _COMPILE_ID.match(ln.body.strip())
        body = _DYNAMO_TAG.sub("", ln.body.strip())
        if cid and (cid[1], cid[2]) not in self.compile_ids and len(self.compile_ids) < MAX_COMPILE_IDS:
            self.compile_ids.add((cid[1], cid[2]))
            if cid[2] != "0" and "Recompiling function" not in body:  # the recompiles log names it below
                limit = bool(_LIMIT.search(body))  # torch's warning that the frame hit its limit: its lines follow
                row = self._add(ln, "recompile", f"line {ln.lineno}: " + (body if limit else (
                    f"frame {cid[1]} compiled again (compile id [{cid[1]}/{cid[2]}])")))
                self.recompile = row if limit else None
                self.counts["recompile"] += 1
                return True
        if cid and "Recompiling function" not in body and self.recompile is None:
            return True  # the compiler's own chatter within a compile id seen already: understood, no event
        if self.recompile is not None:
            row = self.rows[self.recompile]
            if body.startswith("triggered by the following guard failure"):
                return True
            if body.startswith("guard ") and body.endswith("failures:"):
                return True  # recompiles_verbose: "guard 0 failures:"
            if (g := _GUARD.match(body)) and body.lstrip().startswith("-"):
                if "guard:" not in row["detail"]:
                    row["detail"] = (row["detail"] + f"; guard: {g.group(1)}")[:300]
                return True
            # the rest of the limit warning (torch/_dynamo/convert_frame.py: "torch._dynamo hit config.%s (%s)\n
            #    function: %s\n   last reason: %s\nTo log all recompilation reasons, use TORCH_LOGS=...\nTo
            # diagnose recompilation issues, see %s."), each line behind the logger's prefix: one record
            if body.startswith(("function:", "last reason:")):
                row["detail"] = (row["detail"] + "; " + body)[:300]
                return True
            if body.startswith(_LIMIT_TAIL):
                return True
            self.recompile = None
        if "Recompiling function" in body and (m := _RECOMPILING.search(body)):
            self.recompile = self._add(ln, "recompile", f"line {ln.lineno}: recompiling {m.group(1)} in "
                                                        f"{m.group(2)}")
            self.counts["recompile"] += 1
            return True
        if "limit" in body and _LIMIT.search(body):
            self.recompile = self._add(ln, "recompile", f"line {ln.lineno}: {body}")
            self.counts["recompile"] += 1
            return True
        if "recompil" in body.lower() and "torch" in body:
            self._add(ln, "recompile", f"line {ln.lineno}: {body}")
            self.counts["recompile"] += 1
            return True
        if "Graph break" in body and (m := _GRAPH_BREAK.search(body)):
            self._add(ln, "recompile", f"line {ln.lineno}: graph break {m.group(1)}")
            self.counts["recompile"] += 1
            return True
        return False

    def feed_lexicon(self, ln: Line) -> bool:
        """A line the lexicon names a cause for (event_lexicon.LEXICON) → an event of its kind, on the host, rank
        and time the line names (a system log's host, srun's "node7: task 3", Slurm's "CANCELLED AT ...", a
        ChildFailedError summary's fields), else the line's own."""
        if (f := _FAILURE_FIELD.match(ln.body)) and f.group(1) not in self.failure:
            self.failure[f.group(1)] = f.group(2)  # kept for the summary's exitcode line; not an event itself
            return False
        if _ROOT_CAUSE.match(ln.body):
            self.root_cause = True
            return False
        hit = event_lexicon.match(ln.body)
        if hit is None:
            self.failure.clear()
            return False
        rank, host, at = hit.rank, hit.host, hit.at
        root = ""
        if self.failure and ln.body.lstrip().startswith("exitcode"):
            rank = int(r) if (r := self.failure.get("rank", "")).isdigit() and len(r) < 10 else rank
            host, at = self.failure.get("host", host), self.failure.get("time", at)
            root, self.root_cause = (ROOT_CAUSE if self.root_cause else ""), False
        self.failure.clear()
        if ln.rank < 0 and rank >= 0:
            ln.rank = rank  # torch elastic's "failed ... local_rank: 3": the rank the line is about
        if at and (t := stamp_ns(at)) != NAT:
            ln.time = t
        # an NCCL line names the host that printed it ("node3:77:90 [1] NCCL WARN ..."): a file may gather many
        nccl = nccl_log.PREFIX_RE.search(ln.body) if "NCCL" in ln.body else None
        boot = f" [{ln.uptime:.6f} s after boot]" if ln.uptime is not None else ""
        # a load that states its seconds (a Tacotron feeder's `Generated 32 batches ... in 126.923 sec`) lasted them
        took = event_lexicon.stated_duration(ln.body) if hit.kind == "data_load" else np.nan
        self._add(ln, hit.kind, f"line {ln.lineno}: {ln.body.strip()}"[:280 - len(root)] + boot + root, took,
                  host=host or (nccl["host"] if nccl else "") or ln.host)
        self.counts["events"] += 1
        return True

    def feed_stall(self, ln: Line) -> bool:
        """A stall report's line (readers/rank_reports.py) → a `collective_stall` event on each rank it names."""
        named = self.stalls.feed(ln.raw, ln.body)
        for rank, what in named or ():
            row = self._add(ln, "collective_stall", f"line {ln.lineno}: rank {rank} {what}: the other ranks wait "
                                                    f"for it in a collective ({ln.body.strip()[:160]})")
            self.rows[row]["rank"] = rank
            self.counts["events"] += 1
        return named is not None

    def feed_timings(self, ln: Line) -> bool:
        """A list of one time per rank (readers/rank_reports.py) → one `rank_timings` event, updated per line."""
        got = self.timings.feed(ln.lineno, ln.body)
        if isinstance(got, tuple):
            first, start, text = got
            if start:
                self.timing_row = self._add(ln, "rank_timings", "")
                self.counts["events"] += 1
            self.rows[self.timing_row]["detail"] = f"line {first}: {text}"
        return got is not None

    def _kind(self, ln: Line) -> str | None:
        # a command line's options configure evaluation and saving (`--eval-interval 100`, `--save ckpt/`): no event
        body = blank_options(ln.body) if "--" in ln.body else ln.body
        low = body.lower()
        if ("checkpoint" in low or "sav" in low or "snapshot" in low) and event_lexicon.CHECKPOINT.search(body):
            return "checkpoint"
        if ln.evaluating or (not ln.progress and ("eval" in low or "val" in low or "sanity" in low or "test" in low)
                             and event_lexicon.eval_marker(body)):
            return "eval"
        if "gc" in low and event_lexicon.GC.search(body):
            return "gc"
        return None

    def feed_marker(self, ln: Line) -> bool:
        """Checkpoint / evaluation / GC marker lines → events; the lines of one evaluation or checkpoint section
        (no training step between them) are one event from its first to its last time stamp. An evaluation's start
        line opens a section on its rank (steps.sections), whose progress bars are the evaluation's; inside it any
        time-stamped line extends the event, and an end line closes it."""
        body = ln.body
        if self.in_code and _CODE.match(body):
            return False  # modded-nanogpt's printed source: `# ------ VALIDATION SECTION ------` is no evaluation
        kind = self._kind(ln)
        in_section = ln.rank in self.steps.sections
        if kind is None and not (in_section and ln.time != NAT):
            return False
        if kind == "eval" and not ln.evaluating and not in_section and event_lexicon.EVAL_START.search(body):
            self.steps.sections[ln.rank] = None
        ends = in_section and (kind == "eval" or kind is None) and event_lexicon.EVAL_END.search(body)
        if ends:
            self.steps.sections.pop(ln.rank, None)
        duration = event_lexicon.stated_duration(body) if kind else np.nan
        if kind in ("eval", "checkpoint", None):
            key = (kind or "eval", ln.rank)
            open_ = self.open_eval.get(key)
            # an evaluation's end (MLPerf's eval_stop) lets the next start line open another, steps between or not
            again = key in self.ended_eval and event_lexicon.EVAL_START.search(body)
            # the section's first line again (MLPerf BERT's eval_accuracy, with no step record between): a new one
            again = again or (open_ is not None and kind == "eval" and not ln.evaluating and
                              open_[2] == _NUMBER.sub("#", body))
            # a save whose first line reported it done with its seconds was whole: the next save is another
            again = again or (open_ is not None and kind == "checkpoint" and _whole(self.rows[open_[0]]))
            if open_ is not None and open_[1] == self.steps.timed and not again:  # the section goes on
                row = self.rows[open_[0]]
                # spanned: the seconds are the section's lines' time stamps, not a stated duration
                row["spanned"] = not (np.isfinite(duration) and kind == "checkpoint") and ln.time != NAT and \
                    row["time"] != NAT
                if np.isfinite(duration) and kind == "checkpoint":
                    row["duration_s"] = duration
                elif row["spanned"]:
                    row["duration_s"] = max(0.0, (ln.time - row["time"]) / 1e9)
                elif np.isfinite(duration):
                    row["duration_s"] = duration
                if ends:
                    self.ended_eval.add(key)
                return True
            if kind is None:
                return False
            self.ended_eval.discard(key)
            self.open_eval[(kind, ln.rank)] = (self._add(ln, kind, f"line {ln.lineno}: {body.strip()}", duration),
                                               self.steps.timed, _NUMBER.sub("#", body))
            self.rows[-1]["previous"] = self.previous  # where a done line's save can have begun at the earliest
        else:
            self._add(ln, kind, f"line {ln.lineno}: {body.strip()}", duration)
        self.counts["events"] += 1
        return True


_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _whole(row: dict) -> bool:
    """A checkpoint section opened by a line that reported the save done and stated its seconds."""
    return np.isfinite(row["duration_s"]) and not row.get("spanned") and marker_sections.reports_done(row["detail"])


def _noise(body: str, in_trace: bool) -> tuple[str, bool]:
    """(class, still inside a traceback) for a line no scanner understood."""
    if not body.strip():
        return "blank", in_trace
    if _TRACE_START.match(body):
        return "traceback", True
    if in_trace:
        if _TRACE_LINE.match(body):
            return "traceback", True
        if _EXC_LINE.match(body):
            return "traceback", False
    if _EXC_LINE.match(body) and ":" in body[:120]:
        return "traceback", False
    if _CODE.match(body):
        return "code", False
    if _BANNER.match(body):
        return "banner", False
    return "unread", False


def _feed(ln: Line, nccl, events, steps, counts: dict[str, int], nccl_text: str) -> bool:
    """Offer one line to every scanner; whether one understood it (counted in `counts`)."""
    if key := events.runtime.feed(ln):  # framework-runtime records first (runtime_logs.py)
        counts[key] += 1
        return True
    if events.resumes.feed(ln):  # a trainer's resume or a launcher's restart: no step record, whatever its numbers
        counts["events"] += 1
        return True
    understood = False
    if nccl.feed(ln.lineno, nccl_text, ln.rank):
        counts["nccl"] += 1
        understood = True
    if events.feed_recompile(ln):
        counts["recompile"] += 1
        understood = True
    if not understood and events.feed_stall(ln):
        counts["events"] += 1
        understood = True
    if not understood and events.straggler_reports.feed(ln.body):  # Megatron's min/max across ranks
        counts["straggler reports"] += 1
        understood = True
    if not understood and steps.feed(ln):
        counts["steps"] += 1
        understood = True
        events.resumes.stepped(ln, steps.last_step.get(ln.rank))
    if not understood and events.feed_timings(ln):  # a step line is the step grammar's, whatever its words
        counts["events"] += 1
        understood = True
    if events.feed_lexicon(ln) and not understood:
        counts["events"] += 1
        understood = True
    if events.feed_marker(ln) and not understood:  # a marker on a step line is counted as a step line
        counts["events"] += 1
        understood = True
    return understood


def scan_steps(lines, tz: str = "UTC") -> dict:
    """The step scanner alone over an iterable of lines: step_grammar.StepLines.result() (numpy arrays, no
    tables); for tests and tools that need the grammar's reading quickly."""
    prefix = Prefix(tz)
    steps = step_grammar.StepLines()
    for lineno, raw in enumerate(lines, start=1):
        if raw.strip():
            rank, t, body = prefix.split(raw)
            try:
                steps.feed(Line(lineno, raw, body, rank, t))
            except (ValueError, OverflowError):  # a number past int()'s 4300 digits: not a step line
                continue
    return steps.result()


def scan(path: str | Path, tz: str = "UTC", lines=None) -> schema.Bundle:
    """Run every line scanner over the lines of `path` (or the given iterable of lines, named `path`)."""
    src = str(path)
    host = textio.host_from_path(path)
    prefix = Prefix(tz, default_rank=rank_from_path(src))
    steps = step_grammar.StepLines()
    nccl = nccl_log.NcclLines(src)
    events = _EventLines(steps)
    tables = profiler_table.ProfilerTables()
    perf = nccl_tests.NcclTestsTables()
    serving = ServingLines()
    counts = {"steps": 0, "nccl": 0, "recompile": 0, "events": 0, "profiler": 0, "nccl_tests": 0,
              "straggler reports": 0, "serving": 0}
    noise = {"blank": 0, "traceback": 0, "code": 0, "banner": 0, "unread": 0}
    examples: list[str] = []
    loud: list = [0, None]  # ERROR/WARNING lines no scanner understood, and the first of them
    in_trace = False
    since_code = 3  # non-blank lines since the last source-code line
    total = 0
    last_step_line = 0  # the line of the last step record: what a run-ending event must come after
    # rank -> the time of its last time-stamped line a scanner read (a step, an evaluation's or other section's line):
    # a save reported done began after it (a line no scanner reads, a monitor's, may print during the save)
    last_time: dict[int, int] = {}
    notes: list[str] = []  # the decoder's one-line notes (Latin-1 bytes, NULs dropped, a truncated stream)
    for lineno, raw in enumerate(lines if lines is not None else textio.iter_lines(path, notes=notes), start=1):
        total += 1
        if not raw.strip():
            noise["blank"] += 1
            continue
        rank, t, body = prefix.split(raw)
        events.previous = last_time.get(rank, NAT)
        ln = Line(lineno, raw, body, rank, t, prefix.host, prefix.uptime)
        if tables.feed(body):
            counts["profiler"] += 1
            continue
        if perf.feed(body):
            counts["nccl_tests"] += 1
            continue
        if serving.feed(lineno, body, None if t == NAT else int(t), t != NAT or bool(prefix.level), raw):  # serving
            counts["serving"] += 1
            continue
        events.in_code = since_code <= 2  # a source line at most 2 lines up (one it cannot name may sit between)
        try:
            before = counts["steps"]
            understood = _feed(ln, nccl, events, steps, counts, body if prefix.tagged else raw)
            last_step_line = lineno if counts["steps"] > before else last_step_line
        except (ValueError, OverflowError):  # a number past int()'s 4300 digits: damage, not a record
            noise["unread"] += 1
            if len(examples) < EXAMPLES_KEPT:
                examples.append(f"line {lineno}: a number too long to read")
            continue
        since_code = 3 if understood else since_code + 1
        if understood and t != NAT:
            last_time[rank] = t
        if understood:
            in_trace = False
            continue
        kind, in_trace = _noise(body, in_trace)
        since_code = 0 if kind == "code" else since_code
        noise[kind] += 1
        if kind == "unread" and len(examples) < EXAMPLES_KEPT:
            examples.append(f"line {lineno}: {body.strip()[:100]}")
        if prefix.level in LOUD or event_lexicon.LOUD_TEXT.match(body):
            loud[0] += 1
            loud[1] = loud[1] or f"{Path(src).name}:{lineno}: {body.strip()[:120]}"
    events.resumes.close()
    bundle = _bundle(src, host, total, steps, nccl, events, counts, noise, examples, tables.summary(), perf.summary(),
                     serving.summary())
    if loud[0]:
        bundle.warnings.append(f"{src}: {loud[0]:,} ERROR/WARNING line{'s' * (loud[0] != 1)} not understood "
                               f"(first: {loud[1]})")
    bundle.meta["lines"][src].update(structure(bundle, prefix, loud[0]), last_step_line=last_step_line)
    if prefix.undated:
        bundle.warnings.append(f"{src}: {prefix.undated}")
    bundle.warnings.extend(notes)
    return bundle


def structure(bundle: schema.Bundle, prefix: Prefix, loud: int) -> dict:
    """What `playbook info` shows of a text log's structure: ranks (and where they came from), phases, the
    evaluation / checkpoint sections (count, seconds), event kinds, and the ERROR/WARNING lines left unexplained."""
    steps, ev = bundle.steps, bundle.events
    ranks = sorted({int(r) for r in steps["rank"]} | {int(r) for r in ev["rank"]})
    sections = {}
    for kind in ("eval", "checkpoint"):
        part = ev[ev["kind"] == kind]
        if len(part):
            known = part["duration_s"].dropna()
            sections[kind] = {"count": int(len(part)), "seconds": round(float(known.sum()), 3) if len(known) else None}
    return {"ranks": ranks,
            "rank_from": ("path" if prefix.default_rank >= 0 and not prefix.kinds.get("rank prefix")
                          else "line prefixes" if ranks and ranks != [-1] else None),
            "prefixes": dict(sorted(prefix.kinds.items())),
            "phases": sorted(set(steps["phase"].astype(str)) - {"step"}),
            "sections": sections,
            "events": {str(k): int(v) for k, v in ev["kind"].astype(str).value_counts().items()},
            "loud_unread": loud}


def _bundle(src, host, total, steps, nccl, events, counts, noise, examples, profiler=None, perf=None, served=None):
    bundle = schema.Bundle(inputs=[src])
    res = steps.result()
    if res.get("step") is not None and len(res["step"]):
        n = len(res["step"])
        parts = {"start": [res["start"]], "rank": [res["rank"]], "step": [res["step"]],
                 "phase": [np.full(n, "step", dtype=object)], "duration_s": [res["duration"]],
                 "tokens": [res["tokens"]], "work": [res["work"]]}
        for phase, values in res["phases"].items():
            ok = np.isfinite(values)
            parts["start"].append(res["start"][ok])
            parts["rank"].append(res["rank"][ok])
            parts["step"].append(res["step"][ok])
            parts["phase"].append(np.full(int(ok.sum()), phase, dtype=object))
            parts["duration_s"].append(values[ok])
            parts["tokens"].append(np.full(int(ok.sum()), np.nan))
            parts["work"].append(np.full(int(ok.sum()), np.nan))
        data = {k: np.concatenate(v) for k, v in parts.items()}
        start = data.pop("start")
        data["time"] = pd.to_datetime(np.where(start == NAT, np.datetime64("NaT"), start.view("datetime64[ns]")),
                                      utc=True)
        data["host"] = host
        data["source"] = src
        bundle.steps = schema.steps_frame(data)
        if res.get("chosen") == step_epochs.ROWS:  # the file's records are its epochs
            bundle.meta[schema.RECORD_UNITS] = {src: "epoch"}
        elif epoch_n := epoch_length.steps_per_epoch(res["step"], res.get("pos")):
            bundle.meta[schema.EPOCH_STEPS] = {src: epoch_n}
        if res["windowed"]:
            widths = np.diff(np.unique(res["step"])) if n > 1 else np.array([1])  # ranks share their steps
            every = int(np.median(widths)) if len(widths) else 1
            bundle.warnings.append(f"{src}: {n} step times are means over logging windows (typically {every} "
                                   f"step{'s' if every != 1 else ''}), from the timestamps of consecutive log lines; "
                                   "a one-step stall is spread over its window")
        elif steps.tqdm_lines and res["chosen"] in ("(it/s)", "(s/it)"):
            kept = "elapsed clock" in (res["how"] or "")  # bar_rate.py undid the smoothing: each refresh's own time
            bundle.warnings.append(f"{src}: {n} step times come from progress-bar rates ("
                                   + ("each refresh's own, the bar's smoothing undone" if kept else
                                      "tqdm's smoothed average per update") + "), not from exact per-step timings")
    if res.get("zero_rate"):  # a slow step, not a missing one: counted, never dropped without a word
        bundle.warnings.append(f"{src}: {res['zero_rate']} step line(s) print {res['chosen']}=0, a rate under its "
                               "printed digits (a step slower than the printout can say): left untimed")
    _stage_events(res, events.rows)
    for rank, step, lineno, t in res.get("restarts", ()):
        events.rows.append({"time": t, "host": "", "rank": rank, "step": step, "kind": "restart", "duration_s": np.nan,
                            "detail": f"line {lineno}: step {step} logged again (the run restarted into this log)"})
    if events.rows:
        ev = events.rows
        if res.get("chosen") == step_epochs.ROWS:  # the records are epochs: so are the events' steps
            for r in ev:
                r["step"] = r.get("epoch", r["step"])
        times = np.array([r["time"] for r in ev], dtype=np.int64)
        bundle.events = schema.events_frame({
            "time": pd.to_datetime(np.where(times == NAT, np.datetime64("NaT"), times.view("datetime64[ns]")),
                                   utc=True),
            "host": [r["host"] or host for r in ev], "rank": [r["rank"] for r in ev], "step": [r["step"] for r in ev],
            "kind": [r["kind"] for r in ev], "duration_s": [r["duration_s"] for r in ev],
            "detail": [r["detail"] for r in ev], "source": src})
        windowed = res.get("windowed") or (steps.tqdm_lines and res.get("chosen") in ("(it/s)", "(s/it)"))
        began = marker_sections.since_training(
            bundle, every_step=not windowed, previous=np.array([r.get("previous", NAT) for r in ev], dtype=np.int64),
            spanned=np.array([r.get("spanned", False) for r in ev], dtype=bool))
        marker_sections.until_training(bundle)
        if len(bundle.steps) and windowed:
            marker_sections.in_windows(bundle)
        elif len(bundle.steps):
            marker_sections.after_last_step(bundle, began)
    frame, skips, stats = nccl.result()
    if len(frame):
        bundle.nccl = frame
        bundle.meta["nccl_log"] = {src: stats}
        w = skips.warning(rows_read=len(frame))
        if w:
            bundle.warnings.append(w)
    understood = sum(counts.values())
    bundle.meta["lines"] = {src: {
        "lines": total, "understood": {k: v for k, v in counts.items() if v}, "step_rows": int(len(bundle.steps)),
        "step_field": res.get("how"), "markers": dict(steps.markers.most_common(5)),
        "metric_lines": steps.metric_lines, "eval_lines": steps.eval_lines,
        "skipped": {k: v for k, v in noise.items() if v and k != "unread"}, "unread": noise["unread"],
        "unread_examples": examples, **({"profiler": profiler} if profiler else {}),
        **({"nccl_tests": perf} if perf else {}), **({"stated": res["stated"]} if res.get("stated") else {}),
        **({"straggler_reports": reports} if (reports := events.straggler_reports.summary()) else {})}}
    if reports:
        bundle.meta[f"{schema.STRAGGLER_REPORTS}{src}"] = reports
    if res.get("stated") and len(bundle.steps):  # the device's efficiency as the step lines state it
        bundle.meta[f"{schema.STATED_EFFICIENCY}{src}"] = res["stated"]
    if profiler:  # the same summary where the analyses look for reader summaries (schema.SUMMARY_META_PREFIXES)
        bundle.meta[f"{profiler_table.META_PREFIX}{src}"] = profiler
    if perf:
        bundle.meta[f"{nccl_tests.META_PREFIX}{src}"] = perf
    store(bundle, src, served)  # a serving engine's scheduler records (serving_metrics.py), if any
    if not understood and not steps.metric_lines and not steps.eval_lines and bundle.is_empty():
        from playbook.readers import detect

        raise UnknownFormatError(f"{src}: not telemetry this playbook can read (looks like "
                                 f"{detect.describe(src)}; no line of its {total} understood)")
    if bundle.is_empty() and not profiler and not perf:
        from playbook.readers import detect

        rates = sorted({k for k, r in steps.field_role.items() if r[0] in ("sample_rate", "token_rate")})
        why = (f": its step lines state a rate ({', '.join(rates[:3])}) and no step time, and a rate gives seconds "
               "only with the work per step — log the batch size (`batch_size: 32`) or time-stamp the lines") \
            if rates else ""
        raise UnknownFormatError(f"{src}: not telemetry this playbook can read (looks like {detect.describe(src)}; "
                                 f"of its {total} lines, {understood} understood without a step time, NCCL line "
                                 f"or training event){why}")
    return bundle


def _stage_events(res: dict, rows: list[dict]) -> None:
    """An evaluation or checkpoint timed as a stage of a step (verl's `timing_s/testing`, `timing_s/save_checkpoint`)
    is also an event at that step, with that time (s), unless a marker line already gave one there."""
    for kind in ("eval", "checkpoint"):
        values = res.get("phases", {}).get(kind)
        if values is None:
            continue
        seen = {(r["rank"], r["step"]) for r in rows if r["kind"] == kind}
        for i in np.flatnonzero(np.isfinite(values) & (values > 0)):
            step, rank = int(res["step"][i]), int(res["rank"][i])
            if (rank, step) not in seen:
                rows.append({"time": int(res["start"][i]), "host": "", "rank": rank, "step": step, "kind": kind,
                             "duration_s": float(values[i]), "detail": f"{kind} timed inside step {step}: "
                                                                       f"{values[i]:.3f} s"})


def sniff(head: str) -> bool:
    """Any text that is not a JSON document or binary data: the line scanners decide line by line."""
    if not head.strip():
        return False
    bad = head.count("\ufffd") + head.count("\x00")
    if bad > max(4, len(head) // 50):
        return False
    # a Python repr (`{'key': ...}`, a list of them as SageMaker's rule_job_summary() prints): single quotes, not JSON
    repr_ = re.match(r"\s*\[?\s*\{'", head)
    if textio.looks_like_json(head) and not repr_ and not _json_lines(head):
        return False
    return True


def _json_lines(head: str) -> bool:
    """True when the text is JSON Lines of flat records (LLaMA-Factory's trainer_log.jsonl, a metrics dump):
    its first line is a whole JSON object by itself, which a pretty-printed document's `{` is not."""

    line = head.lstrip().split("\n", 1)[0].strip()
    try:
        return isinstance(textio.json_loads(line), dict)
    except ValueError:
        return False


def read(path: str | Path, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read a text log with every line scanner (see the module docstring)."""
    return scan(path, tz=tz)
