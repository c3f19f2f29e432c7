"""Writes the LABELED SYNTHETIC files of the seventeenth held-out round (deterministic):
    python tests/data/eval/heldout17/make_heldout17.py

GPU telemetry as the monitoring systems clusters already run export it, in layouts taken from each tool's own source
or documentation (SOURCES.md cites where), with the figures of a public thread that states a cause (or no problem).
None of the threads is cited by an earlier round (every SOURCES.md and generator under tests/data and docs grepped for
the URL and the short owner/repo#N form). The two real pastes of the round (curc_sacct_tresusage_ave.txt,
curc_seff_l40_gpu_metrics.txt) are committed as quoted; this script writes the four files whose threads give figures
in prose or tables, with what the thread does not state drawn here and named below.

- wandb_ninfer72_3090_power_cap.csv: ashalliants/ninfer-3090#72 "Measure the 315 W power cap: it binds continuously,
  and never touches memory clock" — an RTX 3090 capped at 315 W, sampled at 2 Hz through decode (tg1024) and prefill
  (pp8192): board power 314 W median, `sw_power_cap` active in 161-168 of 162-168 decode samples and 51-52 of 52-53
  prefill samples, SM clock 1500-1515 MHz median in decode and 1635-1650 in prefill against the 1,695 MHz rated
  boost, memory clock 9,501 MHz in every sample, 63-74 C median (75 max), no thermal throttle. Drawn: the same card
  as a W&B run's system metrics exported to CSV (`run.history(stream="system")`, 15 s sampling, W&B's default), 25
  minutes of the sweep repeated back to back (decode ~80 s, prefill ~26 s), the `system.gpu.0.*` names of the W&B
  SDK's NVML collector plus its `system.gpu.process.0.*` copies and a few host columns; 22.4 GB allocated.
- dcgm_club3090_178_metrics_loop.txt: noonghunna/club-3090#178 "dual.yml on Z77 + i7-3770K" (mgabor3141's comment):
  two RTX 3090 serving one model (tensor parallel) in a case with poor airflow, GPU 1 "sandwiched between GPU0 and the
  PSU"; over ~3.5 minutes of continuous load GPU 1 reaches 90-91 C and its clock falls from 1725 MHz to 1365 MHz
  ("20.5% clock throttling"), GPU 0 reaches 87 C at 1515 MHz; throughput 68.55 -> 65.2 TPS, "thermal throttling costs
  only about a 5% throughput hit". Drawn: a shell loop pasting dcgm-exporter's `/metrics` (`while true; do date -u;
  curl -s localhost:9400/metrics; sleep 5; done`) for 6 minutes, the default counters of NVIDIA/dcgm-exporter's
  etc/default-counters.csv with its label set (gpu, UUID, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION);
  both GPUs 93-100 % busy; SM clocks from ~1905 MHz falling with temperature to the thread's figures; 280-330 W.
- gcp_drone69_t4_ops_agent.json: dtu-mlops/drone-detection-mlops#69 "Fix GPU Starvation and Accelerate Cloud
  Training" — one NVIDIA T4 on Google Cloud, ~10 minutes an epoch, the GPU "sitting idle for long periods waiting for
  the CPU to fetch data from GCS": "brief spikes in power/clock speed followed by long valleys of inactivity".
  Drawn: a Cloud Monitoring API `projects.timeSeries.list` answer for the Ops Agent's NVML metrics
  (agent.googleapis.com/gpu/utilization, labels gpu_number / model / uuid; agent.googleapis.com/gpu/memory/bytes_used
  with memory_state used / free, int64 values as JSON strings), 60 s points (the agent's default interval), newest
  first as the API returns them, for one hour (6 epochs): about one point in four caught in a spike (55-100 %), the
  rest 0-4 %; 2.9-3.1 GiB used of the T4's 15 GiB.
- cloudwatch_sourcegraph52272_a10g.json: sourcegraph/sourcegraph-public-snapshot#52272 "Self Hosted Embeddings on AWS"
  — a g5.xlarge (one A10G) embedding job from 13:34:00 to 13:42:05 (8.09 minutes), max 5350 MiB of GPU memory, "a
  good job of keeping the GPU at 100% utilisation for the entire time". Drawn: `aws cloudwatch get-metric-statistics
  --namespace CWAgent --metric-name nvidia_smi_utilization_gpu --dimensions ... --period 10 --statistics Average`
  (the CloudWatch agent's nvidia_gpu section at a 10 s collection interval; the agent publishes these metrics with no
  unit), Datapoints in the unordered order the API returns; the first 20 s loading the model (0-35 %), then 97-100 %.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(17)


def wandb_ninfer72() -> str:
    """An RTX 3090 capped at 315 W through a decode/prefill sweep, as W&B's system metrics CSV (15 s samples)."""
    period = [("decode", 80.0), ("prefill", 26.0)]
    cycle = sum(d for _, d in period)
    gpu_names = ["gpu", "memory", "memoryAllocated", "memoryAllocatedBytes", "temp", "powerWatts",
                 "enforcedPowerLimitWatts", "powerPercent", "smClock", "memoryClock", "graphicsClock",
                 "correctedMemoryErrors", "uncorrectedMemoryErrors"]
    cols = (["_runtime", "_timestamp", "system.cpu", "system.memory", "system.proc.memory.rssMB",
             "system.disk./.usagePercent"] + [f"system.gpu.0.{n}" for n in gpu_names]
            + [f"system.gpu.process.0.{n}" for n in gpu_names] + ["_wandb"])
    t0 = datetime(2026, 9, 9, 14, 5, 12, tzinfo=timezone.utc).timestamp()
    rows = [",".join(cols)]
    temp = 48.0
    for i in range(100):
        runtime = 15.0 * (i + 1)
        phase = "decode" if runtime % cycle < period[0][1] else "prefill"
        if phase == "decode":
            util, mem_util = rng.uniform(96, 100), rng.uniform(78, 88)
            watts, sm = min(315.0, 314.0 + rng.normal(0, 0.6)), rng.choice([1500, 1505, 1515, 1485, 1530])
        else:
            util, mem_util = rng.uniform(98, 100), rng.uniform(35, 48)
            watts, sm = min(315.0, 314.2 + rng.normal(0, 0.5)), rng.choice([1635, 1640, 1650, 1620])
        temp += (71.0 - temp) * 0.3  # C: the thread's 63-74 median, 75 max
        alloc = 22.4e9 + rng.normal(0, 2e6)
        gpu = [util, mem_util, alloc / 25769803776 * 100, alloc, round(temp + rng.normal(0, 0.8)), watts, 315.0,
               watts / 315.0 * 100, sm, 9501, sm, 0, 0]
        fmt = ["{:.0f}", "{:.0f}", "{:.4f}", "{:.0f}", "{:.0f}", "{:.3f}", "{:.1f}", "{:.2f}", "{:.0f}", "{:.0f}",
               "{:.0f}", "{:.0f}", "{:.0f}"]
        cells = [f.format(v) for f, v in zip(fmt, gpu, strict=True)]
        host = [f"{runtime:.5f}", f"{t0 + runtime:.6f}", f"{rng.uniform(6, 9):.2f}", f"{rng.uniform(31, 33):.2f}",
                f"{rng.uniform(2410, 2430):.2f}", "61.8"]
        rows.append(",".join(host + cells + cells + ['"{""runtime"": ' + f"{int(runtime)}" + "}\""]))
    return "\n".join(rows) + "\n"


