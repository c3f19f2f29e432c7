"""torch.profiler op tables in a log (analysis/profiler_ops.py and accounting.profile_accounting): the GPU's idle share
of the profiled steps is lost GPU time beyond a fed loop's 5%, and the table's own sync / loader shares say why.
LABELED SYNTHETIC tables in torch/autograd/profiler_util.py's layout; the host-sync one carries the figures of
pytorch/torchtune#522 (a per-step loss.item(): 40-50 ms in cudaStreamSynchronize per step)."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_file

HEADER = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self CUDA", "Self CUDA %",
          "CUDA total", "CUDA time avg", "# of Calls")


def _table(path, ops, steps_ms, cuda_ms):
    """ops: (name, self CPU ms, CPU total ms, self CUDA ms, calls); a ProfilerStep* row of `steps_ms` over 5 steps."""
    widths = [55] + [12] * 10
    rule = "  ".join("-" * w for w in widths)
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))  # noqa: E731
    rows = [("ProfilerStep*", 1.0, steps_ms, 0.0, 5)] + list(ops)
    body = [line((n, "1.00%", f"{s:.3f}ms", "1.00%", f"{t:.3f}ms", f"{t / c:.3f}ms", f"{g:.3f}ms", "1.00%",
                  f"{g:.3f}ms", f"{g / c:.3f}ms", str(c))) for n, s, t, g, c in rows]
    path.write_text("\n".join([rule, line(HEADER), rule, *body, rule, f"Self CPU time total: {steps_ms:.3f}ms",
                               f"Self CUDA time total: {cuda_ms:.3f}ms"]) + "\n")
    return read_file(path)


def test_syncs_on_every_step_with_the_gpu_idle_7_percent_are_host_sync(tmp_path):
    b = _table(tmp_path / "prof.txt", [("cudaStreamSynchronize", 225.0, 225.0, 0.0, 5),
                                       ("aten::item", 0.1, 225.7, 0.0, 5), ("aten::mm", 210.0, 905.0, 2450.0, 9600)],
               steps_ms=2637.0, cuda_ms=2450.0)
    d = diagnose(b)
    acc = d.accounting
    assert acc["basis"] == "gpu" and acc["lost_share"] == pytest.approx(1 - 2450 / 2637, rel=1e-3)
    assert acc["buckets"][0]["kind"] == "profile_idle" and acc["buckets"][0]["cause"] == "host_sync"
    assert d.verdict["id"] == "host_sync"
    assert any("cuda*Synchronize for 9%" in e for e in d.hypotheses[0]["evidence"])


def test_a_fed_loop_idle_3_percent_without_syncs_is_healthy(tmp_path):
    b = _table(tmp_path / "prof.txt", [("aten::mm", 210.0, 905.0, 2560.0, 9600)], steps_ms=2637.0, cuda_ms=2560.0)
    d = diagnose(b)
    assert d.accounting["lost_share"] < 0.05 and d.verdict["id"] == "healthy"


def test_a_loader_holding_a_quarter_of_the_steps_is_data_starvation(tmp_path):
    b = _table(tmp_path / "prof.txt", [("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 650.0,
                                        660.0, 0.0, 5), ("aten::mm", 210.0, 905.0, 1900.0, 9600)],
               steps_ms=2637.0, cuda_ms=1900.0)
    d = diagnose(b)
    assert d.verdict["id"] == "data_starvation" and d.accounting["buckets"][0]["cause"] == "data_starvation"
