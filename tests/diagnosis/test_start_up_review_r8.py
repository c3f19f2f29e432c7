"""Review r8 of held-out round 62's long start at rest (analysis/accounting/gpu_time._job_edges): past the job's
first quarter, a start whose median poll reads idle is warm-up when the steady work after it lasts as long. A data
loader on a cold cache (the first epoch read from network storage, the next ones from the page cache) leaves the GPU
idle at most polls too, but the polls it does work at read its full level: those are the loop's steps, starved, not a
loader's or a desktop's blips — a loss the user pays for, called out before round 62 and healthy after it. Logs
written here (LABELED SYNTHETIC): nvidia-smi CSV, 1 s polls; and `dmon`-style two GPUs."""

from __future__ import annotations

import pytest

from playbook.analysis.accounting import account
from playbook.diagnosis import diagnose
from playbook.readers import read_file

HEALTHY = ("healthy", "insufficient_data")


def _csv(tmp_path, per_gpu: list[list[int]]):
    rows = [f"2025/03/04 10:{i // 60:02d}:{i % 60:02d}.000,{g},{u[i]}\n"
            for i in range(len(per_gpu[0])) for g, u in enumerate(per_gpu)]
    path = tmp_path / "smi.csv"
    path.write_text("timestamp, index, utilization.gpu [%]\n" + "".join(rows))
    return path


COLD = [0, 0, 0, 97, 0, 0, 0, 0, 98, 0, 0, 0, 0, 96, 0]  # a step at full level every ~5 s: waiting on storage
FED = [95 + i % 5 for i in range(75)]


@pytest.mark.parametrize("gpus", [1, 2])
def test_a_cold_cache_first_epoch_is_no_warm_up(tmp_path, gpus):
    path = _csv(tmp_path, [COLD * 4 + FED] * gpus)  # 60 s starved, then 75 s fed: the start is 44% of the run
    bundle = read_file(path)
    acc = account(bundle)
    assert acc.lost_share > 0.25
    assert diagnose(bundle).verdict["id"] not in HEALTHY


def test_a_loader_with_one_lone_full_poll_stays_a_start(tmp_path):
    start = [0, 3, 0, 0, 12, 0, 0, 99, 0, 2, 0, 0, 25, 0, 0] * 4  # loading: blips, one lone poll at 99%
    start[22] = start[37] = start[52] = 0
    acc = account(read_file(_csv(tmp_path, [start + FED])))
    assert acc.lost_share < 0.05
