"""Straggler analysis: synthetic multi-rank jobs with known answers, the steps-table path, and the DLRM traces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from playbook.analysis import rank_stragglers as sg
from playbook.model.schema import Bundle, steps_frame, trace_frame
from playbook.readers import kineto as rk

SHARED = Path(__file__).resolve().parents[3] / "shared" / "reference-traces"
FAMILIES = {
    "old": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
    "new": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
}


def _job(world=4, steps=8, slow=lambda step: 2, family="old", offsets=None, extra_us=1500.0, drop=None):
    """A data-parallel job: per step each rank computes 3 ms (+ extra_us on the slow rank), then all-reduces.

    The all-reduce completes at the same true time on every rank (when the slowest arrives, plus 200 µs of
    transfer); each rank's clock is shifted by offsets[rank] µs, as unaligned clocks are.
    """
    offsets = offsets if offsets is not None else [0.0] * world
    rows, corr = [], 0
    for s in range(steps):
        base = s * 10_000.0
        computes = [3000.0 + (extra_us if r == slow(s) else 0.0) for r in range(world)]
        end = base + 100 + max(computes) + 200
        for r in range(world):
            o = offsets[r]
            rows.append(dict(rank=r, cat="user_annotation", name=f"ProfilerStep#{s}", ts_us=base + o,
                             dur_us=9000.0, tid=1))
            corr += 1
            rows += [dict(rank=r, cat="cuda_runtime", name="cudaLaunchKernel", ts_us=base + o + 50, dur_us=5,
                          correlation=corr, tid=1),
                     dict(rank=r, cat="kernel", name="sm80_xmma_gemm_f16f16", ts_us=base + o + 100,
                          dur_us=computes[r], stream=7, correlation=corr, tid=7, pid=0)]
            if drop == (r, s):
                continue
            corr += 1
            start = base + 100 + computes[r]
            rows += [dict(rank=r, cat="cuda_runtime", name="cudaLaunchKernel", ts_us=base + o + 60, dur_us=5,
                          correlation=corr, tid=1),
                     dict(rank=r, cat="kernel", name=FAMILIES[family], ts_us=start + o, dur_us=end - start,
                          stream=20, correlation=corr, tid=20, pid=0)]
    cols = {k: [row.get(k, d) for row in rows] for k, d in (
        ("rank", 0), ("cat", ""), ("name", ""), ("ts_us", 0.0), ("dur_us", 0.0), ("pid", 1), ("tid", 1),
        ("stream", -1), ("correlation", -1), ("bytes", np.nan), ("source", "synthetic"))}
    return Bundle(trace=trace_frame(cols))


@pytest.mark.parametrize("family", ["old", "new"])
def test_persistent_straggler_both_kernel_families(family):
    b = _job(family=family, offsets=[0.0, 3100.0, -2500.0, 7000.0])  # clocks apart by milliseconds
    waits = sg.collective_waits(b.trace)
    assert len(waits) == 4 * 8 and set(waits["type"]) == {"AllReduce"}
    assert set(waits.loc[waits["straggler"], "rank"]) == {2}
    assert waits["transfer_us"].unique().tolist() == [200.0]
    assert waits.groupby("rank")["wait_us"].max().to_dict() == {0: 1500.0, 1: 1500.0, 2: 0.0, 3: 1500.0}
    assert waits["skew_us"].unique().tolist() == [1500.0]
    s = sg.summarize(b)
    json.dumps(s)
    tr = s["trace"]
    scores = {x["rank"]: x for x in tr["scores"]}
    assert scores[2]["flagged"] and scores[2]["score_vs_median"] == pytest.approx(3000 / 4500, abs=1e-3)
    assert not any(scores[r]["flagged"] for r in (0, 1, 3))
    assert tr["persistence"]["verdict"] == "persistent" and tr["persistence"]["modal_rank"] == 2
    assert tr["persistence"]["p_value"] == pytest.approx(4 * 0.25 ** 8)
    (f,) = s["findings"]
    assert (f["hypothesis"], f["rank"], f["nature"]) == ("collective_straggler", 2, "hardware-like")


def test_rotating_straggler_is_software_like():
    s = sg.summarize(_job(slow=lambda step: step % 4))
    tr = s["trace"]
    assert tr["persistence"]["verdict"] == "rotating" and tr["persistence"]["distinct"] == 4
    assert not any(x["flagged"] for x in tr["scores"])  # every rank's median step is the fast one
    assert tr["collectives"]["straggler_counts"] == {"0": 2, "1": 2, "2": 2, "3": 2}
    (f,) = s["findings"]
    assert f["nature"] == "software-like" and f["level"] == "moderate"  # 3 of 4 ranks wait 1.5 ms of 9 ms


def test_clock_offsets_do_not_change_the_answer():
    a = sg.collective_waits(_job(offsets=[0, 0, 0, 0]).trace)
    b = sg.collective_waits(_job(offsets=[0, 5000, -9000, 12345]).trace)
    pd.testing.assert_frame_equal(a.drop(columns="step"), b.drop(columns="step"))


def test_uneven_collective_counts_are_matched_by_order_with_a_warning():
    waits = sg.collective_waits(_job(drop=(1, 7)).trace)
    assert waits.groupby(["type", "seq"]).ngroups == 7
    assert "different numbers of AllReduce" in waits.attrs["warnings"][0]


def test_no_straggler_no_finding():
    s = sg.summarize(_job(extra_us=0.0))
    assert s["findings"] == [] and not any(x["flagged"] for x in s["trace"]["scores"])


def test_persistence_power():
    # two ranks, three steps: even a rank slowest every time is not significant, so nothing is concluded
    assert sg.persistence(pd.Series([0, 1, 0]), 2)["verdict"] == "undetermined"
    assert sg.persistence(pd.Series([1] * 10), 2)["verdict"] == "persistent"
    assert sg.persistence(pd.Series([0, 1] * 5), 2)["verdict"] == "rotating"


def test_spearman():
    x = np.arange(20.0)
    rho, p = sg.spearman(x, x ** 3)
    assert rho == pytest.approx(1.0) and p < 1e-6
    rho, p = sg.spearman(x, np.random.default_rng(0).permutation(x))
    assert abs(rho) < 0.5 and p > 0.01


def _steps_table(world=8, steps=30, tokens_drive=True, slow_rank=None, seed=0):
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in ("rank", "step", "phase", "duration_s", "tokens")}
    for s in range(steps):
        tokens = rng.integers(1000, 4000, size=world)
        compute = 0.05 + (2e-5 * tokens if tokens_drive else 0.06) + rng.normal(0, 0.001, world)
        if slow_rank is not None:
            compute[slow_rank] *= 1.6
        end = compute.max() + 0.005
        for r in range(world):
            for phase, d in (("fwd", compute[r] / 3), ("bwd", 2 * compute[r] / 3),
                             ("collective", end - compute[r]), ("step", end + 0.001)):
                rows["rank"].append(r), rows["step"].append(s), rows["phase"].append(phase)
                rows["duration_s"].append(d), rows["tokens"].append(float(tokens[r]))
    return steps_frame(rows)


def test_steps_table_token_driven_imbalance():
    s = sg.summarize(Bundle(steps=_steps_table()))
    st = s["steps"]
    assert s["trace"] is None and st["work"] == "compute_s"
    assert st["tokens"]["rho_within_step"] > 0.9 and st["tokens"]["p_within_step"] < 1e-6
    assert st["persistence"]["verdict"] == "rotating"
    kinds = {f["hypothesis"]: f for f in s["findings"]}
    assert kinds["padding_imbalance"]["level"] == "high"
    assert kinds["collective_straggler"]["nature"] == "software-like"


def test_tokens_read_as_a_rate_times_the_step_time_name_no_padding():
    """torchtitan-style logs state tokens per second; the reader's tokens (rate × the rank's own step time) then
    follow the time by construction and differ across ranks only by the times' jitter: a perfect correlation, no
    padding (a SkyPilot-wrapped torchtitan log with 61.22-61.25 s steps read 'padding_imbalance, confirmed')."""
    rng = np.random.default_rng(7)
    rows = {"rank": [], "step": [], "phase": [], "duration_s": [], "tokens": []}
    for step in range(1, 41):
        for rank in range(8):
            d = 61.23 * (1 + 3e-4 * rng.standard_normal())
            for key, value in (("rank", rank), ("step", step), ("phase", "step"), ("duration_s", d),
                               ("tokens", 8.0 * d)):
                rows[key].append(value)
    s = sg.summarize(Bundle(steps=steps_frame(rows)))
    tokens = s["steps"]["tokens"]
    assert tokens["rho_within_step"] > 0.99 and tokens["spread"] < 0.01
    assert not [f for f in s["findings"] if f["hypothesis"] == "padding_imbalance"]
    driven = sg.summarize(Bundle(steps=_steps_table()))["steps"]["tokens"]
    assert driven["spread"] > 0.5  # 1000-4000 tokens per rank: padding can be named


def test_steps_table_persistent_slow_rank():
    s = sg.summarize(Bundle(steps=_steps_table(tokens_drive=False, slow_rank=5)))
    st = s["steps"]
    assert st["persistence"]["verdict"] == "persistent" and st["persistence"]["modal_rank"] == 5
    assert [x["rank"] for x in st["scores"] if x["flagged"]] == [5]
    assert st["collectives"]["least_waiting_rank"] == 5
    (f,) = [f for f in s["findings"] if f["hypothesis"] == "collective_straggler"]
    assert f["rank"] == 5 and f["nature"] == "hardware-like"
    assert not [f for f in s["findings"] if f["hypothesis"] == "padding_imbalance"]


def test_single_rank_gives_none():
    one = _job(world=1, slow=lambda s: -1)
    assert sg.summarize(one) is None


@pytest.mark.skipif(not (SHARED / "param-dlrm").exists(), reason="../shared/reference-traces is absent")
def test_dlrm_eight_rank_traces():
    b = rk.read(SHARED / "param-dlrm" / "dlrm_kineto.tar.gz")
    waits = sg.collective_waits(b.trace)
    assert waits.attrs["warnings"] == []
    assert waits.groupby("type")["seq"].nunique().to_dict() == {"AllReduce": 3, "SendRecv": 5}
    per = waits.groupby(["type", "seq"])
    assert (per["wait_us"].min() == 0).all() and (per["straggler"].sum() == 1).all()
    s = sg.summarize(b)
    json.dumps(s)
    tr = s["trace"]
    assert tr["collectives"]["straggler_counts"] == {"7": 5, "5": 2, "4": 1}
    assert tr["persistence"]["verdict"] == "undetermined"  # one profiled step
    assert tr["collectives"]["least_waiting_rank"] == 7
    assert len(tr["scores"]) == 8 and not any(x["flagged"] for x in tr["scores"])


def test_two_rank_job_flags_a_rank_against_the_fastest():
    # rank 1 is 1.5x slower: against the median of two ranks (their mean) it would score 0.83 and pass unflagged
    per_step = pd.DataFrame({"rank": [0, 1] * 10, "step": [i // 2 for i in range(20)], "compute": [1.0, 1.5] * 10})
    scores = sg.straggler_scores(per_step).set_index("rank")
    assert scores.loc[1, "score_vs_fastest"] == pytest.approx(2 / 3)
    assert bool(scores.loc[1, "flagged"]) and not bool(scores.loc[0, "flagged"])
