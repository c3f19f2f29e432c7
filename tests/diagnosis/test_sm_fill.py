"""Kernels that run all the time over mostly idle SMs: utilization (a kernel running, of any size) reads ~97% while
DCGM's SM activity reads 25%. NVIDIA's DCGM guidance reads SM activity below 0.5 as ineffective use; the run had
read "Healthy (confirmed)". LABELLED SYNTHETIC dcgm-exporter samples (the field names are dcgm-exporter's)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from playbook.analysis.gpu_limits import sm_fill
from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths

DATA = Path(__file__).resolve().parents[1] / "data"


def _dump(path: Path, sm: float, polls: int = 300) -> Path:
    """Four GPUs at 97% utilization and SM activity `sm` (± 0.02), one poll a second."""
    return _fleet(path, [sm] * 4, [97] * 4, polls)


def test_busy_kernels_over_idle_sms_lose_gpu_time_to_small_kernels(tmp_path):
    d = diagnose(read_paths([str(_dump(tmp_path / "n1.prom", sm=0.25))]))
    assert d.verdict["id"] == ids.LAUNCH_BOUND
    assert d.accounting["lost_share"] == pytest.approx(0.74, abs=0.04)  # counted on SM activity: 1 - 0.26
    lead = d.hypotheses[0]
    assert any(e.startswith("kernels run 97% of the time, but the SMs are active 25%") for e in lead["evidence"])
    # the page must not say "busy level 26%" over a utilization plot at 97%: the level named is the SMs'
    assert "GPUs' SMs idle 74% of the time even at work: their SM-activity level is 26%" in d.verdict["sentence"]


def test_sms_filled_past_half_keep_the_utilization_basis(tmp_path):
    """SM activity 0.8 (NVIDIA: necessary for effective use) is no finding and no loss: utilization stays the basis."""
    d = diagnose(read_paths([str(_dump(tmp_path / "n1.prom", sm=0.8))]))
    assert d.verdict["id"] == ids.HEALTHY and d.accounting["lost_share"] < 0.02


def test_real_dcgm_profiling_scrape_is_not_underfilled():
    b = read_paths([str(DATA / "heldout_telemetry" / "dcgm_exporter_k8s_prof.prom")])
    fill = sm_fill(b.telemetry)
    assert fill is not None and fill["sm_active"] == pytest.approx(0.869, abs=0.001) and not fill["underfilled"]


def _fleet(path: Path, sms, utils, polls: int = 300) -> Path:
    """One (SM activity, utilization) per GPU, each ± noise; 0 is a GPU that runs nothing (no noise)."""
    rng = np.random.default_rng(1)
    t0, lines = 1_764_615_600_000, []
    for i in range(polls):
        for g, (sm, u) in enumerate(zip(sms, utils, strict=True)):
            t = t0 + i * 1000
            lines += [f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",Hostname="n1"}} {int(u + rng.normal(0, 1)) if u else 0} {t}',
                      f'DCGM_FI_PROF_SM_ACTIVE{{gpu="{g}",Hostname="n1"}} {sm + rng.normal(0, 0.02) if sm else 0:.3f} {t}',
                      f'DCGM_FI_DEV_POWER_USAGE{{gpu="{g}",Hostname="n1"}} {180 + rng.normal(0, 5):.1f} {t}']
    path.write_text("\n".join(lines) + "\n")
    return path


def test_half_the_gpus_underfilled_is_not_healthy(tmp_path):
    """Two GPUs at SM activity 0.2 beside two at 0.9, all at 97% utilization (review4): pooled, the median SM
    activity read 0.55 and the run 'Healthy (confirmed)'. Per GPU, the two count on SM activity (80% of their time
    lost) and the two on utilization (3%): 41% of the fleet's GPU time."""
    d = diagnose(read_paths([str(_fleet(tmp_path / "n1.prom", [0.2, 0.2, 0.9, 0.9], [97] * 4))]))
    assert d.verdict["id"] == ids.LAUNCH_BOUND
    assert d.accounting["lost_share"] == pytest.approx((2 * 0.8 + 2 * 0.03) / 4, abs=0.04)
    assert any(e.startswith("on 2 of 4 GPUs kernels run 97% of the time, but the SMs are active 20%")
               for e in d.hypotheses[0]["evidence"])
    # the level on the page is a mix of the two bases, and says so (every GPU's utilization plot reads 97%)
    assert "busy level (utilization; SM activity on the 2 of 4 GPUs whose kernels fill under half their SMs) is" \
        in d.verdict["sentence"]


def test_one_underfilled_gpu_does_not_move_its_peers_basis(tmp_path):
    """One GPU of eight at SM activity 0.3 among peers at 0.7 (acceptable): only that GPU counts on SM activity; the
    peers' busy level stays their utilization (97%), not a 70% level that would read 30% of the fleet idle."""
    d = diagnose(read_paths([str(_fleet(tmp_path / "n1.prom", [0.3] + [0.7] * 7, [97] * 8))]))
    assert d.accounting["lost_share"] == pytest.approx((0.7 + 7 * 0.03) / 8, abs=0.04)


def test_a_gpu_idle_throughout_is_worded_as_idle_on_the_sm_basis(tmp_path):
    """Three GPUs at SM activity 0.25 and one that ran nothing: the basis is the SMs' ('SM-activity level'), the idle
    GPU's bucket reads '1 GPU idle throughout' (before: '1 GPU SMs idle throughout'), and the noise floor names the
    same level as the buckets."""
    d = diagnose(read_paths([str(_fleet(tmp_path / "n1.prom", [0.25, 0.25, 0.25, 0.0], [97, 97, 97, 0]))]))
    details = [b["detail"] for b in d.accounting["buckets"]]
    assert "1 GPU idle throughout while peers worked" in details
    assert any(x.startswith("GPUs' SMs idle 73% of the time even at work: their SM-activity level is 27%") for x in details)
    assert "busy level" not in d.accounting["noise_floor"]
