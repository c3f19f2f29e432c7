"""Held-out GPU telemetry formats (tests/data/heldout_telemetry, sources in its SOURCES.md): every file is read
with the right GPUs, utilization series and time axis (expected.json), and metric names spelled any of the ways
tools spell them mean the same column."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playbook.readers import detect, headers, read_paths

DATA = Path(__file__).parent.parent / "data" / "heldout_telemetry"
EXPECTED = {k: v for k, v in json.loads((DATA / "expected.json").read_text()).items() if not k.startswith("_")}


def test_every_corpus_file_has_an_expectation():
    files = {p.name for p in DATA.iterdir() if p.name not in ("expected.json", "SOURCES.md")}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_heldout_file_reads(name):
    want = EXPECTED[name]
    bundle = read_paths([DATA / name])
    tel = bundle.telemetry
    gpus = sorted(tel["gpu"].unique())
    assert len(gpus) == want["gpus"], (name, gpus)
    for gpu, mean in zip(gpus, want["util_mean"], strict=True):
        util = tel.loc[tel["gpu"] == gpu, "util_pct"].to_numpy(dtype=float)
        assert len(util) == want["samples"], (name, gpu, len(util))
        assert np.isfinite(util).all(), (name, gpu)
        assert abs(util.mean() - mean) < 1.0, (name, gpu, util.mean())
    seconds = tel["time"].astype("int64").to_numpy() / 1e9
    if want["t0"] is not None:
        assert seconds.min() == pytest.approx(want["t0"], abs=1e-3), name
        assert seconds.max() - seconds.min() == pytest.approx(want["span_s"], abs=1e-3), name
    else:  # no clock in the file: synthetic, evenly spaced ticks, and a warning that says so
        assert any("synthetic" in w or "placed" in w or "interval" in w for w in bundle.warnings), bundle.warnings
    # every GPU is sampled at the same ticks (one poll holds them all)
    ticks = [set(tel.loc[tel["gpu"] == g, "time"]) for g in gpus]
    assert all(t == ticks[0] for t in ticks), name


def test_heldout_units_are_converted():
    mlflow = read_paths([DATA / "mlflow_metric_history.csv"]).telemetry
    # MLflow's megabytes are bytes / 1e6: 41943.04 MB is 40000 MiB
    assert mlflow.loc[mlflow["gpu"] == 0, "mem_used_mib"].iloc[0] == pytest.approx(40000, abs=0.1)
    otel = read_paths([DATA / "otel_nvml.prom"]).telemetry
    assert otel["util_pct"].max() == pytest.approx(97)  # a ratio (0-1) becomes percent
    telegraf = read_paths([DATA / "telegraf_nvidia_smi.influx"]).telemetry
    assert telegraf["power_w"].max() == pytest.approx(100 + 3 * 97 + 0.5)  # GPU 1 at 97 %
    assert set(telegraf["host"]) == {"node1"}


def test_near_misses_stay_unread():
    """Host metrics that share words with GPU metrics are not GPU telemetry."""
    assert "dcgm" not in detect.matches('node_memory_used_bytes{instance="n1:9100"} 123\n'
                                        'node_disk_io_time_seconds_total{device="sda"} 4\n')
    assert "influx" not in detect.matches("cpu,host=n1,cpu=cpu0 usage_user=12.5 1764615600000000000\n")
    assert "long_csv" not in detect.matches("key,value,timestamp,step\ntrain_loss,2.5,1764615600000,0\n")


# ------------------------------------------------------------------------------------- metric-name spellings
UTIL_WORDS = ["utilization", "util", "Utilization", "gpu_util", "GPU-Util", "utilization.gpu", "gpus_utilization",
              "utilization_gpu", "GpuUtil"]
MEM_WORDS = ["memory_used", "memory.used", "mem_used", "memoryUsed", "fb_used", "memory_usage", "vram_used"]
UNITS = {"": None, "_percentage": "%", "_percent": "%", "_pct": "%", " (%)": "%", " [%]": "%"}
MEM_UNITS = {"_megabytes": "megabytes", "_mib": "mib", " [MiB]": "mib", " (MB)": "mb", "_bytes": "b", "_gib": "gib"}


def _with_gpu(metric: str, gpu: int, form: int) -> str:
    """`metric` for GPU `gpu` in one of the index spellings tools use."""
    return [f"gpu{gpu}_{metric}", f"gpu_{gpu}_{metric}", f"system/gpu_{gpu}_{metric}", f"system.gpu.{gpu}.{metric}",
            f"GPU {gpu} {metric}", f"gpu[{gpu}].{metric}", f"cuda:{gpu} {metric}"][form]


def _labelled(name: str, gpu: int, form: int, unit: str) -> str:
    """A labelled series name (the unit goes on the metric's own name)."""
    base = f"{name}{unit}"
    return [f'{base}{{gpu="{gpu}", Hostname="n1"}}', f'{base}{{GpuIndex="{gpu}",ip="10.0.0.1"}}',
            f"{base} index={gpu}", f'{base}{{gpu_number="{gpu}"}}'][form]


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(word=st.sampled_from(UTIL_WORDS), unit=st.sampled_from(sorted(UNITS)), gpu=st.integers(0, 15),
       form=st.integers(0, 6), labelled=st.integers(-1, 3))
def test_utilization_spellings(word, unit, gpu, form, labelled):
    name = _labelled(word.replace("gpu_", "").replace("GPU-", ""), gpu, labelled, unit) if labelled >= 0 \
        else _with_gpu(word, gpu, form) + unit
    m = headers.meaning(name)
    assert (m.role, m.gpu) == ("util_pct", gpu), name
    if UNITS[unit]:
        assert m.unit == UNITS[unit], name


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(word=st.sampled_from(MEM_WORDS), unit=st.sampled_from(sorted(MEM_UNITS)), gpu=st.integers(0, 15),
       form=st.integers(0, 6))
def test_memory_spellings(word, unit, gpu, form):
    name = _with_gpu(word, gpu, form) + unit
    m = headers.meaning(name)
    assert (m.role, m.gpu, m.unit) == ("mem_used_mib", gpu, MEM_UNITS[unit]), name


@pytest.mark.parametrize("name, gpu", [("Utilization GPU 1 (%)", 1), ("util_gpu0", 0), ("gpu_util_3", 3),
                                       ('DCGM_FI_DEV_GPU_UTIL{gpu="2", UUID="GPU-x"}', 2)])
def test_trailing_and_labelled_indices(name, gpu):
    assert (headers.meaning(name).role, headers.meaning(name).gpu) == ("util_pct", gpu)


def test_shares_of_a_limit_are_not_readings():
    """MLflow logs power both in W and as % of the limit, memory in MB and as % of the total."""
    assert headers.meaning("system/gpu_0_power_usage_percentage").role is None
    assert headers.meaning("system/gpu_0_memory_usage_percentage").role is None
    names = ["timestamp", "system/gpu_0_power_usage_percentage", "system/gpu_0_power_usage_watts"]
    assert [m.role for m in headers.assign(names).values()] == ["time", "power_w"]


def test_bare_gpu_names_stay_the_gpu_column():
    for name in ("gpu", "GPU 0", "gpu_id", "gpu0", "index"):
        assert headers.meaning(name).role == "gpu", name


def test_smi_q_text_reads_clock_event_reasons():
    """The project's `nvidia-smi -q -d PERFORMANCE` fixture (tests/data/nvidia_smi_q/README.md): GPUs 0 and 3 at
    their power cap (0x4), GPU 5 in hardware + thermal slowdown (0x8 | 0x40); the counters block is not a reason."""
    path = Path(__file__).parent.parent / "data" / "nvidia_smi_q" / "performance-8gpu-thermal.txt"
    tel = read_paths([path]).telemetry.sort_values("gpu")
    assert tel["throttle_reasons"].tolist() == [4, 0, 0, 4, 0, 72, 0, 0]


def test_labelled_columns_of_two_hosts_are_both_kept(tmp_path):
    """A Grafana panel over a fleet: GPU 0 of node n1 and GPU 0 of node n2 are two series, not one."""
    cols = [f'"DCGM_FI_DEV_GPU_UTIL{{gpu=""0"", Hostname=""{h}"", instance=""{h}:9400""}}"' for h in ("n1", "n2")]
    wide = tmp_path / "panel.csv"
    wide.write_text('"Time",' + ",".join(cols) + "\n" + "".join(f"2025-12-01 19:00:{k:02d},{90 + k},{10 + k}\n"
                                                              for k in range(5)))
    long = tmp_path / "rows.csv"
    long.write_text('"Series";"Time";"Value"\n' + "".join(
        f'"DCGM_FI_DEV_GPU_UTIL{{gpu=""0"", instance=""{h}:9400""}}";"2025-12-01T19:00:{k:02d}Z";{v + k}\n'
        for h, v in (("n1", 90), ("n2", 10)) for k in range(5)))
    for path in (wide, long):
        tel = read_paths([path]).telemetry
        means = tel.groupby("host")["util_pct"].mean().to_dict()
        assert means == {"n1": 92.0, "n2": 12.0}, (path.name, means)
        assert (tel.groupby("host").size() == 5).all()


def test_pmon_processes_sum_per_gpu(tmp_path):
    """`nvidia-smi pmon`: one row per process; two processes on GPU 0 add up, a GPU with none is idle."""
    head = ("# gpu         pid   type     sm    mem    enc    dec    command\n"
            "# Idx           #    C/G      %      %      %      %    name\n")
    poll = ("    0      12345     C     {a}     20      -      -    python\n"
            "    0      12399     C     {b}     10      -      -    python\n"
            "    1          -     -      -      -      -      -    -\n")
    path = tmp_path / "pmon.log"
    path.write_text(head + "".join(poll.format(a=40 + k, b=50) for k in range(4)))
    tel = read_paths([path]).telemetry.sort_values(["gpu", "time"])
    assert tel.loc[tel["gpu"] == 0, "util_pct"].tolist() == [90, 91, 92, 93]
    assert tel.loc[tel["gpu"] == 0, "mem_util_pct"].tolist() == [30] * 4
    assert tel.loc[tel["gpu"] == 1, "util_pct"].tolist() == [0] * 4
    assert tel["time"].nunique() == 4


def test_pmon_of_one_gpu_has_a_row_per_poll(tmp_path):
    """`nvidia-smi pmon -i 0` without times: the GPU number never falls, so a poll ends where a process of the GPU is
    listed again (it was one row for the whole log, the polls' shares summed: 45 + 44 + 46 capped at 100 %)."""
    head = ("# gpu         pid   type     sm    mem    enc    dec    command\n"
            "# Idx           #    C/G      %      %      %      %    name\n")
    rows = "".join(f"    0      14835     C     {sm}     15      -      -    python\n" for sm in (45, 44, 46))
    idle = "    0          -     -      -      -      -      -    -\n" * 2
    path = tmp_path / "pmon.log"
    path.write_text(head + rows + idle)
    tel = read_paths([path]).telemetry
    assert tel["util_pct"].tolist() == [45, 44, 46, 0, 0] and tel["time"].nunique() == 5


def test_rocm_smi_csv(tmp_path):
    """rocm-smi --csv: `card0` devices, "GPU use (%)" is the utilization (a name with a unit is never the GPU id)."""
    path = tmp_path / "rocm.csv"
    path.write_text("device,Temperature (Sensor edge) (C),Current Socket Graphic Package Power (W),GPU use (%)\n"
                    "card0,45.0,300.0,96\ncard1,46.0,120.0,13\n")
    tel = read_paths([path]).telemetry.sort_values("gpu")
    assert tel["gpu"].tolist() == [0, 1]
    assert tel["util_pct"].tolist() == [96, 13]
    assert tel["power_w"].tolist() == [300, 120]


def test_per_gpu_columns_with_different_metrics(tmp_path):
    """GPU 0 logs utilization and memory, GPU 1 only utilization: both read (this crashed before)."""
    path = tmp_path / "wide.csv"
    path.write_text("_timestamp,system.gpu.0.gpu,system.gpu.0.memoryAllocatedBytes,system.gpu.1.gpu\n"
                    "1764615600,96,1048576,13\n1764615602,12,2097152,97\n")
    tel = read_paths([path]).telemetry.sort_values(["gpu", "time"])
    assert tel["util_pct"].tolist() == [96, 12, 13, 97]
    assert tel.loc[tel["gpu"] == 0, "mem_used_mib"].tolist() == [1, 2]
    assert tel.loc[tel["gpu"] == 1, "mem_used_mib"].isna().all()


# ------------------------------------------------------------------- third batch: mechanisms behind its reads
def test_third_batch_units_and_choices():
    """nvtop's memory is bytes; GR_ENGINE_ACTIVE / GRACT (a ratio) is the utilization when GPU_UTIL is absent;
    of power.draw.average and .instant, the average (what power.draw reports on Ampere and newer) is power_w."""
    nvtop = read_paths([DATA / "nvtop_loop.json"]).telemetry
    assert nvtop.loc[nvtop["gpu"] == 0, "mem_used_mib"].iloc[0] == pytest.approx(40000)
    assert nvtop.loc[nvtop["gpu"] == 1, "power_w"].iloc[0] == pytest.approx(100 + 3 * 13)
    for name in ("dcgm_exporter_k8s_prof.prom", "dcgmi_dmon_prof.txt"):
        tel = read_paths([DATA / name]).telemetry
        assert tel.loc[tel["gpu"] == 0, "util_pct"].iloc[:2].tolist() == pytest.approx([96, 12]), name
        assert tel.loc[tel["gpu"] == 0, "sm_active"].iloc[0] == pytest.approx(0.864), name
    smi = read_paths([DATA / "smi_query_lms_new_fields.csv"]).telemetry
    assert smi.loc[smi["gpu"] == 0, "power_w"].iloc[0] == pytest.approx(388.12)
    names = ["timestamp", "power.draw.instant [W]", "power.draw.average [W]"]
    assert [headers.meaning(n).rank for n in names[1:]] == [3, 2]
    assert [m.role for m in headers.assign(names).values()] == ["time", "power_w"]
    assert list(headers.assign(names)) == [0, 2]


def test_gpu_util_wins_over_graphics_engine_activity(tmp_path):
    path = tmp_path / "both.prom"
    path.write_text('DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-a"} 0.5\n'
                    'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 70\n')
    assert read_paths([path]).telemetry["util_pct"].tolist() == [70]


def test_series_of_several_metrics_are_one_sample_per_time():
    """VictoriaMetrics export: GPU 0's utilization and memory series at one time are one row, no repeat warning."""
    bundle = read_paths([DATA / "victoriametrics_export.jsonl"])
    tel = bundle.telemetry
    assert len(tel) == 24 and tel[["util_pct", "mem_used_mib"]].notna().all().all()
    assert set(tel["host"]) == {"node1"}
    assert not any("repeat" in w for w in bundle.warnings), bundle.warnings


def test_nvtop_snapshot_is_one_poll_and_rows_stay_rows(tmp_path):
    """`nvtop -s`: one array, an object per GPU in order; an array of records with a time key stays rows."""
    snap = tmp_path / "snap.json"
    snap.write_text('[\n  {\n   "device_name": "A",\n   "gpu_util": "50%",\n   "mem_used": "524288000"\n  },\n'
                    '  {\n   "device_name": "A",\n   "gpu_util": null,\n   "mem_used": "1048576000"\n  }\n]\n')
    tel = read_paths([snap]).telemetry.sort_values("gpu")
    assert tel["gpu"].tolist() == [0, 1] and tel["time"].nunique() == 1
    assert tel["mem_used_mib"].tolist() == [500, 1000]  # bytes (no GPU holds 500 TiB)
    rows = tmp_path / "rows.json"
    rows.write_text('[{"time": 1764615600, "gpu": 0, "util": 5}, {"time": 1764615601, "gpu": 0, "util": 6}]')
    tel = read_paths([rows]).telemetry
    assert tel["gpu"].tolist() == [0, 0] and tel["util_pct"].tolist() == [5, 6]
    mixed = tmp_path / "mixed.json"  # a poll with two items that are not objects: both counted
    mixed.write_text('[{"gpu_util": "50%"}, 3, "x", {"gpu_util": "60%"}]')
    bundle = read_paths([mixed])
    assert bundle.telemetry["util_pct"].tolist() == [50, 60]
    assert any("skipped 2" in w for w in bundle.warnings), bundle.warnings


def test_promtool_dump_names_come_from_the_name_label(tmp_path):
    """`promtool tsdb dump`: `{labels} value ms`, the metric in `__name__`; a label set without one is no sample."""
    path = tmp_path / "dump.txt"
    path.write_text('{UUID="GPU-a", __name__="DCGM_FI_DEV_GPU_UTIL", gpu="0"} 96 1764615600000\n'
                    '{UUID="GPU-a", gpu="0"} 7 1764615600000\n'
                    '{UUID="GPU-a", __name__="DCGM_FI_DEV_GPU_UTIL", gpu="0"} 12 1764615610000\n')
    bundle = read_paths([path])
    assert bundle.telemetry["util_pct"].tolist() == [96, 12]
    assert any("skipped 1" in w for w in bundle.warnings), bundle.warnings


def test_series_label_values_with_delimiters(tmp_path):
    """A label value holding a comma or quotes does not break the series' GPU or host."""
    path = tmp_path / "vm.jsonl"
    path.write_text('{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","modelName":"H100, \\"SXM\\"","gpu":"3",'
                    '"Hostname":"n7"},"values":[50,60],"timestamps":[1764615600000,1764615610000]}\n')
    tel = read_paths([path]).telemetry
    assert tel["gpu"].tolist() == [3, 3] and set(tel["host"]) == {"n7"} and tel["util_pct"].tolist() == [50, 60]


def test_series_export_of_other_metrics_is_a_one_line_error(tmp_path):
    path = tmp_path / "cpu.jsonl"
    path.write_text('{"metric":{"__name__":"node_cpu_seconds_total","cpu":"0","mode":"idle"},'
                    '"values":[1,2],"timestamps":[1764615600000,1764615610000]}\n')
    with pytest.raises(Exception) as info:
        read_paths([path])
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_openmetrics_timestamps_are_seconds(tmp_path):
    """OpenMetrics (a text ending in `# EOF`) writes seconds, integer or not; Prometheus text integer ms."""
    line = 'DCGM_FI_DEV_GPU_UTIL{{gpu="0"}} {v} {t}\n'
    om = tmp_path / "om.txt"
    om.write_text(line.format(v=96, t=1764615600) + line.format(v=12, t=1764615610) + "# EOF\n")
    prom = tmp_path / "prom.txt"
    prom.write_text(line.format(v=96, t=1764615600000) + line.format(v=12, t=1764615610000))
    for path in (om, prom):
        seconds = read_paths([path]).telemetry["time"].astype("int64").to_numpy() / 1e9
        assert seconds.tolist() == [1764615600, 1764615610], path.name


def test_mig_instances_of_one_gpu_are_devices_of_their_own(tmp_path):
    """dcgm-exporter labels a MIG instance with its parent's gpu and UUID plus GPU_I_ID (label set as printed in
    NVIDIA/dcgm-exporter#713; values written). Keyed by (host, gpu), two instances at 90% and 10% collapsed into
    one device and half the samples were dropped without a word; a plain GPU beside them keeps its number."""
    t0, lines = 1_764_615_600_000, []
    for i in range(60):
        for gi, act in (("1", 0.9), ("2", 0.1)):
            labels = (f'gpu="0",UUID="GPU-06357e72-c3ee-614b-775f-a89e18e8cc08",device="nvidia0",'
                      f'modelName="NVIDIA A100 80GB PCIe",GPU_I_PROFILE="3g.40gb",GPU_I_ID="{gi}",Hostname="metal-gpu-08"')
            lines.append(f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{labels}}} {act} {t0 + i * 1000}")
        lines.append(f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="1",Hostname="metal-gpu-08"}} 0.5 {t0 + i * 1000}')
    path = tmp_path / "mig.prom"
    path.write_text("\n".join(lines) + "\n")
    b = read_paths([str(path)])
    means = b.telemetry.groupby("gpu")["util_pct"].mean().round(1).to_dict()
    assert means == {1: 50.0, 101: 90.0, 102: 10.0} and len(b.telemetry) == 180
    assert any("MIG instances read as devices" in w for w in b.warnings)


