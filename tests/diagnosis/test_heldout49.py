"""The forty-ninth held-out round (tests/data/eval/heldout49/SOURCES.md): what input-pipeline tools and frameworks
print about a run, pasted in public threads — two TensorFlow Profiler "HIGHLY input-bound" verdicts, PyTorch
DataLoader worker warnings from a run that froze and from CI tests that lost nothing, Lightning's few-workers warning
in a bug report, and Ray Data stats of a batch inference whose blocked time is the pipeline's own execution. Each
file's verdict (one of the accepted ids); none names a rank (the fixes are tested apart:
tests/readers/test_input_pipeline_text.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout49"

ACCEPTED = {
    "tfprof_power8_highly_input_bound_68pct.txt": ("data_starvation",),
    "tfprof_kernel_mnist_highly_input_bound_77pct.txt": ("data_starvation",),
    "mteb1331_dataloader_104_workers_froze.log": ("data_starvation", "insufficient_data"),
    "ignite1558_dataloader_worker_warning_ci_tests.log": ("healthy", "insufficient_data"),
    "pykale448_lightning_val_dataloader_few_workers.log": ("data_starvation", "insufficient_data"),
    "ray_docs_resnet18_batch_inference_stats.txt": ("healthy", "insufficient_data"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_no_rank_is_named(name):
    assert not diagnose(read_paths([str(HERE / name)])).hypotheses[0]["names"]


@pytest.mark.parametrize(("name", "share"), [("tfprof_power8_highly_input_bound_68pct.txt", 0.688),
                                             ("tfprof_kernel_mnist_highly_input_bound_77pct.txt", 0.774)])
def test_the_profilers_share_is_the_cost(name, share):
    top = diagnose(read_paths([str(HERE / name)])).hypotheses[0]
    assert top["id"] == "data_starvation" and f"{share:.1%}" in " ".join(top["evidence"])


@pytest.mark.parametrize(("name", "said"), [("mteb1331_dataloader_104_workers_froze.log", "104 worker processes"),
                                            ("pykale448_lightning_val_dataloader_few_workers.log", "val_dataloader"),
                                            ("ray_docs_resnet18_batch_inference_stats.txt",
                                             "MapBatches(ResnetModel)")])
def test_the_caution_is_said(name, said):
    assert any(said in w for w in diagnose(read_paths([str(HERE / name)])).warnings)


def test_the_not_enough_data_verdict_says_what_was_read():
    """Not "the inputs hold nothing usable": a loader warning was read, and the verdict says so."""
    d = diagnose(read_paths([str(HERE / "mteb1331_dataloader_104_workers_froze.log")]))
    assert d.verdict["id"] == "insufficient_data"
    assert "the inputs hold input-pipeline tools' statements" in d.verdict["sentence"]
