"""Writes the LABELED SYNTHETIC files of the sixty-third held-out round (deterministic):
    python tests/data/eval/heldout63/make_heldout63.py

GPU metrics as a Grafana panel's inspector (Inspect -> Data -> Download CSV) writes them, in the layouts Grafana's own
source writes (packages/grafana-data/src/utils/csv.ts toCSV: a header of quoted display names, `""` inside a name;
the "Download for Excel" switch puts a `sep=,` line first; CRLF line ends; with "Formatted data" off the time is
epoch milliseconds, on it is `YYYY-MM-DD HH:mm:ss` in the dashboard's zone; "Series joined by time" one column per
series, off it one frame per series or the long `Series,Time,Value` rows of older versions), with the figures of a
public thread that states a cause (or no problem). What the thread does not state is drawn here and named below.
None of the threads is cited by an earlier round (every SOURCES.md and generator under tests/data and docs grepped).

- grafana_excel_epochms_lanedet15.csv: aliyun/conditional-lane-detection#15 — with batch size 64 the GPU utilization
  is "时为0时为80%" (now 0, now 80 %) and training stutters; the maintainer: "应该是读取数据太慢了，增加num_workers
  数量，有条件的话把数据放到ssd上" (data is read too slowly: more num_workers, data on an SSD). Drawn: one GPU
  (modelName "Tesla V100-SXM2-32GB"), dcgm-exporter's DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED (MiB) at
  Prometheus' 15 s scrape for 40 minutes, each point a 15 s mix of 0 % and 80 % bursts (mean ~38 %), ~14.2 GB used;
  downloaded "for Excel" (UTF-8 BOM, `sep=,`) with formatted data off (epoch ms).
- grafana_wide_gpustack5614_h200.csv: gpustack/gpustack#5614 — on NVIDIA H200 141G workers,
  `DCGM_FI_DEV_GPU_UTIL` "can reach 100%" while the dashboard's `gpustack:worker_node_gpu_utilization_rate` "only
  reaches a maximum of 80%" ("dcgm查到利用率是100%，但是grafana的仪表板最高只到75%左右"); the maintainer: gpustack's
  runtime uses NVML's GPM (`nvmlGpmQueryDeviceSupport`), a different measure; resolved. Drawn: two H200 on one
  worker under steady serving load for 30 minutes at 30 s, both DCGM series 96-100 %, the worker's gpustack rate
  70-80 % (one series for the node, no gpu label); joined by time, formatted times.
- grafana_long_deepspeech1468_1070.csv: mozilla/DeepSpeech#1468 — one GTX 1070 8GB, batch size 16, validation_step=1
  and display_step=1: the GPU "is 0 at this point for some time" at each "Starting batch", then "goes 100% for a few
  seconds"; CPU almost always 100 %; the maintainer: "it might be WER computation that is CPU-bound that kicks-in
  often with validation". Drawn: utkuozdemir/nvidia_gpu_exporter's series (`nvidia_smi_utilization_gpu_ratio`, a
  0-1 ratio, and `nvidia_smi_power_draw_watts`, labelled by uuid) at a 15 s scrape for 20 minutes, each point a mix
  of the CPU-bound gaps and the busy bursts (ratio 0.2-0.7, mean ~0.45), power 45-150 W with it; Grafana's long
  layout `"Series","Time","Value"` (comma), formatted times.
- grafana_wide_keras512_4gpu.csv: aws/sagemaker-python-sdk#512 — Keras `multi_gpu_model` on a multi-GPU SageMaker
  instance; after the reporter's change "at least I can see that one GPU (I assume gpu:0) is used from the instance
  metrics" while the others are not. Drawn: four V100 (an ml.p3.8xlarge) on host algo-1 with dcgm-exporter, 30 s
  for 30 minutes: GPU 0 85-99 % busy, GPUs 1-3 at 0 %; TensorFlow holds memory on all four (15.1-15.6 GiB each of
  16 GiB, TF's default whole-memory allocation); joined by time, formatted times.
"""

from __future__ import annotations

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _stamp(t: float) -> str:
    import time
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def _write(name: str, lines: list[str], *, bom: bool = False) -> None:
    text = "\r\n".join(lines) + "\r\n"
    (HERE / name).write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))


