"""Recorder: writes a run directory that playbook.readers.rundir.read_run reads back; never raises into training."""

from __future__ import annotations

import json
import math
import os
import time

import pytest

from playbook.core.errors import ProbeError
from playbook.model.run_layout import SEGMENT_DIR
from playbook.probes import Recorder, fake_nvml
from playbook.probes.fingerprint import dir_size, fingerprint
from playbook.probes.recorder import Hooks, Rates, merge_run
from playbook.readers import rundir


def train(rec: Recorder, steps: int = 12, wait_s: float = 0.005) -> None:
    def loader():
        for i in range(steps):
            time.sleep(wait_s)
            yield i

    for i, _ in enumerate(rec.timed(loader())):
        with rec.timer.step(i, tokens=64):
            with rec.timer.phase("fwd"):
                time.sleep(0.002)
            with rec.phase("bwd"):
                time.sleep(0.002)
        if i == 5:
            with rec.event_span("checkpoint", step=i):
                time.sleep(0.01)


def test_recorder_run_dir_round_trip(tmp_path, data_dir, monkeypatch):
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "PLAYBOOK_SAMPLER", "PLAYBOOK_RUN_DIR"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("TORCH_SECRET_TOKEN", "hunter2")
    nv = fake_nvml.scenario("gpu_lost_mid_run", gpus=2, lost_gpu=1, lost_after=60)
    run = tmp_path / "run"
    with Recorder(run, host="node7", rates=Rates(sample_hz=50, flush_s=0.1), meta={"variant": "baseline"},
                  hooks=Hooks(nvml_module=nv, sysfs_root=data_dir / "sysfs" / "healthy")) as rec:
        train(rec)
        time.sleep(0.4)  # several flushes: segments are merged at exit
    part = run / f"node7-pid{os.getpid()}"  # no torch rank: the part is named by process
    assert rec.part == part
    assert not (part / SEGMENT_DIR).exists()
    b = rundir.read_run(run)
    assert not b.warnings
    steps = b.steps
    assert sorted(steps[steps["phase"] == "step"]["step"]) == list(range(12))
    assert set(steps["phase"]) == {"data", "fwd", "bwd", "step"}
    assert (steps["host"] == "node7").all() and (steps["rank"] == -1).all()
    tel = b.telemetry
    assert set(tel["gpu"]) == {0, 1} and tel[tel["gpu"] == 0]["util_pct"].notna().sum() >= 5
    assert tel[tel["gpu"] == 1]["util_pct"].isna().any()  # the lost GPU's NaN rows
    kinds = list(b.events["kind"])
    assert "checkpoint" in kinds and "gpu_lost" in kinds
    assert len(b.host) >= 1 and b.host["rss_mib"].gt(10).all()
    import psutil  # swap traffic is a rate of psutil's swapped-in + swapped-out bytes: 0 or more, never missing
    if _works(psutil.swap_memory):
        assert b.host["swap_mib_s"].notna().all() and b.host["swap_mib_s"].ge(0).all()
    ib = __import__("pandas").read_parquet(part / "ib.parquet")
    assert set(ib["device"]) == {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4"}
    meta = json.loads((part / "meta.json").read_text())
    assert meta["variant"] == "baseline" and meta["steps_timed"] == 12 and meta["step_timer"] == "cpu"
    assert meta["probes"]["nvml"]["lost"] == [1] and meta["rows"]["steps"] == len(steps)
    env = b.meta["run"]["env"]
    assert env["env"]["NCCL_DEBUG"] == "INFO" and env["env"]["TORCH_SECRET_TOKEN"] == "<redacted>"
    assert env["nvidia"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and env["nvidia"]["driver"] == "550.54.15"
    assert nv.inits == 0


def test_local_rank_1_times_steps_but_samples_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "8")
    nv = fake_nvml.scenario("healthy", gpus=2)
    with Recorder(tmp_path / "run", host="n", hooks=Hooks(nvml_module=nv)) as rec:
        train(rec, steps=3)
    assert rec.sampler is None and rec.host_probe is None and rec.ib is None
    assert nv.inits == 0 and sum(nv.calls.values()) <= 6  # the fingerprint names the GPUs, nothing samples
    b = rundir.read_run(tmp_path / "run")
    assert set(b.steps["rank"]) == {5} and len(b.telemetry) == 0
    assert b.meta["parts"]["n-rank5"]["world_size"] == 8


def test_no_driver_records_host_only(tmp_path, monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.delenv("PLAYBOOK_SAMPLER", raising=False)
    with Recorder(tmp_path / "run", rates=Rates(host_hz=20), interconnect=False,
                  hooks=Hooks(nvml_module=fake_nvml.scenario("no_driver"))) as rec:
        train(rec, steps=3)
        time.sleep(0.15)
    b = rundir.read_run(tmp_path / "run")
    assert len(b.telemetry) == 0 and len(b.host) >= 2 and len(b.steps) > 0
    said = [w for w in b.meta["parts"][rec.part.name]["warnings"] if "NVML not available" in w]
    assert len(said) == 1 and "LibraryNotFound" in said[0]


def test_never_raises_after_start_even_when_its_folder_vanishes(tmp_path, caplog):
    import shutil

    run = tmp_path / "run"
    with Recorder(run, rates=Rates(flush_s=0.05), nvml=False, interconnect=False) as rec:
        train(rec, steps=2)
        shutil.rmtree(run)
        train(rec, steps=2)
        time.sleep(0.15)
    assert any("failed" in w for w in rec.warnings)


def test_unwritable_run_dir_is_a_probe_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ProbeError, match="cannot write run directory"):
        Recorder(blocker / "run", nvml=False).start()
    with pytest.raises(ProbeError, match="no run directory"):
        Recorder(None)


def test_leftover_segments_are_merged(tmp_path):
    rec = Recorder(tmp_path / "run", nvml=False, host_probe=False, interconnect=False, rates=Rates(flush_s=3600)).start()
    train(rec, steps=3)
    rec.flush()
    train(rec, steps=2)
    rec.timer.close()
    rec.flush()  # a process killed here leaves two segments and no steps.parquet
    segs = sorted((rec.part / SEGMENT_DIR).glob("steps-*.parquet"))
    assert len(segs) == 2 and not (rec.part / "steps.parquet").exists()
    assert merge_run(tmp_path / "run") >= 1
    steps = rundir.read_run(tmp_path / "run").steps
    assert (steps["phase"] == "step").sum() == 5


def test_fingerprint_is_cheap_and_complete(tmp_path, monkeypatch):
    cache = tmp_path / "inductor"
    (cache / "a").mkdir(parents=True)
    (cache / "a" / "k.py").write_bytes(b"x" * 1000)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    fp = fingerprint(command=["train.py", "--lr", "1"], nvml=fake_nvml.scenario("no_driver"))
    json.dumps(fp)
    assert fp["command"] == "train.py --lr 1" and fp["python"].count(".") == 2
    assert fp["torch"]["version"] and fp["cpu"]["count"] >= 1
    assert fp["compile_cache"]["inductor"] == {"path": str(cache), "exists": True, "bytes": 1000, "files": 1,
                                                "truncated": False}
    assert "LibraryNotFound" in fp["nvidia"]["nvml"]
    assert dir_size(str(tmp_path / "missing"))["exists"] is False
    # cheap by construction: the cache walk stops at its deadline (an expired one reads nothing) and says so
    assert dir_size(str(cache), deadline=0.0) == {"path": str(cache), "exists": True, "bytes": 0, "files": 0,
                                                  "truncated": True}


def test_failed_write_is_retried_not_lost(tmp_path, monkeypatch):
    rec = Recorder(tmp_path / "run", nvml=False, host_probe=False, interconnect=False, rates=Rates(flush_s=3600)).start()
    train(rec, steps=3)
    real = __import__("pandas").DataFrame.to_parquet
    monkeypatch.setattr("pandas.DataFrame.to_parquet", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        rec.flush()
    monkeypatch.setattr("pandas.DataFrame.to_parquet", real)
    train(rec, steps=2)
    rec.close()
    steps = rundir.read_run(tmp_path / "run").steps
    assert (steps["phase"] == "step").sum() == 5


@pytest.mark.parametrize("kwargs", [{"sample_hz": math.inf}, {"sample_hz": 0}, {"sample_hz": float("nan")},
                                    {"host_hz": math.inf}, {"flush_s": 0}, {"flush_s": math.inf}])
def test_rates_that_would_burn_a_core_are_refused_in_one_line(tmp_path, kwargs):
    with pytest.raises(ProbeError) as err:
        Recorder(tmp_path / "run", rates=Rates(**kwargs))
    assert "\n" not in str(err.value) and "Recorder" in str(err.value)


def test_a_torch_rank_names_the_part_and_two_rankless_writers_never_share_one(tmp_path, monkeypatch):
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "PLAYBOOK_SAMPLER", "PLAYBOOK_RUN_DIR"):
        monkeypatch.delenv(k, raising=False)
    assert Recorder(tmp_path, host="h", rank=3, nvml=False, host_probe=False).part_name() == "h-rank3"
    assert Recorder(tmp_path, host="h", nvml=False, host_probe=False).part_name() == f"h-pid{os.getpid()}"
    monkeypatch.setenv("PLAYBOOK_SAMPLER", "external")  # a script under `playbook record`: rows say rank 0
    rec = Recorder(tmp_path, host="h", nvml=False, host_probe=False)
    assert rec.rank == 0 and rec.part_name() == f"h-pid{os.getpid()}"


def test_a_rerun_replaces_its_finished_rankless_part_but_never_a_live_one(tmp_path, monkeypatch):
    import subprocess
    import sys

    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "PLAYBOOK_SAMPLER", "PLAYBOOK_RUN_DIR"):
        monkeypatch.delenv(k, raising=False)
    run = tmp_path / "run"
    script = ("import sys\nfrom playbook.probes import Recorder\n"
              "with Recorder(sys.argv[1], host='h', nvml=False, host_probe=False, interconnect=False) as rec:\n"
              "    with rec.timer.step(0):\n        pass\n")
    for _ in range(2):  # an earlier run of the same script, then the rerun
        subprocess.run([sys.executable, "-c", script, str(run)], check=True, timeout=120)
    assert len(list(run.glob("h-pid*"))) == 1 and len(rundir.read_run(run).steps) == 1
    with Recorder(run, host="h", nvml=False, host_probe=False, interconnect=False) as a, \
            Recorder(run, host="h", nvml=False, host_probe=False, interconnect=False) as b:
        assert a.part == b.part  # one process, one part
    live = run / "h-pid1"  # pid 1 is alive: a concurrent recording's part is kept
    live.mkdir()
    (live / "meta.json").write_text(json.dumps({"pid": 1}))
    with Recorder(run, host="h", nvml=False, host_probe=False, interconnect=False):
        pass
    assert live.is_dir()


def test_a_write_that_keeps_failing_marks_the_part_incomplete(tmp_path, monkeypatch):
    import errno

    def full(self, path, **kwargs):
        open(path, "wb").close()  # as a full disk leaves it: a 0-byte file, then ENOSPC
        raise OSError(errno.ENOSPC, "No space left on device")

    rec = Recorder(tmp_path / "run", nvml=False, host_probe=False, interconnect=False, rates=Rates(flush_s=3600)).start()
    train(rec, steps=3)
    monkeypatch.setattr("pandas.DataFrame.to_parquet", full)
    rec.close()
    assert rec.incomplete and "No space left on device" in rec.incomplete[0] and "steps" in rec.incomplete[0]
    assert not list(rec.part.rglob("*.tmp"))  # no 0-byte segments left behind
    bundle = rundir.read_run(tmp_path / "run")
    assert bundle.meta["parts"][rec.part.name]["incomplete"] == rec.incomplete
    assert any("incomplete recording" in w and "steps" in w for w in bundle.warnings)


def _works(fn) -> bool:
    try:
        fn()
        return True
    except Exception:
        return False
