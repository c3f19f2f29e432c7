"""Writes the TensorBoard event files in this folder with the real writer (torch.utils.tensorboard.SummaryWriter,
which needs `pip install tensorboard`), from real PyTorch training loops on the CPU: every wall time in them was
measured while the loop ran (the slow parts are real work or real sleeps standing in for a slow device or a slow
input pipeline, as the labs do). Run from the repository root:

    python tests/data/tfevents/make_tfevents.py

- trainer_eval_stall/: Hugging Face Trainer's tags (train/loss, train/learning_rate, train/grad_norm, train/epoch
  every 5 steps); every 40 steps an evaluation pass (eval/loss, eval/runtime, eval/samples_per_second) that takes
  about as long as 40 training steps: the GPU-less pause every logging window sees as a periodic stall.
- new_style_scalars/: one tag a step written TF2-style (a float32 tensor with the `scalars` plugin,
  new_style=True) from a loop of ~22 ms steps; as it ran, other jobs shared the machine's two cores and some steps
  took 46-120 ms (measured, kept): the file tests the encoding, not a verdict.
- data_wait/: MMEngine-like per-step times, `time` (the step) and `data_time` (waiting for the batch), from a
  loader whose batches take longer to make than a step computes (num_workers=0): data starvation.
Event files are named by the writer (events.out.tfevents.<time>.<host>.<pid>.<n>); each folder keeps one.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.tensorboard import SummaryWriter

HERE = Path(__file__).resolve().parent


def _model() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    return model, torch.optim.SGD(model.parameters(), lr=0.05)


def _step(model, opt, x, y, device_s: float) -> tuple[float, float]:
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9))
    opt.step()
    time.sleep(device_s)  # the accelerator's time for this step (a CPU stands in for it)
    return float(loss), norm


def _folder(name: str) -> Path:
    out = HERE / name
    shutil.rmtree(out, ignore_errors=True)
    return out


def trainer_eval_stall(steps: int = 200) -> None:
    model, opt = _model()
    writer = SummaryWriter(str(_folder("trainer_eval_stall")))
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    for step in range(1, steps + 1):
        loss, norm = _step(model, opt, x, y, 0.02)
        if step % 5 == 0:
            for tag, value in (("train/loss", loss), ("train/learning_rate", 0.05), ("train/grad_norm", norm),
                               ("train/epoch", step / 100)):
                writer.add_scalar(tag, value, step)
        if step % 40 == 0:
            t0 = time.time()
            with torch.no_grad():
                for _ in range(40):
                    ev = float(nn.functional.cross_entropy(model(x), y))
                    time.sleep(0.02)
            runtime = time.time() - t0
            writer.add_scalar("eval/loss", ev, step)
            writer.add_scalar("eval/runtime", runtime, step)
            writer.add_scalar("eval/samples_per_second", 40 * 64 / runtime, step)
    writer.close()


def new_style_scalars(steps: int = 150) -> None:
    model, opt = _model()
    writer = SummaryWriter(str(_folder("new_style_scalars")))
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    for step in range(steps):
        loss, _ = _step(model, opt, x, y, 0.02)
        writer.add_scalar("Loss/train", loss, step, new_style=True)
    writer.close()


def data_wait(steps: int = 120) -> None:
    model, opt = _model()
    writer = SummaryWriter(str(_folder("data_wait")))
    for step in range(steps):
        t0 = time.time()
        time.sleep(0.03)  # the loader decodes and augments the batch in the training process (num_workers=0)
        x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
        t1 = time.time()
        loss, _ = _step(model, opt, x, y, 0.01)
        t2 = time.time()
        writer.add_scalar("train/loss", loss, step)
        writer.add_scalar("train/data_time", t1 - t0, step)
        writer.add_scalar("train/time", t2 - t0, step)
    writer.close()


if __name__ == "__main__":
    trainer_eval_stall()
    new_style_scalars()
    data_wait()
    for p in sorted(HERE.rglob("events.out.tfevents.*")):
        print(p.relative_to(HERE), p.stat().st_size, "bytes")
