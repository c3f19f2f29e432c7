"""Text logs, line by line: every line scanner sees every line of the file, streamed, and the bundle keeps what
each understood.

A line's prefix is read once: torchrun's `[rank3]:` / `[default3]:`, DeepSpeed's `[Rank 3]`, a timestamp (ISO
`2024-01-15 10:00:01,123` with or without brackets, after a short logger tag such as `[titan]`, `01/15/2024
10:00:01` of logging's `%m/%d/%Y` format (or rich's `%m/%d/%y`), glog's `I0115 10:00:30.123456 1234 file.py:12]`);
terminal colour escapes are dropped first. JSON Lines of flat records are scanned too. Then the scanners:

  steps      step records from the grammar in step_grammar.py (step counter + typed fields)
  nccl       NCCL INFO/WARN lines with or without the `host:pid:tid [dev]` prefix, PyTorch watchdog timeouts
             (nccl_log.NcclLines)
  recompile  torch._dynamo's TORCH_LOGS=recompiles records (`Recompiling function f in file.py:3` + `triggered by
             the following guard failure(s):` + `- 0/0: <guard>`), `hit config.recompile_limit`, graph breaks
             → `recompile` events with the failing guard and time
  events     checkpoint save / evaluation / validation / garbage-collection markers → events tied to the last
             step seen on that rank (a run of evaluation lines is one event)

Lines no scanner understood are classified and counted: blank, traceback, source code, banner, or unread (the first
few kept as examples); `bundle.meta["lines"][file]` holds the counts (shown by `playbook info`). A file is refused
only when no line is understood. Memory: one line at a time plus the rows kept.
"""

from __future__ import annotations

import calendar
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from playbook import schema
from playbook.errors import UnknownFormatError
from playbook.readers import nccl_log, step_grammar, textio

FORMAT = "text log (every line scanned: steps, NCCL, recompiles, events)"
NAT = step_grammar.NAT
EXAMPLES_KEPT = 5

# torchrun's [rank3]: / [default3]:, mpirun --tag-output's [1,3]<stdout>:, srun --label's "3: "
_RANK_PREFIX = re.compile(r"^\s*(?:\[(?:rank|default|r)\s*(\d+)\]\s*:?|\[\d+,(\d+)\]<std(?:out|err)>:|(\d{1,5}):(?= ))"
                          r"\s*", re.IGNORECASE)
_RANK_INLINE = re.compile(r"\[Rank\s+(\d+)\]")


def _rank(digits: str) -> int:
    """A rank prefix's number; -1 (unknown) beyond int32, where torch.distributed's ranks live (a 20-digit number
    in brackets is an id, and would not fit the int64 rank column)."""
    return int(digits) if len(digits) < 10 else -1


_ISO = re.compile(r"^\s*+\[?\s*+(\d{4})[-/](\d{2})[-/](\d{2})[ T,](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\s*"
                  r"(Z|[+-]\d{2}:?\d{2})?\s*\]?\s*")
_TAGGED = re.compile(r"^\s*\[[\w.-]{1,20}\]\s*(?=\d{4}[-/]\d{2}[-/]\d{2}[ T,]\d)")
# terminal colour / cursor escapes (Keras 3's bold step counts, torchtitan's coloured fields, rich's progress bars)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_US_DATE = re.compile(r"^\s*\[?(\d{2})/(\d{2})/(\d{4}|\d{2}),? (\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\s*\]?\s*")
_GLOG = re.compile(r"^\s*[IWEFVD](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\s+\d+\s+[^\]\s]*\]\s*")

_TRACE_START = re.compile(r"^\s*Traceback \(most recent call last\):|^\s*During handling of the above exception|"
                          r"^\s*The above exception was the direct cause")
