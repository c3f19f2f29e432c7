"""Lab: padding vs packing — dynamic padding wastes compute and unbalances ranks; bucketing and packing fix it.

What it checks. A small causal transformer LM trains data-parallel on documents with long-tailed lengths
(log-normal, most short, a few near the maximum). Variants, interleaved in one process group:

  padded     random global batches split by count; each rank pads its sequences to its own longest
             (dynamic padding): most slots are padding, and the rank that drew the longest document makes the
             others wait at the gradient all-reduce
  bucketed   length-bucketed global batches (playbook.labs.fixes.packing.LengthBucketedSampler): similar lengths in a
             step, so little padding and similar shapes on every rank; batch composition changes
  packed     the same global batches as `padded`, documents packed into rows of `--row-len` tokens with a
             block-diagonal (per-document) causal mask and per-document positions, the same number of rows on
             every rank (playbook.labs.fixes.packing.pack_balanced): no padding waste beyond the last row, no wait

The loss is normalised by the global count of target tokens in every variant, so `padded` and `packed` compute the
same gradient on the same documents: their loss curves coincide (up to float rounding), which is the convergence
check. Bucketing trains on differently composed steps; its loss is compared per token seen.

Run it (CPU: gloo; GPUs: NCCL, one GPU per rank, same code):

    torchrun --standalone --nproc-per-node 2 -m playbook.labs.workloads.padding_packing --steps 30
    python -m playbook.labs.workloads.padding_packing --nproc 2 --steps 30        # spawns its own ranks

How to read the result: per variant, real tokens/s, padding waste (share of computed slots that are padding),
the per-step imbalance of computed slots across ranks (max ÷ mean), and the share of step time the ranks spend in
the all-reduce ("collective", mostly waiting). Packing and bucketing should cut waste and wait and raise tokens/s.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from playbook.analysis.stats import paired_bootstrap
from playbook.core.errors import WorkloadError
from playbook.labs.workloads import dist as D
from playbook.labs.workloads._harness import cli, knob, lab_parser, run_distributed

VARIANTS = ("padded", "bucketed", "packed")
MODULE = "playbook.labs.workloads.padding_packing"


@dataclass
class PackingConfig:
    """Knobs of the padding/packing lab. Lengths in tokens; batch = documents per rank per step."""

    run_dir: str = knob("runs/padding_packing", "where the recordings go (one folder per variant and repeat)")
    variants: tuple[str, ...] = knob(VARIANTS, "comma-separated subset of the variants")
    steps: int = knob(20, "training steps per variant and repeat")
    repeats: int = knob(2, "repeats (each with new documents)")
    batch: int = knob(16, "documents per rank per step")
    mean_len: float = knob(48.0, "mean document length (tokens); lengths are log-normal")
    sigma: float = knob(1.0, "log-normal sigma of the lengths (the tail weight)")
    max_len: int = knob(256, "longest document (tokens)")
    row_len: int = knob(256, "packed row length in tokens, at least max_len (documents are never split)")
    window: int = knob(16, "bucketing window (global batches sorted together)")
    vocab: int = knob(64, "vocabulary size (tokens)")
    d_model: int = knob(64, "transformer width")
    heads: int = knob(4, "attention heads")
    layers: int = knob(2, "transformer blocks")
    lr: float = knob(3e-3, "learning rate")
    seed: int = knob(0, "random seed")
    device: str = knob("auto", "auto | cpu | cuda")
    sample_hz: float = knob(10.0, "telemetry sampling rate (Hz)")
    warmup_steps: int = knob(2, "untimed steps first")

    def __post_init__(self):
        self.variants = tuple(self.variants)
        bad = [v for v in self.variants if v not in VARIANTS]
        if bad:
            raise WorkloadError(f"unknown variant(s) {bad}; choose from {', '.join(VARIANTS)}")
        if self.row_len < self.max_len:
            raise WorkloadError(f"row_len {self.row_len} must be >= max_len {self.max_len} (documents are not split)")
        if self.steps < 2 or self.repeats < 1 or self.batch < 1:
            raise WorkloadError("need steps >= 2, repeats >= 1, batch >= 1")


CONFIG = PackingConfig


# ----------------------------------------------------------------------------------------------------- model
def build_lm(vocab: int = 64, d_model: int = 64, heads: int = 4, layers: int = 2, max_len: int = 512, seed: int = 0):
    """The lab's causal LM (playbook.labs.workloads.models.TinyLM, d_ff = 4 × d_model), seeded: forward(tokens,
    attn_mask, position_ids) → logits [B, L, vocab]. attn_mask is boolean [B, 1, L, L] (True = may attend, e.g.
    playbook.labs.fixes.shapes.packed_attention_mask), so the same model trains on padded and packed batches;
    positions restart in every document."""
    import torch

    from playbook.labs.workloads.models import ModelConfig, TinyLM

    torch.manual_seed(seed)
    return TinyLM(ModelConfig(vocab=vocab, d_model=d_model, heads=heads, layers=layers, d_ff=4 * d_model,
                              max_len=max_len))


def make_batch(docs: list, mode: str, row_len: int, rows: list[list[int]] | None = None) -> dict[str, Any]:
    """Tensors for one rank's step: tokens, doc_ids, positions, mask, targets, valid; `mode` padded or packed.

    rows: for packed, which of `docs` go in which row (from pack_balanced); None packs them with first-fit.
    """
    import torch

    from playbook.labs.fixes import packing as P
    from playbook.labs.fixes import shapes as S

    seqs = [torch.as_tensor(d) for d in docs]
    if not seqs:  # a rank with nothing this step still joins the all-reduce
        z = torch.zeros(0, 1, dtype=torch.long)
        return {"tokens": z, "doc_ids": z - 1, "positions": z, "mask": torch.ones(0, 1, 1, 1, dtype=torch.bool),
                "targets": z, "valid": z.bool()}
    if mode == "packed":
        pb = P.pack(seqs, row_len, rows=rows)
        tokens, doc_ids, positions = pb.tokens, pb.doc_ids, pb.positions
    else:
        tokens, lengths = S.pad_batch(seqs)
        doc_ids = S.padded_doc_ids(lengths, tokens.shape[1])
        positions = P.positions_from_doc_ids(doc_ids)
    targets, valid = P.next_token_targets(tokens, doc_ids)
    return {"tokens": tokens, "doc_ids": doc_ids, "positions": positions,
            "mask": S.packed_attention_mask(doc_ids), "targets": targets, "valid": valid}


# ----------------------------------------------------------------------------------------------------- one rank
def rank_main(cfg: PackingConfig) -> dict[str, Any] | None:
    """Everything one rank does; returns the gathered results on rank 0 (None elsewhere).

    Per repeat (new documents), every variant keeps its own model and recording, and the variants take turns step
    by step (rotating order, a barrier before each step), so machine-load drift hits all of them alike.
    """
    import torch

    from playbook.labs.fixes import packing as P
    from playbook.labs.fixes.balance import TokenBalancedSampler

    ctx = D.init_from_env(cfg.device)
    dist = torch.distributed
    world, rank = ctx.world_size, ctx.rank
    corpus = D.MarkovCorpus(cfg.vocab, seed=cfg.seed)
    segments: list[dict[str, Any]] = []
    step_rows: list[dict[str, Any]] = []
    losses: list[dict[str, Any]] = []

    def make(variant: str, seed: int, n_steps: int, record: str | None) -> dict[str, Any]:
        lengths = D.long_tailed_lengths(n_steps * cfg.batch * world, cfg.mean_len, cfg.sigma, 4, cfg.max_len,
                                        seed=seed)
        if variant == "bucketed":
            smp = P.LengthBucketedSampler(lengths, cfg.batch, rank, world, seed=seed, window=cfg.window)
        else:  # random global batches, split by count (the DistributedSampler baseline; packed re-splits them)
            smp = TokenBalancedSampler(lengths, cfg.batch * world, rank, world, seed=seed, balanced=False)
        model = build_lm(cfg.vocab, cfg.d_model, cfg.heads, cfg.layers, cfg.row_len, cfg.seed).to(ctx.device)
        sampled = "padded" if "padded" in cfg.variants else cfg.variants[0]  # samplers in one recording only
        rec = D.rank_recorder(record, rank=rank, sample_hz=cfg.sample_hz, variant=variant,
                              samplers=None if variant == sampled else False).start() if record else None
        return {"name": variant, "lengths": lengths, "docs": corpus.documents(lengths, seed=seed), "sampler": smp,
                "batches": smp.global_batches(), "model": model, "rec": rec, "tokens": 0, "seconds": 0.0,
                "opt": torch.optim.Adam(model.parameters(), lr=cfg.lr)}

    warm = make(cfg.variants[0], 0, cfg.warmup_steps, None)
    for i in range(cfg.warmup_steps):
        dist.barrier()
        _train_step(warm, i, cfg, ctx, None)
    for rep in range(cfg.repeats):
        seed = cfg.seed * 1000 + rep + 1
        states = [make(v, seed, cfg.steps, str(Path(cfg.run_dir) / f"{v}-r{rep}")) for v in cfg.variants]
        for i in range(cfg.steps):
            for st in states[i % len(states):] + states[: i % len(states)]:
                dist.barrier()
                loss, row = _train_step(st, i, cfg, ctx, st["rec"].timer)
                step_rows.append(row | {"variant": st["name"], "repeat": rep, "step": i, "rank": rank})
                if rank == 0:
                    losses.append({"variant": st["name"], "repeat": rep, "step": i, "loss": loss,
                                   "tokens_seen": st["tokens"]})
        dist.barrier()
        for st in states:
            st["rec"].close()
            segments.append({"variant": st["name"], "repeat": rep, "rank": rank, "seconds": st["seconds"],
                             "steps": cfg.steps, "tokens": st["tokens"], "throughput": st["tokens"] / st["seconds"],
                             "run_dir": str(Path(cfg.run_dir) / f"{st['name']}-r{rep}")})
    for row in losses:  # one device read per loss, after training (no host sync inside the loop)
        row["loss"] = float(row["loss"])
    gathered = D.gather_to_main({"segments": segments, "steps": step_rows, "losses": losses}, ctx)
    D.shutdown()
    if gathered is None:
        return None
    return {"segments": [s for g in gathered for s in g["segments"]],
            "steps": [s for g in gathered for s in g["steps"]],
            "losses": [r for g in gathered for r in g["losses"]],
            "world_size": world, "backend": ctx.backend, "config": asdict(cfg)}


def _train_step(st: dict[str, Any], i: int, cfg: PackingConfig, ctx: D.DistContext,
                timer: Any) -> tuple[float, dict[str, Any]]:
    """One data-parallel step of variant `st` (padded / bucketed / packed) on its global batch `i`.

    Returns the global mean token loss and this rank's shape figures (tokens, slots, rows, docs, mean_len).
    """
    import torch.nn.functional as F

    from playbook.labs.fixes import packing as P
    from playbook.labs.fixes.balance import split_evenly
    from playbook.labs.fixes.overlap import allreduce_gradients

    world, rank = ctx.world_size, ctx.rank
    gb = st["batches"][i]
    glen = st["lengths"][gb]
    n_targets = int((glen - 1).sum())
    rows = None
    if st["name"] == "packed":
        plan = P.pack_balanced(glen, world, cfg.row_len)[rank]
        mine = sorted({j for row in plan for j in row})
        local = {j: k for k, j in enumerate(mine)}
        rows = [[local[j] for j in row] for row in plan]
    elif st["name"] == "bucketed":
        mine = list(range(rank, len(gb), world))  # the sampler deals the length-sorted batch out like cards
    else:
        mine = split_evenly(len(gb), world)[rank]
    real = int(glen[mine].sum())
    t0 = time.perf_counter()
    with timer.step(i, tokens=real) if timer is not None else contextlib.nullcontext():
        with D.maybe_phase(timer, "data"):
            b = make_batch([st["docs"][gb[j]] for j in mine], "packed" if rows is not None else "padded",
                           cfg.row_len, rows)
            b = {k: v.to(ctx.device) for k, v in b.items()}
            w = P.token_weights(b["doc_ids"], "token", valid=b["valid"], n_tokens=n_targets)
        with D.maybe_phase(timer, "fwd"):
            if b["tokens"].numel():
                logits = st["model"](b["tokens"], b["mask"], position_ids=b["positions"])
                token_loss = F.cross_entropy(logits.flatten(0, 1), b["targets"].flatten(), reduction="none")
                loss = (token_loss * w.flatten()).sum()
            else:
                loss = st["model"].head.weight.sum() * 0
        with D.maybe_phase(timer, "bwd"):
            loss.backward()
        with D.maybe_phase(timer, "collective"):
            loss_global = allreduce_gradients(st["model"].parameters(), divisor=1.0, extra=[loss.detach()])
        with D.maybe_phase(timer, "optimizer"):
            st["opt"].step()
            st["opt"].zero_grad(set_to_none=True)
        D.device_sync(ctx.device)
    st["seconds"] += time.perf_counter() - t0
    st["tokens"] += int(glen.sum())
    return loss_global, {"tokens": real, "slots": int(b["tokens"].numel()), "rows": int(b["tokens"].shape[0]),
                         "docs": len(mine), "mean_len": float(glen[mine].mean()) if mine else 0.0}


# ----------------------------------------------------------------------------------------------------- parent side
@dataclass
class PackingRun:
    """What `run` returns: segments (variant, repeat, rank), per-step per-rank shapes, loss curves."""

    run_dir: str
    segments: pd.DataFrame
    steps: pd.DataFrame
    losses: pd.DataFrame
    world_size: int
    backend: str
    config: dict[str, Any]

    def throughput(self) -> pd.DataFrame:
        """One row per (variant, repeat): real tokens/s of the job (rank 0's summed step times)."""
        seg = self.segments[self.segments["rank"] == 0]
        return seg[["variant", "repeat", "throughput", "seconds", "tokens", "run_dir"]].reset_index(drop=True)

    def recording(self, variant: str, repeat: int = 0) -> str:
        return str(Path(self.run_dir) / f"{variant}-r{repeat}")


def run(cfg: PackingConfig, nproc: int = 2, start_method: str | None = None, nccl_debug: bool = False,
        argv: list[str] | None = None) -> PackingRun | None:
    """Run the lab (torchrun-launched or spawning `nproc` ranks) and return its results (None on ranks > 0)."""
    out = D.run_lab(rank_main, cfg, nproc, start_method, nccl_debug, argv)
    if out is None:
        return None
    return PackingRun(cfg.run_dir, pd.DataFrame(out["segments"]), pd.DataFrame(out["steps"]),
                      pd.DataFrame(out["losses"]), out["world_size"], out["backend"], out["config"])


# ----------------------------------------------------------------------------------------------------- analyses
def shape_summary(steps: pd.DataFrame) -> pd.DataFrame:
    """Per variant: padding waste (share of computed slots that are padding, 0-1), the median per-step imbalance of
    slots across ranks (max ÷ mean; 1 = equal work) and of real tokens, and mean slots per rank-step."""
    per_step = steps.groupby(["variant", "repeat", "step"]).agg(
        slots_max=("slots", "max"), slots_mean=("slots", "mean"), tok_max=("tokens", "max"),
        tok_mean=("tokens", "mean"), slots=("slots", "sum"), tokens=("tokens", "sum"))
    per_step["slot_imbalance"] = per_step["slots_max"] / per_step["slots_mean"]
    per_step["token_imbalance"] = per_step["tok_max"] / per_step["tok_mean"]
    g = per_step.groupby(level="variant", sort=False)
    out = pd.DataFrame({
        "padding_waste": 1 - g["tokens"].sum() / g["slots"].sum(),
        "slot_imbalance": g["slot_imbalance"].median(),
        "token_imbalance": g["token_imbalance"].median(),
        "slots_per_rank_step": g["slots_mean"].mean(),
    })
    return out.reset_index()


def batch_length_spread(steps: pd.DataFrame) -> pd.DataFrame:
    """Per variant: the spread of mean document length between steps (std and 10-90% range, tokens). Bucketing
    widens it (short steps and long steps) — the change in batch composition."""
    per = steps.groupby(["variant", "repeat", "step"])["mean_len"].mean().reset_index()
    g = per.groupby("variant", sort=False)["mean_len"]
    return pd.DataFrame({"std": g.std(), "p10": g.quantile(0.1), "p90": g.quantile(0.9)}).reset_index()


def weighting_demo(n_docs: int = 12, mean_len: float = 48.0, row_len: int = 256, seed: int = 0) -> pd.DataFrame:
    """How packing changes per-document loss weight, and the correction, on one batch (no training).

    Per document (its length): its weight share under a padded per-sequence mean loss (the common padded loss),
    under a packed token-mean loss (each document weighs by its length), and under the packed loss corrected with
    `token_weights(..., "sequence")`, which reproduces the padded weights exactly.
    """
    import torch

    from playbook.labs.fixes import packing as P
    from playbook.labs.fixes import shapes as S

    lengths = D.long_tailed_lengths(n_docs, mean_len, 1.0, 4, row_len, seed=seed)
    docs = [torch.as_tensor(d) for d in D.MarkovCorpus(seed=seed).documents(lengths, seed=seed)]
    toks, padded_lengths = S.pad_batch(docs)
    ids = S.padded_doc_ids(padded_lengths, toks.shape[1])
    _, valid = P.next_token_targets(toks, ids)
    padded = P.document_weight_share(ids, P.token_weights(ids, "sequence", valid=valid))
    pb = P.pack(docs, row_len)
    _, pvalid = P.next_token_targets(pb.tokens, pb.doc_ids)
    naive = P.document_weight_share(pb.doc_ids, P.token_weights(pb.doc_ids, "token", valid=pvalid))
    fixed = P.document_weight_share(pb.doc_ids, P.token_weights(pb.doc_ids, "sequence", valid=pvalid))
    return pd.DataFrame({"doc": range(n_docs), "length": lengths, "padded_per_sequence": padded.numpy(),
                         "packed_token_mean": naive.numpy(), "packed_corrected": fixed.numpy()})


def collective_wait_share(res: PackingRun) -> pd.DataFrame:
    """Per variant: the share of the ranks' step time spent waiting in the all-reduce for the last arrival (0-1),
    from the recordings (collective time beyond each step's shortest; playbook.analysis.rank_stragglers)."""
    from playbook.analysis.rank_stragglers import steps_per_rank
    from playbook.readers import rundir

    rows = []
    for v in res.segments["variant"].unique():
        per = pd.concat([steps_per_rank(rundir.read_run(res.recording(v, r)).steps)
                         for r in sorted(res.segments.loc[res.segments["variant"] == v, "repeat"].unique())])
        rows.append({"variant": v, "wait_share": per["collective_wait_s"].sum() / per["step_s"].sum(),
                     "collective_share": per["collective_s"].sum() / per["step_s"].sum()})
    return pd.DataFrame(rows)


def assess(res: PackingRun) -> dict[str, Any]:
    """The lab's verdict and figures.

    confirmed: packing speeds up the step on the same documents (paired step-time ratio padded ÷ packed with its
      95% interval above 1), removes most padding, cuts the collective wait, and leaves the loss curve unchanged
      (padded and packed losses equal within 1e-3 relative: same gradient).
    refuted: the paired ratio's interval lies at or below 1 (packing does not help here).
    inconclusive: otherwise.
    """
    from playbook.labs.workloads.collective_stragglers import job_step_times

    a = job_step_times(res, "padded").set_index(["repeat", "step"])["duration_s"]
    b = job_step_times(res, "packed").set_index(["repeat", "step"])["duration_s"]
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1).dropna()
    speed = paired_bootstrap(both["a"], both["b"], "ratio")
    shapes = shape_summary(res.steps).set_index("variant")
    waits = collective_wait_share(res).set_index("variant")
    tp = res.throughput().groupby("variant")["throughput"].mean()
    lw = res.losses.pivot_table(index=["repeat", "step"], columns="variant", values="loss")
    loss_gap = float(((lw["packed"] - lw["padded"]).abs() / lw["padded"].abs()).max())
    figures = {
        "packed_speedup": speed["median"], "packed_speedup_lo": speed["lo"], "packed_speedup_hi": speed["hi"],
        "throughput_padded": float(tp["padded"]), "throughput_packed": float(tp["packed"]),
        "throughput_bucketed": float(tp.get("bucketed", float("nan"))),
        "waste_padded": float(shapes.loc["padded", "padding_waste"]),
        "waste_packed": float(shapes.loc["packed", "padding_waste"]),
        "waste_bucketed": float(shapes.loc["bucketed", "padding_waste"]) if "bucketed" in shapes.index else None,
        "slot_imbalance_padded": float(shapes.loc["padded", "slot_imbalance"]),
        "slot_imbalance_packed": float(shapes.loc["packed", "slot_imbalance"]),
        "wait_share_padded": float(waits.loc["padded", "wait_share"]),
        "wait_share_packed": float(waits.loc["packed", "wait_share"]),
        "loss_max_rel_gap": loss_gap,
    }
    checks = {"packing speeds up the step": bool(speed["lo"] > 1.0),
              "packing removes padding": bool(figures["waste_packed"] < figures["waste_padded"]),
              "packing cuts the collective wait": bool(figures["wait_share_packed"] < figures["wait_share_padded"]),
              "loss curve unchanged": bool(loss_gap < 1e-3)}
    refuted = f"packing does not speed up the step here ({speed['median']:.2f}×)" if speed["hi"] <= 1.0 else None
    return D.checked_verdict(checks, figures, refuted, lambda: (
        f"dynamic padding wastes {figures['waste_padded']:.0%} of computed slots; packing cuts that to "
        f"{figures['waste_packed']:.0%}, the step runs {speed['median']:.2f}× faster on the same documents "
        f"and the loss curve is unchanged"))


# ----------------------------------------------------------------------------------------------------- CLI
def _parser() -> argparse.ArgumentParser:
    p = lab_parser(MODULE, __doc__, [
        "python -m playbook.labs.workloads.padding_packing --nproc 2 --steps 30",
        "python -m playbook.labs.workloads.padding_packing --nproc 4 --variants padded,packed --sigma 1.2"],
        "playbook diagnose runs/padding_packing/padded-r0", PackingConfig, distributed=True)
    return p


def main(argv: list[str] | None = None) -> int:
    cfg, res = run_distributed(_parser(), PackingConfig, run, argv)
    if res is None:
        return 0
    tp = res.throughput().groupby("variant", sort=False)["throughput"].agg(["mean", "std"])
    shapes = shape_summary(res.steps).set_index("variant")
    print(f"\nbackend {res.backend}, world size {res.world_size}")
    print(tp.join(shapes).round(3).to_string())
    print(f"\nrecordings: {res.run_dir}/<variant>-r<repeat>/")
    return 0


if __name__ == "__main__":
    cli(main)
