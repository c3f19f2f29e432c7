"""Writes the eleventh round of held-out cases (deterministic): python tests/data/eval/heldout11/make_heldout11.py

GPU telemetry from public threads that state a cause (SOURCES.md), none seen by the engine before. Every file is
LABELED SYNTHETIC: `nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,clocks.sm,power.draw,power.limit
--format=csv` (the header nvidia-smi prints for those fields) carrying what the thread states — its GPUs, its
utilization and power figures, its rhythm — with what it does not state drawn here and named below. The threads show
their telemetry as nvidia-smi tables or screenshots, never as a log, so no file is the thread's own text.

- megengine_2_spiky.csv: MegEngine/Models#2 — resnet50 on 8 GPUs, `watch -n0.1 nvidia-smi` shows utilization
  oscillating between 60% and 100% every epoch; the maintainer: probably insufficient data supply, 4 workers a GPU by
  default, try `--workers 8`. Drawn: 8 Tesla V100-SXM2-16GB sampled every 100 ms (`-lms 100`) for 90 s, each GPU
  between ~60 and 100 with a period of 0.4-0.8 s, mean ~80%, power 190-290 W of 300 W.
- tensorpack_447_alternating.csv: tensorpack/tensorpack#447 — two GPUs in data-parallel training, queue size nearly
  50 (the input is not short), utilization under 50% on average and the two used alternately ('when one GPU is 100%,
  the other is 0%; when one is 30%, the other is around 70%'); ppwwyyxx: a dependency between the GPUs or
  communication; the user, after switching to 'two same 1080 ti GPUs instead of two different ones': 'they seem to be
  collaborating well'. Drawn: GPU 0 a GeForce GTX 1080 Ti, GPU 1 a GeForce GTX 1080 (the thread does not name the
  second card), 1 Hz for 5 minutes, the two busy in turn (sum near 100), power following the utilization.
- nnunet_1884_all_zero.csv: MIC-DKFZ/nnUNet#1884 — with 1000 CT cases on 4 12G 1080 Ti, utilization 'would
  intermittently all be 0', the run takes longer; the maintainer: check for a CPU or IO bottleneck, raise the
  augmentation processes (nnUNet_n_proc_DA=32). Drawn: 4 GeForce GTX 1080 Ti at 1 Hz for 10 minutes, busy 90-100%
  except gaps of 3-12 s where all four read 0-3% together, ~30% of the seconds.
- yolov5obb_439_one_hz.csv: hukaixuan19970627/yolov5_obb#439 — one 3090, memory full, utilization jumping 0 -> 97 ->
  0 about once a second, 12 minutes an epoch; the maintainer: utilization 0 means the GPU finished a batch and the
  next is not ready, the CPU cannot keep up with the preprocessing of batch 48; the user accepts it. Drawn: one
  GeForce RTX 3090 at 1 Hz for 5 minutes, samples 0-5 or 90-97 in roughly equal share with a few in between, power
  110-340 W following them, of 350 W.
- open_clip_703_every_8.csv: mlfoundations/open_clip#703 'Training freezes every num_worker iterations' — RN50 on
  CC3M, 16 V100-32GB, `-j 8` (8 loader workers), a freeze every num_workers iterations on two systems and either data
  format, far slower than a reference run; rwightman: 'there is an incredibly long wait each new pass of the
  dataloader on your setup ... usually caused by slow disks'. Drawn: the 8 GPUs of one node at 1 Hz for 10 minutes,
  8 steps of ~0.45 s then a wait of 5-7 s with all eight idle together (the workers' batches arrive together), so
  ~62% of the time idle; utilization 92-100 busy, 0-2 idle; power 230-290 W busy, 55-70 W idle, of 300 W.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(11)
HEADER = ["timestamp", "index", "name", "utilization.gpu [%]", "clocks.sm [MHz]", "power.draw [W]", "power.limit [W]"]


def stamp(t: datetime) -> str:
    return t.strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def write(name: str, rows: list[tuple]) -> None:
    lines = [", ".join(HEADER)] + [", ".join(r) for r in rows]
    (HERE / name).write_text("\n".join(lines) + "\n")


def row(t: datetime, g: int, name: str, util: float, mhz: float, watts: float, limit: float) -> tuple:
    u = int(np.clip(round(util), 0, 100))
    return (stamp(t + timedelta(milliseconds=3 * g)), str(g), name, f"{u} %", f"{int(mhz)} MHz", f"{watts:.2f} W",
            f"{limit:.2f} W")


def megengine_2() -> None:
    t0, rows = datetime(2020, 3, 25, 9, 0, 0), []
    period = rng.uniform(0.4, 0.8, size=8)
    phase = rng.uniform(0, 1, size=8)
    for k in range(900):
        t = k * 0.1
        for g in range(8):
            wave = 0.5 + 0.5 * np.cos(2 * np.pi * (t / period[g] + phase[g]))
            util = 60 + 40 * wave + rng.normal(0, 3)
            rows.append(row(t0 + timedelta(milliseconds=100 * k), g, "Tesla V100-SXM2-16GB", util,
                            rng.integers(1380, 1531), 190 + 100 * wave + rng.normal(0, 5), 300))
    write("megengine_2_spiky.csv", rows)


def tensorpack_447() -> None:
    t0, rows = datetime(2017, 10, 20, 16, 0, 0), []
    for s in range(300):
        share = rng.choice([1.0, 0.0, 0.3, 0.7, 0.9, 0.1])
        u0 = 100 * share + rng.normal(0, 3)
        u1 = 100 * (1 - share) + rng.normal(0, 3)
        t = t0 + timedelta(seconds=s)
        rows.append(row(t, 0, "GeForce GTX 1080 Ti", u0, rng.integers(1480, 1912), 60 + 1.8 * max(u0, 0), 250))
        rows.append(row(t, 1, "GeForce GTX 1080", u1, rng.integers(1600, 1860), 45 + 1.3 * max(u1, 0), 180))
    write("tensorpack_447_alternating.csv", rows)


def nnunet_1884() -> None:
    t0, rows = datetime(2024, 1, 10, 8, 0, 0), []
    idle = np.zeros(600, dtype=bool)
    s = 0
    while s < 600:
        s += int(rng.integers(10, 28))
        gap = int(rng.integers(3, 13))
        idle[s:s + gap] = True
        s += gap
    for s in range(600):
        for g in range(4):
            util = rng.integers(0, 4) if idle[s] else rng.integers(90, 101)
            watts = rng.uniform(60, 80) if idle[s] else rng.uniform(200, 245)
            rows.append(row(t0 + timedelta(seconds=s), g, "GeForce GTX 1080 Ti", util, rng.integers(1480, 1900),
                            watts, 250))
    write("nnunet_1884_all_zero.csv", rows)


def yolov5obb_439() -> None:
    t0, rows = datetime(2022, 8, 17, 11, 0, 0), []
    for s in range(300):
        r = rng.random()
        util = rng.integers(0, 6) if r < 0.45 else rng.integers(90, 98) if r < 0.9 else rng.integers(20, 80)
        rows.append(row(t0 + timedelta(seconds=s), 0, "NVIDIA GeForce RTX 3090", util, rng.integers(1695, 1950),
                        110 + 2.3 * util + rng.normal(0, 8), 350))
    write("yolov5obb_439_one_hz.csv", rows)


def open_clip_703() -> None:
    t0, rows = datetime(2023, 10, 22, 19, 0, 0), []
    t, spans = 0.0, []
    while t < 600:
        spans.append((t, t + 8 * rng.uniform(0.42, 0.48)))
        t = spans[-1][1] + rng.uniform(5, 7)
    for s in range(600):
        busy = sum(max(0.0, min(b, s + 1) - max(a, s)) for a, b in spans)
        for g in range(8):
            util = (92 + 8 * rng.random()) * busy + rng.integers(0, 3) * (1 - busy)
            rows.append(row(t0 + timedelta(seconds=s), g, "Tesla V100-SXM2-32GB", util, rng.integers(1290, 1531),
                            rng.uniform(55, 70) + busy * rng.uniform(175, 220), 300))
    write("open_clip_703_every_8.csv", rows)


if __name__ == "__main__":
    megengine_2()
    tensorpack_447()
    nnunet_1884()
    yolov5obb_439()
    open_clip_703()
