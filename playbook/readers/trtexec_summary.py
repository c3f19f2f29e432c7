"""An inference benchmark's performance summary — TensorRT's `trtexec` — read by what its figures mean.

trtexec (NVIDIA/TensorRT `samples/common/sampleReporting.cpp`, printEpilog / printTiming) times every query it
enqueues and prints, after its run:

    === Performance summary ===
    Throughput: 716.632 qps
    Latency: min = 1.3476 ms, max = 1.5657 ms, mean = 1.38629 ms, median = 1.38037 ms, percentile(99%) = 1.55853 ms
    End-to-End Host Latency: min = ...            (8.x)
    Enqueue Time: min = ..., mean = ..., median = ...
    H2D Latency: ...
    GPU Compute Time: ...
    D2H Latency: ...
    Total Host Walltime: 3.00294 s
    Total GPU Compute Time: 2.9833 s
    * Throughput may be bound by Enqueue Time rather than GPU Compute and the GPU may be under-utilized.
    * Throughput may be bound by host-to-device transfers for the inputs rather than GPU Compute ...
    * GPU compute time is unstable, with coefficient of variance = 2.10486%.

and, per group of queries (`--avgRuns`), a trace line; TensorRT 7 prints only these besides its own summary blocks:

    Average on 10 runs - GPU latency: 3.05903 ms - Host latency: 3.5863 ms (end to end 6.07532 ms, enqueue 0.53 ms)

What the figures mean (the tool's own explanations): Latency = H2D + GPU Compute + D2H of one query; Throughput =
queries / Total Host Walltime; Total GPU Compute Time = the sum of the queries' compute — "if this is significantly
shorter than Total Host Walltime, the GPU may be under-utilized because of host-side overheads or data transfers";
End-to-End Host Latency "includes the latency to wait for the completion of the previous query" (queries queued back
to back: not GPU idle time). The warnings are the tool's own rules: enqueue median > 0.8 × compute median, H2D (D2H)
median ≥ compute median.

Each labelled figure is found anywhere on a line (a line prefix `[07/28/2022-16:00:55] [I]`, a paste that lost its
line breaks and runs several figures together); statistics are `name = value` or `name value` pairs. Units: ms, us,
s → milliseconds. A second `=== Performance summary ===` (or a Throughput after a complete summary) starts another run.
Memory: a few numbers per run, MAX_RUNS runs at most. Detection and reading: readers/trtexec.py.
"""

from __future__ import annotations

import re

MAX_RUNS = 1_000
MS = {"ms": 1.0, "us": 1e-3, "µs": 1e-3, "s": 1e3, "sec": 1e3}
NUM = r"(-?\d{1,12}(?:\.\d{1,9})?(?:[eE][-+]?\d{1,3})?)"
# a timing figure: its label, then `min = X ms, max = ..., mean = ..., median = ..., percentile(99%) = ...` (the
# `=` sometimes lost in a paste: `max 6.19507 ms`)
STATS = {"Latency": "latency", "End-to-End Host Latency": "e2e", "Enqueue Time": "enqueue", "H2D Latency": "h2d",
         "GPU Compute Time": "compute", "D2H Latency": "d2h"}
FIGURE = re.compile(r"(?<![\w-])(End-to-End Host Latency|Enqueue Time|H2D Latency|GPU Compute Time|D2H Latency|"
                    r"(?<!Host )(?<!Total )Latency)\s*:\s*((?:(?:min|max|mean|median|percentile\(\d{1,3}%\))\s*(?:=\s*)?"
                    + NUM + r"\s*(?:ms|us|µs|s)\b[,\s]*){1,8})")
STAT = re.compile(r"(min|max|mean|median)\s*(?:=\s*)?" + NUM + r"\s*(ms|us|µs|s)\b")
THROUGHPUT = re.compile(r"(?<![\w-])Throughput\s*:\s*" + NUM + r"\s*qps\b", re.IGNORECASE)
TOTAL = re.compile(r"(?<![\w-])Total (Host Walltime|GPU Compute Time)\s*:\s*" + NUM + r"\s*(ms|s)\b")
TRACE = re.compile(r"Average on (\d{1,9}) runs - GPU latency:\s*" + NUM + r"\s*ms - Host latency:\s*" + NUM
                   + r"\s*ms \((?:end to end\s*" + NUM + r"\s*ms,\s*)?enqueue\s*" + NUM + r"\s*ms\)")
BOUND = re.compile(r"Throughput may be bound by (Enqueue Time|host-to-device transfers|device-to-host transfers)")
UNSTABLE = re.compile(r"GPU compute time is unstable, with coefficient of variance = " + NUM + "%")
SUMMARY = "=== Performance summary ==="
WORDS = ("Latency", "Time", "Throughput", "Walltime", "runs - GPU latency", "bound by", "unstable", SUMMARY)
BOUND_KEYS = {"Enqueue Time": "enqueue", "host-to-device transfers": "h2d", "device-to-host transfers": "d2h"}


