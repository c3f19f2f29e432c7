"""The reading the seventieth held-out round (tests/data/eval/heldout70/SOURCES.md) asked for, on logs written here
apart from the round's own files (LABELED SYNTHETIC):

- a count of steps in brackets after a time's key (`Time(1000 iters): 5.4s`, `time (100 steps): 12.1 s`,
  `Elapsed[50 batches] = 3.2s`) numbers the steps the time covers: the count is no time, the time a window of those
  steps, read per step.
"""

from __future__ import annotations

import pytest

from playbook.readers import read_paths
from playbook.readers.step_log.window_count import bracket_count


def _steps(tmp_path, text):
    path = tmp_path / "run.log"
    path.write_text(text)
    s = read_paths([str(path)]).steps
    return s[s["phase"] == "step"]["duration_s"].tolist()


@pytest.mark.parametrize(("line", "per_step"), [
    ("[HUGECTR][INFO]: Iter: {i} Time(1000 iters): {t}s Loss: 0.12 lr:24.0", 1000),
    ("step {i} | time (1000 steps): {t} s | loss 0.5", 1000),
    ("iteration={i} Elapsed[1000 batches] = {t}s", 1000),
])
def test_a_bracketed_count_makes_the_time_a_window_of_those_steps(tmp_path, line, per_step):
    """LABELED SYNTHETIC: every 1000 steps a line with the time those 1000 took; one window 20% slower."""
    times = [5.0, 5.1, 5.0, 6.0, 5.05, 5.0]
    text = "".join(line.format(i=1000 * k, t=t) + "\n" for k, t in enumerate(times, 1))
    got = _steps(tmp_path, text)
    # each line its window over the 1000 steps it states (the first too: its count needs no line before it)
    assert got == pytest.approx([t / per_step for t in times], rel=1e-6)
    assert max(got) < 0.01  # never the count (1000) read as seconds


@pytest.mark.parametrize(("segs", "want"), [
    ([" Time(", "", " iters): ", "s"], True),
    ([" time [", "", " steps] = ", "s"], True),
    ([" Time(", "", " iters): ", "s", " Loss: ", ""], True),
    ([" Time(", "s", " iters): ", "s"], False),  # a unit of its own: a time, not a count
    ([" loss(", "", " iters): ", "s"], False),  # no time's word before the bracket
    ([" Time(", "", " images): ", "s"], False),  # counts no steps
    ([" Time(", ""], False),  # nothing after it
])
def test_bracket_count(segs, want):
    assert bracket_count(segs, 0) is want


def test_a_time_in_brackets_is_still_a_time(tmp_path):
    """LABELED SYNTHETIC: `time (0.52 s)` after a step counter: a bracketed time of its own, not a count."""
    text = "".join(f"step {i} loss 0.4 time ({t} s)\n" for i, t in enumerate([0.52, 0.50, 0.51, 0.53], 1))
    assert _steps(tmp_path, text) == pytest.approx([0.52, 0.50, 0.51, 0.53])


# --- Ray Data's progress snapshots (readers/ray_progress_text.py, analysis/ray_progress.py)

def _diagnose(tmp_path, text):
    from playbook.diagnosis import diagnose
    path = tmp_path / "ray.log"
    path.write_text(text)
    return diagnose(read_paths([str(path)]))


def _logging_snapshot(gpus: str, read_done: int, queued: int, util: float, idle_actors: int = 0) -> str:
    """LABELED SYNTHETIC: one snapshot as logging_progress.py prints it (python/ray/data/_internal/progress), a
    CPU read stage then a GPU stage (`Actors: N (running=..., util=...)`)."""
    p = "2025-01-01 10:00:00,000 INFO logging_progress.py:{} -- "
    return "".join(p.format(n) + t + "\n" for n, t in [
        (174, "======= Running Dataset: ds_1_0 ======="),
        (225, "Total Progress: 10/500"),
        (227, f"Active & requested resources: 12/64 CPU, {gpus} GPU, 20.0GiB/100.0GiB object store"),
        (231, f"ReadImages->Map(decode): {read_done}/1000"),
        (233, f"  Tasks: {0 if read_done == 1000 else 12}; Actors: 0; Queued blocks: 0 (0.0B); Resources: 12.0 CPU, "
              "2.0GiB object store"),
        (231, "MapBatches(Embed): 10/1000"),
        (233, f"  Tasks: 4; Actors: 4 (running=4, restarting=0, pending=0, active={4 - idle_actors}, "
              f"idle={idle_actors}, util={util:.3f}, tasks_in_flight=4); Queued blocks: {queued} (1.5GiB); "
              "Resources: 0.0 CPU, 4.0 GPU, 10.0MiB object store")])


