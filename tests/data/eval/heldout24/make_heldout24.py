"""Writes the LABELED SYNTHETIC files of the twenty-fourth held-out round (deterministic):
    python tests/data/eval/heldout24/make_heldout24.py

GPU telemetry of runs that lose GPU time (and one that does not), from public issue threads that state figures and a
cause (SOURCES.md), none cited by an earlier round (every SOURCES.md and generator under tests/data and docs grepped for
the URL and the short owner/repo#N form). No thread holds a pasted time series, so every file is written here from the
thread's stated figures; what a thread does not state is drawn and named below. Layouts are the tools' own
(SOURCES.md cites where each was taken from).

- finetrainers_174_8gpu_loader_wait.csv: huggingface/finetrainers#174 "each step will wait for a while before starting
  training" — 8 GPUs, dataloader_num_workers 16; 'a step takes a total of 55 seconds, of which the model calculation
  time is 42 seconds, but before that, 13 seconds will be consumed in the dataloader, and the GPU utilization rate is
  0'. Drawn: `nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,memory.used,power.draw,power.limit
  --format=csv -l 1`, 8 H100 80GB HBM3 (the thread names no model), 8 steps (440 s): 13 s at 0 % (~110 W), then 42 s
  at 96-100 % (560-690 W), each GPU's edges within a second of the others.
- open_clip_681_gpustat.log: mlfoundations/open_clip#681 "Training OpenCLIP but GPU utilization is 0%" — one process
  (`--workers=8`, batch 128, ViT-B-32, a CSV dataset): 'the GPU utilization is always 0%'; the log's later lines
  read 'Data (t): 11.252 Batch (t): 11.458' (0.2 s of each 11.5 s step on the GPU). Drawn: `gpustat -i 1`, one RTX
  A6000 (the thread names none), 10 min; one poll per step shows the 0.2 s of work (12-25 %), the rest 0 %.
- open_clip_13_v100_workers1.csv: mlfoundations/open_clip#13 "training perf for single GPU is not good" — one V100,
  bs=128, workers=1, amp: 'GPU idle time is almost twice of GPU active due to the sem_timedwait as blocked in CPU';
  with batch 150 and 8 workers 'the GPU utils became very high'. Drawn: `nvidia-smi --query-gpu=timestamp,name,
  utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm --format=csv -l 1`, a Tesla V100-SXM2-16GB,
  10 min: steps far shorter than the poll, so each poll reads the active third (26-42 %, 95-135 W).
- alpaca_lora_584_4v100_smi_loop.txt: tloen/alpaca-lora#584 "GPU UTIL fluctuates wildly" — 4 V100, 'the GPU
  utilization fluctuates between 0% and 90% rapidly. And only 1 GPU working at the same time'; finetune.py without
  torchrun loads the model with device_map="auto" (one model split layer-wise over the GPUs, alpaca-lora#554: 'model
  paralelism (one model split onto several gpus)'). Drawn: `nvidia-smi -l 1` tables (a timestamp line, the table,
  no process list), driver 525.105.17, 4 Tesla V100-SXM2-32GB, 180 polls: the busy GPU walks 0,1,2,3 (forward) then
  3,2,1,0 (backward), 1-2 polls each at 84-92 % (190-250 W), the others 0-4 % (55-70 W).
- llamatuner_66_2a100_dmon.txt: jianzhnie/LLamaTuner#66 "多卡似乎不能将每张卡跑满" — 2 A100, LoRA on Baichuan-13B,
  CUDA_VISIBLE_DEVICES and device_map set; 'gpu负载总是某张卡高，其他都很低' (one card's load is always high, the
  others very low), '有点像是流水线并行' (a bit like pipeline parallel); the maintainer points at the line of
  train_lora.py that enables model parallelism. Drawn: `nvidia-smi dmon -o T` (-s puc), 2 A100-SXM4-80GB, 10 min:
  the two GPUs take turns, 1-3 s each at 88-99 % (300-380 W) while the other sits at 0-3 % (85-95 W).
- ai_toolkit_758_5090_slow.csv and ai_toolkit_758_5090_ltx.csv: ostris/ai-toolkit#758 "LTX-2 LoRA training is ~5x
  slower in AI-Toolkit compared to LTX Trainer with compiled Triton 3.4.0 (Windows)" — one RTX 5090: AI-Toolkit ~5.4 s
  a step, 'GPU utilization ... ~20-25%', 'Power draw ... ~160 W'; the LTX trainer (self-compiled Triton, which 'works
  correctly under Windows and achieves full GPU utilization') ~1.1 s a step at 90-100 % and 350-450 W. Drawn:
  `nvidia-smi --query-gpu=timestamp,name,utilization.gpu,power.draw,power.limit,clocks.sm,memory.used,temperature.gpu
  --format=csv -l 1` on the 5090 (575 W limit), 10 min each: the slow run 18-27 % at 140-180 W; the LTX run 90-100 %
  at 350-450 W.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(24)


def _stamp(t: datetime) -> str:
    """nvidia-smi's `timestamp` field: 2023/09/13 10:12:01.123."""
    return t.strftime("%Y/%m/%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def finetrainers174() -> str:
    """8 GPUs, 8 steps of 55 s: 13 s all waiting for the loader, 42 s computing."""
    t0 = datetime(2025, 1, 3, 9, 14, 2)
    head = ("timestamp, index, name, utilization.gpu [%], memory.used [MiB], power.draw [W], power.limit [W]")
    out = [head]
    skew = rng.integers(-1, 2, size=8)  # s: each GPU's edges within a second of the others
    for s in range(8 * 55):
        for g in range(8):
            phase = (s - skew[g]) % 55
            busy = phase >= 13
            util = int(rng.integers(96, 101)) if busy else 0
            pwr = rng.uniform(560, 690) if busy else rng.uniform(100, 120)
            mem = 61000 + int(rng.integers(-600, 600)) if busy else 58400 + int(rng.integers(-100, 100))
            t = t0 + timedelta(seconds=s, milliseconds=int(g * 2 + rng.integers(0, 2)))
            out.append(f"{_stamp(t)}, {g}, NVIDIA H100 80GB HBM3, {util} %, {mem} MiB, {pwr:.2f} W, 700.00 W")
    return "\n".join(out) + "\n"


def open_clip681() -> str:
    """One GPU, gpustat -i 1 for 600 s: 0.2 s of work per 11.46 s step."""
    t0 = datetime(2023, 10, 18, 18, 27, 13)
    out, next_step = [], 3.0
    for s in range(600):
        util = 0
        if s <= next_step < s + 1:
            util = int(rng.integers(12, 26))
            next_step += rng.uniform(11.2, 11.7)
        temp = 44 + (3 if util else 0) + int(rng.integers(0, 2))
        used = 10518 + int(rng.integers(-4, 5))
        t = (t0 + timedelta(seconds=s)).strftime("%a %b %d %H:%M:%S %Y")
        out.append(f"lab-gpu01                 {t}  535.104.05")
        out.append(f"[0] NVIDIA RTX A6000     | {temp}°C, {util:3d} % | {used:5d} / 49140 MB | user({used - 310}M)")
    return "\n".join(out) + "\n"


def open_clip13() -> str:
    """One V100, 600 s: steps far shorter than the poll, the GPU active a third of each."""
    t0 = datetime(2021, 9, 6, 10, 3, 0)
    out = ["timestamp, name, utilization.gpu [%], utilization.memory [%], memory.used [MiB], power.draw [W], "
           "clocks.current.sm [MHz]"]
    for s in range(600):
        util = int(np.clip(rng.normal(34, 4), 26, 42))
        t = t0 + timedelta(seconds=s, milliseconds=int(rng.integers(0, 4)))
        out.append(f"{_stamp(t)}, Tesla V100-SXM2-16GB, {util} %, {int(util * 0.45)} %, "
                   f"{9730 + int(rng.integers(-20, 21))} MiB, {rng.uniform(95, 135):.2f} W, 1530 MHz")
    return "\n".join(out) + "\n"


def _smi_table(t: datetime, rows: list[tuple[int, int, int, int]]) -> list[str]:
    """One `nvidia-smi` table (driver 525's layout) for V100s: (temp C, power W, used MiB, util %) per GPU."""
    out = [t.strftime("%a %b %d %H:%M:%S %Y"),
           "+-----------------------------------------------------------------------------+",
           "| NVIDIA-SMI 525.105.17   Driver Version: 525.105.17   CUDA Version: 12.0     |",
           "|-------------------------------+----------------------+----------------------+",
           "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |",
           "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |",
           "|                               |                      |               MIG M. |",
           "|===============================+======================+======================|"]
    bus = ["00000000:1A:00.0", "00000000:1B:00.0", "00000000:3D:00.0", "00000000:3E:00.0"]
    for g, (temp, pwr, used, util) in enumerate(rows):
        out += [f"|   {g}  Tesla V100-SXM2...  On   | {bus[g]} Off |                    0 |",
                f"| N/A   {temp}C    P0   {pwr:3d}W / 300W |  {used:5d}MiB / 32768MiB |    {util:3d}%      Default |",
                "|                               |                      |                  N/A |",
                "+-------------------------------+----------------------+----------------------+"]
    return out + [""]


def alpaca584() -> str:
    """4 V100s, 180 polls: one GPU at a time works, in the order 0,1,2,3,3,2,1,0."""
    t0 = datetime(2023, 9, 13, 10, 12, 1)
    order = [0, 1, 2, 3, 3, 2, 1, 0]
    busy_seq: list[int] = []
    while len(busy_seq) < 180:
        for g in order:
            busy_seq += [g] * int(rng.integers(1, 3))
    used = [7820, 6110, 6110, 6950]
    out: list[str] = []
    for s in range(180):
        rows = []
        for g in range(4):
            on = busy_seq[s] == g
            util = int(rng.integers(84, 93)) if on else int(rng.integers(0, 5))
            pwr = int(rng.integers(190, 251)) if on else int(rng.integers(55, 71))
            temp = int(rng.integers(48, 53)) if on else int(rng.integers(40, 45))
            rows.append((temp, pwr, used[g] + int(rng.integers(-30, 31)), util))
        out += _smi_table(t0 + timedelta(seconds=s), rows)
    return "\n".join(out)


def llamatuner66() -> str:
    """2 A100s, dmon -o T for 600 s: the GPUs take turns, 1-3 s each."""
    t0 = datetime(2023, 7, 19, 15, 40, 0)
    out = ["#Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk",
           "#HH:MM:SS    Idx      W      C      C      %      %      %      %    MHz    MHz"]
    s, turn = 0, 0
    while s < 600:
        for _ in range(int(rng.integers(1, 4))):
            for g in range(2):
                on = g == turn
                sm = int(rng.integers(88, 100)) if on else int(rng.integers(0, 4))
                pwr = int(rng.integers(300, 381)) if on else int(rng.integers(85, 96))
                mem = int(sm * 0.55)
                gt = int(rng.integers(55, 60)) if on else int(rng.integers(46, 50))
                t = (t0 + timedelta(seconds=s)).strftime("%H:%M:%S")
                out.append(f" {t}      {g}    {pwr:3d}     {gt}     {gt - 3}     {sm:2d}     {mem:2d}      0      0"
                           f"   1593   {1410 if on else 1275}")
            s += 1
        turn = 1 - turn
    return "\n".join(out) + "\n"


def _toolkit(t0: datetime, util: tuple[int, int], watts: tuple[float, float], clock: int, used: int) -> str:
    """One RTX 5090 on Windows, 600 s of `--query-gpu` CSV."""
    out = ["timestamp, name, utilization.gpu [%], power.draw [W], power.limit [W], clocks.current.sm [MHz], "
           "memory.used [MiB], temperature.gpu"]
    for s in range(600):
        u = int(rng.integers(util[0], util[1] + 1))
        w = rng.uniform(*watts)
        t = t0 + timedelta(seconds=s, milliseconds=int(rng.integers(0, 9)))
        temp = int(45 + w / 12 + rng.integers(0, 2))
        out.append(f"{_stamp(t)}, NVIDIA GeForce RTX 5090, {u} %, {w:.2f} W, 575.00 W, "
                   f"{clock + int(rng.integers(-45, 46))} MHz, {used + int(rng.integers(-50, 51))} MiB, {temp}")
    return "\n".join(out) + "\n"


def main() -> None:
    files = {
        "finetrainers_174_8gpu_loader_wait.csv": finetrainers174(),
        "open_clip_681_gpustat.log": open_clip681(),
        "open_clip_13_v100_workers1.csv": open_clip13(),
        "alpaca_lora_584_4v100_smi_loop.txt": alpaca584(),
        "llamatuner_66_2a100_dmon.txt": llamatuner66(),
        "ai_toolkit_758_5090_slow.csv": _toolkit(datetime(2026, 3, 26, 20, 5, 0), (18, 27), (140, 180), 2610,
                                                 29800),
        "ai_toolkit_758_5090_ltx.csv": _toolkit(datetime(2026, 3, 26, 22, 40, 0), (90, 100), (350, 450), 2700,
                                                30400),
    }
    for name, text in files.items():
        (HERE / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
