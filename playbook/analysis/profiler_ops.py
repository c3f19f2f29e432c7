"""torch.profiler op tables (playbook.readers.profiler_table: `prof.key_averages().table()` text in a log) → shares
of the profiled time and findings for `playbook diagnose`.

A table has no time axis, only totals over the profiled window. The base is the profiled steps' wall time on the
host (the CPU total of the `ProfilerStep*` rows a `schedule` records), else the table's "Self CPU time total" (the
CPU time inside ops: the window less what the host spent outside any op, so shares are overstated by that much).

Findings, at the thresholds the Kineto and nsys analyses use (shares of the base; TensorFlow profiler's 5% / 20%):
  host_sync         CPU time blocked in cuda*Synchronize (`.item()`, `.cpu()`, `print(tensor)` wait there)
  data_starvation   CPU time in `enumerate(DataLoader)` ops (waiting for the next batch); in Lightning's
                    SimpleProfiler report, `train_dataloader_next` / `get_train_batch` against `run_training_epoch`;
                    (moderate) the profiled steps' own self CPU at HIGH of their time: work inside the step that no
                    recorded op covers, most often batches built in the main process
  h2d_copy          CPU time in copy calls (cudaMemcpy*) where the device's copies run host to device: a copy from
                    pageable memory is staged by the driver and holds the host (`Memcpy HtoD (Pageable -> Device)`)
  memory_pressure   CPU time in the driver's allocator (cudaMalloc / cudaFree): the caching allocator going back to
                    the driver (fragmentation, empty_cache, ever-new shapes) instead of reusing its blocks
  launch_bound      the launch calls' self CPU time (cudaLaunchKernel / cuLaunchKernel rows: n launches costing
                    n·L) against the device's whole time (the `Self CUDA time total` line, K): one thread that spends
                    n·L launching keeps the device at most K / (n·L) busy, so at least 1 − K / (n·L) of the time is
                    idle (the nsys analysis's bound, analysis.nsys_profiles); from MIN_LAUNCHES launches, and only
                    with the total line (the rows of a table cut by row_limit understate K)

PyTorch/XLA metrics reports and PT_XLA_DEBUG lines (readers/xla_metrics.py): recompilation and host_sync from the
tool's own counts, see analysis/xla_runtime.py.

cProfile / pstats listings (readers/pstats_text.py: host time only, per function) give the same two causes, as
shares of the total the listing states (`... function calls in T seconds`): host_sync from the calls that wait for
the device (`.item()`, `.cpu()`, `.to()`, `torch.as_tensor` ...), data_starvation from the DataLoader's `__next__`
(or the AdvancedProfiler's loader action against its epochs, as for the SimpleProfiler report). A paste without its
total line states no window: its calls are a finding (moderate, share unknown, `stated`) when they hold at least
HIGH of the own time of the rows shown. A listing vouches for the loop (`host_blocked_s`: diagnosis.answer lets it
call a run healthy) only when it comes from a GPU run and at least half its stated total is torch calls held
>= 1 ms each: the host waiting for room in the device's launch queue, the device busy.
"""

from __future__ import annotations

from typing import Any

from playbook.analysis import input_pipeline, platform_rules, text_profiles, variant_runs, xla_runtime
from playbook.knowledge import ids as cause_ids
from playbook.model.schema import meta_sections
from playbook.readers.profiler_table import FIT_LOADER, META_PREFIX

MODERATE, HIGH = 0.05, 0.20
MIN_LAUNCHES = 20  # as nsys_profiles and the trace's launch_bound: a handful of launches is one-off cost
GPU_BUSY = ("kernel", "memcpy", "memset", "communication")  # breakdown categories with work on the GPU
# a cProfile listing vouches for the loop when the host's waits on the busy device are at least half its stated
# total: the rest of what the host did (Python, I/O, setup) is then the smaller part and cannot hide a larger cause
VOUCH_SHARE = 0.5


def _level(share: float) -> str | None:
    return "high" if share >= HIGH else ("moderate" if share >= MODERATE else None)