def test_reads_the_three_printers():
    from playbook.readers.ray_progress_text import RayProgress
    r = RayProgress()
    lines = _logging_snapshot("4/16", 1000, 300, 1.0).splitlines() + [
        # LABELED SYNTHETIC, the tqdm bars of 2.4x (`Running Dataset: id. Active & requested ...`, `- name: Tasks:`)
        "Running Dataset: train_2_0. Active & requested resources: 37/37 CPU, 2/8 GPU, 9.2GB/39.9GB object store: : 0.00"
        " row [00:01, ? row/s]",
        "- ReadParquet: Tasks: 37 [backpressured:tasks]; Actors: 0; Queued blocks: 163; Resources: 37.0 CPU, 9.2GB "
        "object store: : 0.0 row [00:01, ? row/s]",
        # LABELED SYNTHETIC, the older bars of 2.2x-2.3x
        "Running: 0/10 CPU, 2/4 GPU, 56.0B/1.0GB object_store_memory:  40%|████      | 4/10 [00:04<00:06,  1.05s/it]",
        "- MapBatches(Identity): 5 active, 2 queued, [cpu: 0.0, gpu: 2.0, objects: 8.0B], 3 actors (1 pending) "
        "[locality off]:  40%|▍| 4"]
    assert all(r.feed(line) for line in lines)
    a, b, c = r.summary()
    assert (a["gpu_used"], a["gpu_limit"], a["dataset"]) == (4, 16, "ds_1_0")
    assert [(o["name"], o["done"], o["queued"], o["gpu"]) for o in a["operators"]] == [
        ("ReadImages->Map(decode)", 1000, 0, 0.0), ("MapBatches(Embed)", 10, 300, 4.0)]
    assert a["operators"][1]["util"] == 1.0 and a["operators"][1]["running"] == 4
    assert (b["dataset"], b["gpu_limit"], b["operators"][0]["backpressured"], b["operators"][0]["queued"]) == (
        "train_2_0", 8, True, 163)
    assert (c["gpu_used"], c["gpu_limit"], c["operators"][0]["gpu"], c["operators"][0]["pending"]) == (2, 4, 2.0, 1)


def test_an_operator_line_outside_a_snapshot_is_not_read():
    from playbook.readers.ray_progress_text import RayProgress
    r = RayProgress()
    assert not r.feed("epoch: 3/10")
    assert not r.feed("  Tasks: 2; Actors: 0; Queued blocks: 5; Resources: 1.0 CPU")
    assert r.summary() == []


def test_work_queued_at_a_gpu_stage_with_gpus_idle_is_an_imbalance(tmp_path):
    text = "".join(_logging_snapshot("4/16", 1000, 300, 1.0) for _ in range(3))
    d = _diagnose(tmp_path, text)
    assert d.verdict["id"] == "pipeline_imbalance"
    ev = " ".join(d.hypotheses[0]["evidence"])
    assert "MapBatches(Embed)" in ev and "4 of the 16 GPUs" in ev and "has finished" in ev


def test_a_gpu_stage_idle_with_nothing_queued_while_the_read_works_is_starved(tmp_path):
    text = "".join(_logging_snapshot("4/4", 400, 0, 0.35, idle_actors=3) for _ in range(3))
    d = _diagnose(tmp_path, text)
    assert d.verdict["id"] == "data_starvation"
    assert "MapBatches(Embed)" in " ".join(d.hypotheses[0]["evidence"])


def test_every_gpu_busy_with_work_queued_finds_nothing(tmp_path):
    text = "".join(_logging_snapshot("16/16", 1000, 300, 1.0) for _ in range(3))
    d = _diagnose(tmp_path, text)
    assert d.verdict["id"] not in ("pipeline_imbalance", "data_starvation")


def test_one_moment_of_many_is_not_the_run(tmp_path):
    text = _logging_snapshot("4/16", 1000, 300, 1.0) + "".join(
        _logging_snapshot("16/16", 1000, 300, 1.0) for _ in range(3))
    assert _diagnose(tmp_path, text).verdict["id"] != "pipeline_imbalance"


# --- Ray's raylet spilling the object store to disk (readers/event_lexicon.py)

