"""Labelled rates compared across systems or settings, one line each (readers/variant_table.py): a run of two or
more `<label>: <number> <work unit> per second` lines is a table of runs whose whole time is the seconds per unit of
work. Written apart from the held-out file (tests/data/eval/heldout74, two clusters' batches per second), in other
wordings users paste: images/sec, samples per second, it/s, a single line, a label repeated over time, mixed units;
the numbers are made up (LABELED SYNTHETIC)."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.variant_table import VariantTable


def _read(text: str):
    t = VariantTable()
    taken = [t.feed(line) for line in text.strip("\n").splitlines()]
    return t.summary(), taken


def test_two_storage_backends_in_images_per_sec():
    s, taken = _read("""
Throughput on 4x A100, same job:
local NVMe: 2450.5 images/sec
NFS home: 612.0 images/sec
""")
    (table,) = s["tables"]
    assert table["settings"] == ["run"] and table["whole"] == "seconds per image" and table["line"] == 2
    assert [r["label"] for r in table["rows"]] == ["local NVMe", "NFS home"]
    assert table["rows"][1]["whole_s"] == pytest.approx(1 / 612.0)
    assert taken == [False, False, True]  # the run's first line stays free for the other scanners


@pytest.mark.parametrize("lines", [
    "s3 streaming: 850 samples per second\nlocal copy: 3100 samples per second",
    "gcsfuse:   3.1 it/s\nlocal ssd:  9.8 it/s\n",
    "Lustre: 12 tokens/s\nGPFS: 40 tok/s",  # one work unit in two spellings
])
def test_other_wordings_of_a_rate(lines):
    s, _ = _read(lines)
    (table,) = s["tables"]
    assert len(table["rows"]) == 2 and table["rows"][0]["whole_s"] > table["rows"][1]["whole_s"]


@pytest.mark.parametrize("lines", [
    "throughput: 812.4 samples/s",  # one line: nothing to compare
    "throughput: 812.4 samples/s\nthroughput: 790.1 samples/s\nthroughput: 805.0 samples/s",  # a metric over time
    "fast disk: 900 images/s\nslow disk: 30 batches/s",  # two work units: not comparable
    "epoch 3: 812.4 samples/s, loss 0.41\nepoch 4: 790.1 samples/s, loss 0.39",  # more than a rate on the line
    "epoch 0: 7.45 it/s\nepoch 1: 7.6 it/s\nepoch 2: 7.6 it/s",  # a counter in the label: one run over time
    "Step 100: 3.1 it/s\nStep 200: 3.2 it/s",
])
def test_what_is_no_table_of_rates(lines):
    s, taken = _read(lines)
    assert s is None and not any(taken)  # nothing read, nothing taken from the other scanners


def test_the_slower_run_is_stated_beside_not_enough_data(tmp_path):
    p = tmp_path / "bench.txt"
    p.write_text("dataset on EFS: 145 samples/s\ndataset on instance store: 1020 samples/s\n")
    d = diagnose(read_paths([str(p)]))
    assert d.verdict["id"] == "insufficient_data"
    assert "run=dataset on EFS takes" in d.verdict["sentence"] and "seconds per sample" in d.verdict["sentence"]
