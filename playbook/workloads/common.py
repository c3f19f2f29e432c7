"""What every lab workload shares: device choice, seeding, and interleaved repeated measurement of variants."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd


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


def measure_variants(run_one: Callable[[str, int], dict[str, Any]], variants: Sequence[str], repeats: int = 3,
                     progress: bool = False) -> pd.DataFrame:
    """Run each variant `repeats` times, interleaved, in rotated order that reverses on odd repeats, so drift and
    carry-over from the previous variant hit all variants alike.

    `run_one(variant, repeat)` returns a dict of measurements (e.g. {"throughput": samples/s, ...}).
    Returns one row per (variant, repeat) with those measurements plus `wall_s`.
    """
    rows = []
    order = list(variants)
    for rep in range(repeats):
        turn = order[rep % len(order):] + order[: rep % len(order)]
        for variant in (turn if rep % 2 == 0 else turn[::-1]):
            t0 = time.perf_counter()
            row = dict(run_one(variant, rep))
            row.update(variant=variant, repeat=rep, wall_s=time.perf_counter() - t0)
            rows.append(row)
            if progress:
                print(f"  repeat {rep + 1}/{repeats} {variant:>12}: "
                      + ", ".join(f"{k}={v:.4g}" for k, v in row.items() if isinstance(v, float)), flush=True)
    return pd.DataFrame(rows)