def table_summary(source: str, table: dict, findings: list[dict], healthy: list[str],
                  warnings: list[str] | None = None) -> dict:
    """One file's tables: the base, the sync and loader shares; its findings appended to `findings`, what its
    cProfile listings vouch for to `healthy`, the input-pipeline tools' cautions to `warnings`."""
    warnings = [] if warnings is None else warnings
    _fit_loader(source, table, findings)
    steps_s, self_cpu = float(table.get("steps_s") or 0.0), float(table.get("self_cpu_total_s") or 0.0)
    base, what = (steps_s, f"{table.get('steps')} profiled steps") if steps_s > 0 else (self_cpu, "self CPU time")
    listings = (table.get("pstats") or {}).get("sections", [])
    vouched = sum(_listing(source, s, findings, healthy) for s in listings)
    out = {"source": source, "base_s": base, "base": what, "sync_share": None, "loader_share": None,
           "device_s": float(table.get("self_device_total_s") or 0.0), "steps_s": steps_s,
           "ops": int(table.get("ops") or 0), "totals_only": bool(table.get("totals_only")),
           "listings": len(listings), "host_blocked_s": vouched,
           "host_texts": text_profiles.findings(source, table, findings, _level),
           "tfprof_ops": int((table.get("tfprof") or {}).get("ops") or 0),
           "xla_reports": xla_runtime.findings(source, table["xla"], findings, _level) if table.get("xla") else 0,
           "input_statements": input_pipeline.findings(source, table["input_pipeline"], findings,
                                                       warnings, _level)
           if table.get("input_pipeline") else 0,
           "platform_statements": platform_rules.findings(source, table["platform_rules"], findings,
                                                          warnings, _level)
           if table.get("platform_rules") else 0,
           "variant_notes": [],
           "variant_tables": 0}
    if table.get("variants"):
        out["variant_tables"] = variant_runs.findings(source, table["variants"], findings, _level, out["variant_notes"])
    _breakdown(source, table, findings, out)
    if base <= 0:
        return out
    where = f"torch.profiler table in {source}"
    _outside_ops(table, where, findings)
    sync = float(table.get("sync_s") or 0.0) / base
    out["sync_share"] = sync
    if lvl := _level(sync):
        findings.append({"hypothesis": cause_ids.HOST_SYNC, "level": lvl, "share": sync, "evidence": (
            f"{where}: the CPU blocks in cuda*Synchronize for {sync:.0%} of the {what} "
            f"({table.get('sync_s', 0.0) * 1e3:.0f} ms in {table.get('sync_calls', 0)} calls: .item(), .cpu() or "
            "a printed tensor waits for the GPU, which then idles until the host launches again)")})
    _copy_and_alloc(table, base, what, where, findings)
    _launches(table, where, findings)
    loader_s = float(table.get("loader_share") or 0.0) * self_cpu
    loader = loader_s / base
    out["loader_share"] = loader if loader_s else None
    if lvl := _level(loader):
        findings.append({"hypothesis": cause_ids.DATA_STARVATION, "level": lvl, "share": loader, "evidence": (
            f"{where}: enumerate(DataLoader) takes {loader:.0%} of the {what} (its CPU total: waiting for the "
            "next batch, and the loading it runs in this process)")})
    return out


def _launches(table: dict, where: str, findings: list[dict]) -> None:
    """launch_bound when the launch calls cost the host more than the device ran in all (module docstring)."""
    n, launch = int(table.get("kernel_launches") or 0), float(table.get("launch_s") or 0.0)
    device = float(table.get("self_device_total_s") or 0.0)
    if n < MIN_LAUNCHES or launch <= 0 or device <= 0 or not table.get("device_total_stated"):
        return
    idle = 1.0 - device / launch
    if lvl := _level(idle):
        findings.append({"hypothesis": cause_ids.LAUNCH_BOUND, "level": lvl, "share": idle, "evidence": (
            f"{where}: {n:,} kernel launches cost {launch / n * 1e6:,.1f} µs of CPU time each ({launch * 1e3:,.1f} ms) "
            f"for {device * 1e3:,.1f} ms of device time in all: a thread launching them keeps the device at most "
            f"{1 - idle:.0%} busy (many small kernels; Python dispatch between them adds more)")})


