"""The fifth held-out round: Chrome traces written by other profilers (XProf for JAX on a GPU and a TPU, the
TensorFlow 1 timeline, Paddle's profiler) and two real ROCm PyTorch traces (tests/data/traces5, SOURCES.md; the
expected readings in expected.json). Each is read into Kineto's categories — GPU work on its streams, the device's
derived lanes as projections — and diagnosed end to end."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from playbook.analysis.kineto import summarize
from playbook.diagnosis import diagnose
from playbook.readers import kineto

HERE = Path(__file__).resolve().parents[1] / "data" / "traces5"
EXPECTED = {k: v for k, v in json.loads((HERE / "expected.json").read_text()).items() if not k.startswith("_")}
WORK = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_traces5_reading_and_verdict(name):
    want = EXPECTED[name]
    bundle = kineto.read(HERE / name)
    assert not bundle.warnings
    t = bundle.trace
    work = t[t["cat"].astype(str).isin(WORK) & (t["stream"] != -1)]
    assert len(work) == want["work_rows"]
    assert sorted(set(work["stream"].tolist())) == want["work_streams"]
    s = summarize(bundle)
    if want["idle_pct"] is not None:
        assert s["temporal"][0]["idle_pct"] == pytest.approx(want["idle_pct"], abs=0.01)
    assert sum(r["steps"] for r in s["steps"]) == want["steps"]
    if "dataloader_share" in want:
        assert s["dataloader"]["median_share"] == pytest.approx(want["dataloader_share"], abs=0.01)
    if want.get("unsplit"):  # no launch call in the trace: the idle time is not read as "waiting on issued work"
        assert s["gpu_idle"]["launches"] is False and s["gpu_idle"]["other"] is None
    assert diagnose(bundle).hypotheses[0]["id"] in want["verdicts"]


def test_xprof_lanes_name_the_devices_and_keep_projections_off_the_work():
    bundle = kineto.read(HERE / "xprof_jax_gpu_busy.trace.json.gz")
    meta = bundle.meta["kineto"][0]
    assert meta["roles_from"] == "process/thread names" and meta["devices"] == ["GPU:0"]
    t = bundle.trace
    ops_lane = t[t["tid"] == 0xDEADBEEF + 5]  # XLA Ops: the same time as the kernels, again
    assert len(ops_lane) == 108 and set(ops_lane["cat"].astype(str)) == {"gpu_user_annotation"}
    host = t[t["pid"] == 701]
    assert set(host["cat"].astype(str)) == {"user_annotation"} and (host["stream"] == -1).all()
    assert set(t[t["tid"] == 15]["cat"].astype(str)) == {"gpu_memcpy"}


def test_tf1_executor_side_is_the_host_and_stream_all_a_projection():
    t = kineto.read(HERE / "tf1_timeline.trace.json").trace
    by_pid = {pid: set(g["cat"].astype(str)) for pid, g in t.groupby("pid")}
    assert by_pid[3] == {"cpu_op"}  # /job:localhost/replica:0/task:0/device:GPU:0 Compute
    assert by_pid[5] == {"gpu_user_annotation"}  # /device:GPU:0/stream:all Compute
    assert by_pid[7] == {"kernel"} and by_pid[9] == {"gpu_memcpy"}


def test_paddle_names_threads_and_correlations():
    t = kineto.read(HERE / "paddle_dataloader.paddle_trace.json").trace
    assert set(t[t["stream"] != -1]["name"].astype(str)) == {"volta_sgemm_128x64_nn"}  # "[1.000 ms]" dropped
    assert set(t["tid"].tolist()) == {4242, 7}  # "4242(Python)" / "4242(C++)": one OS thread
    launches = t[t["cat"].astype(str) == "cuda_runtime"]
    assert len(launches) == 50 and set(launches["correlation"]) == set(t[t["stream"] != -1]["correlation"])


def test_a_kineto_trace_keeps_its_own_categories():
    # roles from names apply only to a trace that names no GPU work by category
    t = kineto.read(HERE / "tracelens_mi300_bert_small.json.gz").trace
    assert {"python_function", "cpu_op", "cuda_runtime", "kernel"} <= set(t["cat"].astype(str))


def test_xprof_trace_cut_short_keeps_its_lanes(tmp_path):
    # XProf writes every process and thread name before the events: a cut file keeps its roles, with one warning
    raw = gzip.decompress((HERE / "xprof_jax_gpu_busy.trace.json.gz").read_bytes())
    cut = tmp_path / "host0.trace.json"
    cut.write_bytes(raw[: len(raw) * 2 // 3])
    bundle = kineto.read(cut)
    assert len(bundle.warnings) == 1 and "ends before the traceEvents array closes" in bundle.warnings[0]
    t = bundle.trace
    work = t[t["cat"].astype(str).isin(WORK)]
    assert 0 < len(work) < 114 and set(work["stream"].tolist()) <= {14, 15}


def test_xprof_lane_with_a_stream_number_past_int64_is_no_stream(tmp_path):
    # a damaged thread name `Stream #99999999999999999999(Kernel)`: the stream column is int64 and the kineto reader
    # failed with OverflowError (the whole trace lost); now that lane names no stream, and the device, left without a
    # stream lane, has its XLA Ops lane for its work: the same 18 kernels
    raw = gzip.decompress((HERE / "xprof_jax_gpu_idle.trace.json.gz").read_bytes())
    p = tmp_path / "host0.trace.json"
    p.write_bytes(raw.replace(b"Stream #14(Kernel)", b"Stream #99999999999999999999(Kernel)"))
    t = kineto.read(p).trace
    work = t[t["cat"].astype(str).isin(WORK)]
    assert len(work) == EXPECTED["xprof_jax_gpu_idle.trace.json.gz"]["work_rows"] == 18
    assert set(work["tid"]) == {0xDEADBEEF + 5}  # XLA Ops
