"""Turn-taking (analysis.oscillation.turns): GPUs busy one at a time — stages of one model run in sequence — against
GPUs on schedules of their own and GPUs dropping together. LABELED SYNTHETIC: every series is drawn here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.analysis.oscillation.synchrony import correlation_bins
from playbook.analysis.oscillation.turns import MAX_OVERLAP_RATIO, turn_taking
from playbook.diagnosis import diagnose
from playbook.model import schema


def _turns_grid(gpus: int, polls: int, seed: int, straddle: float = 0.0) -> np.ndarray:
    """States (1 busy, 0 idle) of `gpus` stages run in sequence, 2-4 polls each; a hand-off poll reads the next
    stage busy too with probability `straddle` (the poll's window covers the end of one and the start of the other)."""
    rng = np.random.default_rng(seed)
    grid = np.zeros((gpus, polls), dtype=np.int8)
    t, g = 0, 0
    while t < polls:
        burst = int(rng.integers(2, 5))
        grid[g, t:t + burst] = 1
        t += burst
        nxt = (g + 1) % gpus
        if t < polls and rng.random() < straddle:
            grid[nxt, t - 1] = 1
        g = nxt
    return grid


def _telegraph(gpus: int, polls: int, seed: int, duty: float) -> np.ndarray:
    """Independent random telegraph states: bursts and gaps of geometric lengths, `duty` of the time busy."""
    rng = np.random.default_rng(seed)
    grid = np.zeros((gpus, polls), dtype=np.int8)
    for g in range(gpus):
        t, busy = int(rng.integers(0, 5)), True
        while t < polls:
            mean = 3.0 * duty / (1 - duty) if busy else 3.0
            n = 1 + int(rng.geometric(1 / mean))
            grid[g, t:t + n] = int(busy)
            t, busy = t + n, not busy
    return grid


def test_stages_in_sequence_take_turns_even_with_straddling_polls():
    for gpus in (2, 4):
        for straddle in (0.0, 0.25):
            grid = _turns_grid(gpus, 400, seed=gpus, straddle=straddle)
            found = turn_taking(grid, correlation_bins(grid))
            assert found is not None and found["p_value"] < 1e-6
            assert found["overlap"] < 0.35 * found["expected"]  # the comment on MAX_OVERLAP_RATIO


def test_independent_schedules_overlap_as_chance_predicts_and_are_not_turns():
    ratios = []
    for seed in range(8):
        grid = _telegraph(3, 600, seed, duty=0.4)
        assert turn_taking(grid, correlation_bins(grid)) is None
        high = grid == 1
        duty = high.mean(1)
        none = np.prod(1 - duty)
        expected = 1 - none - none * np.sum(duty / (1 - duty))
        ratios.append((high.sum(0) >= 2).mean() / expected)
    assert 0.8 < min(ratios) and max(ratios) < 1.2 and MAX_OVERLAP_RATIO < min(ratios)


def test_gpus_dropping_together_are_not_turns():
    grid = np.tile(_telegraph(1, 600, seed=3, duty=0.6), (4, 1))
    assert turn_taking(grid, correlation_bins(grid)) is None


def _bundle(grid: np.ndarray) -> schema.Bundle:
    """Telemetry of the grid's GPUs polled once a second: busy 88-97 % at 250-300 W, idle 0-3 % at 60 W."""
    rng = np.random.default_rng(7)
    gpus, polls = grid.shape
    t = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(np.arange(polls), unit="s")
    rows = {"time": [], "host": [], "gpu": [], "util_pct": [], "power_w": []}
    for g in range(gpus):
        busy = grid[g] == 1
        rows["time"].extend(t)
        rows["host"].extend(["vm"] * polls)
        rows["gpu"].extend([g] * polls)
        rows["util_pct"].extend(np.where(busy, rng.uniform(88, 97, polls), rng.uniform(0, 3, polls)))
        rows["power_w"].extend(np.where(busy, rng.uniform(250, 300, polls), 60.0))
    return schema.Bundle(inputs=["synthetic:turns"],
                         telemetry=schema.telemetry_frame({**rows, "source": "turns"}, interval_s=1.0))


def test_three_gpus_taking_turns_read_as_stages_waiting_on_each_other():
    d = diagnose(_bundle(_turns_grid(3, 300, seed=11)))
    top = d.hypotheses[0]
    assert top["id"] == "pipeline_imbalance", [(h["id"], h["score"]) for h in d.hypotheses]
    assert "take turns" in " ".join(top["evidence"])
    assert d.accounting["lost_share"] > 0.5


def test_two_unequal_gpus_taking_turns_read_first_as_replicas_waiting_for_the_slower():
    """The same turns on a GTX 1080 Ti and a GTX 1080 (Bundle.meta GPU_MODELS): data-parallel replicas of unequal
    speed come first (collective_straggler), stages of one model second; matched names keep pipeline_imbalance."""
    grid = _turns_grid(2, 300, seed=5)
    for names, first, second in ((("GeForce GTX 1080 Ti", "GeForce GTX 1080"), "collective_straggler",
                                  "pipeline_imbalance"),
                                 (("Tesla V100", "Tesla V100"), "pipeline_imbalance", None)):
        bundle = _bundle(grid)
        bundle.meta[schema.GPU_MODELS] = {schema.gpu_id("vm", g): name for g, name in enumerate(names)}
        ids = [h["id"] for h in diagnose(bundle).hypotheses]
        assert ids[0] == first and (second is None or second in ids[1:3]), ids
