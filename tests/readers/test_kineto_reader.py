"""Kineto reader on real traces (HTA test data, param DLRM) and on damaged copies of them."""

from __future__ import annotations

import gzip
import json
import tarfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playbook.core.errors import InputError
from playbook.model.schema import TRACE_COLUMNS
from playbook.readers import kineto
from playbook.readers.kineto import decode as kineto_decode

HERE = Path(__file__).resolve().parents[1]
DATA = HERE / "data" / "kineto" / "hta"
SHARED = HERE.parents[1] / "shared" / "reference-traces"
needs_shared = pytest.mark.skipif(not SHARED.exists(), reason="../shared/reference-traces is absent")


def _events(path: Path) -> list[dict]:
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


def _complete(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and e.get("cat") != "Trace"]


# ------------------------------------------------------------------ real traces

def test_trace_filter_pair_as_folder_matches_readme():
    b = kineto.read(DATA / "trace_filter")
    t = b.trace
    assert list(t.columns) == list(TRACE_COLUMNS)
    assert sorted(b.meta["kineto"]) == [0, 1]
    assert {m["world_size"] for m in b.meta["kineto"].values()} == {128}
    assert {m["backend"] for m in b.meta["kineto"].values()} == {"nccl"}
    # README: 1,154 / 1,104 GPU kernels
    assert t[t["cat"] == "kernel"].groupby("rank").size().to_dict() == {0: 1154, 1: 1104}
    assert not b.warnings
    assert (t.groupby("rank")["ts_us"].apply(lambda s: s.is_monotonic_increasing)).all()


def test_values_equal_a_plain_json_load():
    path = DATA / "trace_filter" / "sampled_rank-0.json.gz"
    expected = _complete(_events(path))
    t = kineto.read(path).trace
    assert len(t) == len(expected)
    exp = pd.DataFrame({
        "name": [e["name"] for e in expected], "ts_us": [float(e["ts"]) for e in expected],
        "dur_us": [float(e["dur"]) for e in expected],
        "correlation": [e.get("args", {}).get("correlation", -1) for e in expected],
        "bytes": [e.get("args", {}).get("bytes", np.nan) for e in expected],
        "stream": [e["args"]["stream"] if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset") else -1
                   for e in expected],
    }).sort_values(["ts_us", "name", "dur_us"]).reset_index(drop=True)
    got = t[list(exp.columns)].assign(name=t["name"].astype(str)).sort_values(["ts_us", "name", "dur_us"])
    pd.testing.assert_frame_equal(got.reset_index(drop=True), exp, check_dtype=False)


def test_stdlib_fallback_gives_the_same_table(monkeypatch):
    fast = kineto.read(DATA / "alexnet.json.gz").trace
    monkeypatch.setattr(kineto_decode, "_MSGSPEC", None)
    slow = kineto.read(DATA / "alexnet.json.gz").trace
    pd.testing.assert_frame_equal(fast, slow)


@pytest.mark.parametrize("decoder", ["msgspec", "stdlib"])
def test_complete_events_without_timestamp_are_counted_and_the_profiler_span_dropped(tmp_path, monkeypatch, decoder):
    """The decoders agree on the rows a chunk drops: an "X" event without a numeric ts is skipped and counted, the
    profiler's own "Trace" span (text pid) is dropped silently, GPU rows without args.stream take their tid."""
    if decoder == "stdlib":
        monkeypatch.setattr(kineto_decode, "_MSGSPEC", None)
    events = [
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "ts": 1.0, "dur": 90.0, "pid": "Spans",
         "tid": "PyTorch Profiler"},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 2.0, "dur": 5.0, "pid": 7, "tid": 7},
        {"ph": "X", "cat": "cpu_op", "name": "no ts", "dur": 5.0, "pid": 7, "tid": 7},
        {"ph": "X", "cat": "cpu_op", "name": "null ts", "ts": None, "dur": 5.0, "pid": 7, "tid": 7},
        {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 3.0, "dur": 4.0, "pid": 0, "tid": 7,
         "args": {"correlation": 11, "bytes": 64}},
        {"ph": "i", "cat": "cpu_instant_event", "name": "step", "ts": 2.5, "pid": 7, "tid": 7},
    ]
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    b = kineto.read(path)
    t = b.trace
    assert t["name"].tolist() == ["aten::mm", "gemm"]
    assert t["stream"].tolist() == [-1, 7] and t["correlation"].tolist() == [-1, 11]
    assert t["bytes"].isna().tolist() == [True, False] and t["bytes"].iloc[1] == 64.0
    assert len(b.warnings) == 1 and "skipped 2 of 4 rows (complete event without a numeric ts" in b.warnings[0]
    assert b.meta["kineto"][0]["phases"] == {"X": 5, "i": 1}


