"""Reading mechanisms the thirty-sixth held-out round (tests/data/eval/heldout36/SOURCES.md: profiler summaries as
users paste them) asked for, tested on inputs written here, apart from the held-out files: torch.profiler's two total
lines read without their table; nsys reports retyped as Markdown pipe tables; a cut nsys kernel table's whole implied
by the shares it states; kernel launches costed at the median call where the API table states it."""

from __future__ import annotations

import pytest

from playbook.analysis import nsys_profiles as an
from playbook.core.errors import UnknownFormatError
from playbook.diagnosis import diagnose
from playbook.readers import detect, nsys, read_paths
from playbook.readers.profiler_table import META_PREFIX


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------- torch.profiler totals without their table
@pytest.mark.parametrize(("device", "cpu", "dev", "cpu_s", "dev_s"), [
    ("CUDA", "12.500ms", "150.000us", 0.0125, 150e-6),
    ("XPU", "1.250s", "1.100s", 1.25, 1.1),  # another device's name (profiler_util: "Self {device} time total")
])
def test_the_two_total_lines_alone_are_read(tmp_path, device, cpu, dev, cpu_s, dev_s):
    text = f"epoch 3 done\nSelf CPU time total: {cpu}\nSelf {device} time total: {dev}\n"
    b = read_paths([str(_write(tmp_path, "totals.log", text))])
    summary = next(v for k, v in b.meta.items() if k.startswith(META_PREFIX))
    assert summary["totals_only"] and summary["ops"] == 0
    assert summary["self_cpu_total_s"] == pytest.approx(cpu_s)
    assert summary["self_device_total_s"] == pytest.approx(dev_s)


def test_one_total_line_or_one_without_a_unit_is_no_summary(tmp_path):
    for text in ("Self CPU time total: 12.500ms\n", "Self CPU time total: 12.5\nSelf CUDA time total: 3.0\n"):
        with pytest.raises(UnknownFormatError):
            read_paths([str(_write(tmp_path, "one.log", text))])


@pytest.mark.parametrize(("cpu", "dev"), [("25.000ms", "240.000us"), ("8.000ms", "7.900ms")])
def test_totals_alone_name_no_cause_and_never_vouch_for_health(tmp_path, cpu, dev):
    """The device's share of the host's op time is measured, what held the host is not: insufficient_data, whether
    the device ran 1% or 99% of that time (as a steady utilization level without a swing)."""
    path = _write(tmp_path, "tail.txt", f"Self CPU time total: {cpu}\nSelf CUDA time total: {dev}\n")
    d = diagnose(read_paths([str(path)]))
    assert d.verdict["id"] == "insufficient_data"
    assert "totals without its rows" in " ".join(d.hypotheses[0]["evidence"])
    assert next(h for h in d.hypotheses if h["id"] == "healthy")["score"] <= 0.5


# ---------------------------------------------------------------- nsys reports retyped as Markdown tables
KERNELS_MD = """Profile of the fine-tune, nsys 2024.2 (kernels)

| **Time (%)** | **Total Time (ns)** | **Instances** | **Avg (ns)** | **Name** |
|:-----------:|-------------------:|--------------:|-------------:|:---------|
| 61.0% | 1,220,000 | 400 | 3,050.0 | `void gemm_kernel<float>(float*, float*)` |
| 39.0% | 780,000 | 1,200 | 650.0 | `void elementwise_add(float*)` |

The rest of the run is below.
"""


def test_a_markdown_kernel_table_is_read_by_its_header_meaning(tmp_path):
    path = _write(tmp_path, "kernels.md.txt", KERNELS_MD)
    assert detect.matches(path.read_text())[0] == "nsys"
    reps = nsys.reports(nsys.read(path))
    k = reps["cuda_gpu_kern_sum"]
    assert list(k["name"]) == ["void gemm_kernel<float>(float*, float*)", "void elementwise_add(float*)"]
    assert list(k["time_pct"]) == [61.0, 39.0] and list(k["count"]) == [400, 1200]
    assert list(k["total_ns"]) == [1_220_000, 780_000] and list(k["avg_ns"]) == [3050.0, 650.0]


