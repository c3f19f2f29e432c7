"""PyTorch/XLA metrics reports and PT_XLA_DEBUG lines (readers/xla_metrics.py) → findings for `playbook diagnose`.

The counts are the tool's own, cumulative since the process started; a report holds no time axis and no device
utilization, so every finding is `stated` and none vouches for health.

  recompilation   A lazy-tensor loop builds one graph per step (cut at mark_step) and compiles each distinct graph
                  once: the first steps compile a few (the step without and with optimizer state, evaluation), then
                  every step runs a cached graph. Allowance: WARM_GRAPHS compilations per step of the first
                  WARMUP_STEPS steps, all of it from the first step (the warm-up's graphs come in its first steps, not
                  two a step: the parameters' and data's first move, the step without and with optimizer state, a loss
                  read mid-step; the tool judges nothing before its WARMUP_STEPS-th), then FREQUENT per step after —
                  PT_XLA_DEBUG's own rule is FREQUENT after WARMUP_STEPS steps (csrc/runtime/metrics_analysis.cc
                  `MetricFrequency("CompileTime", 0.5f, 10)`), whose ratio of totals keeps warning after compilation
                  has stopped, so with two or more counts (reports, or the tool's `too frequent` lines) it is the
                  compilations added after the warm-up that must exceed FREQUENT per step. The steps are the report's
                  `[MetricsData; step=N]` header (N + 1: it counts from 0), its MarkStep counter or the tool's line;
                  without them the graph executions (ExecuteTime samples: at least one per step) stand for the steps,
                  which can only understate the rate. The level is the compilations beyond the allowance as a share of
                  the compile + execute time when both totals are there (shares as profiler_ops: 5% moderate, 20%
                  high), else high when they are at least one per step.
  host_sync       (a) `aten::_local_scalar_dense` per step: every read of a device scalar into Python (`.item()`,
                  `if t:`, printing a tensor) executes the pending graph and waits for it, cutting the step's graph;
                  more than SCALAR_READS_MODERATE per step (a logging loop reads one loss) is moderate, from
                  SCALAR_READS_HIGH high; with reports at several step counts, the reads added since the first. (b)
                  ops run on the CPU (any other `aten::` counter, or the tool's `Op(s) not lowered` line; all but
                  aten::nonzero, which runs there by design, lack a lowering): each call copies its tensors to the
                  host, runs on the CPU and copies back, cutting the graph there; with the steps known, the calls
                  (those added since the first report, with several) must reach FREQUENT per step (each is at least
                  one device-to-host copy, which the tool tolerates below that: a few calls in a long run, an
                  evaluation's or a checkpoint's, are not a cost of the steps); high when device-to-host transfers
                  (TransferFromServerTime / TransferFromDeviceTime samples or the tool's `too frequent` line) reach
                  one per step, else moderate. (c) without an unlowered op, transfers device-to-host at or above the
                  tool's own FREQUENT per step, beyond the scalar reads of (a) (one copy each): the host reads results
                  every step (moderate).
  PT_XLA_DEBUG's graph analysis blocks (`Compilation Analysis:` / `Execution Analysis:`): see `_graphs`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from playbook.knowledge import ids as cause_ids
from playbook.readers.xla_metrics import ATEN_OP, SCALAR_READS

WARMUP_STEPS = 10  # PT_XLA_DEBUG's warm-up before it judges the compile rate (metrics_analysis.cc)
FREQUENT = 0.5  # compilations (or device-to-host transfers) per step the tool calls too frequent
WARM_GRAPHS = 2  # compilations per step allowed in the warm-up: the step's graph and one variant (first step, eval)
SCALAR_READS_MODERATE, SCALAR_READS_HIGH = 2, 10  # device scalar reads per step
_TRANSFERS = ("TransferFromDeviceTime", "TransferFromServerTime")  # device → host copies (PJRT, XRT names)
_COMPILE = "CompileTime"
# different graphs compiled at one place in the user's code, more than a healthy loop's there: the first step's (no
# optimizer state yet), the steady step's, and the epoch's short last batch's
SITE_GRAPHS = WARM_GRAPHS + 2
# a step's end (debug_util.cpp's causes; 2.7 and later name mark_step `torch_xla.sync()`)
_STEP_END = re.compile(r"user (?:mark_step|`?torch_xla\.sync\(\)`?)$|(?:mark_step|`?torch_xla\.sync\(\)`?) "
                       r"(?:in parallel loader|when exiting a profiler StepTrace)|torch_xla\.compile$")
_VALUE_READ = "most likely user code trying to access tensor value"
_BY_DESIGN = ("aten::nonzero",)  # run on the CPU by design, not a missing lowering (docs/source/learn/troubleshoot.md)
# what to run next, PyTorch/XLA's own tools (docs/source/learn/troubleshoot.md), not torch.compile's or CUDA's
_NEXT_COMPILE = ("run with PT_XLA_DEBUG_LEVEL=2 (PT_XLA_DEBUG=1 on older builds): each compilation's cause, graph hash "
                 "and Python frame; the frame whose graph hash changes from step to step is where the graph varies")
_NEXT_READ = ("run with PT_XLA_DEBUG_LEVEL=2: each execution the tool ascribes to user code accessing a tensor's value "
              "names the Python frame that read it")
_NEXT_OP = ("print torch_xla.debug.metrics.metrics_report() after a few steps: each `Counter: aten::OP` is an op run on "
            "the CPU, its value the calls; find where the step calls it")


def allowance(steps: float) -> float:
    """Compilations a loop of `steps` steps may need without recompiling (module docstring)."""
    return WARM_GRAPHS * WARMUP_STEPS + FREQUENT * max(steps - WARMUP_STEPS, 0.0)


def _steps(report: dict) -> tuple[float | None, str]:
    """A report's step count and what it comes from. The header's N counts from 0 (debug/metrics_saver.py writes a
    report after each mark_step, numbering them 0, 1, ...): `step=N` follows N + 1 steps."""
    if report.get("step") is not None:
        return float(report["step"]) + 1, "step"
    if report["counters"].get("MarkStep"):
        return float(report["counters"]["MarkStep"]), "MarkStep"
    return None, ""


def _compiles(report: dict) -> int | None:
    metric = report["metrics"].get(_COMPILE) or {}
    if metric.get("samples") is not None:
        return int(metric["samples"])
    return report["counters"].get("UncachedCompile")


def findings(source: str, xla: dict, out: list[dict], level: Callable[[float], str | None]) -> int:
    """Append the findings of one file's reports and PT_XLA_DEBUG lines to `out`; how many reports it holds."""
    reports = xla.get("reports") or []
    where = f"PyTorch/XLA metrics in {source}"
    first = len(out)
    graphs = xla.get("graphs") or []
    if graphs and not reports and not (xla.get("frequent") or {}).get(_COMPILE):
        _graphs(f"PT_XLA_DEBUG graph analysis in {source}", graphs, out)
    else:
        _recompiles(where, reports, xla.get("frequent") or {}, out, level)
    _host_reads(where, reports, xla, out)
    for f in out[first:]:
        f.setdefault("next", _NEXT_COMPILE if f["hypothesis"] == cause_ids.RECOMPILATION else
                     _NEXT_OP if f.get("culprits") else _NEXT_READ)
    return len(reports) + sum(len(v) for v in (xla.get("frequent") or {}).values()) + len(graphs)


