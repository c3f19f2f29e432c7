"""An inference server's periodic scheduler statistics, read by the meaning of their `key: value` fields.

The serving engines print one line per scheduler interval (or per decode batch) of comma-separated `key: value`
fields; the keys differ by engine and version, their meanings do not:

  SGLang (python/sglang/srt/managers/scheduler*.py): `Decode batch. #running-req: 8, #token: 62531, token usage:
      0.12, [accept len: 2.54, accept rate: 0.51,] [cuda graph: True,] gen throughput (token/s): 186.64, #queue-req: 0`
      (`Decode batch,` in 2026 releases; hybrid-SWA models: `#full token: ..., full token usage: 1.00, #swa token:
      ..., swa token usage: 0.06`), and `Prefill batch. #new-seq: 5, #new-token: 8192, ... token usage: 0.48,
      #running-req: 13, #queue-req: 26`;
  vLLM V0 (vllm/engine/metrics.py): `Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 2136.3 tokens/s,
      Running: 247 reqs, Swapped: 0 reqs, Pending: 740 reqs, GPU KV cache usage: 99.7%, CPU KV cache usage: 0.0%`;
  vLLM V1 (vllm/v1/metrics/loggers.py): `Engine 000: Avg prompt throughput: ..., Running: 18 reqs, Waiting: 43 reqs,
      GPU KV cache usage: 95.9%, Prefix cache hit rate: 0.0%`;
  speculative decoding: vLLM V0 `Speculative metrics: Draft acceptance rate: 0.655, System efficiency: 0.649, ...`,
      V1 `SpecDecoding metrics: Mean acceptance length: 2.69, ..., Avg Draft acceptance rate: 56.2%`.

Each field is a `key: number [unit]` piece of the line (markdown emphasis around a piece, `_accept len: 3.69`, is
dropped); a key is read by what it means (FIELDS): requests running, requests waiting, requests swapped out, the KV
cache's fill (a share; `%` divided by 100), generated tokens per second, prompt tokens per second, accepted tokens per
speculative step, the draft acceptance rate (and vLLM's system efficiency), whether the decode step ran a captured CUDA graph. A line is a record
when it carries one of the engines' line heads (HEADS) and at least two fields. Beside the records:

  KV-cache preemption: vLLM's `Sequence group X is preempted by PreemptionMode.SWAP|RECOMPUTE mode because there is
      not enough KV cache space` (V0 scheduler) and SGLang's `KV cache pool is full. Retract requests. #retracted_reqs:
      N` / `Decode out of memory` → counted;
  CUDA-graph capture: SGLang's `Capture ... cuda graph begin ... bs=[1, 2, 4, ..., 32]` (and `cuda_graph_bs=[...]` in
      server args) → the largest captured decode batch; a decode batch above it runs eager. `max_running_requests=N`
      → the admission limit.

Runs: records separated by a heading (a short non-blank line with no time stamp and no log level that is no record,
e.g. a paste's "open cuda graph:") or by a clock that runs backwards (two runs pasted one after the other) are different runs
(`segment`), compared by analysis/serving_load.py. Memory: one small dict per record, MAX_RECORDS at most.
"""

from __future__ import annotations

import re

from playbook.model import schema
from playbook.readers import device_lines, load_report, model_placement, token_rates, trtexec_summary

HEADS = ("Decode batch", "Prefill batch", "Avg prompt throughput", "Avg generation throughput", "Speculative metrics",
         "SpecDecoding metrics")
MAX_RECORDS = 200_000
# one `key: value [unit]` piece (after the line is split on commas); markdown emphasis (_ * `) around it is dropped
# (the unit's leading blanks sit inside its optional group: a `\s*` before it beside the trailing `[\s_*`.]*` would
# split a long blank run every way, quadratic on a 200 kB line)
PIECE = re.compile(r"^[\s_*`]*([#A-Za-z][\w #()/.\-]{0,60}?)\s*:\s*(True|False|-?\d{1,12}(?:\.\d{1,9})?)"
                   r"(?:\s*(%|[A-Za-z/]{1,12}))?[\s_*`.]*$")
