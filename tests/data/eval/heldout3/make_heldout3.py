"""Writes the third round of held-out cases (deterministic): python tests/data/eval/heldout3/make_heldout3.py

LABELED SYNTHETIC logs in the formats the tools print (each format taken from the tool's own print statement, cited),
carrying the figures of a public thread whose cause was stated there. Written before the engine saw them and scored
once as written (the first-try figure of this round; see SOURCES.md). Expected causes are in SOURCES.md.

- paddleocr_2083_reader_bound.log: PaddleOCR 2.0 tools/program.py train(): "epoch: [e/E], iter: i, lr: …, loss: …,
  acc: …, norm_edit_dis: …, reader_cost: %.5f s, batch_cost: %.5f s, samples: n, ips: %.5f" (per-batch means over
  print_batch_step=10), logger "[%Y/%m/%d %H:%M:%S] root INFO: ". PaddlePaddle/PaddleOCR#2083: 2080Ti, batch 96,
  8 workers; reader_cost 2.2-6.0 s of batch_cost 2.8-6.5 s and the GPU at 0% most of the time → data_starvation.
- yolox_6026_data_time.log: YOLOX yolox/core/trainer.py after_iter: "epoch: {}/{}, iter: {}/{}, mem: {:.0f}Mb,
  iter_time: {:.3f}s, data_time: {:.3f}s, total_loss: …, lr: {:.3e}, size: {:d}, ETA: …" (meters averaged over
  print_interval=10), loguru "YYYY-MM-DD HH:mm:ss | INFO     | yolox.core.trainer:259 - ". open-mmlab/mmdetection#6026
  (dup of #6021): iter_time 2.9-4.3 s with data_time 2.7-3.1 s where others see 0.40 s / 0.025 s → data_starvation.
- yolox_5993_steady.log: the same trainer with loguru's default "YYYY-MM-DD HH:mm:ss.SSS | INFO     |
  yolox.core.trainer:after_iter:246 - " prefix; open-mmlab/mmdetection#5993 (a user's normal run): iter_time
  0.29-0.37 s, data_time 0.002 s, the multi-scale size drawn from 608-800 every 10 iterations → healthy.
- aster_3_steady.log: ayumiymk/aster.pytorch lib/trainers.py: "[{now}]\tEpoch: [{}][{}/{}]\tTime {:.3f} ({:.3f})\t
  Data {:.3f} ({:.3f})\tLoss {:.3f} ({:.3f})" every 100 iterations (val: the last batch, avg: since the epoch
  began); aster.pytorch#3, the maintainer's own run: Time 0.66-0.82 s, Data 0.002 s → healthy.
- maxtext_3840_eval_every_n.log: AI-Hypercomputer/maxtext metric_logger: "completed step: {step}, seconds: {:.3f},
  TFLOP/s/device: {:.3f}, Tokens/s/device: {:.3f}, total_weights: {}, loss: {:.3f}" and train.py's eval loop
  "Completed eval step {n}". maxtext#3840 (and #1815): the step logged after an eval includes the eval loop; steps
  ~9.5 s, ~2 s per eval step; here eval every 25 steps, 10 eval steps → periodic_stall.
- megatron_llm_69_checkpoint.log: epfLLM/Megatron-LLM megatron/training.py training_log (" iteration {:8d}/{:8d} |
  consumed samples: … | elapsed time per iteration (ms): {:.1f} | …", the mean over log_interval=10 of the
  'interval-time' timer, which runs through a save), checkpointing.py "saving checkpoint at iteration {:7d} to {}" /
  "  successfully saved checkpoint at iteration {:7d} to {}", and save_checkpoint_and_time's timers.log
  "(min, max) time across ranks (ms):" + "    save-checkpoint ....: (min, max)". Megatron-LLM#69: llama-13B, the
  first save took 5 min, the second 15 min (steps ~12 s) → periodic_stall.
- torchtune_522_item_sync_profile.txt: torch.profiler key_averages().table() (torch/autograd/profiler_util.py
  _build_table) over 5 profiled steps of LoRA fine-tuning; pytorch/torchtune#522: the per-step loss.item() costs
  40-50 ms in cudaStreamSynchronize every step (fixed by logging it only every n steps) → host_sync.
- pytorch_120934_lr_recompiles.log: torch 2.2's logging prefix "[%Y-%m-%d %H:%M:%S,%f] torch._dynamo.convert_frame:
  [WARNING] torch._dynamo hit config.cache_size_limit (8)" with "function:" and "last reason:
  L['self'].param_groups[0]['lr'] == …" lines; the step lines are a plain print of the user's loop (the thread
  does not show them). pytorch/pytorch#120934: with an LR scheduler the compiled AdamW.step recompiles on every new
  lr (a float guard) for the first steps until the cache limit → recompilation.
- megatron_straggler_steady.log: NVIDIA/Megatron-LM training_log with its " [%Y-%m-%d %H:%M:%S]" prefix and
  --log-straggler's StragglerDetector.report (megatron/core/utils.py): "[{now}] | MnRtt/Rnk: {ms}ms/{rank} |
  MxRtt/Rnk: … | MnPwr/Rnk: … | MxPwr/Rnk: … | MnTmp/Rnk: … | MxTmp/Rnk: … | MnUtl/Rnk: … | MxUtl/Rnk: … |
  MnClk/Rnk: … | MxClk/Rnk: … | MnDRtt/Rnk: … | MxDRtt/Rnk: … | MnEtpt/Rnk: … | MxEtpt/Rnk: …" behind srun's "0: "
  label and the megatron.core.utils logger; the figures of megatron/core/README_STRAGGLER.md's example (32 ranks,
  round trip 3453-3468 ms, clocks 1950-1980 MHz, 97-100% busy): no straggler → healthy.
"""
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
rng = np.random.default_rng(3)


