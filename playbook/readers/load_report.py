"""A load test's result blocks — one block per offered load — read by what their fields mean.

A load generator run against an inference server prints, for each load level it offers (a number of requests in
flight, or a request rate), what the client saw and, where the server reports its own statistics, how long the
requests spent inside the server. Triton's perf_analyzer (client `src/c++/perf_analyzer/inference_profiler.cc`) and
its 2019 predecessor perf_client print:

    Request concurrency: 4                         (or `Request Rate: 1500 inference requests per seconds`)
      Client:
        Request count: 1062
        Avg send request rate: 1216.35 infer/sec   (request-rate mode)
        [WARNING] Perf Analyzer was not able to keep up with the desired request rate. 99.81% of the requests ...
        Throughput: 58.992 infer/sec
        Avg latency: 67699 usec (standard deviation 4065 usec)
      Server:
        Inference count: 1005
        Execution count: 1005
        Avg request latency: 17464 usec (overhead 111 usec + queue 37 usec + compute input 638 usec + ...)

A block opens at a load heading: a key naming the load (`concurrency`, `request rate`, `rate`) with one number. Inside
it, `key: number unit` lines are read by meaning, not by tool: a key holding `throughput` (per-second unit) is the
served rate, `send ... rate` the rate the client managed to offer, a key holding `latency` the latency — the
server's where the block's `Server:` section (or the key's own word `request latency` under it) says so, else the
client's. A latency's parenthesised breakdown (`(a N unit + b N unit + ...)`, on its line or the next) is kept part
by part: the parts named `queue` are time waiting in the server, the parts named `compute` (input / infer / output,
or one `compute`) the time the model ran. Units: ns/nsec, us/usec/µs, ms/msec, s/sec → microseconds. A `not able
to keep up` sentence (the late requests' or the client's overhead warning) marks the client as the limit. Counts:
`Inference count` / `Execution count` (requests per model execution: the batch the server formed).

Memory: one small dict per block, MAX_BLOCKS at most.
"""

from __future__ import annotations

import re

MAX_BLOCKS = 10_000
US = {"ns": 1e-3, "nsec": 1e-3, "us": 1.0, "usec": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "msec": 1e3, "s": 1e6,
      "sec": 1e6}
# the load a block is measured at: `Request concurrency: 4`, `Concurrency: 8`, `Request Rate: 1500 inference
# requests per seconds`, `Request rate: 24`
LOAD = re.compile(r"^[\s#*>_`]*(?:request\s+)?(concurrency|rate)\s*:\s*(\d{1,9}(?:\.\d{1,6})?)\b(.{0,60})$",
                  re.IGNORECASE)
SECTION = re.compile(r"^[\s#*>_`]*(client|server)\s*:\s*$", re.IGNORECASE)
# `key: number [unit] [(rest)]`; the key up to 60 characters of words, the unit a word or a per-second rate
FIELD = re.compile(r"^[\s#*>_`]*([A-Za-z][\w .\-/]{0,60}?)\s*:\s*(-?\d{1,15}(?:\.\d{1,9})?)\s*"
                   r"([A-Za-zµμ/]{1,16})?\s*(\(.*\))?[\s.*_`]*$")
PART = re.compile(r"([A-Za-z][A-Za-z /\-]{0,40}?)\s+(\d{1,15}(?:\.\d{1,9})?)\s*(nsec|usec|msec|sec|ns|us|µs|μs|ms|s)\b")
BREAKDOWN = re.compile(r"^\s*\((.*\+.*)\)\s*$")  # a breakdown alone on the line after its total
# the two warnings: requests sent late (`... desired request rate.`) and the client's own overhead above its limit
# (`Perf Analyzer is not able to keep up with the desired load.`, printed after the block's Server section)
LAGGING = re.compile(r"not able to keep up with the desired (?:request )?(?:rate|load)", re.IGNORECASE)
DELAYED = re.compile(r"(\d{1,3}(?:\.\d{1,3})?)\s*% of the requests were delayed", re.IGNORECASE)
# keys read as part of a block but not kept: request counts, percentile latencies, the protocol's own time
KNOWN = ("request count", "latency", "grpc time", "http time", "sequence count", "standard deviation")
PER_SECOND = re.compile(r"/s(?:ec(?:ond)?)?$|per\s*s", re.IGNORECASE)


