"""Profiler summaries that state a step's time breakdown (the fixes of tests/data/eval/heldout30, tested here on
lines written for these tests): DeepSpeed / Megatron one-line timers (readers/step_log/timer_line.py) and
torch_tb_profiler's Step Time Breakdown table (readers/breakdown_table.py, analysis/profiler_ops.py)."""

from __future__ import annotations

import pytest

from playbook.analysis import profiler_ops
from playbook.diagnosis import diagnose
from playbook.readers import lines, read_paths
from playbook.readers.breakdown_table import BreakdownTable, category
from playbook.readers.step_log.timer_line import parse

MICRO = ("time (ms) | fwd_microstep: 100.00 | bwd_microstep: 300.00 | bwd_inner_microstep: 240.00 | "
         "bwd_allreduce_microstep: 60.00 | step_microstep: 50.00")
GLOBAL = "time (ms) | fwd: 100.00 | bwd: 300.00 | bwd_inner: 240.00 | bwd_allreduce: 60.00 | step: 50.00"


def _phases(path):
    st = lines.scan(path).steps
    return st[st["phase"] != "step"].groupby(["step", "phase"])["duration_s"].sum().unstack()


def test_scope_nesting_and_update_make_the_step_parts():
    """The all-reduce nested in the backward is carved out of it; `step` beside fwd/bwd is the update."""
    t = parse(MICRO.split("|", 1)[1], 1e-3)
    assert t.scoped and t.unnamed == 0
    assert t.phases == pytest.approx({"fwd": 0.1, "bwd": 0.24, "collective": 0.06, "optimizer": 0.05})
    assert parse(GLOBAL.split("|", 1)[1], 1e-3).names == t.names  # the same timers without the scope word


def test_waits_inputs_and_spanning_timers():
    t = parse("| pipe_send_output: 10 | pipe_recv_grad: 90 | batch_input: 5 | forward-backward: 500 | "
              "optimizer_allgather: 7", 1e-3)
    assert t.phases == pytest.approx({"wait": 0.1, "data": 0.005, "collective": 0.007})
    assert t.unnamed == 1  # forward-backward spans two phases: left out, counted
    assert parse("| forward-compute: 40 | backward: 60 | backward-backward: 60 | optimizer: 10",
                 1e-3).phases == pytest.approx({"fwd": 0.04, "bwd": 0.06, "optimizer": 0.01})


def test_timer_lines_alone_are_one_step_each_and_twins_add_nothing(tmp_path):
    """Before: refused (`no line understood`), every timer line dropped for want of a step line above it."""
    p = tmp_path / "ds.log"
    rows = []
    for i in range(6):
        rows += [f"[Rank 0] {MICRO.replace('100.00', f'{100 + i}.00')}", f"[Rank 0] {GLOBAL}"]
    p.write_text("\n".join(rows) + "\n")
    st = lines.scan(p).steps
    steps = st[st["phase"] == "step"]
    assert len(steps) == 6  # the global line twins its micro line: the same step
    assert steps["duration_s"].to_numpy() == pytest.approx([0.45 + i / 1000 for i in range(6)])
    assert set(st["phase"]) == {"step", "fwd", "bwd", "collective", "optimizer"}


def test_a_rank_tag_before_the_timers_and_a_step_line_after_them(tmp_path):
    """Old DeepSpeed's `rank=0 time (ms) | ...` (before: not a timer line); the step line's own time stays the
    step's, the timers its phases."""
    p = tmp_path / "old.log"
    p.write_text("".join(f"[Rank 0] rank=0 {MICRO}\niteration {i} | elapsed time per iteration (ms): 500.0\n"
                         for i in range(1, 7)))
    ph = _phases(p)
    assert ph["collective"].to_numpy() == pytest.approx([0.06] * 5)  # the first timers precede any step line
    st = lines.scan(p).steps
    assert st.loc[st["phase"] == "step", "duration_s"].to_numpy() == pytest.approx([0.5] * 6)


def test_a_window_of_transfer_timers_is_divided_by_the_print_interval(tmp_path):
    """DeepSpeed's pipeline engine sums its transfer timers over steps_per_print steps."""
    p = tmp_path / "pipe.log"
    body = []
    for step in (10, 20, 30, 40):
        body += [f"steps: {step} loss: 1.0 iter time (s): 1.000 samples/sec: 64.0",
                 "time (ms) | pipe_send_output: 100.00 | pipe_recv_grad: 2000.00"]
    p.write_text("\n".join(body) + "\n")
    ph = _phases(p)
    assert ph["wait"].to_numpy() == pytest.approx([0.21] * 4)  # 2.1 s over 10 steps of 1 s


