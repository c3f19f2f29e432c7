"""A healthy verdict whose accounting left a large start-up out of the loss says so and is at most "likely"
(answer.blind_spot, START_UP_SHARE): the GPUs idle for the first half of a recording are the job's own cost when the
recording began with it. LABELED SYNTHETIC telemetry."""

from __future__ import annotations

import datetime as dt

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths


def _log(tmp_path, idle_s: int, work_s: int, gpus: int = 2):
    t0 = dt.datetime(2024, 1, 15, 10, 0, 0)
    rows = ["timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]"]
    for s in range(idle_s + work_s):
        for g in range(gpus):
            util, watts = (0, 60) if s < idle_s else (95 + (s + g) % 4, 280)
            rows.append(f"{(t0 + dt.timedelta(seconds=s)):%Y/%m/%d %H:%M:%S}.000, {g}, {util} %, 30000 MiB, "
                        f"{watts}.0 W")
    path = tmp_path / "gpu.csv"
    path.write_text("\n".join(rows) + "\n")
    return diagnose(read_paths([str(path)]))


@pytest.mark.parametrize("idle_s, said", [(60, True), (10, False)])
def test_a_long_idle_start_is_said_and_keeps_healthy_below_confirmed(tmp_path, idle_s, said):
    d = _log(tmp_path, idle_s, 70)
    assert d.verdict["id"] == "healthy"
    assert ("left out as start-up" in d.verdict["sentence"]) == said
    assert (d.verdict["score"] <= 0.75) == said
