"""The unused_gpus cause (playbook/knowledge/causes.py): GPUs a job holds and never gives work, on inputs written
here apart from the rounds that met it (tests/data/eval/heldout58, heldout59), in the layouts the tools print —

- a job report's whole-job figure under 1% (accounting.gpu_time.job_usage_accounting): every GPU of a jobstats
  report, a Job Defense Shield cancellation, a reportseff -g job, seff's maximum; beside working GPUs they are named;
- a trainer's statement (a shard list naming fewer GPUs than are held; Lightning's `GPU available: True, used:
  False`) with the recording's other GPUs idle at every poll;
- and what is NOT an unused GPU: a job whose GPUs all worked a little (3%), GPUs taking turns over a recording (a
  pipeline: pipeline_imbalance's), a one-snapshot idle GPU with a worker process of its own (a DDP rank between
  steps: diagnosis/analyzers/unused_gpus.py's rule).
"""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.knowledge.causes import cause
from playbook.readers import read_paths

JOBSTATS_ALL_IDLE = """\
================================================================================
                              Slurm Job Statistics
================================================================================
         Job ID: 7730021
   User/Account: someone/physics
       Job Name: sweep_12
          State: CANCELLED by 0
          Nodes: 2
      CPU Cores: 8
     CPU Memory: 32GB (4GB per CPU-core)
           GPUs: 2
  QOS/Partition: gpu-short/gpu
        Cluster: tiger
     Start Time: Tue Mar 4, 2025 at 1:02 PM
       Run Time: 03:10:00
     Time Limit: 04:00:00

                              Overall Utilization
================================================================================
  CPU utilization  [||||||||||||||||||||||||||||||||||||||||||||||95%]
  CPU memory usage [|||                                             6%]
  GPU utilization  [                                                0%]
  GPU memory usage [                                                1%]

                              Detailed Utilization
================================================================================
  GPU utilization per node
      tiger-g07 (GPU 0): {u0} <-- GPU was not used
      tiger-g08 (GPU 0): {u1} <-- GPU was not used

  GPU memory usage per node - maximum used/total
      tiger-g07 (GPU 0): 402.0MB/32.0GB (1.2%)
      tiger-g08 (GPU 0): 402.0MB/32.0GB (1.2%)
"""
JDS_CANCELLED = """\
Hello Ada (alovelace),

The jobs below have been cancelled because they ran for more than 2 hours at 0% GPU
utilization:

     JobID    Cluster  Partition    State    GPUs-Allocated GPU-Util  Hours
    88120455  stellar     gpu     CANCELLED         2          0%      3.4
"""
REPORTSEFF_IDLE = """\
JobID               State       Elapsed  TimeEff   CPUEff   MemEff   GPUEff   GPUMem
40021             TIMEOUT      01:00:04  100.1%    98.2%     3.0%     0.0%     0.9%
  gpu-n12                                          98.2%     3.0%     0.0%     0.9%
    0                                                                  0%      0.9%
    1                                                                  0%      0.9%
"""
SEFF_MAX_ZERO = """\
Job ID: 3141592
Cluster: alpine
State: COMPLETED (exit code 0)
Nodes: 1
Cores per node: 8
Job Wall-clock time: 05:00:00

Number of GPUs: 1
GPU Type: a100
Max GPU Utilization: 0%
Max GPU Memory Utilized: 0.00 MiB
"""


def _diagnose(tmp_path, text: str, name: str = "input.txt"):
    p = tmp_path / name
    p.write_text(text)
    return diagnose(read_paths([str(p)]))


def _buckets(d) -> dict[str, dict]:
    return {b["kind"]: b for b in d.accounting["buckets"]}


@pytest.mark.parametrize(("text", "gpu_s"), [
    (JOBSTATS_ALL_IDLE.format(u0="0%", u1="0%"), 2 * 11400),
    (JDS_CANCELLED, 2 * 3.4 * 3600),
    (REPORTSEFF_IDLE, 2 * 3604),
    (SEFF_MAX_ZERO, 5 * 3600),
])
def test_a_whole_job_under_one_percent_is_gpus_held_and_never_used(tmp_path, text, gpu_s):
    d = _diagnose(tmp_path, text)
    assert d.verdict["id"] == "unused_gpus" and d.verdict["names"] == []  # the allocation, no GPU singled out
    b = _buckets(d)["unused_gpus"]
    assert b["cause"] == "unused_gpus" and b["share"] == pytest.approx(1.0)
    assert d.accounting["wall_s"] == pytest.approx(gpu_s, rel=0.01)
    assert "GPUs held but not used" in d.verdict["sentence"] and "nvidia-smi --query-gpu" in d.verdict["sentence"]