_TRACE_LINE = re.compile(r"^\s+File \"|^\s{2,}\S|^\s*\^+\s*$|^\s*~+\^*~*\s*$")
_EXC_LINE = re.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Warning|Failure)\b:?")
_CODE = re.compile(r"^\s*(?:import \w|from [\w.]+ import |def \w+\s*\(|class \w+[(:]|@\w|#|if .*:\s*$|elif |"
                   r"else\s*:|for .* in .*:\s*$|while .*:\s*$|with .*:\s*$|try\s*:|except\b|finally\s*:|return\b|"
                   r"raise\b|yield\b|assert |print\(|pass\s*$|break\s*$|continue\s*$|[\w.\[\]'\"]+\s*[+\-*/]?=\s*\S|"
                   r"[\w.]+\(.*\)\s*(?:#.*)?$|[)\]}]+[,:]?\s*$|\"\"\"|''')")
_BANNER = re.compile(r"^\s*[=\-*#~_+<>|.:]{3,}.*$|^[^\w]*$")

_CHECKPOINT = re.compile(r"sav(e|ing|ed)\b.{0,40}checkpoint|checkpoint.{0,40}\b(sav(e|ed|ing)|written|writing)|"
                         r"\bsaving model\b|\bsaved? (model|weights|state)\b.{0,40}\bto\b", re.IGNORECASE)
_EVAL = re.compile(r"\bevaluat(e|ing|ion)\b|\bvalidat(ion|ing)\b|\brunning eval|\bSanity Checking\b|"
                   r"\b(?:eval|val|valid|test)\s+epoch\b|\bepoch\s*\((?:eval|val|valid|test)\)|"
                   r"\beval_(?:start|stop|accuracy|loss)\b|"
                   r"\bval(?:id)?[ _](?:loss|acc|accuracy|ppl|bpb)\b",
                   re.IGNORECASE)
_GC = re.compile(r"\bgc\.collect\b|\bgarbage collect|\bgc (gen|generation|pause|collect|took)|\bGC\b.{0,20}"
                 r"\b(pause|took|collected|gen)", re.IGNORECASE)
_EVENT_DURATION = re.compile(r"\b(?:in|took|time:?|took:)\s*(\d+(?:\.\d*)?)\s*(ms|s|sec|secs|seconds)\b",
                             re.IGNORECASE)
_RECOMPILING = re.compile(r"Recompiling function (\S+) in (\S+)")
_GUARD = re.compile(r"^\s*-\s*(?:\d+/\d+:\s*)?(.+?)\s*$")
_LIMIT = re.compile(r"hit config\.(recompile_limit|cache_size_limit|accumulated_recompile_limit)|"
                    r"recompile_limit|cache_size_limit reached", re.IGNORECASE)
_GRAPH_BREAK = re.compile(r"Graph break(?: in user code)?(?: at| from| \(|:)\s*(.*)$")
_DYNAMO_TAG = re.compile(r"^(?:\[[\d/]+\]\s*)?(?:\[__\w+\]\s*)?")


class Line:
    """One line as the scanners see it: number, text after the prefix, rank (-1 unknown), time (ns UTC or NAT)."""

    __slots__ = ("lineno", "raw", "body", "rank", "time", "evaluating")

    def __init__(self, lineno: int, raw: str, body: str, rank: int, time: int):
        self.lineno, self.raw, self.body, self.rank, self.time = lineno, raw, body, rank, time
        self.evaluating = False


