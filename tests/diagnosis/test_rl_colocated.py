"""Healthy runs the hand-off reading (readers/step_log/handoff.py) and the stage-imbalance model
(analysis/accounting/wall_time._phase_buckets) must not call a loss, written apart from the fixtures: a supervised
run's weight update and Megatron's parameter all-gather are no hand-off between GPU roles; stages timed one after
another that add up to the step (verl's hybrid engine, NeMo-RL colocated: every GPU in every stage) are no pipeline
whose other stages idle. Stages that overlap (their sum well past the step) still are."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.step_log.handoff import stage


def _diagnose(path):
    d = diagnose(read_paths([str(path)]))
    return d, {b["kind"]: b["seconds"] for b in d.accounting["buckets"]}


@pytest.mark.parametrize("name", ["weight_update_time", "param_update", "params-all-gather",
                                  "optimizer-copy-main-to-model-params", "timing_s/update_weights"])
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