def test_samples_past_64_bits_are_dropped_as_the_warning_says():
    """The long-form samples' pivot drops the samples whose gpu or time int64 cannot hold and says so. e59bb7e
    moved the drop under the MIG warning: a non-MIG table kept them as GPU 0 at 1970 (the readers' checks stop
    such values before they get here today, so this guards the pivot itself; review5)."""
    from playbook.readers.dcgm import Samples

    s = Samples("x.prom", "n1")
    for k, t in enumerate((1_764_615_600_000_000_000, 1_764_615_601_000_000_000, 10**20)):
        s.add(t, "n1", 3, "DCGM_FI_DEV_GPU_UTIL", 50.0 + k)
    b = s.bundle(None)
    assert b.telemetry["util_pct"].tolist() == [50.0, 51.0] and set(b.telemetry["gpu"]) == {3}
    assert any("skipped 1 samples" in w for w in b.warnings)


def test_a_mig_gpus_own_series_without_utilization_is_no_fault(tmp_path):
    """dcgm-exporter on MIG GPUs: the device-level fields (power, temperature) on the parent GPU, the activity on
    each instance (GPU_I_ID); the parent has no utilization by design (labelled synthetic, label set from
    dcgm-exporter#713). First try (review5): 'hardware_fault, confirmed 0.99: n1:0: no valid utilization reading at
    all' on two GPUs whose four instances ran at 95%."""
    from playbook.diagnosis import diagnose
    from playbook.knowledge import ids

    t0, lines = 1_764_615_600_000, []
    for i in range(300):
        for g in range(2):
            labels = f'gpu="{g}",UUID="GPU-{g}",Hostname="n1"'
            lines += [f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} 300 {t0 + i * 1000}",
                      f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} 60 {t0 + i * 1000}"]
            lines += [f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{labels},GPU_I_ID="{gi}",GPU_I_PROFILE="3g.40gb"}} 0.95 '
                      f"{t0 + i * 1000}" for gi in (1, 2)]
    path = tmp_path / "mig.prom"
    path.write_text("\n".join(lines) + "\n")
    d = diagnose(read_paths([str(path)]))
    assert d.verdict["id"] == ids.HEALTHY
    assert not any("no valid utilization reading" in e for h in d.hypotheses for e in h["evidence"])


