"""Pipeline bubbles (staggered swings) and a shared stall, as the fake NVML scenarios `pipeline` and `data_stall`
fake them (playbook/probes/fake_nvml.py), sampled on a simulated clock so that no test depends on timing.
LABELED SYNTHETIC."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.analysis.oscillation.synchrony import staggered
from playbook.diagnosis import diagnose
from playbook.model import schema


def _telemetry(kind: str, gpus: int = 8, period: float = 6.0, seconds: float = 120.0, dt: float = 0.25,
               seed: int = 0) -> schema.Bundle:
    rng = np.random.default_rng(seed)
    t = np.arange(0, seconds, dt)
    rows = {"time": [], "host": [], "gpu": [], "util_pct": [], "power_w": []}
    for g in range(gpus):
        if kind == "pipeline":  # each stage idles a quarter of the period, stage k lagging k/gpus of a period
            phase = ((t / period) - g / gpus) % 1.0
            busy = phase >= 0.25
        else:  # data_stall: every GPU idles together 40% of each period
            busy = (t / period) % 1.0 < 0.6
        util = np.where(busy, 98.0, 0.0) + rng.normal(0, 1, len(t)).clip(-1, 1) * busy
        for k, v in zip(rows, (pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(t, unit="s"), "vm", g,
                               util, np.where(busy, 300.0, 60.0)), strict=True):
            rows[k].extend(v if np.ndim(v) else [v] * len(t))
    return schema.Bundle(inputs=[f"synthetic:{kind}"], telemetry=schema.telemetry_frame({**rows, "source": kind},
                                                                                        interval_s=dt))


def test_staggered_phases_in_gpu_order_are_found_and_shuffled_ones_are_not():
    period = 6.0
    dips = [np.array([[k * period + g * period / 8, k * period + g * period / 8 + 1.5] for k in range(10)])
            for g in range(8)]
    found = staggered(dips, [period] * 8)
    assert found is not None and abs(found["step"]) == 1 / 8 and found["p_value"] < 0.01
    order = np.random.default_rng(1).permutation(8)
    assert staggered([dips[i] for i in order], [period] * 8) is None  # the same phases, out of GPU order
    same = [dips[0]] * 8  # all at one phase: synchronized, not staggered
    assert staggered(same, [period] * 8) is None


def test_the_fake_pipeline_reads_as_pipeline_bubbles():
    d = diagnose(_telemetry("pipeline"))
    assert d.hypotheses[0]["id"] == "pipeline_imbalance", [(h["id"], h["score"]) for h in d.hypotheses]
    assert "pipeline bubbles" in " ".join(d.hypotheses[0]["evidence"])
    assert d.accounting["lost_share"] > 0.15


def test_the_fake_data_stall_names_both_readings_and_what_separates_them():
    d = diagnose(_telemetry("data_stall"))
    ids = [h["id"] for h in d.hypotheses]
    assert ids[0] in ("periodic_stall", "data_starvation") and d.accounting["lost_share"] > 0.3
    other = "data_starvation" if ids[0] == "periodic_stall" else "periodic_stall"
    s = d.verdict["sentence"]
    assert d.verdict["confidence"] != "confirmed" and f"or {other}" in s and "to tell them apart" in s