def _graphs(where: str, graphs: list[dict], out: list[dict]) -> None:
    """PT_XLA_DEBUG's analysis blocks (readers/xla_metrics.py `graphs`): the steps are the executions at a step's
    end (level 2); with them the compilations are judged against the warm-up allowance, without them a place in the
    user's code whose graph compiled SITE_GRAPHS or more different ways is a graph that changes (moderate).
    Executions the tool ascribes to user code reading a tensor's value mid-step are host syncs, per step as the
    scalar reads of a report."""
    compiled = [g for g in graphs if g["kind"] == "compilation"]
    steps = sum(1 for g in graphs if g["kind"] == "execution" and _STEP_END.match(g["cause"]))
    reads = sum(1 for g in graphs if g["kind"] == "execution" and g["cause"].startswith(_VALUE_READ))
    sites: dict[str, set[str]] = {}
    for g in compiled:
        sites.setdefault(g["site"] or g["cause"], set()).add(g["hash"])
    site, hashes = max(sites.items(), key=lambda kv: len(kv[1]), default=("", set()))
    causes = sorted({g["cause"] for g in compiled if (g["site"] or g["cause"]) == site})
    if steps and len(compiled) > allowance(steps):
        out.append({"hypothesis": cause_ids.RECOMPILATION, "stated": True,
                    "level": "high" if len(compiled) - allowance(steps) >= steps else "moderate", "evidence": (
            f"{where}: {len(compiled):,} graph compilations in {steps:,} steps (executions at a step's end); a loop "
            f"whose graph repeats compiles about {allowance(steps):.0f} by then. Most different graphs at "
            f"{site} ({len(hashes)}; cause: {', '.join(causes)[:200]})")})
    elif not steps and len(hashes) >= SITE_GRAPHS:
        out.append({"hypothesis": cause_ids.RECOMPILATION, "stated": True, "level": "moderate", "evidence": (
            f"{where}: the graph requested at {site} compiled {len(hashes)} different ways (graph hashes; cause: "
            f"{', '.join(causes)[:200]}): a loop whose graph repeats compiles it up to {SITE_GRAPHS - 1} times (the "
            "first step's, the steady step's, a short last batch's) — what changes there (a shape, a Python value, "
            "a host read cutting the graph) recompiles it")})
    if steps and reads / steps > SCALAR_READS_MODERATE:
        per = reads / steps
        out.append({"hypothesis": cause_ids.HOST_SYNC, "stated": True,
                    "level": "high" if per >= SCALAR_READS_HIGH else "moderate", "evidence": (
            f"{where}: {reads:,} executions that the tool ascribes to user code reading a tensor's value before the "
            f"step's end, in {steps:,} steps ({per:,.1f} per step): each cuts the step's graph and waits for it")})