def write(name, lines):
    (HERE / name).write_text("\n".join(lines) + "\n")


def paddleocr():
    t, lines = datetime(2021, 2, 23, 22, 0, 0), []
    for k in range(120):
        it = 11000 + 10 * (k + 1)
        reader = 3.6 * np.exp(0.35 * rng.standard_normal())
        batch = reader + 0.58 * np.exp(0.03 * rng.standard_normal())
        t += timedelta(seconds=10 * batch)
        lines.append(f"[{t:%Y/%m/%d %H:%M:%S}] root INFO: epoch: [5/500], iter: {it}, lr: 0.001000, loss: "
                     f"{4.9 - k * 0.004:.6f}, acc: {0.59 + k * 1e-4:.6f}, norm_edit_dis: 0.877949, reader_cost: "
                     f"{reader:.5f} s, batch_cost: {batch:.5f} s, samples: 960, ips: {960 / (10 * batch):.5f}")
    write("paddleocr_2083_reader_bound.log", lines)


def yolox(name, start, data_s, stamp, where):
    t, lines = start, []
    for k in range(150):
        it = 10 * (k + 1)
        size = int(rng.choice(np.arange(608, 801, 32)))
        compute = 0.30 * (size / 704) ** 2 * np.exp(0.03 * rng.standard_normal())
        data = data_s * np.exp(0.15 * rng.standard_normal()) if data_s > 0.01 else 0.002
        iter_s = compute + data
        t += timedelta(seconds=10 * iter_s)
        ts = f"{t:%Y-%m-%d %H:%M:%S.%f}"[:-3] if stamp else f"{t:%Y-%m-%d %H:%M:%S}"
        lines.append(f"{ts} | INFO     | {where} - epoch: 1/300, iter: {it}/1849, mem: 7420Mb, iter_time: "
                     f"{iter_s:.3f}s, data_time: {data:.3f}s, total_loss: {11.7 - k * 0.01:.1f}, iou_loss: 3.8, "
                     f"l1_loss: 0.0, conf_loss: 5.3, cls_loss: 2.6, lr: {1.7e-4 + k * 3e-7:.3e}, size: {size}, "
                     f"ETA: 2 days, 2:33:10")
    write(name, lines)


