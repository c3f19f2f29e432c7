"""An event kind as common before a slow stretch as inside it is no evidence for the stretch, however sparse: an
evaluation after every epoch, logged once per four step lines, read "periodic_stall (confirmed): eval events at 28
of 56 steps" for a run whose epochs all slowed from epoch 7 on (kubeflow#68's shape with per-line step times).
Evaluations that start with the slowdown still name it. LABELED SYNTHETIC logs."""

from __future__ import annotations

import numpy as np

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def _log(path, eval_from: int) -> None:
    rng = np.random.default_rng(0)
    lines = []
    for e in range(21):
        for b in (20, 40, 60, 80):
            t = 0.3 * (1 + 0.01 * rng.standard_normal()) * (1.73 if e >= 7 else 1.0)
            lines.append(f"INFO:root:Epoch[{e}] Batch [{b}]\tTime: {t:.4f} s\taccuracy=0.5")
        lines.append(f"INFO:root:Epoch[{e}] Train-accuracy=0.3")
        if e >= eval_from:
            lines.append(f"INFO:root:Epoch[{e}] Validation-accuracy=0.31")
    path.write_text("\n".join(lines) + "\n")


def test_an_evaluation_every_epoch_does_not_explain_a_slow_stretch(tmp_path):
    _log(tmp_path / "train.log", eval_from=0)
    v = diagnose(read_paths([tmp_path / "train.log"])).verdict
    assert v["id"] == ids.UNEXPLAINED_SLOWDOWN, v["sentence"]
    assert v["lost_share"] > 0.25


def test_evaluations_that_start_with_the_stretch_name_it(tmp_path):
    _log(tmp_path / "train.log", eval_from=7)
    v = diagnose(read_paths([tmp_path / "train.log"])).verdict
    assert v["id"] == ids.PERIODIC_STALL, v["sentence"]
