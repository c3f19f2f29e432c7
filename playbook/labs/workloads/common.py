"""What every lab workload shares: device choice, seeding, interleaved repeated measurement of variants, and the
one progress display of its runs."""

from __future__ import annotations

import logging
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

log = logging.getLogger("playbook.labs.workloads")


def pick_device(device: str = "auto"):
    """torch.device for "auto" (CUDA when present, else CPU), "cpu" or "cuda[:N]"."""
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def seed_everything(seed: int) -> None:
    """Seed Python and torch RNGs (CPU and CUDA)."""
    import torch

    random.seed(seed)
    torch.manual_seed(seed)


def in_notebook() -> bool:
    """True inside a Jupyter kernel (the notebook shows a summary table, not per-run progress)."""
    return "ipykernel" in sys.modules


class Progress:
    """Per-run progress of a lab, in one place: on a terminal one stderr line rewritten in place, elsewhere (a
    pipe, a log file) one stderr line per run; silent inside a notebook unless `show=True` (then the page would
    carry a wall of lines; the notebook prints one summary table instead). Always logged at DEBUG on
    "playbook.labs.workloads".

        progress = Progress(total=6, show=None)   # None: show unless inside a notebook
        progress.step("fault r1: throughput=1.09e+05")
        progress.close()
    """

    def __init__(self, total: int, show: bool | None = None, stream: Any = None):
        self.stream = stream if stream is not None else sys.stderr
        self.show = (not in_notebook()) if show is None else bool(show)
        isatty = getattr(self.stream, "isatty", None)
        self.tty = self.show and bool(isatty and isatty())
        self.total, self.done, self.t0 = total, 0, time.perf_counter()

    def step(self, text: str) -> None:
        """One run finished; `text` says which and what it measured."""
        self.done += 1
        line = f"[{self.done}/{self.total}] {text}"
        log.debug(line)
        if not self.show:
            return
        self.stream.write(f"\r\x1b[K{line[:118]}" if self.tty else line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the in-place line with a one-line total (terminal only)."""
        if self.tty and self.done:
            self.stream.write(f"\r\x1b[K{self.done} runs in {time.perf_counter() - self.t0:.1f} s\n")
            self.stream.flush()


def measure_variants(run_one: Callable[[str, int], dict[str, Any]], variants: Sequence[str], repeats: int = 3,
                     progress: bool | None = False) -> pd.DataFrame:
    """Run each variant `repeats` times, interleaved, in rotated order that reverses on odd repeats, so drift and
    carry-over from the previous variant hit all variants alike.

    `run_one(variant, repeat)` returns a dict of measurements (e.g. {"throughput": samples/s, ...}).
    Returns one row per (variant, repeat) with those measurements plus `wall_s`. `progress`: see Progress (None:
    shown unless inside a notebook).
    """
    rows = []
    shown = Progress(repeats * len(variants), show=progress)
    order = list(variants)
    for rep in range(repeats):
        turn = order[rep % len(order):] + order[: rep % len(order)]
        for variant in (turn if rep % 2 == 0 else turn[::-1]):
            t0 = time.perf_counter()
            row = dict(run_one(variant, rep))
            row.update(variant=variant, repeat=rep, wall_s=time.perf_counter() - t0)
            rows.append(row)
            shown.step(f"{variant} r{rep}: " + ", ".join(
                f"{k}={v:.4g}" for k, v in row.items() if isinstance(v, float) and k != "wall_s"))
    shown.close()
    return pd.DataFrame(rows)
