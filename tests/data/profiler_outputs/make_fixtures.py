"""Generated profiler outputs (labelled generated in SOURCES.md): one launch-bound training loop written as

  * an `nsys export --type sqlite` database in the documented Nsight Systems export schema (StringIds,
    CUPTI_ACTIVITY_KIND_KERNEL / _RUNTIME / _MEMCPY, NVTX_EVENTS, TARGET_INFO_GPU), in two layouts: "2024" (with the
    ENUM_CUDA_MEMCPY_OPER / ENUM_CUDA_MEM_KIND label tables) and "2021" (no enum tables: the CUPTI enum values only);
  * an `nsys export --type json` file of the same loop: one message per line, events then strings (the layout of
    the exporter docs' "JSON and Text Format Description"; the event fields as a public nsys JSON walk-through shows
    them: CudaEvent with kernel / memcpy, TraceProcessEvent, NvtxEvent), with the strings in one {"data": [...]}
    message or, as --separate-strings writes them, one {"type": "String", ...} message each;
  * a rocprofv3 `--output-format json` document (`<pid>_results.json`) of a smaller launch-bound loop: 40 kernels of
    5 µs, each launched by a 20 µs hipLaunchKernel, one host-to-device and one device-to-host copy of 0.1 ms (fields
    as rocprofiler-sdk's tests/rocprofv3/tracing/validate.py reads them);
  * the same 40 kernels as a rocpd database (rocprofv3's default `<pid>_results.db`): the `kernels`, `regions` and
    `memory_copies` relations with the columns of the views rocprofiler-sdk defines for querying
    (share/rocprofiler-sdk-rocpd/data_views.sql; written here as plain tables, which is how the reader sees them);
  * the `nsys stats --report cuda_kern_exec_sum --format csv` summary of the same loop (columns from the report's
    documented output: PID, TID, DevId, Count, QCount, T/A/Q/K Avg Med Min Max StdDev, API Name, Kernel Name).

Known answers (expected.json): 3 steps of 30 ms ("data" 1 ms + "step N" 29 ms NVTX ranges); per step 1,000
elementwise kernels of 4 µs and 500 reduce kernels of 7 µs (7.5 ms), each launched by a 15 µs cudaLaunchKernel
(22.5 ms of launch calls), one 1 MB pageable host-to-device copy of 0.2 ms and one 0.5 ms cudaStreamSynchronize.
Kernel time K = 22.5 ms over 4,500 kernels; launch time n·L = 67.5 ms; so the GPU is idle at least 1 − K/(n·L) = 2/3
of the time (launch_bound, high). GPU busy (kernels + copies) 23.1 ms.

Run: python make_fixtures.py OUT_DIR  (the tests build the databases in a temporary folder: no binary is committed).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

PID, TID = 4242, 4243
GLOBAL_PID = PID << 24
GLOBAL_TID = GLOBAL_PID | TID
STEPS, STEP_NS = 3, 30_000_000
KERNELS = (("void at::native::elementwise_kernel<128, 4>(int, float*)", 4_000, 1000),
           ("void at::native::reduce_kernel<512, 1>(float*)", 7_000, 500))
LAUNCH_NS, GAP_NS, COPY_NS, SYNC_NS, COPY_BYTES = 15_000, 2_000, 200_000, 500_000, 1_000_000
T0 = 1_000_000_000


def _events():
    """(kernels, runtime calls, copies, nvtx ranges) as tuples in ns."""
    kernels, runtime, copies, nvtx = [], [], [], []
    corr = 0
    for s in range(STEPS):
        t0 = T0 + s * STEP_NS
        nvtx.append((t0, t0 + 1_000_000, "data"))
        nvtx.append((t0 + 1_000_000, t0 + STEP_NS, f"step {s + 1}"))
        t = t0 + 1_100_000
        order = [k for k in KERNELS for _ in range(k[2])]
        for name, dur, _ in order:
            corr += 1
            runtime.append((t, t + LAUNCH_NS, "cudaLaunchKernel_v7000", corr))
            kernels.append((t + LAUNCH_NS + GAP_NS, t + LAUNCH_NS + GAP_NS + dur, name, corr))
            t += LAUNCH_NS
        corr += 1
        c0 = t0 + 24_000_000
        runtime.append((c0, c0 + 250_000, "cudaMemcpyAsync_v3020", corr))
        copies.append((c0 + 10_000, c0 + 10_000 + COPY_NS, corr))
        corr += 1
        runtime.append((c0 + 300_000, c0 + 300_000 + SYNC_NS, "cudaStreamSynchronize_v3020", corr))
    return kernels, runtime, copies, nvtx


def write_sqlite(path: Path, layout: str = "2024") -> Path:
    """The database `nsys export --type sqlite` would write for the loop above."""
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT, busLocation TEXT, totalMemory INTEGER,
            smCount INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
            gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER,
            registersPerThread INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
            eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
            returnValue INTEGER NOT NULL, callchainId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
            deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER,
            dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
            rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
            textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,
            uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
    """)
    if layout == "2024":
        db.executescript("""
            CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
            CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
        """)
        db.executemany("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (?,?,?)", [
            (0, "CUDA_MEMCPY_OPER_UNKNOWN", "Unknown"), (1, "CUDA_MEMCPY_OPER_HTOD", "Host-to-Device"),
            (2, "CUDA_MEMCPY_OPER_DTOH", "Device-to-Host"), (8, "CUDA_MEMCPY_OPER_DTOD", "Device-to-Device"),
            (10, "CUDA_MEMCPY_OPER_PTOP", "Peer-to-Peer")])
        db.executemany("INSERT INTO ENUM_CUDA_MEM_KIND VALUES (?,?,?)", [
            (0, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"), (1, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"),
            (2, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"), (3, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device")])
    kernels, runtime, copies, nvtx = _events()
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        if text not in strings:
            strings[text] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[text], text))
        return strings[text]

    db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100 80GB HBM3', '0000:1b:00.0', 85899345920, 132)")
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,0,1,7,?,?,?,?,128,1,1,256,1,1,32)",
                   [(a, b, c, GLOBAL_PID, sid(n), sid(n.split("<")[0].split()[-1].split("::")[-1]))
                    for a, b, n, c in kernels])
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,0,?,?,?,0,0)",
                   [(a, b, GLOBAL_TID, c, sid(n)) for a, b, n, c in runtime])
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,0,1,7,?,?,?,1,0,1,3,0,0,0,0,0,0)",
                   [(a, b, c, GLOBAL_PID, COPY_BYTES) for a, b, c in copies])
    db.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid) "
                   "VALUES (?,?,59,?,?,?)", [(a, b, t, GLOBAL_TID, GLOBAL_TID) for a, b, t in nvtx])
    db.commit()
    db.close()
    return path


