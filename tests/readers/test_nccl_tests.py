"""nccl-tests result tables (readers/nccl_tests.py) on text written for these tests, apart from the held-out
excerpts in tests/data/nccl_real (tested in test_nccl_real.py)."""

from __future__ import annotations

from playbook.readers import nccl_tests as nt

# nccl-tests >= 2.10 (src/common.cu), two hosts, NCCL INFO lines interleaved as mpirun prints them
TABLE = """# nThread 1 nGpus 1 minBytes 1048576 maxBytes 67108864 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  40211 on    node-a1 device  0 [0x1b] NVIDIA A100-SXM4-40GB
#  Rank  1 Group  0 Pid  51877 on    node-b4 device  0 [0x1b] NVIDIA A100-SXM4-40GB
node-a1:40211:40230 [0] NCCL INFO Using network IB
node-a1:40211:40230 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    121.0    8.67    8.67      0    119.5    8.77    8.77      0
     4194304       1048576     float     sum      -1    377.2   11.12   11.12      0    380.9   11.01   11.01      0
    16777216       4194304     float     sum      -1   1402.8   11.96   11.96      0   1398.1   12.00   12.00      0
    67108864      16777216     float     sum      -1   5570.3   12.05   12.05      0   5577.9   12.03   12.03      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 10.9488
#
"""


def _scan(text: str) -> tuple[nt.NcclTestsTables, list[str]]:
    scanner = nt.NcclTestsTables()
    left = [line for line in text.splitlines() if not scanner.feed(line)]
    return scanner, left


def test_a_table_with_its_header_ranks_and_interleaved_nccl_lines():
    scanner, left = _scan(TABLE)
    s = scanner.summary()
    assert [line for line in left if line.strip()] == [  # the NCCL lines are the NCCL scanner's
        "node-a1:40211:40230 [0] NCCL INFO Using network IB",
        "node-a1:40211:40230 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA"]
    assert s["rows"] == 4 and s["tables"] == 1 and s["sizes"] == [1048576, 67108864]
    assert s["peak_busbw_gb_s"] == 12.05 and s["peak_size"] == 67108864 and s["largest_busbw_gb_s"] == 12.05
    assert s["avg_busbw_gb_s"] == 10.9488 and s["wrong_rows"] == 0 and s["threads_gpus"] == [1, 1]
    assert s["hosts"] == ["node-a1", "node-b4"] and s["gpus"] == ["NVIDIA A100-SXM4-40GB"]
    assert nt.describe(s) == ("nccl-tests table: 4 sizes 1 MiB..64 MiB; peak busbw 12.05 GB/s at 64 MiB; 2 ranks "
                              "on 2 hosts (NVIDIA A100-SXM4-40GB)")


def test_rows_without_header_old_columns_broadcast_and_wrong_counts():
    # nccl-tests before 2.10: no root column, `error` as a float; broadcast_perf: a root and no reduction op;
    # a row whose in-place group reports wrong results
    old = nt.parse_row("    33554432       8388608   float     sum    3120.4   10.75   10.75  0e+00    3101.7   10.82   10.82  0e+00")
    assert old and old["root"] is None and old["oop"][2] == 10.75 and old["ip"][3] == 0.0
    bcast = nt.parse_row("   2097152     524288   float       0    512.3    4.09    4.09    N/A    498.1    4.21    4.21    N/A")
    assert bcast and bcast["redop"] == "" and bcast["root"] == 0 and bcast["ip"][2] == 4.21
    scanner, _ = _scan("./build/reduce_scatter_perf -b 8M -e 8M -g 4\n"
                       "     8388608        524288     float     sum      -1    640.0   13.11    9.83      0    "
                       "655.0   12.81    9.61      3\n")
    s = scanner.summary()
    assert s["op"] == "reduce_scatter" and s["wrong_rows"] == 1 and s["ranks"] == [] and s["peak_busbw_gb_s"] == 9.83


def test_lines_that_are_not_result_rows():
    for line in ("  1024   256   float   sum   -1   5.1   0.2   0.2",  # one group cut short
                 "  1024   256   tensor   sum   -1   5.1   0.2   0.2   0   5.0   0.2   0.2   0",  # no NCCL data type
                 "step 1024 256 float loss 0.51 lr 0.1 tok/s 3000",
                 "#",  # a lone '#' outside any nccl-tests output
                 "# batch 32, all good"):
        scanner = nt.NcclTestsTables()
        assert not scanner.feed(line) and scanner.summary() is None, line


def test_a_table_in_a_log_is_read_and_diagnosed_as_stated_not_judged(tmp_path):
    # before this reader the file was refused ("not telemetry this playbook can read")
    from playbook.diagnosis import diagnose
    from playbook.readers import read_file

    log = tmp_path / "allreduce.log"
    log.write_text(TABLE)
    bundle = read_file(log)
    assert len(bundle.nccl) == 2  # the interleaved NCCL lines stay NCCL facts
    summary = bundle.meta[f"nccl_tests:{log}"]
    assert summary["peak_busbw_gb_s"] == 12.05
    top = diagnose(bundle).hypotheses[0]
    assert top["id"] == "insufficient_data"  # busbw without the links' rate names no cause, and vouches for nothing
    assert "peak busbw 12.05 GB/s at 64 MiB" in top["evidence"][0]


def test_info_shows_the_table_and_no_empty_read(tmp_path):
    from playbook.commands import info
    from playbook.readers import read_file

    log = tmp_path / "allreduce.log"
    log.write_text("".join(line + "\n" for line in TABLE.splitlines() if "NCCL INFO" not in line))
    text = info.render(info.summarize(read_file(log)))
    assert "nccl-tests table: 4 sizes 1 MiB..64 MiB; peak busbw 12.05 GB/s at 64 MiB" in text
    assert "no rows read" not in text
