"""How sure "healthy" may be: step times measure a run against its own pace, so a cost every step pays leaves them
steady (heldout8's DeePMD#996: TensorBoard written every step, three times the time per batch, read "Healthy
(confirmed)"). From step times alone healthy is at most "likely", and the sentence says what would rule the rest
out; GPU telemetry that shows the GPUs busy may still confirm it. LABELED SYNTHETIC inputs."""

from __future__ import annotations

import numpy as np

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.labs import synthetic
from playbook.labs.synthetic import simulate_bundle
from playbook.model import schema


def test_a_steady_step_log_is_healthy_but_not_confirmed():
    rng = np.random.default_rng(0)
    d = 0.045 * np.exp(0.02 * rng.standard_normal(400))  # every step alike: nothing to set against
    bundle = schema.Bundle(steps=schema.steps_frame({"step": np.arange(400), "phase": "step", "duration_s": d}))
    v = diagnose(bundle).verdict
    assert v["id"] == "healthy" and v["confidence"] == "likely", v
    assert "cannot show a cost every step pays" in v["sentence"] and "record GPU utilization" in v["sentence"]


def test_busy_gpus_can_confirm_healthy():
    bundle, _ = simulate_bundle("healthy", duration_s=600.0)
    v = diagnose(bundle).verdict
    assert v["id"] == "healthy" and v["confidence"] == "confirmed", v
    assert "cannot show a cost every step pays" not in v["sentence"]


def test_busy_gpus_drawing_little_power_are_healthy_only_likely():
    """Utilization counts a kernel of any size as busy: at 30% of the power limit (training draws 60-100%) the
    busy GPUs may run kernels too small to fill them, which no swing or peer shows."""
    bundle, _ = simulate_bundle("healthy", duration_s=600.0)
    tele = bundle.telemetry
    busy = tele["util_pct"] >= 90
    tele.loc[busy, "power_w"] = 0.3 * tele.loc[busy, "power_limit_w"] + tele.loc[busy, "power_w"] % 5
    v = diagnose(bundle).verdict
    assert v["id"] == "healthy" and v["confidence"] == "likely", v
    assert "of the power limit" in v["sentence"] and "DCGM_FI_PROF_SM_ACTIVE" in v["sentence"], v["sentence"]


def test_gpus_idle_a_tenth_of_the_time_at_work_are_healthy_only_likely():
    """A busy level of ~88% (no swing, no GPU apart) leaves 12% of each GPU idle at work: a fed GPU reads at least
    90% (accounting.FED_PCT), so healthy is not confirmed and the sentence says what would show the gaps."""
    bundle, _ = simulate_bundle("healthy", duration_s=600.0)
    tele = bundle.telemetry
    tele["util_pct"] = (tele["util_pct"] * 0.86).round()
    v = diagnose(bundle).verdict
    assert v["id"] == "healthy" and v["confidence"] == "likely", v
    assert "idle" in v["sentence"] and "a fed GPU reads at least 90%" in v["sentence"], v["sentence"]


def test_an_sm_activity_level_is_not_held_to_the_utilization_bar():
    """DCGM SM activity without utilization: 85% of the SMs active is good use (NVIDIA reads >= 80% as effective);
    the 90% bar is utilization's, so it neither caps healthy nor says "idle 15% of the time"."""
    bundle, _ = simulate_bundle("healthy", duration_s=600.0)
    tele = bundle.telemetry
    tele["sm_active"] = (tele["util_pct"] * 0.0086).clip(0.0, 1.0)
    tele["util_pct"] = np.nan
    v = diagnose(bundle).verdict
    assert v["id"] == "healthy" and "a fed GPU reads at least 90%" not in v["sentence"], v["sentence"]


def test_a_healthy_loss_above_the_floor_says_it_is_spread_over_small_causes():
    """Healthy with a total above the noise floor (each cause within it) says so, naming the largest, instead of
    "of it nothing harmful" beside a loss it had just called above the floor."""
    steps, events, _ = synthetic.simulate_steps(stall_every=None)
    d = diagnose(schema.Bundle(steps=steps, events=events))
    acc = d.accounting
    assert d.verdict["id"] == ids.HEALTHY and acc["lost_share"] > acc["noise_floor_share"]
    assert "none above the noise floor" in d.verdict["sentence"] and "nothing harmful" not in d.verdict["sentence"]


def _pinned_log(tmp_path, default_limit: bool):
    """Two busy GPUs drawing within 2% of a 315 W enforced limit on every poll (an nvidia-smi CSV, 10 min at 1 Hz),
    with or without the default limit logged beside it (LABELED SYNTHETIC; heldout17's W&B export of an RTX 3090
    capped at 315 W read "Healthy (confirmed)")."""
    rng = np.random.default_rng(2)
    head = "timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W]"
    lines = [head + (", power.default_limit [W]" if default_limit else "")]
    for k in range(600):
        for g in range(2):
            lines.append(f"2026/03/02 10:{k // 60:02d}:{k % 60:02d}.{g:03d}, {g}, {int(rng.integers(97, 101))} %, "
                         f"{rng.uniform(309, 315):.2f} W, 315.00 W" + (", 315.00 W" if default_limit else ""))
    path = tmp_path / f"pinned_{default_limit}.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_gpus_pinned_at_a_power_limit_of_unknown_default_are_healthy_only_likely(tmp_path):
    """At the board's default limit a GPU pinned there is TDP-bound (healthy); below it, capped. Without the default
    logged the two look the same: healthy at most likely, and the sentence says what to compare. With the default
    logged and equal to the enforced limit, healthy can be confirmed."""
    from playbook.readers import read_paths

    v = diagnose(read_paths([_pinned_log(tmp_path, default_limit=False)])).verdict
    assert v["id"] == "healthy" and v["confidence"] == "likely", v
    assert "enforced power limit (315 W)" in v["sentence"] and "nvidia-smi -q -d POWER" in v["sentence"]
    v = diagnose(read_paths([_pinned_log(tmp_path, default_limit=True)])).verdict
    assert v["id"] == "healthy" and v["confidence"] == "confirmed", v
