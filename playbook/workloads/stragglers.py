"""Lab: collective stragglers — one slow rank makes every rank wait inside the gradient all-reduce.

What it checks. A small next-token model trains data-parallel (gradients summed by one all-reduce after backward,
timed on its own as phase "collective"). Variants, interleaved in one process group, each its own recording:

  uniform    every sequence has the mean length: equal work on every rank (the reference)
  sw_fault   variable-length sequences (long-tailed), global batch split by count: the rank with the most tokens
             is slow, and which rank that is changes with the data (a *software* straggler)
  sw_fix     the same global batches split by tokens (playbook.fixes.balance): equal work again
  hw_fault   as sw_fix, plus one rank `--slow-factor` × slower every step (a *hardware* straggler: slow GPU,
             throttled clock, degraded link)
  hw_fix     the ranks the straggler score flagged in hw_fault are excluded (world size − 1, like a relaunch
             without that node), measured throughput of the healthy ranks

Each repeat draws new data (a reshuffle), so a persistent slowest rank across repeats points at hardware.
Waiting ranks spend the slow rank's extra time inside the all-reduce: on a GPU that is an NCCL kernel spinning,
which `utilization.gpu` counts as busy; `utilization_view` shows both accountings.

Run it (CPU: gloo; GPUs: NCCL, one GPU per rank, same code):

    torchrun --standalone --nproc-per-node 2 -m playbook.workloads.stragglers --steps 40 --run-dir runs/stragglers
    python -m playbook.workloads.stragglers --nproc 2 --steps 40          # spawns its own ranks
    python -m playbook.workloads.stragglers --nproc 4 --variants hw_fault,hw_fix --slow-rank 2 --nccl-debug

How to read the result: the table lists tokens/s per variant and repeat, then per-rank compute and collective
seconds per step for each fault. A hardware straggler shows one rank with straggler score < 0.75 in every repeat
(slowest in nearly every step, binomial p ≪ 0.05) while its token count is no larger than the others'; a software
straggler's slowest rank rotates and follows the token count. Then `playbook diagnose RUN_DIR/hw_fault-r0`.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.errors import WorkloadError
from playbook.workloads import dist as D

VARIANTS = ("uniform", "sw_fault", "sw_fix", "hw_fault", "hw_fix")
MODULE = "playbook.workloads.stragglers"


@dataclass
class StragglerConfig:
    """Knobs of the stragglers lab (see the module docstring). Lengths and counts are tokens / sequences."""

    run_dir: str = "runs/stragglers"
    variants: tuple[str, ...] = VARIANTS
    steps: int = 30  # training steps per (variant, repeat)
    repeats: int = 2  # repeats per variant, each with a new data shuffle
    batch: int = 8  # sequences per rank per step
    mean_len: float = 64.0  # mean sequence length (tokens)
    sigma: float = 1.0  # log-normal sigma of the lengths (0 = all equal)
    max_len: int = 512  # longest sequence (tokens)
    vocab: int = 64
    hidden: int = 256  # MLP width
    depth: int = 8  # weight-tied hidden layers: compute per token without more gradient to all-reduce
    lr: float = 3e-3
    slow_rank: int = -1  # rank made slow in hw_fault (-1: the last rank)
    slow_factor: float = 3.0  # compute time multiplier of the slow rank
    slow_mode: str = "sleep"  # sleep: the rank idles (slow device/host); compute: extra forward passes
    seed: int = 0
    device: str = "auto"
    sample_hz: float = 10.0
    warmup_steps: int = 3
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        self.variants = tuple(self.variants)
        bad = [v for v in self.variants if v not in VARIANTS]
        if bad:
            raise WorkloadError(f"unknown variant(s) {bad}; choose from {', '.join(VARIANTS)}")
        if "hw_fix" in self.variants and "hw_fault" not in self.variants:
            raise WorkloadError("hw_fix excludes the ranks flagged in hw_fault: run hw_fault too")
        if self.steps < 3 or self.repeats < 1 or self.batch < 1:
            raise WorkloadError("need steps >= 3, repeats >= 1, batch >= 1")
        if self.slow_factor < 1 or self.slow_mode not in ("sleep", "compute"):
            raise WorkloadError("slow_factor must be >= 1 and slow_mode 'sleep' or 'compute'")


# ----------------------------------------------------------------------------------------------------- model
def build_model(vocab: int, hidden: int, seed: int, depth: int = 8):
    """Next-token MLP over single tokens (a learned bigram model): compute is exactly proportional to tokens.

    The hidden layer is applied `depth` times with tied weights: compute per token grows with depth while the
    gradient (what the all-reduce moves) stays small — compute-heavy, communication-light, like a real model
    whose per-rank batch is large.
    """
    import torch
    from torch import nn

    class _TokenMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.hidden = nn.Linear(hidden, hidden)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, x):
            h = self.embed(x)
            for _ in range(depth):
                h = h + torch.nn.functional.gelu(self.hidden(h))
            return self.out(h)

    torch.manual_seed(seed)
    return _TokenMLP()


def _inputs(docs: list[np.ndarray], device) -> tuple[Any, Any]:
    """(inputs, targets) of next-token prediction over all documents, concatenated (no padding)."""
    import torch

    if not docs:
        z = torch.zeros(0, dtype=torch.long, device=device)
        return z, z
    x = np.concatenate([d[:-1] for d in docs])
    y = np.concatenate([d[1:] for d in docs])
    return torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)


# ----------------------------------------------------------------------------------------------------- one rank
def _blocks(variants: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Variants grouped so that hw_fix always directly follows hw_fault (it uses hw_fault's identification)."""
    out, rest = [], [v for v in variants if v not in ("hw_fault", "hw_fix")]
    out += [(v,) for v in rest]
    if "hw_fault" in variants:
        out.append(tuple(v for v in ("hw_fault", "hw_fix") if v in variants))
    return out