def parts(text: str) -> dict[str, float]:
    """The `name N unit` pieces of a latency breakdown, in microseconds (`overhead 18 usec + queue 52 usec + compute
    4717 usec` → {"overhead": 18, "queue": 52, "compute": 4717}); the names lower case, spaces collapsed."""
    out: dict[str, float] = {}
    for piece in text.strip("() ").split("+"):
        m = PART.search(piece)
        if m:
            name = " ".join(m.group(1).lower().split())
            out[name] = out.get(name, 0.0) + float(m.group(2)) * US[m.group(3)]
    return out


def _us(value: float, unit: str | None) -> float | None:
    return value * US[unit.lower()] if unit and unit.lower() in US else None


class LoadReport:
    """Feed every non-blank line: `feed(body)` is True for a line of a load block (heading, section, field,
    breakdown, warning). `summary()`: [] without a block, else one dict per block: {"load": ("concurrency"|"rate",
    n), "throughput": per s, "sent_rate": per s, "client_us": .., "server_us": .., "server_parts": {name: us},
    "inferences": n, "executions": n, "lagging": bool, "delayed_share": 0..1} (the keys a block states)."""

    def __init__(self):
        self.blocks: list[dict] = []
        self.block: dict | None = None
        self.side: str | None = None
        self.last_latency: str | None = None  # the latency a breakdown on the next line belongs to

    def feed(self, body: str) -> bool:
        text = body.strip()
        if not text or len(text) > 600:
            return False
        if m := LOAD.match(text):
            kind = m.group(1).lower()
            tail = m.group(3).strip().lower()
            asked = "request" in text[:m.start(1)].lower() or "request" in tail or "/s" in tail or "per s" in tail
            if (tail and not (kind == "rate" and asked)) or (kind == "rate" and not asked):
                return False  # `Concurrency: 4, throughput: ...` (a summary line), or a rate of something else
            self.block = {"load": (kind, float(m.group(2)))}
            self.side, self.last_latency = None, None
            if len(self.blocks) < MAX_BLOCKS:
                self.blocks.append(self.block)
            return True
        if self.block is None:
            return False
        if m := SECTION.match(text):
            self.side = m.group(1).lower()
            return True
        if LAGGING.search(text):
            self.block["lagging"] = True
            if d := DELAYED.search(text):
                self.block["delayed_share"] = float(d.group(1)) / 100.0
            return True
        if (b := BREAKDOWN.match(text)) and self.last_latency:
            self.block[f"{self.last_latency}_parts"] = parts(b.group(1))
            self.last_latency = None
            return True
        m = FIELD.match(text)
        if m is None:
            return False
        return self._field(" ".join(m.group(1).lower().split()), float(m.group(2)), m.group(3), m.group(4))

    def _field(self, key: str, value: float, unit: str | None, rest: str | None) -> bool:
        blk = self.block
        self.last_latency = None
        if "throughput" in key and (unit is None or PER_SECOND.search(unit)):
            blk.setdefault("throughput", value)
        elif "send" in key and "rate" in key:
            blk.setdefault("sent_rate", value)
        elif "latency" in key and not key.startswith(("p", "max", "min")):
            us = _us(value, unit)
            if us is None:
                return False
            side = "server" if (self.side == "server" or "request latency" in key and self.side != "client") \
                else "client"
            if f"{side}_us" in blk:
                return True  # the first latency of a side is its average; a later one (a cache split) is a part
            blk[f"{side}_us"] = us
            if rest and "+" in rest:
                blk[f"{side}_parts"] = parts(rest)
            else:
                self.last_latency = side
        elif key in ("inference count", "execution count"):
            blk["inferences" if key.startswith("inference") else "executions"] = value
        elif "delayed request count" in key:
            blk["delayed"] = value
        elif not any(k in key for k in KNOWN):
            return False  # a key this grammar does not know: not claimed
        return True

    def summary(self) -> list[dict]:
        return [b for b in self.blocks if "throughput" in b or "client_us" in b or "server_us" in b]


def describe(blocks: list[dict]) -> str:
    """One line for `playbook info`."""
    loads = [f"{b['load'][0]} {b['load'][1]:g}" for b in blocks]
    tps = [b["throughput"] for b in blocks if "throughput" in b]
    out = f"load-test blocks: {len(blocks)} ({', '.join(loads[:6])}{', ...' if len(loads) > 6 else ''})"
    if tps:
        out += f"; throughput {min(tps):.4g}-{max(tps):.4g}/s"
    if any("server_us" in b for b in blocks):
        out += "; server latency stated"
    if any(b.get("lagging") for b in blocks):
        out += "; the client could not keep up with the load asked"
    return out
