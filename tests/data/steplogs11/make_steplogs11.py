"""Writes the steplogs11 fixtures and expected.json (run once; the files are committed). LABELED SYNTHETIC: every
file follows its trainer's own print statement (SOURCES.md cites it); the numbers are invented here, and the truth
in expected.json is computed from the numbers written, never from what the reader makes of them."""
import json
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).parent
EXPECTED: dict[str, dict] = {}
T0 = datetime(2024, 6, 3, 9, 0, 0)


def _put(name, text, **want):
    (HERE / name).write_text(text)
    EXPECTED[name] = want


def mindspore_level_shift():
    # mindspore/train/callback/_loss_monitor.py: print("epoch: %s step: %s, loss is %s"), step within the epoch;
    # _time_monitor.py: print("epoch time: {:5.3f} ms, per step time: {:5.3f} ms") at each epoch end. No clock.
    # Injected: from epoch 4 each step takes 0.180 s instead of 0.120 s (a level shift, +50%).
    out, steps, durs, n, every, loss = [], [], [], 50, 10, 2.31
    for ep in range(1, 7):
        per = 0.120 if ep < 4 else 0.180
        for s in range(every, n + 1, every):
            loss *= 0.985
            out.append(f"epoch: {ep} step: {s}, loss is {loss:.6f}")
        out.append(f"epoch time: {per * n * 1000:5.3f} ms, per step time: {per * 1000:5.3f} ms")
        steps += [(ep - 1) * n + s for s in range(1, n + 1)]
        durs += [per] * n
    _put("mindspore_loss_time_monitor.log", "\n".join(out) + "\n", steps_total=len(steps), step_s_before=0.120,
         step_s_after=0.180, shift_at_step=151, injected="level shift +0.060 s/step from epoch 4 (step 151)",
         verdict_hint="level shift / slowdown from step 151")


def mindspore_time_monitor_only():
    # The same TimeMonitor line alone (LossMonitor per_print_times=0), data_size=1875 steps an epoch; one epoch
    # (epoch 3) carries a 90 s stall (a checkpoint write inside the epoch): per step 0.020 s -> 0.068 s that epoch.
    out, n = [], 1875
    per = [0.020, 0.020, 0.020 + 90.0 / n, 0.020, 0.020]
    for p in per:
        out.append(f"epoch time: {p * n * 1000:5.3f} ms, per step time: {p * 1000:5.3f} ms")
    _put("mindspore_time_monitor_epochs.log", "\n".join(out) + "\n", steps_total=5 * n, step_s=0.020,
         per_step_by_epoch_s=per, injected="one 90 s stall inside epoch 3")


def dinov2(name, slow_data_from=None, stall_every=None):
    # facebookresearch/dinov2 @05c66df dinov2/logging/helpers.py MetricLogger.log_every:
    # "[{i:4d}/{n}]", "eta: {eta}", meters "{name}: {median:.4f} ({global_avg:.4f})", "time: {avg:.6f}",
    # "data: {avg:.6f}", "max mem: {memory:.0f}"; printed at i % 10 == 0; time/data are means over the last 20
    # iterations. dinov2/train/train.py (02eb93a) builds MetricLogger(delimiter="  "), header "Training", print
    # freq 10, meters lr, wd, mom, last_layer_lr, current_batch_size, total_loss + the loss dict.
    # dinov2/logging/__init__.py prefix "%(levelname).1s%(asctime)s %(process)s %(name)s
    # %(filename)s:%(lineno)s] " with datefmt "%Y%m%d %H:%M:%S".
    n, freq, t, out = 1250, 10, T0, []
    it_time, it_data, stamps = [], [], []
    for i in range(n):
        d = 0.012
        if slow_data_from is not None and i >= slow_data_from:
            d = 0.350
        step = 0.500 + d
        if stall_every and i > 0 and i % stall_every == 0:
            step += 25.0  # a 25 s pause in the loop (do_test / checkpoint) inside iteration i
        it_time.append(step)
        it_data.append(d)
        t += timedelta(seconds=step)
        stamps.append(t)
        if i % freq == 0 or i == n - 1:
            w = it_time[-20:]
            wd = it_data[-20:]
            avg, davg = sum(w) / len(w), sum(wd) / len(wd)
            eta = timedelta(seconds=int(sum(it_time) / len(it_time) * (n - i)))
            loss = 11.0 - 3.0 * i / n
            meters = "  ".join([f"lr: {4e-3 * min(1, i / 500):.4f} ({2e-3:.4f})", "wd: 0.0400 (0.0400)",
                                "mom: 0.9920 (0.9920)", "last_layer_lr: 0.0000 (0.0010)", "current_batch_size: 64.0000 (64.0000)",
                                f"total_loss: {loss:.4f} ({loss + 0.5:.4f})", f"dino_local_crops_loss: {loss * 0.6:.4f}"
                                f" ({loss * 0.6 + 0.3:.4f})"])
            msg = "  ".join(["Training", f"[{i:4d}/{n}]", f"eta: {eta}", meters, f"time: {avg:.6f}",
                             f"data: {davg:.6f}", "max mem: 30412"])
            out.append(f"I{t.strftime('%Y%m%d %H:%M:%S')} 4123 dinov2 helpers.py:102] {msg}")
    total = sum(it_time)
    out.append(f"I{t.strftime('%Y%m%d %H:%M:%S')} 4123 dinov2 helpers.py:112] Training Total time: "
               f"{timedelta(seconds=int(total))} ({total / n:.6f} s / it)")
    want = dict(steps_total=n, printed_steps=[i for i in range(n) if i % freq == 0 or i == n - 1],
                step_s=0.512, data_s=0.012)
    if slow_data_from is not None:
        want.update(step_s_after=0.850, data_s_after=0.350, slow_from=slow_data_from,
                    injected="data wait 0.012 -> 0.350 s from iteration 600", verdict="data_starvation")
    if stall_every:
        want.update(stall_every=stall_every, stall_s=25.0, injected="25 s pause every 200 iterations",
                    verdict="periodic_stall")
    _put(name, "\n".join(out) + "\n", **want)