def test_markdown_api_and_os_tables_are_told_apart_by_their_names(tmp_path):
    text = ("| Function | Time (%) | Total Time (ns) | Num Calls | Average Time (ns) |\n"
            "|---|---|---|---|---|\n| `sem_wait` | 70.0% | 7,000 | 7 | 1,000.0 |\n| `read` | 30.0% | 3,000 | 30 | 100.0 |\n"
            "\n| API Function | Time (%) | Total Time (ns) | Num Calls | Med Time (ns) |\n"
            "|---|---|---|---|---|\n| `cudaLaunchKernel` | 90.0% | 9,000 | 1,800 | 5.0 |\n"
            "| `cudaMemcpyAsync` | 10.0% | 1,000 | 4 | 250.0 |\n")
    reps = nsys.reports(nsys.read(_write(tmp_path, "retyped.txt", text)))
    assert list(reps["osrt_sum"]["name"]) == ["sem_wait", "read"]
    assert list(reps["osrt_sum"]["avg_ns"]) == [1000.0, 100.0]
    assert list(reps["cuda_api_sum"]["name"]) == ["cudaLaunchKernel", "cudaMemcpyAsync"]
    assert list(reps["cuda_api_sum"]["med_ns"]) == [5.0, 250.0]


def test_a_markdown_row_of_the_wrong_width_is_counted(tmp_path):
    text = KERNELS_MD.replace("| 39.0% | 780,000 |", "| 39.0% |")
    b = nsys.read(_write(tmp_path, "short_row.txt", text))
    assert len(nsys.reports(b)["cuda_gpu_kern_sum"]) == 1
    assert any("cells where the header has 5" in w for w in b.warnings), b.warnings


def test_other_markdown_tables_are_not_nsys():
    text = "| epoch | loss | gpu util (%) |\n|---|---|---|\n| 1 | 0.5 | 93 |\n"
    assert not nsys.sniff(text)
    assert "nsys" not in detect.matches(text)


# ---------------------------------------------------------------- launch bound: cut tables, median launches
API_HEADER = ' Time (%)  Total Time (ns)  Num Calls   Avg (ns)    Med (ns)   Min (ns)  Max (ns)  StdDev (ns)  Name\n'
API_RULE = ' --------  ---------------  ---------  ----------  ---------  --------  --------  -----------  ----------------\n'
KERN_HEADER = ' Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)  Name\n'
KERN_RULE = ' --------  ---------------  ---------  --------  --------  --------  --------  -----------  ----------------\n'


def _profile(tmp_path, launch_row: str, kernel_rows: str):
    text = ("Processing [x.sqlite] with [/opt/nsys/reports/cuda_api_sum.py]... \n\n"
            + API_HEADER + API_RULE + launch_row + "\n"
            + "Processing [x.sqlite] with [/opt/nsys/reports/cuda_gpu_kern_sum.py]... \n\n"
            + KERN_HEADER + KERN_RULE + kernel_rows)
    return an.summarize(read_paths([str(_write(tmp_path, "x_stats.txt", text))]))


def test_one_slow_first_launch_does_not_make_a_loop_launch_bound(tmp_path):
    """1,000 launches: one of 50 ms (module loading on the first call), the rest 4 us (median). 20 ms of kernels: the
    total (54 ms) would bound the GPU at 37% busy; the steady cost, n × median = 4 ms, bounds nothing."""
    launch = "     99.0         53996000       1000     53996.0     4000.0      3000  50000000    1580000.0  cudaLaunchKernel\n"
    kernels = "    100.0         20000000       1000   20000.0   20000.0     19000     21000        100.0  void big(float*)\n"
    s = _profile(tmp_path, launch, kernels)
    assert s["profiles"][0]["api"]["launch_ms"] == pytest.approx(4.0)
    assert "launch_bound" not in {f["hypothesis"] for f in s["findings"]}


