"""The fifty-fifth held-out round (tests/data/eval/heldout55/SOURCES.md): image diffusion and vision runs as real
threads show them — a ComfyUI SDXL run loaded in lowvram mode, a ComfyUI video model loaded partially (the reporter's
good run), an ImageNet run waiting 95 % of its time on data, one mmdet window 8.3 s/iter with no data wait. The
ComfyUI load lines are read as placements since readers/model_placement (tested apart: tests/readers/
test_resident_weights.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.model import schema
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout55"

ACCEPTED = {
    "comfyui4164_sdxl_lowvram_1074mb.log": (ids.MEMORY_PRESSURE, ids.INSUFFICIENT_DATA),
    "comfyui5737_mochi_partial_load_expected.log": (ids.HEALTHY, ids.INSUFFICIENT_DATA),
    "nasbench15_simplenet_imagenet_data196s.log": (ids.DATA_STARVATION,),
    "srcn3d2_mmdet_8s_iter_cpu_overload.log": (ids.INSUFFICIENT_DATA, ids.SLOWER_COMPUTE),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_no_rank_or_gpu_is_named(name):
    assert diagnose(read_paths([str(HERE / name)])).verdict["names"] == []


@pytest.mark.parametrize(("name", "model", "mib"), [("comfyui4164_sdxl_lowvram_1074mb.log", "SDXL", 1074.6),
                                                    ("comfyui5737_mochi_partial_load_expected.log", "GenmoMochi",
                                                     11653.3)])
def test_the_partial_load_is_read_with_its_model_and_resident_mib(name, model, mib):
    bundle = read_paths([str(HERE / name)])
    served = [v for k, v in bundle.meta.items() if k.startswith(schema.SERVING)]
    places = [p for s in served for p in s.get("placement", [])]
    assert {"model": model, "cpu_share": None, "how": "resident", "gpu_mib": mib} in places


def test_the_data_wait_is_costed_from_the_running_means():
    d = diagnose(read_paths([str(HERE / "nasbench15_simplenet_imagenet_data196s.log")]))
    assert d.verdict["id"] == ids.DATA_STARVATION and "2364 s of 2475 s" in d.verdict["sentence"]
