"""trtexec's output read by what its figures mean (readers/trtexec_summary.py, detected by readers/trtexec.py) and priced (analysis/inference_bench.py,
analysis/accounting/bench_time.py), on inputs written apart from the round's files (tests/data/eval/heldout68): the
layouts follow the tool's own print statements (NVIDIA/TensorRT samples/common/sampleReporting.cpp, printEpilog /
printTiming: the 8.x summary with its End-to-End line, the H2D-bound warning, TensorRT 8's trace line without `end to
end`, TensorRT 7's with it), with other figures, prefixes and line breaks. LABELED SYNTHETIC inputs."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.trtexec import sniff
from playbook.readers.trtexec_summary import BenchLines

P = "[03/01/2023-09:00:00] [I] "


def _summary(qps, lat, enq, h2d, comp, d2h, wall_s, comp_s, warn=(), prefix=P, e2e=None):
    def stats(m):
        return (f"min = {m * 0.9:.5g} ms, max = {m * 1.2:.5g} ms, mean = {m:.5g} ms, median = {m:.5g} ms, "
                f"percentile(99%) = {m * 1.1:.5g} ms")
    lines = ["=== Performance summary ===", f"Throughput: {qps} qps", f"Latency: {stats(lat)}"]
    if e2e is not None:
        lines.append(f"End-to-End Host Latency: {stats(e2e)}")
    lines += [f"Enqueue Time: {stats(enq)}", f"H2D Latency: {stats(h2d)}", f"GPU Compute Time: {stats(comp)}",
              f"D2H Latency: {stats(d2h)}", f"Total Host Walltime: {wall_s} s", f"Total GPU Compute Time: {comp_s} s"]
    lines += list(warn)
    return "\n".join(prefix + ln for ln in lines) + "\n"


H2D_WARN = ("[W] * Throughput may be bound by host-to-device transfers for the inputs rather than GPU Compute and the "
            "GPU may be under-utilized.", "[W]   Add --noDataTransfers flag to disable data transfers.")
ENQ_WARN = ("[W] * Throughput may be bound by Enqueue Time rather than GPU Compute and the GPU may be under-utilized.",
            "[W]   If not already in use, --useCudaGraph (utilize CUDA graphs where possible) may increase the "
            "throughput.")


def _diag(tmp_path, text, name="bench.log"):
    p = tmp_path / name
    p.write_text(text)
    return diagnose(read_paths([str(p)]))


def test_the_summary_figures_are_read_with_their_units():
    b = BenchLines()
    for line in _summary(250.0, 4.0, 0.2, 1.0, 2.0, 1.0, 10.0, 5.0, e2e=7.5).splitlines():
        assert b.feed(line)
    (run,) = b.summary()
    assert run["qps"] == 250.0 and run["walltime_ms"] == 10_000.0 and run["compute_total_ms"] == 5_000.0
    assert run["compute"]["mean"] == pytest.approx(2.0) and run["e2e"]["median"] == pytest.approx(7.5)
    assert run["h2d"]["mean"] == pytest.approx(1.0) and run["latency"]["mean"] == pytest.approx(4.0)


def test_a_paste_that_lost_its_line_breaks_keeps_every_figure():
    text = ("GPU Compute Time: min = 2 ms, max 3 ms, mean 2.5 ms, median = 2.4 ms D2H Latency: min = 0.5 ms, mean = "
            "0.6 ms Total Host Walltime: 4 s Total GPU Compute Time: 2000 ms")
    b = BenchLines()
    assert b.feed(text)
    (run,) = b.summary()
    assert run["compute"]["mean"] == 2.5 and run["d2h"]["mean"] == 0.6
    assert run["walltime_ms"] == 4000.0 and run["compute_total_ms"] == 2000.0


def test_trace_lines_of_both_versions_are_read():
    b = BenchLines()
    assert b.feed("Average on 10 runs - GPU latency: 2.0 ms - Host latency: 2.5 ms (end to end 4.1 ms, enqueue 0.3 ms)")
    assert b.feed(f"{P}Average on 10 runs - GPU latency: 2.2 ms - Host latency: 2.7 ms (enqueue 0.5 ms)")
    (run,) = b.summary()
    t = run["trace"]
    assert t["groups"] == 2 and t["gpu_ms"] == pytest.approx(2.1) and t["e2e_ms"] == pytest.approx(4.1)


@pytest.mark.parametrize("line", [
    "epoch 3 Throughput: 120.5 samples/s",  # a trainer's throughput: no qps
    "Latency: 5 ms",  # a latency with no statistics
    "step 10 | time 0.25 s | loss 1.2",
])
def test_other_tools_lines_are_not_taken(line):
    assert not BenchLines().feed(line)


def test_two_summaries_are_two_runs():
    b = BenchLines()
    for line in (_summary(100.0, 5, 0.1, 0.5, 4, 0.5, 3.0, 1.2) + _summary(200.0, 5, 0.1, 0.5, 4, 0.5, 3.0, 2.4)
                 ).splitlines():
        b.feed(line)
    assert [r["qps"] for r in b.summary()] == [100.0, 200.0]


def test_sniff_knows_the_summary_and_not_a_training_log():
    assert sniff(_summary(100.0, 5, 0.1, 0.5, 4, 0.5, 3.0, 1.2))
    assert sniff("x\nAverage on 10 runs - GPU latency: 2.0 ms - Host latency: 2.5 ms (enqueue 0.3 ms)\n")
    assert not sniff("epoch 1 loss 0.3 Throughput: 120 samples/s\nLatency: 5 ms\n")


def test_copies_the_tool_warns_of_are_h2d_copy_with_the_loss_priced(tmp_path):
    # a large input per query: H2D 6 ms beside 4 ms of compute, queries in series; the GPU computes 4 of 11 ms
    d = _diag(tmp_path, _summary(90.9, 11.0, 0.3, 6.0, 4.0, 1.0, 11.0, 4.0, warn=H2D_WARN))
    assert d.verdict["id"] == "h2d_copy"
    assert d.accounting["lost_share"] == pytest.approx(1 - 4 / 11, abs=0.002)


def test_a_host_slower_to_enqueue_than_the_gpu_computes_is_launch_bound(tmp_path):
    # enqueue 3 ms per query, compute 2 ms, no copies (--noDataTransfers): the GPU waits a third of the time
    d = _diag(tmp_path, _summary(333.0, 2.0, 3.0, 0.0, 2.0, 0.0, 3.0, 2.0, warn=ENQ_WARN))
    assert d.verdict["id"] == "launch_bound"
    assert d.accounting["lost_share"] == pytest.approx(1 / 3, abs=0.002)


def test_the_enqueue_rule_without_its_warning_is_read_off_the_figures(tmp_path):
    d = _diag(tmp_path, _summary(333.0, 2.0, 3.0, 0.0, 2.0, 0.0, 3.0, 2.0))
    assert d.verdict["id"] == "launch_bound"


def test_a_gpu_computing_its_walltime_is_healthy_whatever_the_end_to_end_latency(tmp_path):
    # end-to-end twice the compute (queries queued back to back), an instability warning: the GPU computed 99.6%
    text = _summary(500.0, 2.2, 0.4, 0.1, 2.0, 0.1, 5.0, 4.98, e2e=4.1,
                    warn=("[W] * GPU compute time is unstable, with coefficient of variance = 3.2%.",))
    d = _diag(tmp_path, text)
    assert d.verdict["id"] == "healthy"


def test_throughput_and_mean_compute_price_the_loss_without_the_totals(tmp_path):
    # 100 queries/s of 6 ms each: the GPU busy 60% of every second (the tool's "reciprocal of GPU Compute Time")
    text = "\n".join(P + ln for ln in (
        "Throughput: 100 qps",
        "H2D Latency: min = 3 ms, max = 3.2 ms, mean = 3.1 ms, median = 3.1 ms",
        "GPU Compute Time: min = 5.8 ms, max = 6.3 ms, mean = 6 ms, median = 6 ms",
        "D2H Latency: min = 0.8 ms, max = 1 ms, mean = 0.9 ms, median = 0.9 ms")) + "\n"
    d = _diag(tmp_path, text)
    assert d.accounting["lost_share"] == pytest.approx(0.4, abs=0.002)
    assert d.verdict["id"] == "h2d_copy"  # 4 ms of copies fill the 4 ms per query the GPU does not compute


def test_trace_lines_alone_price_nothing(tmp_path):
    text = "".join(f"{P}Average on 10 runs - GPU latency: 2.0{i} ms - Host latency: 2.6 ms (end to end 4.0{i} ms, "
                   f"enqueue 0.4 ms)\n" for i in range(4))
    d = _diag(tmp_path, text)
    assert d.verdict["id"] == "insufficient_data"
    assert "queued back to back" in d.verdict["sentence"]


def test_long_blank_runs_inside_a_figure_are_read_in_linear_time():
    # `Latency: min` then 60 kB of blanks: `\s*=?\s*` before the number split the run every way (quadratic, minutes
    # a line); `(?:=\s*)?` leaves one way
    import time
    start = time.process_time()  # CPU seconds of this process: other jobs on the machine do not count
    b = BenchLines()
    for line in ("Latency: min" + " " * 60_000 + "x", "GPU Compute Time: min =" + " " * 60_000 + "x",
                 "Enqueue Time: min = 1 ms," + " " * 60_000 + "x") * 5:
        b.feed(line)
    assert time.process_time() - start < 5
    assert [r["enqueue"]["min"] for r in b.summary()] == [1.0]
