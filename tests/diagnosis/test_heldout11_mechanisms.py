"""The mechanism the eleventh held-out round (tests/data/eval/heldout11/SOURCES.md) asked for, on inputs written here
(LABELED SYNTHETIC), apart from the round's own files: a GPU whose shortfall against its peers comes in stretches
(each GPU dipping on its own schedule for several polls at a time) loses that time — it is not the counter's jitter,
which is independent from poll to poll. The control has the very same readings per GPU in shuffled order."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from playbook.analysis.accounting.gpu_time import _sustained
from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths

HEADER = "timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W]"
N_GPU, N_POLLS, DT = 6, 600, 0.1  # six GPUs polled every 100 ms for a minute


def _stretches(seed: int) -> np.ndarray:
    """G × polls utilization: busy at ~97% with dips to 60-85% lasting 4-6 polls, each GPU at its own times, ~15%
    of the polls — each rank's loader running dry on its own schedule."""
    rng = np.random.default_rng(seed)
    util = 97.0 + rng.normal(0, 1.5, (N_GPU, N_POLLS))
    for g in range(N_GPU):
        k = int(rng.integers(0, 8))
        while k < N_POLLS:
            n = int(rng.integers(4, 7))
            util[g, k:k + n] = rng.uniform(60, 85)
            k += n + int(rng.integers(20, 40))
    return np.clip(np.round(util), 0, 100)


def _shuffled(util: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(row) for row in util])


def _diagnose(path, util: np.ndarray):
    t0, rows = datetime(2026, 6, 1, 9, 0, 0), [HEADER]
    for k in range(N_POLLS):
        for g in range(N_GPU):
            t = t0 + timedelta(seconds=k * DT, milliseconds=3 * g)
            rows.append(f"{t:%Y/%m/%d %H:%M:%S}.{t.microsecond // 1000:03d}, {g}, {int(util[g, k])} %, "
                        f"{120 + 1.8 * util[g, k]:.2f} W, 300.00 W")
    path.write_text("\n".join(rows) + "\n")
    return diagnose(read_paths([str(path)]))


def test_dips_in_stretches_on_each_gpus_own_schedule_are_lost_time_not_jitter(tmp_path):
    util = _stretches(11)
    stretched = _diagnose(tmp_path / "stretches.csv", util)
    drops = {b["kind"]: b for b in stretched.accounting["buckets"]}.get("gpu_drops")
    assert stretched.verdict["id"] != ids.HEALTHY
    assert drops is not None and drops["share"] >= 0.015  # ~15% of polls ~25 points short
    # the same readings of each GPU in random order: independent from poll to poll, the counter's jitter
    jitter = _diagnose(tmp_path / "shuffled.csv", _shuffled(util, 12))
    assert jitter.verdict["id"] == ids.HEALTHY


def test_sustained_is_a_runs_test_on_the_shortfall():
    ok = np.ones((N_GPU, N_POLLS), dtype=bool)
    util = _stretches(13)
    assert _sustained(util, np.median(util, axis=0), ok).all()
    mixed = _shuffled(util, 14)
    assert not _sustained(mixed, np.median(mixed, axis=0), ok).any()
    # runs of 99s on a GPU at 99-100%: under MIN_FLOOR short of its peers, not called
    near = np.full((N_GPU, N_POLLS), 100.0)
    near[0, (np.arange(N_POLLS) // 20) % 2 == 1] = 99.0
    assert not _sustained(near, np.median(near, axis=0), ok)[0]