def rank_main(cfg: StragglerConfig) -> dict[str, Any] | None:
    """Everything one rank does; returns the gathered results on rank 0 (None elsewhere)."""
    import torch
    import torch.nn.functional as F

    from playbook.fixes.balance import TokenBalancedSampler
    from playbook.fixes.overlap import allreduce_gradients

    ctx = D.init_from_env(cfg.device)
    dist = torch.distributed
    world, rank = ctx.world_size, ctx.rank
    slow_rank = cfg.slow_rank if cfg.slow_rank >= 0 else world - 1
    if slow_rank >= world:
        raise WorkloadError(f"slow rank {slow_rank} outside world size {world}")
    corpus = D.MarkovCorpus(cfg.vocab, seed=cfg.seed)
    n_docs = cfg.steps * cfg.batch * world
    segments: list[dict[str, Any]] = []
    losses: list[dict[str, Any]] = []
    flagged: list[int] = []

    def run_segment(variant: str, repeat: int, record: bool) -> None:
        nonlocal flagged
        seed = cfg.seed * 1000 + repeat + 1  # a new shuffle per repeat (repeat -1: warm-up)
        if variant == "uniform":
            lengths = np.full(n_docs, int(round(_mean_length(cfg))), dtype=np.int64)
        else:
            lengths = D.long_tailed_lengths(n_docs, cfg.mean_len, cfg.sigma, 4, cfg.max_len, seed=seed)
        docs = corpus.documents(lengths, seed=seed)
        active = [r for r in range(world) if not (variant == "hw_fix" and r in flagged)]
        group = dist.new_group(active) if len(active) < world else None  # collective: every rank calls it
        slow = variant == "hw_fault" and rank == slow_rank
        model = build_model(cfg.vocab, cfg.hidden, cfg.seed, cfg.depth).to(ctx.device)
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        dist.barrier()
        if rank not in active:  # excluded: wait for the others at the closing barrier
            dist.barrier()
            segments.append({"variant": variant, "repeat": repeat, "rank": rank, "active": False})
            return
        sampler = TokenBalancedSampler(lengths, cfg.batch * len(active), active.index(rank), len(active),
                                       seed=seed, balanced=variant in ("sw_fix", "hw_fault", "hw_fix"))
        batches = sampler.global_batches()[: cfg.steps if record else cfg.warmup_steps]
        rec = D.rank_recorder(Path(cfg.run_dir) / f"{variant}-r{repeat}", rank=rank, sample_hz=cfg.sample_hz,
                              variant=variant, repeat=repeat, slow_rank=slow_rank if variant == "hw_fault" else -1,
                              active_ranks=active) if record else None
        timer = rec.timer if rec is not None else None
        if rec is not None:
            rec.start()
        D.device_sync(ctx.device)
        t0 = time.perf_counter()
        tokens_total = 0
        for i, gb in enumerate(batches):
            mine = sampler.split(gb)[active.index(rank)]
            targets_global = int(sum(lengths[j] - 1 for j in gb))
            tokens = int(sum(lengths[j] for j in mine))
            step_ctx = timer.step(i, tokens=tokens) if timer is not None else contextlib.nullcontext()
            with step_ctx:
                with D.maybe_phase(timer, "data"):
                    x, y = _inputs([docs[j] for j in mine], ctx.device)
                with D.maybe_phase(timer, "fwd"):
                    t_c = time.perf_counter()
                    loss_sum = F.cross_entropy(model(x), y, reduction="sum") if len(x) else model.out.weight.sum() * 0
                with D.maybe_phase(timer, "bwd"):
                    (loss_sum / max(1, targets_global)).backward()
                    if slow:
                        _slow_down(model, x, cfg, t_c, ctx.device)
                with D.maybe_phase(timer, "collective"):
                    (loss_global,) = allreduce_gradients(model.parameters(), divisor=1.0, group=group,
                                                         extra=[float(loss_sum.detach())])
                with D.maybe_phase(timer, "optimizer"):
                    opt.step()
                    opt.zero_grad(set_to_none=True)
            tokens_total += int(sum(lengths[j] for j in gb))
            if record and rank == active[0]:
                losses.append({"variant": variant, "repeat": repeat, "step": i, "loss": loss_global / targets_global,
                               "tokens_seen": tokens_total})
        D.device_sync(ctx.device)
        wall = time.perf_counter() - t0
        if rec is not None:
            rec.close()
        seg = {"variant": variant, "repeat": repeat, "rank": rank, "active": True, "wall_s": wall,
               "steps": len(batches), "tokens": tokens_total, "throughput": tokens_total / wall,
               "world": len(active), "run_dir": str(Path(cfg.run_dir) / f"{variant}-r{repeat}")}
        if record:
            segments.append(seg)
        dist.barrier()
        if group is not None:
            dist.destroy_process_group(group)
        if variant == "hw_fault" and record:
            flagged = _flag_stragglers(rec, ctx)

    run_segment("uniform" if "uniform" in cfg.variants else cfg.variants[0], -1, record=False)  # warm-up
    blocks = _blocks(cfg.variants)
    for rep in range(cfg.repeats):
        for block in blocks[rep % len(blocks):] + blocks[: rep % len(blocks)]:
            for variant in block:
                run_segment(variant, rep, record=True)
    gathered = D.gather_to_main({"segments": segments, "losses": losses, "flagged": flagged}, ctx)
    D.shutdown()
    if gathered is None:
        return None
    return {
        "segments": [s for g in gathered for s in g["segments"]],
        "losses": [r for g in gathered for r in g["losses"]],
        "flagged": gathered[0]["flagged"], "slow_rank": slow_rank, "world_size": world, "backend": ctx.backend,
        "config": asdict(cfg),
    }


