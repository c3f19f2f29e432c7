"""The onboarding notebook runs headlessly with small parameters and recovers the known causes."""

from __future__ import annotations

import pytest
from nbrun import run_notebook


@pytest.mark.slow
def test_onboarding_recovers_synthetic_and_real_causes(tmp_path):
    rec = run_notebook("00_onboarding.ipynb", tmp_path, hosts=2, gpus_per_host=4, duration_s=480.0,
                       lab_steps=32, repeats=3, out_dir=str(tmp_path / "runs"))
    v = rec["verdict"]
    figures = v["figures"]
    assert figures["synthetic_top"] == figures["synthetic_truth"] == "periodic_stall"
    assert figures["synthetic_period_s"] == pytest.approx(60.0, rel=0.1)
    assert rec["steps_top"] == "periodic_stall"  # the step log confirms the stall every 30 steps
    assert figures["real_top"] in ("data_starvation", "periodic_stall")
    assert figures["fix_speedup_lo"] > 1.0  # the streaming buffer is faster beyond run-to-run noise
    assert v["status"] == "confirmed", v["summary"]
    assert list((tmp_path / "runs").iterdir())  # the real recordings went where asked
