"""NCCL_DEBUG=INFO reader and transport analysis on the fixtures in tests/data/nccl (see its README)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playbook.analysis import nccl as an
from playbook.core.errors import InputError
from playbook.readers import nccl_log as nl

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl"


def test_healthy_log_facts():
    b = nl.read(DATA / "healthy_ib_gdr.log")
    df = b.nccl
    assert not b.warnings and list(df.columns) == list(nl.COLUMNS)
    assert set(df["host"]) == {"", "gpu-a01", "gpu-a02"}  # "" = the bare "NCCL version" line
    assert df[df["kind"] == "version"]["detail"].tolist() == ["2.18.5+cuda12.2"]
    ch = df[df["kind"] == "channel"]
    # 4 ranks x 2 channels: 4 intra-node P2P sends, 4 NET sends and 4 NET receives
    assert ch.groupby("transport").size().to_dict() == {"NET": 8, "P2P": 4}
    assert (ch[ch["transport"] == "NET"]["gdr"] == 1).all() and ch[ch["transport"] == "P2P"]["gdr"].isna().all()
    assert ch.groupby("host")["rank"].agg(lambda s: sorted(set(s))).to_dict() == {"gpu-a01": [0, 1],
                                                                                  "gpu-a02": [2, 3]}
    recv = ch[ch["direction"] == "receive"].iloc[0]
    assert recv["peer"] == (recv["rank"] - 1) % 4  # receive lines are read from the receiver's side
    assert set(df[df["kind"] == "init"]["nranks"]) == {4}
    assert (df[df["host"] != ""]["rank"] >= 0).all()  # every process line got its rank


def test_garbled_interleaved_log_keeps_what_parses():
    b = nl.read(DATA / "garbled_interleaved.log")
    (w,) = b.warnings
    assert "skipped 3 of" in w and "garbled NCCL message" in w and "garbled_interleaved.log" in w
    df = b.nccl
    assert set(df["host"]) == {"", "gpu-a01", "gpu-a02"}  # the spliced prefixes got their real host back
    assert (df["kind"] == "channel").sum() == 10  # 12 connections, 2 cut mid-line
    stats = b.meta["nccl_log"][str(DATA / "garbled_interleaved.log")]
    assert stats["lines"] > stats["nccl_lines"]  # training output and garbage lines are not NCCL lines
    assert an.summarize(b)["findings"] == []


def test_gzip_log_and_sniff(tmp_path):
    text = (DATA / "socket_fallback.log").read_text()
    p = tmp_path / "nccl.log.gz"
    p.write_bytes(gzip.compress(text.encode()))
    assert len(nl.read(p).nccl) == len(nl.read(DATA / "socket_fallback.log").nccl)
    assert nl.sniff(text[:65536])
    assert not nl.sniff('{"traceEvents": [], "INFO": "gpu:1:1 [0] NCCL INFO x"}')
    assert not nl.sniff("timestamp, index, utilization.gpu [%]\n")


def test_not_an_nccl_log(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("step 1 loss 2.0\nstep 2 loss 1.9\n")
    with pytest.raises(InputError, match="train.log: no NCCL INFO facts"):
        nl.read(p)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list("ab:0129 []/NCCLINFOWARvia>-\n")), max_size=300))
def test_arbitrary_text_only_input_error(tmp_path_factory, text):
    p = tmp_path_factory.mktemp("fuzz") / "x.log"
    p.write_text(text)
    nl.sniff(text)
    try:
        b = nl.read(p)
        an.summarize(b)
    except InputError:
        pass


@pytest.mark.parametrize("name, kind, hosts", [
    ("gdr_missing_one_node.log", "gdr_missing", ["gpu-a02"]),
    ("socket_fallback.log", "socket_fallback", ["gpu-a02"]),
    ("no_p2p_one_node.log", "no_p2p", ["gpu-a02"]),
])
def test_link_degradation_names_the_host(name, kind, hosts):
    s = an.summarize(nl.read(DATA / name))
    json.dumps(s)
    (f,) = s["findings"]
    assert (f["hypothesis"], f["kind"], f["hosts"], f["level"]) == ("link_degradation", kind, hosts, "high")
    assert "gpu-a02" in f["evidence"] and "gpu-a01" in f["evidence"]  # asymmetric: names the healthy host too


def test_no_p2p_quotes_the_environment():
    (f,) = an.summarize(nl.read(DATA / "no_p2p_one_node.log"))["findings"]
    assert "NCCL_P2P_DISABLE=1" in f["evidence"]


def test_symmetric_problems_are_moderate(tmp_path):
    text = (DATA / "healthy_ib_gdr.log").read_text()
    every_socket = (text.replace("Using network IB", "Using network Socket")
                    .replace("NET/IB/0/GDRDMA", "NET/Socket/0").replace("NET/IB/1/GDRDMA", "NET/Socket/1"))
    p = tmp_path / "sockets.log"
    p.write_text(every_socket)
    (f,) = an.summarize(nl.read(p))["findings"]
    assert (f["kind"], f["level"], f["hosts"]) == ("socket_fallback", "moderate", ["gpu-a01", "gpu-a02"])
    no_gdr = text.replace("/GDRDMA", "")
    p.write_text(no_gdr)
    (f,) = an.summarize(nl.read(p))["findings"]
    assert (f["kind"], f["level"]) == ("gdr_missing", "moderate") and "nvidia-peermem" in f["evidence"]


def test_host_table():
    hosts = an.host_transports(nl.read(DATA / "gdr_missing_one_node.log").nccl).set_index("host")
    assert hosts.loc["gpu-a01", "gdr_share"] == 1.0 and hosts.loc["gpu-a02", "gdr_share"] == 0.0
    assert hosts.loc["gpu-a02", "gdr_disabled_lines"] == 2
    assert hosts.loc["gpu-a01", "ranks"] == [0, 1] and hosts.loc["gpu-a01", "network"] == "IB"
    assert an.summarize(nl.read(DATA / "healthy_ib_gdr.log"))["findings"] == []


def test_old_nccl_channel_format_and_warn_lines(tmp_path):
    p = tmp_path / "old.log"
    p.write_text(
        "node1:100:200 [0] NCCL INFO Channel 00 : 0[1c000] -> 1[1d000] via P2P/IPC\n"
        "node1:100:200 [0] NCCL INFO Channel 00 : 0[1c000] -> 2[1c000] [send] via NET/Socket/0\n"
        "node1:100:200 [0] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out\n")
    df = nl.read(p).nccl
    assert df["kind"].tolist() == ["channel", "channel", "warn"]
    assert df["transport"].tolist()[:2] == ["P2P", "NET"] and df["rank"].tolist()[:2] == [0, 0]
    assert an.summarize(nl.read(p))["warns"] == 1


def _watchdog(rank: int, seq: int, ms: int = 600050) -> str:
    return (f"[rank{rank}]:[E1115 10:10:01.123456 4242 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=262144, "
            f"NumelOut=262144, Timeout(ms)=600000) ran for {ms} milliseconds before timing out.")


# every rank of the 4 the NCCL init lines state timed out in the one collective: the collective failed
_WORLD_4 = "".join(f"gpu-a01:41{r}:42{r} [{r}] NCCL INFO comm 0x55d4c8a0000{r} rank {r} nRanks 4 nNodes 1 localRanks 4 "
                   f"localRank {r} MNNVL 0\n" for r in range(4))


@pytest.mark.parametrize(("seqs", "hypothesis", "says"), [
    ({r: 4821 for r in range(8) if r != 5}, "collective_straggler", "rank 5 never reported"),
    ({0: 4821, 1: 4821, 2: 4820, 3: 4821}, "collective_straggler", "rank 2 timed out in collective #4820"),
    ({r: 4821 for r in range(4)}, "hardware_fault", "timed out inside the same ALLREDUCE #4821"),
])
def test_watchdog_timeouts_name_the_rank_that_never_arrived(tmp_path, seqs, hypothesis, says):
    from playbook.diagnosis import diagnose
    from playbook.readers import detect, read_file

    log = tmp_path / "torchrun.log"
    log.write_text(_WORLD_4 + "\n".join(_watchdog(r, s) for r, s in seqs.items()) + "\n[rank1]:some other line\n")
    assert detect.detect(log) == "lines"  # text: every line scanner, NCCL among them
    bundle = read_file(log)
    stuck = an.timeouts(bundle.nccl)
    assert [r["rank"] for r in stuck["ranks"]] == sorted(seqs) and stuck["ranks"][0]["ran_s"] == 600.0
    finding = stuck["findings"][0]
    assert finding["hypothesis"] == hypothesis and says in finding["evidence"]
    top = diagnose(bundle).hypotheses[0]
    assert top["id"] == hypothesis and says in top["evidence"][0]
    # the ranks named are the ones the others waited for, never the ones that logged the timeout while waiting
    assert top["names"] == {"rank 5 never reported": ["rank 5"],
                            "rank 2 timed out in collective #4820": ["rank 2"]}.get(says, [])


def test_timeout_detail_round_trips():
    assert nl.timeout_fields("ALLGATHER seq=12 ran_ms=1800000") == ("ALLGATHER", 12, 1800000, "")
    assert nl.timeout_fields("? seq=12 ran_ms=-1 pg=119") == ("?", 12, -1, "119")
    assert nl.timeout_fields("NET/IB/0") is None


def test_same_collective_without_a_world_size_is_not_confirmed_hardware(tmp_path):
    # an excerpt: the ranks that are not in it may be the ones that never arrived
    from playbook.readers import read_file

    log = tmp_path / "excerpt.log"
    log.write_text("\n".join(_watchdog(r, 808) for r in range(3)) + "\n")
    finding = an.timeouts(read_file(log).nccl)["findings"][0]
    assert finding["hypothesis"] == "hardware_fault" and finding["level"] == "moderate"
    assert "states no world size" in finding["evidence"]


# real layouts (pasted in public issue threads; figures from them): pytorch/pytorch#118369 (a tqdm bar before the
# first watchdog line, glog brackets before the others), hiyouga/LlamaFactory#7396 (a process-id counter before
# each line; one rank logged only the watchdog's exception line), NVIDIA/nccl#1610 (a minute time stamp before
# torchrun's global rank; two process groups, one per thread)
_TQDM_THEN_GLOG = (
    "Epoch 0:   6%|██   | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6][E ProcessGroupNCCL.cpp:458] [Rank 0] "
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, OpType=ALLREDUCE, Timeout(ms)=1800000) "
    "ran for 25624887 milliseconds before timing out.\n"
    "[E ProcessGroupNCCL.cpp:458] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=64088, "
    "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25625251 milliseconds before timing out.\n")
_COUNTER_PREFIX = (
    "[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, "
    "Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n"
    "[80749] [rank3]:[E321 02:07:08.465224069 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 3] Exception (either an error or "
    "timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.\n")
_TWO_GROUPS = (
    " 2025-02-18 12:54 [rank13]:[E218 04:54:22.864467604 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=216, OpType=ALLTOALL_BASE, NumelIn=1379328, NumelOut=1572864, "
    "Timeout(ms)=600000) ran for 600045 milliseconds before timing out.\n"
    " 2025-02-18 12:54 [rank13]:[E218 04:54:22.864535778 ProcessGroupNCCL.cpp:1795] [PG ID 11 PG GUID 119 Rank 1] "
    "Exception (either an error or timeout) detected by watchdog at work: 216, last enqueued NCCL work: 220, last "
    "completed NCCL work: 215.\n"
    " 2025-02-18 12:54 [rank15]:[E218 04:54:22.883327702 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=57, OpType=ALLREDUCE, NumelIn=32, NumelOut=32, "
    "Timeout(ms)=600000) ran for 600045 milliseconds before timing out.\n"
    " 2025-02-18 12:54 [rank15]:[E218 04:54:22.883358915 ProcessGroupNCCL.cpp:1795] [PG ID 11 PG GUID 112 Rank 0] "
    "Exception (either an error or timeout) detected by watchdog at work: 57, last enqueued NCCL work: 57, last "
    "completed NCCL work: 56.\n")


# Two ranks' lines without a world size are an excerpt (analysis.nccl.timeouts; held-out round 35): the ranks
# between them are not in it, not "never reported" — hiyouga/LlamaFactory#7396's full paste shows ranks 2 and 4 timing
# out in #1580 too, which the old reading ("ranks 1, 2 never reported") got wrong
@pytest.mark.parametrize(("text", "ranks", "says"), [
    (_TQDM_THEN_GLOG, [(0, 96120, ""), (7, 64088, "")], "rank 7 timed out in collective #64088 while others "
                                                        "reached #96120"),
    (_COUNTER_PREFIX, [(0, 1580, ""), (3, 1580, "1")], "2 ranks (0, 3) timed out in ALLREDUCE #1580 after 600 s; "
                                                       "the log holds no other rank's lines and no world size"),
    (_TWO_GROUPS, [(13, 216, "119"), (15, 57, "112")], "2 different process groups (rank 13 in ALLTOALL_BASE #216 "
                                                        "of group 119; rank 15 in ALLREDUCE #57 of group 112)"),
])
def test_watchdog_lines_keep_their_rank_and_process_group(tmp_path, text, ranks, says):
    from playbook.readers import detect, read_file

    log = tmp_path / "pasted.log"
    log.write_text(text)
    assert detect.detect(log) == "lines"
    stuck = an.timeouts(read_file(log).nccl)
    assert [(r["rank"], r["seq"], r["pg"]) for r in stuck["ranks"]] == ranks
    assert says in stuck["findings"][0]["evidence"]


def test_torchrun_prefixed_nccl_lines_are_read_and_a_json_array_is_not(tmp_path):
    from playbook.readers import detect

    text = (DATA / "healthy_ib_gdr.log").read_text()
    prefixed = tmp_path / "torchrun.log"
    prefixed.write_text("".join(f"[default{i % 4}]:{line}\n" for i, line in enumerate(text.splitlines())))
    assert detect.detect(prefixed) == "lines"
    b = nl.read(prefixed)
    ch = b.nccl[b.nccl["kind"] == "channel"]
    assert ch.groupby("transport").size().to_dict() == {"NET": 8, "P2P": 4}
    assert set(b.nccl["host"]) >= {"gpu-a01", "gpu-a02"}
    assert not nl.sniff('[\n  "gpu-a01:123:456 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"\n]')


def test_ib_transport_errors_name_the_fabric_and_connection_facts_alone_vouch_for_nothing(tmp_path):
    # NVIDIA/nccl#1814's paste (the job died on IB completion errors): it was "healthy, confirmed"
    from playbook.diagnosis import diagnose
    from playbook.readers import read_file

    log = tmp_path / "ib.log"
    log.write_text(
        "hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
        "172.36.143.59<44206> with status=12 opcode=129 len=65536 vendor err 129 (Recv) localGid ::ffff:29.87.88.182\n"
        "hostname-test:984:1357 [4] NCCL INFO transport/net.cc:1298 -> 6\n"
        "hostname-test:984:1357 [4] NCCL INFO proxy.cc:694 -> 6\n")
    bundle = read_file(log)
    top = diagnose(bundle).hypotheses[0]
    assert top["id"] == "link_degradation" and "network_error" in top["evidence"][0]
    # a WARN line names its source line before "NCCL WARN" (src/debug.cc): still the host's own NCCL line
    warn = bundle.nccl[bundle.nccl["kind"] == "warn"]
    assert warn[["host", "device"]].values.tolist() == [["hostname-test", 4]]
    assert top["names"] == ["hostname-test"]
    # a clean NCCL log says how ranks connect, not whether the loop is fast: not enough to call the run healthy
    top = diagnose(nl.read(DATA / "healthy_ib_gdr.log")).hypotheses[0]
    assert top["id"] == "insufficient_data" and "NCCL connection facts (network NET/IB) only" in top["evidence"][0]


def test_a_pid_past_int64_is_no_nccl_prefix(tmp_path):
    # a 20-digit pid made the lines reader fail with OverflowError building the nccl table's int64 pid column
    from playbook.readers import read_file

    p = tmp_path / "nccl.log"
    p.write_text("node1:99999999999999999999:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n"
                 "node1:123:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n")
    nccl = read_file(p).nccl
    assert nccl.loc[nccl["host"] == "node1", "pid"].tolist() == [123]


@pytest.mark.parametrize("message", [
    # NCCL <= 2.8 (src/transport/net_ib.cc): no peer, "with error %d, opcode %d, len %d, vendor err %d"
    "NET/IB : Got completion with error 5, opcode 0, len 4096, vendor err 249",
    # NCCL 2.9-2.18: the peer named, the same comma-separated fields
    "NET/IB : Got completion from peer 10.9.8.7<41000> with error 12, opcode 1, len 0, vendor err 129",
])
def test_ib_completion_errors_in_older_nccl_wordings_are_network_errors(tmp_path, message):
    # NVIDIA/nccl#426 quoted the <= 2.8 wording: it was read as a bare NCCL WARN, and the verdict was
    # insufficient_data; every wording is printed only for a status other than IBV_WC_SUCCESS (0)
    from playbook.diagnosis import diagnose
    from playbook.readers import read_file

    log = tmp_path / "ib_old.log"
    log.write_text(f"nodeB-7:311:402 [2] transport/net_ib.cc:812 NCCL WARN {message}\n"
                   "nodeB-7:311:402 [2] NCCL INFO transport/net.cc:905 -> 2\n")
    bundle = read_file(log)
    assert bundle.events["kind"].tolist() == ["network_error"]
    top = diagnose(bundle).hypotheses[0]
    assert top["id"] == "link_degradation" and "network_error" in top["evidence"][0]
    # a successful completion (status 0) is never printed as an error; a line that says so is not one
    ok = tmp_path / "ib_ok.log"
    ok.write_text("nodeB-7:311:402 [2] NCCL WARN NET/IB : Got completion with error 0, opcode 0, len 0, vendor err 0\n")
    assert read_file(ok).events["kind"].tolist() == ["nccl_warn"]


def test_one_host_on_sockets_names_the_network_without_blaming_it(tmp_path):
    # one host's lines cannot show inter-node traffic, so no socket_fallback finding; the evidence still states what
    # NCCL chose, and why (before: "the inputs hold NCCL connection facts only", the socket choice unsaid)
    from playbook.diagnosis import diagnose
    from playbook.readers import read_file

    log = tmp_path / "one_host.log"
    log.write_text("trainer-3:7001:7001 [0] NCCL INFO NET/IB : No device found.\n"
                   "trainer-3:7001:7001 [0] NCCL INFO NET/Socket : Using [0]ens5:10.2.3.4<0>\n"
                   "trainer-3:7001:7001 [0] NCCL INFO Using network Socket\n"
                   "trainer-3:7002:7002 [1] NCCL INFO Using network Socket\n")
    top = diagnose(read_file(log)).hypotheses[0]
    assert top["id"] == "insufficient_data"
    assert "NCCL connection facts (network NET/Socket; NET/IB found no device)" in top["evidence"][0]