def test_a_job_whose_gpus_all_worked_a_little_is_idle_not_unused(tmp_path):
    d = _diagnose(tmp_path, JOBSTATS_ALL_IDLE.format(u0="3.1%", u1="2.8%").replace(" <-- GPU was not used", ""))
    assert "unused_gpus" not in _buckets(d) and d.verdict["id"] == "unexplained_slowdown"


def test_one_gpu_unused_beside_a_working_one_is_named(tmp_path):
    d = _diagnose(tmp_path, JOBSTATS_ALL_IDLE.format(u0="91.5%", u1="0%").replace("(GPU 0): 91.5% <-- GPU was not used",
                                                                                 "(GPU 0): 91.5%"))
    assert (d.verdict["id"], d.verdict["names"]) == ("unused_gpus", ["tiger-g08 GPU 0"])


def test_the_catalog_entry_says_what_to_do_and_what_to_measure():
    c = cause("unused_gpus")
    assert c.kind == "cause" and "torchrun" in c.fix and "CUDA_VISIBLE_DEVICES" in c.fix and "fewer" not in c.title
    assert "request only the GPUs" in c.fix and "utilization.gpu,memory.used" in c.next_step
    assert c.notebook == "notebooks/01_triage.ipynb"


HEAD = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
"""
ROW = """\
|   {i}  NVIDIA L40S                    On  |   00000000:{bus}:00.0 Off |                    0 |
| N/A   {t}C    P0            {w}W /  350W |   {mem}MiB /  46068MiB |     {u:>3}%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""
PROCS = """
+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
{rows}+-----------------------------------------------------------------------------------------+
"""
PROC = "|    {g}   N/A  N/A     {pid:>6}      C   python                                    {mem:>6}MiB |\n"


def _snapshot(gpus: list[tuple[int, int]], procs: list[tuple[int, int, int]]) -> str:
    table = HEAD + "".join(ROW.format(i=i, bus=f"{0x41 + i:02X}", t=35 + u // 3, w=f"{80 + 2 * u:>3}", mem=f"{m:>5}",
                                      u=u) for i, (u, m) in enumerate(gpus))
    return table + PROCS.format(rows="".join(PROC.format(g=g, pid=pid, mem=mem) for g, pid, mem in procs))


def _unused(d) -> dict | None:
    return next((h for h in d.hypotheses if h["id"] == "unused_gpus"), None)


def test_a_snapshots_idle_gpu_with_its_own_worker_is_a_rank_between_steps_not_unused(tmp_path):
    # DDP: one process per GPU; GPU 1's own rank idles at the moment shown (the false alarm heldout4's
    # pytorch_36285 raised before the rule), the ranks' small contexts on GPU 0 change nothing
    ddp = _snapshot([(99, 30000), (0, 29800)], [(0, 5101, 29500), (0, 5102, 300), (1, 5102, 29500)])
    assert _unused(_diagnose(tmp_path, ddp)) is None


def test_a_snapshots_idle_gpu_holding_another_gpus_process_memory_is_the_hedged_reading(tmp_path):
    # one process holding memory on both GPUs and computing on one (TensorFlow reserving every visible GPU)
    one = _snapshot([(99, 44000), (0, 43900)], [(0, 777, 43800), (1, 777, 43700)])
    d = _diagnose(tmp_path, one)
    h = _unused(d)
    assert d.verdict["id"] == "insufficient_data" and h is not None and h["score"] < 0.5
    assert [n.rsplit(":", 1)[1] for n in h["names"]] == ["1"] and "no process of its own" in h["evidence"][0]


