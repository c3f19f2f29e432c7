"""The reading the seventeenth held-out round (tests/data/eval/heldout17/SOURCES.md) asked for, on inputs written
here apart from the round's own files:

- a pasted loop of dcgm-exporter scrapes with a `date` line before each: each scrape at its clock line's time
  (readers.clock_line, readers.dcgm), not on a synthetic 1 s clock;
- `aws cloudwatch get-metric-statistics` (Label + Datapoints objects, unordered) and Cloud Monitoring's
  `timeSeries.list` (metric type + labels, points of typed values) as named series (readers.documents), the
  collector's series stamped microseconds apart merged into one poll;
- a `*state` label that says which bytes a series counts (`memory_state="free"`) (readers.headers).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from playbook.readers import clock_line, read_paths
from playbook.readers.headers import meaning

UTC = pd.Timestamp("2025-03-04T05:06:07Z").value


@pytest.mark.parametrize(("line", "tz", "want"), [
    ("Tue Mar  4 05:06:07 UTC 2025", "UTC", UTC),
    ("Tue Mar 4 05:06:07 GMT 2025", "Europe/Berlin", UTC),
    ("Tue Mar  4 06:06:07 CET 2025", "Europe/Berlin", UTC),  # a zone word other than UTC: local time in tz
    ("Tue Mar  4 06:06:07 2025", "Europe/Berlin", UTC),
    ("Tue Mar  4 05:06:07 AM UTC 2025", "UTC", UTC),
    ("Tue, 04 Mar 2025 07:06:07 +0200", "UTC", UTC),
    ("2025-03-04T05:06:07+00:00", "Asia/Tokyo", UTC),
    ("2025-03-04 05:06:07.000", "UTC", UTC),
])
def test_a_clock_line_reads_as_its_time(line, tz, want):
    assert clock_ns_of(line, tz) == want


def clock_ns_of(line: str, tz: str) -> int | None:
    return clock_line.clock_ns(line, tz)


@pytest.mark.parametrize("line", ["1741064767", "2025-03-04", "Tue Mar  4 05:06:07 UTC 2025 GPU 0 97",
                                  "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 97", "# TYPE x gauge", ""])
def test_other_lines_are_not_clock_lines(line):
    assert clock_line.clock_ns(line) is None


def _scrapes(clock_lines: list[str | None]) -> str:
    out = ["$ while true; do date; curl -s localhost:9400/metrics; sleep 30; done"]
    for k, clock in enumerate(clock_lines):
        if clock is not None:
            out.append(clock)
        out.append("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge")
        for g in range(2):
            out.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{g}",device="nvidia{g}",Hostname="h1"}} '
                       f"{90 + g + k}")
    return "\n".join(out) + "\n"


def test_a_pasted_scrape_loop_takes_its_times_from_the_date_lines(tmp_path):
    clocks = ["Wed Jun 11 09:00:00 UTC 2025", "Wed Jun 11 09:00:30 UTC 2025", "Wed Jun 11 09:01:00 UTC 2025"]
    path = tmp_path / "metrics_loop.txt"
    path.write_text(_scrapes(clocks), encoding="utf-8")
    bundle = read_paths([path])
    tele = bundle.telemetry
    t0 = pd.Timestamp("2025-06-11T09:00:00Z").value
    assert sorted(set(tele["time"].astype("int64"))) == [t0, t0 + 30 * 10**9, t0 + 60 * 10**9]
    assert tele.groupby("gpu").size().tolist() == [3, 3]
    assert not any("synthetic" in w for w in bundle.warnings)
    first = tele[tele["time"].astype("int64") == t0].sort_values("gpu")["util_pct"].tolist()
    assert first == [90.0, 91.0]


def test_a_scrape_loop_missing_some_date_lines_stays_on_the_synthetic_clock(tmp_path):
    path = tmp_path / "metrics_loop.txt"
    path.write_text(_scrapes(["Wed Jun 11 09:00:00 UTC 2025", None, None]), encoding="utf-8")
    bundle = read_paths([path])
    assert len(bundle.telemetry) == 6
    assert any("1 of 3 scrapes follow a clock line" in w for w in bundle.warnings)
    assert any("synthetic" in w for w in bundle.warnings)


def test_cloudwatch_get_metric_statistics_reads_as_one_gpu_series(tmp_path):
    """Datapoints as objects, unordered, with two statistics each: the mean is the level, in time order."""
    points = [{"Timestamp": f"2024-02-01T10:0{k}:00+00:00", "Average": 50.0 + k, "Maximum": 99.0, "Unit": "Percent"}
              for k in range(6)]
    doc = {"Label": "nvidia_smi_utilization_gpu", "Datapoints": [points[i] for i in (3, 0, 5, 1, 4, 2)]}
    path = tmp_path / "cw.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    tele = read_paths([path]).telemetry
    assert tele["util_pct"].tolist() == [50.0, 51.0, 52.0, 53.0, 54.0, 55.0]
    assert tele["time"].is_monotonic_increasing
    assert tele["gpu"].nunique() == 1


def _series(kind: str, labels: dict, values: list, stamp_us: int, typed: str) -> dict:
    pts = [{"interval": {"startTime": f"2024-07-01T08:{59 - k:02d}:00.{stamp_us + k:06d}Z",
                         "endTime": f"2024-07-01T08:{59 - k:02d}:00.{stamp_us + k:06d}Z"},
            "value": {typed: v}} for k, v in enumerate(values)]  # newest first, as the API returns them
    return {"metric": {"type": kind, "labels": labels}, "resource": {"type": "gce_instance",
            "labels": {"instance_id": "1", "zone": "us-central1-a"}}, "metricKind": "GAUGE", "points": pts}


def test_cloud_monitoring_time_series_read_as_gpu_metrics(tmp_path):
    """Two GPUs' utilization, and memory used / free by a state label, stamped microseconds apart per series:
    one poll a minute per GPU with utilization and the used bytes (int64 as strings), never the free ones."""
    series = []
    for g in range(2):
        gpu = {"gpu_number": str(g), "model": "NVIDIA L4", "uuid": f"GPU-{g}"}
        series.append(_series("agent.googleapis.com/gpu/utilization", gpu, [10.0 * g + k for k in range(5)],
                              120 + g, "doubleValue"))
        used = [str((2 + g) * 2**30)] * 5
        free = [str(20 * 2**30)] * 5
        series.append(_series("agent.googleapis.com/gpu/memory/bytes_used", {**gpu, "memory_state": "used"}, used,
                              480 + g, "int64Value"))
        series.append(_series("agent.googleapis.com/gpu/memory/bytes_used", {**gpu, "memory_state": "free"}, free,
                              900 + g, "int64Value"))
    path = tmp_path / "ts.json"
    path.write_text(json.dumps({"timeSeries": series, "unit": "%"}), encoding="utf-8")
    tele = read_paths([path]).telemetry
    assert tele.groupby("gpu").size().tolist() == [5, 5]
    g1 = tele[tele["gpu"] == tele["gpu"].max()].sort_values("time")
    assert g1["util_pct"].tolist() == [14.0, 13.0, 12.0, 11.0, 10.0]  # oldest first
    assert np.allclose(g1["mem_used_mib"], 3 * 1024)


def test_a_state_label_says_which_bytes_a_series_counts():
    assert meaning('gpu/memory/bytes_used{memory_state="used", gpu_number="1"}').role == "mem_used_mib"
    assert meaning('gpu/memory/bytes_used{memory_state="used", gpu_number="1"}').gpu == 1
    assert meaning('gpu/memory/bytes_used{memory_state="free", gpu_number="1"}').role != "mem_used_mib"
    assert meaning('DCGM_FI_DEV_FB_USED{gpu="0", state="ok"}').role == "mem_used_mib"


SACCT = """JobID|JobName|TRESUsageInAve|TRESUsageInMax|TRESUsageInTot|
7001|train||||
7001.batch|batch|cpu=01:02:03,gres/gpumem=12G,gres/gpuutil=37,mem=3G|cpu=01:02:03,gres/gpumem=14G,gres/gpuutil=88,mem=3G|cpu=01:02:03,gres/gpuutil=37|
7001.extern|extern|cpu=00:00:00,gres/gpumem=0,gres/gpuutil=0,mem=0|cpu=00:00:00,gres/gpumem=0,gres/gpuutil=0,mem=0|gres/gpuutil=0|
"""


def test_sacct_tres_usage_reads_each_steps_mean_and_max(tmp_path):
    """A header names the statistics; the job line and the all-zero .extern step hold no GPU work; a total is no
    level (passed over, counted); gpumem without --noconvert carries its binary unit."""
    from playbook.analysis.job_usage import jobs_of

    path = tmp_path / "sacct.txt"
    path.write_text(SACCT, encoding="utf-8")
    bundle = read_paths([path])
    jobs = sorted(jobs_of(bundle), key=lambda j: j["stat"])
    assert [(j["job"], j["stat"], j["util_pct"], j["mem_mib"]) for j in jobs] == [
        ("7001.batch", "max", 88.0, 14 * 1024.0), ("7001.batch", "mean", 37.0, 12 * 1024.0)]
    assert any("TRESUsageInTot".lower() in w.lower() for w in bundle.warnings)


def test_sacct_without_a_header_takes_the_fields_from_the_pasted_command(tmp_path):
    from playbook.analysis.job_usage import jobs_of

    path = tmp_path / "sacct.txt"
    path.write_text("$ sacct -j 55 -Pno JobID,TRESUsageInMax --noconvert\n55\n"
                    "55.0|gres/gpumem=1073741824,gres/gpuutil=64\n", encoding="utf-8")
    (job,) = jobs_of(read_paths([path]))
    assert (job["stat"], job["util_pct"], job["mem_mib"]) == ("max", 64.0, 1024.0)


def test_seff_gpu_section_reads_the_jobs_maximum(tmp_path):
    from playbook.analysis.job_usage import jobs_of

    path = tmp_path / "seff.txt"
    path.write_text("Job ID: 912\nState: COMPLETED (exit code 0)\nJob Wall-clock time: 1-02:00:00\n"
                    "Number of GPUs: 4\nGPU Type: a100\nMax GPU Utilization: 23%\n"
                    "Max GPU Memory Utilized: 3.50 GiB\n", encoding="utf-8")
    (job,) = jobs_of(read_paths([path]))
    assert job == {"job": "912", "stat": "max", "util_pct": 23.0, "mem_mib": 3.5 * 1024, "gpus": 4,
                   "elapsed_s": 26 * 3600.0, "model": "a100", "source": str(path)}


def test_a_step_with_its_mean_and_its_maximum_is_priced_by_its_mean(tmp_path):
    """TRESUsageInAve 37 % and TRESUsageInMax 88 % of one step: idle 63 % of it, not the average of the two
    figures' idle shares (37.5 %) and not "at least"."""
    from playbook.analysis.accounting import job_usage_accounting

    path = tmp_path / "sacct.txt"
    path.write_text(SACCT, encoding="utf-8")
    acc = job_usage_accounting(read_paths([path]))
    (bucket,) = acc.buckets
    assert bucket.share == pytest.approx(0.63)
    assert "at least" not in bucket.detail and "on average 37% busy" in bucket.detail