def test_amd_trace_without_distributed_info():
    b = kineto.read(DATA / "amd_mi250.json.gz")
    meta = b.meta["kineto"][0]
    assert meta["world_size"] is None and meta["rank_from"] == "default"
    assert meta["device_properties"][0]["name"] == "AMD Radeon Graphics"
    assert meta["base_time_ns"] == 1735632360000000000
    kernels = b.trace[b.trace["cat"] == "kernel"]
    assert len(kernels) == 14 and (kernels["stream"] >= 0).all()
    assert len(b.trace) == len(_complete(_events(DATA / "amd_mi250.json.gz")))


def test_cpu_only_trace():
    b = kineto.read(DATA / "cpu_only_rank-34.pt.trace.json.gz")
    m = b.meta["kineto"][34]
    assert (m["world_size"], m["backend"]) == (300, "gloo")
    assert (b.trace["stream"] == -1).all() and len(b.trace) == 15


def test_rank_option_and_file_name_rank(tmp_path):
    src = (DATA / "amd_mi250.json.gz").read_bytes()
    (tmp_path / "rank-5.trace.json.gz").write_bytes(src)
    assert list(kineto.read(tmp_path / "rank-5.trace.json.gz").meta["kineto"]) == [5]
    assert list(kineto.read(DATA / "amd_mi250.json.gz", rank=3).meta["kineto"]) == [3]


def test_tar_of_traces_and_plain_json(tmp_path):
    archive = tmp_path / "traces.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for f in sorted((DATA / "trace_filter").iterdir()):
            tar.add(f, arcname=f"run/{f.name}")
    b = kineto.read(archive)
    assert sorted(b.meta["kineto"]) == [0, 1] and len(b.trace) == 4810 + 4675
    plain = tmp_path / "alexnet.json"
    plain.write_bytes(gzip.decompress((DATA / "alexnet.json.gz").read_bytes()))
    assert len(kineto.read(plain).trace) == 867


def test_bare_event_array_and_lenient_types(tmp_path):
    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "100.5", "dur": 3,
         "args": {"stream": 7, "correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 90, "dur": 2,
         "args": {"correlation": 1}},
        {"ph": "M", "name": "thread_name", "pid": 9, "tid": 9, "args": {"name": "main"}},
    ]
    p = tmp_path / "bare.json"
    p.write_text(json.dumps(events))
    b = kineto.read(p)
    t = b.trace.set_index("name")
    assert t.loc["k", "ts_us"] == 100.5 and t.loc["k", "stream"] == 7
    assert t.loc["cudaLaunchKernel", "stream"] == -1 and t.loc["cudaLaunchKernel", "correlation"] == 1
    assert b.meta["kineto"][0]["threads"] == {"9:9": "main"}


def test_sniff():
    head = gzip.decompress((DATA / "alexnet.json.gz").read_bytes())[:65536].decode()
    assert kineto.sniff(head)
    assert kineto.sniff('[{"ph": "X", "name": "a", "ts": 1}]')
    assert not kineto.sniff("timestamp, index, utilization.gpu [%]\n2024/01/01 00:00:00.000, 0, 50 %\n")
    assert not kineto.sniff('{"data": {"result": []}, "status": "success"}')
    assert not kineto.sniff("gpu-a01:1:1 [0] NCCL INFO Using network IB\n")


# ------------------------------------------------------------------ damaged input

def test_truncated_gzip_keeps_what_parses(tmp_path):
    raw = (DATA / "trace_filter" / "sampled_rank-0.json.gz").read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(raw[: int(len(raw) * 0.6)])
    b = kineto.read(cut)
    assert 0 < len(b.trace) < 4810
    assert len(b.warnings) == 1 and "cut.json.gz" in b.warnings[0] and "gzip stream truncated" in b.warnings[0]
    assert f"kept {len(b.trace)} events" in b.warnings[0]