def mindformers(name, stall_every=100, stall_s=30.0):
    # mindspore-lab/mindformers mindformers/core/callback/callback.py MFLossMonitor.print_output_info (not sink
    # mode): "{ Epoch:[%3d/%3d], step:[%5d/%5d], loss:[%5.3f/%5.3f], per_step_time: %dms, lr: %s, overflow cond: %s,
    # loss_scale: %s, global_norm: %s%s" then "  %4.1f%% %s %.5f samples/s/p  %s }" (a 50-wide bar of the
    # percent done and the time remaining); mindformers/tools/logger.py DEFAULT_STDOUT_FORMAT
    # '%(asctime)s - %(name)s - %(levelname)s - %(message)s'. per_print_times = 1 (every step).
    # Injected: every 100 steps a 30 s checkpoint save lands in that step's time.
    n_ep, per_ep, per, gbs, t, out = 2, 300, 0.412, 64, T0, []
    durs, total = [], n_ep * per_ep
    done = 0
    for ep in range(1, n_ep + 1):
        for s in range(1, per_ep + 1):
            g = (ep - 1) * per_ep + s
            d = per + (stall_s if g % stall_every == 0 else 0.0)
            t += timedelta(seconds=d)
            durs.append(d)
            done += 1
            pre = t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d} - mindformers - INFO - "
            loss = 10.2 - 3.0 * g / total
            out.append(pre + f"{{ Epoch:[{ep:3d}/{n_ep:3d}], step:[{s:5d}/{per_ep:5d}], loss:[{loss:5.3f}/"
                       f"{loss + 0.2:5.3f}], per_step_time: {int(d * 1000)}ms, lr: 0.0001, overflow cond: False, "
                       f"loss_scale: 1.0, global_norm: [1.{g % 7}1]")
            pct = 100 * done / total
            bar = "|" + f"{int(50 * pct / 100) * chr(0x2588):<50}" + "|"  # the source's ('|%%-%ds|' % 50) % ...
            remain = timedelta(seconds=int(per * (total - done)))
            out.append(pre + f"  {pct:4.1f}% {bar} {gbs / d:.5f} samples/s/p  {remain} }}")
    _put(name, "\n".join(out) + "\n", steps_total=total, step_s=per, stall_every=stall_every, stall_s=stall_s,
         injected="30 s checkpoint every 100 steps", verdict="periodic_stall")


def poutyne():
    # GRAAL-Research/poutyne @014da91 poutyne/framework/callbacks/progress.py + color_formatting.py (coloring off):
    # each batch sys.stdout.write("\rEpoch %d/%d " + "ETA %.0fs " + "Step %d/%d: " + "name: value " ...) with no
    # newline (ETA = mean batch time so far x batches left); at epoch end print("\rEpoch %d/%d " + "%.2fs " +
    # "Step %d/%d: " + metrics) with the epoch's total time. Captured to a file: one line per epoch holding every
    # batch's \r-separated update. Injected: epoch 3's batches take 0.80 s instead of 0.35 s.
    steps, epochs, out = 100, 5, []
    per_ep = [0.35, 0.35, 0.80, 0.35, 0.35]
    for ep, per in enumerate(per_ep, 1):
        line = ""
        for b in range(1, steps + 1):
            loss = 1.0 / (ep + b / steps)
            line += f"\rEpoch {ep}/{epochs} ETA {per * (steps - b):.0f}s Step {b}/{steps}: loss:  {loss:f} acc:  {80 + ep:f} "
        line += (f"\rEpoch {ep}/{epochs} {per * steps:.2f}s Step {steps}/{steps}: loss:  {loss:f} acc:  {80 + ep:f} "
                 f"val_loss:  {loss + 0.1:f} val_acc:  {79 + ep:f} ")
        out.append(line)
    _put("poutyne_progression.log", "\n".join(out) + "\n", steps_total=steps * epochs, per_step_by_epoch_s=per_ep,
         injected="epoch 3 batches 0.80 s instead of 0.35 s (+45 s)")


mindspore_level_shift()
mindspore_time_monitor_only()
dinov2("dinov2_metric_logger_slow_data.log", slow_data_from=600)
dinov2("dinov2_metric_logger_stalls.log", stall_every=200)
mindformers("mindformers_mflossmonitor.log")
poutyne()
(HERE / "expected.json").write_text(json.dumps(EXPECTED, indent=1) + "\n")
