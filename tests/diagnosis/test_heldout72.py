"""The seventy-second held-out round (tests/data/eval/heldout72/SOURCES.md): real excerpts of a single workstation,
laptop or Windows machine losing GPU time — DataLoader workers on Windows typed as lists of epoch rates, TensorFlow's
devices when the wrong GPU was picked, DirectML on an APU's integrated GPU, and a laptop RTX 3070's benchmark log.
Each file's verdict (one of the accepted ids) and what it reads (the fixes are tested apart:
tests/readers/test_heldout72_readers.py)."""

from __future__ import annotations

from pathlib import Path

from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout72"

ACCEPTED = {
    "tfjl156_gtx960_before_k40c_devices.log": ("unused_gpus", "insufficient_data"),
    "deltainterp3_windows_worker_reset_epochs.txt": ("data_starvation", "between_steps", "periodic_stall"),
    "decode210_windows_workers_epoch_times.txt": ("data_starvation", "insufficient_data"),
    "tfdml367_radeon_igpu_lstm_epoch.log": ("slower_compute", "launch_bound", "insufficient_data"),
    "rasbt_3070m_vgg16_cifar10_laptop.txt": ("healthy", "insufficient_data"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def _d(name: str):
    return diagnose(read_paths([str(HERE / name)]))


def test_the_two_gpus_the_session_created_are_said():
    d = _d("tfjl156_gtx960_before_k40c_devices.log")
    said = [w for w in d.warnings if "creates devices on 2 GPUs" in w]
    assert said and "GeForce GTX 960" in said[0] and "Tesla K40c" in said[0]


def test_the_integrated_gpu_directml_computes_on_is_said():
    d = _d("tfdml367_radeon_igpu_lstm_epoch.log")
    said = [w for w in d.warnings if "integrated GPU" in w]
    assert said and "AMD Radeon(TM) Graphics" in said[0] and "no discrete GPU beside it" in said[0]


def test_the_worker_reset_is_priced_from_the_steady_epochs():
    h = _d("deltainterp3_windows_worker_reset_epochs.txt").hypotheses[0]
    assert h["id"] == "data_starvation"
    text = " ".join(h["evidence"])
    assert "Current version" in text and "Persistent worker + Pin memory" in text and "each epoch's start" in text


def test_the_verdict_says_what_it_read_of_the_devices():
    v = _d("tfjl156_gtx960_before_k40c_devices.log").verdict
    assert v["id"] == "insufficient_data" and "the devices a framework creates" in v["sentence"]
    assert "nothing usable" not in v["sentence"]
