"""Once-per-epoch work in a log shorter than an epoch is costed against its epoch (diagnosis/epoch_work.py). The
logs are LABELED SYNTHETIC, written apart from the held-out file (tests/data/eval/heldout53/llama2acc48_*): a
timestamped `Epoch: [e]  [i/N]` log every 10 steps of 0.5 s around an epoch's end, a save between the epochs."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from playbook.diagnosis import diagnose
from playbook.diagnosis.epoch_work import at_boundary
from playbook.knowledge import ids
from playbook.readers import read_paths


def _log(tmp_path, gap_s: float, n: int | None = 1000, name: str = "train.log") -> str:
    """Steps 900..990 of an epoch of `n` (None: a global step counter, no epochs), `gap_s` of save, then 60 steps."""
    t, out = datetime(2024, 5, 1, 10, 0, 0), []

    def line(msg: str) -> None:
        out.append(f"{t:%Y-%m-%d %H:%M:%S},000 INFO {msg}")

    for e, rng in ((0, range(900, 1000, 10)), (1, range(0, 60, 10))):
        if e == 1:
            t += timedelta(seconds=gap_s)
            line("Best model saved!")
        for i in rng:
            t += timedelta(seconds=5)
            line((f"Epoch: [{e}]  [{i}/{n}]" if n else f"step: {e * 1000 + i}")
                 + "  loss: 0.512  time: 0.5000  data: 0.0010")
    p = tmp_path / name
    p.write_text("\n".join(out) + "\n")
    return str(p)


def test_a_save_of_under_five_percent_of_its_epoch_is_the_epochs_work(tmp_path):
    out = diagnose(read_paths([_log(tmp_path, 20)]))  # 20 s against 1000 × 0.5 s: 3.8 % of an epoch
    assert out.verdict["id"] == ids.HEALTHY
    assert "once per 1000-step epoch" in out.verdict["sentence"]


def test_a_save_of_a_quarter_of_its_epoch_stays_a_loss(tmp_path):
    out = diagnose(read_paths([_log(tmp_path, 200)]))  # 200 s: 29 % of an epoch
    assert out.verdict["id"] not in (ids.HEALTHY, ids.INSUFFICIENT_DATA)


def test_without_a_stated_epoch_length_the_excerpt_keeps_its_own_share(tmp_path):
    out = diagnose(read_paths([_log(tmp_path, 20, n=None)]))
    assert out.verdict["id"] not in (ids.HEALTHY, ids.INSUFFICIENT_DATA)
    assert "once per" not in out.verdict["sentence"]


def test_a_boundary_is_where_the_rows_around_a_step_change_epoch():
    logged = np.array([980, 990, 1000, 1010, 1020])
    assert at_boundary(990, logged, 1000) and at_boundary(1000, logged, 1000)
    assert not at_boundary(980, logged, 1000) and not at_boundary(1010, logged, 1000)
