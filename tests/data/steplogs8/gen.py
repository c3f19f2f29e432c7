"""Writes the steplogs8 fixtures (run once; the files are committed). Each follows its trainer's print statement
(SOURCES.md); numbers are invented unless SOURCES.md says the lines are a real excerpt."""
from pathlib import Path

HERE = Path(__file__).parent


def darknet():
    # AlexeyAB/darknet src/detector.c train_detector: "Loaded: %lf seconds", the "\033[H\033[J%d/%d: loss=..." status,
    # "\n %d: %f, %f avg loss, %f rate, %lf seconds, %d images, %f hours left\n"; parser.c "Saving weights to %s"
    out, avg = [], None
    loads = {1: 0.000041, 2: 0.000038, 3: 0.000040, 4: 0.000039, 5: 2.412530, 6: 0.000041, 7: 0.000037, 8: 0.000040}
    secs = {1: 4.105436, 2: 3.201457, 3: 3.198822, 4: 3.203114, 5: 3.199870, 6: 3.202231, 7: 3.197710, 8: 3.200914}
    loss = 1467.45
    for it in range(1, 9):
        out.append(f"Loaded: {loads[it]:f} seconds" + (" - performance bottleneck on CPU or Disk HDD/SSD"
                                                       if loads[it] > 0.1 else ""))
        out.append("v3 (iou loss, Normalizer: (iou: 0.07, obj: 1.00, cls: 1.00) Region 139 Avg (IOU: 0.341265), "
                   "count: 9, class_loss = 412.2, iou_loss = 12.9, total_loss = 425.1 ")
        avg = loss if avg is None else avg * .9 + loss * .1
        hours = 6000 * 3.2 / 3600
        out.append(f"\x1b[H\x1b[J{it}/6000: loss={loss:0.1f} hours left={hours:0.1f}\x07")
        out.append(f" {it}: {loss:f}, {avg:f} avg loss, {0.000001 * it:f} rate, {secs[it]:f} seconds, {it * 64} images, "
                   f"{hours:f} hours left")
        if it == 4:
            out.append("Saving weights to backup//yolov4_last.weights")
        loss *= 0.8
    return "\n".join(out) + "\n"


def sb3():
    # DLR-RM/stable-baselines3 common/logger.py HumanOutputFormat.write: dashes, "| {key} | {value} |" rows, tags
    # ("time/") on a row of their own, keys sorted; on_policy_algorithm.py dump_logs records time/iterations, fps,
    # time_elapsed (int seconds since learn() began), total_timesteps; train/ metrics appear from the 2nd table on
    elapsed = [12, 60, 105, 150, 196, 330, 376]
    tables = []
    for i, t in enumerate(elapsed, start=1):
        rows = [("rollout/", ""), ("   ep_len_mean", "250"), ("   ep_rew_mean", f"{1.4 + 0.05 * i:<8.3g}".strip()),
                ("time/", ""), ("   fps", str(int(2048 * i / t))), ("   iterations", str(i)),
                ("   time_elapsed", str(t)), ("   total_timesteps", str(2048 * i))]
        if i > 1:
            rows += [("train/", ""), ("   approx_kl", f"{0.008 + 0.001 * i:<8.3g}".strip()),
                     ("   entropy_loss", "-1.38"), ("   learning_rate", "0.0003"), ("   loss", f"{-0.009 * i:<8.3g}".strip()),
                     ("   n_updates", str(10 * (i - 1))), ("   value_loss", "0.0626")]
        kw = max(len(k) for k, _ in rows)
        vw = max(len(v) for _, v in rows)
        dashes = "-" * (kw + vw + 7)
        tables.append("\n".join([dashes] + [f"| {k}{' ' * (kw - len(k))} | {v}{' ' * (vw - len(v))} |"
                                            for k, v in rows] + [dashes]))
    return "Using cuda device\n" + "\n".join(tables) + "\n"


def chainer():
    # chainer/chainer training/extensions/print_report.py: header '  '.join('{:%d}' % max(10, len(entry))), rows
    # '{:<%dg}  ' per entry (blank when absent), each row after '\033[J'; the mnist example's entries
    entries = ["epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy",
               "elapsed_time"]
    widths = [max(10, len(e)) for e in entries]
    out = ["  ".join(f"{e:{w}}" for e, w in zip(entries, widths, strict=True))]
    elapsed = [9.21784, 15.6091, 22.0187, 28.4129, 47.9352, 54.3318]
    for ep, t in enumerate(elapsed, start=1):
        vals = [ep, 0.19 / ep, 0.09 / ep ** 0.5, 1 - 0.05 / ep, 1 - 0.03 / ep, t]
        out.append("\x1b[J" + "".join(f"{v:<{w}g}  " for v, w in zip(vals, widths, strict=True)))
    return "\n".join(out) + "\n"


