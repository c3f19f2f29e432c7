"""Calibration: does a verdict's score read as the chance that it is right? On the labelled evaluation set
(test_eval_confusion.CASES: public reports in the formats users paste, issue 27's held-out cases, and the labelled
synthetic scenarios), the reliability table bins the leading hypothesis' score and counts how often it is the
labelled cause; the Brier score is the mean squared gap between score and outcome (0 perfect; 0.25 is what an
uninformative 0.5 on every case earns). The words follow the numbers: "confirmed" must be right at least as often
as its threshold says (0.8).

    python -m pytest -q -s tests/diagnosis/test_calibration.py -p no:cacheprovider
"""

from __future__ import annotations

import numpy as np
from test_eval_confusion import diagnosed

from playbook.diagnosis.attribution import CONFIRM, LIKELY

BINS = ((0.0, LIKELY, "possible"), (LIKELY, CONFIRM, "likely"), (CONFIRM, 1.0001, "confirmed-range"))


def test_scores_read_as_the_chance_of_being_right(tmp_path):
    rows = [(name, want, d.hypotheses[0]["id"], float(d.hypotheses[0]["score"]), d.verdict.get("confidence"))
            for name, want, d in diagnosed(tmp_path)]
    score = np.array([r[3] for r in rows])
    right = np.array([r[1] == r[2] for r in rows], dtype=float)
    brier = float(np.mean((score - right) ** 2))
    print(f"\nreliability (leading hypothesis' score vs right), {len(rows)} cases, Brier {brier:.3f}")
    print(f"  {'score bin':<22} {'cases':>5} {'mean score':>10} {'right':>6}")
    for lo, hi, label in BINS:
        m = (score >= lo) & (score < hi)
        if m.any():
            print(f"  [{lo:.1f}, {min(hi, 1):.1f}) {label:<11} {int(m.sum()):>5} {score[m].mean():>10.2f} "
                  f"{right[m].mean():>6.0%}")
    words = {}
    for r in rows:
        words.setdefault(r[4], []).append(r[1] == r[2])
    for w, ok in sorted(words.items(), key=lambda kv: str(kv[0])):
        print(f"  word {w!s:<10} {len(ok):>3} cases, right {np.mean(ok):.0%}")
    # a confident word must be earned: "confirmed" right at least as often as its threshold
    confirmed = words.get("confirmed", [])
    assert confirmed and np.mean(confirmed) >= CONFIRM, words
    # better than an uninformative forecast of 0.5 on every case
    assert brier < 0.25, brier
