"""Job-efficiency tools' reports (readers/job_reports.py), on inputs written here apart from the fifty-eighth
held-out round's files (tests/data/eval/heldout58/SOURCES.md), each in a layout its tool's source prints
(PrincetonUniversity/jobstats output_formatters.py, troycomi/reportseff, Job Defense Shield's alert emails,
NVIDIA/DCGM dcgmi/ProcessStats.cpp) with other jobs, nodes, widths and figures:

- jobstats: a GPU per `<node> (GPU <i>): <util>%` line, its maximum memory from the memory section, the run time
  with days; a GPU at 0% beside working ones is an allocation never used (its own bucket, named: unused_gpus); MIG ("unknown")
  is no measurement; the overall meter alone is one figure for the job's GPUs;
- job tables by their header's words: reportseff -g's node and GPU rows (shorter rows fill the last columns), a
  Job Defense Shield table's GPUs-Allocated / GPUs-Unused / Hours;
- dcgmi stats -v: a figure per `GPU ID` block (the summary not counted twice), its XID / slowdown rows as events; a
  summary without utilization, or one that recorded no process, is said, not read as an idle GPU.
"""

from __future__ import annotations

import pytest

from playbook.core.errors import InputError
from playbook.diagnosis import diagnose
from playbook.readers import detect, job_reports, read_paths
from playbook.readers.slurm_usage import META_PREFIX

JOBSTATS_HALF_UNUSED = """
================================================================================
                              Slurm Job Statistics
================================================================================
         Job ID: 5551234
   User/Account: someone/chem
       Job Name: md_run
          State: TIMEOUT
          Nodes: 1
      CPU Cores: 16
     CPU Memory: 64GB (4GB per CPU-core)
           GPUs: 4
  QOS/Partition: gpu-medium/gpu
        Cluster: stellar
     Start Time: Mon Jan 6, 2025 at 9:12 AM
       Run Time: 1-00:00:41
     Time Limit: 1-00:00:00

                              Overall Utilization
================================================================================
  CPU utilization  [|||||||||||                                    22%]
  CPU memory usage [||                                              4%]
  GPU utilization  [||||||||||||||||||||||                         44%]
  GPU memory usage [||||||||||                                     20%]

                              Detailed Utilization
================================================================================
  GPU utilization per node
      stellar-m01g3 (GPU 0): 88.1%
      stellar-m01g3 (GPU 1): 0% <-- GPU was not used
      stellar-m01g3 (GPU 2): 87.9%
      stellar-m01g3 (GPU 3): 0% <-- GPU was not used

  GPU memory usage per node - maximum used/total
      stellar-m01g3 (GPU 0): 30.2GB/80.0GB (37.8%)
      stellar-m01g3 (GPU 1): 512.0MB/80.0GB (0.6%)
      stellar-m01g3 (GPU 2): 30.1GB/80.0GB (37.6%)
      stellar-m01g3 (GPU 3): 512.0MB/80.0GB (0.6%)
"""