def write_json(path: Path, separate_strings: bool = False) -> Path:
    """The lines `nsys export --type json` would write for the loop above."""
    kernels, runtime, copies, nvtx = _events()
    strings: dict[str, int] = {"[Unknown]": 0}

    def sid(text: str) -> str:
        return str(strings.setdefault(text, len(strings)))

    lines = []
    for a, b, name, corr in runtime:
        lines.append({"Type": 48, "TraceProcessEvent": {"startNs": str(a), "endNs": str(b), "correlationId": corr,
                                                        "eventClass": 0, "name": sid(name), "returnValue32": 0,
                                                        "globalTid": str(GLOBAL_TID)}})
    for a, b, name, corr in kernels:
        lines.append({"Type": 79, "CudaEvent": {"startNs": str(a), "endNs": str(b), "correlationId": corr,
                                                "deviceId": 0, "contextId": "1", "streamId": "7", "eventClass": 3,
                                                "globalPid": str(GLOBAL_PID),
                                                "kernel": {"demangledName": sid(name), "shortName": sid(name)}}})
    for a, b, corr in copies:
        lines.append({"Type": 80, "CudaEvent": {"startNs": str(a), "endNs": str(b), "correlationId": corr,
                                                "deviceId": 0, "contextId": "1", "streamId": "7", "eventClass": 1,
                                                "globalPid": str(GLOBAL_PID),
                                                "memcpy": {"sizebytes": str(COPY_BYTES), "copyKind": "1",
                                                           "srcKind": 1, "dstKind": 3, "copyCount": "1"}}})
    for a, b, text in nvtx:
        lines.append({"Type": 59, "NvtxEvent": {"Type": 59, "Timestamp": str(a), "Text": text,
                                                "GlobalTid": str(GLOBAL_TID), "EndTimestamp": str(b),
                                                "DomainId": "0", "NsTime": True}})
    lines.sort(key=lambda m: int(next(iter(v for k, v in m.items() if k != "Type")).get(
        "startNs", next(iter(v for k, v in m.items() if k != "Type")).get("Timestamp", 0))))
    if separate_strings:
        lines += [{"type": "String", "id": str(i), "value": v} for v, i in strings.items()]
    else:
        lines.append({"data": [v for v, _ in sorted(strings.items(), key=lambda kv: kv[1])]})
    lines.append({"type": "ThreadName", "globalTid": str(GLOBAL_TID), "nameId": "0", "priority": "10"})
    path.write_text("".join(json.dumps(m, separators=(",", ":")) + "\n" for m in lines))
    return path


