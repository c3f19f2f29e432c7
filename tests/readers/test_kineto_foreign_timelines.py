"""Chrome traces of writers other than Kineto, written here from the writers' documented layouts (not the held-out
files of tests/data/eval/heldout29): "B"/"E" duration events (the Trace Event Format), Horovod's timeline
(horovod/common/timeline.cc), TensorFlow 1's GPU tracer copy names ("MEMCPYHtoD"), and a device named with no lane
of its own work (TensorFlow 1 with XLA keeps only the executor's `/job:.../device:GPU:0 Compute`)."""

from __future__ import annotations

import json

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import kineto, read_paths
from playbook.readers.kineto import decode as kineto_decode


@pytest.fixture(params=["msgspec", "stdlib"])
def decoder(request, monkeypatch):
    """Both decoding paths: msgspec's typed structs and the standard library's dicts."""
    if request.param == "stdlib":
        monkeypatch.setattr(kineto_decode, "_MSGSPEC", None)
    return request.param


def _write(tmp_path, events, name="trace.json", close=True):
    text = "[\n" + ",\n".join(json.dumps(e) for e in events) + ("\n]\n" if close else ",\n")
    path = tmp_path / name
    path.write_text(text)
    return path


def _proc(pid, name):
    return {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}


def test_begin_end_events_become_rows_nested_per_thread(tmp_path, decoder):
    """An "E" closes the most recent open "B" of its own thread, whatever the file order; its name may be absent."""
    events = [
        {"ph": "B", "name": "outer", "ts": 100, "pid": 1, "tid": 1},
        {"ph": "B", "name": "other", "ts": 105, "pid": 1, "tid": 2},
        {"ph": "B", "name": "inner", "ts": 110, "pid": 1, "tid": 1},
        {"ph": "E", "ts": 130, "pid": 1, "tid": 1},
        {"ph": "E", "ts": 300, "pid": 1, "tid": 2},
        {"ph": "E", "ts": 200, "pid": 1, "tid": 1},
    ]
    bundle = kineto.read(_write(tmp_path, events))
    rows = {r.name: (r.ts_us, r.dur_us, r.tid) for r in bundle.trace.itertuples()}
    assert rows == {"outer": (100, 100, 1), "inner": (110, 20, 1), "other": (105, 195, 2)}
    assert bundle.warnings == []


def test_unpaired_begin_and_end_are_counted_not_guessed(tmp_path, decoder):
    events = [
        {"ph": "E", "ts": 50, "pid": 1, "tid": 1},  # closes nothing
        {"ph": "B", "name": "done", "ts": 100, "pid": 1, "tid": 1},
        {"ph": "E", "ts": 150, "pid": 1, "tid": 1},
        {"ph": "B", "name": "cut", "ts": 200, "pid": 1, "tid": 1},  # the file stops inside it
    ]
    bundle = kineto.read(_write(tmp_path, events))
    assert list(bundle.trace["name"]) == ["done"]
    (warning,) = bundle.warnings
    assert "1 begin (B) events never ended" in warning and "1 end (E) events close no begin" in warning


def _horovod(close):
    """Two tensors allreduced by ranks 0 and 1 through NCCL, in Horovod's layout: a process per tensor, the
    negotiation span with one zero-length tick per ready rank, then the operation with its activities nested."""
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 1}}]
    for pid, t0 in ((1, 1000), (2, 1500)):
        events += [_proc(pid, f"grad_{pid}"),
                   {"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": t0, "pid": pid},
                   {"ph": "X", "name": "1", "ts": t0 + 5, "pid": pid, "dur": 0},
                   {"ph": "X", "name": "0", "ts": t0 + 90, "pid": pid, "dur": 0},
                   {"ph": "E", "ts": t0 + 100, "pid": pid},
                   {"ph": "B", "name": "ALLREDUCE", "ts": t0 + 110, "pid": pid},
                   {"ph": "B", "name": "NCCL_ALLREDUCE", "ts": t0 + 120, "pid": pid},
                   {"ph": "E", "ts": t0 + 300, "pid": pid},
                   {"ph": "E", "ts": t0 + 310, "pid": pid, "args": {"dtype": "float32", "shape": "[10]"}},
                   {"ph": "i", "name": "CYCLE_START", "ts": t0 + 400, "s": "g"}]
    return events


@pytest.mark.parametrize("close", [True, False])  # Horovod leaves the array open when the job is stopped
def test_horovod_timeline_read_as_host_phases_without_device_lane(tmp_path, decoder, close):
    path = _write(tmp_path, _horovod(close), close=close)
    bundle = kineto.read(path)
    trace = bundle.trace
    assert len(trace) == 2 * (3 + 2)  # NEGOTIATE, ALLREDUCE, NCCL_ALLREDUCE and two ready ticks per tensor
    assert set(trace["cat"]) == {"user_annotation"}
    nccl = trace[trace["name"] == "NCCL_ALLREDUCE"]
    assert list(nccl["dur_us"]) == [180, 180]
    meta = bundle.meta["kineto"][0]
    assert meta["horovod"] == {"negotiations": 2, "tensors": 2, "ranks_ready": [0, 1]}
    warning = [w for w in bundle.warnings if "Horovod" in w]
    assert len(warning) == 1 and "no device lane" in warning[0] and "2 negotiations on 2 tensors" in warning[0]
    if not close:
        assert any("JSON ends before the traceEvents array closes" in w for w in bundle.warnings)


def test_horovod_timeline_diagnosis_says_why_nothing_is_measured(tmp_path):
    run = diagnose(read_paths([str(_write(tmp_path, _horovod(True)))]))
    assert run.verdict["id"] == "insufficient_data"
    assert "no device lane" in json.dumps(run.verdict)


