"""The sixty-sixth held-out round (tests/data/eval/heldout66/SOURCES.md): real excerpts from the long tail of small
research repositories — Open-AnimateAnyone's `load_data_time` / `train_step_time` lines with one 19.6 s wait,
neural-enhance's `Epoch #N at Ts` clock since the start, gnnlab's DGL Sample / Extract / Train breakdown, an ELF
MiniRTS tqdm bar, one TF step line of PoseEstimationForMobile. Each file's verdict (one of the accepted ids) and what it
reads (the fixes are tested apart: tests/readers/test_heldout66_readers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout66"

ACCEPTED = {
    "animateanyone101_load_data_spike.log": ("data_starvation", "periodic_stall"),
    "neural_enhance23_epoch_clock.log": ("healthy", "insufficient_data"),
    "gnnlab20_dgl_sampling_breakdown.txt": ("data_starvation",),
    "elf94_minirts_trainer_progress.log": ("insufficient_data", "data_starvation"),
    "posemobile90_tf_step_line.log": ("insufficient_data", "between_steps"),
}
NOT_YET: dict[str, str] = {}  # gnnlab's Sample / Extract / Train breakdown: read since round 70
# (readers/stage_breakdown_text.py, analysis/stage_breakdown.py: the input side 82% of the records' time)

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def test_the_wait_beside_the_model_timer_is_the_steps_loss():
    d = diagnose(read_paths([str(HERE / "animateanyone101_load_data_spike.log")]))
    assert d.verdict["id"] == "data_starvation" and d.hypotheses[0]["names"] == []
    acc = d.accounting
    assert acc["lost_s"] / acc["wall_s"] == pytest.approx(0.834, abs=0.02)  # 19.6 s of 23.6 s


def test_the_epoch_clock_is_read_as_time_since_the_start():
    steps = read_paths([str(HERE / "neural_enhance23_epoch_clock.log")]).steps
    assert steps["step"].tolist() == [2, 3]
    assert steps["duration_s"].tolist() == pytest.approx([81.5, 81.5])
