"""Multi-rank failure and stall reports that name the guilty rank (held-out round 18's mechanisms), on logs written
here from the tools' print statements, apart from tests/data/eval/heldout18: Horovod's stall check in its three
wordings (readers/rank_reports.py), Open MPI's "mpirun noticed that process rank R ... on node H exited on signal
S", torchrun's "Root Cause (first observed failure)" among other failures, PyTorch's watchdog PG status counters
("last enqueued work: E, last completed work: C"), and a list of one time per rank ("Rank 2: 131.0ms")."""

from __future__ import annotations

import pytest

from playbook.analysis import nccl as an
from playbook.diagnosis import diagnose
from playbook.readers import rank_reports as sr
from playbook.readers import read_file

_WARN = ("One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are "
         "waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are "
         "trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause "
         "deadlock.")
# stall_inspector.cc >= 0.19 ("Missing ranks:", a "!" past the shutdown time), under Open MPI's --tag-output
_MISSING_BLOCK = (
    "[1,0]<stdout>:epoch 3 step 120 loss 2.31 step_time 0.412s\n"
    f"[1,0]<stderr>:[2021-03-02 10:11:12.000001: W /tmp/horovod/common/stall_inspector.cc:107] {_WARN}\n"
    "[1,0]<stderr>:Missing ranks:\n"
    "[1,0]<stderr>:2!: [DistributedAdam_Allreduce/cond_3/HorovodAllreduce_grads_3_0, ...]\n"
    "[1,0]<stderr>:5: [DistributedAdam_Allreduce/cond_3/HorovodAllreduce_grads_3_0]\n"
    "[1,0]<stderr>:One or more rank (marked by \"!\") is stalled for longer than 120 seconds. Will shutdown.\n")
# operations.cc 0.13-0.16: per tensor, the missing ranks in brackets
_MISSING_PER_TENSOR = (
    f"WARNING: {_WARN}\n"
    "Stalled ops:model/HorovodAllreduce_grad_fc_0 [missing ranks: 3, 6]\n"
    "model/HorovodAllreduce_grad_fc_1 [missing ranks: 3, 6]\n"
    f"WARNING: {_WARN}\n"
    "Stalled ops:model/HorovodAllreduce_grad_fc_0 [missing ranks: 6]\n")
# operations.cc < 0.13: the ranks that DID submit; the world from the launcher's command line
_READY = ("horovodrun -np 4 -H a:2,b:2 python train.py\n"
          f"WARNING: {_WARN} Stalled ops: grad_w_0 [ready ranks: 3, 0, 1], grad_b_0 [ready ranks: 3, 0, 1]\n")


def _events(tmp_path, text: str):
    log = tmp_path / "job.log"
    log.write_text(text)
    ev = read_file(log).events
    return ev[ev["kind"] == "collective_stall"]


@pytest.mark.parametrize(("text", "ranks"), [
    (_MISSING_BLOCK, [2, 5]),
    (_MISSING_PER_TENSOR, [3, 6, 6]),  # one event per rank per report: the second report names rank 6 again
    (_READY, [2]),
])
def test_stall_reports_name_the_ranks_the_others_wait_for(tmp_path, text, ranks):
    assert _events(tmp_path, text)["rank"].tolist() == ranks


def test_a_ready_list_without_a_world_size_says_what_it_cannot_see():
    lines = sr.StallLines()
    named = lines.feed("", f"{_WARN} Stalled ops: t_0 [ready ranks: 0, 2, 3]")
    assert named == [(1, "not in the ready list of ranks 0-3 (the file states no world size: a rank above 3 "
                         "cannot be seen)")]
    assert sr.StallLines().feed("", "the ranks are ready") is None  # prose about ranks is no report


def test_a_stall_report_outranks_the_steps_before_it_and_names_the_rank(tmp_path):
    log = tmp_path / "hvd.log"
    log.write_text(_MISSING_BLOCK)
    top = diagnose(read_file(log)).hypotheses[0]
    assert top["id"] == "collective_straggler" and top["names"][:2] == ["rank 2", "rank 5"]


def test_mpirun_banner_names_the_dead_rank_and_its_node(tmp_path):
    log = tmp_path / "mpi.log"
    log.write_text("Epoch 1/3\n"
                   "--------------------------------------------------------------------------\n"
                   "mpiexec noticed that process rank 3 with PID 4242 on node gpu-node-07 exited on signal 6 "
                   "(Aborted).\n"
                   "--------------------------------------------------------------------------\n")
    bundle = read_file(log)
    ev = bundle.events[bundle.events["kind"] == "worker_failed"]
    assert ev["rank"].tolist() == [3] and ev["host"].tolist() == ["gpu-node-07"]
    sentence = diagnose(bundle).verdict["sentence"]
    assert "aborted (SIGABRT" in sentence and "on rank 3 of gpu-node-07" in sentence


