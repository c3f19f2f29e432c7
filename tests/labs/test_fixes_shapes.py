"""playbook.labs.fixes.shapes: bucket lengths, padding, the padding mask and the padding share."""

from __future__ import annotations

import math

import pytest
import torch

from playbook.core.errors import InputError
from playbook.labs.fixes import shapes


def test_bucket_length_truncates_or_rejects_beyond_the_largest():
    assert shapes.bucket_length(1, [16, 32]) == 16 and shapes.bucket_length(17, [16, 32]) == 32
    assert shapes.bucket_length(99, [16, 32]) == 32  # training: the caller truncates
    assert shapes.bucket_length(33, [32, 64, 128]) == 64 and shapes.bucket_length(32, [64, 32]) == 32
    with pytest.raises(InputError, match="exceeds the largest bucket"):
        shapes.bucket_length(129, [32, 64, 128], strict=True)


def test_padding_waste_per_sequence_one_width_or_the_longest():
    assert shapes.padding_waste([2, 4], [4, 4]) == pytest.approx(0.25)
    assert shapes.padding_waste([2, 4], 4) == pytest.approx(0.25)
    assert shapes.padding_waste([4, 4]) == 0.0 and shapes.padding_waste([1, 3]) == pytest.approx(1 / 3)
    assert shapes.padding_waste([6], [4]) == 0.0  # truncated: every computed position is real
    assert math.isnan(shapes.padding_waste([]))


def _seqs(lengths):
    return [torch.arange(1, n + 1) for n in lengths]


def test_pad_batch_rejects_or_truncates_overlong():
    tok, lengths = shapes.pad_batch(_seqs([2, 5]), pad_id=0)
    assert tok.shape == (2, 5) and lengths.tolist() == [2, 5] and (tok[0, 2:] == 0).all()
    with pytest.raises(InputError):
        shapes.pad_batch(_seqs([6]), length=4)
    cut, cut_lengths = shapes.pad_batch(_seqs([6]), length=4, truncate=True)
    assert cut.tolist() == [[1, 2, 3, 4]] and cut_lengths.tolist() == [4]
    tokens, labels = shapes.collate_padded([(s, torch.tensor(i)) for i, s in enumerate(_seqs([3, 1]))])
    assert tokens.shape == (2, 3) and labels.tolist() == [0, 1]


def test_padded_mask_is_causal_over_real_tokens_only():
    m = shapes.padded_attention_mask(torch.tensor([2, 4]), 4)[:, 0]
    for row, n in enumerate([2, 4]):
        for q in range(4):
            for k in range(4):
                expect = (k <= q and q < n and k < n) or (q >= n and k == q)  # padding slots see themselves only
                assert bool(m[row, q, k]) == expect
    assert m.any(-1).all()  # no empty softmax row
    assert shapes.padded_attention_mask(torch.tensor([3]), 3, causal=False)[0, 0].all()


def test_padded_inputs_pads_the_batch_dimension_too():
    tok, mask, lengths = shapes.padded_inputs(_seqs([3, 2]), length=4, batch_size=3)
    assert tok.shape == (3, 4) and mask.shape == (3, 1, 4, 4) and lengths.tolist() == [3, 2, 1]
