"""The onboarding notebook runs headlessly with small parameters, recovers the known causes, and its verdict follows
the figures it printed (whether the fix is faster beyond noise is a timing claim: benchmarks/lab_verdicts.py)."""

from __future__ import annotations

import pytest
from labverdicts import assert_diagnosed, assert_status_follows
from nbrun import run_notebook

from playbook.report import triage


@pytest.mark.slow
def test_onboarding_recovers_synthetic_and_real_causes(tmp_path):
    rec = run_notebook("00_onboarding.ipynb", tmp_path, hosts=2, gpus_per_host=4, duration_s=480.0,
                       lab_steps=32, repeats=2, out_dir=str(tmp_path / "runs"))
    head = rec["headline"]  # the answer first: the embedded 64-GPU sample's verdict card
    assert head["cause"] == "periodic_stall" and head["gpus"] == 64 and head["status"] == "inconclusive", head  # "likely": see the 64-GPU card test
    assert 0 < head["lost_share"] < 1 and head["gpu_hours_per_day"] > 0 and head["next_command"].startswith("playbook")
    v = rec["verdict"]
    f = v["figures"]
    # the synthetic run is seeded: its answer is exact
    assert f["synthetic_top"] == f["synthetic_truth"] == "periodic_stall"
    assert f["synthetic_period_s"] == pytest.approx(60.0, rel=0.1)
    assert rec["steps_top"] == "periodic_stall"  # the seeded synthetic step log: the stall every 30 steps
    assert_diagnosed(f["real_top"])  # the real lab's recording: which cause ranks first is timed
    assert f["fix_speedup_lo"] <= f["fix_speedup"] <= f["fix_speedup_hi"]
    real_ok = f["real_top"] in triage.DATA_STALL_CAUSES and float(f["real_top_score"] or 0) >= triage.CONFIRM_SCORE
    assert_status_follows(v, refuted=False, checks={"real recording": real_ok, "faster": f["fix_speedup_lo"] > 1.0},
                          named=False)
    assert list((tmp_path / "runs").iterdir())  # the real recordings went where asked
