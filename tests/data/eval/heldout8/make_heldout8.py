"""Writes the eighth round of held-out cases (deterministic): python tests/data/eval/heldout8/make_heldout8.py

Losing runs from public threads whose cause lies beyond the earlier rounds' (a GPU shared with another job, a debug
mode left on, a logger that blocks the loop, listeners outside the step timer, logging every step). Every file but
one is LABELED SYNTHETIC: written here in the format of the tool's own print statement, carrying the figures the
thread gives; what the thread does not state is drawn and named below. cbio_342_iteration_took.log is the thread's
own pasted lines, copied as pasted. Written before the engine saw them and scored once as written (SOURCES.md).

- cbio_342_iteration_took.log: cBio/cbio-cluster#342 'Accidental usage of GPUs?' — a 4-node x 4-GPU job's log lines
  '2015-11-21 05:54:18,834: Iteration took 32.709 s.' ~32 s, then ~102 s from 05:59, then 143 s ... 1153 s two days
  later; the cluster admins suspect another user's job on the same GPUs. The REAL lines of the first pasted block
  (the second, two days later, follows lines the thread leaves out: joined to the first it read as one 2-day gap).
- stylegan2_ada_310_second_container.log: NVlabs/stylegan2-ada-pytorch#310 — 'As soon as I start the training in the
  second instance, the training slows down for both ... to half speed ... Upon stopping one of the docker containers,
  the training speed increases back to normal' (--gpus=2). training_loop.py's status line ('tick ... kimg ... time
  ... sec/tick ... sec/kimg ... maintenance ... cpumem ... gpumem ... augment'). Drawn: 4 kimg a tick, ~10.4
  sec/kimg alone, the second container from tick 60 on (~20.8 sec/kimg), 120 ticks.
- lightning_12344_detect_anomaly.log: Lightning-AI/pytorch-lightning#12344 — 'Enabling the Trainer option
  detect_anomaly ... I've experienced 3X slow down ... [and widely fluctuating GPU utilizations]'; the maintainers:
  debugging only (PyTorch's docs: 'will slow down your program execution'). Written as Lightning 2.x prints it,
  with the info line #17380 added ('You have turned on `Trainer(detect_anomaly=True)`. This will significantly slow
  down compute speed and is recommended only for model debugging.'). Drawn: 1000 steps at ~1.7 it/s (3x below the
  ~5 it/s the thread implies), one tqdm refresh a line.
- wandb_8666_log_blocks.log: wandb/wandb#8666 '`wandb.log` blocks training loop periodically' — 'starts normally
  at ~40it/s but halves every few seconds to ~20it/s then restores. Removing `wandb.log` resolves this problem'. A
  bare tqdm bar. Drawn: a 1.2 s block every ~5 s, 20000 steps, a refresh every 0.5 s.
- dl4j_3282_ui_listener.log: deeplearning4j/deeplearning4j#3282 — attaching the UIServer, 'one epoch goes from 0.9
  minutes to 8 minutes'; raver119: 'iteration time never changes, but overall epoch time suffers a lot ... listener
  invocation time isn't measured'. PerformanceListener's line ('iteration 4; iteration time: 360 ms; samples/sec:
  355.556; batches/sec: 2.778; score: 2.059811123111661;', #1985) under logback's 'HH:mm:ss.SSS [main] INFO'
  prefix. Drawn: batch 64, ~46 ms an iteration, the lines ~410 ms apart (8 / 0.9), 600 iterations.
- deepmd_996_tensorboard_every_step.log: deepmodeling/deepmd-kit#996 (merged) — TensorBoard written every step: 'the
  elapsed seconds every 2000 steps are trippled' ('batch 2000 training time 45.67 s' against 14.11 s with it off).
  DeePMD's own line, the three pasted lines first, the run continued at the same pace. Drawn: 40 lines.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _write(name: str, lines: list[str]) -> None:
    (HERE / name).write_text("\n".join(lines) + "\n")


def _hms(s: float) -> str:
    s = int(s)
    h, r = divmod(s, 3600)
    m, s = divmod(r, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def cbio_342() -> None:
    _write("cbio_342_iteration_took.log", [
        "2015-11-21 05:54:18,834: Iteration took 32.709 s.",
        "2015-11-21 05:54:51,243: Iteration took 32.403 s.",
        "2015-11-21 05:55:24,073: Iteration took 32.824 s.",
        "2015-11-21 05:55:55,827: Iteration took 31.747 s.",
        "2015-11-21 05:56:26,363: Iteration took 30.530 s.",
        "2015-11-21 05:56:58,877: Iteration took 32.507 s.",
        "2015-11-21 05:57:31,882: Iteration took 32.999 s.",
        "2015-11-21 05:58:02,966: Iteration took 31.077 s.",
        "2015-11-21 05:59:51,511: Iteration took 108.539 s.",
        "2015-11-21 06:01:33,997: Iteration took 102.479 s.",
        "2015-11-21 06:03:15,544: Iteration took 101.541 s.",
        "2015-11-21 06:04:58,324: Iteration took 102.773 s.",
        "2015-11-21 06:06:44,061: Iteration took 105.731 s.",
        "2015-11-21 06:08:25,503: Iteration took 101.436 s.",
        "2015-11-21 06:10:07,424: Iteration took 101.914 s.",
        "2015-11-21 06:11:48,712: Iteration took 101.282 s."])


def _format_time(s: float) -> str:
    """dnnlib.util.format_time."""
    s = int(np.rint(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02}s"
    return f"{s // 3600}h {(s // 60) % 60:02}m {s % 60:02}s"


def stylegan2_ada_310() -> None:
    rng = np.random.default_rng(310)
    lines = ["Training for 5000 kimg...", ""]
    total, kimg, batch = 18.4, 0.0, 32
    first = 9.3
    total += first
    lines.append(f"tick {0:<5d} kimg {kimg:<8.1f} time {_format_time(total):<12s} sec/tick {first:<7.1f} "
                 f"sec/kimg {first / batch * 1e3:<7.2f} maintenance {18.4:<6.1f} cpumem {4.61:<6.2f} "
                 f"gpumem {10.87:<6.2f} augment {0.0:.3f}")
    kimg = batch / 1e3
    aug = 0.0
    for tick in range(1, 121):
        per_kimg = (20.8 if tick >= 60 else 10.4) * float(np.exp(0.015 * rng.standard_normal()))
        nimg = 4.0
        sec = per_kimg * nimg
        maint = 0.1 + 0.05 * rng.random()
        total += sec + maint
        kimg += nimg
        aug = min(0.6, aug + 0.004 * rng.random())
        lines.append(f"tick {tick:<5d} kimg {kimg:<8.1f} time {_format_time(total):<12s} sec/tick {sec:<7.1f} "
                     f"sec/kimg {per_kimg:<7.2f} maintenance {maint:<6.1f} cpumem {4.62 + 0.001 * tick:<6.2f} "
                     f"gpumem {10.90:<6.2f} augment {aug:.3f}")
    _write("stylegan2_ada_310_second_container.log", lines)


def lightning_12344() -> None:
    rng = np.random.default_rng(12344)
    lines = ["You have turned on `Trainer(detect_anomaly=True)`. This will significantly slow down compute speed "
             "and is recommended only for model debugging.",
             "GPU available: True (cuda), used: True",
             "TPU available: False, using: 0 TPU cores",
             "HPU available: False, using: 0 HPUs",
             "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]",
             "",
             "  | Name  | Type             | Params",
             "-------------------------------------------",
             "0 | model | ResNet           | 11.2 M",
             "1 | loss  | CrossEntropyLoss | 0     ",
             "-------------------------------------------",
             "11.2 M    Trainable params",
             "0         Non-trainable params",
             "11.2 M    Total params",
             "44.696    Total estimated model params size (MB)"]
    t, n = 0.0, 1000
    for step in range(1, n + 1):
        t += 0.6 * float(np.exp(0.25 * rng.standard_normal()))
        if step % 10:
            continue
        rate = step / t
        pct = 100 * step // n
        bar = "█" * (pct // 10) + ("▌" if pct % 10 >= 5 else "")
        loss = 2.3 * np.exp(-step / 700) + 0.2 + 0.03 * rng.standard_normal()
        lines.append(f"Epoch 0: {pct:3d}%|{bar:<10}| {step}/{n} [{_hms(t)}<{_hms((n - step) / rate)}, "
                     f"{rate:5.2f}it/s, v_num=3, train_loss={loss:.3f}]")
    _write("lightning_12344_detect_anomaly.log", lines)


def wandb_8666() -> None:
    rng = np.random.default_rng(8666)
    lines, t, step, ema, n = [], 0.0, 0, None, 20000
    next_block = 5.0 * float(np.exp(0.1 * rng.standard_normal()))
    while step < n:
        dt = 0.5
        blocked = next_block <= t < next_block + 1.2
        if t >= next_block + 1.2:
            next_block = t + 5.0 * float(np.exp(0.1 * rng.standard_normal()))
        rate_now = (20.0 if blocked else 40.0) * float(np.exp(0.03 * rng.standard_normal()))
        done = min(n - step, int(round(rate_now * dt)))
        step += done
        t += dt
        ema = rate_now if ema is None else 0.3 * rate_now + 0.7 * ema
        pct = 100 * step // n
        bar = "█" * (pct // 10)
        lines.append(f"{pct:3d}%|{bar:<10}| {step}/{n} [{_hms(t)}<{_hms((n - step) / ema)}, {ema:5.2f}it/s]")
    _write("wandb_8666_log_blocks.log", lines)


def dl4j_3282() -> None:
    rng = np.random.default_rng(3282)
    lines, t = [], 10 * 3600 + 41 * 60 + 7.215
    for it in range(1, 601):
        it_ms = int(round(46 * float(np.exp(0.12 * rng.standard_normal()))))
        t += 0.41 * float(np.exp(0.08 * rng.standard_normal()))
        h, r = divmod(t, 3600)
        m, s = divmod(r, 60)
        score = 2.3 * np.exp(-it / 400) + 0.25 + 0.02 * rng.standard_normal()
        lines.append(f"{int(h):02d}:{int(m):02d}:{s:06.3f} [main] INFO  o.d.o.l.PerformanceListener - iteration {it}; "
                     f"iteration time: {it_ms} ms; samples/sec: {64000 / it_ms:.3f}; batches/sec: {1000 / it_ms:.3f}; "
                     f"score: {score:.15f};")
    _write("dl4j_3282_ui_listener.log", lines)


def deepmd_996() -> None:
    rng = np.random.default_rng(996)
    lines = ["DEEPMD INFO    start training at lr 1.00e-03 (== 1.00e-03), decay_step 5000, decay_rate 0.950006, "
             "final lr will be 3.51e-08",
             "DEEPMD INFO    batch    2000 training time 45.67 s, testing time 0.02 s",
             "DEEPMD INFO    batch    4000 training time 45.22 s, testing time 0.02 s",
             "DEEPMD INFO    batch    6000 training time 44.97 s, testing time 0.02 s"]
    for batch in range(8000, 82000, 2000):
        lines.append(f"DEEPMD INFO    batch {batch:>7d} training time {45.3 * float(np.exp(0.01 * rng.standard_normal())):.2f} s,"
                     f" testing time {0.02:.2f} s")
    _write("deepmd_996_tensorboard_every_step.log", lines)


if __name__ == "__main__":
    cbio_342()
    stylegan2_ada_310()
    lightning_12344()
    wandb_8666()
    dl4j_3282()
    deepmd_996()
