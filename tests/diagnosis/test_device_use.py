"""GPUs a job holds and does not use (analysis/device_use.py, diagnosis/analyzers/unused_gpus.py), on inputs written
apart from tests/data/eval/heldout59: other GPU counts, other shard statements (MirroredStrategy), a 535-driver
Processes section, DistributedDataParallel's empty contexts that must not read as DataParallel's master GPU."""

from __future__ import annotations

from playbook.analysis.device_use import notes
from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HEAD = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
"""
ROW = """\
|   {i}  NVIDIA RTX A6000    Off  | 00000000:{bus}:00.0 Off |                  Off |
| 30%   {t}C    P2   {w}W / 300W |  {mem}MiB / 48685MiB |    {u:>3}%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
"""
MIRRORED_2 = ("INFO:tensorflow:Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/device:GPU:0', "
              "'/job:localhost/replica:0/task:0/device:GPU:1')\n")


def _table(gpus: list[tuple[int, int]]) -> str:
    """One nvidia-smi snapshot: (utilization %, memory MiB) per GPU."""
    return HEAD + "".join(ROW.format(i=i, bus=f"{0x1a + i:02X}", t=40 + u // 4, w=90 + 2 * u, mem=m, u=u)
                          for i, (u, m) in enumerate(gpus))


def _diagnose(tmp_path, text: str):
    p = tmp_path / "run.txt"
    p.write_text(text)
    return diagnose(read_paths([str(p)]))


def _named(h: dict) -> list[str]:
    return [n.rsplit(":", 1)[1] for n in h.get("names", [])]


def test_gpus_beyond_the_stated_shards_idle_with_memory_are_named(tmp_path):
    d = _diagnose(tmp_path, _table([(98, 40000), (97, 40100), (0, 39000), (0, 38800)]) + MIRRORED_2)
    top = d.hypotheses[0]
    assert top["id"] == "unused_gpus" and _named(top) == ["2", "3"]
    assert top["lost_share"] == 0.5


def test_no_statement_one_snapshot_names_the_idle_gpu_second_only(tmp_path):
    d = _diagnose(tmp_path, _table([(98, 40000), (0, 39000)]))
    assert d.hypotheses[0]["id"] == "insufficient_data"
    second = next(h for h in d.hypotheses if h["id"] == "unused_gpus")
    assert second["score"] < 0.5 and _named(second) == ["1"]


def test_more_busy_gpus_than_shards_is_no_unused_gpu(tmp_path):
    # three GPUs at work while the statement names two: the statement is not this recording's whole job
    d = _diagnose(tmp_path, _table([(98, 40000), (97, 40100), (96, 40000), (0, 39000)]) + MIRRORED_2)
    assert not any("shards each batch" in e for h in d.hypotheses for e in h["evidence"])


def test_an_idle_gpu_without_the_jobs_memory_is_not_held(tmp_path):
    d = _diagnose(tmp_path, _table([(98, 40000), (97, 40100), (0, 5)]) + MIRRORED_2)
    assert not any(h["id"] in ("unused_gpus", "pipeline_imbalance") for h in d.hypotheses)


PROCS_535 = """\
+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
{rows}+---------------------------------------------------------------------------------------+
"""
PROC = "|    {g}   N/A  N/A    {pid:>6}      C   python train.py                          {mem:>6}MiB |\n"


def _procs(rows: list[tuple[int, int, int]]) -> str:
    return PROCS_535.format(rows="".join(PROC.format(g=g, pid=pid, mem=mem) for g, pid, mem in rows))


def test_one_process_whose_first_gpu_holds_more_names_it(tmp_path):
    d = _diagnose(tmp_path, _procs([(0, 4242, 18200), (1, 4242, 9100), (2, 4242, 9050), (3, 4242, 9120)]))
    top = d.hypotheses[0]
    assert top["id"] == "memory_pressure" and _named(top) == ["0"] and "from one process" in top["evidence"][0]


def test_ddp_ranks_empty_contexts_are_not_a_master_gpu(tmp_path):
    # each rank's own GPU holds its memory, its contexts on the others 0 MiB (or a few hundred): no single process
    # computes on several GPUs
    rows = [(g, 9000 + r, 15000 if g == r else (0 if r else 300)) for g in range(3) for r in range(3)]
    d = _diagnose(tmp_path, _procs(rows))
    assert not any(h["id"] == "memory_pressure" for h in d.hypotheses)


def test_an_even_single_process_split_is_no_skew(tmp_path):
    d = _diagnose(tmp_path, _procs([(0, 77, 10000), (1, 77, 8500), (2, 77, 8900)]))  # 1.16x: within the spread
    assert not any(h["id"] == "memory_pressure" for h in d.hypotheses)


def test_the_notes_say_what_the_tasks_see(tmp_path):
    p = tmp_path / "tasks.log"
    p.write_text("rank 0: GPU 0: NVIDIA L4 (UUID: GPU-12345678-aaaa-bbbb-cccc-000000000000)\n"
                 "rank 1: GPU 0: NVIDIA L4 (UUID: GPU-12345678-aaaa-bbbb-cccc-000000000000)\n"
                 "rank 2: No devices found.\n")
    lines = notes(read_paths([str(p)]))
    assert any("1 see no GPU (rank 2)" in ln for ln in lines)
    assert any("2 tasks see the same GPU" in ln and "rank 0, rank 1" in ln for ln in lines)


def test_a_gpu_available_and_unused_is_said_and_never_healthy_alone(tmp_path):
    p = tmp_path / "fit.log"
    p.write_text("GPU available: True (cuda), used: False\nTPU available: False, using: 0 TPU cores\n")
    d = diagnose(read_paths([str(p)]))
    assert d.verdict["id"] == "unused_gpus"  # the trainer's own statement: its GPU given no work
    assert any("available and not used" in w for w in d.warnings)
