"""ComfyUI's model-load lines read as placements (readers/model_placement.py): the MiB a model keeps on the GPU, a
partial load with its share unstated (so no losing finding follows from it alone). Every input here is written apart
from the round-55 files (LABELED SYNTHETIC: other models, other numbers, both ComfyUI wordings, prose that must not
match)."""

from __future__ import annotations

from playbook.analysis.serving_capacity import offloaded
from playbook.knowledge import ids
from playbook.readers.model_placement import Placements, describe


def _read(lines):
    p = Placements()
    fed = [p.feed(line) for line in lines]
    return p.summary(), fed


def test_the_2024_wording_names_the_model_and_its_resident_mib():
    recs, fed = _read(["Requested to load Flux", "Loading 1 new model",
                       "loaded partially 9943.83151171875 9943.367309570312 0"])
    assert fed == [True, False, True]
    assert recs == [{"model": "Flux", "cpu_share": None, "how": "resident", "gpu_mib": 9943.4}]
    assert "Flux: partly on the GPU (9943.4 MiB kept there" in describe(recs)


def test_a_lowvram_budget_and_a_complete_load_with_an_unlimited_budget():
    recs, _ = _read(["Requested to load WanTEModel", "loaded completely 9.5367431640625e+25 6419.477203369141 True",
                     "Requested to load WAN21", "loading in lowvram mode 3021.75"])
    assert [(r["model"], r["cpu_share"], r["gpu_mib"]) for r in recs] == [("WanTEModel", 0.0, 6419.5),
                                                                          ("WAN21", None, 3021.8)]
    assert describe(recs).startswith("model placement: WanTEModel: fully on the GPU (6419.5 MiB)")


def test_the_later_semicolon_wording_states_the_offloaded_share():
    recs, _ = _read(["2026-01-02T10:00:00.1 - Requested to load QwenImage",
                     "2026-01-02T10:00:04.9 - loaded partially; 5200.00 MB usable, 5120.00 MB loaded, 15360.00 MB "
                     "offloaded, 80.00 MB buffer reserved, lowvram patches: 0",
                     "2026-01-02T10:01:00.0 - Requested to load AutoencoderKL",
                     "2026-01-02T10:01:00.2 - loaded completely;  159.56 MB loaded, full load: True"])
    assert recs == [{"model": "QwenImage", "cpu_share": 0.75, "how": "bytes", "gpu_mib": 5120.0},
                    {"model": "AutoencoderKL", "cpu_share": 0.0, "how": "resident", "gpu_mib": 159.6}]
    assert offloaded(recs)["hypothesis"] == ids.MEMORY_PRESSURE  # a stated share: 75% of the bytes in host memory


def test_prose_about_loading_is_no_placement():
    recs, fed = _read(["the model loaded partially because the card has 8 GB",
                       "I think it is loading in lowvram mode for some reason",
                       "loaded completely fine yesterday"])
    assert recs == [] and fed == [False, False, False]


def test_an_unstated_share_raises_no_finding_but_a_stated_one_still_does():
    partial, _ = _read(["Requested to load SDXL", "loading in lowvram mode 1500.0"])
    assert offloaded(partial) is None  # how much of the model is on the host is not stated
    stated, _ = _read(["NAME          ID              SIZE     PROCESSOR          UNTIL",
                       "llama3:70b    0123456789ab    42 GB    38%/62% CPU/GPU    4 minutes from now"])
    assert offloaded(stated) is not None