def aster():
    t, lines, n, total, data_total = datetime(2019, 7, 2, 14, 19, 0), [], 0, 0.0, 0.0
    for k in range(80):
        window = 0.75 * np.exp(0.04 * rng.standard_normal(100))
        if k == 0:
            window[0] = 15.0  # the first batch pays for CUDA init and the first loader fill
        n += 100
        total += window.sum()
        data_total += 0.002 * 100 + (4.0 if k == 0 else 0.0)
        t += timedelta(seconds=float(window.sum()))
        lines.append(f"[{t:%Y-%m-%d %H:%M:%S}]\tEpoch: [0][{n}/15804]\tTime {window[-1]:.3f} ({total / n:.3f})\t"
                     f"Data 0.002 ({data_total / n:.3f})\tLoss {19.2 - k * 0.05:.3f} ({19.9 - k * 0.04:.3f})")
    write("aster_3_steady.log", lines)


def maxtext():
    lines = []
    for step in range(300):
        s = 9.5 * np.exp(0.01 * rng.standard_normal())
        if step % 25 == 0 and step > 0:
            s += 10 * 2.0 * np.exp(0.03 * rng.standard_normal())  # the eval loop inside this step's boundary
        lines.append(f"completed step: {step}, seconds: {s:.3f}, TFLOP/s/device: {1290.0 / s:.3f}, "
                     f"Tokens/s/device: {8192 * 9.5 / s:.3f}, total_weights: 196608, loss: {10.4 - step * 0.01:.3f}")
        if step % 25 == 24:
            lines += [f"Completed eval step {i}" for i in range(10)]
    write("maxtext_3840_eval_every_n.log", lines)


def megatron():
    lines, path = [], "/checkpoints/llama2-13b"
    saves = {500: 300.0, 1000: 900.0}
    pending = 0.0
    for it in range(10, 1510, 10):
        per_it = 12.0 * np.exp(0.01 * rng.standard_normal())
        ms = (10 * per_it + pending) / 10 * 1000
        pending = 0.0
        lines.append(f" iteration {it:8d}/{10000:8d} | consumed samples: {it * 128:12d} | elapsed time per iteration "
                     f"(ms): {ms:.1f} | learning rate: {3e-4 * min(1, it / 100):.3E} | global batch size:   128 | "
                     f"lm loss: {2.4 - it * 2e-4:.6E} | loss scale: 1.0 | grad norm: {0.9 + 0.05 * rng.random():.3f}"
                     f" | number of skipped iterations:   0 | number of nan iterations:   0 |")
        if it in saves:
            save_ms = saves[it] * 1000
            lines += [f"saving checkpoint at iteration {it:7d} to {path}",
                      f"  successfully saved checkpoint at iteration {it:7d} to {path}",
                      "(min, max) time across ranks (ms):",
                      f"    {'save-checkpoint ':.<48}: ({save_ms - 131.2:.2f}, {save_ms:.2f})"]
            pending = saves[it]
    write("megatron_llm_69_checkpoint.log", lines)


