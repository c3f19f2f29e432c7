"""Bucketing and packing (playbook.labs.fixes.packing): packed and padded forward passes agree token for token."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from playbook.labs.fixes import packing as P
from playbook.labs.workloads.dist import MarkovCorpus, long_tailed_lengths
from playbook.labs.workloads.padding_packing import build_lm, make_batch


@pytest.fixture(scope="module")
def docs():
    lengths = long_tailed_lengths(14, 40, 1.0, 3, 120, seed=4)
    return [torch.as_tensor(d) for d in MarkovCorpus(seed=4).documents(lengths, seed=4)]


def test_packed_and_padded_forward_give_the_same_per_token_outputs(docs):
    model = build_lm(max_len=128, seed=1).eval()
    padded = make_batch(docs, "padded", 128)
    packed = make_batch(docs, "packed", 128)
    assert packed["tokens"].shape[0] < padded["tokens"].shape[0]  # several documents share a row
    with torch.no_grad():
        out_pad = model(padded["tokens"], padded["mask"], position_ids=padded["positions"])
        out_pack = model(packed["tokens"], packed["mask"], position_ids=packed["positions"])
    per_doc_pad = P.unpack(out_pad, padded["doc_ids"], len(docs))
    per_doc_pack = P.unpack(out_pack, packed["doc_ids"], len(docs))
    for d, a, b in zip(docs, per_doc_pad, per_doc_pack, strict=True):
        assert a.shape == b.shape == (len(d), 64)
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    # without the block-diagonal mask (causal only) documents attend to their row neighbours: outputs change
    causal = torch.ones(128, 128, dtype=torch.bool).tril()[None, None].expand(len(packed["tokens"]), 1, 128, 128)
    with torch.no_grad():
        leaky = model(packed["tokens"], causal, position_ids=packed["positions"])
    leaked = P.unpack(leaky, packed["doc_ids"], len(docs))
    assert max((a - b).abs().max().item() for a, b in zip(per_doc_pad, leaked, strict=True)) > 1e-3


def test_losses_and_gradients_agree_and_targets_never_cross_documents(docs):
    model = build_lm(max_len=128, seed=2)
    losses, grads = [], []
    for mode in ("padded", "packed"):
        b = make_batch(docs, mode, 128)
        assert not (b["valid"] & (b["doc_ids"] == P.PAD_DOC)).any()
        ends = torch.zeros_like(b["valid"])
        ends[:, :-1] = b["doc_ids"][:, :-1] != b["doc_ids"][:, 1:]
        assert not (b["valid"] & ends).any()  # a document's last token predicts nothing
        assert int(b["valid"].sum()) == sum(len(d) - 1 for d in docs)
        w = P.token_weights(b["doc_ids"], "sequence", valid=b["valid"])
        logits = model(b["tokens"], b["mask"], position_ids=b["positions"])
        tl = F.cross_entropy(logits.flatten(0, 1), b["targets"].flatten(), reduction="none")
        loss = (tl * w.flatten()).sum()
        model.zero_grad()
        loss.backward()
        losses.append(loss.item())
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-3, atol=1e-6)


def test_weighting_token_vs_sequence(docs):
    b = make_batch(docs, "packed", 128)
    for mode in ("token", "sequence"):
        w = P.token_weights(b["doc_ids"], mode, valid=b["valid"])
        assert float(w.sum()) == pytest.approx(1.0, abs=1e-5)
        assert float(w[~b["valid"]].abs().sum()) == 0.0
    share_seq = P.document_weight_share(b["doc_ids"], P.token_weights(b["doc_ids"], "sequence", valid=b["valid"]))
    share_tok = P.document_weight_share(b["doc_ids"], P.token_weights(b["doc_ids"], "token", valid=b["valid"]))
    torch.testing.assert_close(share_seq, torch.full_like(share_seq, 1 / len(docs)))
    lens = torch.tensor([len(d) - 1 for d in docs], dtype=torch.float32)
    torch.testing.assert_close(share_tok, lens / lens.sum())  # token-mean: a document weighs by its length
    with pytest.raises(ValueError):
        P.token_weights(b["doc_ids"], "bogus")


def test_positions_restart_per_document_and_cu_seqlens():
    pb = P.pack([torch.arange(3), torch.arange(5), torch.arange(2)], row_len=8)
    assert pb.tokens.shape == (2, 8) and pb.efficiency == pytest.approx(10 / 16)
    for r in range(2):
        ids, pos = pb.doc_ids[r], pb.positions[r]
        for d in ids.unique():
            if d >= 0:
                assert pos[ids == d].tolist() == list(range(int((ids == d).sum())))
    assert pb.cu_seqlens().tolist()[-1] == 10
    with pytest.raises(ValueError):
        P.plan_packing([9], 8)


def test_pack_balanced_gives_every_rank_the_same_rows():
    rng = np.random.default_rng(1)
    for _ in range(20):
        lens = np.clip(rng.lognormal(3.5, 1.0, 48).round(), 4, 256).astype(int)
        parts = P.pack_balanced(lens, 4, 256)
        assert len({len(rows) for rows in parts}) == 1
        members = sorted(i for rows in parts for row in rows for i in row)
        assert members == list(range(48))
        assert all(lens[row].sum() <= 256 for rows in parts for row in rows)


def test_length_bucketing_cuts_padding_and_keeps_every_sample_once():
    lens = long_tailed_lengths(512, 48, 1.0, 4, 256, seed=2)
    world, batch = 2, 16
    buck = P.LengthBucketedSampler(lens, batch, 0, world, seed=3, window=8)
    rand = P.LengthBucketedSampler(lens, batch, 0, world, seed=3, window=1)
    for s in (buck, rand):
        assert sorted(i for b in s.global_batches() for i in b) == list(range(512))
    per_rank = [b for gb in buck.global_batches() for b in buck.split(gb)]
    per_rank_rand = [b for gb in rand.global_batches() for b in rand.split(gb)]
    waste_b = P.batch_composition(per_rank, lens)
    waste_r = P.batch_composition(per_rank_rand, lens)
    assert waste_b["padded_tokens"].sum() < 0.7 * waste_r["padded_tokens"].sum()
    # the side effect: batches differ more from each other in composition
    assert waste_b["mean_len"].std() > 2 * waste_r["mean_len"].std()