def lanedet15() -> None:
    rng = random.Random(15)
    labels = ('Hostname="gpu-node-3", UUID="GPU-5e1c09a2-7d44-1b8e-93f0-2c6a0b7d1e45", device="nvidia0", '
              'gpu="0", instance="10.42.0.17:9400", job="dcgm-exporter", modelName="Tesla V100-SXM2-32GB"')
    head = ["Time", f"DCGM_FI_DEV_GPU_UTIL{{{labels}}}", f"DCGM_FI_DEV_FB_USED{{{labels}}}"]
    lines = ["sep=,", ",".join(_q(h) for h in head)]
    t0 = 1626418800000  # 2021-07-16 07:00:00 UTC
    for i in range(160):
        busy = rng.betavariate(2.2, 2.4)  # the share of the 15 s the 80 % bursts filled
        util = round(80 * busy) if rng.random() > 0.08 else 0
        lines.append(f"{t0 + 15000 * i},{util},{14180 + rng.randint(-6, 6)}")
    _write("grafana_excel_epochms_lanedet15.csv", lines, bom=True)


def gpustack5614() -> None:
    rng = random.Random(5614)
    cols = []
    for g in (0, 1):
        cols.append(f'DCGM_FI_DEV_GPU_UTIL{{Hostname="gpustack-worker-1", gpu="{g}", instance="gpustack-worker-1:9400", '
                    f'job="dcgm", modelName="NVIDIA H200"}}')
    cols.append('gpustack:worker_node_gpu_utilization_rate{instance="gpustack-worker-1:10150", job="gpustack-worker", '
                'worker_name="gpustack-worker-1"}')
    lines = [",".join(_q(h) for h in ["Time", *cols])]
    t0 = 1781600400  # 2026-06-16 09:00:00 UTC
    for i in range(60):
        a, b = rng.randint(96, 100), rng.randint(96, 100)
        lines.append(f"{_stamp(t0 + 30 * i)},{a},{b},{rng.uniform(70, 80):.1f}")
    _write("grafana_wide_gpustack5614_h200.csv", lines)


def deepspeech1468() -> None:
    rng = random.Random(1468)
    uuid = "GPU-9b1f2c44-0a7e-3d51-c8e2-6f4a1d0b2e93"
    util_name = f'nvidia_smi_utilization_gpu_ratio{{instance="localhost:9835", job="nvidia_gpu_exporter", uuid="{uuid}"}}'
    pow_name = f'nvidia_smi_power_draw_watts{{instance="localhost:9835", job="nvidia_gpu_exporter", uuid="{uuid}"}}'
    t0 = 1532354400  # 2018-07-23 14:00:00 UTC
    util, power = [], []
    for _i in range(80):
        r = min(0.72, max(0.18, rng.gauss(0.45, 0.13)))
        util.append(round(r, 2))
        power.append(round(40 + 115 * r + rng.uniform(-6, 6), 2))
    lines = [",".join(_q(h) for h in ("Series", "Time", "Value"))]
    for name, vals in ((util_name, util), (pow_name, power)):
        for i, v in enumerate(vals):
            lines.append(f"{_q(name)},{_q(_stamp(t0 + 15 * i))},{v}")
    _write("grafana_long_deepspeech1468_1070.csv", lines)


def keras512() -> None:
    rng = random.Random(512)
    heads = []
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"):
        for g in range(4):
            heads.append(f'{metric}{{Hostname="algo-1", gpu="{g}", modelName="Tesla V100-SXM2-16GB"}}')
    lines = [",".join(_q(h) for h in ["Time", *heads])]
    t0 = 1543485600  # 2018-11-29 10:00:00 UTC
    for i in range(60):
        util = [rng.randint(85, 99), 0, 0, 0]
        fb = [15580 + rng.randint(-4, 4), 15470, 15470, 15470]
        lines.append(",".join([_stamp(t0 + 30 * i), *map(str, util), *map(str, fb)]))
    _write("grafana_wide_keras512_4gpu.csv", lines)


if __name__ == "__main__":
    lanedet15()
    gpustack5614()
    deepspeech1468()
    keras512()
