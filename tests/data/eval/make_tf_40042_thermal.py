"""Writes tf_40042_cifar10_thermal_creep.log (deterministic): python tests/data/eval/make_tf_40042_thermal.py

tensorflow/tensorflow#40042 "Tensorflow getting slower and slower": cifar10_train.py (TF 1.15) logs every 10
steps "step N, loss = L (E examples/sec; S sec/batch)"; a fresh run holds 0.014 sec/batch (~9100 examples/sec,
batch 128), then "deteriorates when the steps increase"; the confirmed cause: "the GPU got overheated and slows
down over time" (a cooling pad fixed it). The thread gives no figure for the degraded rate: the creep to
0.021 sec/batch over 40000 steps here is an assumption of the size users notice (+50%)."""
from pathlib import Path

import numpy as np
import pandas as pd

rng = np.random.default_rng(40042)
t = pd.Timestamp("2020-06-11 04:27:32.955302")
lines = []
loss = 4.67
for step in range(0, 40001, 10):
    sec = 0.335 if step == 0 else 0.014 * (1 + 0.5 * step / 40000) * np.exp(0.03 * rng.standard_normal())
    t += pd.Timedelta(seconds=10 * sec if step else sec)
    loss = max(0.3, loss - 0.0008 + 0.05 * rng.standard_normal() * 0.2)
    lines.append(f"{t.strftime('%Y-%m-%d %H:%M:%S.%f')}: step {step}, loss = {loss:.2f} "
                 f"({128 / sec:.1f} examples/sec; {sec:.3f} sec/batch)")
lines.append("INFO:tensorflow:Saving checkpoints for 40001 into /tmp/cifar10_train/model.ckpt.")
Path(__file__).with_name("tf_40042_cifar10_thermal_creep.log").write_text("\n".join(lines) + "\n")
