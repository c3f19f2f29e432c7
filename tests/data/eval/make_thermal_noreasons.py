"""Writes the thermal cases without clock-event reasons (deterministic): python tests/data/eval/make_thermal_noreasons.py

thermald_300_mx330_thermal.csv — intel/thermal_daemon#300 and NVIDIA/nvidia-settings#67: a GeForce MX330 whose
"GPU Max Operating Temp" is 57 C (Slowdown Temp 97 C) throttles severely once it passes it (67 C under load in the
report). nvidia-smi at 1 s with utilization, temperature, power and clocks.sm but no clocks_event_reasons; the
clock figures (1594 MHz boost, ~30 MHz lost per °C above 57 °C) are assumed, the temperatures are the report's.
boost_droop_healthy.csv — the negative: GPU Boost trimming ~15 MHz per 5 °C as a busy GPU warms 40 → 80 °C (~5%),
which is normal behaviour, not a thermal limiter.
tdp_leakage_healthy.csv — the negative: an H100 pinned at its 700 W limit losing ~19% clock (1980 → 1600 MHz, inside the 1.5-1.98 GHz H100 DVFS range) as it warms 40 → 80 °C
(leakage power rises with temperature, so the same watts buy a lower clock): power-limited DVFS, not thermal."""
from pathlib import Path

import numpy as np
import pandas as pd

HEAD = "timestamp, index, utilization.gpu [%], temperature.gpu, power.draw [W], power.limit [W], clocks.sm [MHz]"


def write(name: str, seed: int, t_from: float, t_to: float, clock, limit_w: float, draw_w: float,
          draw_sd: float = 0.03) -> None:
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2021-05-08T15:23:05")
    lines = [HEAD]
    for s in range(1200):
        ts = (t0 + pd.Timedelta(seconds=s)).strftime("%Y/%m/%d %H:%M:%S.000")
        temp = t_from + (t_to - t_from) * (1 - np.exp(-s / 300))
        lines.append(f"{ts}, 0, {int(np.clip(rng.normal(99, 1), 0, 100))} %, {int(round(temp + rng.normal(0, 0.5)))}, "
                     f"{min(draw_w * (1 + draw_sd * rng.standard_normal()), limit_w):.2f} W, {limit_w:.2f} W, "
                     f"{int(clock(temp) + rng.normal(0, 6))} MHz")
    Path(__file__).with_name(name).write_text("\n".join(lines) + "\n")


write("thermald_300_mx330_thermal.csv", 300, 45.0, 67.5, lambda t: 1594 - 30 * max(t - 57, 0), 25.0, 20.0)
write("boost_droop_healthy.csv", 301, 40.0, 80.0, lambda t: 1980 - 15 * (t - 40) / 5, 700.0, 560.0)
write("tdp_leakage_healthy.csv", 302, 40.0, 80.0, lambda t: 1980 - 380 * (t - 40) / 40, 700.0, 697.0, 0.003)