def _host_scrapes(clock_lines: list[str], gpu: bool) -> str:
    """A pasted `date; curl node_exporter` loop: idle rises 15 s of 30 s on each of 2 CPUs (50 % busy)."""
    out = []
    for k, clock in enumerate(clock_lines):
        out.append(clock)
        for cpu in range(2):
            out.append(f'node_cpu_seconds_total{{cpu="{cpu}",mode="idle"}} {1000 + 15 * k}')
            out.append(f'node_cpu_seconds_total{{cpu="{cpu}",mode="user"}} {500 + 15 * k}')
        if gpu:
            out.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-0",Hostname="h1"}} {90 + k}')
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("gpu", [True, False])
def test_node_exporter_samples_of_a_scrape_loop_take_the_date_lines_too(tmp_path, gpu):
    clocks = ["Wed Jun 11 09:00:00 UTC 2025", "Wed Jun 11 09:00:30 UTC 2025", "Wed Jun 11 09:01:00 UTC 2025"]
    path = tmp_path / "node_loop.txt"
    path.write_text(_host_scrapes(clocks, gpu), encoding="utf-8")
    bundle = read_paths([path])
    t0 = pd.Timestamp("2025-06-11T09:00:00Z").value
    assert bundle.host["time"].astype("int64").tolist() == [t0 + 30 * 10**9, t0 + 60 * 10**9]
    assert bundle.host["cpu_pct"].tolist() == pytest.approx([50.0, 50.0])
    assert not any("synthetic" in w for w in bundle.warnings)
