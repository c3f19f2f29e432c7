"""LABELED SYNTHETIC: the one generated file of heldout31 (see SOURCES.md), written from a thread's stated figures.

nnunet_1351_periodic_epochs_SYNTHETIC.log — MIC-DKFZ/nnUNet#1351 states, with no log pasted (only a progress.png):
"The epoch times range from 43 to 110 seconds. It looks like there's always 4-5 epochs with approx. 40 seconds, 2-3
epochs with approx 110 seconds and then it starts again" (DGX A100, nnUNet v1 and v2, nnUNet_n_proc_DA=60, the
reporter alone on the machine). The lines are nnU-Net v2's own (nnUNetTrainer.on_epoch_start/on_epoch_end through
print_to_log_file: `f"{datetime}:"` then the arguments joined by a space), as pasted in MIC-DKFZ/nnUNet#2041.
Deterministic: a fixed seed; run `python make_heldout31.py` in this directory to rewrite the file.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent


def periodic_epochs(seed: int = 1351, epochs: int = 28) -> list[float]:
    """Epoch durations (s): runs of 4-5 epochs near 43 s, then 2-3 near 110 s, repeated (the thread's figures)."""
    rng = random.Random(seed)
    out: list[float] = []
    while len(out) < epochs:
        out += [round(rng.uniform(42.5, 46.0), 2) for _ in range(rng.choice((4, 5)))]
        out += [round(rng.uniform(104.0, 110.0), 2) for _ in range(rng.choice((2, 3)))]
    return out[:epochs]


def nnunet_v2_log(durations: list[float], start: datetime, first_epoch: int = 40) -> str:
    """nnU-Net v2 training-log lines for `durations` (s), one block per epoch, from `start`."""
    lines, t = [], start
    rng = random.Random(7)

    def put(at: datetime, *args) -> None:
        lines.append(" ".join([f"{at}:", *map(str, args)]))

    for i, d in enumerate(durations):
        epoch = first_epoch + i
        put(t, "")
        put(t, f"Epoch {epoch}")
        put(t + timedelta(microseconds=190), f"Current learning rate: {round(0.01 * (1 - epoch / 1000) ** 0.9, 5)}")
        t = t + timedelta(seconds=d)
        put(t, "train_loss", round(-0.62 - 0.001 * i + rng.uniform(-0.01, 0.01), 4))
        put(t + timedelta(microseconds=320), "val_loss", round(-0.60 - 0.001 * i + rng.uniform(-0.01, 0.01), 4))
        put(t + timedelta(microseconds=410), "Pseudo dice", [round(rng.uniform(0.78, 0.9), 4) for _ in range(8)])
        put(t + timedelta(microseconds=500), "Epoch time:", d, "s")
        t = t + timedelta(seconds=1, microseconds=452_000)
    return "\n".join(lines) + "\n"


def main() -> None:
    text = nnunet_v2_log(periodic_epochs(), datetime(2023, 3, 27, 9, 14, 2, 118_205))
    (HERE / "nnunet_1351_periodic_epochs_SYNTHETIC.log").write_text(text)


if __name__ == "__main__":
    main()
