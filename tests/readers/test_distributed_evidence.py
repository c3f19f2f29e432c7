"""Distributed-run evidence read by held-out round 35's mechanisms, on logs written here from the tools' print
statements, apart from tests/data/eval/heldout35: c10d's monitored_barrier report of the ranks that did not pass it,
PyTorch's watchdog lines wrapped onto a second line by a terminal or a pager, a watchdog excerpt of a few ranks
without a world size, and a node-pair sweep of nccl-tests busbw figures."""

from __future__ import annotations

import pytest
from test_guilty_rank import _events as _stalls  # the collective_stall events of a log written to tmp_path

from playbook.analysis import nccl as an
from playbook.analysis import nccl_bench as nb
from playbook.diagnosis import diagnose
from playbook.readers import nccl_tests as nt
from playbook.readers import rank_reports as sr
from playbook.readers import read_file


# ProcessGroupGloo.cpp monitoredBarrier: the first rank that failed, or every one with wait_all_ranks=True; the
# RuntimeError is printed again by the launcher's summary (one event per rank all the same)
@pytest.mark.parametrize(("text", "ranks"), [
    ("epoch 0 step 10 loss 1.2\nRuntimeError: [Rank 0]: Rank 3 failed to pass monitoredBarrier in 30000 ms\n"
     " Original exception: \n[../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer\n", [3]),
    ("[E ProcessGroupGloo.cpp:138] [Rank 0]: Ranks 1, 2, 9 failed to pass monitoredBarrier in 600000 ms\n"
     "RuntimeError: [Rank 0]: Ranks 1, 2, 9 failed to pass monitoredBarrier in 600000 ms\n", [1, 2, 9]),
])
def test_monitored_barrier_names_the_ranks_that_did_not_pass(tmp_path, text, ranks):
    assert _stalls(tmp_path, text)["rank"].tolist() == ranks


def test_monitored_barrier_wording_is_read_by_the_stall_scanner_and_prose_is_not():
    named = sr.StallLines().feed("", "[Rank 0]: Ranks 4, 5 failed to pass monitoredBarrier in 2000 ms")
    assert [r for r, _ in named] == [4, 5] and "within 2 s" in named[0][1]
    assert sr.StallLines().feed("", "the monitoredBarrier passed on every rank") is None


def test_a_monitored_barrier_report_is_the_verdict_and_names_its_ranks(tmp_path):
    log = tmp_path / "barrier.log"
    log.write_text("RuntimeError: [Rank 0]: Ranks 6, 7 failed to pass monitoredBarrier in 1800000 ms\n")
    top = diagnose(read_file(log)).hypotheses[0]
    assert top["id"] == "collective_straggler" and top["names"] == ["rank 6", "rank 7"]


_HEAD = "node-b [stderr] [rank{r}]:[E1203 04:01:02.5 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
_TAIL = "WorkNCCL(SeqNum=77, OpType=ALLGATHER, NumelIn=8, NumelOut=64, Timeout(ms)=300000) ran for 300012 milliseconds "


@pytest.mark.parametrize("cut", ["operation timeout: \n", "operation \ntimeout: "])
def test_a_watchdog_line_wrapped_onto_the_next_line_is_read_whole(tmp_path, cut):
    log = tmp_path / "wrapped.log"
    log.write_text("".join(_HEAD.format(r=r) + cut + _TAIL + "before timing out.\n" for r in (20, 21))
                   + "node-b [stderr] [rank20]:[E1203 04:01:02.6 ProcessGroupNCCL.cpp:1785] [PG 0 (default_pg) "
                     "Rank 20] Exception (either an error or timeout)\ndetected by watchdog at work: 77, last "
                     "enqueued NCCL work: 79, last completed NCCL work: 76.\n")
    rows = read_file(log).nccl
    rows = rows[rows["kind"] == "timeout"]
    assert rows["rank"].tolist() == [20, 21]
    assert rows["detail"].tolist() == ["ALLGATHER seq=77 ran_ms=300012 pg=0 done=76 enq=79",
                                       "ALLGATHER seq=77 ran_ms=300012"]