DCGM_FIELDS = [  # name, type, help: NVIDIA/dcgm-exporter etc/default-counters.csv
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
]


def dcgm_club3090_178() -> str:
    """Two RTX 3090 under continuous tensor-parallel decode; GPU 1 (sandwiched) heats to 91 C and clocks down most."""
    uuids = ["GPU-5e0d2a41-7c3b-9f12-a8e4-1b6c0d9e7f21", "GPU-c93f18b2-04ad-6e57-b1d0-8a2f4c6e3d90"]
    # (start C, end C, time constant s, clock at start, clock at the end): the thread's figures
    prof = [(68.0, 87.0, 120.0, 1905.0, 1515.0), (80.0, 91.0, 90.0, 1905.0, 1365.0)]
    start = datetime(2026, 5, 23, 14, 2, 11, tzinfo=timezone.utc)
    energy = [8.41e9, 7.93e9]
    out = ["$ while true; do date -u; curl -s localhost:9400/metrics; sleep 5; done"]
    for k in range(72):
        t = 5.0 * k
        stamp = (start + timedelta(seconds=t)).strftime("%a %b %d %H:%M:%S UTC %Y")
        out.append(stamp)
        vals = []
        for g, (c0, c1, tau, f0, f1) in enumerate(prof):
            frac = 1.0 - np.exp(-t / tau)
            temp = c0 + (c1 - c0) * frac + rng.normal(0, 0.4)
            clock = f0 + (f1 - f0) * np.clip((temp - c0) / (c1 - c0), 0, 1) + rng.normal(0, 12)
            clock = 15 * round(clock / 15)
            power = float(np.clip(330 - 30 * frac + rng.normal(0, 6), 270, 345))
            energy[g] += power * 5.0 * 1000
            vals.append({"DCGM_FI_DEV_SM_CLOCK": f"{clock:.0f}", "DCGM_FI_DEV_MEM_CLOCK": "9501",
                         "DCGM_FI_DEV_GPU_TEMP": f"{round(temp):.0f}", "DCGM_FI_DEV_POWER_USAGE": f"{power:.3f}",
                         "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": f"{energy[g]:.0f}",
                         "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "0",
                         "DCGM_FI_DEV_GPU_UTIL": f"{rng.integers(93, 101)}",
                         "DCGM_FI_DEV_MEM_COPY_UTIL": f"{rng.integers(52, 71)}", "DCGM_FI_DEV_ENC_UTIL": "0",
                         "DCGM_FI_DEV_DEC_UTIL": "0", "DCGM_FI_DEV_XID_ERRORS": "0",
                         "DCGM_FI_DEV_FB_FREE": "1402", "DCGM_FI_DEV_FB_USED": "22846"})
        for name, kind, text in DCGM_FIELDS:
            out.append(f"# HELP {name} {text}\n# TYPE {name} {kind}")
            for g in range(2):
                labels = (f'gpu="{g}",UUID="{uuids[g]}",device="nvidia{g}",modelName="NVIDIA GeForce RTX 3090",'
                          f'Hostname="z77-rig",DCGM_FI_DRIVER_VERSION="570.153.02"')
                out.append(f"{name}{{{labels}}} {vals[g][name]}")
    return "\n".join(out) + "\n"


