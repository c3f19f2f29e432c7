"""Regenerate the nsys stats fixtures in this folder (deterministic): `python tests/data/nsys/make_fixtures.py`.

Written for this project, not exported from a real profile: a synthetic training loop on one GPU is laid out as
the CUDA activity and NVTX ranges Nsight Systems records, and each report is computed from that activity the way
the nsys report scripts (cuda_gpu_kern_sum.py, cuda_gpu_mem_time_sum.py, ...) compute it, in their CSV layouts
(column names and order as nsys 2024.x writes them; the old 2021.x layouts for the `old_*` files).

rank 0 (`rank0_<report>.csv`, the `--output rank0` form): 6 steps of a data-starved loop. Per iteration: a 30 ms
wait for the batch (NVTX "data", outside the step range, as playbook.probes.timed records it), then "step i" with
h2d (a 38.5 MB copy from pageable memory, 3.2 ms), fwd (17 ms), bwd (40 ms), optimizer (5 ms) and a loss read
(cudaStreamSynchronize, 1 ms). Known answers: data is ~31% of the iteration (30.3 of 96 ms); one NCCL all-reduce
of 4 ms per step; 6 pageable host-to-device copies of 38,535,168 B.
rank 1 (`rank1_stdout.txt`, the console form with banners): 2 steps of a healthy loop (0.5 ms data wait).
Older layouts: `old_gpukernsum.csv` and `old_gpumemsizesum.csv` (nsys 2021.x column names, sizes in KiB);
`column_format.txt` is `nsys stats` without --format csv (the default column table, read like the CSV);
`damaged_kern_sum.csv` has a row cut short.
"""

from __future__ import annotations

import csv
import io
import random
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEVICE = "NVIDIA H100 80GB HBM3 ({})"
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel"
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&"
               ", at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(flo"
               "at)#1}, std::array<char *, 2>>(int, T2, T3)")
ADAM = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMe"
        "tadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, 0>, float*, double, double, double,"
        " double, double, bool, bool*, float*>(T1, T2, T3...)")
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
BATCH_BYTES = 64 * 3 * 224 * 224 * 4  # 38,535,168 B


def simulate(steps: int, data_ms: float, device: int, seed: int) -> tuple[list[dict], list[dict], list[dict]]:
    """(gpu ops, nvtx ranges, cuda api calls) of `steps` iterations, times in ns from the session start."""
    rng = random.Random(seed)
    ops, ranges, api = [], [], []
    t = 50_000_000
    corr = 1000

    def jit(ns: float, rel: float = 0.03) -> int:
        return int(ns * (1 + rng.uniform(-rel, rel)))

    def launch(name: str, dur: int, at: int, stream: int = 7, grid=(132, 1, 1), block=(256, 1, 1)) -> int:
        nonlocal corr
        corr += 1
        api.append({"name": "cudaLaunchKernel", "dur": jit(5200, 0.2)})
        ops.append({"start": at, "dur": dur, "corr": corr, "grid": grid, "block": block, "regs": 128, "name": name,
                    "device": device, "stream": stream, "kind": "kernel"})
        return at + dur

    for i in range(steps):
        d = jit(data_ms * 1e6)
        ranges.append({"name": "data", "start": t, "dur": d})
        t += d
        step0 = t
        # h2d: pageable copy, the CPU blocks for its duration
        copy = jit(3.2e6)
        corr += 1
        api.append({"name": "cudaMemcpyAsync", "dur": copy + 60_000})
        ops.append({"start": t + 40_000, "dur": copy, "corr": corr, "bytes": BATCH_BYTES, "src": "Pageable",
                    "dst": "Device", "name": "[CUDA memcpy Host-to-Device]", "device": device, "stream": 7,
                    "kind": "memcpy"})
        ranges.append({"name": "h2d", "start": t, "dur": copy + 100_000})
        t += copy + 100_000
        for phase, n_gemm, gemm_ms, n_el in (("fwd", 3, 5.0, 2), ("bwd", 6, 5.6, 2)):
            p0, g = t, t + 20_000
            for _ in range(n_gemm):
                g = launch(GEMM, jit(gemm_ms * 1e6), g + 3_000)
            for _ in range(n_el):
                g = launch(ELEMENTWISE, jit(0.9e6), g + 3_000, grid=(8448, 1, 1), block=(128, 1, 1))
            if phase == "bwd":
                g = launch(NCCL, jit(4e6), g + 10_000, stream=13, grid=(2, 1, 1), block=(640, 1, 1))
            t = g + 50_000
            ranges.append({"name": phase, "start": p0, "dur": t - p0})
        p0 = t
        g = t + 10_000
        for _ in range(2):
            g = launch(ADAM, jit(2.4e6), g + 3_000, grid=(1024, 1, 1), block=(512, 1, 1))
        corr += 1
        api.append({"name": "cudaMemsetAsync", "dur": jit(4100, 0.2)})
        ops.append({"start": g + 2_000, "dur": 1_700, "corr": corr, "bytes": 4, "src": "Device", "dst": "",
                    "name": "[CUDA memset]", "device": device, "stream": 7, "kind": "memset"})
        t = g + 20_000
        ranges.append({"name": "optimizer", "start": p0, "dur": t - p0})
        corr += 1  # loss.item(): a 4-byte copy to pageable memory and a stream sync
        ops.append({"start": t + 5_000, "dur": 1_900, "corr": corr, "bytes": 4, "src": "Device", "dst": "Pageable",
                    "name": "[CUDA memcpy Device-to-Host]", "device": device, "stream": 7, "kind": "memcpy"})
        sync = jit(1.0e6)
        api.append({"name": "cudaMemcpyAsync", "dur": jit(9000, 0.2)})
        api.append({"name": "cudaStreamSynchronize", "dur": sync})
        t += sync + 20_000
        ranges.append({"name": f"step {i}", "start": step0, "dur": t - step0})
    return ops, ranges, api