def fastai():
    # fastai/fastprogress fastprogress.py ConsoleMasterBar.write(table=True): names padded to 8, joined by two spaces;
    # rows: each value + ' ' * (2 + len(name) - len(value)); fastai's Recorder writes the epoch's time with
    # format_time (mm:ss)
    names = ["epoch", "train_loss", "valid_loss", "accuracy", "time"]
    padded = [n + " " * (8 - len(n)) if len(n) < 8 else n for n in names]
    out = ["  ".join(padded)]
    times = ["00:41", "00:40", "00:41", "01:58", "00:40"]
    for ep, t in enumerate(times):
        vals = [str(ep), f"{0.9 / (ep + 1):.6f}", f"{0.5 / (ep + 1):.6f}", f"{0.8 + 0.03 * ep:.6f}", t]
        out.append("".join(v + " " * (2 + len(n) - len(v)) for v, n in zip(vals, padded, strict=True)))
    return "\n".join(out) + "\n"


def easylm():
    # young-geng/EasyLM EasyLM/models/llama/llama_train.py: tqdm.write("\n" + pprint.pformat(log_metrics) + "\n")
    # every log_freq steps; log_metrics = {"step": step} + train metrics + data.py's dataset metrics (jax.device_get:
    # numpy scalars print as plain numbers here)
    out = []
    chunk = 8 * 2048
    for k, step in enumerate(range(0, 250, 50)):
        tps = 4096.0 * (0.5 if step == 150 else 1.0)
        d = {"accuracy": 0.1 + 0.01 * k, "dataset_accumulated_tps": 4000.0 + k, "dataset_average_tps": tps,
             "dataset_example_index": 1000 * k, "dataset_file_loc": 0, "dataset_total_tokens": chunk * (step + 1),
             "gradient_norm": 1.5, "learning_rate": 3e-4, "loss": 9.0 - 0.1 * k, "param_norm": 120.0, "step": step}
        import pprint
        out.append("\n" + pprint.pformat(d) + "\n")
    return "\n".join(out) + "\n"


def orbit():
    # tensorflow/models orbit/controller.py: _log(f"train | step: {current_step: 6d} | training until step {steps}...")
    # and f"train | step: {current_step: 6d} | steps/sec: {steps_per_second: 6.1f} | output: {_format_output(...)}",
    # " eval | step: ... | eval time: {elapsed: 6.1f} sec | output: ...", "saved checkpoint to {ckpt_path}."; absl's
    # "I%m%d %H:%M:%S.%f thread file:line] " prefix
    out = ["I0324 07:55:01.101200 140348344015936 controller.py:457] train | step:      0 | training until step 500..."]
    t = 7 * 3600 + 55 * 60 + 1.1012
    rates = [2.0, 2.5, 2.5, 1.0, 2.5]  # the training's own pace; the timer's window after step 300 holds the eval
    for k, r in enumerate(rates, start=1):
        t += 100 / r
        r = 100 / (100 / r + (42.0 if k == 4 else 0.0))
        hh, rem = divmod(t, 3600)
        mm, ss = divmod(rem, 60)
        stamp = f"I0324 {int(hh):02d}:{int(mm):02d}:{ss:09.6f} 140348344015936 controller.py:479]"
        out.append(f"{stamp} train | step: {100 * k: 6d} | steps/sec: {r: 6.1f} | output: "
                   f"{{'learning_rate': 0.1, 'training_loss': {2.5 - 0.1 * k:.6f}}}")
        if k == 3:
            t += 42.0
            hh, rem = divmod(t, 3600)
            mm, ss = divmod(rem, 60)
            stamp = f"I0324 {int(hh):02d}:{int(mm):02d}:{ss:09.6f} 140348344015936 controller.py:282]"
            out.append(f"{stamp}  eval | step: {100 * k: 6d} | eval time:   42.0 sec | output: "
                       f"{{'top_1_accuracy': 0.41, 'validation_loss': 2.9}}")
            out.append(f"{stamp} saved checkpoint to /tmp/model_dir/ckpt-{100 * k}.")
    return "\n".join(out) + "\n"


FILES = {"darknet_alexeyab.log": darknet, "sb3_ppo.log": sb3, "chainer_printreport.log": chainer,
         "fastai_console.log": fastai, "easylm_pprint.log": easylm, "orbit_controller.log": orbit}

if __name__ == "__main__":
    for name, fn in FILES.items():
        (HERE / name).write_text(fn())