def test_a_cut_top_of_tiny_kernels_still_bounds_the_busy_share(tmp_path):
    """2,000 launches at 6 us median (12 ms) for kernels whose top two rows, 2.4 ms, are 60% of the table: the whole
    is at most 2.4 / 0.599 = 4.0 ms, so one launching thread keeps the GPU at most a third busy."""
    launch = "     90.0         12500000       2000      6250.0     6000.0      5000     20000        900.0  cudaLaunchKernel\n"
    kernels = ("     40.0          1600000       1000    1600.0    1600.0      1500      1700         10.0  void add(float*)\n"
               "     20.0           800000        500    1600.0    1600.0      1500      1700         10.0  void mul(float*)\n")
    s = _profile(tmp_path, launch, kernels)
    kern = s["profiles"][0]["kernels"]
    assert kern["complete"] is False and kern["whole_ms"] == pytest.approx(2.4 * 100 / 59.9, abs=1e-3)
    lb = next(f for f in s["findings"] if f["hypothesis"] == "launch_bound")
    assert lb["share"] == pytest.approx(1 - kern["whole_ms"] / 12.0, abs=1e-3) and lb["level"] == "high"


# ---------------------------------------------------------------- launch bound from a key_averages table
def _ka_table(rows, totals=("Self CPU time total: 12.000ms", "Self CUDA time total: 1.000ms")) -> str:
    """A key_averages table as torch/autograd/profiler_util.py `_build_table` lays it out (sorted by self CPU here,
    without the memory columns): a name column, 12-wide right-aligned columns two spaces apart, rules, totals."""
    header = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self CUDA", "Self CUDA %",
              "CUDA total", "CUDA time avg", "# of Calls")
    widths = [40] + [12] * (len(header) - 1)
    rule = "  ".join("-" * w for w in widths)
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))  # noqa: E731
    return "\n".join([rule, line(header), rule, *map(line, rows), rule, *totals]) + "\n"


def _launch_row(name: str, ms: str, calls: int) -> tuple:
    return (name, "40.00%", ms, "40.00%", ms, "10.000us", "0.000us", "0.00%", "0.000us", "0.000us", str(calls))


def _ops_summary(tmp_path, text: str) -> dict:
    from playbook.analysis import profiler_ops
    return profiler_ops.summarize(read_paths([str(_write(tmp_path, "ka.txt", text))]))


def test_launches_costlier_than_the_device_time_bound_its_busy_share(tmp_path):
    """400 cuLaunchKernel calls (Triton's launcher) of 12 us cost 4.8 ms; the device ran 1.0 ms in all: one thread
    launching them keeps it at most 21% busy."""
    rows = [_launch_row("cuLaunchKernel", "4.800ms", 400),
            ("triton_poi_fused_add_0", "0.00%", "0.000us", "0.00%", "0.000us", "0.000us", "1.000ms", "100.00%",
             "1.000ms", "2.500us", "400")]
    s = _ops_summary(tmp_path, _ka_table(rows))
    f = next(f for f in s["findings"] if f["hypothesis"] == "launch_bound")
    assert f["share"] == pytest.approx(1 - 1.0 / 4.8) and f["level"] == "high"
    assert "400 kernel launches cost 12.0 µs" in f["evidence"]


@pytest.mark.parametrize(("rows", "totals"), [
    ([_launch_row("cudaLaunchKernel", "4.800ms", 400)],  # big kernels: the device ran longer than the launches took
     ("Self CPU time total: 60.000ms", "Self CUDA time total: 50.000ms")),
    ([_launch_row("cudaLaunchKernel", "4.800ms", 400)], ()),  # no total line: the device's whole time unknown
    ([_launch_row("cudaLaunchKernel", "0.400ms", 10)],  # ten launches: one-off cost
     ("Self CPU time total: 1.000ms", "Self CUDA time total: 0.010ms")),
])
def test_no_launch_bound_without_the_evidence(tmp_path, rows, totals):
    s = _ops_summary(tmp_path, _ka_table(rows, totals))
    assert "launch_bound" not in {f["hypothesis"] for f in s["findings"]}
