"""PyTorch/XLA metrics reports and PT_XLA_DEBUG lines (readers/xla_metrics.py, analysis/xla_runtime.py) on inputs
written apart from the held-out round's files (tests/data/eval/heldout45): LABELED SYNTHETIC texts in the layouts the
tool prints (torch_xla/csrc/runtime/metrics.cc EmitMetricInfo / EmitCounterInfo, debug/metrics_saver.py's header,
csrc/runtime/metrics_analysis.cc's pt-xla-profiler lines), in other wordings and layouts than the round's: PJRT
names (TransferFromDeviceTime), 2019 builds' `Counter:` accumulator, reports printed back to back without a header,
the tool's lines behind a logger prefix or a progress bar."""

from __future__ import annotations

import math
import time

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.xla_metrics import XlaMetrics, quantity


def _scan(text: str) -> dict | None:
    scanner = XlaMetrics()
    for line in text.splitlines():
        scanner.feed(line)
    return scanner.summary()


def _metric(name: str, samples: int, total: str) -> str:
    return (f"Metric: {name}\n  TotalSamples: {samples}\n  Accumulator: {total}\n  ValueRate: 001ms / second\n"
            f"  Rate: 1.5 / second\n  Percentiles: 1%=001ms; 5%=001ms; 50%=002ms500.000us; 99%=003ms\n")


def _counter(name: str, value: int) -> str:
    return f"Counter: {name}\n  Value: {value}\n"


def _verdict(tmp_path, text: str, name: str = "xla.log"):
    path = tmp_path / name
    path.write_text(text)
    return diagnose(read_paths([str(path)]))


@pytest.mark.parametrize(("text", "want", "unit"), [
    ("01d02h03m04s005ms006.500us", 86400 + 7200 + 180 + 4 + 0.005 + 6.5e-6, "s"),
    ("47m60s800ms", 47 * 60 + 60.8, "s"),
    ("000.960us", 0.96e-6, "s"),
    ("3.44KB", 3.44 * 1024, "B"),
    ("8.00B", 8.0, "B"),
    ("1382.00", 1382.0, ""),
])
def test_a_report_value_reads_in_seconds_bytes_or_as_a_number(text, want, unit):
    value, got_unit = quantity(text)
    assert got_unit == unit and value == pytest.approx(want)


@pytest.mark.parametrize("text", ["nanB", "12xyz", "", "ms"])
def test_a_damaged_value_reads_as_nan(text):
    assert math.isnan(quantity(text)[0])


def test_reports_split_at_the_header_and_where_a_metric_repeats():
    text = ("[MetricsData; step=3]\n" + _metric("CompileTime", 3, "01s") + _counter("MarkStep", 3)
            + _metric("CompileTime", 4, "02s") + _metric("ExecuteTime", 9, "090ms") + _counter("MarkStep", 6))
    reports = _scan(text)["reports"]
    assert [(r["step"], r["metrics"]["CompileTime"]["samples"], r["counters"]["MarkStep"]) for r in reports] == [
        (3, 3, 3), (None, 4, 6)]
    assert reports[1]["metrics"]["ExecuteTime"]["total"] == pytest.approx(0.09)
    assert reports[1]["metrics"]["ExecuteTime"]["p50"] == pytest.approx(0.0025)


def test_a_2019_report_whose_accumulator_is_printed_as_counter():
    text = ("Metric: CompileTime\n  TotalSamples: 24\n  Counter: 07s501ms263.438us\n"
            "  ValueRate: 415ms845.224us / second\nMetric: OutboundData\n  TotalSamples: 1976\n  Counter: 4.09GB\n"
            "Counter: CreateXlaTensor\n  Value: 120\n")
    report = _scan(text)["reports"][0]
    assert report["metrics"]["CompileTime"]["total"] == pytest.approx(7.501263438)
    assert report["metrics"]["OutboundData"]["unit"] == "B"
    assert report["counters"] == {"CreateXlaTensor": 120}


