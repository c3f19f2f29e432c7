"""Review r7 of rounds 59/61 (unused_gpus, device use, tables of runs, NCCL transports): inputs written apart from
the rounds' fixtures, each a false alarm or a wrong claim the merged code made."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths


def _diagnose(tmp_path, text: str, name: str = "input.md"):
    p = tmp_path / name
    p.write_text(text)
    return diagnose(read_paths([str(p)]))


@pytest.mark.parametrize("text", [
    # gradient (activation) checkpointing recomputes the forward: slower by design, no checkpoint saved to disk
    "| gradient_checkpointing | step time |\n| --- | --- |\n| false | 1.02s |\n| true | 1.46s |\n",
    # generation without the KV cache: no graph recompiled
    "| use_cache | latency |\n|---|---|\n| True | 2.1 s |\n| False | 9.8 s |\n",
    # a CPU against a GPU: another device, not a slower kernel of the run
    "| Device | Inference time |\n|---|---|\n| CPU | 12.3 s |\n| GPU | 0.4 s |\n",
    # a hyperparameter table: learning-rate warmup is no compile warm-up
    "| lr | warmup | epoch time |\n|---|---|---|\n| 1e-4 | yes | 100 s |\n| 3e-4 | no | 150 s |\n",
    # torch.compile off is the slow row: compiling is the fix, not a recompilation
    "| torch.compile | step time |\n|---|---|\n| on | 0.61 s |\n| off | 0.95 s |\n",
])
def test_a_table_of_runs_names_a_cause_only_for_a_setting_whose_mechanism_it_states(tmp_path, text):
    d = _diagnose(tmp_path, text)
    assert d.verdict["id"] == "insufficient_data"


def test_an_offload_table_still_names_h2d_copy_and_its_off_side_being_slow_does_not(tmp_path):
    on = "| offload_optimizer | step time |\n|---|---|\n| none | 1.0 s |\n| cpu | 2.6 s |\n"
    assert _diagnose(tmp_path, on).verdict["id"] == "h2d_copy"
    off = "| offload_optimizer | step time |\n|---|---|\n| none | 2.6 s |\n| cpu | 1.0 s |\n"
    assert _diagnose(tmp_path, off).verdict["id"] == "insufficient_data"


JOBSTATS = """\
================================================================================
                              Slurm Job Statistics
================================================================================
         Job ID: 8812003
   User/Account: someone/physics
       Job Name: train_big
          State: {state}
          Nodes: 1
      CPU Cores: 8
     CPU Memory: 64GB (8GB per CPU-core)
           GPUs: 2
  QOS/Partition: gpu/gpu
        Cluster: della
     Start Time: Tue Mar 4, 2025 at 1:02 PM
       Run Time: {run}
     Time Limit: 1-00:00:00

                              Overall Utilization
================================================================================
  CPU utilization  [||||||||||||||||||||||||||||||||||||||||||||||95%]
  GPU utilization  [                                                0%]

                              Detailed Utilization
================================================================================
  GPU utilization per node
      della-l01g1 (GPU 0): 0% <-- GPU was not used
      della-l01g1 (GPU 1): 0% <-- GPU was not used
"""


@pytest.mark.parametrize(("state", "run", "unused"), [
    ("RUNNING", "00:02:10 (in progress)", False),  # two minutes in: loading the model, the data
    ("RUNNING", "00:40:00 (in progress)", False),  # a mean so far, under the hour of 0% a cancelling policy waits
    ("FAILED", "00:01:05", True),  # finished: however short, it held the GPUs and never used them
    ("RUNNING", "02:30:00 (in progress)", True),
    ("COMPLETED", "03:10:00", True),
])
def test_a_whole_job_at_zero_is_unused_only_past_its_start_up(tmp_path, state, run, unused):
    d = _diagnose(tmp_path, JOBSTATS.format(state=state, run=run), "jobstats.txt")
    kinds = {b["kind"] for b in d.accounting["buckets"]} if d.accounting else set()
    assert ("unused_gpus" in kinds) is unused and (d.verdict["id"] == "unused_gpus") is unused


def _l40s_snapshot(gpus: list[tuple[int, int]], procs: list[tuple[int, int, int]]) -> str:
    from tests.diagnosis.test_unused_gpus import _snapshot
    return _snapshot(gpus, procs)


@pytest.mark.parametrize(("mib", "pressure"), [
    # one process over two 46 GB GPUs (a model split by device_map="auto"): GPU 0 at 15.7 GB is a third full —
    # fuller than GPU 1, and no memory pressure: the batch can still grow
    ((15700, 8700), False),
    ((44500, 24000), True),  # the first GPU nearly full: it caps the batch of all
])
def test_a_fuller_first_gpu_is_memory_pressure_only_when_it_is_nearly_full(tmp_path, mib, pressure):
    text = _l40s_snapshot([(45, mib[0] + 300), (40, mib[1] + 300)], [(0, 4242, mib[0]), (1, 4242, mib[1])])
    d = _diagnose(tmp_path, text, "smi.txt")
    assert any(h["id"] == "memory_pressure" and h["score"] >= 0.5 for h in d.hypotheses) is pressure


def test_tasks_that_each_see_every_gpu_of_the_node_are_not_said_to_share_one(tmp_path):
    # `srun --gpus-per-node=4 nvidia-smi -L`: no per-task binding, every task sees the node's four GPUs and a DDP
    # rank picks its own by LOCAL_RANK — no task is confined to a shared GPU
    uuids = ["GPU-5f0c9a1e-8d2b-4c1a-9e3f-0a1b2c3d4e5f", "GPU-a7e3b2c4-1f6d-4e8a-b9c0-d1e2f3a4b5c6",
             "GPU-3c8d1e9f-7a2b-4d6c-8e1f-2a3b4c5d6e7f", "GPU-e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b"]
    text = "".join(f"PROCID={t}: GPU {i}: NVIDIA A100-SXM4-80GB (UUID: {u})\n" for t in range(4)
                   for i, u in enumerate(uuids))
    d = _diagnose(tmp_path, text, "tasks.log")
    assert not any("share one GPU" in w for w in d.warnings)
    one = "".join(f"PROCID={t}: GPU 0: NVIDIA A100-SXM4-80GB (UUID: {uuids[0]})\n" for t in range(4))
    assert any("4 tasks see the same GPU" in w for w in _diagnose(tmp_path, one, "one.log").warnings)


REPORTSEFF_RUNNING = """\
JobID               State       Elapsed  TimeEff   CPUEff   MemEff   GPUEff   GPUMem
51877             {state}       00:20:04   2.1%    98.2%     3.0%     0.0%     0.9%
  gpu-n04                                          98.2%     3.0%     0.0%     0.9%
    0                                                                  0%      0.9%
    1                                                                  0%      0.9%
"""


@pytest.mark.parametrize(("state", "unused"), [("RUNNING", False), ("COMPLETED", True)])
def test_a_job_table_row_still_running_is_a_figure_so_far(tmp_path, state, unused):
    # reportseff of a job twenty minutes in (its State column): a mean so far, like jobstats' "(in progress)"
    d = _diagnose(tmp_path, REPORTSEFF_RUNNING.format(state=f"{state:<9}"), "reportseff.txt")
    assert (d.verdict["id"] == "unused_gpus") is unused
