"""A clock that varies with the load is not thermal throttling (analysis.gpu_limits.co_movement_p): a heavier phase
draws more power at a lower boost clock and warms the GPU, so the clock's steps co-move with the temperature's
there too; what tells heat from load is the power, which a heat-trimmed clock lowers with it (DVFS) and a heavier
load raises. LABELED SYNTHETIC: nvidia-smi query CSVs written here (no power.limit column: nothing marks the heavy
polls as pinned at the power limit)."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths


def _phases(path, heat: bool, seed: int = 0):
    """4 busy GPUs for 900 s at 1 s, alternating 30 s phases; in the second of each pair the clock sits 12% lower
    and the GPU warms toward 72 °C (58 °C in the first). `heat`: the power falls with the clock (DVFS at the same
    load: heat took the clock); else it rises (a heavier load drew the power that held the clock down)."""
    rng = np.random.default_rng(seed)
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W], clocks.sm [MHz], temperature.gpu"]
    temps = [58.0] * 4
    for k in range(900):
        low = (k // 30) % 2 == 1
        for g in range(4):
            temps[g] += ((72.0 if low else 58.0) - temps[g]) / 8.0
            clock = (1740 if low else 1980) + 15 * rng.integers(-1, 2)
            power = (200 if heat else 298) if low else (250 if heat else 230)
            rows.append(f"2024/01/01 00:{k // 60 % 60:02d}:{k % 60:02d}.000, {g}, 99 %, "
                        f"{power + rng.normal(0, 3):.2f} W, {clock} MHz, {round(temps[g])}")
    path.write_text("\n".join(rows) + "\n")
    return diagnose(read_paths([str(path)]))


@pytest.mark.parametrize("seed", [0, 1])
def test_a_clock_lower_in_heavier_phases_that_draw_more_power_is_not_thermal_throttling(tmp_path, seed):
    d = _phases(tmp_path / "smi.csv", heat=False, seed=seed)
    assert d.verdict["id"] == "healthy"


def test_the_same_clock_steps_with_the_power_falling_too_are_thermal_throttling(tmp_path):
    assert _phases(tmp_path / "smi.csv", heat=True).verdict["id"] == "throttling"