def test_one_timed_step_shows_no_pace(tmp_path):
    """A single timer line: read, but one step cannot show what is lost (before: called healthy)."""
    p = tmp_path / "one.log"
    p.write_text("time (ms) | forward: 200.00 | backward: 3500.00 | optimizer: 38000.00\n")
    v = diagnose(read_paths([str(p)])).verdict
    assert v["id"] == "insufficient_data"


TB_MARKDOWN = """### Step Time Breakdown
| Category | Time Duration (us) | Percentage (%) |
|---|---|---|
| Average Step Time | 1,000,000 | 100 |
| Kernel | 500,000 | 50 |
| Memcpy | 10,000 | 1 |
| DataLoader | 400,000 | 40 |
| CPU Exec | 60,000 | 6 |
| Other | 30,000 | 3 |
"""
TB_ALIGNED = """Category            Time Duration (ms)    Percentage (%)
Average Step Time   200.0                 100
Kernel              90.0                  45
Runtime             30.0                  15
CPU Exec            70.0                  35
Other               10.0                  5
"""


def test_tb_profiler_table_reads_its_categories():
    table = BreakdownTable()
    assert [table.feed(line) for line in TB_MARKDOWN.splitlines()] == [False, False, True] + [True] * 6
    got = table.summary()["tables"][0]
    assert got["step_s"] == pytest.approx(1.0)
    assert got["parts"] == pytest.approx({"kernel": 0.5, "memcpy": 0.01, "dataloader": 0.4, "cpu_exec": 0.06,
                                          "other": 0.03})
    assert [category(n) for n in ("GPU Kernel", "CPU Execution", "DataLoader (Wait time)", "Memcpy (HtoD/DtoH)",
                                  "Communication / Runtime")] == ["kernel", "cpu_exec", "dataloader", "memcpy",
                                                                  "communication"]


def test_a_step_table_with_a_unit_header_is_not_a_breakdown():
    table = BreakdownTable()
    fed = [table.feed(x) for x in ("step   time (ms)   loss   util (%)", "1   500.0   2.3   90", "2   510.0   2.2   91")]
    assert fed == [False, False, False] and table.summary() is None


@pytest.mark.parametrize(("text", "cause", "share"), [(TB_MARKDOWN, "data_starvation", 0.40),
                                                      (TB_ALIGNED, "launch_bound", 0.50)])
def test_breakdown_names_the_idle_part(tmp_path, text, cause, share):
    """Before: refused. The categories after the GPU's own are idle GPU time: DataLoader the wait for input,
    CPU Exec + Runtime the host issuing work."""
    p = tmp_path / "tb.txt"
    p.write_text(text)
    bundle = read_paths([str(p)])
    found = profiler_ops.summarize(bundle)["findings"]
    assert any(f["hypothesis"] == cause and f["share"] == pytest.approx(share) for f in found)
    assert diagnose(bundle).verdict["id"] == cause


def test_a_busy_breakdown_names_nothing(tmp_path):
    p = tmp_path / "busy.txt"
    p.write_text("| Category | Time Duration (us) | Percentage (%) |\n| --- | --- | --- |\n"
                 "| **Average Step Time** | **300,000** | **100.00%** |\n| Kernel | 297,000 | 99.00% |\n"
                 "| DataLoader | 0 | 0.00% |\n| Other | 3,000 | 1.00% |\n")
    bundle = read_paths([str(p)])
    assert profiler_ops.summarize(bundle)["findings"] == []
    assert diagnose(bundle).verdict["id"] != "launch_bound"


@pytest.mark.parametrize(("line", "verdict"), [
    (MICRO, "insufficient_data"),  # one rank: the all-reduce waits for no peer, its time is its transfer
    ("time (ms) | fwd: 300.00 | bwd: 600.00 | pipe_recv_grad: 300.00", "pipeline_imbalance"),  # a wait measures it
])
def test_one_step_with_waits(tmp_path, line, verdict):
    p = tmp_path / "one.log"
    p.write_text(line + "\n")
    assert diagnose(read_paths([str(p)])).verdict["id"] == verdict
