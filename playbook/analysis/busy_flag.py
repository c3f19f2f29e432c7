"""A busy share the GPU's own memory clock and power draw contradict: a busy flag without work.

A utilization reading is a driver's flag, not a measurement of work. AMD's (rocm-smi's `GPU%`, sysfs
`gpu_busy_percent`, amd-smi's `GFX%`) reads 90-100 % whenever a process holds a compute context, idle or not: a
loaded but idle inference server, or a GPU left in a stuck state until it is reset (ollama/ollama#2320,
ROCm/legacy-rocm-build#1861, #2777, tobocop2/lilbee#676: "17W nothing running, 44W engine resident but idle,
50-103W during inference", the memory clock "idle floor vs stepped up under load").

The physics that tells them apart: work moves data, so a GPU at work takes its memory out of the lowest power state.
Every memory clock the tools print at work is hundreds of MHz or more (GDDR6 ~1000-1250 MHz, HBM2e 1600 MHz, NVIDIA's
lowest loaded P-state 810 MHz and its P8 idle 405 MHz); AMD's idle floor is 96-167 MHz. A poll that reads busy
(≥ BUSY_READ_PCT) while the memory clock sits at or below IDLE_MEM_CLOCK_MHZ and its draw is at most POWER_SHARE_MAX of
its power limit is an idle GPU whose flag is pinned. Its utilization is read as idle (0 %), and the diagnosis says so
in one warning. The memory clock alone is not enough: RDNA3 parks it at its 96 MHz floor under intense compute too
(marazmista/radeon-profile#294: a 7900 XTX "during intense ML workloads", core above 3.1 GHz, memory at 96 MHz; its
Infinity Cache serves the traffic), so the draw must say the GPU idles. Where the limit is not recorded the GPU's own
peak draw in the recording stands for it (the peak is at most the limit: a poll at most half the peak is at most half
the limit). A GPU whose memory clock is fixed (an HBM part that prints 1600 MHz idle or busy), or whose clock or draw
is not recorded, is never judged: the test needs the evidence, it does not guess.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

BUSY_READ_PCT = 90.0
IDLE_MEM_CLOCK_MHZ = 200.0
POWER_SHARE_MAX = 0.5


def contradicted(telemetry: pd.DataFrame) -> np.ndarray:
    """Per row: a busy reading (≥ BUSY_READ_PCT) that the row's memory clock (≤ IDLE_MEM_CLOCK_MHZ, its idle state)
    and its draw (≤ POWER_SHARE_MAX of its limit, else of the GPU's peak draw in the recording) both contradict."""
    return _judged(telemetry)[0]


def _judged(telemetry: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(contradicted, the draw's share of its reference, whether that reference is the power limit) per row."""
    n = len(telemetry)
    none = (np.zeros(n, dtype=bool), np.full(n, np.nan), np.zeros(n, dtype=bool))
    if not n or not {"mem_clock_mhz", "util_pct", "power_w"} <= set(telemetry.columns):
        return none
    util = pd.to_numeric(telemetry["util_pct"], errors="coerce").to_numpy(dtype=float)
    mclk = pd.to_numeric(telemetry["mem_clock_mhz"], errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        busy_idle_clock = (util >= BUSY_READ_PCT) & (mclk > 0) & (mclk <= IDLE_MEM_CLOCK_MHZ)
        if not busy_idle_clock.any():
            return none  # no busy reading at an idle memory clock: nothing to judge (and no per-GPU peak to take)
    power = pd.to_numeric(telemetry["power_w"], errors="coerce")
    limit = pd.to_numeric(telemetry["power_limit_w"], errors="coerce") if "power_limit_w" in telemetry else \
        pd.Series(np.nan, index=telemetry.index)
    peak = power.groupby([telemetry["host"].astype(str), telemetry["gpu"]]).transform("max") \
        if {"host", "gpu"} <= set(telemetry.columns) else pd.Series(np.nan, index=telemetry.index)
    by_limit = (limit > 0).to_numpy()
    ref = limit.where(limit > 0, peak).to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(ref > 0, power.to_numpy(dtype=float) / ref, np.nan)
        hit = busy_idle_clock & (share <= POWER_SHARE_MAX)
    return hit, share, by_limit


def reconcile(telemetry: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """`telemetry` with the contradicted busy readings read as idle (0 %), and the warning that says which GPUs and
    why (None when no reading is contradicted; the frame is then returned as is)."""
    hit, share, by_limit = _judged(telemetry)
    if not hit.any():
        return telemetry, None
    out = telemetry.copy()
    out.loc[hit, "util_pct"] = 0.0
    rows = telemetry[hit]
    ids = list(dict.fromkeys(f"{h}:{g}" for h, g in zip(rows["host"].astype(str), rows["gpu"], strict=True)))
    util = pd.to_numeric(rows["util_pct"], errors="coerce")
    mclk = pd.to_numeric(rows["mem_clock_mhz"], errors="coerce")
    refs = [f"{share[hit & m].max():.0%} of {what}" for m, what in (
        (by_limit, "the power limit"), (~by_limit, "the GPU's peak draw in the recording")) if (hit & m).any()]
    return out, (f"{', '.join(ids[:8])}{' …' if len(ids) > 8 else ''}: the busy share reads {_span(util)}% in "
                 f"{int(hit.sum())} of {len(telemetry)} polls while the memory clock sits at {_span(mclk)} MHz (its "
                 f"idle state), drawing at most {' and '.join(refs)}: a busy flag without work (a driver's flag, AMD's "
                 "among them, stays pinned while a process holds a compute context, idle or not) — read as idle")


def _span(values: pd.Series) -> str:
    lo, hi = float(values.min()), float(values.max())
    return f"{lo:.0f}" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}"
