"""Whole poll windows without a kernel (analysis.idle_windows): a GPU handed work in bursts with seconds of waiting
between them, against a steady low level of launches or syncs spread over every window. LABELED SYNTHETIC: every
series is drawn here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.analysis.idle_windows import idle_windows
from playbook.analysis.series import gpu_series
from playbook.diagnosis import diagnose
from playbook.model import schema


def _bundle(util: list[np.ndarray]) -> schema.Bundle:
    """One poll a second per GPU, holding 9 GB of memory; power following the utilization."""
    rows = {"time": [], "host": [], "gpu": [], "util_pct": [], "power_w": [], "mem_used_mib": []}
    for g, u in enumerate(util):
        n = len(u)
        rows["time"].extend(pd.Timestamp("2026-02-01", tz="UTC") + pd.to_timedelta(np.arange(n), unit="s"))
        rows["host"].extend(["box"] * n)
        rows["gpu"].extend([g] * n)
        rows["util_pct"].extend(u)
        rows["power_w"].extend(60 + 2.2 * np.asarray(u))
        rows["mem_used_mib"].extend([9200.0] * n)
    return schema.Bundle(inputs=["synthetic:idle_windows"],
                         telemetry=schema.telemetry_frame({**rows, "source": "idle_windows"}, interval_s=1.0))


def _bursts(n: int, seed: int, every: float = 9.0) -> np.ndarray:
    """0% polls, and every ~`every` s one poll holding a short burst of work (10-30%)."""
    rng = np.random.default_rng(seed)
    u = np.zeros(n)
    t = 2.0
    while t < n:
        u[int(t)] = rng.uniform(10, 30)
        t += rng.uniform(every - 1, every + 1)
    return u


def _steady(n: int, seed: int, level: float) -> np.ndarray:
    """A steady low level spread over every window (launches or syncs every few ms): never a whole empty poll."""
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(level, 1.0, n), 1, 100).round()


def test_bursts_between_empty_windows_are_found_and_a_steady_level_is_not():
    b = _bundle([_bursts(400, 1), _bursts(400, 2)])
    found = idle_windows(gpu_series(b.telemetry, ("util_pct",)))
    assert found is not None and found["zero_share"] > 0.8 and found["bursts"] >= 30 and found["gap_s"] > 5
    steady = _bundle([_steady(400, 3, level=3.0)])
    assert idle_windows(gpu_series(steady.telemetry, ("util_pct",))) is None
    idle_throughout = _bundle([np.zeros(400)])  # no work at all: a hang or an unused GPU, not bursts
    assert idle_windows(gpu_series(idle_throughout.telemetry, ("util_pct",))) is None
    one_gpu_busy = _bundle([_bursts(400, 4), _steady(400, 5, level=40.0)])  # every GPU must show it
    assert idle_windows(gpu_series(one_gpu_busy.telemetry, ("util_pct",))) is None


def test_a_gpu_waiting_seconds_between_bursts_reads_as_input_starvation():
    d = diagnose(_bundle([_bursts(600, 7)]))
    top = d.hypotheses[0]
    assert top["id"] == "data_starvation", [(h["id"], h["score"]) for h in d.hypotheses]
    assert "whole sampling windows without a kernel" in " ".join(top["evidence"])
    assert d.accounting["lost_share"] > 0.8


def test_a_steady_low_level_without_empty_windows_stays_unexplained():
    d = diagnose(_bundle([_steady(600, 8, level=30.0)]))
    assert d.hypotheses[0]["id"] != "data_starvation"


def test_blips_at_the_idle_level_are_no_bursts_of_work():
    """Two idle GPUs whose 0% polls are broken by 1-3% blips (a monitoring query, a notebook's tensor; review of
    heldout24): no bursts of work, no input starvation."""
    rng = np.random.default_rng(8)
    blips = [np.where(rng.random(400) < 0.05, rng.integers(1, 4, 400), 0).astype(float) for _ in range(2)]
    assert idle_windows(gpu_series(_bundle(blips).telemetry, ("util_pct",))) is None
    assert diagnose(_bundle(blips)).hypotheses[0]["id"] != "data_starvation"


def test_polls_further_apart_than_a_reading_claim_no_run_lengths():
    """At 10 s polls a 0% reading covers its last second only: the share still counts, the runs are not claimed."""
    b = _bundle([_bursts(400, 1), _bursts(400, 2)])
    t = b.telemetry.copy()
    t["time"] = t["time"].min() + (t["time"] - t["time"].min()) * 10
    found = idle_windows(gpu_series(schema.telemetry_frame({c: t[c].to_numpy() for c in t.columns}), ("util_pct",)))
    assert found is not None and np.isnan(found["gap_s"])