def rocprofv3_json() -> str:
    """rocprofv3's JSON output for 40 launch-bound kernels (see the module docstring)."""
    t0, recs_api, recs_k = 5_000_000, [], []
    for i in range(40):
        a = t0 + i * 25_000
        recs_api.append({"size": 64, "kind": 1, "operation": 1, "correlation_id": {"internal": i + 1, "external": 0},
                         "start_timestamp": a, "end_timestamp": a + 20_000, "thread_id": 4243})
        recs_k.append({"size": 200, "kind": 3, "correlation_id": {"internal": i + 1, "external": 0},
                       "start_timestamp": a + 21_000, "end_timestamp": a + 26_000, "thread_id": 4243,
                       "dispatch_info": {"size": 96, "agent_id": {"handle": 2}, "queue_id": {"handle": 1},
                                         "kernel_id": 7, "dispatch_id": i + 1,
                                         "workgroup_size": {"x": 256, "y": 1, "z": 1},
                                         "grid_size": {"x": 65536, "y": 1, "z": 1}}})
    copies = [{"size": 80, "kind": 4, "operation": 1, "correlation_id": {"internal": 41, "external": 0},
               "start_timestamp": t0 - 200_000, "end_timestamp": t0 - 100_000, "thread_id": 4243,
               "src_agent_id": {"handle": 1}, "dst_agent_id": {"handle": 2}, "bytes": 4_000_000},
              {"size": 80, "kind": 4, "operation": 2, "correlation_id": {"internal": 42, "external": 0},
               "start_timestamp": t0 + 1_100_000, "end_timestamp": t0 + 1_200_000, "thread_id": 4243,
               "src_agent_id": {"handle": 2}, "dst_agent_id": {"handle": 1}, "bytes": 4_000_000}]
    tool = {"metadata": {"pid": 4242},
            "agents": [{"id": {"handle": 1}, "type": 1, "name": "CPU"}, {"id": {"handle": 2}, "type": 2,
                                                                           "name": "gfx942"}],
            "kernel_symbols": {"7": {"kernel_id": 7, "formatted_kernel_name": "vector_add(float*, float*, int)"}},
            "strings": {"buffer_records": [
                {"kind": "NONE", "operations": []},
                {"kind": "HIP_RUNTIME_API", "operations": ["hipMalloc", "hipLaunchKernel", "hipMemcpy"]},
                {"kind": "HSA_CORE_API", "operations": []},
                {"kind": "KERNEL_DISPATCH", "operations": []},
                {"kind": "MEMORY_COPY", "operations": ["MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_DEVICE",
                                                       "MEMORY_COPY_DEVICE_TO_HOST"]}]},
            "buffer_records": {"hip_api": recs_api, "kernel_dispatch": recs_k, "memory_copy": copies}}
    return json.dumps({"rocprofiler-sdk-tool": [tool]})


