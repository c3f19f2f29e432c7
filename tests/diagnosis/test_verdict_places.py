"""Where the verdict says the loss sits: a level held all run long names no window (its one window is the whole
span), drops name theirs. Input written here (LABELED SYNTHETIC): one GPU's nvidia-smi CSV."""

from __future__ import annotations

import numpy as np

from playbook.diagnosis import diagnose
from playbook.readers import read_paths


def _one_gpu(path, util):
    t0 = np.datetime64("2026-01-05T10:00:00")
    rows = [f"{(t0 + np.timedelta64(i, 's')).astype(str).replace('-', '/').replace('T', ' ')}.000, 0, {u:.0f} %, "
            "20000 MiB" for i, u in enumerate(util)]
    path.write_text("timestamp, index, utilization.gpu [%], memory.used [MiB]\n" + "\n".join(rows) + "\n")
    return diagnose(read_paths([str(path)])).verdict["sentence"]


def test_a_level_held_all_run_names_no_window_and_drops_do(tmp_path):
    rng = np.random.default_rng(3)
    steady = 30 + rng.normal(0, 1, 1200)  # 20 min at a busy level of 30 %: it read "… is 30% on csv:0; at 0–1200 s"
    sentence = _one_gpu(tmp_path / "steady.csv", steady)
    assert "busy level is 31%" in sentence and " at 0–" not in sentence, sentence
    drops = 95 + rng.normal(0, 1, 1200)
    drops[300:360] = drops[800:860] = 0  # two one-minute drops
    sentence = _one_gpu(tmp_path / "drops.csv", drops)
    assert "300–360 s" in sentence and "800–860 s" in sentence, sentence


def test_a_recording_that_outlives_the_job_says_so(tmp_path):
    """40 min of work at ~90 % then 2 h idle with the memory let go: the tail is not counted and the diagnosis says
    so (the page showed 409.5 min read beside '5130 GPU-s' with no word of the cut)."""
    t0 = np.datetime64("2026-01-05T10:00:00")
    rows = []
    for i in range(0, 160 * 60, 15):
        work = i < 40 * 60
        stamp = (t0 + np.timedelta64(i, "s")).astype(str).replace("-", "/").replace("T", " ")
        rows.append(f"{stamp}.000, 0, {90 + (i // 15) % 7 if work else 0} %, {40000 if work else 1047} MiB")
    path = tmp_path / "gpu.csv"
    path.write_text("timestamp, index, utilization.gpu [%], memory.used [MiB]\n" + "\n".join(rows) + "\n")
    d = diagnose(read_paths([str(path)]))
    assert d.accounting["after_end_s"] == 120 * 60
    assert any("runs 2.0 h past the job's last work" in w for w in d.warnings), d.warnings
