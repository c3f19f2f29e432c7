"""Writes gnn_tracking_95_steady_33pct.csv (deterministic): python tests/data/eval/make_gnn_tracking_95_steady.py

gnn-tracking/gnn_tracking#95 "Increase GPU utilization: Data loader parallelization?": Slurm job statistics of a
2-node, 8-GPU job after 16 min 10 s — GPU utilization 33%, GPU memory 74%, CPU 12%; the team suspected the data
loader. Telemetry alone (one node's four GPUs, nvidia-smi at 1 s, GPUs of 40 GB) shows a steady 33% with no swing:
no cause can be named from it, so the honest verdict is insufficient data with what to record next."""
from pathlib import Path

import numpy as np
import pandas as pd

rng = np.random.default_rng(95)
t0 = pd.Timestamp("2022-10-07T12:48:00")
lines = ["timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W], "
         "power.limit [W], clocks.sm [MHz]"]
for s in range(970):
    ts = (t0 + pd.Timedelta(seconds=s)).strftime("%Y/%m/%d %H:%M:%S.000")
    for g in range(4):
        u = int(np.clip(rng.normal(33, 8), 0, 100))
        lines.append(f"{ts}, {g}, {u} %, 30310 MiB, 40960 MiB, {90 + 2.2 * u + rng.normal(0, 6):.2f} W, "
                     f"400.00 W, 1410 MHz")
Path(__file__).with_name("gnn_tracking_95_steady_33pct.csv").write_text("\n".join(lines) + "\n")