@pytest.mark.parametrize("line", [
    "(raylet, ip=172.31.5.10) Spilled 2048 MiB, 4 objects, write throughput 350 MiB/s.",
    "[2024-03-01 10:00:00,000 I 123 456] local_object_manager.cc:245: Spilled 512 MiB, 3 objects, write throughput "
    "1200 MiB/s.",
    "Spilled 98765 MiB, 200 objects, avg write throughput 610 MiB/s",
])
def test_a_raylet_spill_is_memory_pressure(tmp_path, line):
    """LABELED SYNTHETIC: the raylet's spill statement in its three places (the driver's relay, raylet.out, the
    memory summary)."""
    path = tmp_path / "ray.log"
    path.write_text("step 1 loss 0.5\n" + line + "\n")
    ev = read_paths([str(path)]).events
    assert "memory_pressure" in set(ev["kind"])


@pytest.mark.parametrize("line", ["Spilled the coffee, 2 objects, write throughput nil",
                                  "restored 2048 MiB, 4 objects, read throughput 350 MiB/s."])
def test_other_words_are_no_spill(tmp_path, line):
    path = tmp_path / "ray.log"
    path.write_text("step 1 loss 0.5 time 0.2s\nstep 2 loss 0.4 time 0.2s\n" + line + "\n")
    ev = read_paths([str(path)]).events
    assert ev.empty or "memory_pressure" not in set(ev["kind"])


# --- a record's time split into named stages (readers/stage_breakdown_text.py, analysis/stage_breakdown.py)

@pytest.mark.parametrize(("line", "total", "stages"), [
    ("the epoch took 20s = 12s(sampling) + 3s(feature gather) + 5s(train)", 20.0,
     [("sampling", 12.0, "input"), ("feature gather", 3.0, "input"), ("train", 5.0, "model")]),
    ("iteration time: 400 ms = 250 ms (load) + 150 ms (forward backward)", 0.4,
     [("load", 0.25, "input"), ("forward backward", 0.15, "model")]),
    ("Sampling: 8.5s | Copy: 1.5s | Compute: 2.0s | Overall: 12.1s", 12.1,
     [("Sampling", 8.5, "input"), ("Copy", 1.5, "input"), ("Compute", 2.0, "model")]),
    ("load=1.2s, fwd=0.4s, bwd=0.8s, total=2.4s", 2.4,
     [("load", 1.2, "input"), ("fwd", 0.4, "model"), ("bwd", 0.8, "model")]),
])
def test_a_breakdown_is_read_with_its_sides(line, total, stages):
    """LABELED SYNTHETIC: other wordings of a whole split into stages (a sum, keyed lists with their total)."""
    from playbook.readers.stage_breakdown_text import StageBreakdown
    s = StageBreakdown()
    assert s.feed(line)
    (r,) = s.summary()
    assert r["total_s"] == pytest.approx(total)
    assert [(n, pytest.approx(v), side) for n, v, side in r["stages"]] == stages


@pytest.mark.parametrize("line", [
    "the epoch took 20s = 2s(sampling) + 3s(feature gather) + 5s(train)",  # 10 s of 20: no sum, something else
    "Sampling: 8.5s | Copy: 1.5s | Compute: 2.0s",  # no total to check them by
    "step 12 | data: 0.1s | fwd: 0.2s | bwd: 0.2s | total: 0.5s",  # a step counter: the step grammar's line
    "Epoch 3: sample 2.0s, train 1.0s, total 3.0s",  # an epoch counter likewise
    "lr: 0.1, loss: 0.25, total: 0.35",  # no units: values, not times
])
def test_other_lines_are_no_breakdown(line):
    from playbook.readers.stage_breakdown_text import StageBreakdown
    s = StageBreakdown()
    assert not s.feed(line) and s.summary() == []


def test_an_input_side_that_outweighs_the_model_is_starvation(tmp_path):
    """LABELED SYNTHETIC: three epochs, sampling and feature loading 70% of each."""
    text = "".join(f"Sample: {a}s; Load feats: {b}s; Train: {c}s; Total: {a + b + c:.2f}s\n"
                   for a, b, c in [(5.0, 2.0, 3.0), (5.2, 2.1, 3.0), (4.9, 2.0, 2.9)])
    d = _diagnose(tmp_path, text)
    assert d.verdict["id"] == "data_starvation"
    assert "Sample" not in d.hypotheses[0]["names"]  # a stage, not a rank or host


def test_a_model_that_outweighs_its_input_finds_nothing(tmp_path):
    """LABELED SYNTHETIC: the same layout, sampling 3% of each epoch."""
    text = "".join(f"Sample: 0.3s; Train: {c}s; Total: {0.3 + c:.2f}s\n" for c in (9.7, 9.8, 9.6))
    assert _diagnose(tmp_path, text).verdict["id"] != "data_starvation"