def gcp_drone69() -> str:
    """One T4 starving on GCS reads: Ops Agent NVML metrics at 60 s, as projects.timeSeries.list returns them."""
    end = datetime(2026, 1, 12, 11, 0, 0, tzinfo=timezone.utc)
    n = 60
    stamps = [end - timedelta(minutes=n - 1 - i) for i in range(n)]
    busy = rng.random(n) < 0.25
    util = np.where(busy, rng.uniform(55, 100, n), rng.uniform(0, 4, n))
    used = (2.9 + 0.2 * rng.random(n)) * 2 ** 30
    total = 15360 * 2 ** 20

    def iso(t: datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{rng.integers(0, 999999):06d}Z"

    def points(values, as_int: bool):
        pts = []
        for t, v in reversed(list(zip(stamps, values, strict=True))):  # newest first
            s = iso(t)
            value = {"int64Value": str(int(v))} if as_int else {"doubleValue": round(float(v), 1)}
            pts.append({"interval": {"startTime": s, "endTime": s}, "value": value})
        return pts

    resource = {"type": "gce_instance", "labels": {"project_id": "drone-detection-mlops",
                                                     "instance_id": "4617395827730147652",
                                                     "zone": "europe-west1-b"}}
    gpu = {"gpu_number": "0", "model": "Tesla T4", "uuid": "GPU-2b8f0c4e-93d1-7a65-e0f2-5c1d8b7a4e93"}
    series = [
        {"metric": {"labels": gpu, "type": "agent.googleapis.com/gpu/utilization"}, "resource": resource,
         "metricKind": "GAUGE", "valueType": "DOUBLE", "points": points(util, False), "unit": "%"},
        {"metric": {"labels": {**gpu, "memory_state": "used"}, "type": "agent.googleapis.com/gpu/memory/bytes_used"},
         "resource": resource, "metricKind": "GAUGE", "valueType": "INT64", "points": points(used, True),
         "unit": "By"},
        {"metric": {"labels": {**gpu, "memory_state": "free"}, "type": "agent.googleapis.com/gpu/memory/bytes_used"},
         "resource": resource, "metricKind": "GAUGE", "valueType": "INT64", "points": points(total - used, True),
         "unit": "By"},
    ]
    return json.dumps({"timeSeries": series, "unit": "%"}, indent=2) + "\n"


def cloudwatch_sourcegraph52272() -> str:
    """A g5.xlarge A10G embedding job held at ~100 % for 8 minutes: get-metric-statistics, 10 s Average, unordered."""
    start = datetime(2023, 5, 23, 13, 34, 0, tzinfo=timezone.utc)
    pts = []
    for k in range(49):  # 13:34:00 .. 13:42:00
        util = rng.uniform(0, 35) if k < 2 else float(min(100.0, rng.uniform(97, 101)))
        stamp = (start + timedelta(seconds=10 * k)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
        pts.append({"Timestamp": stamp, "Average": round(util, 1), "Unit": "None"})
    order = rng.permutation(len(pts))
    return json.dumps({"Label": "nvidia_smi_utilization_gpu", "Datapoints": [pts[i] for i in order]}, indent=4) + "\n"


def main() -> None:
    files = {"wandb_ninfer72_3090_power_cap.csv": wandb_ninfer72(),
             "dcgm_club3090_178_metrics_loop.txt": dcgm_club3090_178(),
             "gcp_drone69_t4_ops_agent.json": gcp_drone69(),
             "cloudwatch_sourcegraph52272_a10g.json": cloudwatch_sourcegraph52272()}
    for name, text in files.items():
        (HERE / name).write_text(text)


if __name__ == "__main__":
    main()