def _fmt_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def torchtune_profile():
    steps = 5
    # (name, self cpu us, cpu total us, self cuda us, cuda total us, calls)
    sync = 45_000.0 * steps
    ops = [
        ("ProfilerStep*", 61_000.0, 2_790_000.0, 0.0, 2_450_000.0, steps),
        ("cudaStreamSynchronize", sync, sync, 0.0, 0.0, steps),
        ("cudaLaunchKernel", 640_000.0, 640_000.0, 0.0, 0.0, 41_250),
        ("aten::mm", 210_000.0, 905_000.0, 1_310_000.0, 1_310_000.0, 9_600),
        ("ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn", 0.0, 0.0, 1_020_000.0, 1_020_000.0, 6_400),
        ("aten::_local_scalar_dense", 310.0, sync + 600.0, 9.0, 9.0, steps),
        ("aten::item", 95.0, sync + 700.0, 0.0, 9.0, steps),
        ("aten::copy_", 88_000.0, 240_000.0, 162_000.0, 162_000.0, 3_900),
        ("aten::mul", 120_000.0, 330_000.0, 205_000.0, 205_000.0, 7_750),
        ("aten::add_", 65_000.0, 190_000.0, 96_000.0, 96_000.0, 2_600),
        ("Optimizer.step#AdamW.step", 48_000.0, 310_000.0, 0.0, 52_000.0, steps),
        ("aten::_scaled_dot_product_flash_attention", 9_000.0, 88_000.0, 0.0, 330_000.0, 320),
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 32, 4, false, false, "
         "cutlass::bfloat16_t>, false, false, false, false, true, true, false>", 0.0, 0.0, 330_000.0, 330_000.0, 320),
        ("aten::empty", 44_000.0, 44_000.0, 0.0, 0.0, 12_100),
        ("autograd::engine::evaluate_function: MmBackward0", 240_000.0, 820_000.0, 0.0, 880_000.0, 3_200),
        ("aten::_to_copy", 150_000.0, 330_000.0, 0.0, 120_000.0, 2_900),
        ("aten::view", 130_000.0, 130_000.0, 0.0, 0.0, 21_400),
        ("aten::transpose", 110_000.0, 150_000.0, 0.0, 0.0, 9_800),
        ("aten::reshape", 95_000.0, 160_000.0, 0.0, 0.0, 8_700),
        ("aten::t", 85_000.0, 140_000.0, 0.0, 0.0, 9_600),
        ("aten::silu", 70_000.0, 120_000.0, 64_000.0, 64_000.0, 1_600),
        ("cudaMemcpyAsync", 80_000.0, 80_000.0, 0.0, 0.0, 2_950),
        ("aten::mean", 60_000.0, 110_000.0, 31_000.0, 31_000.0, 3_300),
        ("aten::pow", 55_000.0, 95_000.0, 22_000.0, 22_000.0, 3_300),
        ("aten::rsqrt", 50_000.0, 85_000.0, 14_000.0, 14_000.0, 3_300),
        ("aten::embedding", 1_500.0, 9_000.0, 0.0, 1_200.0, 5),
    ]
    self_cpu_total = sum(o[1] for o in ops)
    ops[0] = ("ProfilerStep*", 61_000.0, self_cpu_total, 0.0, 2_450_000.0, steps)  # the steps nest every op
    self_cuda_total = 2_450_000.0
    name_w = 55
    cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self CUDA", "Self CUDA %",
            "CUDA total", "CUDA time avg", "# of Calls"]
    rule = "-" * name_w + "  " + "  ".join("-" * 12 for _ in cols)
    head = f"{'Name':>{name_w}}  " + "  ".join(f"{c:>12}" for c in cols)
    lines = ["STAGE:2024-03-18 15:58:01 2211:2211 ActivityProfilerController.cpp:314] Completed Stage: Warm Up",
             "STAGE:2024-03-18 15:58:04 2211:2211 ActivityProfilerController.cpp:320] Completed Stage: Collection",
             rule, head, rule]
    for name, scpu, tcpu, scuda, tcuda, calls in sorted(ops, key=lambda o: -o[1]):
        short = name if len(name) <= name_w else name[:name_w - 3] + "..."
        cells = [f"{100 * scpu / self_cpu_total:.2f}%", _fmt_time(scpu), f"{100 * tcpu / self_cpu_total:.2f}%",
                 _fmt_time(tcpu), _fmt_time(tcpu / calls), _fmt_time(scuda), f"{100 * scuda / self_cuda_total:.2f}%",
                 _fmt_time(tcuda), _fmt_time(tcuda / calls), str(calls)]
        lines.append(f"{short:>{name_w}}  " + "  ".join(f"{c:>12}" for c in cells))
    lines += [rule, f"Self CPU time total: {_fmt_time(self_cpu_total)}",
              f"Self CUDA time total: {_fmt_time(self_cuda_total)}", ""]
    write("torchtune_522_item_sync_profile.txt", lines)