def test_the_tools_lines_behind_a_logger_prefix_or_a_progress_bar():
    text = ("WARNING:pt-xla-profiler:CompileTime too frequent: 21 counts during 11 steps\n"
            "  0%|          | 1/310 [3:15:00<1004:17:26, 11700.47s/it]pt-xla-profiler: TransferFromDeviceTime too "
            "frequent: 634 counts during 3 steps\n"
            "pt-xla-profiler: CompileTime too slow: longest instance took 14m30s120ms. Please open a GitHub issue "
            "with the graph dump for our team to optimize.\n"
            "pt-xla-profiler: Op(s) not lowered: aten::_ctc_loss, aten::_ctc_loss_backward,  Please open a GitHub "
            "issue with the above op lowering requests.\n")
    s = _scan(text)
    assert s["frequent"] == {"CompileTime": [(21, 11)], "TransferFromDeviceTime": [(634, 3)]}
    assert s["slow"] == {"CompileTime": pytest.approx(870.12)}
    assert s["unlowered"] == ["aten::_ctc_loss", "aten::_ctc_loss_backward"]


def test_a_metric_line_without_its_fields_is_not_a_report():
    assert _scan("Metric: accuracy\nepoch 1 accuracy 0.93\n") is None


def test_compilations_that_keep_growing_after_the_warm_up_are_recompilation(tmp_path):
    text = "".join(f"[MetricsData; step={s - 1}]\n" + _metric("CompileTime", 2 + s, f"{2 + s}s")
                   + _metric("ExecuteTime", s, f"{s * 50}ms") + _counter("MarkStep", s) for s in (10, 20, 30))
    d = _verdict(tmp_path, text)
    assert d.verdict["id"] == "recompilation"
    assert "32 graph compilations" in d.hypotheses[0]["evidence"][0]


@pytest.mark.parametrize("steps", [(10, 50, 100), (10, 20, 30)])
def test_a_warm_up_that_stopped_compiling_names_no_recompilation(tmp_path, steps):
    # 40 compilations by step 10 exceed the warm-up's allowance at step 30 too: no compilation after step 10 is
    # what says the graphs repeat
    text = "".join(f"[MetricsData; step={s}]\n" + _metric("CompileTime", 40, "05m10s")
                   + _metric("ExecuteTime", s, f"{s * 150}ms") for s in steps)
    assert _verdict(tmp_path, text).verdict["id"] == "insufficient_data"


def test_the_tools_warning_after_compilation_stopped_names_no_recompilation(tmp_path):
    # PT_XLA_DEBUG divides the total by the steps: its warning goes on once the count has stopped growing
    lines = [f"pt-xla-profiler: CompileTime too frequent: {min(21 + 2 * (s - 11), 33)} counts during {s} steps"
             for s in range(11, 60)]
    assert _verdict(tmp_path, "\n".join(lines) + "\n").verdict["id"] == "insufficient_data"


def test_the_tools_lines_with_a_count_that_keeps_growing_are_recompilation(tmp_path):
    lines = [f"pt-xla-profiler: CompileTime too frequent: {20 + s} counts during {s} steps" for s in range(11, 60)]
    assert _verdict(tmp_path, "\n".join(lines) + "\n").verdict["id"] == "recompilation"


def test_few_compilations_for_many_executions_without_steps_name_none(tmp_path):
    text = _metric("CompileTime", 3, "06m02s") + _metric("ExecuteTime", 900, "02m15s")
    assert _verdict(tmp_path, text).verdict["id"] == "insufficient_data"


def test_an_op_counted_without_a_lowering_is_a_host_sync_naming_the_op(tmp_path):
    text = (_metric("TransferFromDeviceTime", 60, "120ms") + _counter("MarkStep", 20)
            + _counter("aten::nonzero", 40) + _counter("xla::add", 400))
    d = _verdict(tmp_path, text)
    top = d.hypotheses[0]
    assert top["id"] == "host_sync"
    assert "aten::nonzero (40 calls)" in top["evidence"][0] and "3.0 per step" in top["evidence"][0]