def _polls(turns: bool, n: int = 180) -> str:
    rows = ["timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    for k in range(n):
        first = (k // 4) % 2 == 0 if turns else True
        for g in range(2):
            busy = first if g == 0 else (not first if turns else False)
            rows.append(f"2025/03/04 13:{k // 60:02d}:{k % 60:02d}.000, {g}, {95 if busy else 0} %, 20000 MiB, "
                        "46068 MiB")
    return "\n".join(rows) + "\n"


def test_gpus_taking_turns_over_a_recording_are_no_unused_gpu(tmp_path):
    # each GPU idle while the other works, then the reverse: stages of one pipeline (pipeline_imbalance's reading)
    d = _diagnose(tmp_path, _polls(turns=True), "turns.csv")
    assert _unused(d) is None and d.verdict["id"] == "pipeline_imbalance"


def test_a_gpu_idle_at_every_poll_beyond_the_stated_shard_is_unused(tmp_path):
    text = _polls(turns=False) .replace("timestamp,", "timestamp,", 1)
    log = ("INFO:tensorflow:Using MirroredStrategy with devices "
           "('/job:localhost/replica:0/task:0/device:GPU:0',)\n")
    (tmp_path / "train.log").write_text(log)
    (tmp_path / "gpus.csv").write_text(text)
    d = diagnose(read_paths([str(tmp_path / "gpus.csv"), str(tmp_path / "train.log")]))
    assert d.verdict["id"] == "unused_gpus" and [n.rsplit(":", 1)[1] for n in d.verdict["names"]] == ["1"]


@pytest.mark.parametrize(("line", "unused"), [
    ("GPU available: True (cuda), used: False", True),
    ("GPU available: True (mps), used: False", True),
    ("GPU available: True (cuda), used: True", False),
    ("GPU available: False, used: False", False),  # no GPU to hold
])
def test_a_trainer_saying_its_gpu_is_not_used(tmp_path, line, unused):
    text = f"{line}\nTPU available: False, using: 0 TPU cores\nHPU available: False, using: 0 HPUs\n"
    d = _diagnose(tmp_path, text, "fit.log")
    assert (d.verdict["id"] == "unused_gpus") is unused


def _grafana_long(n: int, idle_mib: int) -> str:
    # Grafana's long layout, dcgm-exporter series naming the product (no memory.total series: its size is the name's)
    rows = ['"Series","Time","Value"']
    for g, (util, mib) in enumerate(((96, 37000), (0, idle_mib))):
        labels = f'{{Hostname=""box"", gpu=""{g}"", modelName=""NVIDIA A100-SXM4-40GB""}}'
        for k in range(n):
            t = f'"2025-05-06 08:{k // 2:02d}:{30 * (k % 2):02d}"'
            rows.append(f'"DCGM_FI_DEV_GPU_UTIL{labels}",{t},{util - (k % 3) if util else 0}')
            rows.append(f'"DCGM_FI_DEV_FB_USED{labels}",{t},{mib}')
    return "\n".join(rows) + "\n"


def test_a_gpu_idle_at_every_poll_of_a_recording_holding_its_memory_is_unused(tmp_path):
    d = _diagnose(tmp_path, _grafana_long(20, 38000), "panel.csv")
    assert d.verdict["id"] == "unused_gpus" and [n.rsplit(":", 1)[1] for n in d.verdict["names"]] == ["1"]


@pytest.mark.parametrize(("n", "idle_mib"), [
    (20, 600),  # idle and holding nothing: not the job's GPU at all (another tenant's, or free)
    (6, 38000),  # six polls: too few to rule out a stage caught between its turns
])
def test_an_idle_gpu_without_its_memory_held_or_over_few_polls_is_not_called_unused(tmp_path, n, idle_mib):
    assert _unused(_diagnose(tmp_path, _grafana_long(n, idle_mib), "panel.csv")) is None


def test_nvidia_smi_polls_of_a_gpu_idle_throughout_with_the_jobs_memory_are_unused(tmp_path):
    # the query-gpu CSV with memory.total (written apart from the dashboard layout): no device print needed
    text = _polls(turns=False).replace("20000 MiB", "41000 MiB")
    d = _diagnose(tmp_path, text, "gpus.csv")
    assert d.verdict["id"] == "unused_gpus" and [n.rsplit(":", 1)[1] for n in d.verdict["names"]] == ["1"]


def test_an_idle_gpu_beside_working_gpus_at_uneven_levels_is_a_lopsided_split_not_unused(tmp_path):
    # 90 %, 30 % and 0 % (holding memory) at every poll: the work is split over all three, one shard empty —
    # rebalancing's reading (pipeline_imbalance), not a GPU the program never started on
    rows = ["timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    for k in range(30):
        for g, u in enumerate((90, 30, 0)):
            rows.append(f"2025/03/04 13:00:{k:02d}.000, {g}, {u} %, 30000 MiB, 46068 MiB")
    assert _unused(_diagnose(tmp_path, "\n".join(rows) + "\n", "gpus.csv")) is None


def test_an_idle_gpu_beside_peers_pinned_at_100_is_a_hang_not_unused(tmp_path):
    # every poll 100 % on the working GPU: NCCL's kernels spinning on a rank stuck in host code (0 %, memory held)
    text = _polls(turns=False).replace("95 %, 20000", "100 %, 41000").replace("0 %, 20000", "0 %, 41000")
    assert _unused(_diagnose(tmp_path, text, "gpus.csv")) is None
