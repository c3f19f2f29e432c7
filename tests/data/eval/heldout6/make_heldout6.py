"""Writes the sixth round of held-out cases (deterministic): python tests/data/eval/heldout6/make_heldout6.py

Training logs, profiler summaries and GPU/host telemetry as users pasted them in public threads whose cause of lost
GPU time was stated there (a maintainer's diagnosis, the reporter's fix that worked, or the tool's own measurement
in the pasted output; SOURCES.md gives each thread, label and why). Every file is LABELED SYNTHETIC: written here
in the format of the tool's own print statement, carrying the figures the thread states; what the thread does not
state (GPU model, count, cadence, run length) is drawn and named below. Written before the engine saw them and
scored once as written (the first-try figure, in SOURCES.md).

Formats: nanochat base_train.py's step line ('step {step:05d}/{n:05d} ({pct:.2f}%) | loss: ... | dt: {ms:.2f}ms |
tok/sec: {:,} | mfu: ... | total time: {m:.2f}m | eta: {m:.1f}m') with the thread's gc.callbacks lines ('[GC rankN]
gen2: 713.5ms collected 340341 objects'); Lightning's SimpleProfiler(extended=True) 'FIT Profiler Report'
(pytorch_lightning/profilers/simple.py: '|  {action}\\t|  {mean:<15}\\t|  {num_calls:<15}\\t|  {total:<15}\\t|
{per:<15}\\t|'); torch.profiler key_averages().table(sort_by="cpu_time_total"); the Hugging Face Trainer's log dicts
and tqdm bar; mozilla/TTS train_encoder.py ('   | > Step:{}  Loss:{:.5f}  AvgLoss:{:.5f}  GradNorm:{:.5f}
StepTime:{:.2f}  LoaderTime:{:.2f}  AvGLoaderTime:{:.2f}  LR:{:.6f}'); lerobot train.py's logging line ('INFO
2025-07-11 08:20:13 ts/train.py:232 step:9 smpl:576 ep:2 epch:0.00 loss:1.051 grdn:4.482 lr:1.8e-06 updt_s:0.302
data_s:13.330'); `nvidia-smi --query-gpu ... --format=csv -l 5` with `vmstat -t 5`; the nvidia-smi table of the
352 driver logged with `nvidia-smi -l 5`.

- nanochat_477_gc_gen2.log: karpathy/nanochat#477 — 8 ranks, dt ~682 ms a step (2^19 tokens, mfu ~48), a gen2
  collection of 340341 objects takes 615-733 ms on a rank and the step it lands in takes ~1350 ms (the pasted
  lines; steps 20 and 23); the PR fixes the dataloader's object churn. Drawn: 300 steps, a collection round every
  9-12 steps where most ranks collect at one step and one or two a step or three earlier.
- lag_llama_51_fit_profiler.txt: time-series-foundation-models/lag-llama#51 — 'Data loader bottlenecking
  training', the FIT Profiler Report rows pasted: Total 1397 calls 99.734 s; run_training_epoch 91.657 s;
  [_TrainingEpochLoop].train_dataloader_next 5.2931 s mean, 16 calls, 84.689 s, 84.915 %; [_EvaluationLoop]
  .val_next 0.246 s x 19; optimizer_step 0.10731 s x 16. Drawn: the other rows (hooks, training_step,
  backward) with counts summing to 1397.
- nanotabpfn_memcpy_profile.txt: https://dev.to/stprnvsh/our-gpu-was-idle-77-of-the-time-heres-how-we-fixed-it-
  56oj — A100-SXM4-80GB, batches read from HDF5 and sent with x.to(device) from pageable memory; the profiler:
  cudaMemcpyAsync 44,084 ms 76.78 % of CPU time, cudaMalloc 7,081 ms 12.33 %, cudaLaunchKernel 645 ms, aten::bmm
  180 ms; pinned memory and CUDA streams gave 1.5x. Drawn: the GPU side (copies 'Memcpy HtoD (Pageable ->
  Device)' and kernels, GPU busy ~23 % of the profiled time: 'idle 77 %'), 500 steps.
- dolly_31_eval_every_10.log: databrickslabs/dolly#31 — eval_steps=10 with a 1000-example eval set and a global
  batch of 64: eval 'maybe 15-30 % of training time'; eval_steps=100 'saves 5 minutes or so' an epoch (the
  maintainer tested). Drawn: 8 GPUs, 800 steps at ~2.0 s, each eval 4.2 s (16 eval batches), logging_steps=10.
- mozilla_tts_407_loader_time.log: mozilla/TTS#407 — speaker encoder training, 4 DataLoader workers: 'only 1 out
  of 4 steps took around 120 seconds' (LoaderTime:124.64, 1.34, 0.00, 0.00, 120.21 pasted); the PR makes
  num_workers configurable (merged). Drawn: StepTime ~1.1 s, 160 steps, print_step=1.
- lerobot_1488_data_s.log: huggingface/lerobot#1488 — SmolVLA training, 'Dataloader is ... VERY slow'; the pasted
  lines: updt_s 0.29-0.30, data_s 0.001 with 13.330 at step 9 and 0.595 / ~3.7 s at steps 17-18, batch 64. Drawn:
  a wait of 2-14 s every 8 steps (the worker count), 400 steps, log_freq 1.
- lerobot_1623_video_decode.log: huggingface/lerobot#1623 — 'Training SmolVLA spends more time waiting for the
  dataloader (1s) than running backprop (0.7s)', video decoding the bottleneck (10 workers). Drawn: data_s ~1.0 s
  and updt_s ~0.7 s at every step, 400 steps, batch 64.
- hy2dl_48_thread_oversubscription/: eduardoAcunaEspinoza/Hy2DL#48 — one H100, 44 min an epoch, 'GPU usage stayed
  very low (around 2-3 GB) and the GPU seemed mostly idle', 28 cores 'all the CPUs showed high usage', each
  worker over 140 % CPU (threads spawned inside DataLoader workers); limiting the threads fixed it. Drawn: 15
  minutes of `nvidia-smi --query-gpu` every 5 s (utilization 3-12 %) and `vmstat -t 5` on the same clock (us 83-90,
  sy 8-12, id 0-4).
- convnet_benchmarks_71_titanx_smi.txt: soumith/convnet-benchmarks#71 — a Titan X 'running at full speed for a
  while, and then throttles down significantly to make the temperature stable at 84 degrees ... observe this
  behavior by running nvidia-smi continuously and observe the number of watts it draws', the fan not at 100 %.
  Drawn: 12 minutes of `nvidia-smi -l 5` (driver 352), 99-100 % busy, ~245 W of 250 W while it heats from 45 C,
  ~185 W once it holds 84 C (from minute 3), fan 58-62 %.
- keras_7168_fit_generator_dmon.txt: keras-team/keras#7168 — fit_generator over ImageDataGenerator.flow (batch
  2560 of 32x32x3, rotations, shifts, flips; workers=3): 'GPU usage is spiking'; the reporter: 'The issue is that
  I'm training on batches faster than I'm generating them.' Drawn: `nvidia-smi dmon` (driver 381 columns) of one
  GTX 1080 Ti for 5 minutes: ~0.5 s of compute (sm 90-100 %) per batch after ~2 s waiting for it (sm 0-3 %).

Written after the first ten were scored and fixed, as a second batch (scored once as written, too):
- pytorch_8371_epoch_start_data.log: pytorch/pytorch#8371 — imagenet main.py lines pasted for epochs 1-2 at
  print-freq 50 over 196 iterations: the first iteration of every epoch 'Time 17.003 (17.003)  Data 12.637'
  (15.138 / 11.821 in the next), the rest 'Time 3.1 Data 0.01-0.02'; the PR's subject: the workers restarting
  every epoch (before persistent_workers) make the loop wait for its first batch. Drawn: 12 epochs in that
  pattern (first iteration 15-17 s of which 11.5-12.7 s Data).

A third batch (written after the second was scored, scored once as written):
- aidotnet_548_launch_bound_smi.csv: ooples/AiDotNet.Tensors#548 — small-model training on an RTX 3080 'sits at
  ~8-30% util, memory-controller ~0%', launch-overhead bound (the PR measures 2000 CUDA-graph replays at 5.53x the
  speed of the same 32000 launches). `nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory,
  power.draw --format=csv,noheader,nounits -l 1` for 5 minutes (drawn: util 8-30 %, memory 0-1 %, 320 W part).
"""

