"""Writes the issue-27 held-out cases (deterministic): python tests/data/eval/heldout27/make_heldout27.py

LABELED SYNTHETIC logs in the formats the tools print, each carrying the shape of a public report whose cause was
confirmed there. Written before the engine saw them; scored once as written (the first-try figure of issue 27).
- mmengine_data_time.log: MMEngine's LoggerHook line ("Epoch(train) [e][i/n]  lr: …  eta: …  time: …  data_time: …
  memory: …  loss: …", open-mmlab/mmengine#155 and its logging docs); the data wait holds ~70% of every iteration —
  the "data_time is close to time" reports (a loader bound by decoding) → data_starvation.
- mmengine_checkpoint.log: the same logger, plus "Saving checkpoint at N iterations" every 400 iterations; the
  save takes ~25 s that the iteration timer never sees (open-mmlab/mmengine#935 shows the save line; synchronous
  torch.save of a large model) → periodic_stall.
- dynamo_recompiles.log: step lines with torch._dynamo's glog-format warning "torch._dynamo hit
  config.recompile_limit (8)" / "function: … last reason: … size mismatch" (microsoft/dion#23, pytorch #124269);
  the steps that recompile take 8-30x the others → recompilation.
- torchrun_slow_loader_rank.log: torchrun's "[rankN]:" prefixes on MMEngine's line per rank; rank 2's loader takes
  ~0.17 s of every 0.5 s iteration (the others 2 ms) and every rank's iteration lasts as long, waiting for it in the
  all-reduce (a node with a slow disk, as in the "one rank's data_time is high" threads) → data_starvation.
- mmengine_steady.log: MMEngine's line on a steady run (3% jitter) → healthy.
- xid_fallen_off.log: step lines, then the driver's "NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off
  the bus." and a CUDA error, the run stops → hardware_fault.
"""
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
rng = np.random.default_rng(27)


def mm(t, e, i, n, time_s, data_s, loss):
    return (f"{t:%Y/%m/%d %H:%M:%S} - mmengine - INFO - Epoch(train) [{e}][{i:>4}/{n}]  lr: 1.0000e-02  "
            f"eta: 1:02:03  time: {time_s:.4f}  data_time: {data_s:.4f}  memory: 9120  loss: {loss:.4f}")


def mmengine(name, data_share, save_every=None, save_s=25.0):
    t, lines = datetime(2023, 1, 31, 13, 0, 0), []
    for i in range(10, 4010, 10):
        step = 0.5 * np.exp(0.03 * rng.standard_normal())
        data = data_share * step
        t += timedelta(seconds=10 * step)
        lines.append(mm(t, 1 + i // 2000, i % 2000 or 2000, 2000, step, data, 2.0 - i * 1e-4))
        if save_every and i % save_every == 0:
            lines.append(f"{t:%Y/%m/%d %H:%M:%S} - mmengine - INFO - Saving checkpoint at {i} iterations")
            t += timedelta(seconds=save_s * np.exp(0.1 * rng.standard_normal()))
    (HERE / name).write_text("\n".join(lines) + "\n")


mmengine("mmengine_data_time.log", 0.7)
mmengine("mmengine_checkpoint.log", 0.01, save_every=400)
mmengine("mmengine_steady.log", 0.01)

lines = []
for i in range(1, 301):
    ms = 120 * np.exp(0.03 * rng.standard_normal())
    if i in (3, 41, 97, 150, 211, 260):
        k = {3: 1, 41: 2, 97: 3, 150: 4, 211: 5, 260: 6}[i]
        w = "W0110 12:27:06.332000 158 torch/_dynamo/convert_frame.py:1551]"
        lines += [f"{w} [2/{k}] torch._dynamo hit config.recompile_limit (8)",
                  f"{w} [2/{k}]    function: 'forward' (/workspace/model.py:120)",
                  f"{w} [2/{k}]    last reason: 2/{k - 1}: tensor 'L['x']' size mismatch at index 1. expected "
                  f"{128 * k}, actual {128 * (k + 1)}"]
        ms *= 8 + 4 * k
    lines.append(f"iter {i}: loss {3 - i * 0.002:.4f}, time {ms:.2f}ms, mfu 41.20%")
(HERE / "dynamo_recompiles.log").write_text("\n".join(lines) + "\n")

t, lines = datetime(2023, 5, 4, 9, 0, 0), []
for i in range(10, 2010, 10):
    step = 0.5 * np.exp(0.02 * rng.standard_normal())
    t += timedelta(seconds=10 * step)
    for r in range(4):
        data = 0.17 * np.exp(0.05 * rng.standard_normal()) if r == 2 else 0.002  # rank 2's loader is late
        lines.append(f"[rank{r}]:" + mm(t, 1, i, 2000, step * np.exp(0.005 * rng.standard_normal()), data, 1.5))
(HERE / "torchrun_slow_loader_rank.log").write_text("\n".join(lines) + "\n")

t, lines = datetime(2024, 3, 2, 8, 0, 0), []
for i in range(1, 121):
    s = 0.9 * np.exp(0.02 * rng.standard_normal())
    t += timedelta(seconds=s)
    lines.append(f"{t:%Y-%m-%d %H:%M:%S,%f}"[:-3] + f" INFO step {i} loss {2.5 - i * 1e-3:.4f} step_time {s:.3f}s")
lines += [f"{t:%Y-%m-%d %H:%M:%S}" + " kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=48211, name=python, GPU has "
          "fallen off the bus.",
          "RuntimeError: CUDA error: unspecified launch failure"]
(HERE / "xid_fallen_off.log").write_text("\n".join(lines) + "\n")
