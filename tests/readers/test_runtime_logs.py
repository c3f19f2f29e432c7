"""Framework-runtime records read by held-out round 43's mechanisms (readers/runtime_logs.py and the recompilation
evidence in diagnosis/evidence/from_events.py), on logs written here from the tools' own print statements, apart from
tests/data/eval/heldout43: TensorFlow's frequent-retracing warning (glog prefix, Keras objects, the older wording),
JAX compile logs (the absl `for args` wording, the glog prefix, a function compiled again), PyTorch 2.0's dynamo
records as a tuple's repr, dynamo's CompileProfiler report, and torch.cuda.memory_summary() boxes."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_file

TF_TAIL = (" triggered tf.function retracing. Tracing is expensive and the excessive number of tracings is likely due "
           "to passing python objects instead of tensors. Also, tf.function has experimental_relax_shapes=True option "
           "that relaxes argument shapes that can avoid unnecessary retracing.")


def _read(tmp_path, text, name="run.log"):
    path = tmp_path / name
    path.write_text(text)
    return read_file(path)


def _events(tmp_path, text, name="run.log"):
    return _read(tmp_path, text, name).events


# TensorFlow def_function.py: "%d out of the last %d calls to %s triggered tf.function retracing. ..." (the function's
# repr: "<function f at 0x..>", a Keras object's "<... object at 0x..>"), behind absl's glog prefix or Python logging's
@pytest.mark.parametrize(("line", "name", "counts"), [
    ("W0406 09:22:52.525994 139643050075904 def_function.py:598] 6 out of the last 7 calls to <function "
     "Trainer.fit.<locals>.train_step at 0x7f01b2c3d4e0>" + TF_TAIL, "Trainer.fit.<locals>.train_step", ("6", "7")),
    ("WARNING:tensorflow:5 out of the last 5 calls to <tensorflow.python.keras.engine.sequential.Sequential object "
     "at 0x7f2185a37630>" + TF_TAIL, "tensorflow.python.keras.engine.sequential.Sequential", ("5", "5")),
    ("[worker 3] WARNING:tensorflow:11 out of the last 11 calls to <function predict at 0x14b2f0>" + TF_TAIL,
     "predict", ("11", "11")),
    ("WARNING:tensorflow:5 out of the last 9 calls to <function make.<locals>.wrap.<locals>.step at 0x7f01>" + TF_TAIL,
     "make.<locals>.wrap.<locals>.step", ("5", "9")),
])
def test_tf_retracing_warning_is_a_recompile_of_its_function(tmp_path, line, name, counts):
    rows = _events(tmp_path, line + "\n")
    assert rows["kind"].tolist() == ["recompile"]
    detail = rows["detail"].iloc[0]
    assert f"recompiling {name} in tf.function" in detail and f"on {counts[0]} of the last {counts[1]} calls" in detail


def test_tf_retracing_warning_alone_is_a_recompilation_verdict(tmp_path):
    line = ("WARNING:tensorflow:7 out of the last 10 calls to <function train at 0x7f954a804d40>" + TF_TAIL)
    d = diagnose(_read(tmp_path, line + "\n"))
    assert d.verdict["id"] == "recompilation"
    assert "7 of the last 10 calls" in d.hypotheses[0]["evidence"][0]


def test_prose_about_retracing_is_no_record(tmp_path):
    with pytest.raises(Exception, match="not telemetry"):
        _read(tmp_path, "we saw tf.function retracing on some calls last week\n")


# jax/_src/dispatch.py and interpreters/pxla.py under jax_log_compiles: the absl wording of jax 0.2 ("Compiling f
# (id) for args (...)", "Finished XLA compilation of f in S sec") and the glog prefix of jax >= 0.4
JAX_OLD = ("WARNING:absl:Finished tracing + transforming update for jit in 1.5 sec\n"
           "WARNING:absl:Compiling update (140417529333056) for args (ShapedArray(float32[128,64]),).\n"
           "WARNING:absl:Finished XLA compilation of update in 0.5 sec\n")
JAX_NEW = ("W0610 23:50:25.1 pxla.py:703] Compiling jit(loss_fn) with global shapes and types "
           "(ShapedArray(bfloat16[16,{n},2048]),). Argument mapping: (UnspecifiedValue,).\n"
           "W0610 23:50:26.5 dispatch.py:205] Finished jaxpr to MLIR module conversion jit(loss_fn) in 0.25 sec\n"
           "W0610 23:50:44.1 pxla.py:1234] Finished XLA compilation of jit(loss_fn) in 2.0 sec\n")


def test_jax_compile_log_gives_a_compile_event_with_its_seconds(tmp_path):
    rows = _events(tmp_path, JAX_OLD)
    assert rows["kind"].tolist() == ["compile"]
    assert rows["duration_s"].iloc[0] == pytest.approx(2.0)  # 1.5 s tracing + 0.5 s XLA
    assert "compiling update in jit" in rows["detail"].iloc[0]


def test_jax_function_compiled_again_is_a_recompile(tmp_path):
    rows = _events(tmp_path, "".join(JAX_NEW.format(n=n) for n in (128, 256, 384)))
    assert rows["kind"].tolist() == ["compile", "recompile", "recompile"]
    assert rows["duration_s"].tolist() == pytest.approx([2.25, 2.25, 2.25])
    assert "recompiling loss_fn in jit; compiled again" in rows["detail"].iloc[1]


def test_jax_compiles_of_different_functions_are_no_recompiles(tmp_path):
    text = JAX_NEW.format(n=128) + JAX_NEW.format(n=128).replace("loss_fn", "eval_fn")
    assert _events(tmp_path, text)["kind"].tolist() == ["compile", "compile"]


# torch/_dynamo/convert_frame.py in PyTorch 2.0: log.debug of a tuple, so the record prints as its repr
def _tuple_record(t: str, guard: str, fn: str = "forward") -> str:
    return (f"[2023-05-02 10:00:{t}] torch._dynamo.convert_frame.__recompiles: [DEBUG] ('Recompiling function {fn} "
            f"in /srv/model.py', \"triggered by the following guard failure: {guard}\")\n")


def test_dynamo_tuple_record_is_read_with_its_guard(tmp_path):
    rows = _events(tmp_path, _tuple_record("01,000", "L['x'].size()[0] == 64"))
    assert rows["detail"].tolist() == ["line 1: recompiling forward in /srv/model.py; guard: L['x'].size()[0] == 64"]


def test_recompiles_on_a_counting_integer_are_a_finding_below_the_limit(tmp_path):
    text = "".join(_tuple_record(f"0{i},000", f"L['step'] == {i * 10}") for i in range(3))
    d = diagnose(_read(tmp_path, text))
    assert d.verdict["id"] == "recompilation"
    assert "new value of L['step'] (0, 10, 20)" in d.hypotheses[0]["evidence"][0]


@pytest.mark.parametrize("guards", [
    ["L['training'] == 1", "L['training'] == 0", "L['training'] == 1"],  # a flag: two values
    ["___check_obj_id(L['self'], 1)", "___check_obj_id(L['self'], 2)", "___check_obj_id(L['self'], 3)"],
])
def test_a_flag_or_an_object_guard_is_no_counter(tmp_path, guards):
    text = "".join(_tuple_record(f"0{i},000", g) for i, g in enumerate(guards))
    assert diagnose(_read(tmp_path, text)).verdict["id"] == "insufficient_data"


# torch/_dynamo/utils.py CompileProfiler.report(): tabulate's table of frames recompiled more than once
def _report(rows: str) -> str:
    return ("Torchdynamo Profiler Report\n===========================\n\nGraph Breaks\n------------\n"
            "No graph breaks detected.\n\nRecompilation\n-------------\n"
            "These subgraphs were recompiled more than once due to guard failures\n\n"
            "Function                   Recompiles  Recompile Reasons\n"
            "-----------------------  ------------  -----------------------------\n" + rows)


def test_compile_profiler_rows_are_one_recompile_per_count(tmp_path):
    rows = _events(tmp_path, _report("'step' (train.py:40)                3  L['lr'] == 0.1\n"
                                     "                                        L['lr'] == 0.05\n"
                                     "'head' (model.py:7)                 2  tensor 'L['x']' size mismatch\n"))
    assert rows["kind"].tolist() == ["recompile"] * 5
    assert rows["detail"].str.contains("recompiling step in train.py:40").sum() == 3
    assert rows["detail"].str.contains("recompiling head in model.py:7").sum() == 2


def test_compile_profiler_at_the_limit_is_a_recompilation_verdict(tmp_path):
    d = diagnose(_read(tmp_path, _report("'forward' (net.py:12)              8  ___check_type_id(L['x'], 9)\n")))
    assert d.verdict["id"] == "recompilation"


def test_step_lines_after_a_compile_profiler_report_are_still_steps(tmp_path):
    text = _report("'forward' (net.py:12)              2  L['n'] == 1\n") + "\n" + "".join(
        f"step {i} loss 2.{i} time {0.5 + (i == 20) * 3:.1f}s\n" for i in range(1, 40))
    bundle = _read(tmp_path, text)
    assert len(bundle.steps[bundle.steps["phase"] == "step"]) >= 38


# torch/cuda/memory.py memory_summary(): the header row of counts, then the box of metrics (MB before torch 1.10)
def _summary(ooms: int, retries: int, unit: str = "MiB") -> str:
    return ("|===========================================================================|\n"
            "|                  PyTorch CUDA memory summary, device ID 1                 |\n"
            "|---------------------------------------------------------------------------|\n"
            f"|            CUDA OOMs: {ooms:<13d}|        cudaMalloc retries: {retries:<10d}|\n"
            "|===========================================================================|\n"
            "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n"
            "|---------------------------------------------------------------------------|\n"
            f"| Allocated memory      |   20480 {unit} |   23100 {unit} |  912000 {unit} |  891520 {unit} |\n"
            f"|       from large pool |   20400 {unit} |   23000 {unit} |  900000 {unit} |  879600 {unit} |\n")


def test_memory_summary_with_retries_is_memory_pressure_with_its_peak(tmp_path):
    rows = _events(tmp_path, _summary(0, 17, "MB"))
    assert rows["kind"].tolist() == ["memory_pressure"]
    assert "17 cudaMalloc retries" in rows["detail"].iloc[0] and "peak 23100 MB" in rows["detail"].iloc[0]
    assert diagnose(_read(tmp_path, _summary(0, 17))).verdict["id"] == "memory_pressure"


def test_memory_summary_with_an_oom_is_an_oom_event(tmp_path):
    assert _events(tmp_path, _summary(2, 5))["kind"].tolist() == ["oom"]


def test_a_clean_memory_summary_alone_is_understood_but_holds_nothing_to_diagnose(tmp_path):
    # no retry, no OOM, no time axis: its one-line error says its lines were understood, not that they were unread
    with pytest.raises(Exception, match="8 understood without a step time"):
        _read(tmp_path, _summary(0, 0))
    bundle = _read(tmp_path, "step 1 loss 2.0 time 0.5s\n" + _summary(0, 0) + "step 2 loss 1.9 time 0.5s\n")
    assert bundle.events.empty and len(bundle.steps) == 2


def test_pipe_separated_step_lines_are_no_memory_summary(tmp_path):
    text = "".join(f"| epoch 1 | step {i} | loss 1.{i} | time 0.5s |\n" for i in range(1, 30))
    bundle = _read(tmp_path, text)
    assert bundle.events.empty and len(bundle.steps) > 0


# reviewer's cases (r1): a box printed every few steps of a log whose step lines are themselves `| ... |` cells; the
# box is 77 characters wide and ends on its closing `|===|` rule (torch/cuda/memory.py)
def test_pipe_step_lines_after_a_periodic_memory_summary_are_still_steps(tmp_path):
    box = _summary(0, 0) + "|" + "=" * 75 + "|\n"
    text = "".join(f"| epoch 1 | step {i} | loss 1.{i} | time {0.5 + (i % 40 == 0) * 2}s |\n" + (box if i % 10 == 0 else "")
                   for i in range(1, 120))
    bundle = _read(tmp_path, text)
    assert len(bundle.steps) >= 115 and bundle.events.empty


def test_a_memory_summary_box_is_read_to_its_closing_rule(tmp_path):
    box = _summary(0, 3) + ("|---------------------------------------------------------------------------|\n"
                            "| Oversize GPU segments |       0    |       0    |       0    |       0    |\n"
                            "|===========================================================================|\n")
    steps = [f"| step {i} | loss 1.{i} | time 0.5s |\n" for i in range(1, 5)]
    bundle = _read(tmp_path, "".join(steps[:2]) + box + "".join(steps[2:]))
    assert bundle.events["kind"].tolist() == ["memory_pressure"]
    assert bundle.meta["lines"][str(tmp_path / "run.log")]["understood"]["events"] == 11  # all but its top rule
    assert len(bundle.steps) == 4


def test_step_lines_after_a_report_without_recompiles_are_still_steps(tmp_path):
    # CompileProfiler.report() ends on "No recompilation detected." when no frame recompiled: the lines after it are
    # the run's again
    report = _report("").rsplit("Function", 1)[0] + "No recompilation detected.\n"
    text = report + "".join(f"step {i} loss 2.{i} time {0.5 + (i == 20) * 3:.1f}s\n" for i in range(1, 40))
    bundle = _read(tmp_path, text)
    assert len(bundle.steps[bundle.steps["phase"] == "step"]) == 39 and bundle.events.empty


def _jax(name: str, cols: int, trace_s: float = 1.5, prefix: str = "") -> str:
    return (f"{prefix}Finished tracing + transforming {name} for pjit in {trace_s} sec\n"
            f"{prefix}Compiling {name} with global shapes and types [ShapedArray(float32[8,{cols}])]. Argument mapping: "
            f"[UnspecifiedValue].\n{prefix}Finished XLA compilation of jit({name}) in 10.0 sec\n")


def test_each_process_compiling_its_function_once_is_no_recompile(tmp_path):
    # a multi-process JAX job in one file (srun -l labels): every process compiles train_step once
    rows = _events(tmp_path, _jax("train_step", 128, prefix="0: ") + _jax("train_step", 128, prefix="1: "))
    assert rows["kind"].tolist() == ["compile", "compile"] and sorted(rows["rank"]) == [0, 1]


def test_a_nested_jit_traced_inside_another_is_not_charged_to_its_own_later_compile(tmp_path):
    # loss_fn is jitted and called inside the jitted train_step: each trace of train_step logs loss_fn's trace
    # (nested, and inside train_step's own seconds); loss_fn compiled on its own later costs its own trace only
    nested = "".join("Finished tracing + transforming loss_fn for pjit in 2.0 sec\n" + _jax("train_step", 128 * i, 3.0)
                     for i in range(1, 6))
    rows = _events(tmp_path, nested + _jax("loss_fn", 128, 2.0))
    assert rows.loc[rows["detail"].str.contains("loss_fn"), "duration_s"].tolist() == pytest.approx([12.0])
    assert rows.loc[rows["detail"].str.contains("train_step"), "duration_s"].tolist() == pytest.approx([13.0] * 5)


def test_a_periodic_memory_summary_restating_its_counts_adds_no_event(tmp_path):
    # memory_stats()'s num_ooms / num_alloc_retries count since the process started: a summary printed every 50 steps
    # restates one recovered OOM (fairseq's "attempting to recover from OOM") and its retries until the run ends
    box = _summary(1, 2) + "|" + "=" * 75 + "|\n"
    text = "".join(f"step {i} loss 2.0 time {0.5 + (i == 30) * 1.5:.1f}s\n"
                   + (box if i % 50 == 0 else "") + (box.replace("retries: 2 ", "retries: 5 ") if i == 120 else "")
                   for i in range(1, 201))
    bundle = _read(tmp_path, text)
    assert bundle.events["kind"].tolist() == ["oom", "memory_pressure"]
    assert "3 more cudaMalloc retries" in bundle.events["detail"].iloc[1]
    assert not diagnose(bundle).verdict.get("ended")


def test_recompiles_on_a_changing_float_read_with_its_values(tmp_path):
    # a learning rate passed as a Python float: dynamo specialised the frame on it (`L['lr'] == 0.001`); its values
    # are read whole, not as their integer part (0, 0, 0)
    text = "".join(_tuple_record(f"0{i},000", f"L['lr'] == {lr}", "step") for i, lr in enumerate(("0.001", "0.0005",
                                                                                                    "0.00025")))
    d = diagnose(_read(tmp_path, text))
    assert d.verdict["id"] == "recompilation"
    assert "new value of L['lr'] (0.001, 0.0005, 0.00025)" in d.hypotheses[0]["evidence"][0]


def test_a_report_with_many_graph_breaks_still_reads_its_recompile_table(tmp_path):
    # graph_break_report(): tabulate's `Graph Break Reason  Count` table, a row per reason, before the Recompilation
    # section
    reasons = [f"call_function UserDefinedClassVariable() [] {{}} at step {i}" for i in range(40)]
    width = max(map(len, reasons))
    breaks = (f"{'Graph Break Reason':<{width}}  {'Count':>7}\n" + "-" * width + "  -------\n"
              + "".join(f"{r:<{width}}  {1:>7}\n" for r in reasons))
    text = _report("'forward' (net.py:12)              8  ___check_type_id(L['x'], 9)\n").replace(
        "No graph breaks detected.\n", breaks)
    rows = _events(tmp_path, text)
    assert rows["kind"].tolist() == ["recompile"] * 8


def test_a_compile_of_a_large_model_with_a_long_signature_is_read(tmp_path):
    # a train_step over a model's parameters: its "global shapes and types" list runs to thousands of characters
    shapes = ", ".join(f"ShapedArray(float32[{64 * (i % 7 + 1)},{64 * (i % 5 + 1)}])" for i in range(150))
    text = ("Finished tracing + transforming train_step for pjit in 4.0 sec\n"
            f"Compiling train_step with global shapes and types [{shapes}]. Argument mapping: "
            f"[{', '.join(['UnspecifiedValue'] * 150)}].\n"
            "Finished jaxpr to MLIR module conversion jit(train_step) in 1.0 sec\n"
            "Finished XLA compilation of jit(train_step) in 30.0 sec\n")
    rows = _events(tmp_path, text)
    assert rows["kind"].tolist() == ["compile"] and rows["duration_s"].tolist() == pytest.approx([35.0])
    assert "ShapedArray(float32[64,64])" in rows["detail"].iloc[0]


def test_a_report_claiming_huge_counts_on_many_rows_stays_bounded(tmp_path):
    # 14 kB of rows each claiming 99999 recompiles were two million events (1.7 GB): the cap is the report's
    rows = "".join(f"'f{i}' (m.py:{i})                99999  L['x'] == 1\n" for i in range(200))
    events = _events(tmp_path, _report(rows))
    assert len(events) <= 10_000 + 200 and events["detail"].str.contains("recompiling f199 in m.py:199").any()


def test_a_long_line_under_a_recompile_table_header_is_read_in_linear_time(tmp_path):
    # `x  1  y`, 60 kB of spaces (lines are cut at 64 kB), `z`: an unbounded `\s{2,}` in the row pattern was retried
    # at each of 300 lengths of the first cell (about 1 s a line)
    import time
    text = (_report("") + "x  1  y" + " " * 60_000 + "z\n") * 20 + "step 1 loss 2.0 time 0.5s\nstep 2 loss 1.9 time 0.5s\n"
    start = time.process_time()  # CPU seconds of this process: other jobs on the machine do not count
    _read(tmp_path, text)
    assert time.process_time() - start < 8


def test_a_long_dynamo_tuple_line_is_read_in_linear_time(tmp_path):
    # 60 kB of spaces after "guard failure:": an unbounded `\s*` before the lazy guard was retried at each length
    import time
    line = "('Recompiling function f in /srv/m.py', \"triggered by the following guard failure:" + " " * 60_000 + "x\n"
    start = time.process_time()
    _read(tmp_path, line * 40 + _tuple_record("01,000", "L['n'] == 1"))
    assert time.process_time() - start < 5