import sys
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE.parent / "heldout4"), str(HERE.parent / "heldout5")]
from make_heldout4 import smi_table  # noqa: E402  (the nvidia-smi table, pre-410 header included)
from make_heldout5 import Meter, imagenet_line  # noqa: E402  (imagenet main.py's progress line and its meters)

rng = np.random.default_rng(6)


def write(name, lines):
    path = HERE / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def nanochat_477():
    n, total_steps, ranks = 300, 13920, 8
    gc_at = {}  # step -> [(rank, ms)]
    s = 14
    while s < n:
        late = [int(r) for r in rng.choice(ranks, size=int(rng.integers(1, 3)), replace=False)]
        for r in range(ranks):
            at = s - int(rng.integers(1, 4)) if r in late else s
            gc_at.setdefault(at, []).append((r, float(rng.uniform(610, 735))))
        s += int(rng.integers(9, 13))
    lines, dts, total = [], [], 0.0
    for step in range(n):
        dt = 682.0 * float(np.exp(0.012 * rng.standard_normal()))
        for r, ms in sorted(gc_at.get(step, []), key=lambda x: x[1]):
            lines.append(f"[GC rank{r}] gen2: {ms:.1f}ms collected 340341 objects")
        if step in gc_at:
            dt += max(ms for _, ms in gc_at[step]) * float(rng.uniform(0.93, 0.97))
        if step > 10:
            total += dt / 1000
            dts.append(dt)
        mean_dt = (np.mean(dts) if dts else dt) / 1000
        eta = (total_steps - step) * mean_dt / 60
        loss = 10.4 * np.exp(-step / 40) + 4.2 + 0.02 * rng.standard_normal()
        lines.append(f"step {step:05d}/{total_steps:05d} ({100 * step / total_steps:.2f}%) | loss: {loss:.6f} | "
                     f"lrm: 1.00 | dt: {dt:.2f}ms | tok/sec: {int(524288 / (dt / 1000)):,} | mfu: {32770 / dt:.2f} | "
                     f"epoch: 1 | total time: {total / 60:.2f}m | eta: {eta:.1f}m")
    write("nanochat_477_gc_gen2.log", lines)


