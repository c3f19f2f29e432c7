"""Writes the ninth round of held-out cases (deterministic): python tests/data/eval/heldout9/make_heldout9.py

GPU TELEMETRY of runs whose utilization was poor, oscillating or spotty, pasted (or shown as a screenshot) in
public threads with a confirmed or maintainer-stated cause. Two files are the thread's own paste, copied as the
stored thread shows it (REAL); the rest are LABELED SYNTHETIC: the tool's own format carrying the figures the thread
states, with what the thread does not say drawn here (named per file below). SOURCES.md gives each thread, the
label and the first-try score.

Formats: the `nvidia-smi` table of the driver the thread names (the 410-era layout below 410 has no CUDA version);
`nvidia-smi --query-gpu=... --format=csv -l 1` ("%Y/%m/%d %H:%M:%S.%f"[:-3] stamps, values with units);
`nvidia-smi dmon -s pu` (its two `#` header lines); gpustat's one line per GPU
(`[0] GeForce GTX 1080 Ti | 71'C,  98 % |  4539 / 11176 MB | user(4521M)`).

- pytorch_examples_470_one_table.txt (REAL): pytorch/examples#470 — one `nvidia-smi` table, a GTX 1080 Ti at 0%
  and 70 W holding 9584 MiB while the ImageNet example runs "slow".
- rosinality_65_gpustat.txt (REAL): rosinality/style-based-gan-pytorch#65 — two gpustat pastes of 2 GTX 1080 Ti
  (98%/57%, then 99%/100%); the maintainer: the implementation "relies on DataParallel ... in simple way" (not
  very efficient).
- tensorpack_321_nfs_4gpu.csv (SYNTHETIC): tensorpack/tensorpack#321 — 4-GPU training "almost half the time they
  are not working" (all four idle together), an epoch 40-50 h against 20 h on one GPU; fixed by "moving data from
  network-mounted to local". Drawn: 4 TITAN X (Pascal), 250 W, 2 s polls; busy ~8 s then idle ~6-10 s together.
- tensorpack_409_queue_empty_smi.txt (SYNTHETIC): tensorpack/tensorpack#409 — ImageNet ResNet on 4 Titan X at
  0.1-0.2 it/s "with close to zero GPU utilization", loadavg > 300, queue size ~0; 7.8 it/s with --fake data.
  `nvidia-smi -l 5` tables; drawn: 0-2% with one GPU-wide burst of 60-90% on about one poll in eight.
- qwen_970_nccl_env.csv (SYNTHETIC): QwenLM/Qwen#970 — fine-tuning on several GPUs, utilization full but power
  very low, progress very slow; the maintainer: "looks like communication is stuck, check the NCCL environment
  variables"; the user: the NCCL environment variables were indeed wrong. Drawn: 8 A800 80GB (400 W), 2 s polls,
  100% util at 88-110 W, SM clock at its 1410 MHz boost.
- video_analyst_215_jumps.csv (SYNTHETIC): megvii-research/video_analyst#215 — "GPU-Util always jumps from 89%
  seconds later to 0%, then 89% again"; the maintainer: "highly probably due to the bottleneck at data providing
  stage". Drawn: 2 GPUs (2 processes), RTX 2080 Ti 250 W, 1 s polls, 3-5 s at 85-92% then 2-4 s at 0%.
- tdmpc2_43_small_model.csv (SYNTHETIC): nicklashansen/tdmpc2#43 — TD-MPC2 (5M) "utilises only 5% of NVIDIA 3090
  GPU" for 5 days; the maintainer: with low-dimensional (state) observations there is not much to do about it,
  off-policy RL implementations have similar utilization (a model too small for the GPU, launch-bound).
  Drawn: 1 s polls, 3-8% util, 105-125 W of 350 W, clock at 1695-1890 MHz.
- voxceleb_110_two_idle_dmon.txt (SYNTHETIC): clovaai/voxceleb_trainer#110 — 8 GPUs; midway through the first
  epoch "the Hz drops from 300+ to less than 10 ... GPU utilization (of 6 or 7 out of 8 GPUs) goes to 100% from
  90%. While the remaining 1 or 2 of the GPUs go down to 0%". No fix in the thread: the label rests on the
  telemetry's own semantics (peers spinning at 100% in a collective while a rank does no work). `nvidia-smi dmon
  -s pu`; drawn: V100 300 W; before the drop all at 88-93% / 230-270 W, after it GPUs 0-5 at 100% / 70-85 W, GPUs 6
  and 7 at 0% / 40 W.

Written after the first eight were scored and fixed, as a second batch (scored once as written, too):
- pixel_link_52_partial_table.txt (REAL): ZJULearning/pixel_link#52 — the table rows as pasted (no header, the last
  row cut), 3 GTX TITAN X at 9%, 0%, 28% and 82-93 W while training at 4.166 s/step; "all gpu is not busy";
  unresolved in the thread.
"""

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
rng = np.random.default_rng(9)