def _breakdown(source: str, table: dict, findings: list[dict], out: dict) -> None:
    """Step-time breakdown tables (readers/breakdown_table.py): torch_tb_profiler counts each moment once, for the
    first category active in Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CPU Exec, Other — so the
    categories after the GPU's own are time the GPU has nothing running. The DataLoader's share is the wait for the
    next batch; CPU Exec and Runtime together are the host running operators and CUDA runtime calls with no GPU
    work queued: the GPU waits for the host to issue it. Sets the summary's `steps_s` (the steps' time) and
    `device_s` (the GPU's busy time) when the table states them."""
    tables = (table.get("breakdown") or {}).get("tables") or []
    step = sum(t["step_s"] for t in tables)
    if step <= 0:
        return
    parts: dict[str, float] = {}
    for t in tables:
        for cat, sec in t["parts"].items():
            parts[cat] = parts.get(cat, 0.0) + sec
    busy = sum(parts.get(c, 0.0) for c in GPU_BUSY)
    out["steps_s"], out["device_s"] = out["steps_s"] or step, out["device_s"] or busy
    where = (f"step-time breakdown in {source} (the GPU runs {busy / step:.0%} of the {step / len(tables):.3g} s "
             f"step: Kernel, Memcpy, Memset, Communication)")
    for cid, cats, what in ((cause_ids.DATA_STARVATION, ("dataloader",), "the DataLoader: waiting for the next batch"),
                            (cause_ids.LAUNCH_BOUND, ("cpu_exec", "runtime"), (
                                "the host running operators and CUDA runtime calls (CPU Exec, Runtime) with no GPU "
                                "work queued: the GPU waits for the host to issue it (op overhead, small kernels, "
                                "Python between ops)"))):
        sec = sum(parts.get(c, 0.0) for c in cats)
        if lvl := _level(share := sec / step):
            findings.append({"hypothesis": cid, "level": lvl, "share": share,
                             "evidence": f"{where}: {share:.0%} of it ({sec:.3g} s) is {what}"})


def _outside_ops(table: dict, where: str, findings: list[dict]) -> None:
    """The profiled steps' own self CPU time: host time inside a step that no recorded op covers. The profiler
    records every aten op, CUDA call, `enumerate(DataLoader)` and record_function range, so what is left is Python
    between them (microseconds per op in eager mode) or work nothing records: batches built in the main process,
    preprocessing, logging. At HIGH of the steps' time it is that work, and the GPU waits for it."""
    steps_s, own = float(table.get("steps_s") or 0.0), float(table.get("steps_self_s") or 0.0)
    share = own / steps_s if steps_s > 0 else 0.0
    if share >= HIGH:
        # the loss is measured (the GPU cannot run what the host has not launched), its cause inferred
        findings.append({"hypothesis": cause_ids.DATA_STARVATION, "level": "moderate", "anomaly": "high",
                         "share": share, "evidence": (
            f"{where}: {share:.0%} of the {table.get('steps')} profiled steps' time ({own:.3f} s of {steps_s:.3f} s) "
            "is host time inside the steps that no recorded op covers (ProfilerStep's self CPU): the loop builds "
            "its batches, preprocesses or logs in Python the profiler does not record, and the GPU waits; wrap "
            "the suspects in record_function or time the loop's phases (`playbook record`) to name it")})


def _fit_loader(source: str, table: dict, findings: list[dict]) -> None:
    """Lightning's Simple/AdvancedProfiler report: the training loop's waits for the next batch against the epochs'
    time; without the epochs (an AdvancedProfiler paste of the loader's action alone) the wait, its share unknown."""
    epoch, loader = float(table.get("fit_epoch_s") or 0.0), float(table.get("fit_loader_s") or 0.0)
    if epoch > 0 and (lvl := _level(share := min(loader / epoch, 1.0))):
        findings.append({"hypothesis": cause_ids.DATA_STARVATION, "level": lvl, "share": share, "evidence": (
            f"Lightning profiler report in {source}: the training loop waits {loader:.3f} s for its next batch "
            f"(train_dataloader_next / get_train_batch), {share:.0%} of the {epoch:.3f} s of training epochs")})
    elif epoch <= 0 and loader > 0:
        findings.append({"hypothesis": cause_ids.DATA_STARVATION, "level": "moderate", "stated": True, "evidence": (
            f"Lightning profiler report in {source}: the training loop waits {loader:.3f} s for its next batch "
            "(train_dataloader_next / get_train_batch); the report states no epoch time, so the share of the run "
            "is unknown: profile run_training_epoch too, or time the loop's phases (`playbook record`)")})


