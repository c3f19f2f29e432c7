"""The fifty-ninth held-out round (tests/data/eval/heldout59/SOURCES.md): jobs that use fewer GPUs (or less of each
GPU) than they hold, as public threads paste them — a tensor2tensor run sharded over one of its M40s, SLURM tasks
that get no GPU or all one GPU (`nvidia-smi -L` per task), a second GPU a `--query-gpu` CSV shows unused,
DataParallel's fuller first GPU (a Processes section), a Lightning run on the CPU, and a healthy 3-A100 DDP run whose
GPUs differ in power. Each file's verdict (one of the accepted ids), the GPU it names, and what must be read (the
mechanisms are tested apart: tests/readers/test_device_use_readers.py, tests/diagnosis/test_device_use.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.analysis.device_use import notes
from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout59"

ACCEPTED = {
    # unused_gpus accepted after scoring (SOURCES.md's post-scoring note): the id the labels said was missing
    "t2t17_m40_one_datashard_device.txt": ("insufficient_data", "pipeline_imbalance", "unused_gpus"),
    "deepops1102_gpus_per_task_one_task_gets_gpu.log": ("insufficient_data",),
    "deepops1102_gres_one_gpu_four_tasks.log": ("insufficient_data", "healthy"),
    "rnd15_query_gpu_second_gpu_unused.csv": ("insufficient_data", "data_starvation", "host_sync", "launch_bound"),
    "balanced_dp13_gpu0_chunk_processes.txt": ("insufficient_data", "memory_pressure", "pipeline_imbalance"),
    "chtc24_three_a100_ddp_healthy.txt": ("healthy", "insufficient_data"),
    "detoxify66_gpu_available_not_used.log": ("insufficient_data", "unused_gpus"),  # unused_gpus: after scoring
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize(("name", "names"), [
    ("t2t17_m40_one_datashard_device.txt", ["t2t17_m40_one_datashard_device:1"]),  # held, given no work
    ("deepops1102_gpus_per_task_one_task_gets_gpu.log", []),
    ("deepops1102_gres_one_gpu_four_tasks.log", []),
    ("rnd15_query_gpu_second_gpu_unused.csv", []),
    ("balanced_dp13_gpu0_chunk_processes.txt", ["balanced_dp13_gpu0_chunk_processes:0"]),  # the master GPU
    ("chtc24_three_a100_ddp_healthy.txt", []),  # 45 W apart at 100 %: no GPU to name
    ("detoxify66_gpu_available_not_used.log", []),
])
def test_the_guilty_gpu_is_named(name, names):
    assert diagnose(read_paths([str(HERE / name)])).hypotheses[0].get("names", []) == names


def test_the_tasks_without_a_gpu_and_the_shared_gpu_are_said():
    blind = notes(read_paths([str(HERE / "deepops1102_gpus_per_task_one_task_gets_gpu.log")]))
    assert [ln.split("(")[1].split(")")[0] for ln in blind] == ["PROCID=2, PROCID=3, PROCID=0",
                                                                "PROCID=2, PROCID=1, PROCID=3"]
    shared = notes(read_paths([str(HERE / "deepops1102_gres_one_gpu_four_tasks.log")]))
    assert len(shared) == 1 and shared[0].split(": ")[1].startswith("4 tasks see the same GPU (GPU-715daa1d")


def test_the_cpu_run_and_the_shard_devices_are_said():
    d = diagnose(read_paths([str(HERE / "detoxify66_gpu_available_not_used.log")]))
    assert any("available and not used" in w and "computes on the CPU" in w for w in d.warnings)
    t2t = notes(read_paths([str(HERE / "t2t17_m40_one_datashard_device.txt")]))
    assert t2t == ["t2t17_m40_one_datashard_device.txt:15: the trainer shards each batch over 1 device (gpu:0)"]


def test_the_unused_gpu_is_priced_at_half_the_file():
    top = diagnose(read_paths([str(HERE / "t2t17_m40_one_datashard_device.txt")])).hypotheses[0]
    assert top["lost_share"] == 0.5
