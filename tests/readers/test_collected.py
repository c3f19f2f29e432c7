"""What log collectors add to a file: terminal escapes, one label before every line (srun -l, pdsh, kubectl
--prefix), several labels (nodes, pods), the container runtime's stream tag. Each input is written here, apart from
the fixtures; the readers must see the format the collector carried."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.diagnosis import diagnose
from playbook.readers import collected, read_paths, textio
from playbook.readers.line_prefix import Prefix

SMI = ("timestamp, index, utilization.gpu [%], memory.used [MiB]\n" +
       "".join(f"2024/03/01 10:00:{s:02d}.000, {g}, {90 if s % 20 < 15 else 10} %, {1000 + g} MiB\n"
               for s in range(60) for g in range(2)))


def test_escapes_are_taken_off_even_when_a_chunk_ends_inside_one():
    unwrap = collected.Unwrap(b"")
    parts = [b"step 1 \x1b[1;3", b"2mloss\x1b[0m 0.5\n\x1b]0;title\x07", b"step 2\x1b", b"[K done\n"]
    out = b"".join(unwrap(p, final=False) for p in parts) + unwrap(b"", final=True)
    assert out == b"step 1 loss 0.5\nstep 2 done\n"


@pytest.mark.parametrize("label", [b"0: ", b"  3: ", b"gpu-node07: ", b"[pod/train-worker-0/pytorch] "])
def test_one_label_on_every_line_is_taken_off_across_chunks(label):
    lines = [b"step %d time 0.5" % i for i in range(50)]
    text = b"".join(label + ln + b"\n" for ln in lines)
    unwrap = collected.Unwrap(text[:300])
    assert unwrap.label == label
    out = b"".join(unwrap(text[i:i + 7], final=False) for i in range(0, len(text), 7)) + unwrap(b"", final=True)
    assert out == b"".join(ln + b"\n" for ln in lines)


@pytest.mark.parametrize("head", [
    b"0: a\n1: b\n0: c\n1: d\n",  # two tasks: ranks, kept for line_prefix
    b"INFO: a\nINFO: b\nINFO: c\n",  # a level word, no digit: the line's own text
    b"0: a\n0: b\n",  # two lines: too few to tell
    b"node1: a\nnode1: b\nplain\nplain\nplain\n",  # under 90% of the lines
])
def test_what_is_not_one_collector_label_stays(head):
    assert collected.Unwrap(head).label is None


def test_a_file_read_through_textio_has_neither_escapes_nor_the_label(tmp_path):
    body = "".join(f"\x1b[32mstep {i} time 0.{i % 10}\x1b[0m\n" for i in range(200_000))  # past one stream chunk
    (tmp_path / "a.log").write_text("".join(f"0: {ln}\n" for ln in body.splitlines()))
    assert textio.read_text(tmp_path / "a.log") == body.replace("\x1b[32m", "").replace("\x1b[0m", "")


@pytest.mark.parametrize("wrap", ["kubectl", "srun", "ansi"])
def test_nvidia_smi_wrapped_by_a_collector_reads_as_it_printed(tmp_path, wrap):
    (tmp_path / "plain.csv").write_text(SMI)
    lines = SMI.splitlines()
    wrapped = {"kubectl": [f"[pod/trainer-0/smi] {ln}" for ln in lines], "srun": [f"0: {ln}" for ln in lines],
               "ansi": [f"\x1b[0m{ln}\x1b[0m" for ln in lines]}[wrap]
    (tmp_path / "wrapped.csv").write_text("\n".join(wrapped) + "\n")
    plain, got = (read_paths([str(tmp_path / n)]).telemetry for n in ("plain.csv", "wrapped.csv"))
    assert len(got) == len(plain) == 120
    assert np.array_equal(got["util_pct"].to_numpy(), plain["util_pct"].to_numpy())


def test_a_rank_tag_behind_srun_task_labels_is_the_rank():
    p = Prefix()
    assert p.split("0: [rank2]:2023/05/04 09:00:04 - mmengine - INFO - step")[:1] == (2,)
    assert p.split("1: [rank5]: step")[0] == 5
    assert p.split("3: step 9")[0] == 3  # no tag: the task is the rank


def test_local_rank_tags_of_several_srun_tasks_stay_apart():
    p = Prefix()
    ranks = [p.split(f"{task}: [default{local}]: step 3")[0] for task, local in ((1, 0), (0, 0), (0, 1), (1, 0))]
    assert len(set(ranks[:3])) == 3 and ranks[3] == ranks[0]


def test_kubectl_pods_are_processes_and_a_stated_rank_wins():
    p = Prefix()
    a, b = (p.split(f"[pod/job-worker-{i}/pytorch] step 5 time 0.5")[0] for i in (1, 0))
    assert a != b and {a, b} == {0, 1}
    assert p.split("[pod/job-worker-2/pytorch] [rank=3, world_size=4] hi")[0] == 3


def test_the_container_runtimes_stream_tag_is_not_the_message():
    rank, t, body = Prefix().split("2024-01-15T10:00:00.123456789Z stdout F Epoch 1 step 5 loss 0.1")
    assert body == "Epoch 1 step 5 loss 0.1" and t == 1705312800123456789


def _mmengine(rank: int, i: int, data_time: float) -> str:
    """An mmengine line under torchrun's tee (layout of the real heldout27 log): every rank's step takes the same
    time (DDP waits for the slowest), the slow loader shows in its rank's data_time only."""
    return (f"[rank{rank}]:2023/05/04 09:{i * 5 // 60:02d}:{i * 5 % 60:02d} - mmengine - INFO - Epoch(train) "
            f"[1][{i * 10:4d}/2000]  time: {0.5 + 0.001 * ((i * 7 + rank) % 5):.4f}  data_time: {data_time:.4f}  "
            "loss: 1.5000")


def test_the_slow_loader_rank_is_named_through_srun_labels_of_two_nodes(tmp_path):
    lines = [(rank // 2, _mmengine(rank, i, 0.16 if rank == 3 else 0.002)) for i in range(1, 61) for rank in range(4)]
    (tmp_path / "plain.log").write_text("".join(f"{ln}\n" for _, ln in lines))
    (tmp_path / "srun.log").write_text("".join(f"{node}: {ln}\n" for node, ln in lines))
    for name in ("plain.log", "srun.log"):
        d = diagnose(read_paths([str(tmp_path / name)]))
        assert d.verdict["id"] == "data_starvation", name
        assert "rank 3" in d.hypotheses[0]["names"], name
