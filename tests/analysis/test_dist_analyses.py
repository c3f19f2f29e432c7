"""Lab analyses on small hand-built tables with known answers (no ranks spawned), and the rank plots."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from playbook.labs.workloads import collective_stragglers as stragglers
from playbook.labs.workloads import comm_overlap, padding_packing, pipeline_imbalance
from playbook.model.schema import steps_frame
from playbook.plots import ranks as R

matplotlib.use("Agg")


def _dp_steps(compute: dict[int, list[float]], tokens: dict[int, list[int]], transfer: float = 0.002):
    """A steps table of a synchronous data-parallel job: each step lasts as long as its slowest rank; the others
    wait in the collective."""
    rows = []
    n = len(next(iter(compute.values())))
    t = pd.Timestamp("2026-01-01", tz="UTC")
    for s in range(n):
        slowest = max(c[s] for c in compute.values())
        for r, c in compute.items():
            coll = transfer + slowest - c[s]
            rows += [(t, r, s, "fwd", c[s] / 3, np.nan), (t, r, s, "bwd", 2 * c[s] / 3, np.nan),
                     (t, r, s, "collective", coll, np.nan), (t, r, s, "step", c[s] + coll, tokens[r][s])]
        t += pd.Timedelta(seconds=slowest + transfer)
    time, rank, step, phase, dur, tok = zip(*rows, strict=True)
    return steps_frame({"time": list(time), "host": "h", "rank": list(rank), "step": list(step),
                        "phase": list(phase), "duration_s": list(dur), "tokens": list(tok)})


def test_hardware_straggler_waits_and_counter_view():
    steps = _dp_steps({0: [0.1] * 20, 1: [0.3] * 20}, {0: [100] * 20, 1: [100] * 20})
    table = stragglers.rank_phase_table(steps).set_index("rank")
    assert table.loc[0, "collective_wait_s"] == pytest.approx(0.2)
    assert table.loc[1, "collective_wait_s"] == pytest.approx(0.0)
    util = stragglers.utilization_view(steps).set_index("rank")
    assert util["counter_busy"].min() == pytest.approx(1.0)  # the waiting rank looks fully busy
    assert util.loc[0, "real_work"] == pytest.approx(0.1 / 0.302)
    summary = stragglers.straggler_summary(steps)
    assert [s["rank"] for s in summary["scores"] if s["flagged"]] == [1]
    assert summary["persistence"]["verdict"] == "persistent"
    fig = R.compute_vs_wait(table.reset_index())
    assert len(fig.axes[0].patches) == 8  # 4 segments × 2 ranks
    R.utilization_vs_work(util.reset_index())
    R.straggler_scores(pd.DataFrame(summary["scores"]))


def test_software_straggler_follows_tokens():
    rng = np.random.default_rng(0)
    tok = {r: rng.integers(100, 400, 30).tolist() for r in range(2)}
    steps = _dp_steps({r: [t * 1e-4 for t in tok[r]] for r in range(2)}, tok)
    summary = stragglers.straggler_summary(steps)
    assert summary["persistence"]["verdict"] != "persistent"
    assert summary["tokens"]["rho_within_step"] > 0.9


def test_packing_shape_summary_and_spread():
    rows = []
    for s in range(4):
        rows += [{"variant": "padded", "repeat": 0, "step": s, "rank": r, "tokens": 100, "slots": 400 if r else 200,
                  "mean_len": 20.0} for r in range(2)]
        rows += [{"variant": "packed", "repeat": 0, "step": s, "rank": r, "tokens": 100, "slots": 128,
                  "mean_len": 20.0} for r in range(2)]
    shapes = padding_packing.shape_summary(pd.DataFrame(rows)).set_index("variant")
    assert shapes.loc["padded", "padding_waste"] == pytest.approx(1 - 200 / 600)
    assert shapes.loc["padded", "slot_imbalance"] == pytest.approx(400 / 300)
    assert shapes.loc["packed", "slot_imbalance"] == 1.0
    assert padding_packing.batch_length_spread(pd.DataFrame(rows))["std"].max() == 0
    demo = padding_packing.weighting_demo(n_docs=6)
    assert np.allclose(demo["packed_corrected"], demo["padded_per_sequence"])
    assert np.isclose(demo["packed_token_mean"].sum(), 1.0)
    R.weight_shares(demo)
    R.batch_lengths(pd.DataFrame(rows))


def test_pipeline_worker_shares_and_plan():
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    rows = []
    for i in range(10):  # producer (rank 0): 10 ms work, 30 ms blocked; consumer (rank 1): 40 ms work
        t = t0 + pd.Timedelta(milliseconds=40 * i)
        rows += [(t, 0, i, "produce", 0.010), (t + pd.Timedelta(milliseconds=10), 0, i, "blocked", 0.030),
                 (t, 0, i, "step", 0.040), (t, 1, i, "consume", 0.040), (t, 1, i, "step", 0.040)]
    time, rank, step, phase, dur = zip(*rows, strict=True)
    steps = steps_frame({"time": list(time), "host": "h", "rank": list(rank), "step": list(step),
                         "phase": list(phase), "duration_s": list(dur)})
    shares = pipeline_imbalance.worker_shares(steps).set_index("rank")
    assert shares.loc[0, "role"] == "producer" and shares.loc[0, "blocked"] == pytest.approx(0.75)
    assert shares.loc[1, "busy"] == pytest.approx(1.0) and shares.loc[1, "items"] == 10
    plan = pipeline_imbalance.measured_plan(steps)
    assert plan.producer_rate == pytest.approx(100) and plan.consumer_rates == [pytest.approx(25)]
    assert plan.producers_needed == 1 and plan.bottleneck == "consumers"
    tl = pipeline_imbalance.role_busy_timeline(steps, bin_s=0.1)
    assert set(tl["role"]) == {"producer", "consumer"}
    assert tl.loc[tl["role"] == "consumer", "busy_frac"].mean() > 0.9
    R.worker_gantt(steps, {0: "producer 0", 1: "consumer 0"})
    depth = pd.DataFrame({"time_s": [0, 0, 0.1, 0.1], "consumer": [0, 1, 0, 1], "depth": [1, 0, 3, 0]})
    R.queue_depth(depth, capacity=3)


def test_exposed_communication_is_paired():
    steps = pd.DataFrame([{"variant": v, "rank": r, "step": s, "step_s": base + extra + 0.001 * s}
                          for s in range(12) for r in range(2)
                          for v, base, extra in (("compute_only", 0.05, 0), ("post_backward", 0.05, 0.02),
                                                 ("ddp_buckets", 0.05, 0.005))])
    table = comm_overlap.exposed_table(steps).set_index("variant")
    assert table.loc["post_backward", "exposed_ms"] == pytest.approx(20.0)
    assert table.loc["ddp_buckets", "exposed_ms"] == pytest.approx(5.0)
    assert table.loc["compute_only", "exposed_ms"] == 0.0
    saved = comm_overlap.paired_difference(steps, "post_backward", "ddp_buckets")
    assert saved["median"] == pytest.approx(15.0) and saved["lo"] == pytest.approx(15.0)
    R.exposed_comm(table.reset_index())
    tp = pd.DataFrame([{"case": c, "repeat": 0, "seconds": s} for c, s in
                       (("compute", 0.004), ("comm", 0.002), ("serial", 0.006), ("async", 0.0046))])
    summary = comm_overlap.tp_summary(tp, chunks=4)
    assert summary["model_ms"].iloc[1] == pytest.approx(4.5)  # max(4, 2) + min(4, 2) / 4
    R.measured_vs_model(summary)


def test_slowest_rank_plot():
    frame = pd.DataFrame({"label": ["a r0"] * 3 + ["b r0"] * 3, "step": [0, 1, 2] * 2, "rank": [1, 1, 1, 0, 1, 0]})
    fig = R.slowest_rank(frame, world_size=2)
    assert len(fig.axes[0].collections) == 2