# --- memory pressure on every host is the workload's (diagnosis/evidence/from_events.py)

def _events(rows):
    import pandas as pd
    return pd.DataFrame([{"time": pd.NaT, "rank": r, "host": h, "kind": k, "detail": f"{k} on {h}", "step": -1}
                         for r, h, k in rows])


def test_memory_pressure_on_every_host_names_none():
    from playbook.diagnosis.evidence.from_events import from_fault_events
    f = [x for x in from_fault_events(_events([(-1, f"10.0.0.{i}", "memory_pressure") for i in range(4)]))
         if x.signature == "memory_pressure"]
    assert f and f[0].names == () and "every one of the 4 hosts" in f[0].evidence


def test_memory_pressure_on_one_host_of_many_names_it():
    from playbook.diagnosis.evidence.from_events import from_fault_events
    rows = [(-1, "10.0.0.1", "memory_pressure")] + [(-1, f"10.0.0.{i}", "nccl_warn") for i in range(2, 6)]
    f = [x for x in from_fault_events(_events(rows)) if x.signature == "memory_pressure"]
    assert f and f[0].names == ("10.0.0.1",)


def test_two_hosts_alike_stay_named():
    from playbook.diagnosis.evidence.from_events import from_fault_events
    f = [x for x in from_fault_events(_events([(-1, "a", "host_oom"), (-1, "b", "host_oom")]))
         if x.signature == "memory_pressure"]
    assert f and set(f[0].names) == {"a", "b"}


def test_a_trainers_fraction_after_a_snapshot_is_not_an_operator():
    from playbook.readers.ray_progress_text import RayProgress
    r = RayProgress()
    assert r.feed("Running Dataset: ds_1_0. Active & requested resources: 4/8 CPU, 1/2 GPU, 1.0GB/4.0GB object store")
    assert not r.feed("Step: 3/10")  # a trainer's, not an operator's: left to the step grammar
    assert r.feed("ReadCSV->SplitBlocks(4): 10/40")


# --- review (r12): lines that merely look like a breakdown

@pytest.mark.parametrize("line", [
    "GPU memory 12 = 8 (weights) + 4 (data)",  # gigabytes, no time unit anywhere
    "tokens = 512 = 256(input) + 256(output)",  # a count split in two
    "mem = 10.5 = 8.0(model) + 2.5(data)",
])
def test_a_sum_with_no_time_unit_is_no_breakdown(line):
    """LABELED SYNTHETIC: `a = b(x) + c(y)` with no unit on the whole nor on every term: not stated as times."""
    from playbook.readers.stage_breakdown_text import StageBreakdown
    s = StageBreakdown()
    assert not s.feed(line) and s.summary() == []


@pytest.mark.parametrize("name", ["Model load", "Loading checkpoint", "ckpt read", "weights transfer",
                                  "data parallel sync", "data_parallel_allreduce", "param gather", "grad copy"])
def test_the_models_own_load_or_sync_is_not_the_input_side(name):
    from playbook.readers.stage_breakdown_text import side
    assert side(name) == "other"


def test_a_model_load_that_outweighs_inference_is_no_starvation(tmp_path):
    """LABELED SYNTHETIC: an inference script's one summary, loading the model 82% of it: startup, not batches."""
    d = _diagnose(tmp_path, "Model load: 45.2s, Inference: 10.1s, Total: 55.3s\n")
    assert d.verdict["id"] != "data_starvation"


def test_gpus_pending_at_a_runs_start_are_no_imbalance(tmp_path):
    """LABELED SYNTHETIC: a healthy run's first snapshot (1 of 4 GPUs up, 3 pending as its actors start), then every
    GPU busy: the stage asked for all of them, it is not too narrow."""
    start = _logging_snapshot("1/4", 100, 50, 1.0).replace("object store\n", "object store (pending: 3 GPU)\n", 1)
    assert _diagnose(tmp_path, start + _logging_snapshot("4/4", 400, 100, 1.0)).verdict["id"] != "pipeline_imbalance"


def test_the_older_bars_pending_actors_are_no_imbalance(tmp_path):
    """LABELED SYNTHETIC, the 2.2x-2.3x bars (no pending resources printed): 1 of 4 actors up, 3 pending."""
    text = ("Running: 2/16 CPU, 1/4 GPU, 56.0MB/1.0GB object_store_memory:  10%|█    | 1/10 [00:04<00:36, 4s/it]\n"
            "- MapBatches(Infer): 1 active, 40 queued, [cpu: 0.0, gpu: 1.0, objects: 8.0B], 4 actors (3 pending) "
            "[locality off]:  10%|▍| 1/10\n")
    assert _diagnose(tmp_path, text).verdict["id"] != "pipeline_imbalance"


