"""The readings round 71 added (tests/data/eval/heldout71/SOURCES.md), on inputs written apart from its files:
GPU telemetry as a markdown pipe table (readers/pipe_table.py) and Windows Task Manager's dedicated / shared GPU
memory lines (readers/model_placement.py, how "shared" → analysis/serving_capacity.streamed)."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.model import schema
from playbook.readers import detect, pipe_table, read_paths
from playbook.readers.model_placement import Placements


def _write(tmp_path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


PIPE = """Samples from our sweep (2 Hz):

| t | GPU 1 | util (GPU1) | power [gpu 1] | SM clock (GPU1) |
| --- | --- | --- | --- | --- |
| 0.5 s | 41 C | 97% | 251/300 W | 1980 MHz |
| 1.0 s | 44 C | 98% | 298/300 W | 1740 MHz |
| 1.5 s | `HW slowdown` | 99% | 300/300 W | 900 MHz |
| 2.0 s | — | 99% | n/a | 885 MHz |
"""


def test_a_pipe_table_of_gpu_readings_is_telemetry(tmp_path):
    path = _write(tmp_path, "sweep.md", PIPE)
    assert detect.detect(path) == "pipe_table"
    t = read_paths([path]).telemetry
    assert set(t["gpu"]) == {1}  # the GPU named in brackets and alone, not a unit
    assert t["util_pct"].tolist() == [97, 98, 99, 99]
    assert t["temp_c"].tolist()[:2] == [41, 44]  # `GPU 1` alone: its cells' unit (C) names the reading
    assert t["power_w"].tolist()[:3] == [251, 298, 300] and t["power_limit_w"].tolist()[:3] == [300, 300, 300]
    assert t["sm_clock_mhz"].tolist() == [1980, 1740, 900, 885]
    assert (t["time"].diff().dropna().dt.total_seconds() == 0.5).all()  # `0.5 s` relative seconds
    reasons = t["throttle_reasons"].tolist()
    assert reasons[2] == schema.THROTTLE_BITS["hw_slowdown"] and all(r != r for r in reasons[:2])  # NaN elsewhere


@pytest.mark.parametrize(("cell", "bit"), [("thermal slowdown active", "hw_thermal"),
                                           ("**power brake**", "hw_power_brake"),
                                           ("throttled", "hw_slowdown")])
def test_a_cell_of_slowdown_words_sets_the_gpus_reason(cell, bit):
    assert pipe_table._flag(cell) == schema.THROTTLE_BITS[bit]
    assert pipe_table._flag("86 °C") == 0 and pipe_table._flag("") == 0


def test_a_table_of_runs_or_without_a_rule_row_is_not_telemetry():
    runs = "| branch | commit hash | 1 replica | 100 replicas |\n| --- | --- | --- | --- |\n| main | 0a5f | 145 | 91 |\n"
    assert not pipe_table.sniff(runs)
    no_rule = "| t | GPU0 | GPU1 |\n| 1 s | 50 C | 60 C |\n| 2 s | 51 C | 61 C |\n"
    assert not pipe_table.sniff(no_rule)


def test_a_thermal_flag_in_one_gpus_column_names_that_gpu(tmp_path):
    text = ("| elapsed | GPU0 | GPU1 | SM clock (GPU0) | SM clock (GPU1) | util (GPU0) | util (GPU1) |\n"
            "|---:|---:|---:|---:|---:|---:|---:|\n"
            + "".join(f"| {s} s | {a} | {b} °C | {c} MHz | 1890 MHz | 99% | 98% |\n" for s, a, b, c in
                      [(10, "80 °C", 70, 1800), (20, "86 °C", 71, 1500), (30, "thermal slowdown", 71, 1100),
                       (40, "thermal slowdown", 72, 1000)]))
    d = diagnose(read_paths([_write(tmp_path, "ramp.md", text)]))
    assert d.verdict["id"] == "throttling"
    assert [n.rsplit(":", 1)[-1] for n in d.hypotheses[0]["names"]] == ["0"]


def _pane(lines: list[str]) -> list[dict]:
    p = Placements()
    for line in lines:
        p.feed(line)
    return p.summary()


def test_shared_gpu_memory_beside_a_full_dedicated_memory_is_a_spill():
    recs = _pane(["Dedicated GPU memory: 11.8/12.0 GB", "Shared GPU memory: 3.2 GB/31.9 GB"])
    assert recs == [{"model": None, "cpu_share": None, "how": "shared", "dedicated_gib": [11.8, 12.0],
                     "shared_gib": 3.2}]
    assert _pane(["Dedicated GPU memory 3.1/8.0GB", "Shared GPU memory 0.9/7.9GB"]) == []  # room left: no spill
    assert _pane(["Dedicated GPU memory 7.9/8.0GB", "Shared GPU memory 0.1/7.9GB"]) == []  # the desktop's share
    assert _pane(["Shared GPU memory 4.0/15.9GB"]) == []  # the dedicated memory unstated


def test_a_spill_beside_one_step_time_reads_as_memory_pressure(tmp_path):
    text = ("epoch 1: still 120s/it on my 3070\n\nDedicated GPU memory 7.8/8.0 GB\nShared GPU memory 2.6/15.9 GB\n")
    d = diagnose(read_paths([_write(tmp_path, "report.txt", text)]))
    assert d.verdict["id"] == "memory_pressure"
    only = diagnose(read_paths([_write(tmp_path, "pane.txt", text.split("\n", 2)[2])]))
    assert only.verdict["id"] == "memory_pressure"
    roomy = text.replace("7.8/8.0", "5.0/8.0")
    assert diagnose(read_paths([_write(tmp_path, "roomy.txt", roomy)])).verdict["id"] != "memory_pressure"


def test_an_actor_prefix_names_the_rank_and_the_time_follows(tmp_path):
    text = ("[1] [TrainerActor-1/2] 2025-11-02 09:00:01 INFO step 5 done\n"
            "[0] [TrainerActor-0/2] 2025-11-02 09:00:02 INFO [GC] Performing periodic GC collection took 0.25 seconds\n"
            "[0] [PolicyWorker-0/2] 2025-11-02 09:00:03 INFO [GC] Performing periodic GC collection took 0.02 seconds\n")
    ev = read_paths([_write(tmp_path, "actors.log", text)]).events
    gc = ev[ev["kind"] == "gc"]
    assert gc["time"].dt.strftime("%H:%M:%S").tolist() == ["09:00:02", "09:00:03"]
    assert gc["duration_s"].tolist() == [0.25, 0.02]
    # the first mesh keeps its stated ranks; another mesh's actor 0 is another process, not rank 0 again
    assert gc["rank"].iloc[0] == 0 and gc["rank"].iloc[1] not in (0, 1)


def test_a_long_pipe_table_keeps_its_times_and_gpu_index(tmp_path):
    text = ("| timestamp | GPU | utilization (%) | power (W) |\n|---|---|---|---|\n"
            "| 2025-03-01 10:00:00 | 0 | 97 % | 280 W |\n| 2025-03-01 10:00:00 | 1 | 12 % | 90 W |\n"
            "| 2025-03-01 10:00:01 | 0 | 98 % | 281 W |\n| 2025-03-01 10:00:01 | 1 | 10 % | 88 W |\n")
    t = read_paths([_write(tmp_path, "long.md", text)]).telemetry.sort_values(["gpu", "time"])
    assert t["gpu"].tolist() == [0, 0, 1, 1] and t["util_pct"].tolist() == [97, 98, 12, 10]
    assert t["time"].dt.strftime("%Y-%m-%d %H:%M:%S").tolist()[:2] == ["2025-03-01 10:00:00", "2025-03-01 10:00:01"]
