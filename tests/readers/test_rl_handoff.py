"""Hand-offs between GPU roles read from step logs written apart from heldout41's excerpts (other numbers, other
names of the same tools' timers): a timer family's whole-step key is no counter; a timing block without a step banner;
stage names read by meaning (a wait, a hand-off: readers/step_log/handoff.py); a markdown table of stage times with a
sum row and a timer around others; a batch held by its slowest sample and a line the paste wrapped
(readers/step_log/sample_tail.py)."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.step_log.handoff import stage


def _phases(path) -> dict[str, float]:
    steps = read_paths([str(path)]).steps
    return {str(p): float(d) for p, d in zip(steps["phase"], steps["duration_s"], strict=True)}


@pytest.mark.parametrize(("name", "want"), [
    ("exposed_generation", "wait"), ("perf/train_wait_time", "wait"), ("rollout_idle", "wait"),
    ("weight_sync", "handoff"), ("sync_rollout_weights", "handoff"), ("broadcast_weights", "handoff"),
    ("perf/sleep_time", "handoff"), ("wake_up", "handoff"), ("offload_optimizer", "handoff"), ("refit", "handoff"),
    ("prepare_for_generation/transfer_and_update_weights", "handoff"),
    ("gen", None), ("update_actor", None), ("policy_training", None), ("old_log_prob", None), ("data", None),
])
def test_a_stage_is_a_wait_or_a_hand_off_by_its_words(name, want):
    assert stage(name) == want


def test_a_timer_familys_step_key_is_the_whole_step_not_a_counter(tmp_path):
    # verl's console line with its `step:N` head: the counter is 7, `timing_s/step:52.0` is the step's time
    log = tmp_path / "verl.log"
    log.write_text("step:7 - timing_s/gen:30.5 - timing_s/update_actor:20.0 - timing_s/step:52.0\n")
    steps = read_paths([str(log)]).steps
    assert set(steps["step"]) == {7}
    assert float(steps.loc[steps["phase"] == "step", "duration_s"].iloc[0]) == pytest.approx(52.0)


def test_a_block_of_timer_lines_without_a_step_is_one_step(tmp_path):
    # the `key: value` form a user pastes out of a metrics dump: the whole step first, then its stages
    log = tmp_path / "timing.txt"
    log.write_text("timing_s/step:     120.50\ntiming_s/gen:       90.25   (75%)\ntiming_s/update_actor:  25.0\n")
    ph = _phases(log)
    assert ph["step"] == pytest.approx(120.5) and ph["gen"] == pytest.approx(90.25)
    assert ph["update_actor"] == pytest.approx(25.0)


def test_a_timing_block_without_its_step_banner_reads_its_stages_by_meaning(tmp_path):
    # NeMo-RL's async GRPO block (grpo.py's print statements), cut from a paste without `===== Step N/M =====`
    log = tmp_path / "grpo.log"
    log.write_text("⏱️  Timing:\n"
                   "  • Total step time: 100.00s\n"
                   "  • exposed_generation: 40.00s (40.0%)\n"
                   "  • policy_training: 45.00s (45.0%)\n"
                   "  • refit: 5.00s (5.0%)\n"
                   "  • data_processing: 1.00s (1.0%)\n")
    ph = _phases(log)
    assert ph["step"] == pytest.approx(100.0)
    assert ph["wait"] == pytest.approx(40.0) and ph["handoff"] == pytest.approx(5.0)
    assert ph["policy_training"] == pytest.approx(45.0)
    d = diagnose(read_paths([str(log)]))
    assert d.verdict["id"] == "pipeline_imbalance"
    kinds = {b["kind"]: b["seconds"] for b in d.accounting["buckets"]}
    # the trainer's measured wait and the hand-off are the loss; no pipeline model is added on top of them
    assert kinds["phase:wait"] == pytest.approx(40.0) and kinds["phase:handoff"] == pytest.approx(5.0)
    assert "stage_imbalance" not in kinds


def test_a_markdown_table_of_stage_times_with_a_sum_row_and_an_enclosing_wait(tmp_path):
    # a colocated trainer and engine, timed as a thread tabulates them: the trainer's wait holds the offload and the
    # onload; the `offload + onload` row is their sum, no stage
    log = tmp_path / "table.txt"
    log.write_text("| stage | median | share |\n|---|---|---|\n"
                   "| `perf/step_time` | 30.0 s | 100% |\n"
                   "| `perf/rollout_wait_time` | 26.0 s | 86.7% |\n"
                   "| `perf/train_time` | 3.5 s | 11.7% |\n"
                   "| **`perf/offload_time`** | **12.0 s** | **40.0%** |\n"
                   "| **`perf/onload_time`** | **8.0 s** | **26.7%** |\n"
                   "| **offload + onload** | **20.0 s** | **66.7%** |\n")
    ph = _phases(log)
    assert ph["handoff"] == pytest.approx(20.0) and ph["wait"] == pytest.approx(26.0)
    d = diagnose(read_paths([str(log)]))
    assert d.verdict["id"] == "pipeline_imbalance"
    kinds = {b["kind"]: b["seconds"] for b in d.accounting["buckets"]}
    # 20 + 26 + 3.5 > 30 s: the wait is a timer around the hand-off, left out; the hand-off is the loss
    assert kinds["phase:handoff"] == pytest.approx(20.0) and "phase:wait" not in kinds
    assert d.accounting["lost_share"] == pytest.approx(20.0 / 30.0, abs=0.01)


def test_a_batch_held_by_its_slowest_sample_is_a_tail_carved_from_its_stage(tmp_path):
    log = tmp_path / "agent.log"
    log.write_text("step:3 - timing_s/agent_loop/generate_sequences/min:10.0 - "
                   "timing_s/agent_loop/generate_sequences/max:200.0 - timing_s/agent_loop/generate_sequences/mean:80.0"
                   " - timing_s/agent_loop/slowest/response_length:4096 - timing_s/gen:202.0 - "
                   "timing_s/update_actor:100.0 - timing_s/step:310.0\n")
    ph = _phases(log)
    assert ph["tail"] == pytest.approx(120.0) and ph["gen"] == pytest.approx(82.0)
    assert "max" not in ph and "mean" not in ph and "response_length" not in ph
    d = diagnose(read_paths([str(log)]))
    assert d.verdict["id"] == "padding_imbalance"


def test_no_tail_when_no_stage_lasts_as_long_as_the_slowest_sample(tmp_path):
    # the samples' maximum (60 s) is no stage's time: the stage did not wait for it (another engine, another batch)
    log = tmp_path / "agent.log"
    log.write_text("step:3 - timing_s/agent_loop/generate_sequences/max:60.0 - "
                   "timing_s/agent_loop/generate_sequences/mean:30.0 - timing_s/gen:202.0 - timing_s/step:310.0\n")
    assert "tail" not in _phases(log)


def test_a_metrics_line_the_paste_wrapped_inside_a_number_is_read_whole(tmp_path):
    log = tmp_path / "wrapped.log"
    log.write_text("timing_s/gen:41.25 - timing_s/reward:0.5 - timing_s/ref:3.1 - timing_s/adv:0.0123\n"
                   "45 - timing_s/update_actor:20.0 - timing_s/step:65.0 - perf/throughput:1000\n")
    ph = _phases(log)
    assert ph["gen"] == pytest.approx(41.25) and ph["update_actor"] == pytest.approx(20.0)
    assert ph["step"] == pytest.approx(65.0)


def test_a_spread_of_other_per_sample_work_carves_no_tail_from_a_stage_of_its_size(tmp_path):
    # the agent loop's tool calls (max 12 s, mean 3 s) beside a 12.3 s reward stage: the reward stage runs after the
    # rollout, not its samples; only the rollout stage (gen) is held by its slowest sample, and gen (150 s) is more
    # than 5% past the generation's maximum (140 s) here: no tail at all
    log = tmp_path / "agent.log"
    log.write_text("step:4 - timing_s/agent_loop/generate_sequences/max:140.0 - "
                   "timing_s/agent_loop/generate_sequences/mean:100.0 - timing_s/agent_loop/tool_calls/max:12.0 - "
                   "timing_s/agent_loop/tool_calls/mean:3.0 - timing_s/gen:150.0 - timing_s/reward:12.3 - "
                   "timing_s/update_actor:60.0 - timing_s/step:223.0\n")
    ph = _phases(log)
    assert "tail" not in ph and ph["reward"] == pytest.approx(12.3)


def test_a_running_total_under_a_steps_time_is_no_stage_of_it(tmp_path):
    # `wall_time` / `runtime` after a step's own time count since the start (41 s by step 80 of 0.52 s steps): they
    # are no stage of the step, as `perf/train_time` under `perf/step_time` is
    log = tmp_path / "run.log"
    lines, wall = [], 0.0
    for s in range(1, 41):
        wall += 0.52
        lines += ["Timing:", "  Total step time: 0.520s", "  forward_backward: 0.470s", f"  runtime: {wall:.1f}s",
                  f"step time: 0.520s  loss: {2.3 - s * 0.001:.3f}", f"  wall_time: {wall + 0.2:.1f}s"]
        if s % 10 == 0:
            lines += [f"step time: 0.520s  loss: {2.3 - s * 0.001:.3f}", "  epoch_time: 10.4s"]  # an epoch's span
    log.write_text("\n".join(lines) + "\n")
    assert not {"runtime", "wall", "wall_time", "epoch"} & set(_phases(log))


def test_a_timing_lines_wait_named_for_what_it_waits_on_is_that_phases(tmp_path):
    # under a step's own time: `wait_for_data` is the loader's wait, `barrier_wait` the ranks', `rollout_wait` the
    # other side's
    log = tmp_path / "block.log"
    log.write_text("⏱️  Timing:\n  • Total step time: 10.00s\n  • wait_for_data: 1.50s\n  • barrier_wait: 0.50s\n"
                   "  • rollout_wait: 2.00s\n  • policy_training: 6.00s\n")
    ph = _phases(log)
    assert ph["data"] == pytest.approx(1.5) and ph["barrier"] == pytest.approx(0.5) and ph["wait"] == pytest.approx(2.0)
