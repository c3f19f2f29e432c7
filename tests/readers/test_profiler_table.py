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
