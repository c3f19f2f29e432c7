"""What each event of a Chrome trace is, read from the trace's own vocabulary: every trace becomes rows in Kineto's
categories (`kernel`, `gpu_memcpy`, `gpu_memset`, `gpu_user_annotation`, `cuda_runtime`, `cpu_op`,
`user_annotation`), which the analyses understand.

- Other profilers' categories map by table (`canonical_category`): Paddle's `CudaRuntime` is `cuda_runtime`, its
  `Operator` `cpu_op`, its `ProfileStep` / `Dataloader` / `Forward` ... `user_annotation`.
- A trace that names no GPU work by category (XProf / TensorBoard trace-viewer JSON from JAX, TensorFlow or
  PyTorch/XLA, whose events carry no `cat`; TensorFlow 1's timeline, whose every event is an `Op`) takes each event's
  role from its process and thread names (`lane_roles`): a process naming a device (`/device:GPU:0`,
  `/job:.../device:GPU:0/stream:7 Compute`, `Device 0 (GPU)`) holds device lanes; a lane naming a stream
  (`Stream #14(Kernel)`, `stream 7`, `/stream:7`) runs GPU work on that stream (copies when it or the event is a
  `Memcpy`), a `memcpy` lane copies; the device's other lanes (`XLA Ops`, `XLA Modules`, `Steps`, `stream:all`) are
  projections of that work, not work of their own — except on a device without any stream lane (a TPU), whose
  `XLA Ops` lane is its work. A process naming a device whose streams live in other processes is the host's side
  of that device (TensorFlow 1's `/job:.../device:GPU:0 Compute`: `cpu_op`); every lane of any other process is
  the host's (`user_annotation`).
- Names lose a display duration the writer appended (Paddle's `volta_sgemm_128x64_nn[1.000 ms]`).

Times are never rescaled here: the Trace Event Format's `ts` / `dur` are µs whatever `displayTimeUnit` says (that key
only sets how a viewer shows them; XProf writes "ns" with µs timestamps).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

# Kineto's own categories of GPU rows (the reader sets their `stream`)
GPU_CATEGORIES = frozenset({
    "kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "gpu_user_annotation", "cuda_sync",
    "mtia_ccp_events",
})
# other profilers' categories → Kineto's (Paddle's TracerEventType names, as its chrome exporter writes them)
FOREIGN_CATEGORIES = {
    "CudaRuntime": "cuda_runtime", "MluRuntime": "cuda_runtime",
    "Operator": "cpu_op", "OperatorInner": "cpu_op", "PythonOp": "cpu_op",
    "ProfileStep": "user_annotation", "Dataloader": "user_annotation", "Forward": "user_annotation",
    "Backward": "user_annotation", "Optimization": "user_annotation", "UserDefined": "user_annotation",
    "PythonUserDefined": "user_annotation", "Communication": "user_annotation",
}
_DISPLAY_DURATION_RE = re.compile(r"\[\s*\d+(?:\.\d+)?\s*(?:ns|us|µs|ms|s)\s*\]$")
# "/device:GPU:0" (XProf, TensorFlow), "/gpu:0/stream:7" (TensorFlow 1), "Device 0 (GPU)" (Paddle writes "Deivce")
_DEVICE_RE = re.compile(r"(?:device:|/)(GPU|TPU|XPU|NPU|HPU|MLU):(\d+)|\bDev[ie]{2}ce\s+(\d+)\s*\((GPU|MLU|NPU|XPU)\)",
                        re.IGNORECASE)
# a stream number has at most 9 digits (the int64 stream column; CUDA's and XLA's are small): a longer one is damage
_STREAM_RE = re.compile(r"\bstream\s*(?:[#:]\s*)?(\d{1,9})(?!\d)", re.IGNORECASE)
_AGGREGATE_RE = re.compile(r"stream\s*:\s*all", re.IGNORECASE)
_DEVICE_OP_LANES = frozenset({"XLA Ops"})  # a device's own op lane when it has no stream lane (TPU)


def display_name(name: str) -> str:
    """`name` without a trailing display duration such as "[1.234 ms]"."""
    return _DISPLAY_DURATION_RE.sub("", name) if name.endswith("]") else name


def canonical_category(cat: str) -> str:
    """Kineto's category for another profiler's (unchanged when it is not in FOREIGN_CATEGORIES)."""
    return FOREIGN_CATEGORIES.get(cat, cat)


def _lane(pname: str, tname: str) -> tuple[str | None, str, int]:
    """(device key or None for the host, kind: "stream" | "copy" | "ops" | "aggregate" | "other", stream number or
    -1)."""
    dev = _DEVICE_RE.search(pname)
    if dev is None:
        return None, "other", -1
    key = (dev.group(1) or dev.group(4) or "").upper() + ":" + (dev.group(2) or dev.group(3) or "0")
    text = f"{tname} {pname}"
    if _AGGREGATE_RE.search(text):
        return key, "aggregate", -1
    m = _STREAM_RE.search(tname) or _STREAM_RE.search(pname)
    if m:
        return key, "stream", int(m.group(1))
    if "memcpy" in text.lower():
        return key, "copy", -1
    return key, "ops" if tname in _DEVICE_OP_LANES else "other", -1


def lane_roles(cols: dict, threads: dict[str, str], processes: dict[str, str]) -> dict | None:
    """Set `cat` and `stream` of every row in `cols` (frame_columns' output) from its process and thread names,
    when no row has a GPU category. Returns {"roles_from": "process/thread names", "devices": [...]} when it did
    (for the rank's metadata), else None."""
    cat = cols["cat"]
    if len(cat) == 0 or cat.isin(GPU_CATEGORIES).any():
        return None
    pid, tid = np.asarray(cols["pid"]), np.asarray(cols["tid"])
    pairs, inverse = np.unique(np.stack([pid, tid], axis=1), axis=0, return_inverse=True)
    lanes = [_lane(processes.get(str(p), ""), threads.get(f"{p}:{t}", "")) for p, t in pairs]
    streamed = {(key, p) for (key, kind, _), (p, _) in zip(lanes, pairs, strict=True) if kind in ("stream", "copy")}
    streamed_devices = {key for key, _ in streamed}
    if not {key for key, _, _ in lanes if key}:
        return None  # no device named: nothing to say which rows are GPU work
    role, stream = [], []
    for (key, kind, number), (p, t) in zip(lanes, pairs, strict=True):
        work = kind in ("stream", "copy") or (kind == "ops" and key not in streamed_devices)
        projection = kind == "aggregate" or (key, p) in streamed or key not in streamed_devices
        if key is None or not (work or projection):
            # the host; or a process naming a device whose streams other processes hold: TensorFlow 1's
            # "/job:.../device:GPU:0 Compute", the executor's side of the GPU ops
            role.append("user_annotation" if key is None else "cpu_op")
            stream.append(-1)
        elif work:
            role.append("gpu_memcpy" if kind == "copy" else "kernel")
            stream.append(number if number >= 0 else int(t))
        else:
            role.append("gpu_user_annotation")
            stream.append(int(t))
    row_role = np.asarray(role, dtype=object)[inverse.ravel()]
    names = cols["name"].astype(str).str.lower()  # "MemcpyHToD" (XProf), "MEMCPYHtoD" (TensorFlow 1's GPU tracer)
    work = row_role == "kernel"
    row_role[work & names.str.startswith("memcpy").to_numpy()] = "gpu_memcpy"
    row_role[work & names.str.startswith("memset").to_numpy()] = "gpu_memset"
    cols["cat"] = pd.Series(pd.array(row_role, dtype=cat.dtype))
    cols["stream"] = np.asarray(stream, dtype=np.int64)[inverse.ravel()]
    devices = sorted({key for key, _, _ in lanes if key})
    return {"roles_from": "process/thread names", "devices": devices, **_blind(lanes, inverse.ravel(), devices)}


def _blind(lanes: list[tuple], inverse: np.ndarray, devices: list[str]) -> dict:
    """{"no_device_lane": why, "warning": ...} when a device the trace names has no lane of its own work (no stream
    or copy lane, no op lane of a device without streams): its rows are then the executor's or a summary's, and the
    trace cannot tell the device's busy time (TensorFlow 1 with XLA keeps only `/job:.../device:GPU:0 Compute`)."""
    working = {key for key, kind, _ in lanes if kind in ("stream", "copy", "ops")}
    blind = [d for d in devices if d not in working]
    if not blind:
        return {}
    on_blind = np.asarray([key in blind for key, _, _ in lanes], dtype=bool)[inverse]
    reason = f"the trace names {', '.join(blind)} but records no stream, copy or op lane of it"
    seen = sorted(d for d in devices if d in working)  # the devices whose work it does record are measured
    what = (f"{', '.join(blind)}'s busy and idle time cannot be measured from it (only {', '.join(seen)}'s)" if seen
            else "GPU busy and idle time cannot be measured from it")
    return {"no_device_lane": reason,
            "warning": f"{reason}: its {int(on_blind.sum())} rows are the host's scheduling of device ops, not the "
                       f"device's work, so {what}"}
