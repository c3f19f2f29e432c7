"""Writes the tenth round of held-out cases (deterministic): python tests/data/eval/heldout10/make_heldout10.py

Losing runs from public threads, none seen by the engine before (SOURCES.md). Two files are the thread's own pasted
lines (REAL, copied as the stored thread shows them); the rest are LABELED SYNTHETIC: the tool's own print format
carrying the figures the thread states, with what the thread does not state drawn here and named below.

- niftynet_47_iter_times.log (REAL): NifTK/NiftyNet#47 'running slower and slower ?' — NiftyNet's
  'INFO:niftynet:<stamp>: Training iter N, loss=... (S s)' lines as pasted (iter 3150-3162): a few seconds an
  iteration at the start, 3-108 s here; a later comment: 'After a couple of hundred iterations the iteration time goes
  up by a factor of 10'. No cause confirmed.
- mmf_27_time_per_100.log (REAL): facebookresearch/mmf#27 'The training time increases for every iteration
  especially after 1000 iterations' — the pasted block (time(s) per 100 iterations, 307.7, 268.5 ... 356.2).
- tensorpack_1104_second_epoch.log (SYNTHETIC): tensorpack/tensorpack#1104 — GPU utilization 'will fall off the
  cliff' on a 65000-class task; ppwwyyxx: 'What happened in your log is that the data becomes slower in the 2nd
  epoch.' tensorpack's own lines (the format of tensorpack#1383's paste: '[0119 15:39:21 @base.py:283] Epoch 16
  (global_step 8000) finished, time:1 minute 49 seconds.', the tqdm summary '100%|###|500/500[01:49<00:00,
  4.55it/s]', monitor.py's 'QueueInput/queue_size: 50', 'GPUUtil/0: 94.606'). Drawn: 2000 steps an epoch, 8
  epochs, epoch 1 at ~4.4 it/s with a full queue, epochs 2-8 at ~1.6 it/s, queue near 0, GPUUtil ~30.
- gan_compression_47_loss_plot.log (SYNTHETIC): mit-han-lab/gan-compression#47 'Why it is getting slower and slower
  when training the supernets?' — the user: 'I find my training time increase in drawing loss module. I write some
  code to draw loss by visdom.' gan-compression's utils/logger.py print_current_errors line ('(epoch: %d, iters:
  %d, time: %.3f) ' then 'name: %.3f' per loss). Drawn: 'time' taken as the seconds between two prints (print_freq
  100 iterations), 0.30 s an iteration of training plus a plot that redraws the whole loss history (its cost grows
  with the history: 0.25 ms more per print), 300 prints.
- torchtitan_4038_omp_oversub.csv (SYNTHETIC): pytorch/torchtitan#4038 '[rl] Trainer/generator GPUs sit idle from CPU
  thread oversubscription' — 'generator GPU util rose ~73% -> ~87% and per-step time went 112s -> 87s' with
  OMP_NUM_THREADS=8; cause: each co-located process sizes its OMP/BLAS pool to all 368 cores and they thrash.
  nvidia-smi --query-gpu CSV. Drawn: 8 H100 at 1 Hz for 8 minutes, each second busy unless the host glue holds it
  (irregular gaps, 27% of the seconds on average, not shared across GPUs in time), busy clocks and power.
- peft_2894_gc_every_step.csv (SYNTHETIC): huggingface/peft#2894 (merged) — the MetaMathQA script called
  gc.collect() and cuda.empty_cache() after each step: 250 steps 108 s; without gc.collect 65 s, without either 45 s.
  nvidia-smi --query-gpu CSV of the one GPU. Drawn: 1 Hz for 5 minutes, a step 0.43 s of which 0.18 s on the GPU,
  so utilization near 42% every second (sampling noise +-6 points), clocks high, power low.
- centernet_604_data_grows.log (SYNTHETIC): xingyizhou/CenterNet#604 'GPU: Training goes slower and slower' — 'the Data
  time and Net time goes longer and longer', power jumping 70-240 W, GPU-Util very low; the user: 'it's a matter of
  CPU when I shut down two pycharm windows. It comes to the original speed.' The pasted line at iter 4784 reads
  'Data 3.556s(0.517s) |Net 1.014s'. CenterNet's trainer line under --print_iter ('{task}/{exp_id}| train:
  [epoch][iter/num_iters]|Tot: ... |ETA: ... |loss ... |Data {dt.val:.3f}s({dt.avg:.3f}s) |Net {bt.avg:.3f}s', Data
  the last wait, its running mean, Net the running mean of the whole iteration). Drawn: print_iter 100, epoch 54,
  0.40 s an iteration with 0.01 s of data wait to iteration 1000, then the wait grows linearly to ~3.5 s at 4800.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(10)


def write(name: str, lines: list[str]) -> None:
    (HERE / name).write_text("\n".join(lines) + "\n")


def niftynet_47() -> None:
    rows = [("05:22:22,000", 3150, "0.4051785469055176", "107.969888"),
            ("05:22:25,146", 3151, "0.31178414821624756", "3.145937"),
            ("05:22:34,333", 3152, "0.354453444480896", "9.186936"),
            ("05:24:08,897", 3153, "0.3638203740119934", "94.563101"),
            ("05:24:51,947", 3154, "0.4660397171974182", "43.049718"),
            ("05:26:30,054", 3155, "0.3705129623413086", "98.107050"),
            ("05:26:36,323", 3156, "0.31395673751831055", "6.268041"),
            ("05:26:39,645", 3157, "0.4561350345611572", "3.321751"),
            ("05:27:14,898", 3158, "0.37726694345474243", "35.252799"),
            ("05:27:21,865", 3159, "0.3682054877281189", "6.966398"),
            ("05:28:41,427", 3160, "0.44507360458374023", "79.561367"),
            ("05:28:44,359", 3161, "0.326259970664978", "2.931988"),
            ("05:29:18,675", 3162, "0.41969871520996094", "34.315881")]
    write("niftynet_47_iter_times.log", [f"INFO:niftynet:2018-02-04 {t}: Training iter {i}, loss={loss} ({s}s)"
                                         for t, i, loss, s in rows])


def mmf_27() -> None:
    rows = [(100, "3.6883", "0.2910", "0.1358", "0.2867", "3.3840", "307.7"),
            (200, "3.2849", "0.3172", "0.2345", "0.2809", "3.0615", "268.5"),
            (300, "2.7410", "0.3990", "0.2964", "0.3617", "2.9113", "282.1"),
            (400, "2.4218", "0.4266", "0.3522", "0.3578", "2.6786", "299.6"),
            (500, "2.1596", "0.4867", "0.3994", "0.3617", "2.5952", "285.3"),
            (600, "2.1245", "0.4711", "0.4355", "0.3736", "2.5149", "329.9"),
            (700, "2.0011", "0.4941", "0.4629", "0.3406", "2.7058", "356.2"),
            (800, "1.9192", "0.5035", "0.4865", "0.3521", "2.5427", "324.3"),
            (900, "1.8463", "0.5258", "0.5033", "0.3668", "2.4809", "335.9")]
    write("mmf_27_time_per_100.log", ["BEGIN TRAINING..."] + [
        f"iter: {i} train_loss: {a}  train_score: {b}  avg_train_score: {c} val_score: {d} val_loss: {e} "
        f"time(s): {t} s" for i, a, b, c, d, e, t in rows])


def _humanize(s: float) -> str:
    """tensorpack's humanize_time_delta: '1 minute 49 seconds', '1 hour 2 minutes 3 seconds'."""
    s = int(round(s))
    h, r = divmod(s, 3600)
    m, sec = divmod(r, 60)
    parts = [f"{v} {w}{'s' if v != 1 else ''}" for v, w in ((h, "hour"), (m, "minute"), (sec, "second")) if v]
    return " ".join(parts) or "0 seconds"