class BenchLines:
    """Feed every non-blank line: `feed(body)` is True for a line holding a trtexec figure, warning or heading.
    `summary()`: [] without a figure, else one dict per run: {"qps", "walltime_ms", "compute_total_ms", "<figure>":
    {"mean": ms, "median": ms, "min": ms, "max": ms} for latency / e2e / enqueue / h2d / compute / d2h, "bound":
    [enqueue|h2d|d2h ...] (the tool's warnings), "cv_pct" (its instability warning), "trace": {"groups", "gpu_ms",
    "host_ms", "e2e_ms", "enqueue_ms"} (means over the trace lines)} — the keys a run states."""

    def __init__(self):
        self.runs: list[dict] = []
        self.trace = [0, 0.0, 0.0, 0.0, 0, 0.0]  # lines, GPU ms, host ms, enqueue ms (sums), lines with e2e, e2e ms

    def _run(self, fresh: bool = False) -> dict:
        if fresh or not self.runs:
            if len(self.runs) >= MAX_RUNS:
                return self.runs[-1]
            self.runs.append({})
        return self.runs[-1]

    def feed(self, body: str) -> bool:
        if not any(w in body for w in WORDS):
            return False
        found = False
        if SUMMARY in body:
            run = self.runs[-1] if self.runs else None
            self._run(fresh=bool(run and ("qps" in run or "compute" in run)))
            found = True
        if m := TRACE.search(body):
            t = self.trace
            t[0], t[1], t[2], t[3] = t[0] + 1, t[1] + float(m.group(2)), t[2] + float(m.group(3)), t[3] + float(m.group(5))
            if m.group(4) is not None:
                t[4], t[5] = t[4] + 1, t[5] + float(m.group(4))
            return True
        if m := THROUGHPUT.search(body):
            run = self._run()
            self._run(fresh="qps" in run and "walltime_ms" in run)["qps"] = float(m.group(1))
            found = True
        for m in FIGURE.finditer(body):
            stats = {k: float(v) * MS[u] for k, v, u in STAT.findall(m.group(2))}
            if stats:
                self._run()[STATS[m.group(1)]] = stats
                found = True
        for m in TOTAL.finditer(body):
            key = "walltime_ms" if m.group(1) == "Host Walltime" else "compute_total_ms"
            self._run()[key] = float(m.group(2)) * MS[m.group(3)]
            found = True
        if m := BOUND.search(body):
            bound = self._run().setdefault("bound", [])
            if BOUND_KEYS[m.group(1)] not in bound:
                bound.append(BOUND_KEYS[m.group(1)])
            found = True
        if m := UNSTABLE.search(body):
            self._run()["cv_pct"] = float(m.group(1))
            found = True
        return found

    def summary(self) -> list[dict]:
        runs = [r for r in self.runs if r]
        n, gpu, host, enq, n_e2e, e2e = self.trace
        if n:
            trace = {"groups": n, "gpu_ms": gpu / n, "host_ms": host / n, "enqueue_ms": enq / n,
                     **({"e2e_ms": e2e / n_e2e} if n_e2e else {})}
            if runs:
                runs[-1]["trace"] = trace
            else:
                runs = [{"trace": trace}]
        return runs


def describe(runs: list[dict]) -> str:
    """One line for `playbook info`."""
    out = []
    for r in runs[:3]:
        parts = []
        if r.get("qps") is not None:
            parts.append(f"{r['qps']:.4g} qps")
        for key, name in (("compute", "GPU compute"), ("h2d", "H2D"), ("d2h", "D2H"), ("enqueue", "enqueue")):
            if (mean := (r.get(key) or {}).get("mean")) is not None:
                parts.append(f"{name} {mean:.4g} ms")
        if r.get("walltime_ms") and r.get("compute_total_ms"):
            parts.append(f"GPU compute {r['compute_total_ms'] / 1e3:.4g} s of {r['walltime_ms'] / 1e3:.4g} s walltime")
        if r.get("bound"):
            parts.append("warns bound by " + ", ".join(r["bound"]))
        if t := r.get("trace"):
            parts.append(f"{t['groups']} trace lines: GPU {t['gpu_ms']:.4g} ms, host {t['host_ms']:.4g} ms"
                         + (f", end to end {t['e2e_ms']:.4g} ms" if "e2e_ms" in t else "")
                         + f", enqueue {t['enqueue_ms']:.4g} ms")
        out.append(", ".join(parts))
    return "trtexec: " + "; ".join(out) + (f" (+{len(runs) - 3} runs)" if len(runs) > 3 else "")