# key (lower case, spaces collapsed) -> meaning
FIELDS = {
    "#running-req": "running", "#running-reqs": "running", "running": "running", "#running-requests": "running",
    "#queue-req": "queued", "#queue-reqs": "queued", "pending": "queued", "waiting": "queued",
    "swapped": "swapped",
    "token usage": "kv", "full token usage": "kv", "gpu kv cache usage": "kv", "kv cache usage": "kv",
    "gen throughput (token/s)": "gen_tps", "avg generation throughput": "gen_tps", "gen throughput": "gen_tps",
    "avg prompt throughput": "prompt_tps",
    "accept len": "accept_len", "accept length": "accept_len", "mean acceptance length": "accept_len",
    "accept rate": "accept_rate", "draft acceptance rate": "accept_rate", "avg draft acceptance rate": "accept_rate",
    "cuda graph": "cuda_graph",
    "system efficiency": "spec_efficiency",  # vLLM V0: emitted tokens over the most the speculation could emit
}
SHARES = ("kv", "accept_rate", "spec_efficiency")  # fields that are shares: a `%` value is divided by 100
PREEMPTED = re.compile(r"preempted by PreemptionMode\.(SWAP|RECOMPUTE)\b.{0,80}?not enough KV cache space|"
                       r"KV cache pool is full\. Retract requests|Decode out of memory")
RETRACTED = re.compile(r"#retracted_reqs:\s*(\d{1,9})")
# vLLM states its running count of preemptions on the warning it prints at the 1st, 51st, 101st ... preemption
# (`total_num_cumulative_preemption=51`; `total_cumulative_preemption_cnt=` in 0.4-0.5): the count, not the lines
CUMULATIVE = re.compile(r"\btotal_(?:num_)?cumulative_preemption(?:_cnt)?=(\d{1,12})")
CAPTURED = re.compile(r"\b(?:cuda_graph_bs|bs)=\[(\d{1,6}(?:,\s*\d{1,6}){0,4095})\]")
MAX_RUNNING = re.compile(r"\bmax_running_requests=(\d{1,9})\b")
HEADING_MAX = 80  # a paste's heading between two runs is short ("open cuda graph:"); a longer untimed line is output
# whether the engine captures CUDA graphs, as its launch or its configuration states it: a launch command (vLLM
# `vllm serve` / `python -m vllm.entrypoints.*`, its fork `aphrodite run`, SGLang `sglang.launch_server`) turns them
# off with vLLM's `--enforce-eager` or SGLang's `--disable-cuda-graph` and captures them without (the engines'
# documented default); the engines' own configuration lines state it: vLLM's `Initializing ... engine ... with config:
# ..., enforce_eager=False, ...` (and `non-default args: {..., 'enforce_eager': True}`), SGLang's `server_args=
# ServerArgs(..., disable_cuda_graph=False, ...)`. The state holds for the run that follows (a new one starts a run)
LAUNCH = re.compile(r"(?:\bvllm\s+serve|\baphrodite\s+run|\bvllm\.entrypoints\.\w+|\bsglang\.launch_server)\b")
FLAG_OFF = re.compile(r"--(?:enforce[-_]eager|disable[-_]cuda[-_]graph)(?![-\w])(?!\s*=?\s*(?:false|False|0)\b)")
STATED = re.compile(r"\b(enforce_eager|disable_cuda_graph)['\"]?\s*[=:]\s*(True|False)\b")
BACKWARDS_NS = 60 * 10**9  # a clock that steps back more than a minute: another run pasted after this one
# a log line the prefix reader leaves whole (uvicorn's access lines: `INFO:     ::1:50352 - "POST ..." 200 OK`, a
# process tag before it): output of the run, not a heading between runs
LEVELLED = re.compile(r"^\s*(?:\(\w{1,40} pid=\d{1,9}\)\s*)?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b")
# a heading is a person's words between two pastes ("open cuda graph：", "### Run 2 (TP=8):", "**before**"): words,
# numbers and light punctuation, a colon only at its end; a line with a mid-line colon, a pipe, quotes or brackets is
# the program's output (a container prefix `vllm-1  | ...`, a progress bar `Processed prompts:  50%|###| 5/10 [...]`,
# an access line), not a heading
HEADING = re.compile(r"^[\s#*>_`]*\w[\w .,=+/()\-*_`'’]{0,78}[:：]?[\s*_`]*$")


