"""What log collectors add to a file: terminal escapes, one label before every line (srun -l, pdsh, kubectl
--prefix), several labels (nodes, pods), the container runtime's stream tag. Each input is written here, apart from
the fixtures; the readers must see the format the collector carried."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from playbook.diagnosis import diagnose
from playbook.readers import collected, read_paths, textio
from playbook.readers.line_prefix import Prefix

DATA = Path(__file__).resolve().parents[1] / "data"
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


@pytest.mark.parametrize("newline", [b"\n\n", b"\r\r\n", b"\r\n\r\n"])
def test_doubled_line_breaks_are_single_again_across_chunks(newline):
    lines = [b"| GPU  Name | %d |" % i for i in range(40)] + [b""] + [b"tail"]  # one blank line of its own
    text = b"".join(ln + newline for ln in lines)
    unwrap = collected.Unwrap(text[:400])
    assert unwrap.doubled
    out = b"".join(unwrap(text[i:i + 5], final=False) for i in range(0, len(text), 5)) + unwrap(b"", final=True)
    assert out == b"".join(ln + b"\n" for ln in lines)


@pytest.mark.parametrize("head", [b"a\nb\nc\n", b"a\n\nb\nc\n\nd\n", b"1%\r2%\r3%\r\n", b"a\n\nb\n"])
def test_single_or_mixed_line_breaks_are_left_as_they_are(head):
    assert not collected.Unwrap(head).doubled


def test_an_nvidia_smi_table_pasted_double_spaced_reads_as_printed(tmp_path):
    table = """Mon Jan 15 10:00:00 2024
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 525.60.13    Driver Version: 525.60.13    CUDA Version: 12.0     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  NVIDIA A100-SXM...  On   | 00000000:07:00.0 Off |                    0 |
| N/A   33C    P0    61W / 400W |  30001MiB / 40960MiB |     97%      Default |
|                               |                      |             Disabled |
+-------------------------------+----------------------+----------------------+
|   1  NVIDIA A100-SXM...  On   | 00000000:0F:00.0 Off |                    0 |
| N/A   30C    P0    58W / 400W |  30001MiB / 40960MiB |      3%      Default |
|                               |                      |             Disabled |
+-------------------------------+----------------------+----------------------+
"""
    (tmp_path / "plain.txt").write_text(table)
    (tmp_path / "doubled.txt").write_bytes(table.replace("\n", "\r\r\n").encode())
    plain, got = (read_paths([str(tmp_path / n)]).telemetry for n in ("plain.txt", "doubled.txt"))
    assert len(plain) == 2 and got["util_pct"].tolist() == plain["util_pct"].tolist() == [97.0, 3.0]


def test_an_nsys_csv_with_trailing_blanks_reads_as_printed(tmp_path):
    csv = ('"Time (%)","Total Time (ns)","Instances","Avg (ns)","Name"\n'
           '"60.0","600","3","200.0","gemm_kernel"\n"40.0","400","2","200.0","copy_kernel"\n')
    (tmp_path / "plain.txt").write_text(" ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n\n" + csv)
    (tmp_path / "blanks.txt").write_text(" ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n\n" +
                                         "".join(f"{ln} \t\n" for ln in csv.splitlines()))
    plain, got = (read_paths([str(tmp_path / n)]).meta for n in ("plain.txt", "blanks.txt"))
    (summary,), (read,) = plain.values(), got.values()
    assert [r["name"] for r in summary["reports"]["cuda_gpu_kern_sum"]] == ["gemm_kernel", "copy_kernel"]
    assert read["reports"] == summary["reports"]


SHARDS = "Loading checkpoint shards: 100%|##########| 2/2 [00:03<00:00,  1.52s/it]\n"
MAP = "".join(f"Map: {p:3d}%|{'#' * (p // 10):10s}| {p * 10}/1000 [00:0{p // 50}<00:00, 9800.00 examples/s]\n"
              for p in (10, 50, 100))


def _trainer_bar(desc: str = "") -> str:
    """A training bar redrawn every 10 steps at 2 it/s (the Hugging Face Trainer's layout: no description)."""
    return "".join(f"{desc}{100 * i // 200:3d}%|{'#' * (i // 20):10s}| {i}/200 [{i // 120:02d}:{i // 2 % 60:02d}<"
                   f"01:30,  2.00it/s]\n" for i in range(10, 201, 10))


@pytest.mark.parametrize("noise", [SHARDS, MAP, SHARDS + MAP])
def test_setup_bars_before_the_training_bar_are_not_its_steps(tmp_path, noise):
    (tmp_path / "plain.log").write_text(_trainer_bar())
    (tmp_path / "noisy.log").write_text(noise + _trainer_bar())
    plain, noisy = (read_paths([str(tmp_path / n)]).steps for n in ("plain.log", "noisy.log"))
    assert len(plain) == 20 and noisy["step"].tolist() == plain["step"].tolist()
    assert noisy["duration_s"].tolist() == pytest.approx(plain["duration_s"].tolist())


def test_the_bars_of_each_epoch_are_one_loop_whatever_their_numbers(tmp_path):
    text = SHARDS + _trainer_bar("Epoch 0: ") + _trainer_bar("Epoch 1: ")
    steps = read_paths([str(tmp_path / "e.log")]).steps if (tmp_path / "e.log").write_text(text) else None
    assert len(steps) == 40 and steps["duration_s"].median() == pytest.approx(0.5, rel=0.05)


QUERY = """==============NVSMI LOG==============

Timestamp                                 : Wed Oct 25 09:00:0{s} 2023
Driver Version                            : 535.104.05

Attached GPUs                             : 1
GPU 00000000:07:00.0
    Performance State                     : P0
    Utilization
        Gpu                               : {u} %
        Memory                            : 43 %
    GPU Power Readings
        Power Draw                        : 396.13 W
"""
WARNING = ("/usr/lib/python3/site-packages/torch/cuda/__init__.py:173: UserWarning: CUDA initialization: "
           "Unexpected error\n  warnings.warn(\n")


def test_a_warning_printed_into_nvidia_smi_q_output_is_skipped_not_a_section(tmp_path):
    polls = [QUERY.format(s=s, u=u) for s, u in enumerate((97, 95, 12, 96, 98, 97))]
    (tmp_path / "plain.txt").write_text("".join(polls))
    mixed = "".join(p.replace("    Utilization\n", WARNING + "    Utilization\n") for p in polls)
    (tmp_path / "mixed.txt").write_text(mixed)
    plain, got = (read_paths([str(tmp_path / n)]) for n in ("plain.txt", "mixed.txt"))
    assert got.telemetry["util_pct"].tolist() == plain.telemetry["util_pct"].tolist() == [97, 95, 12, 96, 98, 97]
    assert any("not nvidia-smi's" in w for w in got.warnings)


def _task_step(task: int, i: int, data_time: float) -> str:
    """A step line of one srun task (no rank tag of its own: the task label is the rank)."""
    return (f"{task}: 2023/05/04 09:{i * 5 // 60:02d}:{i * 5 % 60:02d} - mmengine - INFO - Epoch(train) "
            f"[1][{i * 10:4d}/9000]  time: {0.5 + 0.001 * ((i * 7 + task) % 5):.4f}  data_time: {data_time:.4f}  "
            "loss: 1.5000\n")


@pytest.mark.parametrize("setup_lines", [300, 3000])  # in the first 400 lines only / past the head's 64 kB
def test_task_0s_long_setup_print_does_not_make_its_label_the_collectors(tmp_path, setup_lines):
    """srun -l over four tasks, task 0 alone printing its configuration first: `0: ` is a task, not a label to
    take off (task 0's steps had been read as no rank's and dropped: the slow rank 0 was called healthy)."""
    setup = "".join(f"0: config line {k} = value\n" for k in range(setup_lines))
    steps = "".join(_task_step(t, i, 0.16 if t == 0 else 0.002) for i in range(1, 61) for t in range(4))
    (tmp_path / "srun.log").write_text(setup + steps)
    got = read_paths([str(tmp_path / "srun.log")])
    assert sorted(set(got.steps["rank"].tolist())) == [0, 1, 2, 3]
    d = diagnose(got)
    assert d.verdict["id"] == "data_starvation" and "rank 0" in d.hypotheses[0]["names"]


def test_pods_printed_one_after_another_stay_apart(tmp_path):
    """`kubectl logs -l ... --prefix` (not following) prints each pod's whole log in turn: the first pod's label
    fills the head, the second's comes later."""
    body = "".join(f"[pod/job-worker-{w}/pytorch] {_task_step(0, i, 0.16 if w == 1 else 0.002)[3:]}"
                   for w in range(2) for i in range(1, 600))
    (tmp_path / "pods.log").write_text(body)
    steps = read_paths([str(tmp_path / "pods.log")]).steps
    assert steps.groupby("rank").size().to_dict() == {0: len(steps) // 2, 1: len(steps) // 2}


def test_another_task_met_after_the_head_stops_the_taking_off():
    unwrap = collected.Unwrap(b"0: a\n0: b\n0: c\n")
    assert unwrap.label == b"0: "
    out = unwrap(b"0: d\n1: e\n0: f\n", final=False) + unwrap(b"0: g\n", final=True)
    assert out == b"d\n1: e\n0: f\n0: g\n"


def test_another_label_of_the_same_kind_anywhere_in_the_head_is_no_collector_label():
    assert collected.Unwrap(b"".join(b"0: line %d\n" % i for i in range(500)) + b"1: other\n").label is None
    assert collected.Unwrap(b"node1: a\n" * 30 + b"node2: d\n").label is None


@pytest.mark.parametrize("line", [
    "Train loss {i} {loss:.6f} Grad Norm 1.234567 {t:.2f}s/it",  # tacotron2's train.py: no step keyword
    "iter {i}0 loss {loss:.6f} {t:.2f}s/it",  # a keyword counter, every 10 steps
])
def test_a_shard_bar_before_step_lines_timed_by_a_rate_is_none_of_their_steps(tmp_path, line):
    """A checkpoint's one-line shard bar (`1.52s/it`) above a log whose steps are no bars: not a step of theirs,
    nor the count their numbers continue (the bar's `2/2` had made tacotron2's steps 0..7 into 3..10)."""
    body = "".join(line.format(i=i, loss=1 / (i + 1), t=4.0 + 0.01 * (i % 3)) + "\n" for i in range(40))
    (tmp_path / "plain.log").write_text(body)
    (tmp_path / "noisy.log").write_text(SHARDS + body)
    plain, noisy = (read_paths([str(tmp_path / n)]).steps for n in ("plain.log", "noisy.log"))
    assert len(plain) == 40 and noisy["step"].tolist() == plain["step"].tolist()
    assert noisy["duration_s"].tolist() == plain["duration_s"].tolist()


def test_a_long_fast_data_bar_does_not_outvote_a_slow_training_bar(tmp_path):
    """tqdm redraws every 0.1 s only while iterations are faster than that: 30 s of caching features at 166 it/s are
    300 redraws, 100 s of training at 2 s/it are 50 (one per step). The loop the run spends its time in (its
    elapsed clock) is the training."""
    prep = "".join(f"Caching features: {k // 50:3d}%|{'#' * (k // 500):10s}| {k * 33}/165000 [00:{k // 100:02d}<00:30, "
                   "166.00it/s]\r" for k in range(10, 3001, 10)) + "\n"
    train = "".join(f"{2 * i:3d}%|{'#' * (i // 5):10s}| {i}/50 [{i * 2 // 60:02d}:{i * 2 % 60:02d}<01:30,  2.00s/it]\r"
                    for i in range(1, 51)) + "\n"
    (tmp_path / "plain.log").write_text(train)
    (tmp_path / "prep.log").write_text(prep + train)
    plain, got = (read_paths([str(tmp_path / n)]).steps for n in ("plain.log", "prep.log"))
    assert len(plain) == 50 and got["step"].tolist() == plain["step"].tolist()
    assert got["duration_s"].tolist() == pytest.approx(plain["duration_s"].tolist())


PSTATS = """   Ordered by: cumulative time

   ncalls  tottime  percall  cumtime  percall filename:lineno(function)
        1    0.010    0.010   60.000   60.000 train.py:1(<module>)
     5000    1.000    0.000   50.000    0.010 train.py:40(train_step)
     5000   30.000    0.006   30.000    0.006 {method 'item' of 'torch._C.TensorBase' objects}
     5000    8.000    0.002    8.000    0.002 {method 'run_backward' of 'torch._C._EngineBase' objects}
     5000    5.000    0.001    5.000    0.001 {built-in method torch.conv2d}
"""


@pytest.mark.parametrize("bar", [SHARDS, "Downloading model.safetensors: 100%|##########| 548M/548M [00:04<00:00, "
                                        "120MB/s]\n".replace("548M/548M", "548/548")])
def test_a_bar_shown_once_at_its_end_is_no_series_of_steps(tmp_path, bar):
    """A finished setup bar above a profile (one line: `2/2 [00:03<00:00, 1.52s/it]`) had become a run of one
    1.52 s step: the profile's host sync was called insufficient data."""
    (tmp_path / "plain.txt").write_text(PSTATS)
    (tmp_path / "bar.txt").write_text(bar + PSTATS)
    plain, got = (diagnose(read_paths([str(tmp_path / n)])) for n in ("plain.txt", "bar.txt"))
    assert got.verdict["id"] == plain.verdict["id"]
    assert len(read_paths([str(tmp_path / "bar.txt")]).steps) == 0


def test_eight_ranks_caching_together_do_not_outlast_rank_0s_training(tmp_path):
    """Every rank caches its features (30 s, their bars interleaved, clocks a little apart), only rank 0 draws the training
    bar (100 s): the ranks' clocks are each their own, not one clock running back and forth."""
    prep = "".join(f"[rank{r}]: Caching features: {k // 30:3d}%|{'#' * (k // 300):10s}| {k * 55}/165000 "
                   f"[00:{(k + r) // 100:02d}<00:30, 5500.00it/s]\n" for k in range(10, 3001, 10) for r in (3, 0, 5, 1,
                                                                                                      7, 2, 6, 4))
    train = "".join(f"[rank0]: {2 * i:3d}%|{'#' * (i // 5):10s}| {i}/50 [{i * 2 // 60:02d}:{i * 2 % 60:02d}<01:30,  "
                    "2.00s/it]\n" for i in range(1, 51))
    (tmp_path / "plain.log").write_text(train)
    (tmp_path / "prep.log").write_text(prep + train)
    plain, got = (read_paths([str(tmp_path / n)]).steps for n in ("plain.log", "prep.log"))
    assert len(plain) == 50 and got["step"].tolist() == plain["step"].tolist()


@pytest.mark.parametrize("desc", ["", "Epoch 2: ", "Training: "])
def test_a_training_bars_last_line_alone_still_times_the_run(tmp_path, desc):
    (tmp_path / "end.log").write_text(f"{desc}100%|##########| 1000/1000 [10:00<00:00,  1.67it/s]\n"
                                      "{'train_runtime': 600.0, 'train_steps_per_second': 1.67, 'epoch': 3.0}\n")
    assert read_paths([str(tmp_path / "end.log")]).steps["duration_s"].tolist() == pytest.approx([0.6], rel=0.01)


def test_a_metrics_line_cut_inside_a_number_joins_its_rest_through_trailing_blanks(tmp_path):
    """verl's `timing_s/...` line, cut by the paste inside a number: with a terminal's trailing blanks on each
    line the first half had been left alone (the step read from the cut on, the stages before it lost)."""
    stages = " - ".join(f"timing_s/stage{k}:{10.5 + k:.13f}" for k in range(8))
    text = f"{stages} - timing_s/step:1163.9566092677414 - perf/throughput:12.5"  # no step named: the first
    cut = text.index("timing_s/stage5:") + 22
    lines = [text[:cut], text[cut:]]
    (tmp_path / "plain.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "blanks.log").write_text("".join(f"{ln}   \n" for ln in lines))
    plain, got = (read_paths([str(tmp_path / n)]).steps for n in ("plain.log", "blanks.log"))
    assert plain[plain.phase == "step"]["duration_s"].round().tolist() == [1164]
    assert got[["step", "phase", "duration_s"]].equals(plain[["step", "phase", "duration_s"]])


def test_local_rank_tags_of_several_pods_stay_apart():
    """A PyTorchJob: a pod per node, torchrun in each with --tee (`[default0]:`, the local rank): the pods' local
    rank 0s are two processes (they had been one rank)."""
    p = Prefix()
    ranks = [p.split(f"[pod/job-worker-{pod}/pytorch] [default{local}]:step 3 time 0.5")[0]
             for pod, local in ((0, 0), (0, 1), (1, 0), (1, 1), (0, 0))]
    assert len(set(ranks[:4])) == 4 and ranks[4] == ranks[0]


def test_timer_lines_after_a_setup_bar_are_not_merged_into_it(tmp_path):
    """GPT-NeoX / DeepSpeed timers print after their step's line, and are read onto the last record: a finished
    setup bar's (`2/2 ... 1.52s/it`) is no step's (its rate had stood for the timers' step time; with the setup
    bar dropped the timers went with it)."""
    timers = "".join(f"rank=0 time (ms) | train_batch: {87510.72 + k:.2f} | forward: 2844.74 | backward: 8724.91 | "
                     f"optimizer_step: 29300.81\n" for k in range(3))
    (tmp_path / "plain.log").write_text(timers)
    (tmp_path / "bar.log").write_text(SHARDS + timers)
    plain, got = (read_paths([str(tmp_path / n)]).steps for n in ("plain.log", "bar.log"))
    step = got[got.phase == "step"]["duration_s"].tolist()
    assert len(step) == 3 and step == plain[plain.phase == "step"]["duration_s"].tolist()
    assert sorted(got.phase.unique()) == sorted(plain.phase.unique())


def test_a_setup_bar_redrawn_is_no_series_of_steps_either(tmp_path):
    """The shard bar as a log file keeps it: `\\r`-redrawn, `1/2 ... 1.60s/it`, then `2/2 ... 1.52s/it` twice."""
    bar = "\r".join(f"Loading checkpoint shards: {50 * i:3d}%|{'#' * 5 * i:10s}| {i}/2 [00:0{i}<00:0{2 - i}, "
                    f"{'?it/s' if i == 0 else f'{1.6 - 0.08 * i:.2f}s/it'}]" for i in (0, 1, 2, 2)) + "\n"
    (tmp_path / "plain.txt").write_text(PSTATS)
    (tmp_path / "bar.txt").write_text(bar + PSTATS)
    plain, got = (diagnose(read_paths([str(tmp_path / n)])) for n in ("plain.txt", "bar.txt"))
    assert got.verdict["id"] == plain.verdict["id"] == "host_sync"


JOB_PREAMBLE = ("wandb: Tracking run with wandb version 0.16.3\n"
                "/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:611: UserWarning: Can't initialize "
                "NVML\n  warnings.warn(\"Can't initialize NVML\")\nLoading checkpoint shards: 100%|##########| 2/2 "
                "[00:03<00:00,  1.52s/it]\n")


def test_a_tools_output_after_a_jobs_preamble_is_read_from_where_it_begins(tmp_path):
    (tmp_path / "plain.csv").write_text(SMI)
    (tmp_path / "job.out").write_text(JOB_PREAMBLE * 3 + SMI)  # more lines than a header may have above it
    plain, got = (read_paths([str(tmp_path / n)]) for n in ("plain.csv", "job.out"))
    assert got.telemetry["util_pct"].tolist() == plain.telemetry["util_pct"].tolist() and len(plain.telemetry) == 120


def test_a_training_log_with_a_table_inside_is_still_a_training_log(tmp_path):
    table = SMI.splitlines()[:5]
    lines = [_mmengine(r, i, 0.002) for i in range(1, 41) for r in range(2)]
    (tmp_path / "train.log").write_text("\n".join(lines[:10] + table + lines[10:]) + "\n")
    b = read_paths([str(tmp_path / "train.log")])
    assert (b.steps["phase"] == "step").sum() == 80 and not any("read from line" in w for w in b.warnings)


def test_text_no_reader_understands_is_still_refused_with_its_own_message(tmp_path):
    (tmp_path / "notes.txt").write_text(JOB_PREAMBLE + "the run finished\nall good\nsee you\n")
    with pytest.raises(Exception, match="notes.txt: not telemetry"):
        read_paths([str(tmp_path / "notes.txt")])


@pytest.mark.parametrize(("head", "indent"), [
    ("    a\n      b\n\n    c\n", "    "), ("\ta\n\tb", "\t"), ("  one line", "  "), ("a\n  b\n", ""), ("", ""),
])
def test_the_indent_every_line_shares_and_its_removal(head, indent):
    assert collected.common_indent(head) == indent
    assert collected.dedent("    a\n      b\nc\n", "    ") == "a\n  b\nc\n"


@pytest.mark.parametrize("indent", ["    ", "\t"])
def test_a_format_pasted_as_an_indented_code_block_reads_as_printed(tmp_path, indent):
    (tmp_path / "plain.csv").write_text(SMI)
    (tmp_path / "pasted.csv").write_text("".join(f"{indent}{ln}\n" for ln in SMI.splitlines()))
    plain, got = (read_paths([str(tmp_path / n)]).telemetry for n in ("plain.csv", "pasted.csv"))
    assert len(got) == len(plain) == 120 and got["util_pct"].tolist() == plain["util_pct"].tolist()


def test_a_one_line_log_pasted_indented_reads_as_printed(tmp_path):
    """verl's one line of timing_s keys (heldout41), indented: the slowest sample still found (before the dedent of
    files.read_file: insufficient data)."""
    src = DATA / "eval" / "heldout41" / "verl7412_agent_loop_slowest_sample.log"
    (tmp_path / src.name).write_text("    " + src.read_text())
    plain, got = (diagnose(read_paths([str(p)])) for p in (src, tmp_path / src.name))
    assert got.verdict.get("id") == plain.verdict.get("id") != "insufficient_data"
    assert got.hypotheses[0]["names"] == plain.hypotheses[0]["names"]


def test_nvidia_smi_q_leaves_keep_the_indentation_that_is_their_meaning(tmp_path):
    """`nvidia-smi -q -d UTILIZATION -l 1 | grep -E 'Gpu|Memory'`: every line is indented by nvidia-smi itself, and
    the -q reader reads them as they are (no dedent: a reader of their format knows them)."""
    leaves = "".join(f"        Gpu                               : {u} %\n"
                     f"        Memory                            : {u // 2} %\n" for u in (90, 20, 90, 20, 90))
    (tmp_path / "grep.txt").write_text(leaves)
    t = read_paths([str(tmp_path / "grep.txt")]).telemetry
    assert t["util_pct"].tolist() == [90.0, 20.0, 90.0, 20.0, 90.0]


def test_a_monitor_scripts_aligned_table_after_a_jobs_preamble_is_read(tmp_path):
    """The aligned table a monitor script prints (a telemetry header, rows of numbers) is the text's format, not any
    text: read from where it begins, as nvidia-smi's output is."""
    table = "Time     GPU%   Mem Used   Temp   Power\n" + "".join(
        f"{t:8.1f} {90.0 if t % 20 < 15 else 10.0:6.1f} {1361 + t:10.0f} {45.0:6.1f} {71.7:7.1f}\n" for t in range(60))
    (tmp_path / "plain.txt").write_text(table)
    (tmp_path / "job.out").write_text(JOB_PREAMBLE * 3 + table)  # more lines than a table may have above its header
    plain, got = (read_paths([str(tmp_path / n)]) for n in ("plain.txt", "job.out"))
    assert len(plain.telemetry) == 60 and got.telemetry["util_pct"].tolist() == plain.telemetry["util_pct"].tolist()
    assert any("read from line" in w for w in got.warnings)


def test_a_quoted_paste_reads_without_its_quote_marks_and_its_bare_quote_lines_are_blank(tmp_path):
    """An e-mail's or a Markdown quote's `> ` before every line, with `>` alone on the quote's blank lines: the
    stream the reader gets has neither."""
    (tmp_path / "plain.csv").write_text(SMI)
    lines = SMI.splitlines()
    quoted = [f"> {ln}" for ln in lines[:30]] + [">"] + [f"> {ln}" for ln in lines[30:]]
    (tmp_path / "quoted.csv").write_text("\n".join(quoted) + "\n")
    plain, got = (read_paths([str(tmp_path / n)]) for n in ("plain.csv", "quoted.csv"))
    assert got.telemetry["util_pct"].tolist() == plain.telemetry["util_pct"].tolist()
    assert not got.warnings


def test_an_nvidia_smi_table_indented_inside_a_log_keeps_its_gpu_rows(tmp_path):
    """A record that pastes the table indented among its own lines (a code block in a run's notes, modded-nanogpt's
    records): the table's reader knows the table as it is, so no dedent runs — it reads the rows at any indent."""
    src = DATA / "zoo" / "modded_nanogpt_record.txt"
    (tmp_path / src.name).write_text("".join(f"    {ln}" if ln.strip() else ln for ln in src.read_text().splitlines(True)))
    plain, got = (read_paths([str(p)]) for p in (src, tmp_path / src.name))
    assert len(got.telemetry) == len(plain.telemetry) == 8 and not got.warnings


def _python_warning(message: str, category: type[Warning], filename: str, lineno: int, source: str) -> str:
    """A warning exactly as CPython's warnings module writes it to stderr (formatwarning, with its source line)."""
    import linecache
    import warnings

    linecache.cache[filename] = (len(source), None, [source + "\n"] * lineno, filename)
    try:
        return warnings.formatwarning(message, category, filename, lineno)
    finally:
        linecache.cache.pop(filename, None)


PossibleUserWarning = type("PossibleUserWarning", (UserWarning,), {})


def test_runtime_warning_records_are_cpythons_format_and_nothing_else():
    records = [
        _python_warning("This DataLoader will create 16 worker processes in total.", UserWarning,
                        "/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py", 557,
                        "    warnings.warn(_create_warning_msg("),
        _python_warning("`np.bool` is a deprecated alias", DeprecationWarning, "C:\\env\\lib\\site.py", 12,
                        "x = np.bool"),
        _python_warning("The dataloader does not have many workers", PossibleUserWarning,
                        "/opt/lightning/trainer/connectors/data_connector.py", 441, "rank_zero_warn("),
        "huggingface/tokenizers: The current process just got forked, after parallelism has already been used. "
        "Disabling parallelism to avoid deadlocks...\n",
    ]
    kept = ["epoch 1 step 10 loss 2.31 time 0.52s\n", "model.py:12: Error: not a warning record\n",
            "  indented, after a line that is no warning\n", "a: 1: UserWarning in prose\n", "step 11 loss 2.29\n"]
    text = "".join(kept[:3] + records[:2] + kept[3:4] + records[2:] + kept[4:]).encode()
    assert collected.stderr_records(text) == 4
    assert collected.drop_stderr(text) == "".join(kept).encode()


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_runtime_warnings_come_off_the_stream_only_when_asked_and_across_chunks(tmp_path, chunk):
    warning = _python_warning("Using a non-full backward hook", UserWarning, "/x/module.py", 1501,
                              "  warnings.warn(\"Using a non-full backward hook\")")
    lines = [f"step {i} time {0.5 + i / 100:.2f}s\n" for i in range(12)]
    path = tmp_path / "run.log"
    path.write_text("".join(lines[:5]) + warning + "".join(lines[5:]))
    unwrap = collected.Unwrap(path.read_bytes()[:4096], path)
    token = collected.STDERR.set(frozenset({str(path)}))
    try:
        asked = collected.Unwrap(path.read_bytes()[:4096], path)
    finally:
        collected.STDERR.reset(token)
    raw = path.read_bytes()
    pieces = [raw[i:i + chunk] for i in range(0, len(raw), chunk)]
    as_is = b"".join(unwrap(p, k == len(pieces) - 1) for k, p in enumerate(pieces))
    without = b"".join(asked(p, k == len(pieces) - 1) for k, p in enumerate(pieces))
    assert as_is == raw and without == "".join(lines).encode()


def test_a_grepped_table_cut_by_an_interleaved_warning_reads_as_if_none_were_there(tmp_path):
    rows = [f"| {30 + k % 3}%   {45 + k % 4}C    P2   {150 + 9 * k}W / 250W |   7000MiB / 11178MiB |     "
            f"{(k * 37) % 100:>2}%      Default |\n" for k in range(10)]  # `nvidia-smi -l 1 | grep Default`
    warning = _python_warning("`torch.cuda.amp.GradScaler(args...)` is deprecated.", FutureWarning,
                              "/opt/train.py", 88, "scaler = torch.cuda.amp.GradScaler()")
    (tmp_path / "plain.txt").write_text("".join(rows))
    (tmp_path / "cut.txt").write_text("".join(rows[:6] + [warning] + rows[6:]))
    plain, got = (read_paths([str(tmp_path / n)]) for n in ("plain.txt", "cut.txt"))
    assert got.telemetry["util_pct"].tolist() == plain.telemetry["util_pct"].tolist()
    assert len(plain.telemetry) == 10
    assert any("read without the Python warnings" in w for w in got.warnings)
    assert not any("Python warnings" in w for w in plain.warnings)


TOKENIZERS_NOTICE = (  # tokenizers' fork notice as it prints it: four lines (tokenizers/src/utils/parallelism.rs)
    "huggingface/tokenizers: The current process just got forked, after parallelism has already been used. "
    "Disabling parallelism to avoid deadlocks...\nTo disable this warning, you can either:\n"
    "\t- Avoid using `tokenizers` before the fork if possible\n"
    "\t- Explicitly set the environment variable TOKENIZERS_PARALLELISM=(true | false)\n")


def test_tokenizers_fork_notice_comes_off_whole_with_its_three_advice_lines():
    kept = ["step 1 time 0.52s\n", "step 2 time 0.51s\n"]
    text = (kept[0] + TOKENIZERS_NOTICE + kept[1]).encode()
    assert collected.stderr_records(text) == 1
    assert collected.drop_stderr(text) == "".join(kept).encode()


@pytest.mark.parametrize("chunk", [5, 29, 64, 150, 1 << 20])
def test_a_multi_line_notice_cut_by_a_chunk_end_still_comes_off_whole(tmp_path, chunk):
    lines = [f"step {i} time {0.5 + i / 100:.2f}s\n" for i in range(12)]
    path = tmp_path / "run.log"
    path.write_text("".join(lines[:5]) + TOKENIZERS_NOTICE + "".join(lines[5:9]) + TOKENIZERS_NOTICE
                    + "".join(lines[9:]))
    token = collected.STDERR.set(frozenset({str(path)}))
    try:
        asked = collected.Unwrap(path.read_bytes()[:4096], path)
    finally:
        collected.STDERR.reset(token)
    raw = path.read_bytes()
    for start in range(0, min(chunk, len(raw))):  # every offset of the chunk grid
        asked.carry = b""
        pieces = [raw[:start]] + [raw[i:i + chunk] for i in range(start, len(raw), chunk)]
        got = b"".join(asked(p, k == len(pieces) - 1) for k, p in enumerate(pieces))
        assert got == "".join(lines).encode(), start


def test_a_grepped_table_cut_by_tokenizers_fork_notices_reads_as_if_none_were_there(tmp_path):
    rows = [f"| {30 + k % 3}%   {45 + k % 4}C    P2   {150 + 9 * k}W / 250W |   7000MiB / 11178MiB |     "
            f"{(k * 37) % 100:>2}%      Default |\n" for k in range(10)]  # `nvidia-smi -l 1 | grep Default`
    (tmp_path / "plain.txt").write_text("".join(rows))
    (tmp_path / "cut.txt").write_text("".join(rows[:3] + [TOKENIZERS_NOTICE] + rows[3:7] + [TOKENIZERS_NOTICE]
                                              + rows[7:]))
    plain, got = (read_paths([str(tmp_path / n)]) for n in ("plain.txt", "cut.txt"))
    assert len(plain.telemetry) == 10
    assert got.telemetry["util_pct"].tolist() == plain.telemetry["util_pct"].tolist()


def test_binary_data_is_refused_at_once_not_searched_for_a_preamble_or_warnings(tmp_path, monkeypatch):
    from playbook.core.errors import UnknownFormatError
    from playbook.readers import detect, files

    path = tmp_path / "model.ckpt"
    path.write_bytes(bytes(range(256)) * 400)  # a checkpoint's bytes: no reader's, no lines to skip
    tried: list[str] = []
    monkeypatch.setattr(detect, "specific", lambda head, generic=(): tried.append(head[:8]))
    with pytest.raises(UnknownFormatError, match="binary data"):
        files.read_file(path)
    assert tried == []  # each of MAX_PREAMBLE tries sniffs the whole head with every reader (1.5 s, was 0.03 s)


@pytest.mark.parametrize("label", ["[default0]:", "[rank0]:", "[trainer2]:"])
def test_a_tools_output_printed_under_torchrun_tee_reads_as_printed(tmp_path, label):
    """A process launched by `torchrun --tee 3` (`--role rank`: `[rank0]:`) that prints a tool's output: nvidia-smi
    dmon here, which cannot be read with the label before every line; read without it (read_file's retry)."""
    dmon = ("# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk\n"
            "# Idx      W      C      C      %      %      %      %    MHz    MHz\n"
            + "".join(f"    0    {60 + k}     34      -     {10 * k % 100:2d}      5      0      0   1593    210\n"
                      for k in range(12)))
    (tmp_path / "plain.txt").write_text(dmon)
    (tmp_path / "tee.txt").write_text("".join(label + ln + "\n" for ln in dmon.splitlines()))
    plain, tee = (read_paths([str(tmp_path / n)]).telemetry for n in ("plain.txt", "tee.txt"))
    assert len(tee) == len(plain) == 12
    assert tee["util_pct"].tolist() == plain["util_pct"].tolist()


def test_a_training_log_under_one_torchrun_label_keeps_its_rank(tmp_path):
    """Readable with the label: it stays, and line_prefix reads the rank it names."""
    (tmp_path / "r.log").write_text("".join(f"[rank3]:step {k} loss 1.0 step_time 0.5s\n" for k in range(1, 30)))
    steps = read_paths([str(tmp_path / "r.log")]).steps
    assert len(steps) > 20 and set(steps["rank"]) == {3}


@pytest.mark.parametrize("head,label", [
    ("[default0]:a\n[default0]: b\n[default0]:c\n", "[default0]:"),  # a space after it is the line's own text
    ("[default0]:a\n[default1]:b\n[default0]:c\n", ""),  # two local ranks: line_prefix tells them apart
    ("[INFO]: a\n[INFO]: b\n[INFO]: c\n", ""),  # a bracketed level, no rank number
    ("[rank0]:a\n[rank0]:b\n", ""),  # two lines: too few to tell
])
def test_torchruns_label_is_one_rank_on_every_line(head, label):
    assert collected.launcher_label(head) == label
