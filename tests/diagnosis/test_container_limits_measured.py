"""A container's limits (cgroup CPU-quota counters, /dev/shm's size) say what the job may use, not what it cost:
beside GPUs measured at a fed loop's level the limit is no cause; beside step times alone it is at most moderate;
beside GPUs below that level, or alone, as the limits say. Inputs written here, apart from the fixtures."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

THROTTLED = ("$ cat /sys/fs/cgroup/cpu.stat\nusage_usec 600000000\nnr_periods 12000\nnr_throttled 3600\n"
             "throttled_usec 150000000\n")
SMALL_SHM = "$ df -h | grep shm\nshm              64M     0   64M   0% /dev/shm\n"


def _smi(util: float) -> str:
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W], clocks.sm [MHz]"]
    for s in range(900):
        rows += [f"2024/05/01 12:{s // 60:02d}:{s % 60:02d}.000, {g}, {util + (s * 7 + g) % 3:.0f} %, 280.00 W, "
                 f"300.00 W, 1980 MHz" for g in range(2)]
    return "\n".join(rows) + "\n"


def _steps() -> str:
    return "".join(f"[rank0] iteration {i:5d}/ 2000 | elapsed time per iteration (ms): {500 + (i * 13) % 9} | "
                   f"lm loss: {3.0 - i / 1000:.4f}\n" for i in range(10, 1210, 10))


def _diagnose(tmp_path, **files: str):
    paths = []
    for name, text in files.items():
        (tmp_path / f"{name}.txt").write_text(text, encoding="utf-8")
        paths.append(str(tmp_path / f"{name}.txt"))
    return diagnose(read_paths(paths))


@pytest.mark.parametrize("limit", [THROTTLED, SMALL_SHM])
def test_beside_busy_gpus_a_limit_is_no_cause(tmp_path, limit):
    d = _diagnose(tmp_path, gpus=_smi(96), limits=limit)
    assert d.verdict["id"] == "healthy"
    healthy = next(h for h in d.hypotheses if h["id"] == "healthy")
    assert any("yet the GPUs ran at 9" in e for e in healthy["evidence"])


@pytest.mark.parametrize("limit", [THROTTLED, SMALL_SHM])
def test_beside_step_times_alone_a_limit_is_at_most_moderate(tmp_path, limit):
    d = _diagnose(tmp_path, steps=_steps(), limits=limit)
    assert d.verdict["id"] == "healthy"
    cause = next(h for h in d.hypotheses if h["id"] in ("data_starvation", "memory_pressure"))
    assert cause["score"] <= 0.45


def test_beside_idle_gpus_the_throttling_stays_the_cause(tmp_path):
    d = _diagnose(tmp_path, gpus=_smi(35), limits=THROTTLED)
    assert d.hypotheses[0]["id"] == "data_starvation"
    assert any("the GPUs ran at 3" in e for e in d.hypotheses[0]["evidence"])