def test_a_watchdog_head_followed_by_another_line_joins_nothing(tmp_path):
    log = tmp_path / "cut.log"
    log.write_text(_HEAD.format(r=3) + "operation timeout:\nepoch 1 step 5 loss 0.7\n")
    nccl = read_file(log).nccl
    assert len(nccl) == 0 or "timeout" not in set(nccl["kind"])


def _timeout(rank: int, seq: int = 500) -> str:
    return (f"[rank{rank}]:[E1115 10:10:01.1 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=64, NumelOut=64, "
            "Timeout(ms)=600000) ran for 600101 milliseconds before timing out.\n")


def test_a_few_high_ranks_without_a_world_size_are_an_excerpt_not_a_hang_of_the_rest(tmp_path):
    # one host's ranks 24-27 of a job whose size the log does not state: ranks 0-23 are not in it, not missing
    log = tmp_path / "host3.log"
    log.write_text("".join(_timeout(r) for r in (24, 25, 26, 27)))
    finding = an.timeouts(read_file(log).nccl)["findings"][0]
    assert "ranks" not in finding and "never reported" not in finding["evidence"]
    assert "so the rank they wait for is not in it" in finding["evidence"]


def test_a_few_ranks_missing_among_many_reporting_are_still_named(tmp_path):
    # 6 of ranks 0-7 time out; 3 and 5 never reported: the few missing among many are the suspects
    log = tmp_path / "node.log"
    log.write_text("".join(_timeout(r) for r in (0, 1, 2, 4, 6, 7)))
    finding = an.timeouts(read_file(log).nccl)["findings"][0]
    assert finding["ranks"] == [3, 5] and "never reported" in finding["evidence"]


_SWEEP = ("# busbw of all_reduce_perf -b 1G -e 1G, NCCL_ALGO=Ring, one pair at a time\n"
          "gpu-a01,gpu-a02   180.1\ngpu-a03 <-> gpu-a04   178.9 GB/s\n"
          "gpu-a02,gpu-a05   91.0   # slow\ngpu-a05 - gpu-a03   90.2\ngpu-a06/gpu-a07  720 Gb/s\n"
          "gpu-a06,gpu-a08   92.5\n")


def test_a_node_pair_sweep_is_read_with_its_units():
    scan = nt.NcclTestsTables()
    understood = [scan.feed(line) for line in _SWEEP.splitlines()]
    assert understood[1:] == [True] * 6
    assert scan.summary()["pairs"][4] == ["gpu-a06", "gpu-a07", 90.0]  # 720 Gb/s
    assert "node-pair sweep: 6 pairs" in nt.describe(scan.summary())
    assert not scan.feed("loss,acc 0.3") and not scan.feed("train,val 12")  # names without digits: no hosts


def test_the_node_common_to_the_slow_pairs_is_named_and_an_open_pair_stays_open():
    pairs = [["n1", "n2", 180.1], ["n3", "n4", 178.9], ["n2", "n5", 91.0], ["n5", "n3", 90.2],
             ["n6", "n7", 90.0], ["n1", "n8", 179.0]]
    found = nb.pair_findings(pairs)
    assert found[0]["hosts"] == ["n5"] and found[0]["level"] == "high"
    assert "n5 is in 2 slow pairs and no fast one, while n2, n3 also have a fast pair" in found[0]["evidence"]
    assert "hosts" not in found[1] and "n6-n7 slow (90 GB/s): one of the two" in found[1]["evidence"]


@pytest.mark.parametrize("pairs", [
    [["n1", "n2", 180.0], ["n3", "n4", 160.0], ["n5", "n6", 150.0]],  # within 1.3x of each other: one group
    [["n1", "n2", 180.0], ["n2", "n3", 60.0]],  # two pairs tell nothing apart
])
def test_a_sweep_without_a_slow_group_names_nothing(pairs):
    assert nb.pair_findings(pairs) == []


def test_a_node_pair_sweep_file_names_the_degraded_node(tmp_path):
    log = tmp_path / "sweep.txt"
    log.write_text(_SWEEP)
    top = diagnose(read_file(log)).hypotheses[0]
    assert top["id"] == "link_degradation" and top["names"][0] == "gpu-a05"