def graphs_on(body: str) -> bool | None:
    """Whether the line states that the engine captures CUDA graphs (True), runs eager (False), or neither (None)."""
    if not any(w in body for w in ("eager", "cuda_graph", "serve", "run", "entrypoints", "launch_server")):
        return None
    if m := STATED.search(body):
        return m.group(2) != "True"  # enforce_eager=True and disable_cuda_graph=True both turn them off
    if LAUNCH.search(body):
        return FLAG_OFF.search(body) is None
    return None


def fields(body: str) -> dict[str, float | bool]:
    """The meanings a line's `key: value` pieces carry ({} for none); the first piece of a meaning wins."""
    out: dict[str, float | bool] = {}
    for piece in body.split(","):
        tail = piece.rsplit(": ", 2)  # "Engine 000: Avg prompt throughput: 0.0 tokens/s" -> its last key
        text = ": ".join(tail[-2:]) if len(tail) > 2 else piece
        m = PIECE.match(text)
        if m is None:
            continue
        key = " ".join(m.group(1).lower().split())
        # the engine's line head before the first key ("decode batch. #running-req") is not part of it
        meaning = FIELDS.get(key) or FIELDS.get(key.rsplit(". ", 1)[-1])
        if meaning is None or meaning in out:
            continue
        raw = m.group(2)
        if meaning == "cuda_graph":
            if raw in ("True", "False"):
                out[meaning] = raw == "True"
            continue
        if raw in ("True", "False"):
            continue
        value = float(raw)
        out[meaning] = value / 100.0 if meaning in SHARES and m.group(3) == "%" else value
    return out


class ServingLines:
    """Feed every non-blank line: `feed(lineno, body, time_ns)` is True for a scheduler record, a preemption line or
    a capture line (understood), False for any other line (which may separate runs). `summary()`: {} without a
    record or preemption, else {"records": [...], "segments": n, "preempted": n, "retracted": n, "preemptions": n,
    "graph_bs_max": n,
    "max_running": n}."""

    def __init__(self):
        self.records: list[dict] = []
        self.segment = 0
        self.pending_break = False  # a heading since the last record
        self.last_time: int | None = None
        self.preempted = 0
        self.retracted = 0
        self.preemptions = 0  # the largest cumulative preemption count a line states (vLLM)
        self.graph_bs_max = 0
        self.max_running = 0
        self.graphs_on: bool | None = None  # as the run's launch or configuration states it (graphs_on())
        self.dropped = 0
        self.load = load_report.LoadReport()  # a load test's result blocks (readers/load_report.py)
        self.placed = model_placement.Placements()  # a model split between CPU and GPU (readers/model_placement.py)
        self.devices = device_lines.DeviceLines()  # the devices a job says it sees and uses (readers/device_lines.py)
        self.rates = token_rates.TokenRates()  # a local runtime's prompt / decode token rates (readers/token_rates.py)
        self.bench = trtexec_summary.BenchLines()  # a benchmark's performance summary (readers/trtexec_summary.py)

    def feed(self, lineno: int, body: str, time_ns: int | None = None, timed: bool = False,
             raw: str | None = None) -> bool:
        if "preempt" in body or "Retract" in body or "out of memory" in body:
            if PREEMPTED.search(body):
                self.preempted += 1
                if r := RETRACTED.search(body):
                    self.retracted += int(r.group(1))
                if c := CUMULATIVE.search(body):
                    self.preemptions = max(self.preemptions, int(c.group(1)))
                return True
        state = graphs_on(body)
        if state is not None:
            if self.records:
                self.pending_break = True  # a new launch or configuration: another run follows
            self.graphs_on = state
        graph = "bs=[" in body and "graph" in body.lower()  # a capture line (`cuda_graph_bs=[` or `bs=[`)
        if graph or "max_running_requests=" in body:
            found = state is not None
            if graph and (c := CAPTURED.search(body)):
                self.graph_bs_max = max(self.graph_bs_max, max(int(x) for x in c.group(1).split(",")))
                found = True
            if mr := MAX_RUNNING.search(body):
                self.max_running = max(self.max_running, int(mr.group(1)))
                found = True
            if found:
                return True
        head = next((h for h in HEADS if h in body), None)
        if head is None and state is not None:
            return True
        if head is None and (self.load.feed(body) or self.placed.feed(body) or self.rates.feed(body)
                             or self.bench.feed(body) or self.devices.feed(body, lineno, raw)):
            return True
        if head is None:
            if (self.records and not timed and 0 < len(body.strip()) <= HEADING_MAX and not LEVELLED.match(body)
                    and HEADING.match(body)):
                self.pending_break = True  # a heading between records (no time, no level): another run follows
            return False
        got = fields(body[body.index(head):])
        if len(got) < 2:
            return False
        if self.records and (self.pending_break or (
                time_ns is not None and self.last_time is not None and time_ns < self.last_time - BACKWARDS_NS)):
            self.segment += 1
        self.pending_break = False
        self.last_time = time_ns if time_ns is not None else self.last_time
        kind = ("decode" if head == "Decode batch" else "prefill" if head == "Prefill batch" else
                "spec" if "metrics" in head else "interval")
        if self.graphs_on is not None:
            got["graphs_on"] = self.graphs_on  # the run's stated configuration, beside a line's own `cuda graph:`
        if len(self.records) < MAX_RECORDS:
            self.records.append({"line": lineno, "kind": kind, "segment": self.segment, **got})
        else:
            self.dropped += 1
        return True

    def summary(self) -> dict:
        extra = {k: v for k, v in (("loadtest", self.load.summary()), ("placement", self.placed.summary()),
                                              ("generation", self.rates.summary()),
                                              ("trtexec", self.bench.summary())) if v}
        devices = {"devices": d} if (d := self.devices.summary()) else {}  # kept apart by store()
        if not self.records and not self.preempted and not self.graph_bs_max and not extra:
            return devices
        return {**extra, **devices, "records": self.records, "segments": self.segment + 1, "preempted": self.preempted,
                "retracted": self.retracted, "preemptions": self.preemptions, "graph_bs_max": self.graph_bs_max, "max_running": self.max_running,
                **({"dropped": self.dropped} if self.dropped else {})}


