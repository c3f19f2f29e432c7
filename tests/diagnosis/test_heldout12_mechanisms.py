"""The mechanisms the twelfth held-out round (tests/data/eval/heldout12/SOURCES.md) asked for, on inputs written here
(LABELED SYNTHETIC), apart from the round's own files:

- nvidia-smi's `name` column is read (Bundle.meta[GPU_MODELS]) and a GPU's clock and power are judged against its
  own part only (GpuSeries.parts): a box of A100s and H100s each at its own clock is not throttled, and the output
  says the box mixes models;
- some GPUs spinning (busy at a fraction of their working power) while the others work, or sit idle, at the same
  moments are waiting for those others: collective_straggler, naming the ones waited for (attribution._waiting_for);
  every GPU spinning stays the transport's (link_degradation);
- an nvidia-smi error line that says the GPU is lost is a gpu_lost event (hardware_fault) — unless every GPU reports
  again after it (a transient error stays gpu_error).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.model import schema
from playbook.readers import read_paths

T0 = datetime(2026, 3, 2, 8, 0, 0)
LOST = "Unable to determine the device handle for GPU 00000000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU"


def _stamp(k: int, g: int) -> str:
    t = T0 + timedelta(seconds=k, milliseconds=3 * g)
    return f"{t:%Y/%m/%d %H:%M:%S}.{t.microsecond // 1000:03d}"


def _log(path, gpus: list[dict], polls: int = 240, seed: int = 0, named: bool = True) -> str:
    """An `nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,clocks.sm,power.draw,power.limit` log at
    1 Hz; each GPU a dict of name, util, mhz, watts, limit (means; small noise drawn here)."""
    rng = np.random.default_rng(seed)
    head = "timestamp, index, " + ("name, " if named else "") + \
        "utilization.gpu [%], clocks.current.sm [MHz], power.draw [W], power.limit [W]"
    rows = [head]
    for k in range(polls):
        for g, gpu in enumerate(gpus):
            name = f"{gpu['name']}, " if named else ""
            rows.append(f"{_stamp(k, g)}, {g}, {name}{int(np.clip(gpu['util'] + rng.normal(0, 1.5), 0, 100))} %, "
                        f"{int(gpu['mhz'] + rng.normal(0, 10))} MHz, {gpu['watts'] + rng.normal(0, 4):.2f} W, "
                        f"{gpu['limit']:.2f} W")
    path.write_text("\n".join(rows) + "\n")
    return str(path)


A100 = {"name": "NVIDIA A100-SXM4-80GB", "util": 97, "mhz": 1410, "watts": 370, "limit": 400}
H100 = {"name": "NVIDIA H100 80GB HBM3", "util": 97, "mhz": 1980, "watts": 640, "limit": 700}


def test_each_gpu_is_judged_against_its_own_part_and_the_mix_is_said(tmp_path):
    path = _log(tmp_path / "mixed.csv", [A100, A100, H100, H100])
    bundle = read_paths([path])
    assert sorted(bundle.meta[schema.GPU_MODELS].values()) == [A100["name"]] * 2 + [H100["name"]] * 2
    d = diagnose(bundle)
    # the A100s' 1410 MHz is their own part's clock, not 29% below the H100s'
    assert {g["status"] for g in d.gpus} == {"ok"}
    assert d.verdict["id"] == ids.HEALTHY
    assert {g["model"] for g in d.gpus} == {A100["name"], H100["name"]}
    # without the name column the two parts cannot be told apart (the clocks are read as one part's)
    blind = diagnose(read_paths([_log(tmp_path / "unnamed.csv", [A100, A100, H100, H100], named=False)]))
    assert "model" not in blind.gpus[0]


def test_the_summary_and_the_gpu_table_say_the_box_mixes_models(tmp_path):
    from playbook.commands import info
    from playbook.commands.diagnose import _gpu_section

    path = _log(tmp_path / "mixed.csv", [A100, H100], polls=30)
    assert "the box mixes models: 1× NVIDIA A100-SXM4-80GB, 1× NVIDIA H100 80GB HBM3" in \
        info.render(info.summarize(read_paths([path])))
    assert "the box mixes models" in _gpu_section(diagnose(read_paths([path])))[0]


def test_gpus_spinning_while_another_works_wait_for_it(tmp_path):
    spin = {"name": "NVIDIA GeForce RTX 4090", "util": 96, "mhz": 2600, "watts": 70, "limit": 450}
    work = {"name": "NVIDIA GeForce RTX 3090", "util": 96, "mhz": 1800, "watts": 320, "limit": 350}
    d = diagnose(read_paths([_log(tmp_path / "mixed_tp.csv", [spin, work])]))
    top = d.hypotheses[0]
    assert d.verdict["id"] == ids.COLLECTIVE_STRAGGLER
    assert top["names"] == ["mixed_tp:1"]  # the GPU waited for, not the one spinning
    assert any("the box mixes models" in e and "RTX 3090 sets the pace" in e for e in top["evidence"])
    # one part: the same reading, no word of a mix
    same = dict(work, name="NVIDIA GeForce RTX 3090", watts=60)
    d = diagnose(read_paths([_log(tmp_path / "one_part.csv", [same, work, work, work])]))
    assert d.verdict["id"] == ids.COLLECTIVE_STRAGGLER and d.hypotheses[0]["names"][0].endswith(":1")
    assert not any("mixes models" in e for e in d.hypotheses[0]["evidence"])


def test_gpus_spinning_beside_an_idle_one_wait_for_it_and_all_spinning_is_the_transport(tmp_path):
    gpu = {"name": "Tesla V100-SXM2-32GB", "util": 100, "mhz": 1530, "watts": 65, "limit": 300}
    idle = dict(gpu, util=0, mhz=135, watts=40)
    d = diagnose(read_paths([_log(tmp_path / "hang.csv", [gpu, gpu, gpu, idle])]))
    assert d.verdict["id"] == ids.COLLECTIVE_STRAGGLER
    assert d.hypotheses[0]["names"] == ["hang:3"]
    every = diagnose(read_paths([_log(tmp_path / "all_spin.csv", [gpu] * 4)]))
    assert every.verdict["id"] == ids.LINK_DEGRADATION


def _lost_log(path, back: bool) -> str:
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W]"]
    for k in range(120):
        rows.append(f"{_stamp(k, 0)}, 0, 98 %, 290.00 W")
        if k < 60 or back:
            rows.append(f"{_stamp(k, 1)}, 1, 97 %, 288.00 W")
        if k == 60 or (not back and k > 60):
            rows.append(LOST)
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_an_nvidia_smi_line_saying_the_gpu_is_lost_is_a_lost_gpu(tmp_path):
    b = read_paths([_lost_log(tmp_path / "lost.csv", back=False)])
    assert set(b.events["kind"]) == {"gpu_lost"}
    assert diagnose(b).verdict["id"] == ids.HARDWARE_FAULT
    # the same line once, and every GPU reports again after it: a transient error, not a loss
    b = read_paths([_lost_log(tmp_path / "transient.csv", back=True)])
    assert set(b.events["kind"]) == {"gpu_error"}
