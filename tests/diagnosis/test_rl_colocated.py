"""Healthy runs the hand-off reading (readers/step_log/handoff.py) and the stage-imbalance model
(analysis/accounting/wall_time._phase_buckets) must not call a loss, written apart from the fixtures: a supervised
run's weight update and Megatron's parameter all-gather are no hand-off between GPU roles; stages timed one after
another that add up to the step (verl's hybrid engine, NeMo-RL colocated: every GPU in every stage) are no pipeline
whose other stages idle. Stages that overlap (their sum well past the step) still are."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from playbook.analysis.accounting.wall_time import _without_enclosing
from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.step_log.handoff import stage
from playbook.readers.step_log.vocab import classify


def _diagnose(path):
    d = diagnose(read_paths([str(path)]))
    return d, {b["kind"]: b["seconds"] for b in d.accounting["buckets"]}


@pytest.mark.parametrize("name", ["weight_update_time", "param_update", "params-all-gather",
                                  "optimizer-copy-main-to-model-params", "timing_s/update_weights",
                                  "master_param_copy_time", "ema_weights_copy"])
def test_the_trainings_own_weight_update_and_parameter_traffic_are_no_hand_off(name):
    assert stage(name) is None


def test_a_supervised_runs_weight_update_timer_is_no_loss(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(
        f"step {s} | loss {3.0 - s * 0.002:.4f} | fwd_time {0.180 + 0.002 * (s % 3):.3f}s | bwd_time 0.360s | "
        f"weight_update_time 0.075s | step_time {0.620 + 0.002 * (s % 3):.3f}s\n" for s in range(1, 81)))
    d, kinds = _diagnose(log)
    assert "phase:handoff" not in kinds and d.verdict["id"] == "healthy"


def test_megatrons_parameter_all_gather_and_optimizer_copy_are_no_hand_off(tmp_path):
    lines = []
    for it in range(10, 210, 10):
        lines += [f" [2025-02-03 08:{it // 60:02d}:{it % 60:02d}] iteration {it:9d}/   20000 | consumed samples: "
                  f"{it * 256:12d} | elapsed time per iteration (ms): 2050.0 | learning rate: 1.0E-04 | "
                  "global batch size:   256 | lm loss: 5.1E+00 | loss scale: 1.0 | grad norm: 1.2 |",
                  "(min, max) time across ranks (ms):",
                  "    forward-backward ...............................: (1700.00, 1702.00)",
                  "    batch-generator ................................: (3.00, 4.00)",
                  "    all-grads-sync .................................: (120.00, 121.00)",
                  "    params-all-gather ..............................: (150.00, 151.00)",
                  "    optimizer-copy-main-to-model-params ............: (30.00, 31.00)",
                  "    optimizer ......................................: (200.00, 201.00)"]
    log = tmp_path / "megatron.log"
    log.write_text("\n".join(lines) + "\n")
    _, kinds = _diagnose(log)
    assert not any(k.startswith("phase:handoff") for k in kinds)


def test_a_colocated_verl_run_whose_stages_add_up_to_its_step_is_no_pipeline(tmp_path):
    # the hybrid engine: generation, then log-probs, then the update, on the same GPUs; the step is their sum
    log = tmp_path / "verl.log"
    log.write_text("".join(
        f"step:{s} - actor/pg_loss:0.01 - timing_s/gen:{52.0 + 0.3 * (s % 4):.2f} - timing_s/reward:0.8 - "
        f"timing_s/old_log_prob:7.4 - timing_s/ref:7.1 - timing_s/adv:0.1 - timing_s/update_actor:27.5 - "
        f"timing_s/update_weights:3.2 - timing_s/step:{98.4 + 0.3 * (s % 4):.2f}\n" for s in range(1, 41)))
    d, kinds = _diagnose(log)
    assert "stage_imbalance" not in kinds and "phase:handoff" not in kinds
    assert d.verdict["id"] == "healthy"


def test_a_colocated_nemo_rl_run_is_no_pipeline(tmp_path):
    lines = []
    for s in range(1, 25):
        gen = 40.0 + 0.4 * (s % 3)
        lines += [f"========================= Step {s}/24 =========================", "", "⏱️  Timing:",
                  f"  • Total step time: {gen + 33.0:.2f}s", f"  • generation: {gen:.2f}s",
                  "  • policy_training: 21.00s", "  • policy_and_reference_logprobs: 8.50s",
                  "  • reward_calculation: 2.10s", "  • data_processing: 1.20s", ""]
    log = tmp_path / "nemo_rl.log"
    log.write_text("\n".join(lines) + "\n")
    d, kinds = _diagnose(log)
    # (its 1.2 s of data_processing is read as the data phase, a wait, as before the stages were read)
    assert "stage_imbalance" not in kinds and d.verdict["id"] != "pipeline_imbalance"


def test_stages_that_overlap_in_a_pipeline_still_idle_at_the_slowest_ones_pace(tmp_path):
    # three stages at work at once (their sum, 76 s, is more than twice the 31 s step): the slower paces idle
    log = tmp_path / "async.log"
    log.write_text("".join(
        f"step:{s} - timing_s/gen:{30.0 + 0.1 * (s % 3):.1f} - timing_s/reward:20.0 - timing_s/update_actor:26.0 - "
        f"timing_s/step:{31.0 + 0.1 * (s % 3):.1f}\n" for s in range(1, 41)))
    d, kinds = _diagnose(log)
    assert kinds.get("stage_imbalance", 0) > 0 and d.verdict["id"] == "pipeline_imbalance"


def test_a_pipeline_parallel_ranks_send_recv_wait_is_not_called_a_hand_off_between_gpu_roles(tmp_path):
    # DeepSpeed's pipeline engine timers (pipe_send_output, pipe_recv_grad) are a wait on the neighbouring pipeline
    # stage, read as the `wait` phase since before the hand-off reading: its wording names no hand-off it cannot know
    log = tmp_path / "pipe.log"
    log.write_text("".join(
        f"rank=0 time (ms) | train_batch: {4000.0 + 5 * (i % 3):.2f} | batch_input: 20.00 | forward: 900.00 | "
        "pipe_send_output: 400.00 | pipe_recv_grad: 700.00 | backward: 1700.00 | reduce_grads: 150.00 | "
        "step: 130.00\n" for i in range(30)))
    d, _ = _diagnose(log)
    wait = [b for b in d.accounting["buckets"] if b["kind"] == "phase:wait"]
    assert wait and "hand-off" not in wait[0]["detail"]


@pytest.mark.parametrize(("key", "phase"), [("timers/comm_wait", "collective"), ("time/exposed_comm", "collective"),
                                            ("time/h2d_wait", "h2d"), ("timing_s/exposed_generation", "wait"),
                                            ("timing_s/wait_for_data", "data"), ("timers/nccl_wait", "collective")])
def test_a_timer_familys_wait_named_for_what_it_waits_on_is_that_phases(key, phase):
    assert classify(key, None)[:2] == ("phase", phase)


def test_a_supervised_runs_timed_communication_wait_is_not_a_pipeline_imbalance(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(
        f"step:{s} - loss:{2.0 - s * 0.001:.4f} - time/forward:0.21 - time/backward:0.42 - time/comm_wait:0.18 - "
        f"time/optimizer:0.05 - time/step:{0.86 + 0.002 * (s % 3):.3f}\n" for s in range(1, 61)))
    d, kinds = _diagnose(log)
    assert "phase:wait" not in kinds and d.verdict["id"] != "pipeline_imbalance"


def test_a_data_wait_outside_the_step_timer_is_no_timer_around_its_stages(tmp_path):
    # the step timer (0.5 s) holds forward and backward (0.2 + 0.3 s); the 0.5 s of loading is outside it, not a timer
    # around them: the enclosing-timer rule (wall_time._without_enclosing) must leave it, and it is the loss
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {s} | loss {2.0 - s * 0.001:.3f} | data_time 0.500 | fwd_time 0.200 | "
                           f"bwd_time 0.300 | step_time 0.500\n" for s in range(1, 81)))
    d, kinds = _diagnose(log)
    assert kinds.get("phase:data", 0) > 0 and d.verdict["id"] == "data_starvation"


def test_the_enclosing_timer_rule_keeps_pace_with_a_long_run():
    # 20,000 steps each with a wait around its other stages: a loop over the steps took 25 s here
    n = 20000
    df = pd.DataFrame({"step": np.repeat(np.arange(n), 4), "phase": np.tile(["step", "fwd", "bwd", "wait"], n),
                       "duration_s": np.tile([0.5, 0.2, 0.3, 0.5], n)})
    # this process's CPU seconds, not wall time: a loaded machine's other jobs do not count (a guard against the
    # quadratic work this replaced, far above the linear time)
    t0 = time.process_time()
    kept = _without_enclosing(df[df["phase"] != "step"], df[df["phase"] == "step"])
    assert time.process_time() - t0 < 5.0
    assert set(kept["phase"]) == {"fwd", "bwd"} and len(kept) == 2 * n