def test_a_trace_without_negotiations_is_not_taken_for_horovod(tmp_path):
    events = [_proc(1, "worker"), {"ph": "X", "name": "ALLREDUCE", "ts": 10, "dur": 5, "pid": 1, "tid": 1}]
    bundle = kineto.read(_write(tmp_path, events))
    assert "horovod" not in bundle.meta["kineto"][0] and bundle.warnings == []


def _tf1(processes, ops):
    """A TensorFlow 1 timeline (tensorflow/python/client/timeline.py): one process per StepStats device, cat "Op"."""
    events = [_proc(pid, name) for pid, name in processes]
    events += [{"ph": "X", "cat": "Op", "name": name, "pid": pid, "tid": 0, "ts": ts, "dur": dur,
                "args": {"name": name, "op": name}} for pid, name, ts, dur in ops]
    return {"traceEvents": events}


def test_tensorflow1_gpu_tracer_copy_names_are_copies(tmp_path):
    doc = _tf1([(1, "/device:GPU:0/stream:14 Compute"), (2, "/device:GPU:0/stream:7 Compute"),
                (3, "/job:localhost/replica:0/task:0/device:GPU:0 Compute")],
               [(1, "MEMCPYHtoD", 10, 5), (1, "MEMCPYDtoH", 40, 5), (2, "MatMul", 16, 20), (3, "MatMul", 12, 30)])
    path = tmp_path / "tf1.json"
    path.write_text(json.dumps(doc))
    trace = kineto.read(path).trace
    assert sorted(trace.loc[trace["cat"] == "gpu_memcpy", "name"]) == ["MEMCPYDtoH", "MEMCPYHtoD"]
    assert list(trace.loc[trace["cat"] == "kernel", "name"]) == ["MatMul"]


def test_device_named_without_any_lane_of_its_work_is_said(tmp_path):
    """TensorFlow 1 with XLA: only the executor's side of GPU:0 is recorded — rows that are not device time."""
    doc = _tf1([(1, "/job:localhost/replica:0/task:0/device:GPU:0 Compute"),
                (2, "/job:localhost/replica:0/task:0/device:CPU:0 Compute")],
               [(1, "_XlaLaunch", 10, 400), (1, "Identity", 420, 3), (2, "_Arg", 5, 2)])
    path = tmp_path / "tf1_xla.json"
    path.write_text(json.dumps(doc))
    bundle = kineto.read(path)
    (warning,) = bundle.warnings
    assert "names GPU:0 but records no stream, copy or op lane" in warning and "its 2 rows" in warning
    assert not bundle.trace["cat"].isin(["kernel", "gpu_memcpy"]).any()
    assert "no device lane" in json.dumps(diagnose(bundle).verdict)


def test_a_device_without_lanes_beside_one_with_streams_is_the_only_one_said_unmeasured(tmp_path):
    doc = _tf1([(1, "/device:GPU:0/stream:14 Compute"), (3, "/job:localhost/replica:0/task:0/device:GPU:1 Compute")],
               [(1, "MatMul", 16, 20), (3, "MatMul", 12, 30)])
    path = tmp_path / "tf1_two.json"
    path.write_text(json.dumps(doc))
    (warning,) = kineto.read(path).warnings
    assert "GPU:1's busy and idle time cannot be measured from it (only GPU:0's)" in warning
    assert "GPU busy and idle time" not in warning


def test_device_with_an_op_lane_or_streams_is_not_flagged(tmp_path):
    tpu = {"traceEvents": [_proc(1, "/device:TPU:0"),
                           {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "XLA Ops"}},
                           {"ph": "X", "name": "fusion.1", "pid": 1, "tid": 2, "ts": 0, "dur": 10}]}
    path = tmp_path / "tpu.json"
    path.write_text(json.dumps(tpu))
    assert kineto.read(path).warnings == []


def test_begin_end_threads_keyed_by_any_pid_text_or_list(tmp_path, decoder):
    """Threads named by texts stay apart (the dict path read every text pid as -1: one thread, spans misnested), and
    a list as pid is a thread too (the msgspec path raised TypeError: unhashable type: 'list')."""
    events = [
        {"ph": "B", "name": "a", "ts": 100, "pid": "worker-a", "tid": 1},
        {"ph": "B", "name": "b", "ts": 110, "pid": "worker-b", "tid": 1},
        {"ph": "E", "ts": 120, "pid": "worker-a", "tid": 1},
        {"ph": "E", "ts": 200, "pid": "worker-b", "tid": 1},
        {"ph": "B", "name": "c", "ts": 300, "pid": [7], "tid": 1},
        {"ph": "E", "ts": 350, "pid": [7], "tid": 1},
    ]
    bundle = kineto.read(_write(tmp_path, events))
    assert {r.name: r.dur_us for r in bundle.trace.itertuples()} == {"a": 20, "b": 90, "c": 50}


def test_begin_events_kept_as_columns_not_objects():
    """Millions of "B"/"E" events (a Horovod timeline) are held as columns: under 80 bytes an event while kept (a
    tuple an event took ~170), and spans never ended are counted, not rows."""
    import tracemalloc

    from playbook.readers.kineto.durations import Spans

    spans, n = Spans(), 200_000
    tracemalloc.start()
    try:
        for i in range(n):
            spans.add("B", 1e9 + 10.0 * i, i % 64, 0, "NEGOTIATE_ALLREDUCE", None)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held / n < 80
    problems: list[str] = []
    assert spans.pair(problems)["ts"] == []
    assert problems == [f"{n} begin (B) events never ended (no row: their end is unknown)"]