def stats(values: list[float]) -> tuple[float, float, float, float, float, float]:
    return (sum(values), statistics.fmean(values), statistics.median(values), min(values), max(values),
            statistics.stdev(values) if len(values) > 1 else 0.0)


def summary(groups: dict[str, list[float]], count_col: str, name_col: str, extra: dict[str, str] | None = None
            ) -> list[list]:
    """Rows of a time summary (Time (%), Total, count, Avg, Med, Min, Max, StdDev, [extra], name), by total desc."""
    grand = sum(sum(v) for v in groups.values())
    rows = []
    for name, v in groups.items():
        tot, avg, med, lo, hi, sd = stats(v)
        row = [f"{100 * tot / grand:.1f}", f"{tot:.0f}", str(len(v)), f"{avg:.1f}", f"{med:.1f}", f"{lo:.0f}",
               f"{hi:.0f}", f"{sd:.1f}"]
        if extra is not None:
            row.append(extra[name])
        rows.append((tot, row + [name]))
    return [r for _, r in sorted(rows, key=lambda x: -x[0])]


TIME_HEADER = ["Time (%)", "Total Time (ns)", "{count}", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)"]


def header(count: str, *tail: str) -> list[str]:
    return [h.format(count=count) for h in TIME_HEADER] + list(tail)