def lag_llama_51():
    total_s, epoch_s = 99.734, 91.657
    # (action, calls, total s): the pasted rows first, then the drawn ones
    rows = [("run_training_epoch", 1, epoch_s), ("[_TrainingEpochLoop].train_dataloader_next", 16, 84.689),
            ("[_EvaluationLoop].val_next", 19, 4.674),
            ("[LightningModule]LagLlamaLightningModule.optimizer_step", 16, 1.717),
            ("run_training_batch", 16, 1.7412), ("[Strategy]SingleDeviceStrategy.training_step", 16, 0.71232),
            ("[Strategy]SingleDeviceStrategy.backward", 16, 0.68114), ("[Strategy]SingleDeviceStrategy.validation_step", 19, 0.41821),
            ("[Callback]ModelCheckpoint{'monitor': 'val_loss', 'mode': 'min'}.on_validation_end", 1, 0.21877),
            ("[LightningModule]LagLlamaLightningModule.configure_optimizers", 1, 0.0012)]
    hooks = ["on_train_batch_start", "on_train_batch_end", "on_before_zero_grad", "optimizer_zero_grad",
             "on_before_backward", "on_after_backward", "on_before_optimizer_step", "on_validation_batch_start",
             "on_validation_batch_end", "transfer_batch_to_device", "on_after_batch_transfer"]
    owners = ["[Callback]TQDMProgressBar", "[Callback]ModelSummary", "[LightningModule]LagLlamaLightningModule",
              "[Callback]ModelCheckpoint{'monitor': 'val_loss', 'mode': 'min'}",
              "[Callback]EarlyStopping{'monitor': 'val_loss', 'mode': 'min'}"]
    calls = sum(r[1] for r in rows)
    for hook in hooks:
        for owner in owners:
            k = 19 if "validation" in hook else 35 if "transfer" in hook or "after_batch" in hook else 16
            if calls + k > 1397:
                continue
            rows.append((f"{owner}.{hook}", k, k * float(rng.uniform(2e-5, 4e-4))))
            calls += k
    rows.append(("[Strategy]SingleDeviceStrategy.batch_to_device", 1397 - calls, (1397 - calls) * 3.1e-4))
    width = max(len(a) for a, _, _ in rows)

    def row(action, mean, num, total, per):
        return f"|  {action:<{width}s}\t|  {mean:<15}\t|  {num:<15}\t|  {total:<15}\t|  {per:<15}\t|"

    head = row("Action", "Mean duration (s)", "Num calls", "Total time (s)", "Percentage %")
    sep = "-" * len(head.expandtabs())
    lines = ["FIT Profiler Report", "", sep, head, sep, row("Total", "-", "1397", f"{total_s:.5}", "100 %"), sep]
    for action, num, tot in sorted(rows, key=lambda r: -r[2]):
        lines.append(row(action, f"{tot / num:.5}", str(num), f"{tot:.5}", f"{100 * tot / total_s:.5}"))
    write("lag_llama_51_fit_profiler.txt", lines + [sep, ""])