def _mean_length(cfg: StragglerConfig) -> float:
    """The actual mean of the clipped long-tailed lengths (uniform uses it, so tokens per step match)."""
    return float(D.long_tailed_lengths(20000, cfg.mean_len, cfg.sigma, 4, cfg.max_len, seed=12345).mean())


def _slow_down(model, x, cfg: StragglerConfig, t_start: float, device) -> None:
    """Make this rank `slow_factor` × slower than its compute since `t_start` (perf_counter s): sleep (the device
    or host is slow) or extra forward passes (more device work)."""
    import torch

    D.device_sync(device)
    extra = (cfg.slow_factor - 1.0) * (time.perf_counter() - t_start)
    if cfg.slow_mode == "sleep":
        time.sleep(extra)
        return
    passes = max(1, round((cfg.slow_factor - 1.0) * 3))  # a forward is ~1/3 of forward + backward
    with torch.no_grad():
        for _ in range(passes):
            model(x)


def _flag_stragglers(rec: Any, ctx: D.DistContext) -> list[int]:
    """Ranks whose median compute (busy) time per step makes their straggler score < 0.75, agreed by all ranks."""
    import torch.distributed as dist

    busy = [b for _, _, b in rec.timer.recent] if rec is not None else []
    medians: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(medians, float(np.median(busy)) if busy else math.nan)
    scores = straggler_scores_from_medians(medians)
    return [r for r, s in enumerate(scores) if s < 0.75]


