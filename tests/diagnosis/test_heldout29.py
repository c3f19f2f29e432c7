"""The twenty-ninth held-out round (tests/data/eval/heldout29/SOURCES.md): real Chrome-trace timelines of writers
other than Kineto — three Horovod timelines and three TensorFlow 1 timelines committed in public repositories —
labelled from the repositories' own text. Each file's verdict (one of the accepted ids) and its reading; what the
engine does not reach is a strict xfail with its reason (the fixes are tested apart, on traces written there:
tests/readers/test_kineto_foreign_timelines.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout29"

ACCEPTED = {
    "alcf_horovod_timeline_cpu_n1.json": ("insufficient_data", "healthy"),
    "alcf_horovod_timeline_gpu_n1.json": ("insufficient_data", "healthy"),
    "tflogs_horovod_timeline_4ranks.json": ("insufficient_data", "healthy"),
    "dlprof_feeddict_timeline_01.json": ("data_starvation", "insufficient_data"),
    "dlprof_tfrecords_timeline_test0.json": ("insufficient_data", "healthy"),
    "dlprof_mnist_xla_timeline_xla.ctf.json": ("insufficient_data", "healthy"),
}
NOT_YET = {
    "dlprof_tfrecords_timeline_test0.json": "the trace holds tf.data's IteratorGetNext on the host for 45.7 ms of "
                                            "the 70 ms step while the GPU streams wait: the engine reads "
                                            "data_starvation from the file, the label (the post's 61% peak "
                                            "utilization, no cause named) stays as written",
}


test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize(("name", "rows", "ranks"), [
    ("alcf_horovod_timeline_cpu_n1.json", 100, [0]),  # 25 broadcasts x 3 phases + 25 ready ticks
    ("alcf_horovod_timeline_gpu_n1.json", 176, [0]),  # INIT_NCCL + 25 x 6 phases + 25 ticks
    ("tflogs_horovod_timeline_4ranks.json", 415, [0, 1, 2, 3]),  # 195 paired spans + 220 ticks
])
def test_horovod_phases_read_and_said_to_hold_no_device_lane(name, rows, ranks):
    """Refused in effect first (every B/E phase dropped without a word); read now, with the reason no GPU time can
    be measured from it."""
    bundle = read_paths([str(HERE / name)])
    assert len(bundle.trace) == rows and set(bundle.trace["cat"]) == {"user_annotation"}
    assert bundle.meta["kineto"][0]["horovod"]["ranks_ready"] == ranks
    assert sum("no device lane" in w for w in bundle.warnings) == 1


def test_tensorflow1_copies_are_copies():
    trace = read_paths([str(HERE / "dlprof_feeddict_timeline_01.json")]).trace
    assert (trace["cat"] == "gpu_memcpy").sum() == 20 and (trace["cat"] == "kernel").sum() == 126


def test_xla_timeline_without_stream_lanes_is_said():
    bundle = read_paths([str(HERE / "dlprof_mnist_xla_timeline_xla.ctf.json")])
    assert any("records no stream, copy or op lane" in w for w in bundle.warnings)
    assert not bundle.trace["cat"].isin(["kernel", "gpu_memcpy"]).any()