@pytest.mark.parametrize(("reads", "want"), [(150, "insufficient_data"), (500, "host_sync")])
def test_scalar_reads_per_step_beyond_a_logged_loss_are_a_host_sync(tmp_path, reads, want):
    text = _counter("MarkStep", 100) + _counter("aten::_local_scalar_dense", reads)
    assert _verdict(tmp_path, text).verdict["id"] == want


def test_a_counter_whose_name_is_no_op_name_is_not_named(tmp_path):
    text = _counter("MarkStep", 10) + _counter("aten::<b>x</b>", 40)
    d = _verdict(tmp_path, text)
    assert d.verdict["id"] == "insufficient_data"
    assert not any("<b>" in line for h in d.hypotheses for line in h["evidence"])


def _block(kind: str, cause: str, digest: str, site: str) -> str:
    """One PT_XLA_DEBUG analysis block in debug_util.cpp's layout (LABELED SYNTHETIC)."""
    p = f"{kind} Analysis: "
    own = "/usr/lib/python3.10/site-packages/torch_xla/core/xla_model.py:1055"
    return "\n".join([
        "", p + "=" * 80, p + ("Compilation Cause" if kind == "Compilation" else "Execution Cause"), p + "  " + cause,
        p + "Graph Info: ", p + f"  Graph Hash: {digest}", p + "  Number of Graph Inputs: 35",
        p + "  Number of Graph Outputs: 107", p + "Python Frame Triggered Execution: ",
        p + f"  mark_step ({own})", p + f"  {site}", p + "  ..........", p + "-" * 80, p + "=" * 80, ""])


def test_graph_analysis_blocks_are_read_with_their_cause_hash_and_user_site():
    s = _scan(_block("Compilation", "user mark_step", "c74c3b91b855b2b1", "train_loop_fn (/w/train.py:48)"))
    assert s["graphs"] == [{"kind": "compilation", "cause": "user mark_step", "hash": "c74c3b91b855b2b1",
                            "site": "train_loop_fn (train.py:48)"}]


def test_a_new_graph_compiled_every_step_is_recompilation(tmp_path):
    text = "".join(_block("Compilation", "mark_step in parallel loader at step end", f"{s:016x}",
                          "train_loop_fn (/w/train.py:48)")
                   + _block("Execution", "mark_step in parallel loader at step end", f"{s:016x}",
                            "train_loop_fn (/w/train.py:48)") for s in range(60))
    d = _verdict(tmp_path, text)
    assert d.verdict["id"] == "recompilation" and "60 graph compilations in 60 steps" in d.hypotheses[0][
        "evidence"][0]


@pytest.mark.parametrize(("hashes", "want"), [(("a1", "b2", "c3", "d4"), "recompilation"),
                                              (("a1", "b2"), "insufficient_data")])
def test_one_place_compiling_many_different_graphs_is_recompilation(tmp_path, hashes, want):
    text = "".join(_block("Compilation", "user mark_step", h, "optimizer_step (/w/module.py:1302)") for h in hashes)
    assert _verdict(tmp_path, text).verdict["id"] == want


def test_tensor_values_read_mid_step_are_a_host_sync(tmp_path):
    step = (_block("Execution", "most likely user code trying to access tensor value before torch_xla.sync", "e1",
                   "forward (/w/model.py:205)") * 4
            + _block("Execution", "user mark_step", "f2", "train (/w/train.py:60)"))
    text = _block("Compilation", "user mark_step", "f2", "train (/w/train.py:60)") + step * 20
    d = _verdict(tmp_path, text)
    assert d.verdict["id"] == "host_sync" and "4.0 per step" in d.hypotheses[0]["evidence"][0]


