"""The four distributed-lab notebooks, run through papermill with small parameters (world size 2, few steps).

Each notebook launches its ranks once (fork on CPU, gloo). Whether a verdict comes out confirmed may depend on
how fast a loaded 2-core machine ran (a step-time ratio's interval above 1), so the tests assert that the status
follows the lab's own rule applied to the figures it recorded, exact facts (padding, plans, loss equality), and
the direction of effects that are physical and several-fold (a rank sleeping 3x its compute, a consumer 4x
slower than its peers). The timing claims are measured by benchmarks/lab_verdicts.py.
"""

from __future__ import annotations

import pytest
from labverdicts import assert_diagnosed, assert_status_follows
from nbrun import run_notebook

pytestmark = pytest.mark.slow


def test_20_collective_stragglers(tmp_path):
    vals = run_notebook("20_collective_stragglers.ipynb", tmp_path, steps=10, batch=4, out_dir=str(tmp_path / "runs"))
    v = vals["verdict"]
    f = v["figures"]
    assert_status_follows(v, refuted=f["sw_step_ratio_hi"] <= 1.0 and f["hw_step_ratio_lo"] <= 1.0, checks={
        "hw rank flagged": f["flagged"] == [f["slow_rank"]], "hw persistent": f["hw_verdict"] == "persistent",
        "sw not persistent": f["sw_verdict"] != "persistent", "sw follows tokens": (f["sw_rho_tokens"] or 0) >= 0.5,
        "balancing cuts step time": f["sw_step_ratio_lo"] > 1.0,
        "excluding the rank raises throughput": f["hw_fix_gain"] > 1.0})
    assert f["sw_step_ratio_lo"] <= f["sw_step_ratio"] <= f["sw_step_ratio_hi"]
    # rank 1 computes 3x slower (it sleeps twice its compute): flagged, persistently slowest, and excluding it helps
    assert f["flagged"] == [f["slow_rank"]] == [1] and vals["flagged_ranks"] == [1]
    assert f["hw_verdict"] == "persistent" and f["sw_verdict"] != "persistent"
    assert f["throughput_hw_fix"] > f["throughput_hw_fault"]
    # waiting ranks look busy to a utilization counter, but their real work is a fraction of the step
    assert vals["counter_busy_min"] > 0.9 and vals["real_work_min"] < 0.6
    assert vals["loss_gap_sw"] < 1e-4  # balancing the split does not change the gradient
    assert_diagnosed(vals["diagnosis_top"])  # which cause ranks first: benchmarks/lab_verdicts.py


def test_21_padding_vs_packing(tmp_path):
    vals = run_notebook("21_padding_vs_packing.ipynb", tmp_path, steps=8, batch=12, mean_len=32.0, max_len=128,
                        row_len=128, out_dir=str(tmp_path / "runs"))
    v = vals["verdict"]
    f = v["figures"]
    assert_status_follows(v, refuted=f["packed_speedup_hi"] <= 1.0, checks={
        "packing speeds up the step": f["packed_speedup_lo"] > 1.0,
        "packing removes padding": f["waste_packed"] < f["waste_padded"],
        "packing cuts the collective wait": f["wait_share_packed"] < f["wait_share_padded"],
        "loss curve unchanged": f["loss_max_rel_gap"] < 1e-3})
    assert f["packed_speedup_lo"] <= f["packed_speedup"] <= f["packed_speedup_hi"]
    assert f["waste_padded"] > 0.4 > f["waste_packed"] and f["slot_imbalance_packed"] == 1.0  # counted, not timed
    assert vals["loss_gap_packed"] < 1e-4 and vals["weighting_max_gap_corrected"] < 1e-6
    assert vals["step_mean_len_std_bucketed"] > 0


def test_22_pipeline_imbalance(tmp_path):
    vals = run_notebook("22_pipeline_imbalance.ipynb", tmp_path, duration_s=1.5, out_dir=str(tmp_path / "runs"))
    v = vals["verdict"]
    f = v["figures"]
    signature = (f["slow_consumer_busy"] or 0) >= 0.9 and f["other_consumers_busy"] <= 0.6 \
        and f["producers_blocked"] >= 0.5
    assert_status_follows(v, refuted=f["fix_vs_fault"] <= 1.0, checks={
        "fault signature (saturated slow consumer, idle others, blocked producers)": signature,
        "fix faster than fault beyond noise": f["fix_vs_fault_lo"] > 1.0,
        "fix reaches >= 85% of the predicted capacity": f["fix_vs_capacity"] >= 0.85})
    # 3 consumers at 1/40, 1/40, 1/160 ms^-1 need 2 producers of 1/30 ms^-1 (the plan, computed from the rates)
    assert f["producers_needed"] == vals["producers_needed"] == 2
    # round-robin waits on the consumer 4x slower than its peers; the items are sleeps, so load only slows them
    assert f["slow_consumer_busy"] > 0.9 and f["producers_blocked"] > 0.5
    assert f["throughput_fix"] > f["throughput_fault"]
    assert f["throughput_fault"] < 1.3 * f["round_robin_limit"]  # a physical ceiling, not a target
    assert_diagnosed(vals["diagnosis_top"])  # which cause ranks first: benchmarks/lab_verdicts.py


def test_23_comm_overlap(tmp_path):
    vals = run_notebook("23_comm_overlap.ipynb", tmp_path, steps=10, width=256, out_dir=str(tmp_path / "runs"))
    v = vals["verdict"]
    f = v["figures"]
    # the CPU verdict may go either way; it must follow from the measured interval of the overlap saving
    lo, hi = f["overlap_saved_lo_ms"], f["overlap_saved_hi_ms"]
    expected = "confirmed" if lo > 0 and f["exposed_ddp_buckets_ms"] < f["exposed_post_backward_ms"] \
        else "refuted" if hi < 0 else "inconclusive"
    assert v["status"] == expected, v["summary"]
    assert lo <= f["overlap_saved_ms"] <= hi
    assert f["loss_max_rel_gap"] < 1e-5 and f["backend"] == "gloo"
    assert f["grad_mb"] == pytest.approx((8 * (256 * 256 + 256) + 257) * 4 / 2**20)  # 8 layers of 256 + head
    assert f["tp_serial_ms"] > 0 and f["tp_async_ms"] > 0
