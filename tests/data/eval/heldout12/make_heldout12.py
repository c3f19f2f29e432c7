"""Writes the twelfth round of held-out cases (deterministic): python tests/data/eval/heldout12/make_heldout12.py

GPU telemetry from public threads that state a cause (SOURCES.md), none used by an earlier round (every SOURCES.md
under tests/data grepped for the URL and the short owner/repo#N form). Every file is LABELED SYNTHETIC: an
`nvidia-smi --query-gpu=... --format=csv -l 1` log (the column names nvidia-smi prints for the fields queried)
carrying what the thread states — its GPU models, its figures, its rhythm — with what it does not state drawn here
and named below. No thread has a log to copy: they show tables, screenshots or figures in prose.

- club3090_766_mixed_tp.csv: noonghunna/club-3090#766 — an RTX 5090 (capped at 400 W) and an RTX 3090 Ti serving one
  model with tensor parallelism 2; 88.6 tokens/s against 150.9 on 2x3090; during the bench the 5090 draws 74 W and
  the 3090 Ti 151 W; the maintainer: under TP every layer ends in an all-reduce, the pair runs at the slower rank's
  pace, the faster card 'spends most of its time parked at the barrier'. Drawn: 1 Hz for 5 minutes; utilization
  90-100% on both (NCCL's waiting kernels count as busy; the thread gives no utilization); the 3090 Ti's limit 450 W
  (its default); SM clocks 2550-2800 MHz (5090) and 1860-1950 MHz (3090 Ti); power scattered around the thread's
  74 W and 151 W.
- cupy_3557_nccl_spin.csv: cupy/cupy#3557 — 4 GPUs, one process each, NCCL allGather; one process made to skip the
  allGather: the other three block, nvidia-smi shows them 'fully (i.e. 100%) occupied, although the temperature
  remained low'; the maintainer: a deadlock, every process in the communicator must join the collective. Drawn:
  GeForce GTX 1080 Ti x4 (the thread names no model), 1 Hz for 3 minutes of the hang; GPUs 0-2 at 100%, 60-75 W of
  250 W, 37-42 C, SM clock 1480-1620 MHz; GPU 3 (the process that moved on, then exited) 0%, 9-14 W, 139 MHz, 31 C.
- mcx_18_p2_lock.csv: fangq/mcx#18 — a GTX 980 Ti running MCX (a compute-bound Monte Carlo code) 'occasionally drops
  to a low-clock state after running for some time' (the linked forum thread: 'suddenly becomes 10x slower');
  nvidia-smi shows it locked in P2; reboot does not fix it. Drawn: 1 Hz for 10 minutes, the drop after 4 minutes;
  before: P2, SM 1190-1240 MHz, memory 3304 MHz, 180-220 W of 250 W, 70-75 C; after: P2, SM 135-150 MHz, memory 405
  MHz, 38-48 W, cooling to ~45 C; utilization 98-100% throughout (the kernels never stop, they run 10x longer).
- waifu2x_28_cuda_p2.csv: lltcggie/waifu2x-caffe#28 — upscaling with waifu2x-caffe, the memory clock reaches 3005 MHz
  where the card's default is 3506 MHz (benchmarks reach it); NVIDIA Inspector shows P2; the answer: a CUDA
  application keeps the card in P2 with the memory clock locked lower, by design (fewer memory errors), expected.
  Drawn: a GeForce GTX 970 (memory 1753 MHz, the thread's card), 1 Hz for 5 minutes, utilization 94-99%, SM
  1250-1290 MHz, memory 3004 MHz of clocks.max.memory 3505 MHz, 120-140 W of 145 W, 66-71 C.
- illinois_80_titanv_lost.csv: illinois-scicomp/machine-shop-maintenance#80 — a new Titan V running a user's process
  'rather hot, at 95C'; a few seconds later it disappeared: 'NVRM: Xid (PCI:0000:02:00): 79, ... GPU has fallen off
  the bus'; after a reboot it idles at 79-82 C and 59-63 W where a sound one idles at 36 C and 35 W: 'Something must
  be very wrong with that GPU'. Drawn: 1 Hz for 10 minutes; 95-100% busy, 200-245 W of 250 W, temperature climbing
  from 78 to 95 C over the last minutes, SM clock sagging from ~1335 to ~1100 MHz with it; at 8 min 30 s the GPU is
  lost and every later poll prints nvidia-smi's 'Unable to determine the device handle ... GPU is lost' line.
- leela_2051_mixed_threads.csv: leela-zero/leela-zero#2051 — a Titan V added to two GTX 1080 Ti; usage 'very low
  almost 12-18% per each devices' (20-30% with the two 1080 Ti alone); the maintainer: 'You may need more threads to
  saturate more GPUs' (the search threads on the host produce the GPUs' work). Drawn: 1 Hz for 5 minutes, each GPU
  flickering 3-35% around 15%, power 55-95 W of 250 W (all three), SM clocks at each card's boost (Titan V
  1335-1455, 1080 Ti 1800-1900 MHz).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(12)
BASE = ["timestamp", "index", "name", "utilization.gpu [%]", "clocks.current.sm [MHz]", "power.draw [W]",
        "power.limit [W]"]


def stamp(t: datetime) -> str:
    return t.strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def write(name: str, header: list[str], rows: list[tuple]) -> None:
    lines = [", ".join(header)] + [r if isinstance(r, str) else ", ".join(r) for r in rows]
    (HERE / name).write_text("\n".join(lines) + "\n")


def base(t: datetime, g: int, name: str, util: float, mhz: float, watts: float, limit: float) -> tuple:
    u = int(np.clip(round(util), 0, 100))
    return (stamp(t + timedelta(milliseconds=3 * g)), str(g), name, f"{u} %", f"{int(mhz)} MHz", f"{watts:.2f} W",
            f"{limit:.2f} W")


def club3090_766() -> None:
    t0, rows = datetime(2026, 7, 26, 14, 0, 0), []
    for s in range(300):
        t = t0 + timedelta(seconds=s)
        rows.append(base(t, 0, "NVIDIA GeForce RTX 5090", rng.uniform(90, 100), rng.uniform(2550, 2800),
                         74 + rng.normal(0, 6), 400))
        rows.append(base(t, 1, "NVIDIA GeForce RTX 3090 Ti", rng.uniform(90, 100), rng.uniform(1860, 1950),
                         151 + rng.normal(0, 10), 450))
    write("club3090_766_mixed_tp.csv", BASE, rows)


def cupy_3557() -> None:
    header = BASE + ["temperature.gpu"]
    t0, rows = datetime(2020, 7, 6, 10, 0, 0), []
    for s in range(180):
        t = t0 + timedelta(seconds=s)
        for g in range(3):
            rows.append(base(t, g, "GeForce GTX 1080 Ti", 100, rng.uniform(1480, 1620), rng.uniform(60, 75), 250)
                        + (str(int(rng.uniform(37, 42.99))),))
        rows.append(base(t, 3, "GeForce GTX 1080 Ti", 0, 139, rng.uniform(9, 14), 250) + ("31",))
    write("cupy_3557_nccl_spin.csv", header, rows)


def mcx_18() -> None:
    header = ["timestamp", "index", "name", "pstate", "utilization.gpu [%]", "clocks.current.sm [MHz]",
              "clocks.current.memory [MHz]", "power.draw [W]", "power.limit [W]", "temperature.gpu"]
    t0, rows, temp = datetime(2016, 2, 16, 22, 40, 0), [], 72.0
    for s in range(600):
        t = t0 + timedelta(seconds=s)
        if s < 240:
            sm, mem, watts, temp = rng.uniform(1190, 1240), 3304, rng.uniform(180, 220), rng.uniform(70, 75)
        else:
            sm, mem, watts = rng.uniform(135, 150), 405, rng.uniform(38, 48)
            temp = max(45.0, temp - 0.5) + rng.uniform(-0.4, 0.4)
        r = base(t, 0, "GeForce GTX 980 Ti", rng.uniform(98, 100), sm, watts, 250)
        rows.append(r[:3] + ("P2",) + r[3:5] + (f"{mem} MHz",) + r[5:] + (str(int(temp)),))
    write("mcx_18_p2_lock.csv", header, rows)


def waifu2x_28() -> None:
    header = ["timestamp", "index", "name", "pstate", "utilization.gpu [%]", "clocks.current.sm [MHz]",
              "clocks.current.memory [MHz]", "clocks.max.memory [MHz]", "power.draw [W]", "power.limit [W]",
              "temperature.gpu"]
    t0, rows = datetime(2016, 5, 27, 18, 0, 0), []
    for s in range(300):
        r = base(t0 + timedelta(seconds=s), 0, "GeForce GTX 970", rng.uniform(94, 99), rng.uniform(1250, 1290),
                 rng.uniform(120, 140), 145)
        rows.append(r[:3] + ("P2",) + r[3:5] + ("3004 MHz", "3505 MHz") + r[5:] + (str(int(rng.uniform(66, 71.99))),))
    write("waifu2x_28_cuda_p2.csv", header, rows)


def illinois_80() -> None:
    header = BASE + ["temperature.gpu"]
    t0, rows = datetime(2025, 4, 15, 16, 41, 30), []
    for s in range(600):
        t = t0 + timedelta(seconds=s)
        if s >= 510:
            rows.append("Unable to determine the device handle for GPU 00000000:02:00.0: GPU is lost.  Reboot the "
                        "system to recover this GPU")
            continue
        heat = max(0.0, (s - 300) / 210)  # 0 until 5 min, 1 at the fall
        temp = 78 + 17 * heat + rng.uniform(-0.6, 0.6)
        mhz = 1335 - 235 * heat + rng.uniform(-15, 15)
        rows.append(base(t, 0, "TITAN V", rng.uniform(95, 100), mhz, rng.uniform(200, 245), 250)
                    + (str(int(round(temp))),))
    write("illinois_80_titanv_lost.csv", header, rows)


def leela_2051() -> None:
    t0, rows = datetime(2018, 11, 28, 9, 0, 0), []
    cards = (("TITAN V", 1335, 1455), ("GeForce GTX 1080 Ti", 1800, 1900), ("GeForce GTX 1080 Ti", 1800, 1900))
    for s in range(300):
        t = t0 + timedelta(seconds=s)
        for g, (name, lo, hi) in enumerate(cards):
            util = float(np.clip(rng.gamma(4.0, 15 / 4.0), 3, 35))
            rows.append(base(t, g, name, util, rng.uniform(lo, hi), 55 + 40 * (util - 3) / 32 + rng.normal(0, 2),
                             250))
    write("leela_2051_mixed_threads.csv", BASE, rows)


if __name__ == "__main__":
    club3090_766()
    cupy_3557()
    mcx_18()
    waifu2x_28()
    illinois_80()
    leela_2051()
