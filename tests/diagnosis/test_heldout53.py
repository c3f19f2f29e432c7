"""The fifty-third held-out round (tests/data/eval/heldout53/SOURCES.md): real runs that are healthy but look like the
failure modes learnt in rounds 47-50 — Hugging Face Trainer saves every 500 steps at a flat 3.52 it/s, an epoch-end
checkpoint in a 7.7 min excerpt of a 1:52 h epoch, two Lightning few-workers warnings their threads call harmless,
two AMD GPUs at work (busy 99-100 % at 57-100 % of their power cap). None may be a false alarm: each verdict is
healthy or, where the file cannot tell, insufficient_data (the fixes are tested apart: tests/readers/
test_epoch_length.py, tests/diagnosis/test_epoch_work.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.model import schema
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout53"

ACCEPTED = {
    "hf15401_squad_trainer_save_every500.log": ("healthy", "insufficient_data"),
    "llama2acc48_epoch_end_save.log": ("healthy",),
    "bliss145_lightning_few_workers_warning.txt": ("insufficient_data", "healthy"),
    "lightning19223_val_dataloader_one_cpu_warning.txt": ("insufficient_data", "healthy"),
    "rocmblogs_llama2lora_mi210x2_rocm_smi.txt": ("healthy", "insufficient_data"),
    "rocmblogs_llamaqlora_mi300x_rocm_smi.txt": ("healthy", "insufficient_data"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_no_cause_is_named(name):
    assert diagnose(read_paths([str(HERE / name)])).verdict["names"] == []


def test_the_epoch_end_save_is_read_and_costed_against_its_epoch():
    path = str(HERE / "llama2acc48_epoch_end_save.log")
    bundle = read_paths([path])
    assert bundle.meta[schema.EPOCH_STEPS] == {path: 1504}
    assert set(bundle.events["kind"]) == {"checkpoint"}  # `optimizer saved`, `rank-specific saved`
    sentence = diagnose(bundle).verdict["sentence"]
    assert "once per 1504-step epoch" in sentence and "2.9% of an epoch" in sentence


@pytest.mark.parametrize("name", ["rocmblogs_llama2lora_mi210x2_rocm_smi.txt", "rocmblogs_llamaqlora_mi300x_rocm_smi.txt"])
def test_busy_amd_gpus_keep_their_busy_reading(name):
    tel = read_paths([str(HERE / name)]).telemetry
    assert (tel["util_pct"] >= 99).all() and (tel["mem_clock_mhz"] >= 1300).all()
