"""Writes the steplogs9 fixtures and expected.json (run once; the files are committed). Each follows its trainer's
print statement (SOURCES.md); numbers are invented unless SOURCES.md says the lines are a real excerpt. The truth in
expected.json is computed here from the numbers written, never from what the reader makes of them."""
import json
import re
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).parent
EXPECTED: dict[str, dict] = {}
T0 = datetime(2024, 3, 5, 10, 0, 0)


def _ms(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def _put(name, text, **want):
    (HERE / name).write_text(text)
    EXPECTED[name] = want


def sockeye():
    # awslabs/sockeye training.py Speedometer: 'E=%d B=%d\ts/sec=%.2f tok/sec=%.2f u/sec=%.2f\t' + '%s=%f ' per
    # metric, every 50 batches; _create_checkpoint: 'Checkpoint [%d]\tUpdates=%d Epoch=%d Samples=%d Time-cost=%.3f
    # Updates/sec=%.3f', then 'Checkpoint [%d]\t%s' (Train-/Validation- metrics); log.py '[%(asctime)s:%(levelname)s:
    # %(name)s:%(funcName)s] %(message)s' with datefmt '%Y-%m-%d:%H:%M:%S'. The Speedometer's window after a
    # checkpoint holds the checkpoint's validation decoding (its tic is only reset at its own reports).
    t, out, steps, durs = T0, [], [], []
    per, stall = 0.3125, 95.0  # 3.2 updates/s; validation + BLEU decoding 95 s at each checkpoint (every 500)
    pre = lambda t, fn: f"[{t.strftime('%Y-%m-%d:%H:%M:%S')}:INFO:sockeye.training:{fn}] "  # noqa: E731
    out.append(pre(t, "fit") + "Training started.")
    ppl = 900.0
    for b in range(50, 1551, 50):
        window = 50 * per + (stall if b in (550, 1050, 1550) else 0.0)
        t += timedelta(seconds=window)
        u = 50 / window
        ppl *= 0.97
        out.append(pre(t, "__call__") + f"E=0 B={b}\ts/sec={64 * u:.2f} tok/sec={64 * 28.4 * u:.2f} u/sec={u:.2f}\t"
                   f"perplexity={ppl:f} ")
        steps.append(b)
        durs.append(round(1 / round(u, 2), 6))
        if b % 500 == 0:
            k = b // 500
            out.append(pre(t, "_create_checkpoint") + f"Checkpoint [{k}]\tUpdates={b} Epoch=0 Samples={64 * b} "
                       f"Time-cost={500 * per + (stall if k > 1 else 0):.3f} Updates/sec={500 / (500 * per + (stall if k > 1 else 0)):.3f}")
            out.append(pre(t, "_create_checkpoint") + f"Checkpoint [{k}]\tTrain-perplexity={ppl:f}")
            out.append(pre(t + timedelta(seconds=stall), "_evaluate") + f"Checkpoint [{k}]\tValidation-perplexity="
                       f"{ppl * 1.1:f}\tValidation-bleu={0.1 + 0.02 * k:f}")
            # sockeye/model.py save_parameters: logging.info('Saved params/state_dict to "%s"', fname) (root logger)
            out.append(pre(t + timedelta(seconds=stall), "save_parameters").replace("sockeye.training", "root")
                       + f'Saved params/state_dict to "model/params.{k:05d}"')
    _put("sockeye_speedometer.log", "\n".join(out) + "\n", steps=steps, durations_s=durs, phases=[],
         events=[["eval", 500, 550], ["eval", 1000, 1050], ["eval", 1500, 1550], ["checkpoint", 500, 550],
                 ["checkpoint", 1000, 1050], ["checkpoint", 1500, 1550]],
         verdict="periodic_stall",
         truth="u/sec is updates over the Speedometer's 50-batch window (its inverse is the window's seconds per "
               "update); a checkpoint every 500 updates validates and decodes for 95 s inside the next window "
               "(u/sec 0.45 against 3.2): about 28% of the run")


def gpt_neox():
    # EleutherAI/gpt-neox megatron/logging.py training_log: ' samples/sec: {:.3f} |' ' iteration {:8d}/{:8d} |'
    # ' elapsed time per iteration (ms): {:.1f} |' ' learning rate: {:.3E} |' ' approx flops per GPU: {}{unit} |'
    # ' {key}: {:.6E} |' ' loss scale: {:.1f} |' ' number of skipped iterations: {:3d} |' ' number of nan
    # iterations: {:3d} |'; training.py evaluate_and_print_results ' validation results at iteration N | lm_loss
    # value: {:.6E} | lm_loss_ppl value: ... | ' between dashes. timers('interval time') is never stopped around
    # the evaluation: the interval after it holds the evaluation.
    out, steps, durs, loss = [], [], [], 10.5
    per, stall, gbs = 1.2, 30.0, 64
    for it in range(10, 401, 10):
        window = 10 * per + (stall if it in (110, 210, 310) else 0.0)
        ms = window * 1000 / 10
        loss *= 0.985
        out.append(f" samples/sec: {gbs / (ms / 1000):.3f} | iteration {it:8d}/{320000:8d} | elapsed time per "
                   f"iteration (ms): {ms:.1f} | learning rate: {6e-4 * min(1, it / 100):.3E} | approx flops per GPU: "
                   f"{150.2 * per / (ms / 1000):.1f}TFLOPS | lm_loss: {loss:.6E} | loss scale: 65536.0 | number of "
                   f"skipped iterations:   0 | number of nan iterations:   0 |")
        steps.append(it)
        durs.append(round(ms / 1000, 4))
        if it % 100 == 0:
            s = f" validation results at iteration {it} | lm_loss value: {loss * 1.02:.6E} | lm_loss_ppl value: " \
                f"{2.718 ** (loss * 1.02):.6E} | "
            out += ["-" * len(s), s, "-" * len(s)]
    _put("gpt_neox_training_log.log", "\n".join(out) + "\n", steps=steps, durations_s=durs, phases=[],
         events=[["eval", 100, 110], ["eval", 200, 210], ["eval", 300, 310], ["eval", 400]],
         verdict="periodic_stall",
         truth="elapsed time per iteration is the 10-iteration interval's mean; the interval timer keeps running "
               "through the 30 s validation every 100 iterations, so the interval after it reads 4.2 s an iteration "
               "against 1.2 s: 20% of the run")


def basicsr():
    # XPixelGroup/BasicSR basicsr/utils/logger.py MessageLogger: '[{name[:5]}..][epoch:{epoch:3d}, iter:{iter:8,d},
    # lr:(' + '{:.3e},' per lr + ')] ' + '[eta: {eta}, ' + 'time (data): {iter_time:.3f} ({data_time:.3f})] ' + '{k}:
    # {v:.4e} '; get_root_logger '%(asctime)s %(levelname)s: %(message)s'; train.py logs 'Saving models and training
    # states.' and validates (sr_model.py '\t # psnr: ...\tBest: ... @ N iter') every val_freq; the timers restart
    # after it, so `time` leaves the validation out: only the line clock shows it.
    t, out, steps, durs, data = T0, [], [], [], []
    out.append(f"{_ms(t)} INFO: Start training from epoch: 0, iter: 0")
    for it in range(100, 3001, 100):
        step = 0.41 if it <= 1500 else 0.43
        t += timedelta(seconds=100 * step)
        eta = timedelta(seconds=int(step * (300000 - it)))
        out.append(f"{_ms(t)} INFO: [train..][epoch:{it // 800:3d}, iter:{it:8,d}, lr:(2.000e-04,)] [eta: {eta}, "
                   f"time (data): {step:.3f} ({0.012:.3f})] l_pix: {0.03 - it * 4e-6:.4e} ")
        steps.append(it)
        durs.append(step)
        data.append(0.012)
        if it % 1000 == 0:
            out.append(f"{_ms(t)} INFO: Saving models and training states.")
            t += timedelta(seconds=4)
            out.append(f"{_ms(t)} INFO: Validation Set5\n\t # psnr: {30 + it / 1e4:.4f}\tBest: {30 + it / 1e4:.4f} "
                       f"@ {it} iter")
            t += timedelta(seconds=180)
    _put("basicsr_message_logger.log", "\n".join(out) + "\n", steps=steps, durations_s=durs, phases=["data"],
         data_s=data, events=[["checkpoint", 1000], ["eval", 1000, 1100], ["checkpoint", 2000], ["eval", 2000, 2100],
                              ["checkpoint", 3000], ["eval", 3000]],
         verdict="periodic_stall",
         truth="iter is printed with thousands separators (1,000); time (data) is AvgTimer's mean over the last up "
               "to 200 iterations (steady here, so the step time), data_time the loader's share; every 1000 "
               "iterations a 4 s save and a 180 s validation, outside the timers: only the line clock holds them "
               "(about 30% of the wall time)")


def coqui():
    # coqui-ai/Trainer trainer/logging/console_logger.py print_train_step: BOLD '   --> TIME: %Y-%m-%d %H:%M:%S --
    # STEP: {}/{} -- GLOBAL_STEP: {}' ENDC, then '     | > {key}: {value}  ({avg})' per value; trainer.py adds
    # current_lr, step_time (the optimize call) and loader_time (the wait for the batch, before it) every
    # print_step (25); logger.py's Formatter("") prints the message alone
    t, out, steps, durs, data = T0, [], [], [], []
    out += ["", "\x1b[4m\x1b[1m > EPOCH: 0/1000\x1b[0m", " --> /runs/vits_ljspeech-March-05-2024_10+00AM-0000000", "",
            f"\x1b[1m > TRAINING ({t:%Y-%m-%d %H:%M:%S}) \x1b[0m"]
    sec, avg_s, avg_l, n = 0.0, 0.0, 0.0, 0
    for g in range(25, 601, 25):
        step_t, load_t = 0.52, (0.011 if g <= 300 else 0.95)  # loader workers fall behind after step 300
        sec += 25 * (step_t + load_t)
        n += 1
        avg_s += (step_t - avg_s) / n
        avg_l += (load_t - avg_l) / n
        out += ["", f"\x1b[1m   --> TIME: {(T0 + timedelta(seconds=sec)):%Y-%m-%d %H:%M:%S} -- STEP: {g - 1}/406 -- "
                f"GLOBAL_STEP: {g}\x1b[0m",
                f"     | > loss_disc: {2.6 - g * 1e-4:.5f}  ({2.61 - g * 1e-4:.5f})",
                f"     | > loss_gen: {2.2 + g * 1e-4:.5f}  ({2.21:.5f})",
                f"     | > grad_norm_0: {12.5:.5f}  ({13.1:.5f})",
                "     | > current_lr_0: 0.0002 ",
                "     | > current_lr_1: 0.0002 ",
                f"     | > step_time: {step_t:.4f}  ({avg_s:.4f})",
                f"     | > loader_time: {load_t:.4f}  ({avg_l:.4f})", ""]
        steps.append(g)
        durs.append(round(step_t + load_t, 4))
        data.append(load_t)
    _put("coqui_trainer.log", "\n".join(out) + "\n", steps=steps, durations_s=durs, phases=["data"], data_s=data,
         verdict="data_starvation",
         truth="one record per print_step (25): a TIME/STEP/GLOBAL_STEP head and `| > key: value  (running mean)` "
               "rows; step_time is the optimize call alone and loader_time the wait for the batch before it, so an "
               "iteration is their sum (the TIME stamps agree: 25 x 0.531 s, later 25 x 1.47 s); from step 325 the "
               "loader makes each step wait 0.95 s")


def internevo():
    # InternLM/InternEvo internlm/train/pipeline.py record_current_batch_training_metrics: f"{key}={value} " over
    # infos (tflops, step, loss, 'tgs (tokens/gpu/second)', tgs/..., lr, loss_scale, grad_norm (a dict), micro_num,
    # num_consumed_tokens, ..., fwd_bwd_time, acc metrics); logger.py LOGGER_FORMAT "%(asctime)s\t%(levelname)s
    # %(filename)s:%(lineno)s in %(funcName)s -- %(message)s"; every step is logged. time_cost is the whole step
    # (since start_time, before the batch); fwd_bwd_time only the forward-backward timer.
    t, out, steps, durs = T0, [], [], []
    tk, consumed = 16384, 0
    for s in range(1, 41):
        cost = 2.05 if s != 20 else 6.4  # step 20: one slow step
        t += timedelta(seconds=cost)
        consumed += tk * 8
        tgs = round(tk / cost, 2)
        out.append(f"{_ms(t)}\tINFO pipeline.py:623 in record_current_batch_training_metrics -- "
                   f"tflops={round(171.3 * 2.05 / cost, 2)} step={s} loss={9.1 - 0.05 * s:.4f} "
                   f"tgs (tokens/gpu/second)={tgs} tgs/last_tgs_1={tgs} tgs/tgs_all={tgs} tgs/tgs_avg={tgs} "
                   f"tgs/tgs_SMA={tgs} tgs/last_tgs_10=0 tgs/last_tgs_50=0 lr={4e-5 * min(1, s / 20)} "
                   f"loss_scale=65536.0 grad_norm={{'0_default': {1.9 - 0.01 * s:.4f}}} micro_num=4 "
                   f"num_consumed_tokens={consumed} inf_nan_skip_batches=0 num_samples_in_batch=9 "
                   f"largest_length=2048 largest_batch=3 smallest_batch=2 adam_beta2=0.95 "
                   f"fwd_bwd_time={round(cost * 0.86, 2)} acc=0.{310 + s} perplexity={2.718 ** (9.1 - 0.05 * s):.4f} "
                   f"tokens_num={tk * 8} ")
        if s > 1:
            steps.append(s)
            durs.append(cost)
    _put("internevo_metrics.log", "\n".join(out) + "\n", steps=steps, durations_s=durs, phases=[],
         truth="one `key=value ` line per step; the step's time is its tokens per GPU over `tgs (tokens/gpu/second)` "
               "(= the line clock, 2.05 s; step 20 took 6.4 s); fwd_bwd_time (0.86 of it) is the forward-backward "
               "timer alone, not the step; the first line has no clock before it")


def maxdiffusion():
    # AI-Hypercomputer/maxdiffusion src/maxdiffusion/train_utils.py: "completed step: {}, seconds: {:.3f}, TFLOP/s/
    # device: {:.3f}, loss: {:.3f}" every step (max_logging.log prints)
    out, steps, durs = [], [], []
    for s in range(0, 30):
        sec = 41.8 if s == 0 else (0.734 if s % 10 else 9.9)  # compile, then a checkpoint-every-10 in the step time
        out.append(f"completed step: {s}, seconds: {sec:.3f}, TFLOP/s/device: {412.5 * 0.734 / sec:.3f}, "
                   f"loss: {0.11 - s * 1e-3:.3f}")
        steps.append(s)
        durs.append(sec)
    _put("maxdiffusion_train.log", "\n".join(out) + "\n", steps=steps, durations_s=durs, phases=[],
         truth="each step's own seconds; step 0 compiles; every 10th step carries 9.2 s more")


def paxml():
    # google/paxml programs.py _compute_steps_per_sec: logging.info('steps/sec: %f') every
    # compute_steps_per_sec_interval_steps (10), measured since the previous one; summary_utils.py
    # '[PAX STATUS] step_i: %d, %s loss: %s' every summary interval (100); absl prefix 'I%m%d %H:%M:%S.%f tid
    # file:line] '
    t, out, steps, durs = T0, [], [], []
    pre = lambda t, f: f"I{t:%m%d %H:%M:%S.%f} 140213 {f}] "  # noqa: E731
    for s in range(10, 801, 10):
        per = 0.40 if not (300 < s <= 400) else 0.62  # a slower stretch from step 300 to 400
        t += timedelta(seconds=10 * per)
        out.append(pre(t, "programs.py:515") + f"steps/sec: {1 / per:f}")
        if s % 100 == 0:
            out.append(pre(t, "summary_utils.py:919") + f"[PAX STATUS] step_i: {s}, train loss: {3.9 - s * 1e-3:.6f}")
            out.append(pre(t, "summary_utils.py:635") + f"Metrics values at step {s}:")
            out.append(pre(t, "summary_utils.py:636") + f"  loss={3.9 - s * 1e-3:f}")
            steps.append(s)
            durs.append(per)
    _put("paxml_train.log", "\n".join(out) + "\n", steps=steps, durations_s=durs, phases=[],
         truth="steps/sec every 10 steps (since the previous one), the step number only on the [PAX STATUS] line "
               "every 100; each 100-step window runs at one pace here (steps 301-400 at 0.62 s)")


def _fmt_interval(s):  # tqdm.format_interval: [H:]MM:SS
    h, m, sec = int(s) // 3600, int(s) // 60 % 60, int(s) % 60
    return f"{h:d}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


OPENPCDET_REAL = """\
2023-01-05 16:34:33,418   INFO  **********************Start training nuscenes_models/cbgs_voxel0075_res3d_centerpoint(timm_style)**********************
2023-01-05 16:34:37,748   INFO  Train:    1/3 ( 33%) [   0/323 (  0%)]  Loss: 516.7 (517.)  LR: 1.000e-04  Time cost: 00:04/21:46 [00:04/1:05:18]  Acc_iter 1           Data time: 0.87(0.87)  Forward time: 3.18(3.18)  Batch time: 4.04(4.04)
2023-01-05 16:34:49,377   INFO  Train:    1/3 ( 33%) [  49/323 ( 15%)]  Loss: 36.77 (81.7)  LR: 1.351e-04  Time cost: 00:15/01:25 [00:15/04:48]  Acc_iter 50          Data time: 0.00(0.02)  Forward time: 0.31(0.29)  Batch time: 0.31(0.31)
2023-01-05 16:35:00,786   INFO  Train:    1/3 ( 33%) [  99/323 ( 31%)]  Loss: 23.51 (54.8)  LR: 2.377e-04  Time cost: 00:27/01:00 [00:27/03:55]  Acc_iter 100         Data time: 0.00(0.01)  Forward time: 0.19(0.26)  Batch time: 0.20(0.27)
2023-01-05 16:35:11,175   INFO  Train:    1/3 ( 33%) [ 149/323 ( 46%)]  Loss: 28.79 (45.1)  LR: 3.910e-04  Time cost: 00:37/00:43 [00:37/03:24]  Acc_iter 150         Data time: 0.00(0.01)  Forward time: 0.14(0.24)  Batch time: 0.15(0.25)
"""


def openpcdet():
    # real excerpt (open-mmlab/OpenPCDet PR #1229, the timm-style logger of tools/train_utils/train_utils.py), then
    # written in its format string: from Acc_iter 151 on every step waits 0.50 s for the loader (0.21 s of work)
    out = OPENPCDET_REAL.splitlines()
    t = datetime(2023, 1, 5, 16, 35, 11, 175000)
    steps, durs, data = [50, 100, 150], [11.629 / 49, 11.409 / 50, 10.389 / 50], [0.0, 0.0, 0.0]
    epoch_s, all_s, n_ep, acc_b, acc_d = 37.43, 37.43, 150, 0.25 * 150, 0.01 * 150
    prev = (1, 149)
    for ep, cur in [(1, 199), (1, 249), (1, 299), (1, 322), (2, 0), (2, 26), (2, 76), (2, 126)]:
        acc = (ep - 1) * 323 + cur + 1
        n = acc - ((prev[0] - 1) * 323 + prev[1] + 1)
        b, d = 0.71, 0.50
        t += timedelta(seconds=n * b)
        all_s += n * b
        if ep == 2 and cur == 0:
            epoch_s, n_ep, acc_b, acc_d = 0.0, 0, 0.0, 0.0
            n_here = 1
        else:
            n_here = n
        epoch_s += n_here * b
        n_ep += n_here
        acc_b += n_here * b
        acc_d += n_here * d
        rem_ep = epoch_s / max(cur + 1, 1) * (323 - cur)
        rem_all = epoch_s / max(cur + 1, 1) * ((3 - ep) * 323 + 323 - cur)
        out.append(f"{_ms(t)}   INFO  Train: {ep:>4d}/3 ({100 * ep / 3:>3.0f}%) [{cur:>4d}/323 ({100 * cur / 323:>3.0f}%)]  "
                   f"Loss: {24.1:#.4g} ({40.2:#.3g})  LR: {4.1e-4:.3e}  Time cost: {_fmt_interval(epoch_s)}/"
                   f"{_fmt_interval(rem_ep)} [{_fmt_interval(all_s)}/{_fmt_interval(rem_all)}]  Acc_iter {acc:<10d}  "
                   f"Data time: {d:.2f}({acc_d / n_ep:.2f})  Forward time: {b - d:.2f}({(acc_b - acc_d) / n_ep:.2f})  "
                   f"Batch time: {b:.2f}({acc_b / n_ep:.2f})")
        steps.append(acc)
        durs.append(b)
        data.append(d)
        prev = (ep, cur)
    _put("openpcdet_timm_style.log", "\n".join(out) + "\n", steps=steps, durations_s=[round(x, 4) for x in durs],
         phases=["data"], data_s=data, verdict="data_starvation",
         truth="a line every 50 iterations (and the first and last of an epoch); `X(Y)`: X the last iteration's "
               "time, Y the running mean since the epoch began; Acc_iter counts over epochs. The real lines: the "
               "line clock over 49-50 iterations (0.237, 0.228, 0.208 s), Acc_iter 1 (no clock before it) left "
               "out; from Acc_iter 151 every iteration waits 0.50 s of its 0.71 s for data")


FLAIR_REAL = """\
2022-11-08 11:14:26,681 ----------------------------------------------------------------------------------------------------
2022-11-08 11:14:32,333 epoch 1 - iter 122/1227 - loss 0.93329908 - time (sec): 5.65 - samples/sec: 86.35 - lr: 0.000030
2022-11-08 11:14:37,495 epoch 1 - iter 244/1227 - loss 0.74046560 - time (sec): 10.81 - samples/sec: 90.26 - lr: 0.000030
2022-11-08 11:14:42,687 epoch 1 - iter 366/1227 - loss 0.64291186 - time (sec): 16.01 - samples/sec: 91.47 - lr: 0.000030
2022-11-08 11:14:47,662 epoch 1 - iter 488/1227 - loss 0.60704056 - time (sec): 20.98 - samples/sec: 93.04 - lr: 0.000030
"""


def flair():
    # real excerpt (flairNLP/flair PR #2983), then written in trainer.py's format: `time (sec)` is seconds since
    # the epoch began (it starts again each epoch, as iter does); epoch 2 runs at 0.060 s an iteration
    out = FLAIR_REAL.splitlines()
    start = datetime(2022, 11, 8, 11, 14, 26, 681000)
    sec = [5.65, 10.81, 16.01, 20.98]
    steps, durs = [122, 244, 366, 488], [5.65 / 122] + [(b - a) / 122 for a, b in zip(sec, sec[1:], strict=False)]
    for it in range(610, 1227, 122):
        sec.append(round(sec[-1] + 122 * 0.0415, 2))
        durs.append((sec[-1] - sec[-2]) / 122)
        steps.append(it)
        out.append(f"{_ms(start + timedelta(seconds=sec[-1]))} epoch 1 - iter {it}/1227 - loss {0.55 - it * 1e-5:.8f} - "
                   f"time (sec): {sec[-1]:.2f} - samples/sec: {4 * it / sec[-1]:.2f} - lr: 0.000030")
    t = start + timedelta(seconds=sec[-1] + 0.4)
    dash = "-" * 100
    out += [f"{_ms(t)} {dash}", f"{_ms(t)} EPOCH 1 done: loss 0.5213 - lr 0.000030"]
    t += timedelta(seconds=14.2)
    out += [f"{_ms(t)} DEV : loss 0.41873 - f1-score (micro avg)  0.8411", f"{_ms(t)} {dash}"]
    sec2 = 0.0
    for it in range(122, 1227, 122):
        sec2 = round(sec2 + 122 * 0.060, 2)
        out.append(f"{_ms(t + timedelta(seconds=sec2))} epoch 2 - iter {it}/1227 - loss {0.41 - it * 1e-5:.8f} - "
                   f"time (sec): {sec2:.2f} - samples/sec: {4 * it / sec2:.2f} - lr: 0.000030")
        steps.append(1227 + it)
        durs.append(0.060)
    _put("flair_trainer.log", "\n".join(out) + "\n", steps=steps, durations_s=[round(x, 5) for x in durs], phases=[],
         truth="a line every 122 iterations; time (sec) is cumulative since the epoch began and starts again with "
               "iter each epoch: an iteration's time is its difference over 122 (the first line of an epoch: its "
               "value over its iter); steps count on over epochs (epoch 2's iter 122 is step 1349)")


ALLENNLP_REAL = """\
2017-10-14 16:48:27,962 - INFO - allennlp.training.trainer - Beginning training.
2017-10-14 16:48:27,962 - INFO - allennlp.training.trainer - Epoch 0/139
2017-10-14 16:48:27,962 - INFO - allennlp.training.trainer - Training
2017-10-14 16:48:48,950 - INFO - allennlp.training.trainer - Batch 1/17168: accuracy: 0.25, loss: 6.66 ||
2017-10-14 16:48:58,960 - INFO - allennlp.training.trainer - Batch 567/17168: accuracy: 0.42, loss: 1.32 ||
2017-10-14 16:49:08,969 - INFO - allennlp.training.trainer - Batch 1128/17168: accuracy: 0.46, loss: 1.17 ||
2017-10-14 16:49:18,982 - INFO - allennlp.training.trainer - Batch 1701/17168: accuracy: 0.49, loss: 1.09 ||
"""


def allennlp():
    # real excerpt (allenai/allennlp#379: the trainer's no_tqdm logging, a line every 10 s), then written in the
    # same format from batch 2271 (the paste cuts that line off)
    out = ALLENNLP_REAL.splitlines()
    pts = [(datetime(2017, 10, 14, 16, 48, 48, 950000), 1), (datetime(2017, 10, 14, 16, 48, 58, 960000), 567),
           (datetime(2017, 10, 14, 16, 49, 8, 969000), 1128), (datetime(2017, 10, 14, 16, 49, 18, 982000), 1701)]
    t, b = pts[-1]
    for k, n in enumerate([570, 566, 571, 569, 568, 570]):
        t += timedelta(seconds=10.006 + 0.001 * k)
        b += n
        pts.append((t, b))
        out.append(f"{_ms(t)} - INFO - allennlp.training.trainer - Batch {b}/17168: accuracy: {0.51 + 0.01 * k:.2f}, "
                   f"loss: {1.05 - 0.02 * k:.2f} ||")
    steps = [b for _, b in pts[1:]]
    durs = [round((t2 - t1).total_seconds() / (b2 - b1), 6) for (t1, b1), (t2, b2) in zip(pts, pts[1:], strict=False)]
    _put("allennlp_batch.log", "\n".join(out) + "\n", steps=steps, durations_s=durs, phases=[],
         truth="`Batch N/M:` counts the epoch's batches, a line every 10 s: a batch's time is the line clock's "
               "difference over the batches between (about 0.0177 s); batch 1 has no clock before it")


POINTCEPT_REAL = """\
[2023-11-28 11:21:10,619 INFO misc.py line 120 1048493] Train: [1/100][29/510] Data 0.157 (1.509) Batch 3.505 (3.358) Remain 47:32:55 loss: 0.9084 Lr: 0.09995
[2023-11-28 11:21:12,688 INFO misc.py line 120 1048493] Train: [1/100][30/510] Data 1.322 (1.502) Batch 2.069 (3.311) Remain 46:52:18 loss: 0.9262 Lr: 0.09995
[2023-11-28 11:21:12,959 INFO misc.py line 120 1048493] Train: [1/100][31/510] Data 0.001 (1.449) Batch 0.271 (3.202) Remain 45:20:02 loss: 1.0607 Lr: 0.09995
[2023-11-28 11:21:13,208 INFO misc.py line 120 1048493] Train: [1/100][32/510] Data 0.002 (1.399) Batch 0.249 (3.100) Remain 43:53:28 loss: 1.0244 Lr: 0.09994
[2023-11-28 11:21:29,276 INFO misc.py line 120 1048493] Train: [1/100][33/510] Data 0.001 (1.352) Batch 16.067 (3.532) Remain 50:00:35 loss: 1.1392 Lr: 0.09994
[2023-11-28 11:21:29,519 INFO misc.py line 120 1048493] Train: [1/100][34/510] Data 0.009 (1.309) Batch 0.244 (3.426) Remain 48:30:26 loss: 0.8269 Lr: 0.09994
[2023-11-28 11:21:29,879 INFO misc.py line 120 1048493] Train: [1/100][35/510] Data 0.002 (1.268) Batch 0.360 (3.330) Remain 47:08:58 loss: 1.2393 Lr: 0.09994
[2023-11-28 11:21:30,108 INFO misc.py line 120 1048493] Train: [1/100][36/510] Data 0.002 (1.230) Batch 0.229 (3.237) Remain 45:49:05 loss: 1.3723 Lr: 0.09994
[2023-11-28 11:23:08,201 INFO misc.py line 120 1048493] Train: [1/100][65/510] Data 0.002 (0.656) Batch 7.276 (3.305) Remain 46:45:29 loss: 0.8294 Lr: 0.09989
[2023-11-28 11:23:08,433 INFO misc.py line 120 1048493] Train: [1/100][66/510] Data 0.002 (0.645) Batch 0.232 (3.256) Remain 46:04:02 loss: 0.9367 Lr: 0.09988
[2023-11-28 11:23:08,678 INFO misc.py line 120 1048493] Train: [1/100][67/510] Data 0.002 (0.635) Batch 0.245 (3.209) Remain 45:24:02 loss: 0.7897 Lr: 0.09988
[2023-11-28 11:23:08,928 INFO misc.py line 120 1048493] Train: [1/100][68/510] Data 0.001 (0.625) Batch 0.251 (3.163) Remain 44:45:21 loss: 0.7759 Lr: 0.09988
[2023-11-28 11:23:14,309 INFO misc.py line 120 1048493] Train: [1/100][69/510] Data 0.001 (0.616) Batch 5.380 (3.197) Remain 45:13:48 loss: 0.7595 Lr: 0.09988
[2023-11-28 11:23:19,927 INFO misc.py line 120 1048493] Train: [1/100][70/510] Data 5.455 (0.688) Batch 5.619 (3.233) Remain 45:44:26 loss: 1.0003 Lr: 0.09988
[2023-11-28 11:23:33,993 INFO misc.py line 120 1048493] Train: [1/100][71/510] Data 13.937 (0.883) Batch 14.065 (3.392) Remain 47:59:36 loss: 0.9281 Lr: 0.09987
[2023-11-28 11:23:34,241 INFO misc.py line 120 1048493] Train: [1/100][72/510] Data 0.002 (0.870) Batch 0.249 (3.347) Remain 47:20:52 loss: 1.0916 Lr: 0.09987
"""


def pointcept():
    # real excerpt (Pointcept/Pointcept#32, two stretches of one paste): every iteration logged, `X (Y)`: the
    # iteration's own time and the running mean
    rows = re.findall(r"\]\[(\d+)/510\] Data ([\d.]+) \([\d.]+\) Batch ([\d.]+)", POINTCEPT_REAL)
    _put("pointcept_ptv2.log", POINTCEPT_REAL, steps=[int(r[0]) for r in rows], durations_s=[float(r[2]) for r in rows],
         phases=["data"], data_s=[float(r[1]) for r in rows],
         truth="each iteration's Batch (whole) and Data (the wait for it) time, the bracketed values running means; "
               "the line clock agrees (30 -> 31: 0.271 s)")


SAMUDRA_REAL = """\
2025-04-25 15:18:01,323 - INFO - logging - Training Epoch: [1]  [   0/1412]  eta: 7:19:24  lr: 0.000200  iter_time: 18.672(18.672)  data_wait_time: 9.300(9.300)  data_load_time: 8.747(8.747)  loss: 1.4612 (1.4612)  max cpu mem: 1605  max gpu mem: 30424
2025-04-25 15:18:01,970 - INFO - logging - Training Epoch: [1]  [   1/1412]  eta: 3:47:08  lr: 0.000200  iter_time: 0.645(0.645)  data_wait_time: 0.000(0.000)  data_load_time: 8.745(8.745)  loss: 1.4612 (1.4779)  max cpu mem: 1757  max gpu mem: 30424
2025-04-25 15:18:02,617 - INFO - logging - Training Epoch: [1]  [   2/1412]  eta: 2:36:22  lr: 0.000200  iter_time: 0.646(0.646)  data_wait_time: 0.000(0.000)  data_load_time: 8.736(8.736)  loss: 1.4612 (1.3976)  max cpu mem: 1758  max gpu mem: 30424
"""


def samudra():
    # real excerpt (m2lines/Samudra PR #231: the first three lines of its output sample), then written in the same
    # format: data_wait_time is the training loop's wait, data_load_time the loader's own (asynchronous) work
    out = SAMUDRA_REAL.splitlines()
    t = datetime(2025, 4, 25, 15, 18, 2, 617000)
    steps, durs, data = [0, 1, 2], [18.672, 0.645, 0.646], [9.3, 0.0, 0.0]
    for i in range(3, 12):
        it = 0.646 if i != 8 else 3.412
        wait = 0.0 if i != 8 else 2.764
        t += timedelta(seconds=it)
        out.append(f"{_ms(t)} - INFO - logging - Training Epoch: [1]  [{i:>4d}/1412]  eta: 1:59:{50 - i:02d}  "
                   f"lr: 0.000200  iter_time: {it:.3f}({it:.3f})  data_wait_time: {wait:.3f}({wait:.3f})  "
                   f"data_load_time: {8.74 + 0.001 * i:.3f}({8.74:.3f})  loss: 1.40{i:02d} (1.41)  max cpu mem: 1760  "
                   f"max gpu mem: 30424")
        steps.append(i)
        durs.append(it)
        data.append(wait)
    _put("samudra_metric_logger.log", "\n".join(out) + "\n", steps=steps, durations_s=durs, phases=["data"],
         data_s=data,
         truth="iter_time is the iteration, data_wait_time the part of it spent waiting for the batch; "
               "data_load_time is the loader's own work in another process (asynchronous, PR #231: 'not itself "
               "important for overall train time'), no part of the iteration")


def main():
    for f in (sockeye, gpt_neox, basicsr, coqui, internevo, maxdiffusion, paxml, openpcdet, flair, allennlp,
              pointcept, samudra):
        f()
    old = json.loads((HERE / "expected.json").read_text()) if (HERE / "expected.json").exists() else {}
    old.update(EXPECTED)
    (HERE / "expected.json").write_text(json.dumps(old, indent=1) + "\n")


if __name__ == "__main__":
    main()