def _mmss(s: float) -> str:
    s = int(round(s))
    h, r = divmod(s, 3600)
    m, sec = divmod(r, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


def tensorpack_1104() -> None:
    t = datetime(2019, 3, 10, 17, 56, 40)
    per_epoch, out = 2000, []
    for epoch in range(1, 9):
        rate = (4.4 if epoch == 1 else 1.6) * float(np.exp(0.03 * rng.standard_normal()))
        secs = per_epoch / rate
        out.append(f"[{t:%m%d %H:%M:%S} @base.py:273] Start Epoch {epoch} ...")
        out.append(f"100%|{'#' * 60}|{per_epoch}/{per_epoch}[{_mmss(secs)}<00:00, {rate:.2f}it/s]")
        t += timedelta(seconds=secs)
        out.append(f"[{t:%m%d %H:%M:%S} @base.py:283] Epoch {epoch} (global_step {epoch * per_epoch}) finished, "
                   f"time:{_humanize(secs)}.")
        t += timedelta(seconds=1)
        util = 93.4 if epoch == 1 else 29.0 + rng.uniform(-3, 3)
        queue = 49.8 if epoch == 1 else rng.uniform(0.1, 0.6)
        for line in (f"GPUUtil/0: {util:.3f}", f"GPUUtil/1: {util - rng.uniform(0, 2):.3f}",
                     f"QueueInput/queue_size: {queue:.3g}", f"Throughput (samples/sec): {rate * 64 * 2:.4g}",
                     f"cross_entropy_loss: {4.1 - 0.2 * epoch:.5g}"):
            out.append(f"[{t:%m%d %H:%M:%S} @monitor.py:467] {line}")
    write("tensorpack_1104_second_epoch.log", out)


def gan_compression_47() -> None:
    out, it = [], 0
    for k in range(300):
        it += 100
        t = 100 * 0.30 * float(np.exp(0.02 * rng.standard_normal())) + 0.25e-3 * 100 * k
        epoch = 1 + it // 3000
        out.append(f"(epoch: {epoch}, iters: {it}, time: {t:.3f}) G_gan: {rng.uniform(0.6, 1.2):.3f} "
                   f"G_distill: {rng.uniform(2, 4):.3f} G_recon: {rng.uniform(8, 12):.3f} "
                   f"D_fake: {rng.uniform(0.2, 0.4):.3f} D_real: {rng.uniform(0.2, 0.4):.3f} ")
    write("gan_compression_47_loss_plot.log", out)


def stamp(t: datetime) -> str:
    return t.strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def query_csv(name: str, header: list[str], rows: list[tuple]) -> None:
    write(name, [", ".join(header)] + [", ".join(r) for r in rows])


HEADER = ["timestamp", "index", "name", "utilization.gpu [%]", "clocks.sm [MHz]", "power.draw [W]", "power.limit [W]"]


def torchtitan_4038() -> None:
    t0, rows = datetime(2026, 7, 31, 9, 0, 0), []
    for s in range(480):
        t = t0 + timedelta(seconds=s)
        for g in range(8):
            idle = rng.random() < 0.27
            util = int(rng.integers(0, 15)) if idle else int(rng.integers(90, 101))
            pwr = rng.uniform(120, 180) if idle else rng.uniform(520, 640)
            rows.append((stamp(t + timedelta(milliseconds=3 * g)), str(g), "NVIDIA H100 80GB HBM3", f"{util} %",
                         f"{int(rng.integers(1755, 1981))} MHz", f"{pwr:.2f} W", "700.00 W"))
    query_csv("torchtitan_4038_omp_oversub.csv", HEADER, rows)


def peft_2894() -> None:
    t0, rows = datetime(2025, 11, 4, 14, 0, 0), []
    for s in range(300):
        util = int(np.clip(42 + rng.normal(0, 6), 0, 100))
        rows.append((stamp(t0 + timedelta(seconds=s)), "0", "NVIDIA A100-SXM4-80GB", f"{util} %",
                     f"{int(rng.integers(1365, 1411))} MHz", f"{rng.uniform(150, 190):.2f} W", "400.00 W"))
    query_csv("peft_2894_gc_every_step.csv", HEADER, rows)


def _td(s: float) -> str:
    s = int(s)
    h, r = divmod(s, 3600)
    m, sec = divmod(r, 60)
    return f"{h}:{m:02d}:{sec:02d}"


def centernet_604() -> None:
    n_iters, out = 14785, []
    data_sum = bt_sum = 0.0
    last = 0.0
    for it in range(1, 5001):
        wait = 0.01 if it <= 1000 else 0.01 + 3.5 * (it - 1000) / 3800
        wait *= float(np.exp(0.1 * rng.standard_normal()))
        batch = wait + 0.39 * float(np.exp(0.03 * rng.standard_normal()))
        data_sum, bt_sum, last = data_sum + wait, bt_sum + batch, wait
        if it % 100 == 0:
            avg = bt_sum / it
            out.append(f"ctdet/coco_dla| train: [54][{it}/{n_iters}]|Tot: {_td(bt_sum)} |ETA: {_td(avg * (n_iters - it))} "
                       f"|loss {1.74 + 0.01 * rng.standard_normal():.4f} |hm_loss {1.30 + 0.01 * rng.standard_normal():.4f} "
                       f"|wh_loss {2.20 + 0.02 * rng.standard_normal():.4f} |off_loss {0.212 + 0.001 * rng.standard_normal():.4f} "
                       f"|Data {last:.3f}s({data_sum / it:.3f}s) |Net {avg:.3f}s")
    write("centernet_604_data_grows.log", out)


if __name__ == "__main__":
    niftynet_47()
    mmf_27()
    tensorpack_1104()
    gan_compression_47()
    torchtitan_4038()
    peft_2894()
    centernet_604()
