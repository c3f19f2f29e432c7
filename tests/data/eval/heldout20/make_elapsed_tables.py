"""LABELED SYNTHETIC step tables in the layouts real training scripts write: a running `elapsed` column (seconds
since the process started) beside the step, no per-step time. The layouts are the scripts' own write statements
(SOURCES.md); the numbers are drawn here, seeded. Run: python make_elapsed_tables.py (writes the three CSVs here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def per_epoch_resumed(rng) -> str:
    """`epoch,step,loss,elapsed_s` once an epoch (50 steps of ~0.8 s), elapsed = time.time() - t_start of the
    process: the run resumes after epoch 30, so elapsed starts again from 0 while the step goes on."""
    rows, step = ["epoch,step,loss,elapsed_s"], 0
    elapsed = 0.0
    for epoch in range(60):
        if epoch == 30:
            elapsed = 0.0  # --resume: a new process, a new t_start
        elapsed += float((0.8 * (1 + 0.02 * rng.standard_normal(50))).sum())
        step += 50
        rows.append(f"{epoch + 1},{step},{1.0 / (epoch + 1):.6f},{elapsed:.1f}")
    return "\n".join(rows) + "\n"


def per_step_checkpoints(rng) -> str:
    """`step,loss,elapsed_s` every step, 0.25 s a step, a checkpoint saved every 500 steps taking 20 s."""
    d = 0.25 * (1 + 0.03 * rng.standard_normal(3000))
    d[499::500] += 20.0
    return "step,loss,elapsed_s\n" + "".join(f"{i + 1},{2.0 - i * 1e-4:.5f},{e:.3f}\n"
                                              for i, e in enumerate(np.cumsum(d)))


def per_step_healthy(rng) -> str:
    """`step,loss,elapsed_sec` every step, 0.3 s a step (±3 %)."""
    d = 0.3 * (1 + 0.03 * rng.standard_normal(2000))
    return "step,loss,elapsed_sec\n" + "".join(f"{i + 1},{1.5 - i * 1e-4:.5f},{e:.3f}\n"
                                               for i, e in enumerate(np.cumsum(d)))


def main() -> None:
    rng = np.random.default_rng(20)
    (HERE / "train_log_epoch_elapsed_resumed.csv").write_text(per_epoch_resumed(rng))
    (HERE / "loss_elapsed_checkpoints.csv").write_text(per_step_checkpoints(rng))
    (HERE / "loss_elapsed_sec_healthy.csv").write_text(per_step_healthy(rng))


if __name__ == "__main__":
    main()