@pytest.mark.parametrize(("step", "compiles"), [(0, 2), (9, 20)])
def test_the_metrics_files_step_counts_from_zero(tmp_path, step, compiles):
    # debug/metrics_saver.py numbers its reports from 0, one after each mark_step: `step=0` follows the first step,
    # `step=9` the tenth, whose warm-up allows 2 compilations a step
    text = (f"[MetricsData; step={step}]\n" + _metric("CompileTime", compiles, "40s")
            + _metric("ExecuteTime", step + 1, "900ms"))
    assert _verdict(tmp_path, text).verdict["id"] == "insufficient_data"


def test_an_op_run_on_the_cpu_a_few_times_in_a_long_run_names_no_host_sync(tmp_path):
    # 3 calls in 10,000 steps (an evaluation's masked index, a checkpoint's load): fewer host round trips than
    # PT_XLA_DEBUG tolerates for device-to-host copies (0.5 a step)
    text = (_metric("CompileTime", 5, "40s") + _metric("ExecuteTime", 10_000, "25m") + _counter("MarkStep", 10_000)
            + _counter("aten::nonzero", 2) + _counter("aten::_ctc_loss", 1))
    d = _verdict(tmp_path, text)
    assert d.verdict["id"] == "insufficient_data"
    assert not any(h["id"] == "host_sync" for h in d.hypotheses)


@pytest.mark.parametrize(("text", "want"), [
    ("[MetricsData; step=29]\n" + _metric("CompileTime", 90, "03m") + _metric("ExecuteTime", 30, "3s"),
     "recompilation"),
    (_counter("MarkStep", 100) + _counter("aten::_local_scalar_dense", 900), "host_sync"),
    (_counter("MarkStep", 100) + _counter("aten::_ctc_loss", 100), "host_sync"),
])
def test_the_next_step_for_a_pytorch_xla_finding_is_pytorch_xlas_own(tmp_path, text, want):
    # not torch.compile's TORCH_LOGS=recompiles, nor a CUDA sync count: the graphs are lazy tensors' on an XLA device
    top = _verdict(tmp_path, text).hypotheses[0]
    assert top["id"] == want
    assert "PT_XLA_DEBUG" in top["next_step"] or "metrics_report" in top["next_step"]
    assert "TORCH_LOGS" not in top["next_step"] and "cuda" not in top["next_step"].lower()


def test_a_loss_read_every_step_is_no_host_sync_by_its_copies_either(tmp_path):
    # one `.item()` a step is one scalar read and one device-to-host copy: within the reads' allowance, so the
    # copies it makes are no host sync either
    text = (_metric("CompileTime", 3, "30s") + _metric("ExecuteTime", 1000, "100s")
            + _metric("TransferFromDeviceTime", 1000, "2s") + _counter("MarkStep", 1000)
            + _counter("aten::_local_scalar_dense", 1000))
    assert _verdict(tmp_path, text).verdict["id"] == "insufficient_data"
    more = text.replace("TotalSamples: 1000\n  Accumulator: 2s", "TotalSamples: 2000\n  Accumulator: 2s")
    assert _verdict(tmp_path, more, "more.log").verdict["id"] == "host_sync"


def test_a_long_line_of_the_tools_not_lowered_list_reads_in_linear_time():
    # this process's CPU seconds, not wall time: a loaded machine's other jobs do not count (a guard against the
    # quadratic work this replaced, far above the linear time)
    started = time.process_time()
    s = _scan("pt-xla-profiler: Op(s) not lowered: aten::sgn_out," + " " * 100_000 + "x\n")
    assert time.process_time() - started < 2
    assert s["unlowered"] == ["aten::sgn_out"]


