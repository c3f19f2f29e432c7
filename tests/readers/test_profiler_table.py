"""torch.profiler's key_averages().table() text (readers/profiler_table.py): columns found by their header words,
any sort column and optional column, in a file of its own or inside a training log."""

from __future__ import annotations

import pytest

from playbook.commands import info
from playbook.readers import read_file

# the layout of torch/autograd/profiler_util.py _build_table: a name column, 12-wide right-aligned columns two
# spaces apart, rules of dashes, then the "Self <device> time total" lines
CUDA_HEADER = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self CUDA", "Self CUDA %",
               "CUDA total", "CUDA time avg", "# of Calls")
CPU_HEADER = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "CPU Mem", "Self CPU Mem",
              "# of Calls", "Input Shapes")


def _table(header, rows, name_width=55, footer=("Self CPU time total: 9.039ms",)):
    widths = [name_width] + [12] * (len(header) - 1)
    rule = "  ".join("-" * w for w in widths)
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))  # noqa: E731
    return "\n".join([rule, line(header), rule, *map(line, rows), rule, *footer]) + "\n"


CUDA_ROWS = [
    ("ProfilerStep*", "10.11%", "1.000ms", "100.00%", "9.039ms", "4.520ms", "0.000us", "0.00%", "9.370ms", "4.685ms", "2"),
    ("enumerate(DataLoader)#_SingleProcessDataLoaderIter...", "20.00%", "1.808ms", "25.00%", "2.260ms", "1.130ms",
     "0.000us", "0.00%", "0.000us", "0.000us", "2"),
    ("aten::addmm", "8.50%", "558.000us", "8.71%", "572.000us", "286.000us", "5.000ms", "53.36%", "5.000ms", "2.500ms",
     "2"),
    ("cudaLaunchKernel", "30.00%", "2.712ms", "30.00%", "2.712ms", "13.560us", "0.000us", "0.00%", "0.000us", "0.000us",
     "200"),
    ("void at::native::reduce_kernel<512, 1, at::native::R...", "0.00%", "0.000us", "0.00%", "0.000us", "0.000us",
     "350.121us", "3.74%", "350.121us", "350.121us", "1"),
]


def test_a_cuda_table_file_is_read_into_ops_and_summarised(tmp_path):
    p = tmp_path / "prof.txt"
    p.write_text(_table(CUDA_HEADER, CUDA_ROWS, footer=("Self CPU time total: 9.039ms", "Self CUDA time total: 9.370ms")))
    b = read_file(p)
    prof = b.meta["lines"][str(p)]["profiler"]
    assert prof["ops"] == 5 and prof["tables"] == 1
    assert prof["self_cpu_total_s"] == pytest.approx(9.039e-3) and prof["self_device_total_s"] == pytest.approx(9.37e-3)
    assert prof["top_by"] == "self_device_s" and prof["top"][0] == ("aten::addmm", pytest.approx(5e-3))
    assert prof["kernel_launches"] == 200
    assert prof["loader_share"] == pytest.approx(2.26 / 9.039)
    text = info.render(info.summarize(b))
    assert "torch.profiler table: 5 ops, self CPU 9.04 ms, self device 9.37 ms" in text and "no rows read" not in text


def test_a_cpu_table_with_memory_and_input_shapes_sorted_by_cpu_total(tmp_path):
    rows = [("aten::conv2d", "0.56%", "28.413us", "8.09%", "413.530us", "413.530us", "256.00 KB", "0 B", "1",
             "[[1, 3, 32, 32], [64, 3, 3, 3]]"),
            ("aten::relu", "23.81%", "40.203us", "57.09%", "96.391us", "96.391us", "0 B", "0 B", "3", "[[1, 64]]")]
    p = tmp_path / "cpu.txt"
    p.write_text(_table(CPU_HEADER, rows, name_width=33, footer=("Self CPU time total: 5.112ms",)))
    prof = read_file(p).meta["lines"][str(p)]["profiler"]
    assert prof["ops"] == 2 and prof["top_by"] == "self_cpu_s" and prof["self_device_total_s"] is None
    assert prof["top"][0] == ("aten::relu", pytest.approx(40.203e-6))