def straggler_scores_from_medians(medians: list[float]) -> list[float]:
    """Score per rank = median over ranks of the median compute time ÷ the rank's median (< 0.75 flags)."""
    a = np.asarray(medians, dtype=float)
    ref = np.nanmedian(a)
    return [float(ref / m) if m > 0 else math.nan for m in a]


# ----------------------------------------------------------------------------------------------------- parent side
@dataclass
class StragglerRun:
    """What `run` returns: one row per (variant, repeat, rank) segment, the loss curves, and the identification."""

    run_dir: str
    segments: pd.DataFrame
    losses: pd.DataFrame
    flagged: list[int]
    slow_rank: int
    world_size: int
    backend: str
    config: dict[str, Any]

    def throughput(self) -> pd.DataFrame:
        """One row per (variant, repeat): tokens/s of the job (from its lowest active rank) and active ranks."""
        seg = self.segments[self.segments["active"]]
        first = seg.sort_values("rank").groupby(["variant", "repeat"], sort=False).head(1)
        return first[["variant", "repeat", "throughput", "wall_s", "tokens", "world", "run_dir"]].reset_index(drop=True)

    def recording(self, variant: str, repeat: int = 0) -> str:
        """Run directory of one (variant, repeat) segment."""
        return str(Path(self.run_dir) / f"{variant}-r{repeat}")


def run(cfg: StragglerConfig, nproc: int = 2, start_method: str | None = None, nccl_debug: bool = False) -> StragglerRun:
    """Run the lab (torchrun-launched or spawning `nproc` ranks) and return its results."""
    env = D.nccl_debug_env(cfg.run_dir) if nccl_debug else None
    Path(cfg.run_dir).mkdir(parents=True, exist_ok=True)
    out = D.launch(rank_main, cfg, nproc, start_method=start_method, env=env)
    if out is None:
        return None  # a non-zero rank under torchrun
    return StragglerRun(cfg.run_dir, pd.DataFrame(out["segments"]), pd.DataFrame(out["losses"]), out["flagged"],
                        out["slow_rank"], out["world_size"], out["backend"], out["config"])


# ----------------------------------------------------------------------------------------------------- analyses
def rank_phase_table(steps: pd.DataFrame) -> pd.DataFrame:
    """Per rank: median seconds per step of compute (fwd+bwd+optimizer), collective, data, step; tokens/step."""
    wide = steps.pivot_table(index=["rank", "step"], columns="phase", values="duration_s", aggfunc="sum")
    tok = steps[steps["phase"] == "step"].set_index(["rank", "step"])["tokens"]
    wide["compute"] = wide.reindex(columns=["fwd", "bwd", "optimizer"]).fillna(0).sum(axis=1)
    wide["tokens"] = tok
    cols = [c for c in ("compute", "collective", "data", "step", "tokens") if c in wide]
    return wide[cols].groupby(level="rank").median().reset_index()


def utilization_view(steps: pd.DataFrame) -> pd.DataFrame:
    """Per rank: share of step time a utilization counter reports busy (compute + collective, as utilization.gpu
    counts a spinning NCCL kernel) vs the share doing real work (compute only), 0-1."""
    t = rank_phase_table(steps)
    t["counter_busy"] = ((t["compute"] + t["collective"]) / t["step"]).clip(upper=1.0)
    t["real_work"] = (t["compute"] / t["step"]).clip(upper=1.0)
    return t[["rank", "counter_busy", "real_work"]]