def write_rocpd(path: Path) -> Path:
    """The rocpd database of the rocprofv3_json() loop (see the module docstring)."""
    path.unlink(missing_ok=True)
    doc = json.loads(rocprofv3_json())["rocprofiler-sdk-tool"][0]
    recs = doc["buffer_records"]
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE kernels (id INTEGER, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, category TEXT,
            region TEXT, name TEXT, agent_id INTEGER, agent_absolute_index INTEGER, agent_logical_index INTEGER,
            agent_type_index INTEGER, agent_type TEXT, kernel_id INTEGER, dispatch_id INTEGER, queue_id INTEGER,
            stream_id INTEGER, start INTEGER, "end" INTEGER, duration INTEGER, correlation_id INTEGER);
        CREATE TABLE regions (id INTEGER, guid TEXT, category TEXT, name TEXT, nid INTEGER, pid INTEGER,
            tid INTEGER, start INTEGER, "end" INTEGER, duration INTEGER, correlation_id INTEGER);
        CREATE TABLE memory_copies (id INTEGER, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, category TEXT,
            name TEXT, start INTEGER, "end" INTEGER, duration INTEGER, queue_id INTEGER, stream_id INTEGER,
            size INTEGER, dst_agent_type TEXT, src_agent_type TEXT, correlation_id INTEGER);
    """)
    g = "0000ddb5-8903-7903-b269-cd8d3745bb8a"
    for i, k in enumerate(recs["kernel_dispatch"]):
        a, b = k["start_timestamp"], k["end_timestamp"]
        db.execute("INSERT INTO kernels VALUES (?,?,1,4242,4243,'KERNEL_DISPATCH','',?,2,1,0,0,'GPU',7,?,1,0,?,?,?,?)",
                   (i, g, "vector_add(float*, float*, int)", i + 1, a, b, b - a, k["correlation_id"]["internal"]))
    for i, r in enumerate(recs["hip_api"]):
        a, b = r["start_timestamp"], r["end_timestamp"]
        db.execute("INSERT INTO regions VALUES (?,?,'HIP_RUNTIME_API_EXT','hipLaunchKernel',1,4242,4243,?,?,?,?)",
                   (i, g, a, b, b - a, r["correlation_id"]["internal"]))
    db.execute("INSERT INTO regions VALUES (99,?,'HSA_CORE_API','hsa_signal_wait_scacquire',1,4242,4243,1,2,1,0)",
               (g,))
    for i, (m, name) in enumerate(zip(recs["memory_copy"], ("MEMORY_COPY_HOST_TO_DEVICE",
                                                             "MEMORY_COPY_DEVICE_TO_HOST"), strict=True)):
        a, b = m["start_timestamp"], m["end_timestamp"]
        db.execute("INSERT INTO memory_copies VALUES (?,?,1,4242,4243,'MEMORY_COPY',?,?,?,?,1,0,?,'GPU','CPU',?)",
                   (i, g, name, a, b, b - a, m["bytes"], m["correlation_id"]["internal"]))
    db.commit()
    db.close()
    return path


def kern_exec_sum_csv() -> str:
    """`nsys stats --report cuda_kern_exec_sum --format csv` of the loop (one row per PID, TID, device, API, kernel)."""
    stats = ("Avg", "Med", "Min", "Max", "StdDev")
    head = ["PID", "TID", "DevId", "Count", "QCount"] + [f"{p}{s} (ns)" for p in "TAQK" for s in stats] \
        + ["API Name", "Kernel Name"]
    rows = []
    for name, dur, per_step in KERNELS:
        n = per_step * STEPS
        t, a, q, k = LAUNCH_NS + GAP_NS + dur, LAUNCH_NS, GAP_NS, dur
        cells = [PID, TID, 0, n, n]
        for x in (t, a, q, k):
            cells += [f"{x:.1f}", f"{x:.1f}", x, x, "0.0"]
        rows.append(",".join(map(str, cells)) + f',cudaLaunchKernel,"{name}"')
    return ",".join(f'"{h}"' for h in head) + "\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    write_sqlite(out / "train_2024.sqlite", "2024")
    write_sqlite(out / "train_2021.sqlite", "2021")
    write_json(out / "train.json")
    write_json(out / "train_separate_strings.json", separate_strings=True)
    (out / "nsys_stats" / "train_cuda_kern_exec_sum.csv").write_text(kern_exec_sum_csv())
    (out / "4242_results.json").write_text(rocprofv3_json())
    write_rocpd(out / "4242_results.db")