def test_a_cut_watchdog_line_does_not_take_the_next_ranks_line(tmp_path):
    # a line cut short (an interleaved or truncated paste) followed by the next rank's whole line: each rank's own
    # figures, the next rank's timeout not lost (joined, rank 2's ran_ms went to rank 1 and rank 2 was blamed as
    # the rank that never reported)
    log = tmp_path / "cut.log"
    log.write_text(_timeout(0) + _timeout(1)[:150] + "\n" + _timeout(2) + _timeout(3))
    rows = read_file(log).nccl
    rows = rows[rows["kind"] == "timeout"]
    assert 2 in rows["rank"].tolist() and 1 not in rows["rank"].tolist()
    assert rows[rows["rank"] == 2]["line"].tolist() == [3]


def test_a_sweep_at_zero_busbw_is_no_traceback():
    # pairs that moved nothing (a failed run writes 0): two at 0 are one group; the crash was min() of no fast pair
    assert nb.pair_findings([["n1", "n2", 0.0], ["n3", "n4", 0.0], ["n5", "n6", 0.0]]) == []
    found = nb.pair_findings([["n1", "n2", 0.0], ["n3", "n4", 0.0], ["n5", "n6", 90.0]])
    assert found and "hosts" not in found[-1]


def test_a_pair_measured_twice_is_one_slow_pair_not_two():
    # the same slow pair run again is no group test: neither of its nodes is in two slow pairs
    found = nb.pair_findings([["n1", "n2", 49.0], ["n2", "n1", 48.5], ["n3", "n4", 88.0], ["n5", "n6", 87.0]])
    assert [f.get("hosts") for f in found] == [None] and "one of the two, not told apart" in found[0]["evidence"]


def test_a_sound_nodes_one_slow_pair_names_its_partner_as_the_suspect():
    # n1 has a fast pair (n1-n2), so its slow pair with n3 points at n3 (the module's rule; it was dropped silently)
    found = nb.pair_findings([["n1", "n2", 180.0], ["n1", "n3", 90.0], ["n4", "n5", 179.0]])
    assert [(f["level"], f.get("hosts")) for f in found] == [("moderate", ["n3"])]
    assert "n1-n3 slow (90 GB/s) while n1 has a fast pair: n3 the suspect" in found[0]["evidence"]


def test_rank_0_alone_without_a_world_size_is_an_excerpt_not_a_collective_that_never_finished(tmp_path):
    # one rank's view (round 18's rule): rank 0 has no lower rank to miss, yet it waits on ranks the log does not hold
    log = tmp_path / "rank0.log"
    log.write_text(_timeout(0))
    finding = an.timeouts(read_file(log).nccl)["findings"][0]
    assert finding["hypothesis"] == "collective_straggler" and "the rank it waits for is not in it" in finding["evidence"]


def test_a_watchdog_message_cut_short_is_counted_not_dropped(tmp_path):
    # a cut line followed by another rank's whole one, and a cut line that ends the file: each is a counted skip
    # naming its line (they had counted as understood NCCL lines that left no row)
    log = tmp_path / "cut.log"
    log.write_text(_timeout(0)[:150] + "\n" + _timeout(1) + _timeout(2)[:150] + "\n")
    bundle = read_file(log)
    assert bundle.nccl[bundle.nccl["kind"] == "timeout"]["rank"].tolist() == [1]
    said = " ".join(bundle.warnings)
    assert "skipped 2 of 3 rows" in said and "line 1: watchdog message cut short" in said, bundle.warnings
    assert "line 3: watchdog message cut short" in said, bundle.warnings


def test_a_sweep_by_ip_address_is_read():
    # pairs named by IPv4 address (hosts without names in the job's hostfile) were not read at all
    scan = nt.NcclTestsTables()
    lines = ["10.0.0.1,10.0.0.2 88.1", "10.0.0.3,10.0.0.4 87.5", "10.0.0.1,10.0.0.5 49.0", "10.0.0.3,10.0.0.5 48.7"]
    assert [scan.feed(line) for line in lines] == [True] * 4
    pairs = scan.summary()["pairs"]
    assert pairs[0] == ["10.0.0.1", "10.0.0.2", 88.1]
    assert nb.pair_findings(pairs)[0]["hosts"] == ["10.0.0.5"]
    scan.feed("       8             2     float     sum      -1    5.10    0.00    0.00      0")
    assert len(scan.summary()["pairs"]) == 4  # a table row is no pair
