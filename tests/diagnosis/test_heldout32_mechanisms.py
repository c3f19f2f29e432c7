"""Mechanisms found short by the thirty-second held-out round (tests/data/eval/heldout32/SOURCES.md), tested on
telemetry written here: a GPU whose utilization wanders in minute-long drops below its busy level loses time the
accounting measures (its fleet_drops bucket), so "not enough data" — a reason that stands only on a steady level
without a swing or drop — does not lead; the verdict is the measured loss with no named cause."""

from __future__ import annotations

import numpy as np

from playbook.diagnosis import diagnose
from playbook.readers import read_paths


def _polls(tmp_path, util):
    path = tmp_path / "wander.csv"
    rows = [f"2025/03/01 10:{i // 60:02d}:{i % 60:02d}.000, {int(u)} %, 10586 MiB"
            for i, u in enumerate(util)]
    path.write_text("timestamp, utilization.gpu [%], memory.used [MiB]\n" + "\n".join(rows) + "\n")
    return diagnose(read_paths([str(path)], interval_s=1.0))


def _wander(n: int, seed: int) -> np.ndarray:
    """Utilization 25-96% drawn afresh each poll (no period, no two-level swing): a loop that keeps stalling."""
    return np.random.default_rng(seed).uniform(25, 96, n).round()


def test_a_wandering_level_is_a_measured_loss_not_missing_data(tmp_path):
    for seed in (0, 1, 2):
        r = _polls(tmp_path, _wander(90, seed))
        assert r.verdict["id"] == "unexplained_slowdown", (seed, r.verdict["id"])


def test_a_steady_busy_level_stays_healthy(tmp_path):
    r = _polls(tmp_path, 95 + np.random.default_rng(3).integers(0, 4, 90))
    assert r.verdict["id"] == "healthy"
