"""The fifty-second held-out round (tests/data/eval/heldout52/SOURCES.md): GPU time lost to sharing a GPU as public
threads paste it — a crashed run's and an interrupted run's leftovers holding memory on an idle GPU, zombies in a
Processes section alone, another user's idle GPU beside a job's six busy ones (gpustat recast as a Markdown table),
an A100 cut into MIG slices, V100s busy in exclusive mode with no process of the job. Each file's verdict (one of the
accepted ids), the GPU it names, and what must be read (the mechanisms are tested apart:
tests/readers/test_gpu_sharing_readers.py, tests/diagnosis/test_gpu_sharing.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.analysis.gpu_sharing import notes
from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout52"

ACCEPTED = {
    "pytorch910_crashed_run_holds_gpu0.txt": ("memory_pressure", "insufficient_data"),
    "pytorch4031_interrupted_run_holds_memory.txt": ("memory_pressure", "insufficient_data"),
    "mxnet4242_zombie_processes_section.txt": ("insufficient_data", "memory_pressure"),
    "lightning4828_gpustat_other_user_on_gpu6.txt": ("healthy", "insufficient_data"),
    "nvitop8_a100_mig_slices.txt": ("insufficient_data", "healthy"),
    "jade73_v100_busy_no_own_process.txt": ("insufficient_data", "healthy"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize(("name", "names"), [
    ("pytorch910_crashed_run_holds_gpu0.txt", []),  # insufficient_data first: see the test below
    ("pytorch4031_interrupted_run_holds_memory.txt", []),
    ("mxnet4242_zombie_processes_section.txt", ["mxnet4242_zombie_processes_section:0",
                                                "mxnet4242_zombie_processes_section:1"]),
    ("lightning4828_gpustat_other_user_on_gpu6.txt", []),  # GPU 6 is another user's: not this job's idle GPU
    ("nvitop8_a100_mig_slices.txt", []),
    ("jade73_v100_busy_no_own_process.txt", []),
])
def test_the_guilty_gpu_is_named(name, names):
    assert diagnose(read_paths([str(HERE / name)])).hypotheses[0].get("names", []) == names


def test_the_zombies_are_named_by_pid():
    lines = notes(read_paths([str(HERE / "mxnet4242_zombie_processes_section.txt")]))
    assert [ln.split("process ")[1].split(" ")[0] for ln in lines if "'Unknown Error'" in ln] == ["31794", "27707"]


def test_another_users_gpu_is_left_out_and_said_so():
    d = diagnose(read_paths([str(HERE / "lightning4828_gpustat_other_user_on_gpu6.txt")]))
    assert len(d.gpus) == 6 and any("aaa 10661 MiB" in w and "another owner's GPU" in w for w in d.warnings)


def test_the_mig_slices_and_the_exclusive_mode_are_read():
    mig = notes(read_paths([str(HERE / "nvitop8_a100_mig_slices.txt")]))
    assert any("cut into 3 MIG slices" in ln and "GI 6 13/19968 MiB" in ln for ln in mig)
    jade = notes(read_paths([str(HERE / "jade73_v100_busy_no_own_process.txt")]))
    assert any("exclusive compute mode (E. Process)" in ln for ln in jade)


@pytest.mark.parametrize("name", ["pytorch910_crashed_run_holds_gpu0.txt", "pytorch4031_interrupted_run_holds_memory.txt"])
def test_the_held_gpu_is_named_by_the_memory_hypothesis(name):
    # one poll of an idle GPU holding most of its memory: a leftover, or a starved or hung job (heldout5, 9, 38, 47)
    held = [h for h in diagnose(read_paths([str(HERE / name)])).hypotheses if h["id"] == "memory_pressure"]
    assert held and held[0]["names"] == [name.split(".")[0] + ":0"]
