"""The sixty-second held-out round (tests/data/eval/heldout62/SOURCES.md): consumer / workstation GPU monitoring logs
committed to public repositories — four TechPowerUp GPU-Z sensor logs (two saturated NVIDIA runs, one of them at its
power cap; an AMD GPU idle before its work; a 2016 log of three logging sessions) and an MSI Afterburner `.hml`. Each
file's verdict (one of the accepted ids) and what it reads (the fixes are tested apart:
tests/readers/test_heldout62_readers.py, tests/analysis/test_start_up.py)."""

from __future__ import annotations

from pathlib import Path

from heldout_rounds import verdict_tests

from playbook.model import schema
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout62"

ACCEPTED = {
    "gpuz_rtx_6pin8pin_saturated.txt": ("healthy",),
    "gpuz_perfcap1_saturated.txt": ("healthy", "throttling"),
    "gpuz_amd_hotspot_idle_then_load.txt": ("healthy", "insufficient_data"),
    "gpuz_2016_vddc_sessions.txt": ("healthy", "insufficient_data"),
    "afterburner_rx560_desktop.hml": ("insufficient_data", "healthy"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def test_the_perfcap_power_code_is_read_as_the_software_power_cap():
    tele = read_paths([str(HERE / "gpuz_perfcap1_saturated.txt")]).telemetry
    assert (tele["throttle_reasons"] == schema.THROTTLE_BITS["sw_power_cap"]).all()
    assert tele["power_w"].between(100, 135).all()  # Board Power Draw, not the dead `% TDP` column


def test_the_afterburner_log_is_one_gpu_on_its_own_clock():
    tele = read_paths([str(HERE / "afterburner_rx560_desktop.hml")]).telemetry
    assert list(tele["gpu"].unique()) == [0] and len(tele) == 6
    assert str(tele["time"].min()) == "2024-12-07 23:49:46+00:00"
    assert tele["util_pct"].max() == 2 and tele["sm_clock_mhz"].eq(214).all()