def slowest_rank_per_step(steps: pd.DataFrame) -> pd.DataFrame:
    """Per step: the rank with the longest compute time, and the rank with the most tokens."""
    wide = steps.pivot_table(index=["step", "rank"], columns="phase", values="duration_s", aggfunc="sum")
    comp = wide.reindex(columns=["fwd", "bwd", "optimizer"]).fillna(0).sum(axis=1).rename("compute")
    tok = steps[steps["phase"] == "step"].set_index(["step", "rank"])["tokens"]
    df = pd.concat([comp, tok], axis=1).reset_index()
    slow = df.loc[df.groupby("step")["compute"].idxmax(), ["step", "rank"]].rename(columns={"rank": "slowest"})
    most = df.loc[df.groupby("step")["tokens"].idxmax(), ["step", "rank"]].rename(columns={"rank": "most_tokens"})
    return slow.merge(most, on="step").reset_index(drop=True)


# ----------------------------------------------------------------------------------------------------- CLI
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m playbook.workloads.stragglers", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n", 1)[1].split("Run it")[0].strip(),
        epilog="examples:\n  " + D.torchrun_command(MODULE, 2, ["--steps", "40"]) + "\n"
               "  python -m playbook.workloads.stragglers --nproc 2 --steps 40\n"
               "  python -m playbook.workloads.stragglers --nproc 4 --variants hw_fault,hw_fix --slow-rank 2\n"
               "then: playbook diagnose runs/stragglers/hw_fault-r0")
    p.add_argument("--run-dir", default="runs/stragglers", help="where the recordings go (one folder per variant)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of " + ",".join(VARIANTS))
    p.add_argument("--steps", type=int, default=30, help="training steps per variant and repeat")
    p.add_argument("--repeats", type=int, default=2, help="repeats (each with reshuffled data)")
    p.add_argument("--batch", type=int, default=8, help="sequences per rank per step")
    p.add_argument("--mean-len", type=float, default=64.0, help="mean sequence length, tokens")
    p.add_argument("--sigma", type=float, default=1.0, help="log-normal sigma of the lengths (tail weight)")
    p.add_argument("--slow-rank", type=int, default=-1, help="rank slowed in hw_fault (-1: the last)")
    p.add_argument("--slow-factor", type=float, default=3.0, help="how many times slower the slow rank computes")
    p.add_argument("--slow-mode", default="sleep", choices=["sleep", "compute"],
                   help="sleep: slow device/host without using a core; compute: extra forward passes")
    p.add_argument("--hidden", type=int, default=256, help="model width")
    p.add_argument("--depth", type=int, default=8, help="weight-tied layers (compute per token)")
    p.add_argument("--seed", type=int, default=0)
    D.add_launch_arguments(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cfg = StragglerConfig(run_dir=args.run_dir, variants=tuple(v for v in args.variants.split(",") if v),
                          steps=args.steps, repeats=args.repeats, batch=args.batch, mean_len=args.mean_len,
                          sigma=args.sigma, slow_rank=args.slow_rank, slow_factor=args.slow_factor,
                          slow_mode=args.slow_mode, hidden=args.hidden, depth=args.depth, seed=args.seed, device=args.device)
    if not D.launched_by_torchrun():
        print(f"spawning {args.nproc} ranks (same as: {D.torchrun_command(MODULE, args.nproc, (argv or sys.argv[1:]))})",
              flush=True)
    res = run(cfg, nproc=args.nproc, start_method=args.start_method, nccl_debug=args.nccl_debug)
    if res is None:
        return 0
    from playbook import rundir

    tp = res.throughput()
    print(f"\nbackend {res.backend}, world size {res.world_size}; ranks flagged as stragglers in hw_fault: "
          f"{res.flagged} (slowed: {res.slow_rank})")
    print("\ntokens/s per variant (mean over repeats):")
    print(tp.groupby("variant", sort=False)["throughput"].agg(["mean", "std", "count"]).round(1).to_string())
    for variant in ("sw_fault", "hw_fault"):
        if variant in set(tp["variant"]):
            steps = rundir.read_run(res.recording(variant)).steps
            print(f"\n{variant} r0: median seconds per step by rank (compute vs waiting in the all-reduce):")
            print(rank_phase_table(steps).round(4).to_string(index=False))
    print(f"\nrecordings: {res.run_dir}/<variant>-r<repeat>/  →  playbook diagnose {res.recording('hw_fault')}")
    return 0


if __name__ == "__main__":
    from playbook.errors import PlaybookError

    try:
        sys.exit(main())
    except PlaybookError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