def _listing(source: str, s: dict, findings: list[dict], healthy: list[str]) -> float:
    """One cProfile section (pstats_text.py): its host_sync and data_starvation findings appended to `findings`;
    the seconds it vouches for (its stated total, when the device kept the host waiting: module docstring, said in
    `healthy`), else 0."""
    total, own = s.get("total_s"), float(s.get("own_s") or 0.0)
    where = f"cProfile listing in {source}" + (f" (action {s['action']})" if s.get("action") else "")
    base = (f"of the {total:.3f} s the listing states" if s.get("action") is None else
            f"of the {total:.3f} s of the action") if total else ""
    calls = f"{float(s['sync_s']):.3f} s in {int(s['sync_calls']):,} calls of {', '.join(s['sync_names'][:4])}"
    why = ("each returns only once the device has answered or the copy is done, and the device idles until the "
           "host launches again")
    loader = 0.0 if FIT_LOADER.search(str(s.get("action") or "")) else float(s.get("loader_s") or 0.0)
    found = False
    if total:
        for hyp, sec, text in ((cause_ids.HOST_SYNC, float(s["sync_s"]), f"the host waits on the device: {calls}; "
                                f"{why}"),
                               (cause_ids.DATA_STARVATION, loader, f"the DataLoader's __next__ takes {loader:.3f} s "
                                "(waiting for the next batch)")):
            if lvl := _level(share := min(sec / total, 1.0)):
                found = True
                findings.append({"hypothesis": hyp, "level": lvl, "share": share,
                                 "evidence": f"{where}: {share:.0%} {base}: {text}"})
    elif own > 0 and float(s["sync_s"]) >= HIGH * own:
        found = True
        findings.append({"hypothesis": cause_ids.HOST_SYNC, "level": "moderate", "stated": True, "evidence": (
            f"{where}: the host waits on the device: {calls}, {float(s['sync_s']) / own:.0%} of the {own:.3f} s the "
            f"rows shown spend in their own code; {why}. The paste states no total (the `function calls ... in T "
            "seconds` line), so the share of the run is unknown (at most that)")})
    blocked = float(s.get("blocked_s") or 0.0)
    if not (total and not found and s.get("device_rows") and blocked >= VOUCH_SHARE * total):
        return 0.0
    top = ", ".join(f"{name} {sec:.3f} s" for name, sec in s.get("top") or [])
    healthy.append(f"{where}: {blocked / total:.0%} {base} is the host held >= 1 ms per call in torch's own calls "
                   f"({top}): a launch takes microseconds, so the host waits for room in the busy device's queue; "
                   f"host-device waits {float(s['sync_s']) / total:.0%}, the DataLoader {loader / total:.0%}")
    return float(total)


def _copy_and_alloc(table: dict, base: float, what: str, where: str, findings: list[dict]) -> None:
    """The copy and allocator findings of one table (see the module docstring). A device-to-host copy is the host
    asking for a result (.item(), .cpu()): its wait is a sync, and pinning would not remove it, so the copy calls
    count as host-to-device only where the device's host-to-device copies outweigh its device-to-host ones."""
    copy = float(table.get("copy_s") or 0.0) / base
    h2d, d2h = float(table.get("h2d_device_s") or 0.0), float(table.get("d2h_device_s") or 0.0)
    if (lvl := _level(copy)) and h2d > d2h:
        pageable = table.get("pageable") or []
        findings.append({"hypothesis": cause_ids.H2D_COPY, "level": lvl, "share": copy, "evidence": (
            f"{where}: the CPU spends {copy:.0%} of the {what} in copy calls (cudaMemcpy*, "
            f"{table.get('copy_s', 0.0):.3f} s) while the device copies host to device for {h2d:.3f} s"
            + (f" from pageable memory ({', '.join(pageable)}): the driver stages each copy and holds the host; "
               "pinned memory (pin_memory=True, non_blocking=True) makes them asynchronous" if pageable else ""))})
    alloc = float(table.get("alloc_s") or 0.0) / base
    if lvl := _level(alloc):
        findings.append({"hypothesis": cause_ids.MEMORY_PRESSURE, "level": lvl, "share": alloc, "evidence": (
            f"{where}: the CPU spends {alloc:.0%} of the {what} in the driver's allocator (cudaMalloc / cudaFree, "
            f"{table.get('alloc_s', 0.0):.3f} s): the caching allocator returns to the driver instead of reusing "
            "its blocks (fragmentation, torch.cuda.empty_cache(), ever-new tensor shapes)")})


def summarize(bundle: Any) -> dict | None:
    """JSON-ready summary of the profiler tables in `bundle` (None when it holds none): tables [{source, base_s,
    base, sync_share, loader_share, device_s, steps_s, ops, listings, host_blocked_s}], findings [{hypothesis, level, share,
    evidence}], vouched [what cProfile listings vouch for: evidence of health]."""
    tables = dict(meta_sections(bundle.meta, META_PREFIX))
    if not tables:
        return None
    findings: list[dict] = []
    healthy: list[str] = []
    warnings: list[str] = []
    return {"tables": [table_summary(src, t, findings, healthy, warnings) for src, t in sorted(tables.items())],
            "findings": findings, "vouched": healthy, "warnings": warnings}