def lr_recompiles():
    t, lines = datetime(2024, 2, 29, 10, 31, 0), []
    for i in range(1, 401):
        s = 0.105 * np.exp(0.02 * rng.standard_normal())
        if i == 1:
            s = 38.0  # the first compile of the model and the optimizer step
        elif i <= 9:
            s = 6.5 * np.exp(0.1 * rng.standard_normal())  # AdamW.step recompiled: a new lr each step
        t += timedelta(seconds=s)
        if i == 9:
            w = f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] torch._dynamo.convert_frame: [WARNING]"
            lines += [f"{w} torch._dynamo hit config.cache_size_limit (8)",
                      f"{w}    function: 'step' (/opt/venv/lib/python3.10/site-packages/torch/optim/adamw.py:151)",
                      f"{w}    last reason: L['self'].param_groups[0]['lr'] == 4.8361308593749987e-05     "
                      "# has_complex = self._init_group(  # optim/adamw.py:176 in step",
                      f'{w} To log all recompilation reasons, use TORCH_LOGS="recompiles".',
                      f"{w} To diagnose recompilation issues, see "
                      "https://pytorch.org/docs/master/compile/troubleshooting.html."]
        lines.append(f"Batch step {i}: loss {2.9 - i * 0.003:.4f}, batch training time {s * 1000:.1f} ms")
    write("pytorch_120934_lr_recompiles.log", lines)


def megatron_straggler():
    t, lines = datetime(2024, 3, 14, 22, 0, 0), []
    for it in range(10, 1210, 10):
        rtt = 3460.0 * np.exp(0.003 * rng.standard_normal())
        t += timedelta(seconds=10 * rtt / 1000)
        lo, hi = rtt - 8 * rng.random(), rtt + 8 * rng.random()
        r = lambda: int(rng.integers(0, 32))  # noqa: E731
        now = f"[{t:%Y-%m-%d %H:%M:%S}]"
        lines.append(f"0:  {now} iteration {it:8d}/{10000:8d} | consumed samples: {it * 1024:12d} | elapsed time per "
                     f"iteration (ms): {rtt + 12:.1f} | throughput per GPU (TFLOP/s/GPU): 296.5 | learning rate: "
                     f"3.000000E-04 | global batch size:  1024 | lm loss: {3.1 - it * 1e-4:.6E} | loss scale: 1.0 | "
                     "grad norm: 0.812 | number of skipped iterations:   0 | number of nan iterations:   0 |")
        lines.append(f"0: INFO:megatron.core.utils:{now} | MnRtt/Rnk: {lo:.2f}ms/{r()} | MxRtt/Rnk: {hi:.2f}ms/{r()} | "
                     f"MnPwr/Rnk: {601796 + int(rng.integers(0, 5000))}W/{r()} | MxPwr/Rnk: "
                     f"{683801 + int(rng.integers(0, 5000))}W/{r()} | MnTmp/Rnk: 52C/{r()} | MxTmp/Rnk: 65C/{r()} | "
                     f"MnUtl/Rnk: 97%/{r()} | MxUtl/Rnk: 100%/{r()} | MnClk/Rnk: 1950MHz/{r()} | MxClk/Rnk: "
                     f"1980MHz/{r()} | MnDRtt/Rnk: {14 + 2 * rng.random():.2f}ms/{r()} | MxDRtt/Rnk: "
                     f"{34 + 2 * rng.random():.2f}ms/{r()} | MnEtpt/Rnk: {296.0 + rng.random():.2f}TF/{r()} | "
                     f"MxEtpt/Rnk: {297.3 + rng.random():.2f}TF/{r()}")
    write("megatron_straggler_steady.log", lines)


paddleocr()
yolox("yolox_6026_data_time.log", datetime(2021, 9, 3, 8, 0, 0), 2.9, False, "yolox.core.trainer:259")
yolox("yolox_5993_steady.log", datetime(2021, 8, 31, 7, 0, 0), 0.0, True, "yolox.core.trainer:after_iter:246")
aster()
maxtext()
megatron()
torchtune_profile()
lr_recompiles()
megatron_straggler()