def test_truncated_json_and_garbled_event(tmp_path):
    text = gzip.decompress((DATA / "alexnet.json.gz").read_bytes()).decode()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    b = kineto.read(cut)
    assert 0 < len(b.trace) < 867 and "traceEvents array closes" in " ".join(b.warnings)
    # garble one event in the middle: the others survive, the loss is counted
    i = text.index('"cat": "kernel"', len(text) // 2)
    bad = tmp_path / "garbled.json"
    bad.write_text(text[:i] + '"cat": kernel@@##, ' + text[i + 16:])
    g = kineto.read(bad)
    assert len(g.trace) == 866
    assert any("skipped 1 of 867" in w for w in g.warnings)


def test_a_raw_control_character_in_a_name_keeps_the_event(tmp_path):
    """Kineto's C++ writer does not escape control characters in names (pytorch/pytorch#130622: Perfetto failed on
    "Bad control character in string literal"); every event is kept, the name with its character."""
    text = gzip.decompress((DATA / "alexnet.json.gz").read_bytes()).decode()
    i = text.index('"cat": "kernel"', len(text) // 2)
    j = text.index('"name": "', i) + len('"name": "')
    raw = tmp_path / "control.json"
    raw.write_text(text[:j] + "\x01\t" + text[j:])
    b = kineto.read(raw)
    assert len(b.trace) == 867 and not b.warnings, b.warnings
    assert b.trace["name"].str.startswith("\x01\t").sum() == 1


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"),
    (b"this is not json at all\n" * 10, "not a Kineto/Chrome trace"),
    (b'{"schemaVersion": 1, "deviceProperties": []}', "no traceEvents array"),
    (b'{"traceEvents": [{"ph": "X", "name": ', "no usable trace event"),
])
def test_unusable_files_raise_one_line_input_error(tmp_path, content, message):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(InputError) as err:
        kineto.read(p)
    assert message in str(err.value) and "bad.json" in str(err.value) and "\n" not in str(err.value)


