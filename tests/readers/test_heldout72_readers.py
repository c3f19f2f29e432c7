"""The readings round 72 added (tests/data/eval/heldout72/SOURCES.md), on inputs written apart from its files: the
devices a framework creates (TensorFlow 1.x / 2.x device lines and Device mapping, DirectML's adapter; an integrated
GPU by its name: readers/device_lines.py, analysis/device_use.py) and comparisons of configurations typed as lists
(readers/config_lists.py) with the cause an input pipeline's knob states (analysis/variant_runs.py)."""

from __future__ import annotations

import pytest

from playbook.analysis import variant_runs
from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.config_lists import ConfigLists
from playbook.readers.device_lines import DeviceLines, integrated


def _write(tmp_path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _lists(text: str) -> list[dict]:
    c = ConfigLists()
    for line in text.splitlines():
        c.feed(line)
    return (c.summary() or {}).get("tables") or []


@pytest.mark.parametrize(("name", "want"), [
    ("Intel(R) UHD Graphics 630", True), ("Intel(R) Iris(R) Xe Graphics", True), ("Intel(R) HD Graphics 520", True),
    ("AMD Radeon(TM) Graphics", True), ("AMD Radeon 680M Graphics", True), ("Radeon(TM) Vega 11 Graphics", True),
    ("AMD Radeon RX 7900 XTX", False), ("Intel(R) Arc(TM) A770 Graphics", False), ("NVIDIA GeForce RTX 4060", False),
    ("Tesla T4", False)])
def test_integrated_gpus_are_told_by_their_names(name, want):
    assert integrated(name) is want


def test_tensorflow2_created_devices_and_their_mapping_are_one_entry_per_gpu():
    d = DeviceLines()
    lines = [
        "I0000 00:00:1700000000.000000 1234 gpu_device.cc:2022] Created device /job:localhost/replica:0/task:0/"
        "device:GPU:0 with 21458 MB memory:  -> device: 0, name: NVIDIA RTX A5000, pci bus id: 0000:17:00.0, "
        "compute capability: 8.6",
        "I0000 00:00:1700000000.100000 1234 gpu_device.cc:2022] Created device /job:localhost/replica:0/task:0/"
        "device:GPU:1 with 9781 MB memory:  -> device: 1, name: NVIDIA GeForce RTX 3080, pci bus id: 0000:65:00.0, "
        "compute capability: 8.6",
        "/job:localhost/replica:0/task:0/device:GPU:1 -> device: 1, name: NVIDIA GeForce RTX 3080, pci bus id: "
        "0000:65:00.0, compute capability: 8.6",
    ]
    assert all(d.feed(x) for x in lines)
    made = d.summary()["created"]
    assert [(m["index"], m["name"], m["bus"], m["integrated"]) for m in made] == [
        (0, "NVIDIA RTX A5000", "0000:17:00.0", False), (1, "NVIDIA GeForce RTX 3080", "0000:65:00.0", False)]


def test_two_gpus_created_are_said_and_leave_the_verdict_to_the_data(tmp_path):
    path = _write(tmp_path, "tf1.log", (
        "2018-03-02 10:11:12.000001: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1195] Creating TensorFlow "
        "device (/device:GPU:0) -> (device: 0, name: Quadro P2000, pci bus id: 0000:3b:00.0, compute capability: 6.1)\n"
        "2018-03-02 10:11:12.000002: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1195] Creating TensorFlow "
        "device (/device:GPU:1) -> (device: 1, name: TITAN V, pci bus id: 0000:af:00.0, compute capability: 7.0)\n"))
    d = diagnose(read_paths([path]))
    assert d.verdict["id"] == "insufficient_data"
    said = [w for w in d.warnings if "creates devices on 2 GPUs" in w]
    assert said and "Quadro P2000" in said[0] and "TITAN V" in said[0]


def test_directml_on_the_integrated_gpu_beside_a_discrete_one_is_said(tmp_path):
    path = _write(tmp_path, "dml.log", (
        "2021-03-04 09:00:00.100000: I tensorflow/core/common_runtime/dml/dml_device_cache.cc:250] DirectML device "
        "enumeration: found 2 compatible adapters.\n"
        "2021-03-04 09:00:00.200000: I tensorflow/core/common_runtime/dml/dml_device_cache.cc:186] DirectML: "
        "creating device on adapter 0 (Intel(R) UHD Graphics 620)\n"))
    d = diagnose(read_paths([path]))
    said = [w for w in d.warnings if "integrated GPU" in w]
    assert said and "Intel(R) UHD Graphics 620" in said[0] and "found 2 compatible adapters" in said[0]
    assert "no discrete GPU beside it" not in said[0]  # a second adapter exists: it may be a discrete GPU


def test_a_heading_per_configuration_with_its_epochs_is_a_table_of_runs():
    t = _lists("results on my laptop\n## baseline\nEpoch 1 - 2.10 s/it\nEpoch 2 - 2.0 s/it\nEpoch 3 - 2.0 s/it\n"
               "\n**num_workers=8**\nEpoch 1 - 1.9 s/it\nEpoch 2 - 1.1 s/it\nEpoch 3 - 1.1 s/it\n")
    assert len(t) == 1 and t[0]["whole"] == "time per iteration"
    rows = t[0]["rows"]
    assert [r["label"] for r in rows] == ["baseline", "num_workers=8"]
    assert [r["whole_s"] for r in rows] == [2.0, 1.1]  # the steady epochs: the first pays the start-up
    assert [r["first_s"] for r in rows] == [2.1, 1.9]


def test_rates_become_seconds_and_one_line_configurations_read():
    t = _lists("epoch 0: 4 it/s\nepoch 1: 5 it/s\n")
    assert t == []  # one configuration is no comparison
    t = _lists("- 0 workers: ~120 s per epoch\n- 2 workers: 61 seconds each epoch\n- 6 workers: 2.5 min/epoch\n")
    assert [(r["label"], r["whole_s"]) for r in t[0]["rows"]] == [("0 workers", 120.0), ("2 workers", 61.0),
                                                                  ("6 workers", 150.0)]
    assert t[0]["whole"] == "time per epoch"


def test_a_block_in_another_kind_starts_another_table():
    t = _lists("-- a\nepoch 0: 10 it/s\n-- b\nepoch 0: 12 it/s\nA: 40 s per epoch\nB: 50 s per epoch\n")
    assert [tb["whole"] for tb in t] == ["time per iteration", "time per epoch"]


def _findings(tables: list[dict]) -> tuple[list[dict], list[str]]:
    out, notes = [], []
    variant_runs.findings("x.txt", {"tables": tables}, out, lambda share: "likely" if share >= 0.05 else None, notes)
    return out, notes


def test_a_fix_named_for_the_loader_states_data_starvation_and_the_per_epoch_restart():
    t = _lists("-- as is\nepoch 0: 3.0 it/s\nepoch 1: 3.1 it/s\nepoch 2: 3.1 it/s\n"
               "-- pin_memory + persistent_workers\nepoch 0: 3.05 it/s\nepoch 1: 3.8 it/s\nepoch 2: 3.8 it/s\n")
    out, _ = _findings(t)
    assert [f["hypothesis"] for f in out] == ["data_starvation"]  # 18% apart: under SLOW_GAP, but separated
    assert "each epoch's start" in out[0]["evidence"]


def test_configurations_whose_names_state_no_loader_knob_stay_a_note():
    t = _lists("-- fp32\nepoch 0: 2.0 it/s\nepoch 1: 2.0 it/s\n-- bf16\nepoch 0: 3.5 it/s\nepoch 1: 3.5 it/s\n")
    out, notes = _findings(t)
    assert out == [] and notes and "says no cause" in notes[0]


def test_overlapping_epochs_under_the_gap_are_no_finding():
    t = _lists("-- as is\nepoch 0: 3.0 it/s\nepoch 1: 3.1 it/s\nepoch 2: 3.5 it/s\n"
               "-- persistent_workers\nepoch 0: 3.0 it/s\nepoch 1: 3.4 it/s\nepoch 2: 3.6 it/s\n")
    out, notes = _findings(t)
    assert out == [] and notes == []


def test_a_pipe_table_of_worker_counts_states_data_starvation(tmp_path):
    path = _write(tmp_path, "workers.md", "| num_workers | epoch time (s) |\n| --- | --- |\n| 0 | 212 |\n| 4 | 95 |\n"
                                           "| 8 | 90 |\n")
    d = diagnose(read_paths([path]))
    assert d.verdict["id"] == "data_starvation"


def test_plain_workers_without_a_zero_count_are_no_loader_knob():
    # a parameter-server job's workers: no row runs with zero of them, so `workers` names no input pipeline
    t = _lists("2 workers: 300 s per epoch\n4 workers: 160 s per epoch\n8 workers: 95 s per epoch\n")
    out, notes = _findings(t)
    assert out == [] and notes
    t = _lists("0 workers: 300 s per epoch\n4 workers: 160 s per epoch\n")
    out, _ = _findings(t)
    assert [f["hypothesis"] for f in out] == ["data_starvation"]


def test_epoch_times_under_no_heading_are_one_runs_epochs_not_a_list_of_configurations(tmp_path):
    """`epoch N: 45.2 s` lines alone (no configuration heading above them) are a run's epoch times: the step-log
    grammar reads them (the typed lists took them and read nothing: a 2.7x slow epoch went unread)."""
    times = [45.2, 44.8, 45.1, 120.5, 45.0, 44.9, 45.3, 44.7]
    path = tmp_path / "epochs.log"
    path.write_text("".join(f"epoch {k + 1}: {t} s\n" for k, t in enumerate(times)))
    steps = read_paths([str(path)]).steps
    assert sorted(steps["duration_s"].round(1).tolist()) == sorted(times)