def write(name, lines):
    (HERE / name).write_text("\n".join(lines) + "\n")


def smi_table(date, driver, gpus):
    """One nvidia-smi snapshot (410/440-era layout), with the date line nvidia-smi -l prints above it. gpus: dicts
    name, bus, fan, temp, pwr, cap, used, total, util."""
    stamp = f"{date:%a %b} {date.day:2d} {date:%H:%M:%S %Y}"
    head = (f"| NVIDIA-SMI {driver:<23}Driver Version: {driver:<26}|" if float(driver.split(".")[0]) < 410 else
            f"| NVIDIA-SMI {driver:<13}Driver Version: {driver:<13}CUDA Version: 10.0     |")
    out = [stamp, "+-----------------------------------------------------------------------------+", head,
           "|-------------------------------+----------------------+----------------------+",
           "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |",
           "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |",
           "|===============================+======================+======================|"]
    for i, g in enumerate(gpus):
        out.append(f"| {i:3d}  {g['name']:<19.19} On   | {g['bus']} Off |                  N/A |")
        out.append(f"| {g['fan']:>3}   {g['temp']:2d}C    P2  {g['pwr']:4d}W / {g['cap']:3d}W |"
                   f" {g['used']:6d}MiB / {g['total']:5d}MiB | {g['util']:6d}%   E. Process |")
        out.append("+-------------------------------+----------------------+----------------------+")
    return out + [""]


def stamp(t):
    return t.strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def query_csv(name, header, rows):
    write(name, [", ".join(header)] + [", ".join(r) for r in rows])


def pytorch_examples_470():
    write("pytorch_examples_470_one_table.txt", [
        "+-----------------------------------------------------------------------------+",
        "| NVIDIA-SMI 390.87                 Driver Version: 390.87                    |",
        "|-------------------------------+----------------------+----------------------+",
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |",
        "|===============================+======================+======================|",
        "|   0  GeForce GTX 108...  Off  | 00000000:01:00.0  On |                  N/A |",
        "| 31%   58C    P2    70W / 250W |   9584MiB / 11170MiB |      0%      Default |",
        "+-------------------------------+----------------------+----------------------+"])


def rosinality_65():
    write("rosinality_65_gpustat.txt", [
        "[0] GeForce GTX 1080 Ti | 71'C,  98 % |  4539 / 11176 MB | my_user(4521M) root(5M)",
        "[1] GeForce GTX 1080 Ti | 60'C,  57 % |  3145 / 11178 MB | my_user(3133M)",
        "[0] GeForce GTX 1080 Ti | 85'C,  99 % |  5705 / 11176 MB | my_user(5687M) root(5M)",
        "[1] GeForce GTX 1080 Ti | 79'C, 100 % |  4309 / 11178 MB | my_user(4297M)"])


def tensorpack_321():
    t, rows, busy, left = datetime(2017, 6, 30, 14, 0, 0), [], True, 4
    for _ in range(150):
        for g in range(4):
            util = int(rng.integers(93, 100)) if busy else int(rng.integers(0, 3))
            pwr = 60 + 1.7 * util + rng.normal(0, 6)
            rows.append((stamp(t + timedelta(milliseconds=3 * g)), str(g), f"{util} %", f"{pwr:.2f} W",
                         "250.00 W", f"{11807 + g} MiB"))
        left -= 1
        if left == 0:
            busy = not busy
            left = int(rng.integers(4, 6)) if busy else int(rng.integers(3, 6))
        t += timedelta(seconds=2)
    query_csv("tensorpack_321_nfs_4gpu.csv", ["timestamp", "index", "utilization.gpu [%]", "power.draw [W]",
                                              "power.limit [W]", "memory.used [MiB]"], rows)


def tensorpack_409():
    t0, lines = datetime(2017, 9, 4, 11, 20, 0), []
    for k in range(60):
        burst = k % 8 == 3
        gpus = []
        for g in range(4):
            util = int(rng.integers(60, 91)) if burst else int(rng.integers(0, 3))
            gpus.append(dict(name="TITAN X (Pascal)", bus=f"00000000:{[2, 3, 0x82, 0x83][g]:02X}:00.0",
                             fan="23%", temp=int(38 + util / 8), pwr=int(56 + 1.6 * util + rng.normal(0, 3)),
                             cap=250, used=11757, total=12189, util=util))
        lines += smi_table(t0 + timedelta(seconds=5 * k), "384.66", gpus)
    write("tensorpack_409_queue_empty_smi.txt", lines)


