"""restart_loss: a restart's cost priced against the run's own pace (evidence/from_restarts.py, answer.restart_lead),
a cheap restart left healthy, and a single rank's log that names no silent rank (analysis/nccl.py). LABELED
SYNTHETIC logs, written from the tools' format strings (torchtitan, PyTorch's NCCL watchdog and init line)."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def _steps(first: int, n: int, t0: int, dt: float = 0.5) -> list[str]:
    out = []
    for i in range(n):
        t = t0 + i * dt
        out.append(f"[rank0]:[titan] 2026-01-01 10:{int(t // 60):02d}:{t % 60:06.3f} - root - INFO - step: {first + i}"
                   f"  loss:  2.{i:02d}  memory:  9.46GiB(64.99%)  tps: 7,000")
    return out


def _diagnose(tmp_path, text_lines: list[str]):
    p = tmp_path / "train.log"
    p.write_text("\n".join(text_lines) + "\n")
    return diagnose(read_paths([str(p)]))


def _resume(loaded: int, start: int, t: int) -> list[str]:
    return [f"[rank0]:[titan] 2026-01-01 10:{t // 60:02d}:{t % 60:02d},000 - root - INFO - Loading the checkpoint at "
            f"step {loaded}.",
            f"[rank0]:[titan] 2026-01-01 10:{t // 60:02d}:{t % 60 + 2:02d},000 - root - INFO - Training starts at step "
            f"{start}, with local batch size 8, global batch size 8, sequence length 2048, total steps 5000 (warmup 2)"]


def test_steps_computed_again_are_priced_at_the_runs_pace_and_lead(tmp_path):
    d = _diagnose(tmp_path, _resume(400, 201, 60) + _steps(201, 60, 70))  # 200 steps (201..400) again at 0.5 s
    top = d.hypotheses[0]
    assert top["id"] == ids.RESTART_LOSS
    assert top["restart_s"] == pytest.approx(200 * 0.5, rel=0.05)
    assert "outside the logged steps" in d.verdict["sentence"] and "200 steps computed again" in top["evidence"][0]


def test_a_cheap_restart_stays_healthy(tmp_path):
    d = _diagnose(tmp_path, _resume(400, 401, 60) + _steps(401, 60, 70))
    assert d.hypotheses[0]["id"] != ids.RESTART_LOSS
    assert all(h["id"] != ids.RESTART_LOSS or h["score"] < 0.2 for h in d.hypotheses)


def test_a_resume_without_step_times_names_the_count_not_seconds(tmp_path):
    d = _diagnose(tmp_path, _resume(45, 26, 60))
    assert d.hypotheses[0]["id"] == ids.RESTART_LOSS and d.hypotheses[0]["restart_s"] == 0
    assert "20 steps computed again" in d.hypotheses[0]["evidence"][0]
    assert "not its seconds" in d.verdict["sentence"]


WATCHDOG = ("[rank{r}]:[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=17, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800995 "
            "milliseconds before timing out.")
INIT = "[rank{r}]:node1:1:2 [{r}] NCCL INFO comm 0x55 rank {r} nranks 4 cudaDev {r} busId 1000 - Init COMPLETE"


def test_one_ranks_log_names_no_silent_rank(tmp_path):
    d = _diagnose(tmp_path, [INIT.format(r=0), WATCHDOG.format(r=0)])
    assert not d.hypotheses[0].get("names")


def test_a_log_of_several_ranks_names_the_one_that_never_reported(tmp_path):
    d = _diagnose(tmp_path, [INIT.format(r=r) for r in range(4)] + [WATCHDOG.format(r=r) for r in (0, 1, 3)])
    assert d.hypotheses[0]["id"] == ids.COLLECTIVE_STRAGGLER and d.hypotheses[0]["names"] == ["rank 2"]


CANCEL = "slurmstepd: error: *** JOB 4714782 ON gpu-017 CANCELLED AT 2026-01-01T10:00:21 DUE TO PREEMPTION ***"


def test_a_requeued_run_appended_to_its_log_prices_the_lost_steps_and_the_wait(tmp_path):
    # steps 1..40 (0.5 s), preempted, requeued 5 minutes later: the checkpoint of step 30 loaded, steps 31..40 again
    text = _steps(1, 40, 0) + [CANCEL] + _resume(30, 31, 320) + _steps(31, 40, 330)
    d = _diagnose(tmp_path, text)
    top = d.hypotheses[0]
    assert top["id"] == ids.RESTART_LOSS
    assert "10 steps computed again" in top["evidence"][0]
    assert top["restart_s"] == pytest.approx(10 * 0.5 + (330 - 19.5), rel=0.02)  # the steps again + the wait


def test_a_worker_group_restart_that_goes_back_ten_steps(tmp_path):
    restart = ("[2026-01-01 10:00:26,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Worker group "
               "FAILED. 2/3 attempts left; will restart worker group")
    d = _diagnose(tmp_path, _steps(1, 50, 0) + [restart] + _steps(41, 40, 90))
    top = d.hypotheses[0]
    assert top["id"] == ids.RESTART_LOSS and "went back from 50 to step 41: 10 steps computed again" in top["evidence"][0]


def test_a_quick_restart_at_the_checkpoint_is_no_loss(tmp_path):
    # 600 steps, a restart that resumes at the checkpoint's next step 3.5 s later, 600 more: a healthy run
    d = _diagnose(tmp_path, _steps(1, 600, 0) + _resume(600, 601, 301) + _steps(601, 600, 303))
    assert d.verdict["id"] == ids.HEALTHY
    acc = d.detail["accounting"]  # the 3 s without a step is the restart's, and under 1 % of the run
    assert sum(b.share for b in acc.buckets if b.cause == ids.RESTART_LOSS) < 0.01


SAVE = "2025-03-01 {t},000 - trainer - INFO - Saving checkpoint to /ckpt/run7/step_5000.pt"
TIMEOUT = ("2025-03-01 12:30:02,500 [rank2]:[E301 12:30:02.500 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught "
           "collective operation timeout: WorkNCCL(SeqNum=88121, OpType=_ALLGATHER_BASE, NumelIn=1, NumelOut=8, "
           "Timeout(ms)=1800000) ran for 1800012 milliseconds before timing out.")


@pytest.mark.parametrize(("saved_at", "named"), [("12:00:01", True), ("11:00:00", False)])
def test_a_timeout_whose_collective_began_with_a_save_names_the_save(tmp_path, saved_at, named):
    d = _diagnose(tmp_path, [SAVE.format(t=saved_at), TIMEOUT])
    stall = [h for h in d.hypotheses if h["id"] == ids.PERIODIC_STALL]
    assert bool(stall and "the checkpoint save logged at" in stall[0]["evidence"][0]) == named
