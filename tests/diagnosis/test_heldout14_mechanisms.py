"""The mechanisms the fourteenth held-out round (tests/data/eval/heldout14/SOURCES.md) asked for in the analysis, on
inputs written here (LABELED SYNTHETIC), apart from the round's own files:

- a GPU idle throughout that holds the working GPUs' memory is a waiting rank of the job, not another job's GPU
  (analysis.job_members.holds_working_memory);
- a busy clock held down while the GPU sits at its top temperature is thermal throttling, though it fell once rather
  than along the warming (analysis.gpu_limits.thermal_clock_plateau) — and without a utilization column, judged on
  the polls each GPU draws working power (diagnosis.analyzers.gpu_telemetry._clocks_at_work).
"""

from __future__ import annotations

import numpy as np

from playbook.model import schema
from playbook.readers import read_paths


def test_an_idle_gpu_holding_the_working_gpus_memory_is_in_the_job(tmp_path):
    """A GPU idle throughout is left out as not this job's only when it also holds far less memory than the working
    GPUs (analysis.job_members.holds_working_memory): an idle GPU holding what they hold is a rank that waits."""
    from playbook.analysis.gpus import COLUMNS, job_gpus
    from playbook.analysis.series import gpu_series

    lines = ["timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]"]
    for k in range(30):
        for g, (util, mib, watts) in enumerate(((91, 1510, 210), (88, 1498, 205), (0, 1486, 60), (0, 310, 25))):
            lines.append(f"2026/03/02 08:00:{k:02d}.{g:03d}, {g}, {util} %, {mib} MiB, {watts} W")
    path = tmp_path / "smi.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tele = read_paths([path]).telemetry
    series = gpu_series(tele, tuple(c for c in COLUMNS if c in tele))
    kept, left_out = job_gpus(series)
    assert left_out == [schema.gpu_id("smi", 3)]
    assert len(kept) == 3


def _warming_log(path, utilization: bool = True) -> None:
    """Two busy GPUs warm with their clock at its boost, then sit at their top temperature with the clock held
    ~15-25% lower, each at its own moment (an nvidia-smi CSV at 1 Hz, 7 min)."""
    rng = np.random.default_rng(3)
    lines = ["timestamp, index, " + ("utilization.gpu [%], " if utilization else "") +
             "clocks.current.sm [MHz], power.draw [W], power.limit [W], temperature.gpu"]
    onset = (150, 210)
    for k in range(420):
        for g in range(2):
            hot = k >= onset[g]
            temp = 83 + int(rng.integers(0, 2)) if hot else int(48 + 35 * k / onset[g])
            mhz = int(rng.choice([1515, 1560, 1605, 1650])) if hot else 1980
            watts = rng.uniform(190, 215) if hot else rng.uniform(265, 285)
            util = f"{int(rng.integers(97, 101))} %, " if utilization else ""
            lines.append(f"2026/03/02 09:{k // 60:02d}:{k % 60:02d}.{g:03d}, {g}, {util}{mhz} MHz, {watts:.2f} W, "
                         "350.00 W, " + str(temp))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_without_utilization_the_clocks_are_judged_at_working_power(tmp_path):
    from playbook.diagnosis import diagnose

    _warming_log(tmp_path / "warm.csv", utilization=False)
    result = diagnose(read_paths([tmp_path / "warm.csv"]))
    assert result.verdict["id"] == "throttling"
    # idle GPUs without utilization stay unknown: nothing is called throttled (their clock never falls at work)
    lines = ["timestamp, index, clocks.current.sm [MHz], power.draw [W], temperature.gpu"]
    lines += [f"2026/03/02 09:{k // 60:02d}:{k % 60:02d}.{g:03d}, {g}, 210 MHz, {20 + k % 3} W, {31 + g}"
              for k in range(300) for g in range(2)]
    (tmp_path / "idle.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert diagnose(read_paths([tmp_path / "idle.csv"])).verdict["id"] == "insufficient_data"


def test_a_clock_held_down_at_the_top_temperature_is_thermal_throttling(tmp_path):
    """Two busy GPUs warm with their clock at its boost, then sit at their top temperature with the clock held
    ~15-25% lower (each at its own moment): one fall, which the rank test of clock against temperature reads as one
    trend; the plateau test (analysis.gpu_limits.thermal_clock_plateau) names it. Written here, not a held-out file."""
    from playbook.diagnosis import diagnose

    path = tmp_path / "warm.csv"
    _warming_log(path)
    assert diagnose(read_paths([path])).verdict["id"] == "throttling"
