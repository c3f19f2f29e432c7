"""playbook.labs.fixes.serving_parity (parity, tolerances, buckets, packing) and the serving lab's building blocks."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from playbook.core.errors import InputError
from playbook.labs.fixes import packing, shapes
from playbook.labs.fixes import serving_parity as serving
from playbook.labs.workloads import serving as lab
from playbook.labs.workloads import serving_splits as splits
from playbook.labs.workloads.models import ModelConfig, TinyLM


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return TinyLM(ModelConfig(vocab=32, d_model=32, heads=4, layers=2, d_ff=64, max_len=64)).eval()


def _requests(lengths, vocab=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (n,), generator=g) for n in lengths]


# ---------------------------------------------------------------- parity

def test_parity_of_a_model_with_itself_is_exact_and_timed(model):
    reqs = [torch.randint(0, 32, (3, 10)) for _ in range(4)]
    rep = serving.parity(model, model, reqs, repeats=2)
    assert rep.max_abs_err == 0.0 and rep.rel_l2_err == 0.0 and rep.top1_agreement == 1.0
    assert rep.within_tolerance and rep.n_requests == 4 and rep.n_samples == 12
    tab = rep.table()
    assert list(tab.index) == ["train", "serve"]
    assert (tab["calls"] == 8).all()  # 4 requests × 2 repeats per path
    assert (tab["latency_p99_ms"] >= tab["latency_p50_ms"]).all() and (tab["throughput_samples_s"] > 0).all()
    assert math.isnan(tab.loc["train", "max_abs_err"]) and tab.loc["serve", "max_abs_err"] == 0.0
    assert "within tolerance" in rep.summary()


def test_parity_detects_a_perturbed_serving_model(model):
    serve = TinyLM(model.cfg).eval()
    serve.load_state_dict(model.state_dict())
    with torch.no_grad():
        serve.head.weight.add_(0.05 * torch.randn_like(serve.head.weight))
    rep = serving.parity(model, serve, [torch.randint(0, 32, (2, 8)) for _ in range(3)])
    assert not rep.within_tolerance
    assert rep.rel_l2_err > serving.FP32.rel_l2 and rep.max_abs_err > 0
    assert "OUTSIDE" in rep.summary()


def test_parity_bf16_autocast_drift_is_within_the_stated_tolerance_but_not_fp32(model):
    reqs = [torch.randint(0, 32, (4, 16)) for _ in range(3)]
    serve = lab.Autocast(model, torch.bfloat16, "cpu")
    assert serving.parity(model, serve, reqs, tolerance=serving.BF16).within_tolerance
    strict = serving.parity(model, serve, reqs, tolerance=serving.FP32)
    assert not strict.within_tolerance and 0 < strict.rel_l2_err <= serving.BF16.rel_l2


def test_parity_errors_name_the_problem(model):
    with pytest.raises(InputError, match="no requests"):
        serving.parity(model, model, [])
    with pytest.raises(InputError, match="output shapes differ"):
        serving.parity(model, lambda x: model(x)[:, :-1], [torch.randint(0, 32, (2, 8))])


def test_compare_outputs_flags_non_finite_serving_outputs():
    ref = torch.ones(4, 3)
    bad = ref.clone()
    bad[0, 0] = float("nan")
    errs = serving.compare_outputs(ref, bad)
    assert errs["max_abs_err"] == math.inf and not serving.BF16.check(errs["rel_l2_err"], errs["max_rel_err"], 1.0)


def test_tolerances_follow_unit_roundoff():
    assert serving.BF16.rel_l2 == pytest.approx(8 * 2 ** -8) and serving.FP16.rel_l2 == pytest.approx(8 * 2 ** -11)
    assert serving.FP32.rel_l2 < serving.FP16.rel_l2 < serving.BF16.rel_l2
    assert list(serving.tolerance_table().index) == [serving.FP32.name, serving.BF16.name, serving.FP16.name]


def test_latency_summary_percentiles():
    s = serving.latency_summary([0.001] * 99 + [1.0], samples=[2] * 100, wall_s=2.0)
    assert s["p50_ms"] == pytest.approx(1.0) and s["p99_ms"] > 1.0 and s["max_ms"] == pytest.approx(1000.0)
    assert s["throughput_per_s"] == pytest.approx(100.0)


# ---------------------------------------------------------------- buckets, padding, packing, masks

def test_buckets():
    assert shapes.pow2_buckets(128, 16) == [16, 32, 64, 128]
    assert shapes.pow2_buckets(100, 32) == [32, 64, 100]
    with pytest.raises(InputError):
        shapes.pow2_buckets(8, 16)


def test_packed_outputs_equal_padded_outputs(model):
    """The inference-side packing test: same requests, padded vs packed with a block-diagonal mask."""
    reqs = _requests([5, 17, 3, 30, 11, 8, 21])
    res = lab.padded_vs_packed(model, reqs, batch_size=3, capacity=32, repeats=1)
    assert res["within_fp32_tolerance"] and res["max_abs_diff"] < 1e-4
    assert res["packed_waste"] < res["padded_waste"]
    # and without the block-diagonal mask (plain causal over the packed row) they differ: the mask matters
    p = packing.pack(reqs[:3], 32)
    with torch.no_grad():
        leaky = packing.unpack(model(p.tokens, None, p.positions), p.doc_ids, 3)
        alone = [model(r[None])[0] for r in reqs[:3]]
    assert max(float((a - b).abs().max()) for a, b in zip(alone, leaky, strict=True)) > 1e-3


# ---------------------------------------------------------------- lab pieces

def test_tensor_parallel_shards_sum_to_the_full_model(model):
    tokens = torch.randint(0, 32, (2, 12))
    with torch.no_grad():
        full = model(tokens)
        shards = [[splits.tp_shard(b, r, 2) for b in model.blocks] for r in range(2)]
        x = model.embed(tokens)
        for layer in range(len(model.blocks)):  # an in-process all-reduce: the sum over the two ranks
            x = x + sum(shards[r][layer].attn(x, None) for r in range(2))
            x = x + sum(shards[r][layer].mlp(x) for r in range(2))
        tp = model.head(model.ln_f(x))
    assert float((tp - full).norm() / full.norm()) < 1e-5
    stages = splits.pp_stages(model, 2)
    assert [len(s) for s in stages] == [1, 1]


def test_split_latency_model_is_labelled_and_behaves():
    t = splits.split_model_table(tokens=(8,), splits=((1, 1), (2, 1), (1, 2)), links=("nvlink",))
    assert (t["source"] == "MODEL (not measured)").all()
    single, tp2, pp2 = (t.iloc[i] for i in range(3))
    assert tp2["compute_ms"] == pytest.approx(single["compute_ms"] / 2) and tp2["tp_comm_ms"] > 0
    assert pp2["compute_ms"] == pytest.approx(single["compute_ms"]) and pp2["latency_ms"] > single["latency_ms"]
    slow = splits.split_latency_model(tp=2, link=splits.LINKS["infiniband"])
    assert slow["tp_comm_ms"] > tp2["tp_comm_ms"]


def test_serve_stream_buckets_bound_compiles(model):
    """Exact shapes compile once per distinct shape; buckets compile once per bucket, before serving."""
    streams = [_requests([5, 9, 14, 40]), _requests([50, 6], seed=1)]  # exact shapes: 3 > 2 buckets
    buckets = [32, 64]
    exact, info_e = lab.serve_stream(model, streams, 2, "compiled_exact", buckets, backend="eager")
    bucketed, info_b = lab.serve_stream(model, streams, 2, "compiled_bucketed", buckets, backend="eager")
    assert info_e["compiles"] == exact[["padded_rows", "padded_len"]].drop_duplicates().shape[0] > len(buckets)
    assert exact["compiled"].sum() == info_e["compiles"]
    assert info_b["compiles"] <= len(buckets) and not bucketed["compiled"].any() and info_b["startup_s"] > 0
    assert set(bucketed["padded_len"]) <= set(buckets) and (bucketed["padded_rows"] == 2).all()
    assert lab.stream_summary(bucketed)["padding_waste"] > lab.stream_summary(exact)["padding_waste"]
    with pytest.raises(lab.WorkloadError):
        lab.serve_stream(model, streams, 2, "nonsense", buckets)


def _summary(b_compiles, b_while, b_p99, e_shapes, e_p99):
    rows = [{"variant": "compiled_bucketed", "pass": "all", "compiles": b_compiles, "compiled_batches": b_while,
             "p99_ms": b_p99, "distinct_shapes": 2},
            {"variant": "compiled_exact", "pass": "all", "compiles": e_shapes, "compiled_batches": e_shapes,
             "p99_ms": e_p99, "distinct_shapes": e_shapes}]
    return pd.DataFrame(rows)


def test_serving_verdict_rule():
    ok = {"within_fp32_tolerance": True, "max_abs_diff": 1e-6}
    assert lab.serving_verdict(_summary(3, 0, 10.0, 6, 900.0), [32, 64, 128], ok)[0] == "confirmed"
    assert lab.serving_verdict(_summary(3, 1, 10.0, 6, 900.0), [32, 64, 128], ok)[0] == "refuted"
    assert lab.serving_verdict(_summary(3, 0, 950.0, 6, 900.0), [32, 64, 128], ok)[0] == "refuted"
    bad = {"within_fp32_tolerance": False, "max_abs_diff": 0.3}
    assert lab.serving_verdict(_summary(3, 0, 10.0, 6, 900.0), [32, 64, 128], bad)[0] == "refuted"
    assert lab.serving_verdict(_summary(1, 0, 10.0, 1, 900.0), [32, 64, 128], ok)[0] == "inconclusive"


def test_request_lengths_are_long_tailed_and_clipped():
    n = lab.request_lengths(2000, median=32, sigma=0.8, max_len=128, seed=1)
    assert n.min() >= 4 and n.max() <= 128
    assert abs(float(pd.Series(n).median()) - 32) < 4 and n.mean() > pd.Series(n).median()  # right tail