def test_a_table_inside_a_training_log_leaves_the_steps_alone(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("step 1 loss 2.3 step_time 0.5s\n" + _table(CUDA_HEADER, CUDA_ROWS[:3])
                 + "step 2 loss 2.2 step_time 0.5s\n")
    b = read_file(p)
    assert b.steps["step"].tolist() == [1, 2] and b.meta["lines"][str(p)]["profiler"]["ops"] == 3


def test_another_dashed_table_is_not_a_profiler_table(tmp_path):
    p = tmp_path / "other.log"
    p.write_text("-----  -----\n name   size\n-----  -----\n  a      3\n-----  -----\nstep 1 step_time 0.5s\n")
    b = read_file(p)
    assert "profiler" not in b.meta["lines"][str(p)] and b.steps["step"].tolist() == [1]


def test_sync_calls_and_profiled_steps_are_summed(tmp_path):
    rows = CUDA_ROWS + [("cudaStreamSynchronize", "9.96%", "900.000us", "9.96%", "900.000us", "450.000us", "0.000us",
                         "0.00%", "0.000us", "0.000us", "2"),
                        ("cudaDeviceSynchronize", "1.11%", "100.000us", "1.11%", "100.000us", "100.000us", "0.000us",
                         "0.00%", "0.000us", "0.000us", "1")]
    p = tmp_path / "prof.txt"
    p.write_text(_table(CUDA_HEADER, rows, footer=("Self CPU time total: 9.039ms", "Self CUDA time total: 9.370ms")))
    b = read_file(p)
    prof = b.meta["lines"][str(p)]["profiler"]
    assert prof["sync_s"] == pytest.approx(1e-3) and prof["sync_calls"] == 3
    assert prof["steps"] == 2 and prof["steps_s"] == pytest.approx(9.039e-3)
    # the summary is where the analyses look for reader summaries: a file of tables alone is something to analyse
    assert b.meta[f"profiler_table:{p}"] is prof and not b.is_empty()


def test_a_table_cut_before_its_totals_takes_the_total_from_the_percent_column(tmp_path):
    """A paste of the first rows only (no closing rule, no `Self CPU time total`): each row's self CPU over its
    `Self CPU %` gives the table's total (100 s here), not the sum of the rows shown (62.5 s)."""
    rows = [("enumerate(DataLoader)#_MultiProcessingDataLoaderIter...", "50.00%", "50.000s", "52.00%", "52.000s",
             "520.000ms", "0.000us", "0.00%", "0.000us", "0.000us", "100"),
            ("aten::convolution_backward", "12.50%", "12.500s", "20.00%", "20.000s", "200.000ms", "0.000us", "0.00%",
             "9.000s", "90.000ms", "100")]
    p = tmp_path / "cut.txt"
    p.write_text(_table(CUDA_HEADER, rows, footer=())[: -1].rsplit("\n", 1)[0] + "\n")  # the closing rule cut too
    prof = read_file(p).meta["lines"][str(p)]["profiler"]
    assert prof["self_cpu_total_s"] == pytest.approx(100.0)
    assert prof["loader_share"] == pytest.approx(0.52)


def _cpu_steps_table(step_self_pct: float) -> str:
    """A CPU-only table (no device columns) of 10 profiled steps of 1 s whose ProfilerStep* self CPU is
    `step_self_pct` % of the steps' time, the rest in the model's ops."""
    own = 10.0 * step_self_pct / 100
    ops = 10.0 - own
    header = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls")
    rows = [("ProfilerStep*", f"{step_self_pct:.2f}%", f"{own:.3f}s", "100.00%", "10.000s", "1.000s", "10"),
            ("aten::convolution", f"{60 * ops / 10:.2f}%", f"{0.6 * ops:.3f}s", f"{60 * ops / 10:.2f}%",
             f"{0.6 * ops:.3f}s", "10.000ms", "1000"),
            ("Optimizer.step#AdamW.step", f"{40 * ops / 10:.2f}%", f"{0.4 * ops:.3f}s", f"{40 * ops / 10:.2f}%",
             f"{0.4 * ops:.3f}s", "10.000ms", "10")]
    return _table(header, rows, footer=("Self CPU time total: 10.000s",))


def test_steps_whose_host_time_no_op_covers_are_not_healthy(tmp_path):
    """ProfilerStep*'s own self CPU is host time inside the steps outside every recorded op (batches built in
    Python the profiler does not record): at 70% of the steps it is the loss, not "healthy (confirmed)"."""
    from playbook.diagnosis import diagnose

    p = tmp_path / "prof.txt"
    p.write_text(_cpu_steps_table(70.0))
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "data_starvation", d.verdict["sentence"]
    assert d.verdict["lost_share"] == pytest.approx(0.70, abs=0.01)
    p.write_text(_cpu_steps_table(3.0))  # Python between the ops: no finding
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "healthy" and "no recorded op" not in " ".join(
        e for h in d.hypotheses for e in h["evidence"])


def test_a_cpu_op_table_without_steps_cannot_vouch_for_health(tmp_path):
    """Ops of an unknown window, no device times, no profiled steps: nothing found is no evidence of health."""
    from playbook.diagnosis import diagnose

    header = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls")
    rows = [("aten::convolution", "60.00%", "6.000s", "60.00%", "6.000s", "6.000ms", "1000"),
            ("aten::addmm", "40.00%", "4.000s", "40.00%", "4.000s", "4.000ms", "1000")]
    p = tmp_path / "ops.txt"
    p.write_text(_table(header, rows, footer=("Self CPU time total: 10.000s",)))
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "insufficient_data", d.verdict["sentence"]
    assert "torch.profiler op tables without device times" in d.verdict["sentence"]
