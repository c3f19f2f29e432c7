"""Writes the power-cap-without-clock eval cases (deterministic): python tests/data/eval/make_power_cap_noclock.py"""
from pathlib import Path

import numpy as np
import pandas as pd

out = Path("tests/data/eval")
rng = np.random.default_rng(975)

# stackhpc/ansible-slurm-appliance#975: an H100 whose Current Power Limit is 500 W (Default / Max 700 W);
# nvidia-smi --query-gpu=timestamp,index,utilization.gpu,power.draw,power.limit (no clocks.sm), 4 GPUs, 1 s polls
def smi_csv(name, limits, draw_free=(610.0, 35.0)):
    t0 = pd.Timestamp("2026-06-26T10:53:53")
    lines = ["timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W]"]
    for s in range(300):
        ts = (t0 + pd.Timedelta(seconds=s)).strftime("%Y/%m/%d %H:%M:%S.000")
        for g, lim in enumerate(limits):
            util = int(np.clip(rng.normal(98, 1.5), 90, 100))
            if lim < max(limits):
                draw = lim * (0.985 + 0.01 * rng.random())  # held at the limit by the power controller
            else:
                draw = min(rng.normal(*draw_free), lim)
            lines.append(f"{ts}, {g}, {util} %, {draw:.2f} W, {lim:.2f} W")
    (out / name).write_text("\n".join(lines) + "\n")

smi_csv("stackhpc_975_h100_500w_cap_noclock.csv", [700.0, 700.0, 500.0, 700.0])
# the same 4 H100s with no cap, running at TDP with the ordinary spread of draw (some polls at 700 W)
smi_csv("h100_tdp_bound_healthy_noclock.csv", [700.0, 700.0, 700.0, 700.0], draw_free=(672.0, 22.0))

# bradrlaw/ai-server#32: a V100 held at 175 W (the card allows 250 W); 1.13x faster at 250 W.
# dcgm-exporter Prometheus text with sample timestamps, no DCGM_FI_DEV_SM_CLOCK field
rows = []
t0 = int(pd.Timestamp("2026-08-04T12:00:00Z").timestamp() * 1000)
for s in range(240):
    ts = t0 + 5000 * s
    for g, lim in enumerate((250.0, 175.0)):
        util = int(np.clip(rng.normal(97, 2), 85, 100))
        draw = lim * (0.985 + 0.01 * rng.random()) if lim < 250 else min(rng.normal(205, 20), lim)
        lab = f'{{gpu="{g}",UUID="GPU-v100-{g}",device="nvidia{g}",modelName="Tesla V100-PCIE-32GB",Hostname="ai-server"}}'
        rows += [f"DCGM_FI_DEV_GPU_UTIL{lab} {util} {ts}", f"DCGM_FI_DEV_POWER_USAGE{lab} {draw:.3f} {ts}",
                 f"DCGM_FI_DEV_POWER_MGMT_LIMIT{lab} {lim:.0f} {ts}", f"DCGM_FI_DEV_FB_USED{lab} 21504 {ts}",
                 f"DCGM_FI_DEV_FB_TOTAL{lab} 32768 {ts}"]
(out / "bradrlaw_ai_server_32_v100_175w_dcgm.prom").write_text("\n".join(rows) + "\n")