def _fmt_time(us):
    return f"{us / 1e6:.3f}s" if us >= 1e6 else f"{us / 1e3:.3f}ms" if us >= 1e3 else f"{us:.3f}us"


def profile_table(ops, sort_col):
    """torch.profiler key_averages().table(): ops are (name, self cpu us, cpu total us, self cuda us, cuda total
    us, calls); sorted by column `sort_col` (index into the op tuple)."""
    self_cpu_total = sum(o[1] for o in ops)
    self_cuda_total = sum(o[3] for o in ops)
    name_w = 55
    cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self CUDA", "Self CUDA %",
            "CUDA total", "CUDA time avg", "# of Calls"]
    rule = "-" * name_w + "  " + "  ".join("-" * 12 for _ in cols)
    lines = [rule, f"{'Name':>{name_w}}  " + "  ".join(f"{c:>12}" for c in cols), rule]
    for name, scpu, tcpu, scuda, tcuda, calls in sorted(ops, key=lambda o: -o[sort_col]):
        short = name if len(name) <= name_w else name[:name_w - 3] + "..."
        cells = [f"{100 * scpu / self_cpu_total:.2f}%", _fmt_time(scpu), f"{100 * tcpu / self_cpu_total:.2f}%",
                 _fmt_time(tcpu), _fmt_time(tcpu / calls), _fmt_time(scuda), f"{100 * scuda / self_cuda_total:.2f}%",
                 _fmt_time(tcuda), _fmt_time(tcuda / calls), str(calls)]
        lines.append(f"{short:>{name_w}}  " + "  ".join(f"{c:>12}" for c in cells))
    return lines + [rule, f"Self CPU time total: {_fmt_time(self_cpu_total)}",
                    f"Self CUDA time total: {_fmt_time(self_cuda_total)}", ""]


