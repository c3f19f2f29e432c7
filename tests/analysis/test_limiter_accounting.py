"""The accounting of limiter-named GPUs (analysis.accounting.gpu_time: `clock_limited`) charges each busy poll once:
a power-capped GPU without an SM clock recorded draws little power because of its cap, so its estimated clock cost
(slow_clock) is not also busy-waiting. LABELED SYNTHETIC: nvidia-smi query CSVs written here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.analysis.accounting.gpu_time import gpu_accounting
from playbook.analysis.series import gpu_series
from playbook.diagnosis import diagnose
from playbook.readers import read_paths


def _capped_csv(path, capped_w: float, draw_w: float):
    """4 GPUs at ~98% for 300 s; GPU 3's power limit is `capped_w` (peers 300 W), drawing `draw_w`; no clocks."""
    rng = np.random.default_rng(0)
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W], temperature.gpu, "
            "memory.used [MiB], memory.total [MiB]"]
    for k in range(300):
        for g in range(4):
            lim, p = (capped_w, draw_w) if g == 3 else (300.0, 280.0)
            rows.append(f"2024/01/01 00:{k // 60:02d}:{k % 60:02d}.000, {g}, {97 + rng.integers(0, 3)} %, "
                        f"{p + rng.normal(0, 3):.2f} W, {lim:.2f} W, {60 + g}, 30000 MiB, 81920 MiB")
    path.write_text("\n".join(rows) + "\n")
    return diagnose(read_paths([str(path)]))


def test_a_capped_gpu_without_a_clock_is_charged_once_as_throttled_not_also_as_busy_waiting(tmp_path):
    d = _capped_csv(tmp_path / "smi.csv", capped_w=120.0, draw_w=118.0)
    kinds = {b["kind"]: b for b in d.accounting["buckets"]}
    assert "slow_clock" in kinds and "busy_wait" not in kinds  # its low power is the cap's, not a kernel spinning
    one_gpu = 300.0 / 1200.0
    assert d.accounting["lost_share"] < 0.5 * one_gpu  # the cap's DVFS cost, ~1 - (118/280)^(1/3), not 80% of it
    assert d.verdict["id"] == "throttling"


def test_a_limited_gpu_in_a_series_without_a_clock_column_does_not_crash_the_accounting():
    t = pd.date_range("2024-01-01", periods=60, freq="1s", tz="UTC")
    tele = pd.DataFrame({"time": np.tile(t, 2), "host": "h", "gpu": np.repeat([0, 1], 60),
                         "util_pct": 98.0, "power_w": np.r_[np.full(60, 280.0), np.full(60, 150.0)]})
    series = gpu_series(tele, ("util_pct", "power_w"))
    acc = gpu_accounting(series, None, {"h:1": 0.2})
    clock = [b for b in acc.buckets if b.kind == "slow_clock"]
    assert len(clock) == 1 and clock[0].names == ["h:1"]
    assert clock[0].seconds == np.float64(clock[0].seconds) and 0 < clock[0].seconds <= 0.2 * 60


def _phases_csv(path, slowdown_polls: range, cap_w: float | None = None):
    """4 GPUs at 99% for 600 s: heavy 30 s phases draw at the 700 W limit with the clock at 1650 MHz (the limit's
    trade), light ones 550 W at 1980 MHz. GPU 0 reports hw_slowdown (clock 1200 MHz) in `slowdown_polls`; with
    `cap_w` its limit is lowered to that and its clock held at 1650 MHz throughout."""
    rng = np.random.default_rng(0)
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W], clocks.sm [MHz], "
            "temperature.gpu, clocks_event_reasons.hw_slowdown"]
    for k in range(600):
        heavy = (k // 30) % 2 == 1
        for g in range(4):
            lim = cap_w if (cap_w and g == 0) else 700.0
            p = min((695 if heavy else 550) + rng.normal(0, 3), lim - rng.uniform(0, 3))
            c = 1650 if heavy or (cap_w and g == 0) else 1980
            hw = g == 0 and k in slowdown_polls
            rows.append(f"2024/01/01 00:{k // 60:02d}:{k % 60:02d}.000, {g}, 99 %, {p:.1f} W, {lim:.2f} W, "
                        f"{1200 if hw else c + 15 * rng.integers(-1, 2)} MHz, 65, {'Active' if hw else 'Not Active'}")
    path.write_text("\n".join(rows) + "\n")
    d = diagnose(read_paths([str(path)]))
    return d, sum(b["seconds"] for b in d.accounting["buckets"] if b["kind"] == "slow_clock")


def test_a_throttled_gpu_is_not_charged_the_clock_its_stock_power_limit_trades_away(tmp_path):
    d, secs = _phases_csv(tmp_path / "smi.csv", range(100, 130))
    assert d.verdict["id"] == "throttling"
    # its hw_slowdown costs ~30 polls x (1 - 1200/1995) = 12 GPU-s; the heavy phases' 1650 MHz at the stock limit
    # (every GPU's, ~50 GPU-s more) are no limiter's
    assert 8.0 < secs < 20.0


def test_a_gpu_pinned_at_a_lowered_limit_is_still_charged_its_clock(tmp_path):
    d, secs = _phases_csv(tmp_path / "smi.csv", range(100, 130), cap_w=450.0)
    assert d.verdict["id"] == "throttling"
    assert secs > 40.0  # its light phases at 1650 MHz against the 1980 MHz it would reach: ~300 x 17% = 50 GPU-s