def to_csv(head: list[str], rows: list[list]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(head)
    w.writerows(rows)
    return buf.getvalue()


def reports(ops: list[dict], ranges: list[dict], api: list[dict], osrt: dict[str, list[float]]) -> dict[str, str]:
    kern: dict[str, list[float]] = {}
    mem: dict[str, list[float]] = {}
    size: dict[str, list[float]] = {}
    for o in ops:
        if o["kind"] == "kernel":
            kern.setdefault(o["name"], []).append(o["dur"])
        else:
            mem.setdefault(o["name"], []).append(o["dur"])
            size.setdefault(o["name"], []).append(o["bytes"] / 1e6)
    nvtx: dict[str, list[float]] = {}
    for r in ranges:
        nvtx.setdefault(r["name"], []).append(r["dur"])
    calls: dict[str, list[float]] = {}
    for a in api:
        calls.setdefault(a["name"], []).append(a["dur"])
    size_rows = []
    for name, v in sorted(size.items(), key=lambda kv: -sum(kv[1])):
        tot, avg, med, lo, hi, sd = stats(v)
        size_rows.append([f"{tot:.3f}", str(len(v)), f"{avg:.3f}", f"{med:.3f}", f"{lo:.3f}", f"{hi:.3f}",
                          f"{sd:.3f}", name])
    trace_rows = []
    for o in sorted(ops, key=lambda o: o["start"]):
        k = o["kind"] == "kernel"
        g, b = o.get("grid", ("", "", "")), o.get("block", ("", "", ""))
        nbytes = o.get("bytes")
        trace_rows.append([
            str(o["start"]), str(o["dur"]), str(o["corr"]), *map(str, g), *map(str, b),
            str(o.get("regs", "")) if k else "", "0.000" if k else "", "0.000" if k else "",
            "" if k else f"{nbytes / 1e6:.6f}", "" if k else f"{nbytes / 1e6 / (o['dur'] / 1e9):.3f}",
            o.get("src", ""), o.get("dst", ""), DEVICE.format(o["device"]), "1", "", str(o["stream"]), o["name"]])
    return {
        "cuda_gpu_kern_sum": to_csv(header("Instances", "Name"), summary(kern, "Instances", "Name")),
        "cuda_gpu_mem_time_sum": to_csv(header("Count", "Operation"), summary(mem, "Count", "Operation")),
        "cuda_gpu_mem_size_sum": to_csv(["Total (MB)", "Count", "Avg (MB)", "Med (MB)", "Min (MB)", "Max (MB)",
                                         "StdDev (MB)", "Operation"], size_rows),
        "nvtx_sum": to_csv(header("Instances", "Style", "Range"),
                           summary(nvtx, "Instances", "Range", extra=dict.fromkeys(nvtx, "PushPop"))),
        "osrt_sum": to_csv(header("Num Calls", "Name"), summary(osrt, "Num Calls", "Name")),
        "cuda_api_sum": to_csv(header("Num Calls", "Name"), summary(calls, "Num Calls", "Name")),
        "cuda_gpu_trace": to_csv(["Start (ns)", "Duration (ns)", "CorrId", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY",
                                  "BlkZ", "Reg/Trd", "StcSMem (MB)", "DymSMem (MB)", "Bytes (MB)",
                                  "Throughput (MB/s)", "SrcMemKd", "DstMemKd", "Device", "Ctx", "GreenCtx", "Strm",
                                  "Name"], trace_rows),
    }


def osrt_calls(seconds: float, rng: random.Random) -> dict[str, list[float]]:
    """OS runtime calls of a training process over `seconds`: mostly idle helper threads waiting."""
    return {
        "pthread_cond_wait": [seconds * 1e9 / 4 * rng.uniform(0.9, 1.0) for _ in range(4)],
        "poll": [rng.uniform(1e6, 100e6) for _ in range(int(seconds * 20))],
        "sem_wait": [rng.uniform(5e6, 25e6) for _ in range(int(seconds * 10))],
        "read": [rng.uniform(1e3, 2e5) for _ in range(40)],
        "ioctl": [rng.uniform(1e3, 5e4) for _ in range(120)],
        "pthread_mutex_lock": [rng.uniform(1e3, 1e4) for _ in range(30)],
        "mmap64": [rng.uniform(2e3, 3e4) for _ in range(12)],
    }


def main() -> None:
    ops, ranges, api = simulate(6, 30.0, device=0, seed=0)
    rep0 = reports(ops, ranges, api, osrt_calls(0.65, random.Random(1)))
    for name, text in rep0.items():
        (HERE / f"rank0_{name}.csv").write_text(text)
    ops, ranges, api = simulate(2, 0.5, device=1, seed=2)
    rep1 = reports(ops, ranges, api, osrt_calls(0.16, random.Random(3)))
    banners = {"nvtx_sum": "NVTX Range Summary", "osrt_sum": "OS Runtime Summary",
               "cuda_gpu_kern_sum": "CUDA GPU Kernel Summary", "cuda_gpu_mem_time_sum": "CUDA GPU MemOps Summary "
               "(by Time)", "cuda_gpu_trace": "CUDA GPU Trace"}
    out = ["Generating SQLite file rank1.sqlite from rank1.nsys-rep"]
    for name, title in banners.items():
        out += [f"Processing [rank1.sqlite] with [/opt/nvidia/nsight-systems/2024.5.1/host-linux-x64/reports/"
                f"{name}.py]... ", "", f" ** {title} ({name}):", "", rep1[name].rstrip("\n"), ""]
    (HERE / "rank1_stdout.txt").write_text("\n".join(out) + "\n")
    old_variants()


def old_variants() -> None:
    """The 2021.x layouts, a console-format table and a damaged file, derived from rank 0's reports."""
    kern = list(csv.reader(io.StringIO((HERE / "rank0_cuda_gpu_kern_sum.csv").read_text())))[1:]
    rows = [[r[0], r[1], r[2], r[3], r[5], r[6], r[8]] for r in kern]
    (HERE / "old_gpukernsum.csv").write_text(to_csv(
        ["Time(%)", "Total Time (ns)", "Instances", "Average", "Minimum", "Maximum", "Name"], rows))
    size = list(csv.reader(io.StringIO((HERE / "rank0_cuda_gpu_mem_size_sum.csv").read_text())))[1:]
    kib = [[f"{float(r[0]) * 1e6 / 1024:.3f}", r[1], f"{float(r[2]) * 1e6 / 1024:.3f}",
            f"{float(r[4]) * 1e6 / 1024:.3f}", f"{float(r[5]) * 1e6 / 1024:.3f}", r[7]] for r in size]
    (HERE / "old_gpumemsizesum.csv").write_text(to_csv(
        ["Total", "Operations", "Average", "Minimum", "Maximum", "Operation"], kib))
    table = [" Time (%)  Total Time (ns)  Instances   Avg (ns)     Med (ns)    Min (ns)   Max (ns)   StdDev (ns)"
             "   Name", " --------  ---------------  ---------  -----------  -----------  ---------  ---------  "
             "-----------  ------"]
    table += [f"{float(r[0]):9.1f}  {int(r[1]):15,}  {int(r[2]):9}  {float(r[3]):11,.1f}  {float(r[4]):11,.1f}  "
              f"{int(r[5]):9,}  {int(r[6]):9,}  {float(r[7]):11,.1f}  {r[8][:40]}" for r in kern]
    (HERE / "column_format.txt").write_text("\n".join(table) + "\n")
    lines = (HERE / "rank0_cuda_gpu_kern_sum.csv").read_text().splitlines()
    lines[2] = ",".join(lines[2].split(",")[:5])  # a row cut short (a crash while writing)
    (HERE / "damaged_kern_sum.csv").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