def nanotabpfn():
    steps = 500
    memcpy, malloc, launch, bmm = 44_084_000.0, 7_081_000.0, 645_000.0, 180_000.0
    h2d, gemm, bmm_k, elem, norm = 9_400_000.0, 1_700_000.0, 800_000.0, 1_000_000.0, 300_000.0  # device side
    # (name, self CPU, CPU total, self CUDA, CUDA total, calls); self CPU of the drawn rows as shares of `other`
    shares = [("aten::to", 0.03), ("aten::_to_copy", 0.05), ("aten::copy_", 0.05), ("aten::empty_strided", 0.05),
              ("Optimizer.step#Adam.step", 0.10), ("aten::linear", 0.06), ("aten::addmm", 0.05),
              ("aten::softmax", 0.03), ("aten::layer_norm", 0.04), ("aten::mul", 0.10), ("aten::add", 0.10),
              ("aten::view", 0.19), ("aten::reshape", 0.15)]
    other = memcpy / 0.7678 - memcpy - malloc - launch - bmm  # the rest of 100 % of self CPU time
    cpu = {name: other * share for name, share in shares}
    ops = [("aten::to", cpu["aten::to"], memcpy + malloc + 900_000.0, 0.0, h2d, 2 * steps),
           ("aten::_to_copy", cpu["aten::_to_copy"], memcpy + malloc + 690_000.0, 0.0, h2d, 2 * steps),
           ("aten::copy_", cpu["aten::copy_"], memcpy + cpu["aten::copy_"], 0.0, h2d, 2 * steps),
           ("cudaMemcpyAsync", memcpy, memcpy, 0.0, 0.0, 2 * steps),
           ("Memcpy HtoD (Pageable -> Device)", 0.0, 0.0, h2d, h2d, 2 * steps),
           ("cudaMalloc", malloc, malloc, 0.0, 0.0, 3 * steps),
           ("aten::empty_strided", cpu["aten::empty_strided"], cpu["aten::empty_strided"] + malloc * 0.3, 0.0, 0.0,
            9 * steps),
           ("Optimizer.step#Adam.step", cpu["Optimizer.step#Adam.step"], other * 0.28 + launch * 0.4, 0.0,
            elem * 0.5, steps),
           ("aten::linear", cpu["aten::linear"], other * 0.16 + launch * 0.3, 0.0, gemm, 14 * steps),
           ("aten::addmm", cpu["aten::addmm"], other * 0.08 + launch * 0.2, 0.0, gemm, 12 * steps),
           ("cudaLaunchKernel", launch, launch, 0.0, 0.0, 120 * steps),
           ("aten::bmm", bmm, bmm + 60_000.0, 0.0, bmm_k, 8 * steps),
           ("aten::softmax", cpu["aten::softmax"], other * 0.05, 0.0, elem * 0.2, 4 * steps),
           ("aten::layer_norm", cpu["aten::layer_norm"], other * 0.07, 0.0, norm, 8 * steps),
           ("aten::mul", cpu["aten::mul"], other * 0.12, 0.0, elem * 0.15, 30 * steps),
           ("aten::add", cpu["aten::add"], other * 0.12, 0.0, elem * 0.15, 30 * steps),
           ("aten::view", cpu["aten::view"], cpu["aten::view"], 0.0, 0.0, 60 * steps),
           ("aten::reshape", cpu["aten::reshape"], other * 0.18, 0.0, 0.0, 40 * steps),
           ("ampere_sgemm_128x64_tn", 0.0, 0.0, gemm, gemm, 12 * steps),
           ("void cutlass::Kernel<cutlass_80_simt_sgemm_128x64_8x5_nn_align1>(cutlass_80_simt_sgemm_128x64_8x5_nn"
            "_align1::Params)", 0.0, 0.0, bmm_k, bmm_k, 8 * steps),
           ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::"
            "Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)", 0.0, 0.0,
            elem, elem, 64 * steps),
           ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float "
            "const*, float const*, float const*, float*, float*, float*)", 0.0, 0.0, norm, norm, 8 * steps)]
    lines = ["STAGE:2025-03-02 10:14:22 31477:31477 ActivityProfilerController.cpp:314] Completed Stage: Warm Up",
             "STAGE:2025-03-02 10:15:19 31477:31477 ActivityProfilerController.cpp:320] Completed Stage: Collection",
             "STAGE:2025-03-02 10:15:20 31477:31477 ActivityProfilerController.cpp:324] Completed Stage: Post Processing"]
    write("nanotabpfn_memcpy_profile.txt", lines + profile_table(ops, 2))


def _hms(s):
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


def dolly_31():
    n, lines, t, t0 = 800, [], 0.0, datetime(2023, 3, 28, 17, 2, 11)
    header = ["***** Running training *****", "  Num examples = 51200", "  Num Epochs = 1",
              "  Instantaneous batch size per device = 8",
              "  Total train batch size (w. parallel, distributed & accumulation) = 64",
              "  Gradient Accumulation steps = 1", "  Total optimization steps = 800",
              "  Number of trainable parameters = 2775086080"]
    lines += [f"[INFO|trainer.py:1786] 2023-03-28 17:02:11,406 >> {h}" for h in header]
    for step in range(1, n + 1):
        t += 2.0 * float(np.exp(0.03 * rng.standard_normal()))
        if step % 10 == 0:
            rate = t / step
            lines.append(f"{100 * step // n:3d}%|{'█' * (step * 10 // n):<10}| {step}/{n} "
                         f"[{_hms(t)}<{_hms((n - step) * rate)}, {rate:.2f}s/it]")
            lines.append(f"{{'loss': {2.1 * np.exp(-step / 300) + 1.4:.4f}, 'learning_rate': "
                         f"{5e-6 * (1 - step / n):.4e}, 'epoch': {step / n:.2f}}}")
            ev = 4.2 * float(np.exp(0.04 * rng.standard_normal()))
            at = f"{t0 + timedelta(seconds=t):%Y-%m-%d %H:%M:%S},{int(rng.integers(0, 999)):03d}"
            lines += [f"[INFO|trainer.py:{no}] {at} >> {text}" for no, text in (
                (3158, "***** Running Evaluation *****"), (3160, "  Num examples = 1000"), (3163, "  Batch size = 8"))]
            lines.append(f"100%|██████████| 16/16 [00:{int(ev):02d}<00:00,  {16 / ev:.2f}it/s]")
            lines.append(f"{{'eval_loss': {2.0 * np.exp(-step / 300) + 1.45:.4f}, 'eval_runtime': {ev:.4f}, "
                         f"'eval_samples_per_second': {1000 / ev:.3f}, 'eval_steps_per_second': {16 / ev:.3f}, "
                         f"'epoch': {step / n:.2f}}}")
            t += ev
    lines.append(f"{{'train_runtime': {t:.4f}, 'train_samples_per_second': {51200 / t:.3f}, "
                 f"'train_steps_per_second': {n / t:.3f}, 'train_loss': 1.6931, 'epoch': 1.0}}")
    write("dolly_31_eval_every_10.log", lines)