@lru_cache(maxsize=4096)
def _offset_ns(tz: str, y: int, mo: int, d: int, h: int) -> int:
    """UTC offset (ns) of local time in `tz` at that hour (cached: one zoneinfo lookup per hour of log)."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    off = datetime(y, mo, d, h, tzinfo=ZoneInfo(tz)).utcoffset()
    return int(off.total_seconds() * 1e9) if off is not None else 0


def _to_ns(y, mo, d, h, mi, s, frac, tz, zone=None) -> int:
    try:
        secs = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    except (ValueError, OverflowError):
        return NAT
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 62):
        return NAT
    ns = secs * 1_000_000_000 + (int((frac + "000000000")[:9]) if frac else 0)
    if zone:
        if zone == "Z":
            return ns
        sign = -1 if zone[0] == "-" else 1
        z = zone[1:].replace(":", "")
        return ns - sign * (int(z[:2]) * 3600 + int(z[2:4] or 0) * 60) * 1_000_000_000
    if tz and tz != "UTC":
        try:
            return ns - _offset_ns(tz, y, mo, d, h)
        except Exception:  # an unknown zone was rejected earlier; a non-existent local time keeps UTC
            return ns
    return ns


class Prefix:
    """Reads a line's rank and time prefixes; remembers the last full date for glog's year-less stamps."""

    def __init__(self, tz: str = "UTC"):
        self.tz = tz or "UTC"
        self.year: int | None = None

    def split(self, line: str) -> tuple[int, int, str]:
        rank, t = -1, NAT
        body = _ANSI.sub("", line) if "\x1b" in line else line
        for _ in range(2):  # "[rank3]: [2024-...] ..." or "[2024-...] [rank3]: ..."
            if rank < 0 and (m := _RANK_PREFIX.match(body)):
                rank, body = _rank(m.group(1) or m.group(2) or m.group(3)), body[m.end():]
            if t == NAT and body[:1] in " [0123456789IWEFVD":
                if (m := _TAGGED.match(body)):
                    body = body[m.end():]
                if (m := _ISO.match(body)):
                    y = int(m.group(1))
                    t = _to_ns(y, int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)),
                               int(m.group(6)), m.group(7), self.tz, m.group(8))
                    self.year = y
                    body = body[m.end():]
                elif (m := _US_DATE.match(body)):
                    y = int(m.group(3))
                    y += 2000 if y < 100 else 0  # rich's `[03/09/23 10:00:01]` (ColossalAI's logger)
                    t = _to_ns(y, int(m.group(1)), int(m.group(2)), int(m.group(4)), int(m.group(5)),
                               int(m.group(6)), m.group(7), self.tz)
                    self.year = y
                    body = body[m.end():]
                elif (m := _GLOG.match(body)):
                    if self.year is not None:
                        t = _to_ns(self.year, int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                                   int(m.group(5)), m.group(6), self.tz)
                    body = body[m.end():]
        if rank < 0 and "[Rank" in body and (m := _RANK_INLINE.search(body)):
            rank = _rank(m.group(1))
        return rank, t, body


class _EventLines:
    """Checkpoint / eval / GC markers, and dynamo recompiles and graph breaks, as event rows."""

    def __init__(self, steps: step_grammar.StepLines):
        self.steps = steps
        self.rows: list[dict] = []
        self.open_eval: dict[tuple, tuple[int, int]] = {}  # (kind, rank) -> (row, step records when it opened)
        self.recompile: int | None = None  # row index of a recompile still collecting its guard lines
        self.counts = {"events": 0, "recompile": 0}

    def _add(self, ln: Line, kind: str, detail: str, duration: float = np.nan) -> int:
        own = step_grammar.KEYWORD.search(ln.body) if kind != "recompile" else None  # "step 10: val loss ..."
        self.rows.append({"time": ln.time, "host": "", "rank": ln.rank,
                          "step": int(own["i"]) if own and len(own["i"]) < 18 else self.steps.last_step.get(ln.rank, -1),
                          "kind": kind,
                          "duration_s": duration,
                          "detail": detail[:300]})
        return len(self.rows) - 1

    def feed_recompile(self, ln: Line) -> bool:
        body = _DYNAMO_TAG.sub("", ln.body.strip())
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
            self.recompile = None
        if "Recompiling function" in body and (m := _RECOMPILING.search(body)):
            self.recompile = self._add(ln, "recompile", f"line {ln.lineno}: recompiling {m.group(1)} in "
                                                        f"{m.group(2)}")
            self.counts["recompile"] += 1
            return True
        if ("limit" in body and _LIMIT.search(body)) or ("recompil" in body.lower() and "torch" in body):
            self._add(ln, "recompile", f"line {ln.lineno}: {body}")
            self.counts["recompile"] += 1
            return True
        if "Graph break" in body and (m := _GRAPH_BREAK.search(body)):
            self._add(ln, "recompile", f"line {ln.lineno}: graph break {m.group(1)}")
            self.counts["recompile"] += 1
            return True
        return False

    def feed_marker(self, ln: Line) -> bool:
        body = ln.body
        low = body.lower()
        kind = None
        if "checkpoint" in low or "sav" in low:
            if _CHECKPOINT.search(body):
                kind = "checkpoint"
        if kind is None and (ln.evaluating or (("eval" in low or "val" in low or "sanity" in low)
                                               and _EVAL.search(body))):
            kind = "eval"
        if kind is None and "gc" in low and _GC.search(body):
            kind = "gc"
        if kind is None:
            return False
        dm = _EVENT_DURATION.search(body)
        duration = float(dm.group(1)) * (1e-3 if dm.group(2).lower() == "ms" else 1.0) if dm else np.nan
        if kind in ("eval", "checkpoint"):
            # "Saving checkpoint ..." then "... saved in 3.2 s", or a run of evaluation lines, with no training
            # step between them: one event
            seen = self.steps.timed
            open_ = self.open_eval.get((kind, ln.rank))
            if open_ is not None and open_[1] == seen:  # no training step since: the same evaluation goes on
                row = self.rows[open_[0]]
                if np.isfinite(duration) and kind == "checkpoint":
                    row["duration_s"] = duration
                elif ln.time != NAT and row["time"] != NAT:
                    row["duration_s"] = max(0.0, (ln.time - row["time"]) / 1e9)
                elif np.isfinite(duration):
                    row["duration_s"] = duration
                return True
            self.open_eval[(kind, ln.rank)] = (self._add(ln, kind, f"line {ln.lineno}: {body.strip()}", duration),
                                               seen)
        else:
            self._add(ln, kind, f"line {ln.lineno}: {body.strip()}", duration)
        self.counts["events"] += 1
        return True


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


def _feed(ln: Line, nccl, events, steps, counts: dict[str, int]) -> bool:
    """Offer one line to every scanner; whether one understood it (counted in `counts`)."""
    understood = False
    if nccl.feed(ln.lineno, ln.body if ln.rank >= 0 else ln.raw):
        counts["nccl"] += 1
        understood = True
    if events.feed_recompile(ln):
        counts["recompile"] += 1
        understood = True
    if not understood and steps.feed(ln):
        counts["steps"] += 1
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
    prefix = Prefix(tz)
    steps = step_grammar.StepLines()
    nccl = nccl_log.NcclLines(src)
    events = _EventLines(steps)
    counts = {"steps": 0, "nccl": 0, "recompile": 0, "events": 0}
    noise = {"blank": 0, "traceback": 0, "code": 0, "banner": 0, "unread": 0}
    examples: list[str] = []
    in_trace = False
    total = 0
    notes: list[str] = []  # the decoder's one-line notes (Latin-1 bytes, NULs dropped, a truncated stream)
    for lineno, raw in enumerate(lines if lines is not None else textio.iter_lines(path, notes=notes), start=1):
        total += 1
        if not raw.strip():
            noise["blank"] += 1
            continue
        rank, t, body = prefix.split(raw)
        ln = Line(lineno, raw, body, rank, t)
        try:
            understood = _feed(ln, nccl, events, steps, counts)
        except (ValueError, OverflowError):  # a number past int()'s 4300 digits: damage, not a record
            noise["unread"] += 1
            if len(examples) < EXAMPLES_KEPT:
                examples.append(f"line {lineno}: a number too long to read")
            continue
        if understood:
            in_trace = False
            continue
        kind, in_trace = _noise(body, in_trace)
        noise[kind] += 1
        if kind == "unread" and len(examples) < EXAMPLES_KEPT:
            examples.append(f"line {lineno}: {body.strip()[:100]}")
    bundle = _bundle(src, host, total, steps, nccl, events, counts, noise, examples)
    bundle.warnings.extend(notes)
    return bundle


def _bundle(src, host, total, steps, nccl, events, counts, noise, examples) -> schema.Bundle:
    bundle = schema.Bundle(inputs=[src])
    res = steps.result()
    if res.get("step") is not None and len(res["step"]):
        n = len(res["step"])
        parts = {"start": [res["start"]], "rank": [res["rank"]], "step": [res["step"]],
                 "phase": [np.full(n, "step", dtype=object)], "duration_s": [res["duration"]],
                 "tokens": [res["tokens"]]}
        for phase, values in res["phases"].items():
            ok = np.isfinite(values)
            parts["start"].append(res["start"][ok])
            parts["rank"].append(res["rank"][ok])
            parts["step"].append(res["step"][ok])
            parts["phase"].append(np.full(int(ok.sum()), phase, dtype=object))
            parts["duration_s"].append(values[ok])
            parts["tokens"].append(np.full(int(ok.sum()), np.nan))
        data = {k: np.concatenate(v) for k, v in parts.items()}
        start = data.pop("start")
        data["time"] = pd.to_datetime(np.where(start == NAT, np.datetime64("NaT"), start.view("datetime64[ns]")),
                                      utc=True)
        data["host"] = host
        data["source"] = src
        bundle.steps = schema.steps_frame(data)
        if res["windowed"]:
            widths = np.diff(np.sort(res["step"])) if n > 1 else np.array([1])
            every = int(np.median(widths)) if len(widths) else 1
            bundle.warnings.append(f"{src}: {n} step times are means over logging windows (typically {every} "
                                   f"step{'s' if every != 1 else ''}), from the timestamps of consecutive log lines; "
                                   "a one-step stall is spread over its window")
        elif steps.tqdm_lines and res["chosen"] in ("(it/s)", "(s/it)"):
            bundle.warnings.append(f"{src}: {n} step times come from progress-bar rates (tqdm's smoothed "
                                   "average per update), not from exact per-step timings")
    if events.rows:
        ev = events.rows
        times = np.array([r["time"] for r in ev], dtype=np.int64)
        bundle.events = schema.events_frame({
            "time": pd.to_datetime(np.where(times == NAT, np.datetime64("NaT"), times.view("datetime64[ns]")),
                                   utc=True),
            "host": [host] * len(ev), "rank": [r["rank"] for r in ev], "step": [r["step"] for r in ev],
            "kind": [r["kind"] for r in ev], "duration_s": [r["duration_s"] for r in ev],
            "detail": [r["detail"] for r in ev], "source": src})
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
        "unread_examples": examples}}
    if not understood and not steps.metric_lines and not steps.eval_lines:
        from playbook.readers import detect

        raise UnknownFormatError(f"{src}: not telemetry this playbook can read (looks like "
                                 f"{detect.describe(src)}; no line of its {total} understood)")
    if bundle.is_empty():
        from playbook.readers import detect

        raise UnknownFormatError(f"{src}: not telemetry this playbook can read (looks like {detect.describe(src)}; "
                                 f"of its {total} lines, {understood} understood without a step time, NCCL line "
                                 "or training event)")
    return bundle


def sniff(head: str) -> bool:
    """Any text that is not a JSON document or binary data: the line scanners decide line by line."""
    if not head.strip():
        return False
    bad = head.count("\ufffd") + head.count("\x00")
    if bad > max(4, len(head) // 50):
        return False
    first = head.lstrip()[:2]
    if textio.looks_like_json(head) and not first.startswith("{'") and not _json_lines(head):
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
