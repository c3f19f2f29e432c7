"""The labs' tiny models, one definition each: an MLP classifier, a pre-LN transformer block, a causal LM and a
sequence classifier built from it.

    MLP(features, classes, hidden, depth)      labs 02, 10-13, 23 (depth × Linear+GELU), 31 (uint8 pixels: scale)
    TinyLM(ModelConfig(...))                   labs 21 (padded vs packed training) and 30 (serving);
                                               periodic_tokens: a next-token task it learns in seconds
    TinyTransformer(vocab, d_model, ...)       lab 14 (recompilation) and 40: padding-invariant classifier

Every model is tiny on purpose: the labs must run on a 2-core CPU in seconds, and what they study (the time a step
spends outside compute) does not depend on the model's size. Masks are boolean, True = may attend
(torch.nn.functional.scaled_dot_product_attention's convention).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from playbook.core.errors import WorkloadError


class MLP(nn.Module):
    """Flatten → `depth` × (Linear + GELU) of width `hidden` → Linear to `classes`. `input_scale` multiplies the
    (float) input first, e.g. 1/255 for uint8 pixels."""

    def __init__(self, features: int, classes: int = 10, hidden: int = 512, depth: int = 2, input_scale: float = 1.0):
        super().__init__()
        self.input_scale = float(input_scale)
        layers: list[nn.Module] = [nn.Flatten()]
        width = features
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.GELU()]
            width = hidden
        layers.append(nn.Linear(width, classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.input_scale != 1.0 or not x.is_floating_point():
            x = x.float() * self.input_scale
        return self.net(x)

    @classmethod
    def for_dataset(cls, data, hidden: int = 512, depth: int = 2) -> MLP:
        """An MLP sized for `data`'s samples and classes (data.features, data.classes)."""
        return cls(data.features, data.classes, hidden, depth)


@dataclass
class ModelConfig:
    """A small causal transformer (sizes in elements)."""

    vocab: int = 128
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    d_ff: int = 256
    max_len: int = 256


class Block(nn.Module):
    """Pre-LN transformer block. `heads` may be a slice of the model's heads (tensor-parallel shard)."""

    def __init__(self, d_model: int, heads: int, head_dim: int, d_ff: int):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * heads * head_dim)
        self.out = nn.Linear(heads * head_dim, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def attn(self, x, mask):
        """Attention output projection (without residual), [B, L, d_model]; mask None = causal."""
        B, L, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, L, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
        return self.out(a.transpose(1, 2).reshape(B, L, self.heads * self.head_dim))

    def mlp(self, x):
        return self.fc2(F.gelu(self.fc1(self.ln2(x))))

    def forward(self, x, mask=None):
        x = x + self.attn(x, mask)
        return x + self.mlp(x)


def _blocks(d_model: int, heads: int, layers: int, d_ff: int) -> nn.ModuleList:
    if d_model % heads:
        raise WorkloadError(f"d_model {d_model} is not divisible by heads {heads}")
    return nn.ModuleList(Block(d_model, heads, d_model // heads, d_ff) for _ in range(layers))


class TinyLM(nn.Module):
    """Token + learned position embeddings, pre-LN blocks, LM head. forward(tokens, attn_mask=None (causal),
    position_ids=None (0..L-1)) -> logits [B, L, vocab]; per-document positions and a block-diagonal mask serve
    packed rows."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.emb = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = _blocks(cfg.d_model, cfg.heads, cfg.layers, cfg.d_ff)
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab)

    def embed(self, tokens, position_ids=None):
        if position_ids is None:
            position_ids = torch.arange(tokens.shape[1], device=tokens.device)[None]
        return self.emb(tokens) + self.pos(position_ids)

    def forward(self, tokens, attn_mask=None, position_ids=None):
        x = self.embed(tokens, position_ids)
        for blk in self.blocks:
            x = blk(x, attn_mask)
        return self.head(self.ln_f(x))


class TinyTransformer(nn.Module):
    """Embedding → `layers` pre-LN blocks → masked mean pooling → classifier. Padding (token 0) is masked out of
    attention keys and of the pooling, so padded and unpadded batches give the same logits."""

    def __init__(self, vocab: int = 64, d_model: int = 32, heads: int = 2, layers: int = 1, classes: int = 2,
                 max_len: int = 512):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = _blocks(d_model, heads, layers, 4 * d_model)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        keep = tokens != 0  # [B, L]
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        h = self.embed(tokens) + self.pos(pos)[None]
        for block in self.blocks:
            h = block(h, keep[:, None, None, :])
        h = self.norm(h) * keep[..., None]
        pooled = h.sum(1) / keep.sum(1, keepdim=True).clamp(min=1)
        return self.head(pooled)


def periodic_tokens(batch: int, length: int, vocab: int, generator: torch.Generator) -> torch.Tensor:
    """Sequences that repeat a random pattern of period 2-8: learnable next-token task, [batch, length]."""
    period = torch.randint(2, 9, (batch,), generator=generator)
    pattern = torch.randint(0, vocab, (batch, 8), generator=generator)
    return pattern.gather(1, torch.arange(length)[None] % period[:, None])