def test_pending_gpus_after_the_newer_object_store_counts():
    """LABELED SYNTHETIC, the later logging_progress line: `object store (input=..., ...) (pending: 2 GPU)`."""
    from playbook.readers.ray_progress_text import RayProgress
    r = RayProgress()
    assert r.feed("Active & requested resources: 8/64 CPU, 2/8 GPU, 1.0GiB/10.0GiB object store (input=3, outputs=0, "
                  "prebuffered=0, dangling=0) (pending: 2 GPU)")
    assert r.summary()[0]["gpu_pending"] == 2


@pytest.mark.parametrize(("every", "count"), [(2000, 1000), (100, 10)])
def test_the_bracketed_count_not_the_steps_between_lines_divides_the_time(tmp_path, every, count):
    """LABELED SYNTHETIC: HugeCTR's line where the lines are `every` steps apart and the time covers `count` steps (an
    excerpt with every other line cut; a tool timing the last 10 of each 100): the time over the stated count."""
    times = [5.0, 5.1, 5.0, 6.0, 5.05]
    text = "".join(f"[HUGECTR][INFO]: Iter: {every * k} Time({count} iters): {t}s Loss: 0.12\n"
                   for k, t in enumerate(times, 1))
    assert _steps(tmp_path, text) == pytest.approx([t / count for t in times], rel=1e-6)


def test_a_line_that_is_no_breakdown_costs_no_counter_search(monkeypatch):
    """The step keyword's pattern is the costly part of a line (it made reading a 100k-line JSON log 2.5x slower): it
    runs only on a line the breakdown layouts already read, never on an ordinary metrics line."""
    from playbook.readers import stage_breakdown_text as sbt

    class Refuse:
        def search(self, *_):
            raise AssertionError("counter searched on a line that is no breakdown")

    monkeypatch.setattr(sbt, "KEYWORD", Refuse())
    monkeypatch.setattr(sbt, "EPOCH_WORD", Refuse())
    s = sbt.StageBreakdown()
    for line in ('{"loss": 0.31, "lr": 0.001, "time": 0.35s, "grad_norm": 1.2}', "rank0: loss: 0.3, mem: 12.5GB",
                 "acc = 0.91 (best 0.93) + 0.01", "tokens = 512 = 256(input) + 256(output)"):
        assert not s.feed(line)


def test_a_data_parallel_sync_that_outweighs_compute_is_no_starvation(tmp_path):
    """LABELED SYNTHETIC: a DDP user's breakdown, the gradient sync across ranks 37% of it: communication, no input."""
    text = "".join(f"forward: 2.0s, backward: 3.0s, data parallel sync: {c}s, total: {5 + c:.1f}s\n" for c in (3.0, 3.1))
    assert _diagnose(tmp_path, text).verdict["id"] != "data_starvation"


def test_a_second_bracketed_count_does_not_divide_the_first_time(tmp_path):
    """LABELED SYNTHETIC: a train window and an eval window on one line: each time over its own count."""
    times = [5.0, 5.1, 5.0, 6.0]
    text = "".join(f"Iter: {1000 * k} Time(1000 iters): {t}s Eval Time(100 iters): 1.2s Loss: 0.1\n"
                   for k, t in enumerate(times, 1))
    assert _steps(tmp_path, text) == pytest.approx([t / 1000 for t in times], rel=1e-6)


def test_a_long_run_is_judged_whole_not_by_its_first_snapshots():
    """LABELED SYNTHETIC: 3,000 snapshots, the first 1,000 with a GPU stage too narrow, the last 2,000 every GPU busy:
    a third of the run, below the rule's half (the reader keeps its snapshots spread over the whole run)."""
    from playbook.analysis import ray_progress
    from playbook.readers.ray_progress_text import RayProgress
    r = RayProgress()
    narrow, busy = _logging_snapshot("4/16", 1000, 300, 1.0), _logging_snapshot("16/16", 1000, 300, 1.0)
    for text in [narrow] * 1000 + [busy] * 2000:
        for line in text.splitlines():
            r.feed(line)
    snaps = r.summary()
    assert len(snaps) <= 2000 and sum(s["gpu_used"] == 4 for s in snaps) * 2 < len(snaps)
    out: list[dict] = []
    ray_progress.findings("run.log", snaps, out, lambda x: "high" if x >= 0.2 else ("moderate" if x >= 0.05 else None))
    assert out == []