def mozilla_tts_407():
    lines, loader_sum = [" > Number of instances : 128000", "", " > EPOCH: 0/1000", "", " > TRAINING (2020-05-15 "
                                                                                        "09:41:07) "], 0.0
    for step in range(1, 161):
        loader = float(rng.uniform(118, 126)) if step % 4 == 1 else float(rng.uniform(0.8, 1.5)) \
            if step % 4 == 2 else float(rng.uniform(0.0, 0.004))
        loader_sum += loader
        st = 1.1 * float(np.exp(0.04 * rng.standard_normal()))
        loss = 0.9 * np.exp(-step / 200) + 0.35 + 0.02 * rng.standard_normal()
        lines.append(f"   | > Step:{step}  Loss:{loss:.5f}  AvgLoss:{loss + 0.01:.5f}  GradNorm:"
                     f"{float(rng.uniform(20, 60)):.5f}  StepTime:{st:.2f}  LoaderTime:{loader:.2f}  "
                     f"AvGLoaderTime:{loader_sum / step:.2f}  LR:0.000100")
    write("mozilla_tts_407_loader_time.log", lines)


def _big(n):
    return f"{n:.0f}" if n < 1000 else f"{n / 1000:.0f}K"


def lerobot(name, t0, n, data_of_step, updt_s, per_ep):
    lines, t = [], t0
    for step in range(1, n + 1):
        data, updt = data_of_step(step), updt_s * float(np.exp(0.025 * rng.standard_normal()))
        t += timedelta(seconds=data + updt + 0.012)
        smpl = 64 * step
        lines.append(f"INFO {t:%Y-%m-%d %H:%M:%S} ts/train.py:232 step:{_big(step)} smpl:{_big(smpl)} "
                     f"ep:{_big(smpl // per_ep)} epch:{smpl / 2.9e6:.2f} loss:{1.06 - 0.0004 * step + 0.015 * rng.standard_normal():.3f} "
                     f"grdn:{float(rng.uniform(3.2, 6.3)):.3f} lr:{2e-7 * step:.1e} updt_s:{updt:.3f} data_s:{data:.3f}")
    write(name, lines)


def lerobot_1488():
    lerobot("lerobot_1488_data_s.log", datetime(2025, 7, 11, 8, 20, 8), 400,
            lambda s: float(rng.uniform(2, 14)) if s % 8 == 1 else float(rng.choice([0.000, 0.001])), 0.296, 320)


def lerobot_1623():
    lerobot("lerobot_1623_video_decode.log", datetime(2025, 7, 29, 14, 3, 51), 400,
            lambda s: 1.0 * float(np.exp(0.08 * rng.standard_normal())), 0.70, 240)