def test_folder_without_traces(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match="no Kineto trace"):
        kineto.read(tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_arbitrary_bytes_raise_only_input_error(tmp_path_factory, data):
    p = tmp_path_factory.mktemp("fuzz") / "x.json"
    p.write_bytes(data)
    kineto.sniff(data[:65536].decode("utf-8", errors="replace"))
    try:
        kineto.read(p)
    except InputError:
        pass


def test_arbitrary_gzip_prefixes_raise_only_input_error(tmp_path):
    raw = (DATA / "amd_mi250.json.gz").read_bytes()
    rng = np.random.default_rng(0)
    for n in rng.integers(1, len(raw), size=25):
        p = tmp_path / f"p{n}.json.gz"
        p.write_bytes(raw[:n])
        try:
            b = kineto.read(p)
            assert b.warnings  # a prefix is always damaged: it says so
        except InputError:
            pass


# ------------------------------------------------------------------ larger shared traces

@needs_shared
def test_dlrm_eight_ranks():
    b = kineto.read(SHARED / "param-dlrm" / "dlrm_kineto.tar.gz")
    assert sorted(b.meta["kineto"]) == list(range(8))
    assert {m["world_size"] for m in b.meta["kineto"].values()} == {8}
    t = b.trace
    steps = t[t["name"].astype(str).str.startswith("ProfilerStep")]
    assert {r: sorted(set(g.astype(str))) for r, g in steps.groupby("rank")["name"]} == {
        r: ["ProfilerStep#10"] for r in range(8)}
    nccl = t[(t["cat"] == "kernel") & t["name"].astype(str).str.startswith("ncclKernel_")]
    assert nccl.groupby("rank").size().to_dict() == {r: 8 for r in range(8)}


@needs_shared
def test_ns_resolution_and_largest_trace():
    ns = kineto.read(SHARED / "hta" / "ns_resolution_trace")
    assert ns.meta["kineto"][0]["display_time_unit"] == "ns"
    assert (ns.trace["ts_us"] % 1 != 0).mean() > 0.5  # sub-µs timestamps survive
    big = kineto.read(SHARED / "hta" / "df_index_resolver" / "df_index_resolver.json.gz")
    m = big.meta["kineto"][1]
    assert (m["rank"], m["world_size"]) == (1, 2)
    assert m["device_properties"][0]["name"] == "Tesla V100-SXM2-32GB"
    assert (big.trace["cat"] == "kernel").sum() == 19370  # README: 19,370 GPU kernels
    assert sum(m["phases"].values()) == 216092  # README: 216,092 events


def test_schema_frame_dtypes_and_categories():
    t = kineto.read(DATA / "alexnet.json.gz").trace
    assert t["cat"].dtype == "string" and t["name"].dtype == "string"
    assert set(t["cat"].unique()) >= {"kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "cuda_sync"}
    sync = t[t["cat"] == "cuda_sync"]
    assert (sync["stream"] != -1).all()
    copies = t[t["cat"] == "gpu_memcpy"]
    assert copies["bytes"].notna().all() and (copies["bytes"] > 0).all()



def test_playbook_profiler_window_keys(tmp_path):
    doc = {"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 10, "dur": 5}],
        "playbook_first_step": 40, "playbook_trigger": "slow_step", "playbook_rank": 3, "playbook_host": "gpu-x"}
    p = tmp_path / "window.pt.trace.json"
    p.write_text(json.dumps(doc))
    m = kineto.read(p).meta["kineto"][3]
    assert (m["rank_from"], m["host_name"], m["first_step"], m["trigger"]) == ("playbook_rank", "gpu-x", 40,
                                                                              "slow_step")


def test_last_boundary_is_the_regexs_last_match():
    """The backward search for the last `}, {` finds what the regex's last match finds, hostile runs included."""
    import random

    from playbook.readers.kineto.decode import _BOUNDARY_RE, _last_boundary

    def by_regex(buf: bytes, start: int) -> int | None:
        found = None
        for found in _BOUNDARY_RE.finditer(buf, start):  # noqa: B007
            pass
        return None if found is None else found.start() + 1

    rng = random.Random(1)
    for _ in range(20000):
        buf = bytes(rng.choice(b'{{{{{},, \t\n\rab:"') for _ in range(rng.randint(0, 300)))
        start = rng.randint(0, len(buf))
        assert _last_boundary(buf, start) == by_regex(buf, start)
    hostile = b"{" * (1 << 20) + b"}, {" + b"{" * 100  # a megabyte of braces: the regex takes over
    assert _last_boundary(hostile) == by_regex(hostile, 0) == (1 << 20) + 1


def test_no_event_boundary_for_megabytes_is_skipped_with_memory_bounded(tmp_path, monkeypatch):
    """Damage without an event boundary (`}, {`) for longer than MAX_EVENT_BYTES is counted as one skipped event
    and dropped as it streams (memory stays near that limit, not the file's size), with the event it follows (no
    boundary between them); the events after it are kept, and bytes after the array beyond MAX_HEADER_BYTES are not
    read."""
    import tracemalloc

    monkeypatch.setattr(kineto_decode, "MAX_EVENT_BYTES", 1 << 20)
    monkeypatch.setattr(kineto_decode, "MAX_HEADER_BYTES", 1 << 20)
    ev = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}
    events = ", ".join(json.dumps({**ev, "ts": float(i)}) for i in range(50))
    garbage = b"7705 80718874054782705b98718s0568" * (24 << 20 >> 5)  # 24 MiB, no "}, {" in it
    p = tmp_path / "damaged.json"
    p.write_bytes(b'{"traceEvents": [' + events.encode() + b", " + garbage + b"}, " + events.encode()
                  + b"]" + garbage + b"}")
    tracemalloc.start()
    try:
        b = kineto.read(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(b.trace) == 99
    assert peak < 16 << 20  # the file is 48 MiB: it was never held whole
    w = " ".join(b.warnings)
    assert "skipped 1 of 100" in w and "no event boundary in 1 MiB" in w and "after the traceEvents array (not read)" in w


def test_head_without_trace_events_is_searched_once(tmp_path, monkeypatch):
    """A JSON head with no traceEvents key is refused after MAX_HEADER_BYTES, each byte searched about once (it was
    searched again per 1 MiB chunk: quadratic), and a key cut by a chunk's edge is still found."""
    monkeypatch.setattr(kineto_decode, "CHUNK_BYTES", 1 << 16)
    p = tmp_path / "head.json"
    p.write_bytes(b'{"x": "' + b"a" * (80 << 20) + b'"}')
    started = time.perf_counter()
    with pytest.raises(InputError, match="no traceEvents array"):
        kineto.read(p)
    assert time.perf_counter() - started < 30  # 64 MiB searched 1,024 times over took minutes
    ev = '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}'
    for pad in ((1 << 16) - 12, (1 << 16) - 7, (1 << 16) - 3):  # the key or its `[` across the chunk edge
        q = tmp_path / f"edge{pad}.json"
        q.write_text('{"x": "' + "a" * pad + '", "traceEvents": [' + ev + "]}")
        assert len(kineto.read(q).trace) == 1


def test_an_event_nested_deeper_than_the_decoder_recurses_is_skipped_not_raised(tmp_path):
    """A `name` nested 100,000 lists deep fails the typed decode and makes the lenient one raise RecursionError: the
    chunk is salvaged event by event, the deep one counted as skipped (was a RecursionError out of the reader)."""
    ev = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}
    deep = '{"ph": "X", "cat": "kernel", "name": ' + "[" * 100_000 + "]" * 100_000 + ', "ts": 3.0}'
    p = tmp_path / "deep.json"
    p.write_text('{"traceEvents": [' + json.dumps(ev) + ", " + deep + ", " + json.dumps({**ev, "ts": 5.0}) + "]}")
    b = kineto.read(p)
    assert list(b.trace["ts_us"]) == [1.0, 5.0]
    assert "skipped 1 of 3" in " ".join(b.warnings)