def _recompiles(where: str, reports: list[dict], frequent: dict, out: list[dict], level) -> None:
    points: dict[float, int] = {}  # steps -> compilations by then
    proxy = False
    last = reports[-1] if reports else None
    for r in reports:
        steps, _ = _steps(r)
        if steps is None and (ex := (r["metrics"].get("ExecuteTime") or {}).get("samples")):
            steps, proxy = float(ex), True  # executions stand for steps: at least one per step
        if steps is not None and (c := _compiles(r)) is not None:
            points[steps] = max(points.get(steps, 0), c)
    for counts, steps in frequent.get(_COMPILE, []):
        points[float(steps)] = max(points.get(float(steps), 0), counts)
    if not points:
        return
    seq = sorted(points.items())
    steps, compiles = seq[-1]
    excess = compiles - allowance(steps)
    ref = next(((s, c) for s, c in seq if s >= WARMUP_STEPS), seq[0])
    later = (compiles - ref[1]) / (steps - ref[0]) if steps > ref[0] else None
    if excess <= 0 or (later is not None and ref[0] >= WARMUP_STEPS and later <= FREQUENT):
        return
    unit = "graph executions" if proxy else "steps"
    metrics = last["metrics"] if last else {}
    comp_s = (metrics.get(_COMPILE) or {}).get("total", math.nan)
    exec_s = (metrics.get("ExecuteTime") or {}).get("total", math.nan)
    timed = last is not None and _compiles(last) == compiles and math.isfinite(comp_s) and math.isfinite(exec_s) \
        and comp_s + exec_s > 0
    share = comp_s * excess / compiles / (comp_s + exec_s) if timed and compiles else None
    lvl = level(share) if share is not None else ("high" if excess >= steps else "moderate")
    if lvl is None:
        return
    growth = ""
    if len(seq) >= 2:
        (s0, c0), (s1, c1) = seq[-2], seq[-1]
        growth = f"; {c1 - c0:,} of them between {s0:g} and {s1:g} {unit}"
    times = (f" ({comp_s:,.1f} s compiling against {exec_s:,.1f} s executing graphs: "
             f"{share:.0%} of that time is compilations beyond the warm-up)") if share is not None else ""
    evidence = (f"{where}: {compiles:,} graph compilations (CompileTime samples) by {steps:g} {unit}{growth}{times}; "
                f"a loop whose graph repeats compiles about {allowance(steps):.0f} by then (up to "
                f"{WARM_GRAPHS * WARMUP_STEPS} in its first {WARMUP_STEPS} steps, then cached). The graph changes "
                "from step to step: a shape that varies (pad or bucket it), a Python value baked into the graph, a "
                "tensor read on the host mid-step; "
                "PT_XLA_DEBUG_LEVEL=2 prints each compilation's cause and Python frame")
    out.append({"hypothesis": cause_ids.RECOMPILATION, "level": lvl, "stated": True, "evidence": evidence,
                **({"share": share} if share is not None else {})})