@pytest.mark.parametrize("text", [
    "[MetricsData; step=0]\n" + _metric("CompileTime", 3, "45s") + _metric("ExecuteTime", 3, "300ms"),
    _metric("CompileTime", 5, "50s") + _metric("ExecuteTime", 6, "300ms") + _counter("MarkStep", 2),
])
def test_the_first_steps_compiling_their_graphs_are_no_recompilation(tmp_path, text):
    # a run stopped after its first step or two: the warm-up's graphs (the parameters' and data's first move, the
    # step without and with optimizer state, a loss read mid-step) all compile in the first steps, not 2 a step;
    # PT_XLA_DEBUG itself judges nothing before its 10th step
    assert _verdict(tmp_path, text).verdict["id"] == "insufficient_data"


def test_a_metrics_file_of_more_reports_than_are_kept_is_judged_by_its_last():
    # XLA_METRICS_FILE gains a report every step: past MAX_REPORTS the latest replaces the last kept
    from playbook.readers.xla_metrics import MAX_REPORTS
    text = "".join(f"[MetricsData; step={s}]\nMetric: CompileTime\n  TotalSamples: {20 + s}\n"
                   for s in range(MAX_REPORTS + 5))
    reports = _scan(text)["reports"]
    assert len(reports) == MAX_REPORTS
    assert reports[-1]["step"] == MAX_REPORTS + 4 and reports[0]["step"] == 0


@pytest.mark.parametrize("cause", ["mark_step when exiting a profiler StepTrace region",
                                   "`torch_xla.sync()` in parallel loader at step end"])
def test_steps_ended_by_a_step_trace_or_the_newer_sync_wording_are_counted(tmp_path, cause):
    # debug_util.cpp names a step's end also when a profiler StepTrace region exits; 2.7's docs print the parallel
    # loader's as `torch_xla.sync()`: 100 steps, 3 graphs (the first step's, with optimizer state, the last short
    # batch's) are a warm-up, not a graph that changes
    site = "train_loop_fn (/w/train.py:48)"
    text = "".join(_block("Compilation", cause, h, site) for h in ("a1", "b2", "c3"))
    text += _block("Execution", cause, "b2", site) * 100
    d = _verdict(tmp_path, text)
    assert d.verdict["id"] == "insufficient_data"


def test_nonzero_is_not_called_an_op_without_a_lowering(tmp_path):
    # the docs (troubleshoot.md): aten:: counters other than nonzero and _local_scalar_dense usually mean a missing
    # lowering; nonzero runs on the CPU by design (its output's size depends on the values)
    text = _counter("MarkStep", 100) + _counter("aten::nonzero", 200)
    top = _verdict(tmp_path, text).hypotheses[0]
    assert top["id"] == "host_sync" and "aten::nonzero (200 calls)" in top["evidence"][0]
    assert "without an XLA lowering" not in top["evidence"][0] and "request its lowering" not in top["evidence"][0]


def test_a_damaged_tool_line_of_zero_steps_is_not_read(tmp_path):
    # the tool prints no line before a step (metrics_analysis.cc: steps <= warm-up is normal): `during 0 steps` is
    # damage, and dividing by it had ended the profiler analyses of every input
    text = ("pt-xla-profiler: TransferFromDeviceTime too frequent: 5 counts during 0 steps\n"
            "pt-xla-profiler: CompileTime too frequent: 9 counts during 0 steps\n"
            "pt-xla-profiler: Op(s) not lowered: aten::sgn_out,  Please open a GitHub issue with the above op "
            "lowering requests.\n")
    assert _scan(text)["frequent"] == {}
    d = _verdict(tmp_path, text)
    assert d.verdict["id"] == "host_sync" and not any("ZeroDivision" in w for w in d.warnings)


