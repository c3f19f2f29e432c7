"""LABELED SYNTHETIC step tables in layouts real training scripts write: a `time` column that is a number of
seconds, not a clock — a running total since the start in one, each step's own time in the others. The layouts are
the scripts' own write statements (SOURCES.md); the numbers are drawn here, seeded. Run: python make_time_tables.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(21)
    # `step,loss,time_seconds`, time = start_time.elapsed() (a running total): 0.4 s a step, an 8 s save every 100
    d = 0.4 * (1 + 0.03 * rng.standard_normal(600))
    d[99::100] += 8.0
    (HERE / "training_log_time_seconds.csv").write_text(
        "step,loss,time_seconds\n" + "".join(f"{i + 1},{3.0 - i * 1e-3:.6f},{t:.2f}\n"
                                            for i, t in enumerate(np.cumsum(d))))
    # `step,loss,time` every 10 steps, time = that step's own seconds: 0.12 s, steady
    rows = [(s, 2.5 - s * 1e-4, 0.12 * (1 + 0.04 * rng.standard_normal())) for s in range(10, 3001, 10)]
    (HERE / "loss_log_step_time.csv").write_text(
        "step,loss,time\n" + "".join(f"{s},{v:.4f},{t:.4f}\n" for s, v, t in rows))
    # `step,loss,time_ms,tokens_per_sec` every step (llm.c-style: the step's own milliseconds): 180 ms, one GPU in
    # the job throttles from step 1200 on: 250 ms
    ms = 180.0 * (1 + 0.02 * rng.standard_normal(2000))
    ms[1200:] *= 250.0 / 180.0
    (HERE / "bf16_loss_time_ms.csv").write_text(
        "step,loss,time_ms,tokens_per_sec\n" + "".join(f"{i + 1},{4.0 - i * 1e-3:.6f},{m:.3f},{int(65536 / m * 1e3)}\n"
                                                       for i, m in enumerate(ms)))


if __name__ == "__main__":
    main()