def _write(tmp_path, text, name="report.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _buckets(d) -> dict[str, dict]:
    return {b["kind"]: b for b in d.accounting["buckets"]}


def _jobs(path):
    bundle = read_paths([str(path)])
    (section,) = [v for k, v in bundle.meta.items() if k.startswith(META_PREFIX)]
    return bundle, section


def test_jobstats_reads_a_figure_per_gpu_with_its_peak_memory_and_days_of_run_time(tmp_path):
    path = _write(tmp_path, JOBSTATS_HALF_UNUSED)
    assert detect.detect(path) == "job_reports"
    _, section = _jobs(path)
    jobs = section["jobs"]
    assert [(j["host"], j["gpu"], j["util_pct"]) for j in jobs] == [
        ("stellar-m01g3", "0", 88.1), ("stellar-m01g3", "1", 0.0), ("stellar-m01g3", "2", 87.9),
        ("stellar-m01g3", "3", 0.0)]
    assert jobs[0]["mem_mib"] == pytest.approx(30.2 * 1024) and jobs[1]["mem_mib"] == pytest.approx(512.0)
    assert all(j["elapsed_s"] == 86441 and j["stat"] == "mean" and j["mem_stat"] == "max" for j in jobs)


def test_gpus_at_zero_beside_working_peers_are_an_allocation_never_used_and_named(tmp_path):
    d = diagnose(read_paths([str(_write(tmp_path, JOBSTATS_HALF_UNUSED))]))
    assert (d.verdict["id"], d.verdict["names"]) == ("unused_gpus", ["stellar-m01g3 GPU 1", "stellar-m01g3 GPU 3"])
    buckets = _buckets(d)
    assert buckets["unused_gpus"]["cause"] == "unused_gpus"  # the report's own figure: measured, not inferred
    assert buckets["unused_gpus"]["names"] == ["stellar-m01g3 GPU 1", "stellar-m01g3 GPU 3"]
    assert buckets["unused_gpus"]["share"] == pytest.approx(0.5)
    # the two working GPUs idle 12% of their time: the rest of the loss, not the unused pair's
    assert buckets["job_idle"]["share"] == pytest.approx((0.119 + 0.121) / 4, abs=1e-3)


def test_a_jobstats_report_of_a_mig_job_measures_nothing_and_says_so(tmp_path):
    text = JOBSTATS_HALF_UNUSED.replace("  GPU utilization  [||||||||||||||||||||||                         44%]",
                                        "  GPU utilization  [     GPU utilization is unknown for MIG jobs      ]")
    lines = [ln for ln in text.splitlines() if "(GPU" not in ln or "GB/" in ln]
    lines.insert(lines.index("  GPU utilization per node") + 1,
                 "      stellar-m01g3 (GPU 0): GPU utilization is unknown for MIG jobs")
    d = diagnose(read_paths([str(_write(tmp_path, "\n".join(lines)))]))
    assert d.verdict["id"] == "insufficient_data"
    assert any("GPU utilization is unknown" in line for line in d.hypotheses[0]["evidence"])


def test_the_overall_meter_alone_is_one_figure_for_the_jobs_gpus(tmp_path):
    text = "\n".join(ln for ln in JOBSTATS_HALF_UNUSED.splitlines() if "(GPU" not in ln)
    _, section = _jobs(_write(tmp_path, text))
    assert [(j["util_pct"], j["gpus"], j["elapsed_s"]) for j in section["jobs"]] == [(44.0, 4, 86441.0)]


REPORTSEFF = """\
$ reportseff -g 8812001
JobID               State       Elapsed  TimeEff   CPUEff   MemEff   GPUEff   GPUMem
8812001           COMPLETED    02:30:00  62.5%     71.0%    40.2%    46.1%    55.0%
  node-a17                                          70.4%    40.0%    46.1%    55.0%
    0                                                                  92%     60.1%
    1                                                                   0%      0.2%
  node-a18                                          71.6%    40.4%    46.0%    54.9%
    0                                                                  91%     59.9%
    1                                                                   1%      0.3%
"""


def test_reportseff_reads_each_gpu_row_under_its_node(tmp_path):
    _, section = _jobs(_write(tmp_path, REPORTSEFF))
    assert [(j["host"], j["gpu"], j["util_pct"], j["elapsed_s"]) for j in section["jobs"]] == [
        ("node-a17", "0", 92.0, 9000.0), ("node-a17", "1", 0.0, 9000.0),
        ("node-a18", "0", 91.0, 9000.0), ("node-a18", "1", 1.0, 9000.0)]
    d = diagnose(read_paths([str(tmp_path / "report.txt")]))
    assert _buckets(d)["unused_gpus"]["names"] == ["node-a17 GPU 1"]  # 1% is used, however little


def test_reportseff_without_gpu_rows_takes_the_node_rows_then_the_job(tmp_path):
    text = "\n".join(ln for ln in REPORTSEFF.splitlines() if not ln.startswith("    "))
    _, section = _jobs(_write(tmp_path, text))
    assert [(j["host"], j["util_pct"]) for j in section["jobs"]] == [("node-a17", 46.1), ("node-a18", 46.0)]
    text = "\n".join(ln for ln in REPORTSEFF.splitlines() if not ln.startswith("  "))
    _, section = _jobs(_write(tmp_path, text, "job_only.txt"))
    assert [(j["job"], j["util_pct"]) for j in section["jobs"]] == [("8812001", 46.1)]


JDS_WARNING = """\
Hi Grace (ghopper),

You have GPU job(s) that have been running for nearly 1 hour but appear to not
be using the GPU(s):

       JobID    Cluster Partition  GPUs-Allocated  GPUs-Unused GPU-Util  Hours
     71234567    della     pli            8             4         45%       3
"""


def test_a_job_table_prices_its_unused_gpus_apart_from_the_working_ones_idle_time(tmp_path):
    _, section = _jobs(_write(tmp_path, JDS_WARNING))
    (job,) = section["jobs"]
    assert (job["job"], job["gpus"], job["gpus_unused"], job["util_pct"], job["elapsed_s"]) == (
        "71234567", 8, 4, 45.0, 10800.0)
    d = diagnose(read_paths([str(tmp_path / "report.txt")]))
    shares = {kind: b["share"] for kind, b in _buckets(d).items()}
    # 4 of 8 GPUs never used: half the GPU time; the 4 working read 90% (a 45% mean over 8): 5% more idle
    assert shares["unused_gpus"] == pytest.approx(0.5) and shares["job_idle"] == pytest.approx(0.05)


DCGMI_VERBOSE = """\
Successfully retrieved statistics for job: train-42.
+------------------------------------------------------------------------------+
| GPU ID: 0                                                                    |
+====================================+=========================================+
|-----  Execution Stats  ------------+-----------------------------------------|
| Start Time                         | Tue Feb 11 10:00:00 2025                |
| End Time                           | Tue Feb 11 12:00:00 2025                |
| Total Execution Time (sec)         | 7200.0                                  |
| No. of Processes                   | 1                                       |
+-----  Performance Stats  ----------+-----------------------------------------+
| Energy Consumed (Joules)           | 3900000                                 |
| Power Usage (Watts)                | Avg: 541.7, Max: 699.1, Min: 88.2       |
| Max GPU Memory Used (bytes)        | 68719476736                             |
| SM Clock (MHz)                     | Avg: 1610, Max: 1980, Min: 1095         |
| Memory Clock (MHz)                 | Avg: 2619, Max: 2619, Min: 2619         |
| SM Utilization (%)                 | Avg: 97, Max: 100, Min: 0               |
| Memory Utilization (%)             | Avg: 41, Max: 63, Min: 0                |
| PCIe Rx Bandwidth (megabytes)      | Avg: N/A, Max: N/A, Min: N/A            |
| PCIe Tx Bandwidth (megabytes)      | Avg: N/A, Max: N/A, Min: N/A            |
+-----  Event Stats  ----------------+-----------------------------------------+
| Single Bit ECC Errors              | 0                                       |
| Double Bit ECC Errors              | 0                                       |
| PCIe Replay Warnings               | 0                                       |
| Critical XID Errors                | 0                                       |
+-----  Slowdown Stats  -------------+-----------------------------------------+
| Due to - Power (%)                 | 0                                       |
|        - Thermal (%)               | 31.5                                    |
|        - Reliability (%)           | 0                                       |
|        - Board Limit (%)           | 0                                       |
|        - Low Utilization (%)       | 2.1                                     |
|        - Sync Boost (%)            | 0                                       |
+-----  Overall Health  -------------+-----------------------------------------+
| Overall Health                     | Healthy                                 |
+------------------------------------+-----------------------------------------+

+------------------------------------------------------------------------------+
| GPU ID: 1                                                                    |
+====================================+=========================================+
|-----  Execution Stats  ------------+-----------------------------------------|
| Total Execution Time (sec)         | 7200.0                                  |
| No. of Processes                   | 1                                       |
+-----  Performance Stats  ----------+-----------------------------------------+
| Max GPU Memory Used (bytes)        | 68719476736                             |
| SM Utilization (%)                 | Avg: 96, Max: 100, Min: 0               |
+-----  Event Stats  ----------------+-----------------------------------------+
| Double Bit ECC Errors              | 0                                       |
| PCIe Replay Warnings               | 0                                       |
| Critical XID Errors                | 1                                       |
| XID (Hr:Min:Sec since start)       | 1:12:05                                 |
+-----  Slowdown Stats  -------------+-----------------------------------------+
| Due to - Power (%)                 | 0                                       |
|        - Thermal (%)               | 31.5                                    |
+------------------------------------+-----------------------------------------+
"""


def test_dcgmi_stats_verbose_reads_each_gpu_and_its_events(tmp_path):
    bundle, section = _jobs(_write(tmp_path, DCGMI_VERBOSE))
    assert [(j["job"], j["util_pct"], j["elapsed_s"], j["mem_mib"]) for j in section["jobs"]] == [
        ("train-42 GPU 0", 97.0, 7200.0, 65536.0), ("train-42 GPU 1", 96.0, 7200.0, 65536.0)]
    events = bundle.events
    assert sorted(events["kind"]) == ["throttle", "xid"]  # the job's thermal share once, not per GPU block
    assert events.loc[events["kind"] == "xid", "host"].tolist() == ["GPU 1"]
    assert "thermal 31.5%" in events.loc[events["kind"] == "throttle", "detail"].iloc[0]


def test_a_dcgmi_summary_without_utilization_is_said_not_read_as_idle(tmp_path):
    text = """Successfully retrieved statistics for job: 77.
+------------------------------------------------------------------------------+
| Summary                                                                      |
+====================================+=========================================+
|-----  Execution Stats  ------------+-----------------------------------------|
| Total Execution Time (sec)         | 900.5                                   |
| No. of Processes                   | 2                                       |
+-----  Performance Stats  ----------+-----------------------------------------+
| Energy Consumed (Joules)           | 210000                                  |
| Max GPU Memory Used (bytes)        | 1073741824                              |
| Clocks and PCIe Performance        | Available per GPU in verbose mode       |
+------------------------------------+-----------------------------------------+
"""
    d = diagnose(read_paths([str(_write(tmp_path, text))]))
    assert d.verdict["id"] == "insufficient_data"
    assert any("dcgmi stats -v" in line for line in d.hypotheses[0]["evidence"])


@pytest.mark.parametrize("text", [
    "epoch 3 job 17 done gpu_util=54.2 loss=0.31\njob 18 started gpu_util=12\n",  # a log, not a table
    "JobID State Elapsed TimeEff CPUEff MemEff\n123 COMPLETED 00:10:00 5.0% 80.0% 10.0%\n",  # no GPU column
])
def test_text_that_is_no_job_report_is_not_taken(text):
    assert not job_reports.sniff(text)


def test_a_jobstats_header_without_figures_is_a_one_line_error(tmp_path):
    path = _write(tmp_path, "                              Slurm Job Statistics\n  GPU utilization  (Value is unknown)\n")
    with pytest.raises(InputError, match="report.txt: no GPU utilization figure"):
        job_reports.read(path)


def test_dcgmi_xids_name_the_gpu_as_failing_and_the_slowdown_share_is_throttling(tmp_path):
    d = diagnose(read_paths([str(_write(tmp_path, DCGMI_VERBOSE))]))
    assert (d.verdict["id"], d.hypotheses[0]["names"]) == ("hardware_fault", ["GPU 1"])
    assert d.hypotheses[1]["id"] == "throttling"
    no_xid = DCGMI_VERBOSE.replace("| Critical XID Errors                | 1 ", "| Critical XID Errors                | 0 ")
    assert diagnose(read_paths([str(_write(tmp_path, no_xid, "no_xid.txt"))])).verdict["id"] == "throttling"


# Job Defense Shield's own tables (PrincetonUniversity/job_defense_shield): where a GPUs-Unused column stands, the
# utilization column beside it is the unused GPUs' reading — `GPU-Unused-Util`, or `GPU-Util` that
# cancel_zero_gpu_jobs.py sets to "0%" for every row — not the job's mean; `Zero-Util-GPU-Hours` is GPU-hours
JDS_ZERO_HOURS = """\
You have consumed 84 GPU-hours at 0% GPU utilization in the past 7 days:

     JobID     GPUs  GPUs-Unused GPU-Unused-Util  Zero-Util-GPU-Hours
    73300001    8          8           0%                 36
    73300002    6          3           0%                 12
"""


def test_a_zero_util_hours_table_reads_the_unused_gpus_at_zero_not_its_hours_as_a_percent(tmp_path):
    _, section = _jobs(_write(tmp_path, JDS_ZERO_HOURS))
    assert [(j["job"], j["util_pct"], j["gpus"], j["gpus_unused"]) for j in section["jobs"]] == [
        ("73300001", 0.0, 8, 8), ("73300002", 0.0, 6, 3)]
    assert [j["elapsed_s"] for j in section["jobs"]] == [36 / 8 * 3600, 12 / 3 * 3600]


def test_a_warning_table_s_zero_is_the_unused_gpus_not_the_working_ones(tmp_path):
    text = ("     JobID    Cluster Partition  GPUs-Allocated  GPUs-Unused GPU-Util  Hours\n"
            "   73300003    della     gpu            8             4         0%       2\n")
    d = diagnose(read_paths([str(_write(tmp_path, text))]))
    buckets = _buckets(d)
    assert buckets["unused_gpus"]["share"] == pytest.approx(0.5)
    assert "job_idle" not in buckets  # the four working GPUs' utilization is not in the table: not called idle


def test_reportseff_n_keeps_a_single_node_job_beside_a_multi_node_one(tmp_path):
    # reportseff -n prints node rows only for a job on several nodes (job.get_node_entries): the single-node job's
    # own row is its figure, not dropped because another job has finer rows
    text = ("JobID               State       Elapsed  TimeEff   CPUEff   MemEff   GPUEff   GPUMem\n"
            "9100001           COMPLETED    01:00:00  50.0%     80.0%    30.0%    35.0%    40.0%\n"
            "9100002           COMPLETED    01:00:00  50.0%     81.0%    31.0%    90.0%    60.0%\n"
            "  node-b01                                          80.0%    30.0%    89.0%    60.0%\n"
            "  node-b02                                          82.0%    32.0%    91.0%    60.0%\n")
    _, section = _jobs(_write(tmp_path, text))
    assert [(j["job"], j["util_pct"]) for j in section["jobs"]] == [
        ("9100001", 35.0), ("9100002 node-b01", 89.0), ("9100002 node-b02", 91.0)]


def test_a_job_whose_gpus_all_read_zero_is_idle_not_unused_beside_another_job_s_busy_gpus(tmp_path):
    # reportseff -g over two jobs: 9200001 never used its two GPUs (the whole job idle), 9200002 kept its two busy;
    # "never used while the job's other GPUs worked" is for a GPU beside working ones of the same job
    text = ("JobID               State       Elapsed  TimeEff   CPUEff   MemEff   GPUEff   GPUMem\n"
            "9200001           COMPLETED    01:00:00  50.0%     90.0%    30.0%     0.0%     0.0%\n"
            "  node-c01                                          90.0%    30.0%     0.0%     0.0%\n"
            "    0                                                                  0%      0.0%\n"
            "    1                                                                  0%      0.0%\n"
            "9200002           COMPLETED    01:00:00  50.0%     90.0%    30.0%    95.0%    60.0%\n"
            "  node-c02                                          90.0%    30.0%    95.0%    60.0%\n"
            "    0                                                                 95%     60.0%\n"
            "    1                                                                 95%     60.0%\n")
    d = diagnose(read_paths([str(_write(tmp_path, text))]))
    buckets = _buckets(d)
    assert "unused_gpus" not in buckets
    assert buckets["job_idle"]["share"] == pytest.approx((1 + 1 + 0.05 + 0.05) / 4)


def test_dcgmi_s_doubles_in_exponent_form_are_read_whole(tmp_path):
    # dcgmi prints doubles with `ss << val` (CommandOutputController::HelperDisplayValue): a slowdown share of a few
    # microseconds is "6.2e-05" percent, a run of two weeks "1.2096e+06" seconds — neither 6.2% nor 1.2 s
    text = (DCGMI_VERBOSE.replace("| 7200.0                                  |", "| 1.2096e+06                              |")
            .replace("| 31.5                                    |", "| 6.2e-05                                 |"))
    bundle, section = _jobs(_write(tmp_path, text))
    assert [j["elapsed_s"] for j in section["jobs"]] == [1209600.0, 1209600.0]
    assert sorted(bundle.events["kind"]) == ["xid"]


def test_a_node_row_at_zero_names_the_node_not_a_gpu_none(tmp_path):
    # reportseff -n: a node's row (no GPU index) at 0% beside a working node: its GPUs never used, named by the node
    text = ("JobID               State       Elapsed  TimeEff   CPUEff   MemEff   GPUEff   GPUMem\n"
            "9300002           COMPLETED    01:00:00  50.0%     81.0%    31.0%    45.0%    60.0%\n"
            "  node-d01                                          80.0%    30.0%    90.0%    60.0%\n"
            "  node-d02                                          82.0%    32.0%     0.0%     0.0%\n")
    d = diagnose(read_paths([str(_write(tmp_path, text))]))
    unused = _buckets(d)["unused_gpus"]
    assert unused["names"] == ["node-d02"] and "None" not in unused["detail"]


def test_dcgmi_stats_of_two_jobs_in_one_file_keep_each_job_s_name(tmp_path):
    # `for j in a b; do dcgmi stats -j $j -v; done > stats.txt`: each block belongs to the job line above it
    one = DCGMI_VERBOSE.split("+------------------------------------------------------------------------------+\n"
                              "| GPU ID: 1")[0]
    idle = one.replace("train-42", "prep-7").replace("Avg: 97, Max: 100, Min: 0", "Avg: 0, Max: 0, Min: 0")
    bundle, section = _jobs(_write(tmp_path, idle + one))
    assert [(j["job"], j["util_pct"]) for j in section["jobs"]] == [("prep-7 GPU 0", 0.0), ("train-42 GPU 0", 97.0)]
    d = diagnose(bundle)
    assert "unused_gpus" not in _buckets(d)  # prep-7 never used its GPU: an idle job, not a GPU beside busy ones


def test_two_jobstats_reports_in_one_file_are_two_jobs(tmp_path):
    # `for j in ...; do jobstats $j; done`: each report's GPUs under its own job id and run time
    second = (JOBSTATS_HALF_UNUSED.replace("5551234", "5551299").replace("1-00:00:41", "02:00:00")
              .replace(": 0% <-- GPU was not used", ": 91.0%"))
    _, section = _jobs(_write(tmp_path, JOBSTATS_HALF_UNUSED + "\n" + second))
    got = [(j["job"], j["util_pct"], j["elapsed_s"]) for j in section["jobs"]]
    assert len(got) == 8
    assert got[1] == ("5551234 stellar-m01g3 (GPU 1)", 0.0, 86441.0)
    assert got[5] == ("5551299 stellar-m01g3 (GPU 1)", 91.0, 7200.0)


@pytest.mark.parametrize("damaged", [
    "| Max GPU Memory Used (bytes) | 1" + " " * 60_000 + "x",  # a box row never closed
    "| a | b" + " " * 60_000 + "x",
    "      della-i14g2 (GPU 0): " + " " * 60_000 + "y",  # a jobstats GPU line cut into spaces
])
def test_a_long_damaged_line_is_read_in_linear_time(tmp_path, damaged):
    import time
    text = (DCGMI_VERBOSE if damaged.startswith("|") else JOBSTATS_HALF_UNUSED).replace(
        "| No. of Processes                   | 1                                       |\n", damaged + "\n", 1)
    if not damaged.startswith("|"):
        text = text.replace("      stellar-m01g3 (GPU 2): 87.9%\n", damaged + "\n")
    start = time.process_time()  # CPU seconds of this process: a hang guard, other jobs do not count
    _jobs(_write(tmp_path, text))
    assert time.process_time() - start < 5.0