def test_mig_instances_read_their_activity_not_the_zero_utilization_dcgm_reports(tmp_path):
    """dcgm-exporter#216 (NVIDIA: 'Yes, it is normal'): DCGM_FI_DEV_GPU_UTIL reads 0 on every MIG instance;
    DCGM_FI_PROF_GR_ENGINE_ACTIVE is their activity. Four instances at 0.95 beside their 0s (labelled synthetic).
    First try (review5): util 0% on every instance, 'Loses 100% of GPU time ... 4 GPUs idle throughout'."""
    from playbook.diagnosis import diagnose

    t0, lines = 1_764_615_600_000, []
    for i in range(300):
        for g in range(2):
            lines.append(f'DCGM_FI_DEV_POWER_USAGE{{gpu="{g}",UUID="GPU-{g}",Hostname="n1"}} 300 {t0 + i * 1000}')
            for gi in (1, 2):
                labels = f'gpu="{g}",UUID="GPU-{g}",GPU_I_ID="{gi}",GPU_I_PROFILE="3g.40gb",Hostname="n1"'
                lines += [f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 0 {t0 + i * 1000}",
                          f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{labels}}} 0.95 {t0 + i * 1000}"]
    path = tmp_path / "mig.prom"
    path.write_text("\n".join(lines) + "\n")
    b = read_paths([str(path)])
    util = b.telemetry.groupby("gpu")["util_pct"].mean()
    assert util[[101, 102, 201, 202]].tolist() == pytest.approx([95.0] * 4)
    d = diagnose(b)
    assert d.accounting["lost_share"] < 0.02
