"""The seventy-fourth held-out round (tests/data/eval/heldout74/SOURCES.md): real excerpts on GPU time lost to where
the training data lives — two clusters' batches per second where Lustre was blamed and the workers lacked CPUs, a
training log whose data-loading column dominates (random reads of an on-disk HDF5 file), a 21-minute gap while every
image was read from an HDF5 file before training, and a PR's measurement that local NVMe was never the bottleneck.
Each file's verdict (one of the accepted ids) and what it reads (the fix is tested apart:
tests/readers/test_rate_lines.py)."""

from __future__ import annotations

from pathlib import Path

from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout74"

ACCEPTED = {
    "caney44_frontier_lustre_vs_prism_batches.txt": ("data_starvation", "unexplained_slowdown", "insufficient_data"),
    "clevr_iep10_data_load_column.log": ("data_starvation",),
    "sleap_nn486_hdf5_check_memory_gap.log": ("data_starvation", "insufficient_data"),
    "rfdetr1396_local_nvme_not_io_bound.txt": ("healthy", "insufficient_data"),
}
NOT_YET = {
    "clevr_iep10_data_load_column.log": "refused as a headerless nvidia-smi CSV: nvidia_smi.sniff takes rows of "
    "`2017-06-11-22:43:00] 1, 8.812, 30.340, 3.445` for query rows (one odd cell allowed), and the columns are named "
    "only by the reporter's sentence after them (`The second column is the actual batch train time and third column "
    "is the data loading time`); readers/nvidia_smi is the lead's this session",
    "rfdetr1396_local_nvme_not_io_bound.txt": "refused: the measurement is prose (`iowait never exceeded 0.91%`, "
    "`~1,230 img/s against the ~210 the loader consumes`); no reader takes figures from sentences",
}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def test_the_slower_cluster_is_named_beside_not_enough_data():
    d = diagnose(read_paths([str(HERE / "caney44_frontier_lustre_vs_prism_batches.txt")]))
    assert d.verdict["id"] == "insufficient_data"
    sentence = d.verdict["sentence"]
    assert "run=Frontier takes 5.26316 s against 0.405022 s with run=nccs prism cluster (13.0x" in sentence
    assert "92% of its time; seconds per batch)" in sentence  # the rates' unit: 1 / 0.19 s per batch
