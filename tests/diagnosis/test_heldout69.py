"""The sixty-ninth held-out round (tests/data/eval/heldout69/SOURCES.md): real step logs of speech and sequence
toolkits — wav2letter++'s `bch(ms)` / `smp(ms)` epoch reports (a wav2vec-feature run waiting on its data, a large
conv GLU model busy on T4s), fairseq's 2018 JSON epoch lines of the Scaling-NMT reference run, icefall's single-node
baseline, ESPnet2's first SubReporter window line, a Tacotron-2 feeder's batch-generation time. Each file's verdict
(one of the accepted ids) and what it reads (the fixes are tested apart: tests/readers/test_heldout69_readers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout69"

ACCEPTED = {
    "wav2letter516_wav2vec_smp.log": ("data_starvation",),
    "wav2letter835_conv_glu_t4_asg.log": ("healthy", "slower_compute", "insufficient_data"),
    "fairseq233_wmt14_enfr_json_epochs.log": ("healthy", "insufficient_data"),
    "icefall63_single_node_baseline.log": ("healthy", "insufficient_data"),
    "espnet1748_subreporter_window.log": ("healthy", "insufficient_data"),
    "tacotron2_236_batch_generation.log": ("data_starvation", "insufficient_data"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def _phase(steps, phase):
    return steps[steps["phase"] == phase].sort_values("step")["duration_s"].tolist()


def test_the_wav2vec_run_waits_on_its_samples():
    bundle = read_paths([str(HERE / "wav2letter516_wav2vec_smp.log")])
    assert _phase(bundle.steps, "step") == pytest.approx([0.55778, 0.52089])
    assert _phase(bundle.steps, "data") == pytest.approx([0.53841, 0.50188])
    d = diagnose(bundle)
    assert d.verdict["id"] == "data_starvation" and d.hypotheses[0]["names"] == []


def test_the_t4_run_is_its_models_work():
    steps = read_paths([str(HERE / "wav2letter835_conv_glu_t4_asg.log")]).steps
    assert _phase(steps, "step") == pytest.approx([3.11973])
    assert _phase(steps, "bwd") == pytest.approx([2.27663]) and _phase(steps, "data") == pytest.approx([0.00056])


def test_the_espnet_window_is_timed_by_train_time():
    steps = read_paths([str(HERE / "espnet1748_subreporter_window.log")]).steps
    assert _phase(steps, "step") == pytest.approx([0.471])  # not iter_time's 0.007


def test_the_feeder_time_is_a_data_load():
    events = read_paths([str(HERE / "tacotron2_236_batch_generation.log")]).events
    assert events["kind"].tolist() == ["data_load"]
    assert events["duration_s"].tolist() == pytest.approx([249.438])
