"""Writes the generated fixtures of this folder (see SOURCES.md): traces in the documented formats of profilers
whose committed traces could not be found in a public repository. Deterministic; run from the repository root:
`python tests/data/traces5/make_fixtures.py`. Times in µs unless named otherwise."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
HOST_PID = 701  # XProf: kHostThreadsDeviceId = kLastCustomPlaneDeviceId + 1 (trace_utils.h)
DERIVED = 0xDEADBEEF  # XProf: kThreadIdDerivedMin; Steps = +0, XLA Modules = +4, XLA Ops = +5 (trace_utils.h)
STEPS_TID, MODULES_TID, OPS_TID = DERIVED, DERIVED + 4, DERIVED + 5


def _us(x: float) -> float:
    """XProf writes PicosToMicros with full precision: µs with up to 6 decimals."""
    return round(x, 6)


def _xprof(device: str, streams: bool, steps: int, step_us: float, op_us: float, ops: int, gap_us: float,
           h2d_us: float = 0.0) -> dict:
    """An XProf trace-viewer JSON (StreamXSpaceToTraceJson's layout): one host plane, one device plane."""
    ev = [{"ph": "M", "pid": HOST_PID, "name": "process_name", "args": {"name": "/host:CPU"}},
          {"ph": "M", "pid": HOST_PID, "name": "process_sort_index", "args": {"sort_index": HOST_PID}},
          {"ph": "M", "pid": HOST_PID, "tid": 31337, "name": "thread_name", "args": {"name": "python3"}},
          {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": device}},
          {"ph": "M", "pid": 1, "name": "process_sort_index", "args": {"sort_index": 1}}]
    lines = [(STEPS_TID, "Steps"), (MODULES_TID, "XLA Modules"), (OPS_TID, "XLA Ops")]
    if streams:
        lines += [(14, "Stream #14(Kernel)"), (15, "Stream #15(MemcpyH2D)")]
    for tid, name in lines:
        ev.append({"ph": "M", "pid": 1, "tid": tid, "name": "thread_name", "args": {"name": name}})
        ev.append({"ph": "M", "pid": 1, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    t0 = 1000.0
    for s in range(steps):
        start = t0 + s * step_us
        ev.append({"ph": "X", "pid": HOST_PID, "tid": 31337, "ts": _us(start), "dur": _us(step_us - 5),
                   "name": "train", "args": {"step_num": str(s), "group_id": str(s)}})
        ev.append({"ph": "X", "pid": HOST_PID, "tid": 31337, "ts": _us(start + 1), "dur": 150.0,
                   "name": "PjitFunction(train_step)", "args": {"group_id": str(s)}})
        ev.append({"ph": "X", "pid": 1, "tid": STEPS_TID, "ts": _us(start), "dur": _us(step_us), "name": str(s),
                   "args": {"group_id": str(s), "step_num": str(s)}})
        at = start + 160.0
        if streams and h2d_us:
            ev.append({"ph": "X", "pid": 1, "tid": 15, "ts": _us(at), "dur": _us(h2d_us), "name": "MemcpyH2D",
                       "args": {"correlation_id": str(9000 + s), "memcpy_details": "kind_src:pinned",
                                "group_id": str(s)}})
            at += h2d_us + gap_us
        first = at
        for k in range(ops):
            hlo = f"fusion.{k}"
            if streams:
                ev.append({"ph": "X", "pid": 1, "tid": 14, "ts": _us(at), "dur": _us(op_us),
                           "name": f"loop_fusion_{k}_kernel",
                           "args": {"correlation_id": str(100 * s + k), "hlo_op": hlo,
                                    "hlo_module": "jit_train_step", "group_id": str(s)}})
            ev.append({"ph": "X", "pid": 1, "tid": OPS_TID, "ts": _us(at), "dur": _us(op_us), "name": hlo,
                       "args": {"long_name": f"%{hlo} = f32[1024,1024] fusion(...)", "group_id": str(s)}})
            at += op_us + gap_us
        ev.append({"ph": "X", "pid": 1, "tid": MODULES_TID, "ts": _us(first), "dur": _us(at - gap_us - first),
                   "name": "jit_train_step(42)", "args": {"group_id": str(s)}})
    return {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": ev}


def _paddle(steps: int = 5) -> str:
    """A Paddle profiler chrome export (ChromeTracingLogger's layout): names carry a display duration in brackets,
    host tids are strings ("N(Python)", "N(C++)"), the event array ends with an empty {}, then "ExtraInfo"."""
    pid, tid, dev, stream = 4242, 4242, 0, 7
    ev, corr = [], 0

    def disp(d_us: float) -> str:
        return f"{d_us / 1000:.3f} ms" if d_us > 1000 else f"{d_us:.3f} us"

    def host(name, cat, ts, dur, lang="Python", **args):
        ev.append({"name": f"{name}[{disp(dur)}]", "pid": pid, "tid": f"{tid}({lang})", "ts": int(ts), "dur": dur,
                   "ph": "X", "cat": cat, "cname": "thread_state_runnable", "args": args})

    t = 5_000_000.0
    for s in range(steps):
        step_start, step_us = t, 20000.0
        host(f"ProfileStep#{s}", "ProfileStep", t, step_us)
        host("_DataLoaderIterSingleProcess", "Dataloader", t + 10, 8000.0)
        at = t + 8100
        host("Forward", "Forward", at, 5000.0)
        host("Backward", "Backward", at + 5100, 5000.0)
        host("Optimization", "Optimization", at + 10200, 1500.0)
        for k in range(10):
            corr += 1
            launch = at + k * 1150
            host("matmul dygraph", "Operator", launch, 40.0, lang="C++")
            ev.append({"name": f"cudaLaunchKernel[{disp(6.0)}]", "pid": pid, "tid": f"{tid}(C++)",
                       "ts": int(launch + 20), "dur": 6.0, "ph": "X", "cat": "CudaRuntime",
                       "cname": "thread_state_running", "args": {"correlation id": corr}})
            ks = launch + 30
            ev.append({"name": f"volta_sgemm_128x64_nn[{disp(1000.0)}]", "pid": dev, "tid": stream,
                       "ts": int(ks), "dur": 1000.0, "ph": "X", "cat": "Kernel", "cname": "cq_build_failed",
                       "args": {"device": dev, "context": 1, "stream": stream, "correlation id": corr,
                                "registers per thread": 128, "shared memory": 16384, "blocks per SM": 2.0,
                                "warps per SM": 16.0, "grid": [64, 8, 1], "block": [256, 1, 1],
                                "theoretical achieved occupancy %": 25.0}})
            ev.append({"name": "launch", "id": corr, "pid": dev, "tid": stream, "ts": int(ks + 500), "ph": "f",
                       "cat": "async", "bp": "e"})
        t = step_start + step_us + 50
    meta = [
        {"name": "process_name", "pid": pid, "tid": f"{tid}(Python)", "ph": "M", "args": {"name": f"Process {pid} (CPU)"}},
        {"name": "thread_name", "pid": pid, "tid": f"{tid}(Python)", "ph": "M",
         "args": {"name": f"thread {tid}:MainThread(Python)"}},
        {"name": "thread_name", "pid": pid, "tid": f"{tid}(C++)", "ph": "M",
         "args": {"name": f"thread {tid}:MainThread(C++)"}},
        {"name": "process_name", "pid": dev, "tid": stream, "ph": "M", "args": {"name": f"Deivce {dev} (GPU)"}},
        {"name": "thread_name", "pid": dev, "tid": stream, "ph": "M", "args": {"name": f"stream {stream}"}},
    ]
    body = ",\n".join(json.dumps(e) for e in ev + meta)
    return ('{\n  "schemaVersion": "1.0.1",\n  "displayTimeUnit": "ms",\n  "span_indx": "0",\n'
            '  "traceEvents": [\n' + body + ',\n  {}\n  ],\n  "ExtraInfo": {"4242": "MainThread"}\n}\n')


def _tf1_timeline() -> dict:
    """A TensorFlow 1 `timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format()` document: one
    process per StepStats device plus its "Tensors" twin, events of category "Op" named by op type, lanes as tids,
    no thread names; the GPU tracer's devices are "/device:GPU:0/stream:all" (every kernel again),
    "/device:GPU:0/stream:7" and "/device:GPU:0/memcpy"."""
    devices = ["/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:GPU:0",
               "/device:GPU:0/stream:all", "/device:GPU:0/stream:7", "/device:GPU:0/memcpy"]
    ev = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "Allocators"}}]
    pids = {}
    for i, dev in enumerate(devices):
        pids[dev] = 1 + 2 * i
        ev.append({"name": "process_name", "ph": "M", "pid": 1 + 2 * i, "args": {"name": dev + " Compute"}})
        ev.append({"name": "process_name", "ph": "M", "pid": 2 + 2 * i, "args": {"name": dev + " Tensors"}})

    def op(dev, ts, dur, op_type, node, tid=0):
        ev.append({"ph": "X", "cat": "Op", "name": op_type, "pid": pids[dev], "tid": tid, "ts": ts, "dur": dur,
                   "args": {"name": node, "op": op_type}})

    t = 1_600_000_000_000  # all_start_micros: µs since the epoch
    op(devices[0], t, 400, "_Recv", "IteratorGetNext/_recv")
    op(devices[4], t + 450, 1500, "MEMCPYHtoD", "edge_12_IteratorGetNext")
    at = t + 2000
    for k in range(20):  # 20 matmuls of 2 ms, 50 µs apart; the executor's side launches each 30 µs ahead
        node = f"dense_{k}/MatMul"
        op(devices[1], at - 30, 20, "MatMul", node)
        op(devices[3], at, 2000, "MatMul", f"{node}:MatMul")
        op(devices[2], at, 2000, "MatMul", f"{node}:MatMul")
        at += 2050
    op(devices[4], at, 300, "MEMCPYDtoH", "loss/_send")
    return {"traceEvents": ev}


def main() -> None:
    cases = {
        # JAX on one GPU, busy: 18 kernels of 500 µs a 10 ms step (+ one 200 µs H2D copy)
        "xprof_jax_gpu_busy.trace.json.gz": _xprof("/device:GPU:0", True, 6, 10000.0, 500.0, 18, 20.0, 200.0),
        # JAX on one GPU, the host between steps: 3 kernels of 500 µs a 10 ms step
        "xprof_jax_gpu_idle.trace.json.gz": _xprof("/device:GPU:0", True, 6, 10000.0, 500.0, 3, 20.0),
        # JAX on a TPU: no stream lines, the XLA Ops line is the device's work (19 ops of 1 ms a 20 ms step)
        "xprof_jax_tpu.trace.json.gz": _xprof("/device:TPU:0", False, 4, 20000.0, 1000.0, 19, 0.0),
    }
    for name, doc in cases.items():
        (HERE / name).write_bytes(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), mtime=0))
    (HERE / "paddle_dataloader.paddle_trace.json").write_text(_paddle())
    (HERE / "tf1_timeline.trace.json").write_text(json.dumps(_tf1_timeline(), separators=(",", ":")))


if __name__ == "__main__":
    main()
