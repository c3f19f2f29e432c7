"""The run directory: parts written by separate writers merge on read, including leftovers of killed writers."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from playbook.core.errors import InputError
from playbook.model import run_layout, schema
from playbook.readers.rundir import read_run


def _steps(rank: int, n: int) -> pd.DataFrame:
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    return schema.steps_frame({
        "time": [t0 + pd.Timedelta(seconds=i) for i in range(n)], "host": ["h"] * n, "rank": [rank] * n,
        "step": list(range(n)), "phase": ["step"] * n, "duration_s": [1.0] * n,
    })


def test_parts_merge_and_segments_of_a_killed_writer_are_read(tmp_path):
    run = run_layout.init_run(tmp_path / "run", command="train.py")
    for rank in (0, 1):
        part = run_layout.init_part(run, host="h", rank=rank)
        run_layout.write_table(part, "steps", _steps(rank, 3))
    # rank 1 was killed: two more flush segments never merged into steps.parquet
    seg = run / "h-rank1" / run_layout.SEGMENT_DIR
    seg.mkdir()
    _steps(1, 5).iloc[3:].to_parquet(seg / "steps-000001.parquet")
    bundle = read_run(run)
    assert sorted(bundle.meta["parts"]) == ["h-rank0", "h-rank1"]
    assert bundle.meta["run"]["command"] == "train.py"
    assert bundle.steps.groupby("rank")["step"].max().to_dict() == {0: 2, 1: 4}
    assert (seg / "steps-000001.parquet").exists()  # reading never mutates the run


def test_profiler_traces_in_a_part_are_read(tmp_path, data_dir):
    trace = data_dir / "kineto" / "hta" / "alexnet.json.gz"
    part = run_layout.init_part(tmp_path / "run", host="h", rank=0)
    (part / "traces").mkdir()
    shutil.copy(trace, part / "traces" / trace.name)
    bundle = read_run(tmp_path / "run")
    assert len(bundle.trace) > 0


def test_a_damaged_table_is_a_warning_not_a_crash(tmp_path):
    part = run_layout.init_part(tmp_path / "run", host="h", rank=0)
    (part / "steps.parquet").write_bytes(b"not parquet")
    bundle = read_run(tmp_path / "run")
    assert len(bundle.steps) == 0
    assert any("steps.parquet" in w and "unreadable" in w for w in bundle.warnings)


def test_not_a_run_directory(tmp_path):
    with pytest.raises(InputError, match="not a playbook run directory"):
        read_run(tmp_path)


def test_loose_logs_beside_the_parts_are_read_by_content(tmp_path, data_dir):
    run = run_layout.init_run(tmp_path / "run")
    run_layout.write_table(run_layout.init_part(run, host="h", rank=0), "steps", _steps(0, 3))
    nccl = sorted((data_dir / "nccl").glob("*.log"))[0]
    shutil.copy(nccl, run / "nccl-rank0.log")
    (run / "notes.bin").write_bytes(b"\x00\x01 not telemetry")
    bundle = read_run(run)
    # the part's 3 steps plus the 2 `step N ... it/s` lines interleaved in that NCCL log (every line scanner reads it)
    assert len(bundle.nccl) > 0 and len(bundle.steps) == 3 + 2
    loose = bundle.steps[bundle.steps["source"].astype(str).str.endswith("nccl-rank0.log")]
    assert sorted(loose["step"]) == [5, 42] and set(loose["rank"]) == {0}  # the rank its name gives
    assert any("notes.bin" in w for w in bundle.warnings)
