"""The mechanisms the ninth held-out round (tests/data/eval/heldout9/SOURCES.md) asked for, each on inputs written
here (LABELED SYNTHETIC), apart from the round's own files: ranks of a multi-GPU job that spin at full utilization
from the first poll are measured against the power limit, not their own (spinning) draw; a shared periodic drop
that holds the GPUs low for most of each cycle reads as input starvation before a save every N steps."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths

HEADER = "timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W]"


def _query_csv(path, n_gpu: int, n_polls: int, sample):
    """`nvidia-smi --query-gpu=... --format=csv -l 1` rows; sample(k, g) -> (util %, power W)."""
    t0, rows = datetime(2026, 5, 1, 12, 0, 0), [HEADER]
    for k in range(n_polls):
        for g in range(n_gpu):
            util, watts = sample(k, g)
            t = t0 + timedelta(seconds=k, milliseconds=3 * g)
            rows.append(f"{t:%Y/%m/%d %H:%M:%S}.{t.microsecond // 1000:03d}, {g}, {util} %, {watts:.2f} W, 700.00 W")
    path.write_text("\n".join(rows) + "\n")
    return diagnose(read_paths([str(path)]))


def _buckets(d):
    return {b["kind"]: b for b in d.accounting["buckets"]}


def test_ranks_spinning_from_the_first_poll_are_measured_against_the_power_limit(tmp_path):
    rng = np.random.default_rng(91)
    # 4 H100s (700 W) at 100% drawing 120-140 W throughout: never seen at work, so their own draw is no reference
    spin = _query_csv(tmp_path / "spin.csv", 4, 180, lambda k, g: (100, rng.uniform(120, 140)))
    assert "busy_wait" in _buckets(spin) and spin.verdict["id"] != ids.HEALTHY
    # the same GPUs at 100% drawing 520-600 W are at work: nothing to charge
    work = _query_csv(tmp_path / "work.csv", 4, 180, lambda k, g: (100, rng.uniform(520, 600)))
    assert "busy_wait" not in _buckets(work) and work.verdict["id"] == ids.HEALTHY
    # one GPU alone has no collective to spin in: the limit floor is a multi-GPU reading only
    one = _query_csv(tmp_path / "one.csv", 1, 180, lambda k, g: (100, rng.uniform(120, 140)))
    assert "busy_wait" not in _buckets(one)


def _square(duty: float, period: int = 40):
    rng = np.random.default_rng(92)

    def sample(k, g):
        high = (k % period) < duty * period
        return (int(rng.integers(95, 100)), rng.uniform(560, 620)) if high else (0, rng.uniform(70, 80))
    return sample


def test_gpus_low_for_most_of_each_cycle_read_as_starvation_before_a_periodic_save(tmp_path):
    mostly_low = _query_csv(tmp_path / "low.csv", 4, 400, _square(duty=0.25))
    assert mostly_low.verdict["id"] == ids.DATA_STARVATION
    mostly_high = _query_csv(tmp_path / "high.csv", 4, 400, _square(duty=0.8))
    assert mostly_high.verdict["id"] == ids.PERIODIC_STALL


def test_every_gpu_spinning_with_none_late_names_the_transport(tmp_path):
    rng = np.random.default_rng(93)
    spin = _query_csv(tmp_path / "all.csv", 4, 180, lambda k, g: (100, rng.uniform(120, 140)))
    assert _buckets(spin)["busy_wait"]["cause"] == ids.LINK_DEGRADATION
    assert spin.verdict["id"] == ids.LINK_DEGRADATION
    assert spin.hypotheses[0]["score"] <= 0.5  # read from the bucket's shape, not measured: not "confirmed"

    def one_idle(k, g):  # GPU 3 idles while the others spin: they wait for it, not for the transport
        return (0, rng.uniform(60, 70)) if g == 3 else (100, rng.uniform(120, 140))
    late = _query_csv(tmp_path / "late.csv", 4, 180, one_idle)
    assert _buckets(late)["busy_wait"]["cause"] != ids.LINK_DEGRADATION


# wilicc/gpu-burn#114's rows (driver 550, with the MIG M. line), pasted twice without banner or column headers
_ROWS_550 = """\
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:19:00.0 Off |                    0 |
| N/A   35C    P0            134W /  700W |   72790MiB /  81559MiB |      2%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+
|   1  NVIDIA H100 80GB HBM3          On  |   00000000:3B:00.0 Off |                    0 |
| N/A   30C    P0            109W /  700W |   72790MiB /  81559MiB |      0%      Default |
|                                         |                        |             Disabled |
"""


def test_nvidia_smi_rows_pasted_without_banner_are_read_by_their_units(tmp_path):
    path = tmp_path / "rows.txt"
    again = _ROWS_550.replace("      2%", "     97%").split("\n")[:5]  # GPU 0 at 97%, then GPU 1's row ...
    again.append("| N/A   31C    P0            250W /  700W |   72790MiB /  81559MiB |     98%  ")  # ... cut
    path.write_text(_ROWS_550 + "\n".join(again) + "\n")
    t = read_paths([str(path)]).telemetry
    assert len(t) == 4 and sorted(t["gpu"].astype(int).tolist()) == [0, 0, 1, 1]  # two snapshots of two GPUs
    first = t.sort_values("time").iloc[0]
    assert first["util_pct"] == 2 and first["power_w"] == 134 and first["power_limit_w"] == 700
    assert sorted(t["util_pct"].tolist()) == [0, 2, 97, 98]  # the second paste's last row cut after its util cell