def _status(rank: int, seq: int, enq: int, done: int) -> str:
    # PyTorch >= 2.6 wording of the watchdog's second line (ProcessGroupNCCL.cpp), after torchrun's prefix
    return (f"[rank{rank}]:[E1115 10:10:01.2 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank {rank}]  "
            f"failure detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {enq}, last "
            f"completed work: {done}\n")


def test_the_rank_with_the_lowest_completed_counter_is_behind(tmp_path):
    # ranks 0-2 time out in the same collective #77, but rank 1's own counter says it completed only #74
    log = tmp_path / "status.log"
    log.write_text("".join(_status(r, 77, 80, 74 if r == 1 else 76) for r in range(3)))
    finding = an.timeouts(read_file(log).nccl)["findings"][0]
    assert finding["ranks"] == [1] and "completed collectives only up to #74" in finding["evidence"]


def test_one_ranks_timeout_names_no_missing_ranks_and_says_it_is_not_behind(tmp_path):
    log = tmp_path / "one.log"
    log.write_text("[rank40]:[E1115 10:10:01.1 ProcessGroupNCCL.cpp:632] [Rank 40] Watchdog caught collective "
                   "operation timeout: WorkNCCL(SeqNum=900, OpType=ALLGATHER, NumelIn=64, NumelOut=4096, "
                   "Timeout(ms)=600000) ran for 600101 milliseconds before timing out.\n" + _status(40, 900, 950, 899))
    bundle = read_file(log)
    finding = an.timeouts(bundle.nccl)["findings"][0]
    assert "ranks" not in finding and "never reported" not in finding["evidence"]
    assert "rank 40 completed every collective before #900 and enqueued 50 more" in finding["evidence"]
    sentence = diagnose(bundle).verdict["sentence"]  # the rank that logged the timeout waited: not the culprit
    assert "logged by rank 40 (a rank that waited)" in sentence and "on rank 40" not in sentence


def _failure(index: int, host: str, rank: int, code: int, pid: int) -> str:
    # torch/distributed/elastic/multiprocessing/errors/error_handler's ChildFailedError summary entry
    return (f"[{index}]:\n  time      : 2024-02-01_10:00:05\n  host      : {host}\n  rank      : {rank} (local_rank: "
            f"{rank % 4})\n  exitcode  : {code} (pid: {pid})\n  error_file: <N/A>\n  traceback : Signal {-code} received "
            f"by PID {pid}\n")


def test_the_launchers_root_cause_is_the_rank_the_run_ended_on(tmp_path):
    # the agent stops the other workers after the first failure: they are listed first, under "Failures:"
    log = tmp_path / "elastic.log"
    log.write_text("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n" + "=" * 60 + "\n"
                   "train.py FAILED\n" + "-" * 60 + "\nFailures:\n" + _failure(1, "node-a", 1, -15, 1001)
                   + _failure(2, "node-a", 2, -15, 1002) + "-" * 60 + "\nRoot Cause (first observed failure):\n"
                   + _failure(0, "node-b", 6, -11, 2006) + "=" * 60 + "\n")
    verdict = diagnose(read_file(log)).verdict
    assert (verdict["ended"]["rank"], verdict["ended"]["host"]) == (6, "node-b")
    assert "SIGSEGV" in verdict["sentence"] and "on rank 6 of node-b" in verdict["sentence"]


def test_a_list_of_one_time_per_rank_is_read_as_one_event_naming_no_cause(tmp_path):
    log = tmp_path / "report.log"
    log.write_text("".join(f"[default0]:{line}\n" for line in (
        "=== Timing report, iteration 200 ===", "  forward-backward:", "    Min: 80.1ms, Max: 131.0ms, Avg: 92.0ms",
        "    Rank 0: 81.0ms", "    Rank 1: 80.1ms", "    Rank 2: 131.0ms", "    Rank 3: 82.4ms", "done")))
    bundle = read_file(log)
    ev = bundle.events
    assert ev["kind"].tolist() == ["rank_timings"]
    assert ev["detail"].iloc[0] == ("line 4: forward-backward per rank (4 ranks): slowest rank 2 131.00 ms, fastest "
                                    "rank 1 80.10 ms (1.64x)")
    assert diagnose(bundle).verdict["id"] == "insufficient_data"  # one list is one moment: no cause, no health
