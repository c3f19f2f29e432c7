"""A wide step table's phase columns (`data_time`, `fwd_ms`, `allreduce_s`) are phases of its steps, read by the
step grammar's vocabulary; a synchronous 4-rank table whose rank 2 computes at 0.67x its peers' speed while they
wait in the all-reduce was "Healthy" when only the step column was read. LABELED SYNTHETIC inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths


def _rows(steps: int = 200, seed: int = 1):
    rng = np.random.default_rng(seed)
    for s in range(steps):
        compute = 0.4 * (1 + 0.03 * rng.standard_normal(4))
        compute[2] /= 0.67  # the straggler
        step = compute.max() + 0.05  # every rank leaves the all-reduce together
        for r in range(4):
            yield {"step": s, "rank": r, "step_time_s": round(step, 4), "data_time": 0.002,
                   "fwd_ms": round(400 * compute[r] / 0.4 / 2, 2), "allreduce_s": round(step - compute[r], 4)}


def _write(path, fmt: str) -> None:
    rows = list(_rows())
    with open(path, "w") as fh:
        if fmt == "csv":
            fh.write(",".join(rows[0]) + "\n")
            fh.writelines(",".join(str(v) for v in row.values()) + "\n" for row in rows)
        else:
            fh.writelines(json.dumps(row) + "\n" for row in rows)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_phase_columns_are_phases(tmp_path, fmt):
    path = tmp_path / f"steps.{fmt}"
    _write(path, fmt)
    steps = read_paths([path]).steps
    per = steps.groupby("phase")["duration_s"].median()
    assert set(per.index) == {"step", "data", "fwd", "collective"}, per
    assert per["data"] == pytest.approx(0.002) and 0.15 < per["fwd"] < 0.35  # fwd_ms read as milliseconds
    assert (steps.groupby("phase").size() == 800).all()


def test_the_ranks_waiting_in_the_all_reduce_name_the_straggler(tmp_path):
    path = tmp_path / "steps.csv"
    _write(path, "csv")
    d = diagnose(read_paths([path]))
    assert d.verdict["id"] == "collective_straggler", d.verdict["sentence"]
    assert "rank 2" in d.verdict["sentence"]


def test_the_straggler_loss_counts_its_own_excess_too(tmp_path):
    """What-if: rank 2 at its peers' speed shortens every rank's step by its excess, so the loss is the others'
    waits plus the late rank's own time beyond its peers' (the waits alone read 22%)."""
    rng = np.random.default_rng(1)
    wall = fixed = 0.0
    for _ in range(200):  # the generator's own figures, as _rows draws them
        compute = 0.4 * (1 + 0.03 * rng.standard_normal(4))
        fixed += compute.max() + 0.05
        compute[2] /= 0.67
        wall += round(compute.max() + 0.05, 4)
    truth = 1 - fixed / wall  # 0.284
    path = tmp_path / "steps.csv"
    _write(path, "csv")
    d = diagnose(read_paths([path]))
    assert d.verdict["id"] == "collective_straggler"
    assert d.verdict["lost_share"] == pytest.approx(truth, abs=0.02), (d.verdict["lost_share"], truth)


def test_a_long_table_keeps_its_own_phase_column(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("step,rank,phase,duration_s,data_time\n" + "".join(
        f"{s},0,{p},{d},0.5\n" for s in range(20) for p, d in (("step", 1.0), ("data", 0.1))))
    steps = read_paths([path]).steps
    assert sorted(steps["phase"].unique()) == ["data", "step"] and len(steps) == 40
    assert steps.loc[steps["phase"] == "data", "duration_s"].eq(0.1).all()
