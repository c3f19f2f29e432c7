"""The thirty-third held-out round (tests/data/eval/heldout33/SOURCES.md): real step logs pasted in public threads by
users of tools whose own timing fields no earlier round scored (fairseq, OpenNMT-py, ESPnet2, PaddleSeg, Keras,
keithito/tacotron, hszhao's semseg logger), labelled from the threads and the tools' field meanings. Each file's verdict
(one of the accepted ids) and its reading; what the engine does not reach is a strict xfail with its reason (the fixes
are tested apart: tests/readers/test_heldout33_readers.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from heldout_rounds import verdict_tests

from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout33"

ACCEPTED = {
    "fairseq_2424_fp16_wall.log": ("healthy", "insufficient_data"),
    "opennmt_py_1362_shard_load.log": ("healthy", "data_starvation"),
    "espnet_2674_lm_train_time.log": ("healthy", "insufficient_data"),
    "paddleseg_pr792_batch_reader_cost.log": ("healthy", "insufficient_data"),
    "keras_6503_first_epoch.log": ("data_starvation", "unexplained_slowdown"),
    "sleap_2230_keras_verbose2.log": ("healthy",),
    "tacotron_248_batch_generation.log": ("data_starvation", "unexplained_slowdown"),
    "semseg_bgca_2_data_batch_remain.log": ("unexplained_slowdown",),
}
NOT_YET = {
    "keras_6503_first_epoch.log": "epoch 1 takes 3943 s, epochs 2-4 239-240 s (read right now: 1464 steps each); "
                                  "among so few rows the engine reads a lone slow first row as the warm-up it "
                                  "usually is (step_pace.no_steady_pace) and the accounting has no test for fewer "
                                  "than 5 rows, so its excess is a 79% noise floor: insufficient_data since the "
                                  "lead's review (answer._too_noisy: a floor of half the wall time cannot vouch), "
                                  "not healthy; no input-wait phase is logged to show the cold read",
    "semseg_bgca_2_data_batch_remain.log": "the logged iterations take 0.6 s (data 0.001 s) while the stamps and the "
                                           "windows' means (read right now: 2.9-3.8 s an iteration) say the steps "
                                           "between the lines are slow; the engine measures a run against its own "
                                           "pace and has no test of a meter's current value against its windows' "
                                           "mean: 4 windows are too few to tell a stall (insufficient_data)",
}


test_verdict, _not_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)
CALLED_HEALTHY: set[str] = set()  # none since answer._too_noisy (keras_6503: healthy -> insufficient_data)


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=NOT_YET[n])]
                                                if n in CALLED_HEALTHY else []) for n, ids in ACCEPTED.items()
                                  if "healthy" not in ids])
def test_no_losing_run_is_called_healthy(name):
    _not_healthy(name)


def _steps(name):
    s = read_paths([str(HERE / name)]).steps
    return s[s["phase"] == "step"].sort_values("step")


def test_keras_bar_totals_are_the_epochs_time():
    st = _steps("keras_6503_first_epoch.log")
    assert np.allclose(st["duration_s"] * 1464, [3943, 239, 240, 240])
    st = _steps("sleap_2230_keras_verbose2.log")
    assert len(st) == 10 and np.allclose(st["duration_s"], 0.071, atol=0.0015)


def test_fairseq_wall_clock_times_the_updates():
    st = _steps("fairseq_2424_fp16_wall.log")
    assert np.allclose(st["duration_s"], [0.83, 0.83, 0.84])


def test_two_handlers_copies_keep_the_stamps():
    assert _steps("semseg_bgca_2_data_batch_remain.log")["time"].notna().all()
