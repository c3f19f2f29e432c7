"""torch.distributed plumbing (playbook.labs.workloads.dist): spawned ranks, failures, torchrun, --help runbooks."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from playbook.analysis.stats import paired_bootstrap
from playbook.core.errors import WorkloadError
from playbook.labs.workloads import collective_stragglers as stragglers
from playbook.labs.workloads import comm_overlap, padding_packing, pipeline_imbalance
from playbook.labs.workloads import dist as D
from playbook.readers import rundir


def _allreduce_rank(scale: float):
    import torch
    import torch.distributed as dist

    ctx = D.init_from_env("cpu")
    t = torch.full((3,), float(ctx.rank + 1) * scale)
    dist.all_reduce(t)
    out = (ctx.rank, ctx.world_size, ctx.backend, t.tolist(), os.environ["LOCAL_RANK"])
    D.shutdown()
    return out


def _failing_rank():
    import torch.distributed as dist

    ctx = D.init_from_env("cpu")
    if ctx.rank == 1:
        raise ValueError("rank one is broken")
    dist.barrier()  # rank 0 would wait forever: spawn must stop it


def test_spawn_runs_a_gloo_group_and_returns_each_ranks_value():
    out = D.spawn(_allreduce_rank, 3, 2.0)
    assert [o[0] for o in out] == [0, 1, 2]
    assert all(o[1] == 3 and o[2] == "gloo" and o[3] == [12.0] * 3 for o in out)
    assert [o[4] for o in out] == ["0", "1", "2"]


def test_a_failing_rank_stops_all_and_names_itself(capfd):
    with pytest.raises(WorkloadError, match="rank 1 failed: ValueError: rank one is broken"):
        D.spawn(_failing_rank, 2, timeout_s=60)
    assert "Traceback" in capfd.readouterr().err


def test_init_outside_a_launcher_is_a_one_line_error(monkeypatch):
    for key in D.ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    assert not D.launched_by_torchrun()
    with pytest.raises(WorkloadError, match="not launched by torchrun"):
        D.init_from_env("cpu")
    with pytest.raises(WorkloadError):
        D.spawn(_allreduce_rank, 0, 1.0)


@pytest.mark.slow
def test_torchrun_launches_the_same_code(tmp_path):
    run_dir = tmp_path / "strag"
    proc = D.run_torchrun("playbook.labs.workloads.collective_stragglers", 2, [
        "--run-dir", str(run_dir), "--variants", "uniform,sw_fault", "--steps", "4", "--repeats", "1",
        "--batch", "2"], timeout_s=240)
    assert "backend gloo, world size 2" in proc.stdout
    bundle = rundir.read_run(run_dir / "sw_fault-r0")
    assert sorted(bundle.steps["rank"].unique()) == [0, 1]
    assert {"fwd", "bwd", "collective", "optimizer", "step"} <= set(bundle.steps["phase"])
    assert (bundle.steps.loc[bundle.steps["phase"] == "step", "step"].nunique()) == 4


@pytest.mark.parametrize("module", [stragglers, padding_packing, comm_overlap, pipeline_imbalance])
def test_every_lab_has_a_runbook_help(module, capsys):
    with pytest.raises(SystemExit) as exc:
        module.main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "examples:" in text and "python -m playbook.labs.workloads." in text
    assert ("torchrun --standalone --nproc-per-node" in text) == (module is not pipeline_imbalance)
    assert module.__doc__ and "How to read the result" in module.__doc__


def test_bad_settings_are_workload_errors():
    with pytest.raises(WorkloadError, match="unknown variant"):
        stragglers.StragglerConfig(variants=("nope",))
    with pytest.raises(WorkloadError, match="hw_fix excludes"):
        stragglers.StragglerConfig(variants=("hw_fix",))
    with pytest.raises(WorkloadError, match="row_len"):
        padding_packing.PackingConfig(row_len=64, max_len=128)
    with pytest.raises(WorkloadError, match="slow consumer"):
        pipeline_imbalance.PipelineConfig(consumers=2, slow_consumer=2)
    with pytest.raises(WorkloadError, match="compute_only"):
        comm_overlap.OverlapConfig(variants=("ddp_buckets",))


def test_synthetic_corpus_and_lengths():
    lengths = D.long_tailed_lengths(5000, mean=64, sigma=1.0, min_len=4, max_len=512, seed=1)
    assert lengths.min() >= 4 and lengths.max() <= 512
    assert 55 < lengths.mean() < 70 and np.median(lengths) < lengths.mean()  # a long right tail
    corpus = D.MarkovCorpus(vocab=16, seed=2)
    docs = corpus.documents(np.array([5, 1, 30]), seed=3)
    assert [len(d) for d in docs] == [5, 1, 30] and all(d.max() < 16 for d in docs)
    assert 0 < corpus.entropy_nats < np.log(16)
    assert [d.tolist() for d in corpus.documents(np.array([5, 1, 30]), seed=3)] == [d.tolist() for d in docs]


def test_paired_bootstrap():
    a, b = np.linspace(2, 3, 40), np.linspace(1, 1.5, 40)
    r = paired_bootstrap(a, b, "ratio")
    assert r["median"] == pytest.approx(2.0) and r["lo"] <= 2.0 <= r["hi"] and r["n"] == 40
    d = paired_bootstrap(a, b, "difference")
    assert d["median"] == pytest.approx(np.median(a - b))
    assert paired_bootstrap([np.nan], [1.0])["n"] == 0
    with pytest.raises(ValueError):
        paired_bootstrap(a, b, "mean")
    assert Path(D.nccl_debug_env("/x")["NCCL_DEBUG_FILE"]).parent == Path("/x")


def test_checked_verdict_refutes_first_confirms_on_every_check_and_names_the_failed_ones():
    from playbook.labs.workloads.dist import checked_verdict

    def never() -> str:
        raise AssertionError("the confirmed summary is built only when every check holds")

    checks = {"a holds": True, "b holds": False, "c holds": False}
    out = checked_verdict(checks, {"x": 1}, None, never)
    assert (out["status"], out["summary"]) == ("inconclusive", "failed checks: b holds, c holds")
    assert out["checks"] is checks and out["figures"] == {"x": 1}
    assert checked_verdict(checks, {}, "no cost here", never)["summary"] == "no cost here"
    assert checked_verdict({"a": True}, {}, None, lambda: "all good")["status"] == "confirmed"
    assert checked_verdict({"a": True}, {}, "refuted wins", lambda: "x")["status"] == "refuted"


def test_a_torchrun_failure_names_the_ranks_own_reason_first(monkeypatch):
    """A gloo rank aborted under load and the error showed torchrun's summary only (SIGABRT, no reason): the
    rank's own `what():` line now comes first."""
    import subprocess

    err = ("terminate called after throwing an instance of 'gloo::IoException'\n"
           "  what():  [gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:4242\n"
           + "\n".join(f"summary line {i}" for i in range(8)))
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 1, "", err))
    with pytest.raises(WorkloadError, match=r"exit 1\): terminate called .* \| what\(\):  \[gloo.*Connection closed "
                                            r"by peer.* \| summary line 3"):
        D.run_torchrun("playbook.labs.workloads.collective_stragglers", 2)