def hy2dl_48():
    t0, n = datetime(2026, 6, 9, 10, 30, 0), 180
    gpu = ["timestamp, name, utilization.gpu [%], memory.used [MiB], power.draw [W], power.limit [W]"]
    vm = ["procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu----- -----timestamp-----",
          " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st                 CEST"]
    for k in range(n):
        t = t0 + timedelta(seconds=5 * k)
        util = int(rng.integers(3, 13))
        gpu.append(f"{t:%Y/%m/%d %H:%M:%S}.{int(rng.integers(0, 999)):03d}, NVIDIA H100, {util} %, "
                   f"{int(rng.integers(2310, 2960))} MiB, {92 + 3.1 * util + rng.normal(0, 4):.2f} W, 700.00 W")
        us, sy = int(rng.integers(83, 91)), int(rng.integers(8, 13))
        idle = max(0, 100 - us - sy)
        vm.append(f"{int(rng.integers(96, 141)):2d}  0      0 {int(rng.integers(380, 395)) * 1_000_000:9d}  "
                  f"{int(rng.integers(10_000, 11_000)):5d} {int(rng.integers(61, 63)) * 1_000_000:9d}    0    0  "
                  f"{int(rng.integers(1400, 3800)):4d}    {int(rng.integers(8, 60)):2d} {int(rng.integers(41_000, 52_000))} "
                  f"{int(rng.integers(180_000, 260_000))} {us:2d} {sy:2d} {idle:2d}  0  0 {t:%Y-%m-%d %H:%M:%S}")
    write("hy2dl_48_thread_oversubscription/gpu.csv", gpu)
    write("hy2dl_48_thread_oversubscription/vmstat.txt", vm)


def titanx_71():
    t0, lines, temp = datetime(2015, 12, 2, 16, 40, 11), [], 45.0
    for k in range(144):
        throttled = temp >= 83.5
        temp = min(84.0, temp + (1.9 if k < 12 else 0.7) * float(rng.uniform(0.6, 1.4))) if not throttled else \
            84.0 + float(rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0]))
        pwr = int(185 + rng.normal(0, 6)) if throttled else int(min(250, 243 + rng.normal(0, 3)))
        gpu = dict(name="GeForce GTX TIT...", bus="0000:03:00.0", fan=f"{int(50 + temp / 8):d}%", temp=int(temp),
                   perf="P2", pwr=pwr, cap=250, used=11374, total=12287, util=int(rng.integers(99, 101)), ecc="N/A")
        lines += smi_table(t0 + timedelta(seconds=5 * k), "352.63", [gpu])
    write("convnet_benchmarks_71_titanx_smi.txt", lines)


def keras_7168():
    head = ["# gpu   pwr  temp    sm   mem   enc   dec  mclk  pclk", "# Idx     W     C     %     %     %     %   MHz   MHz"]
    lines, busy_left, wait_left = list(head), 0, 0
    for k in range(300):
        if not busy_left and not wait_left:
            wait_left, busy_left = int(rng.integers(2, 4)), 1
        if wait_left:
            sm, wait_left = int(rng.integers(0, 4)), wait_left - 1
        else:
            sm, busy_left = int(rng.integers(88, 101)), busy_left - 1
        pwr = int(58 + 1.7 * sm + rng.normal(0, 5))
        lines.append(f"    0 {pwr:5d} {61 + sm // 20:5d} {sm:5d} {int(sm * 0.38):5d}     0     0  5505  1911")
        if k % 20 == 19:
            lines += head
    write("keras_7168_fit_generator_dmon.txt", lines)


def pytorch_8371():
    lines = []
    for epoch in range(1, 13):
        tm, dm, lm, p1m, p5m = Meter(), Meter(), Meter(), Meter(), Meter()
        for i in range(196):
            data = float(rng.uniform(11.5, 12.7)) if i == 0 else float(rng.uniform(0.001, 0.02))
            t, d = tm.add(data + float(rng.uniform(3.09, 3.16)) + (2.1 if i == 0 else 0.0)), dm.add(data)
            if i % 50 == 0 or i == 195:
                lines.append(imagenet_line(epoch, i, 196, t, d, lm.add(0.0), p1m.add(100.0), p5m.add(100.0)))
    write("pytorch_8371_epoch_start_data.log", lines)


def aidotnet_548():
    t0 = datetime(2026, 6, 4, 9, 12, 0)
    rows = [f"{t0 + timedelta(seconds=k):%Y/%m/%d %H:%M:%S}.{int(rng.integers(0, 999)):03d}, "
            f"{(u := int(rng.integers(8, 31)))}, {int(rng.integers(0, 2))}, {72 + 1.9 * u + rng.normal(0, 4):.2f}"
            for k in range(300)]
    write("aidotnet_548_launch_bound_smi.csv", rows)


if __name__ == "__main__":
    nanochat_477()
    lag_llama_51()
    nanotabpfn()
    dolly_31()
    mozilla_tts_407()
    lerobot_1488()
    lerobot_1623()
    hy2dl_48()
    titanx_71()
    keras_7168()
    pytorch_8371()
    aidotnet_548()