def test_the_tools_transfer_warning_after_copies_stopped_names_no_host_sync(tmp_path):
    # 20 copies in the first step (results read once at the start), none after: the tool's ratio of totals warns
    # until step 39, as its CompileTime warning does after compiling stopped
    lines = [f"pt-xla-profiler: TransferFromDeviceTime too frequent: 20 counts during {s} steps" for s in range(1, 40)]
    assert _verdict(tmp_path, "\n".join(lines) + "\n").verdict["id"] == "insufficient_data"
    growing = [f"pt-xla-profiler: TransferFromDeviceTime too frequent: {20 + s} counts during {s} steps"
               for s in range(1, 40)]
    assert _verdict(tmp_path, "\n".join(growing) + "\n", "growing.log").verdict["id"] == "host_sync"
    # two processes' lines, the later step's count the smaller (another process): its own totals, no negative count
    two = ("pt-xla-profiler: TransferFromDeviceTime too frequent: 90 counts during 30 steps\n"
           "pt-xla-profiler: TransferFromDeviceTime too frequent: 60 counts during 40 steps\n"
           "pt-xla-profiler: Op(s) not lowered: aten::sgn_out,  Please open a GitHub issue\n")
    top = _verdict(tmp_path, two, "two.log").hypotheses[0]
    assert "60 copies device to host in 40 steps" in top["evidence"][0]


def test_a_report_behind_xla_dists_worker_prefix_is_read(tmp_path):
    # torch_xla.distributed.xla_dist prefixes each worker's line with its address and ordinal (pytorch/xla#2897:
    # `2021-04-19 13:28:12 10.164.0.25 [0] Counter: xla::clone`)
    body = (_metric("CompileTime", 90, "05m") + _metric("ExecuteTime", 30, "3s") + _counter("MarkStep", 30)
            + _counter("aten::_local_scalar_dense", 900))
    text = "".join(f"2021-04-19 13:28:12 10.164.0.25 [0] {line}\n" for line in body.splitlines())
    d = _verdict(tmp_path, text)
    assert {h["id"] for h in d.hypotheses[:2]} == {"host_sync", "recompilation"}


def test_scalar_reads_of_the_first_step_alone_are_no_host_sync_when_later_reports_show_one_a_step(tmp_path):
    # XLA_METRICS_FILE's reports: 300 reads in the first step (a check of every parameter), then one loss a step;
    # the totals at step 100 (399 in 100 steps) would say 4 a step
    text = "".join(f"[MetricsData; step={s}]\n" + _metric("CompileTime", 2, "30s")
                   + _counter("MarkStep", s + 1) + _counter("aten::_local_scalar_dense", 300 + s) for s in range(100))
    assert _verdict(tmp_path, text).verdict["id"] == "insufficient_data"
    steady = "".join(f"[MetricsData; step={s}]\n" + _metric("CompileTime", 2, "30s")
                     + _counter("MarkStep", s + 1) + _counter("aten::_local_scalar_dense", 4 * (s + 1))
                     for s in range(100))
    assert _verdict(tmp_path, steady, "steady.log").verdict["id"] == "host_sync"


def test_an_op_run_on_the_cpu_before_the_loop_only_is_no_host_sync(tmp_path):
    # 500 calls in the first step (filtering data on the device), none after: the totals at step 100 say 5 a step
    text = "".join(f"[MetricsData; step={s}]\n" + _metric("CompileTime", 2, "30s")
                   + _counter("MarkStep", s + 1) + _counter("aten::nonzero", 500) for s in range(100))
    assert _verdict(tmp_path, text).verdict["id"] == "insufficient_data"


def test_three_graphs_at_one_place_without_steps_are_a_warm_up(tmp_path):
    # PT_XLA_DEBUG_LEVEL=1 prints compilations only: the first step's graph (no optimizer state yet), the steady
    # step's, and the epoch's short last batch's are what a healthy loop compiles there
    cause = "mark_step in parallel loader at step end"
    text = "".join(_block("Compilation", cause, h, "train_loop_fn (/w/train.py:48)") for h in ("a1", "b2", "c3"))
    assert _verdict(tmp_path, text).verdict["id"] == "insufficient_data"