def store(bundle, src: str, served: dict) -> None:
    """Keep a file's summary where analysis/serving_load.py reads it (Bundle.meta["serving:" + file]) and its line for
    `playbook info` (Bundle.meta["lines"][file]["serving"]); nothing for an empty summary. The devices the file
    says a job uses go apart (schema.DEVICE_USE + file, analysis/device_use.py; `info`'s "devices")."""
    if served and (devices := served.pop("devices", None)):
        bundle.meta[f"{schema.DEVICE_USE}{src}"] = devices
        bundle.meta["lines"][src]["devices"] = device_lines.describe(devices)
    if served:
        bundle.meta[f"{schema.SERVING}{src}"] = served
        bundle.meta["lines"][src]["serving"] = describe(served)


def describe(s: dict) -> str:
    """One line for `playbook info`: what the records hold."""
    recs = s.get("records") or []
    kinds = {}
    for r in recs:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    parts = [f"{n} {k}" for k, n in sorted(kinds.items())]

    def span(key: str, fmt: str) -> str | None:
        vals = [r[key] for r in recs if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
        return f"{key} {format(min(vals), fmt)}-{format(max(vals), fmt)}" if vals else None

    spans = [x for x in (span("running", "g"), span("queued", "g"), span("kv", ".0%"), span("gen_tps", ".4g"),
                         span("accept_len", ".3g")) if x]
    eager = sum(1 for r in recs if r.get("cuda_graph") is False or (
        "cuda_graph" not in r and r.get("graphs_on") is False))
    extra = [f"{eager} without a CUDA graph" if eager else "",
             f"{s['segments']} runs" if s.get("segments", 1) > 1 else "",
             f"{s['preempted']} preemption/retraction lines" if s.get("preempted") else "",
             f"decode graphs captured up to batch {s['graph_bs_max']}" if s.get("graph_bs_max") else "",
             f"admission limit {s['max_running']} requests" if s.get("max_running") else ""]
    others = [load_report.describe(s["loadtest"]) if s.get("loadtest") else "",
              model_placement.describe(s["placement"]) if s.get("placement") else "",
              token_rates.describe(s["generation"]) if s.get("generation") else "",
              trtexec_summary.describe(s["trtexec"]) if s.get("trtexec") else ""]
    if not recs and not s.get("preempted") and not s.get("graph_bs_max"):
        return "; ".join(x for x in others if x) or "serving scheduler records: none"
    return ("serving scheduler records: " + (", ".join(parts) or "none") + ("; " + ", ".join(spans) if spans else "")
            + "".join(f"; {x}" for x in extra + others if x))