def qwen_970():
    t, rows = datetime(2024, 1, 16, 9, 30, 0), []
    for _ in range(120):
        for g in range(8):
            rows.append((stamp(t + timedelta(milliseconds=4 * g)), str(g), "NVIDIA A800-SXM4-80GB",
                         f"{int(rng.integers(99, 101))} %", "1410 MHz", f"{rng.uniform(88, 110):.2f} W",
                         "400.00 W", f"{61203 + 17 * g} MiB"))
        t += timedelta(seconds=2)
    query_csv("qwen_970_nccl_env.csv", ["timestamp", "index", "name", "utilization.gpu [%]", "clocks.sm [MHz]",
                                        "power.draw [W]", "power.limit [W]", "memory.used [MiB]"], rows)


def video_analyst_215():
    t, rows, busy, left = datetime(2021, 12, 4, 16, 0, 0), [], True, 4
    for _ in range(240):
        for g in range(2):
            util = int(rng.integers(85, 93)) if busy else 0
            pwr = (55 + 1.9 * util + rng.normal(0, 5)) if busy else rng.uniform(52, 60)
            rows.append((stamp(t + timedelta(milliseconds=3 * g)), str(g), f"{util} %", f"{pwr:.2f} W",
                         "250.00 W"))
        left -= 1
        if left == 0:
            busy = not busy
            left = int(rng.integers(3, 6)) if busy else int(rng.integers(2, 5))
        t += timedelta(seconds=1)
    query_csv("video_analyst_215_jumps.csv", ["timestamp", "index", "utilization.gpu [%]", "power.draw [W]",
                                              "power.limit [W]"], rows)


def tdmpc2_43():
    t, rows = datetime(2024, 9, 1, 8, 0, 0), []
    for _ in range(300):
        rows.append((stamp(t), "0", "NVIDIA GeForce RTX 3090", f"{int(rng.integers(3, 9))} %",
                     f"{int(rng.integers(1695, 1891))} MHz", f"{rng.uniform(105, 125):.2f} W", "350.00 W"))
        t += timedelta(seconds=1)
    query_csv("tdmpc2_43_small_model.csv", ["timestamp", "index", "name", "utilization.gpu [%]", "clocks.sm [MHz]",
                                            "power.draw [W]", "power.limit [W]"], rows)


def voxceleb_110():
    lines = ["# gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk",
             "# Idx     W     C     C     %     %     %     %   MHz   MHz"]
    for k in range(90):
        for g in range(8):
            if k < 30:
                sm, pwr = int(rng.integers(88, 94)), int(rng.integers(230, 271))
            elif g < 6:
                sm, pwr = 100, int(rng.integers(70, 86))
            else:
                sm, pwr = 0, int(rng.integers(39, 42))
            mem = sm // 3 if k < 30 else 0
            lines.append(f"{g:5d} {pwr:5d} {int(45 + pwr / 12):5d} {int(42 + pwr / 14):5d} {sm:5d} {mem:5d}"
                         f"     0     0   877  {1530 if pwr > 60 else 1380:4d}")
    write("voxceleb_110_two_idle_dmon.txt", lines)


def pixel_link_52():
    write("pixel_link_52_partial_table.txt", [
        "|   0  GeForce GTX TIT...  Off  | 00000000:04:00.0 Off |                  N/A |",
        "| 34%   71C    P2    89W / 250W |  10516MiB / 12212MiB |      9%      Default |",
        "+-------------------------------+----------------------+----------------------+",
        "|   1  GeForce GTX TIT...  Off  | 00000000:08:00.0 Off |                  N/A |",
        "| 29%   68C    P2    82W / 250W |  10516MiB / 12212MiB |      0%      Default |",
        "+-------------------------------+----------------------+----------------------+",
        "|   2  GeForce GTX TIT...  Off  | 00000000:84:00.0 Off |                  N/A |",
        "| 31%   71C    P2    93W / 250W |  10516MiB / 12212MiB |     28%      Default "])


if __name__ == "__main__":
    for make in (pytorch_examples_470, rosinality_65, tensorpack_321, tensorpack_409, qwen_970, video_analyst_215,
                 tdmpc2_43, voxceleb_110, pixel_link_52):
        make()
