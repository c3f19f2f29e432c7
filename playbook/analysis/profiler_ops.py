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
"""

from __future__ import annotations

from typing import Any

from playbook.knowledge import ids as cause_ids
from playbook.readers.profiler_table import META_PREFIX

MODERATE, HIGH = 0.05, 0.20


def _level(share: float) -> str | None:
    return "high" if share >= HIGH else ("moderate" if share >= MODERATE else None)


def table_summary(source: str, table: dict, findings: list[dict]) -> dict:
    """One file's tables: the base, the sync and loader shares; its findings appended to `findings`."""
    _fit_loader(source, table, findings)
    steps_s, self_cpu = float(table.get("steps_s") or 0.0), float(table.get("self_cpu_total_s") or 0.0)
    base, what = (steps_s, f"{table.get('steps')} profiled steps") if steps_s > 0 else (self_cpu, "self CPU time")
    out = {"source": source, "base_s": base, "base": what, "sync_share": None, "loader_share": None,
           "device_s": float(table.get("self_device_total_s") or 0.0), "steps_s": steps_s}
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
    loader_s = float(table.get("loader_share") or 0.0) * self_cpu
    loader = loader_s / base
    out["loader_share"] = loader if loader_s else None
    if lvl := _level(loader):
        findings.append({"hypothesis": cause_ids.DATA_STARVATION, "level": lvl, "share": loader, "evidence": (
            f"{where}: enumerate(DataLoader) takes {loader:.0%} of the {what} (waiting for the next batch)")})
    return out


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
    """Lightning's SimpleProfiler report: the training loop's waits for the next batch against the epochs' time."""
    epoch, loader = float(table.get("fit_epoch_s") or 0.0), float(table.get("fit_loader_s") or 0.0)
    if epoch > 0 and (lvl := _level(share := min(loader / epoch, 1.0))):
        findings.append({"hypothesis": cause_ids.DATA_STARVATION, "level": lvl, "share": share, "evidence": (
            f"Lightning profiler report in {source}: the training loop waits {loader:.3f} s for its next batch "
            f"(train_dataloader_next / get_train_batch), {share:.0%} of the {epoch:.3f} s of training epochs")})


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
    base, sync_share, loader_share}], findings [{hypothesis, level, share, evidence}]."""
    tables = {k[len(META_PREFIX):]: v for k, v in (bundle.meta or {}).items()
              if isinstance(k, str) and k.startswith(META_PREFIX) and isinstance(v, dict)}
    if not tables:
        return None
    findings: list[dict] = []
    return {"tables": [table_summary(src, t, findings) for src, t in sorted(tables.items())], "findings": findings,
            "warnings": []}
