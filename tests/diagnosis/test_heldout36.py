"""The thirty-sixth held-out round (tests/data/eval/heldout36/SOURCES.md): real profiler summaries of slow (and one
healthy) GPU loops with the cause stated by their source — a torch.profiler table of a data-bound loop, `nsys stats`
of an eager loop of tiny kernels (its kernel table cut) and the same loop's torch.profiler table, a cProfile listing held in `.item()`, nsys summaries retyped
as Markdown tables, and a blog's two torch.profiler total lines (overhead-bound, then compute-bound). Each file's
verdict (one of the accepted ids) and that none names a rank or GPU (the fixes are tested apart:
tests/readers/test_heldout36_readers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout36"

ACCEPTED = {
    "playground_cuda_data_mode_profile.txt": ("data_starvation",),
    "playground_cuda_eager_nsys_stats.txt": ("launch_bound",),
    "playground_cuda_eager_mode_profile.txt": ("launch_bound",),
    "exllamav2_455_item_cprofile.txt": ("host_sync", "h2d_copy"),
    "pangeo_ncar9_unet_nsys_markdown.txt": ("data_starvation", "insufficient_data"),
    "hf_blog_profiler_matmul64_totals.txt": ("launch_bound", "insufficient_data"),
    "hf_blog_profiler_matmul4096_totals.txt": ("healthy", "insufficient_data"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_one_process_on_one_gpu_names_no_one(name):
    assert diagnose(read_paths([str(HERE / name)])).hypotheses[0]["names"] == []


def test_the_cut_kernel_table_and_the_median_launch_give_the_bound():
    d = diagnose(read_paths([str(HERE / "playground_cuda_eager_nsys_stats.txt")]))
    text = " ".join(d.hypotheses[0]["evidence"])
    assert "3,276 kernel launches cost 5.4 µs of CPU time each" in text and "at most 51% busy" in text