def _host_reads(where: str, reports: list[dict], xla: dict, out: list[dict]) -> None:
    last = reports[-1] if reports else {"metrics": {}, "counters": {}, "step": None}
    steps, source = _steps(last)
    counters = last["counters"]
    reads = counters.get(SCALAR_READS)
    # with reports at two step counts or more, the reads added since the first (its step may hold a one-off burst:
    # a check of every parameter); a counter at 0 is not printed
    base = min((r for r in reports if _steps(r)[0]), key=lambda r: _steps(r)[0], default=None)
    first = (_steps(base)[0], base["counters"].get(SCALAR_READS, 0)) if base is not None else None
    span, added = (steps - first[0], reads - first[1]) if reads and steps and first and first[0] < steps \
        and first[1] <= reads else (steps, reads)
    if added and span:
        per = added / span
        since = f", since step {first[0]:g}" if span != steps else ""
        if per > SCALAR_READS_MODERATE:
            out.append({"hypothesis": cause_ids.HOST_SYNC, "stated": True,
                        "level": "high" if per >= SCALAR_READS_HIGH else "moderate", "evidence": (
                f"{where}: {added:,} device scalars read into Python ({SCALAR_READS}) in {span:g} steps "
                f"({source}{since}): {per:,.0f} per step. Each `.item()`, `if tensor:` or printed tensor executes the "
                "pending graph and waits for it, cutting the step's graph — read metrics every N steps instead")})
    ops = {k: v for k, v in counters.items() if ATEN_OP.fullmatch(k) and k != SCALAR_READS}  # an op's name, no other text
    calls, over = sum(ops.values()), steps
    if base is not None and steps and _steps(base)[0] < steps:  # the calls added since the first report, as the reads
        calls -= sum(base["counters"].get(op, 0) for op in ops)
        over = steps - _steps(base)[0]
    if ops and over and calls / over < FREQUENT:
        ops = {}  # fewer CPU round trips than the tool tolerates device-to-host copies: not a cost of the steps
    named = [op for op in xla.get("unlowered") or [] if op not in counters or op in ops]
    for op in ops:
        if op not in named:
            named.append(op)
    transfers = _transfers(last, xla)
    if named:
        rate = transfers[0] / transfers[1] if transfers else None
        moved = (f"; {transfers[0]:,} copies device to host in {transfers[1]:,} steps ({rate:.1f} per step)"
                 if transfers else "")
        calls = ", ".join(f"{op} ({ops[op]:,} calls)" if op in ops else op for op in named[:6])
        missing = [op for op in named if op not in _BY_DESIGN]
        why = "; ".join(([f"{', '.join(missing[:6])} {'have' if len(missing) > 1 else 'has'} no XLA lowering "
                          f"(replace {'them' if len(missing) > 1 else 'it'} or request the lowering)"] if missing
                         else []) + (["aten::nonzero runs there by design, its output's size depending on the values "
                                      "(masked indexing): torch.where or a fixed-size mask avoids it"]
                                     if len(missing) < len(named) else []))
        out.append({"hypothesis": cause_ids.HOST_SYNC, "stated": True,
                    "level": "high" if rate is not None and rate >= 1 else "moderate", "culprits": named[:6],
                    "evidence": (
            f"{where}: op{'s' * (len(named) > 1)} run on the CPU: {calls}{moved}. Each call's tensors go to the "
            f"host and back and the step's graph is cut there; {why}")})
        return
    # each scalar read judged in (a) is a device-to-host copy of its own: a loop reading one loss a step, within
    # (a)'s allowance, makes one a step too; the copies beyond the reads must reach FREQUENT per step
    paired = reads if reads and steps and transfers is not None and transfers == _transfers(last, {}) else 0
    if transfers and (transfers[0] - paired) / transfers[1] >= FREQUENT:
        besides = f", {paired:,} of them scalar reads" if paired else ""
        out.append({"hypothesis": cause_ids.HOST_SYNC, "stated": True, "level": "moderate", "evidence": (
            f"{where}: {transfers[0]:,} copies device to host in {transfers[1]:,} steps{besides} "
            f"({(transfers[0] - paired) / transfers[1]:.1f} per step beyond them): the host reads results every "
            "step (`.item()`, `.cpu()`, printing), each a wait for the device" if paired else
            f"{where}: {transfers[0]:,} copies device to host in {transfers[1]:,} steps "
            f"({transfers[0] / transfers[1]:.1f} per step): the host reads results every step (`.item()`, "
            "`.cpu()`, printing), each a wait for the device")})


def _transfers(report: dict, xla: dict) -> tuple[int, int] | None:
    """(device-to-host copies, steps) from the tool's `too frequent` lines, else the report's samples. With two lines
    or more, the copies added between the first and the last: the tool's ratio of totals keeps warning after a burst
    at the start (as its CompileTime warning does after compiling stopped)."""
    for name in _TRANSFERS:
        if lines := (xla.get("frequent") or {}).get(name):
            (c0, s0), (c1, s1) = min(lines, key=lambda p: p[1]), max(lines, key=lambda p: p[1])
            return (c1 - c0, s1 - s0) if s1 > s0 and c1 >= c0 else (c1, s1)  # fewer later: another process's
    steps, _ = _steps(report)
    for name in _TRANSFERS:
        n = (report["metrics"].get(name) or {}).get("samples")
        if n and steps:
            return int(n), int(steps)
    return None
