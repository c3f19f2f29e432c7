"""Writes the LABELED SYNTHETIC files of the fourteenth held-out round (deterministic):
    python tests/data/eval/heldout14/make_heldout14.py

GPU telemetry in formats other than `nvidia-smi --query-gpu` CSV, from public threads that state a cause (SOURCES.md),
none cited by an earlier round (every SOURCES.md under tests/data grepped for the URL and the short owner/repo#N form).
The two real pastes of the round (yolov5_2491_v100_hang.txt, amdsmi_130_mi300x_monitor.txt) are committed as quoted;
this script writes the four files whose threads give figures in prose or screenshots, with what the thread does not
state drawn here and named below. Layouts are the tools' own (SOURCES.md cites where each was taken from).

- rocm564_pro_duo_thermal.txt: ROCm/legacy-rocm-build#564 "OpenCL: decreasing performance due to thermal
  throttling" — 3 Radeon Pro Duo (6 Polaris GPUs), an OpenCL program repeating a few kernels on all six; 'At first,
  the performance of the program is good. After about 190 seconds, the performance starts to drop and never
  recovers'; AMD (jlgreathouse): these cards have 'a maximum acoustically acceptable fan speed and will throttle down
  performance if they get too hot'. Drawn: a loop of the ROCm 1.9-era `rocm-smi` table (no GPU% column in that
  release: GPU Temp AvgPwr SCLK MCLK Fan Perf SCLK OD MCLK OD), one table a second for 8 minutes; SCLK 1243 MHz (the
  card's boost) until each GPU reaches ~84 c at 170-260 s, then DPM levels 910-1077 MHz held at 84-86 c; fan rising to
  and then pinned at its acoustic cap (~38%); AvgPwr ~105-115 W per GPU before, ~70-85 W after; MCLK 1750 MHz.
- barc_9_gpustat_watch.log: runa91/barc_release#9 — batch 24, ~13 GB of GPU memory, 'the gpu utilization is not
  stable from 0% to 90%, and most of time is 0% waiting for data'; workers set to 0; the author: 'data preparation
  is done on cpu and takes a while. it is highly recommended to use a big number of workers'. Drawn: `gpustat -i 1`
  (no colour) for 10 minutes, one GPU (an RTX 3090; the thread names no model), a step every ~4 s: about 1 s at
  70-92 %, then 2-4 s at 0-3 % while the main process prepares the next batch; 13.0-13.2 GB used.
- deit_81_dcgm_query_range.json: facebookresearch/deit#81 — 8 GPUs, 32 CPUs, `--num_workers 32` per process
  (256 loader workers on 32 CPUs); 'Sometime the gpus even stopped for a long time'; 37 epochs in a day against 75 a
  day on 4 GPUs in the paper; setting num_workers to 4 (the number of CPUs per GPU) fixed it. Drawn: a Prometheus
  `/api/v1/query_range` answer (resultType matrix) for DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_POWER_USAGE from
  dcgm-exporter, 15 s step over 2 hours, 8 Tesla V100-SXM2-32GB on one host; all eight working together (85-99 %,
  230-290 W) in stretches of 1-4 minutes, stopping together for 2-6 minutes (0-4 %, 50-60 W) — about 60% of the time
  stopped, the oversubscribed host starving every rank at once.
- tf_11022_pmon_two_procs.txt: tensorflow/tensorflow#11022 "Major performance hit when running two processes on same
  GPU" — one process alone: 170-174 s and 'never exceeds 50% Volatile GPU-Utilization'; two identical processes at
  once: both finish in 320-340 s, 'each adds approximately 45-50% GPU utilization', ~1 GiB of the GPU's 11 GB each.
  CUDA contexts of separate processes are time-sliced (serialized) on one GPU. Drawn: `nvidia-smi pmon -s um` on GPU
  0 of a GeForce GTX 1080 Ti (11 GB; the thread names none), one sample a second for 330 s, two python processes
  (PIDs 23145, 23188) each at sm 41-52 %, fb ~1030-1060 MB.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(14)


def rocm564() -> str:
    """6 GPUs, one rocm-smi table a second for 480 s; each GPU throttles once it reaches ~84 c."""
    onset = [230, 250, 170, 190, 240, 260]  # s: the middle board (GPUs 2-3) runs hottest
    banner = ["====================    ROCm System Management Interface    ====================",
              "================================================================================",
              " GPU  Temp    AvgPwr   SCLK     MCLK     Fan      Perf    SCLK OD    MCLK OD"]
    tail = ["================================================================================",
            "====================           End of ROCm SMI Log          ===================="]
    out = []
    for t in range(480):
        out += banner
        for g in range(6):
            hot = t >= onset[g]
            temp = min(84.0, 52.0 + 32.0 * t / onset[g]) if not hot else 84.0 + rng.integers(0, 3)
            fan = min(38.0, 18.0 + 20.0 * t / onset[g]) + rng.uniform(-0.4, 0.4)
            sclk = 1243 if not hot else int(rng.choice([910, 1077, 1077, 910, 1077]))
            pwr = rng.uniform(105, 115) if not hot else rng.uniform(70, 85)
            cells = [f"{int(temp)}c", f"{pwr:.2f}W", f"{sclk}Mhz", "1750Mhz", f"{fan:.1f}%"]
            out.append(f"  {g}   " + "".join(c.ljust(9) if i else c.ljust(8) for i, c in enumerate(cells))
                       + "auto      0%         0%")
        out += tail
    return "\n".join(out) + "\n"


def barc9() -> str:
    """One GPU, gpustat -i 1 for 600 s: ~1 s of work, then 2-4 s waiting for the next batch."""
    t0 = datetime(2022, 10, 28, 14, 2, 11)
    out, t = [], 0
    while t < 600:
        busy_s = 1 if rng.random() < 0.8 else 2
        wait_s = int(rng.integers(2, 5))
        for k in range(busy_s + wait_s):
            if t >= 600:
                break
            util = int(rng.integers(70, 93)) if k < busy_s else int(rng.integers(0, 4))
            temp = 52 + (3 if k < busy_s else 0) + int(rng.integers(0, 2))
            used = 13012 + int(rng.integers(0, 180))
            now = (t0 + timedelta(seconds=t)).strftime("%a %b %d %H:%M:%S %Y")
            out.append(f"gpu-server                {now}  515.65.01")
            out.append(f"[0] NVIDIA GeForce RTX 3090 | {temp}°C, {util:>3} % | {used:>5} / 24576 MB | "
                       f"minushuang({used - 310}M)")
            t += 1
    return "\n".join(out) + "\n"


def deit81() -> str:
    """8 V100s scraped by dcgm-exporter, a 2 h query_range at 15 s: the eight work and stop together."""
    start = 1616752800  # 2021-03-26 10:00:00 UTC
    n = 480
    working = np.zeros(n, dtype=bool)
    i = 0
    while i < n:
        run = int(rng.integers(4, 17))  # 1-4 min working
        working[i:i + run] = True
        i += run + int(rng.integers(8, 25))  # 2-6 min stopped
    result = []
    for g in range(8):
        util, power = [], []
        for k in range(n):
            ts = start + 15 * k
            if working[k]:
                u, p = rng.integers(85, 100), rng.uniform(230, 290)
            else:
                u, p = rng.integers(0, 5), rng.uniform(50, 60)
            util.append([ts, str(int(u))])
            power.append([ts, f"{p:.3f}"])
        labels = {"gpu": str(g), "UUID": f"GPU-5e0c7a1b-00{g}1-4c2e-9b1d-6f3a2c9e81{g:02d}",
                  "device": f"nvidia{g}", "modelName": "Tesla V100-SXM2-32GB", "Hostname": "dgx-07",
                  "instance": "10.12.0.7:9400", "job": "dcgm-exporter"}
        result.append({"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", **labels}, "values": util})
        result.append({"metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", **labels}, "values": power})
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}) + "\n"


def tf11022() -> str:
    """nvidia-smi pmon -s um on GPU 0 for 330 s: two identical python processes time-sharing the GPU."""
    out = ["# gpu        pid  type    fb    sm   mem   enc   dec   command",
           "# Idx          #   C/G    MB     %     %     %     %   name"]
    for _ in range(330):
        for pid in (23145, 23188):
            fb = 1030 + int(rng.integers(0, 31))
            sm = int(rng.integers(41, 53))
            mem = int(rng.integers(12, 21))
            out.append(f"    0      {pid}     C  {fb:>4}    {sm:>2}    {mem:>2}     -     -   python")
    return "\n".join(out) + "\n"


def main() -> None:
    (HERE / "rocm564_pro_duo_thermal.txt").write_text(rocm564())
    (HERE / "barc_9_gpustat_watch.log").write_text(barc9())
    (HERE / "deit_81_dcgm_query_range.json").write_text(deit81())
    (HERE / "tf_11022_pmon_two_procs.txt").write_text(tf11022())


if __name__ == "__main__":
    main()
