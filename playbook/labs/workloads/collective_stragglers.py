"""Lab: collective stragglers — one slow rank makes every rank wait inside the gradient all-reduce.

What it checks. A small next-token model trains data-parallel (gradients summed by one all-reduce after backward,
timed on its own as phase "collective"). Five variants share one process group, each with its own model and its own
recording, and take turns step by step (rotating order), so machine-load drift hits all of them alike:

  uniform    every sequence has the mean length: equal work on every rank (the reference)
  sw_fault   variable-length sequences (long-tailed), global batch split by count: the rank with the most tokens
             is slow, and which rank that is changes with the data (a *software* straggler)
  sw_fix     the same global batches split by tokens (playbook.labs.fixes.balance): equal work again
  hw_fault   as sw_fix, plus one rank `--slow-factor` × slower every step (a *hardware* straggler: slow GPU,
             throttled clock, degraded link)
  hw_fix     the ranks the straggler score flags in a short identification run of hw_fault are excluded (a
             subgroup of the healthy ranks: like relaunching with world size − 1 without that node)

Each repeat draws new data (a reshuffle), so a persistent slowest rank across repeats points at hardware.
On CPU the ranks share cores (a rank with more work partly catches up while the others idle), so each rank emulates
its own accelerator: `--device-us-per-token` µs of device time per token (default 100 on CPU, 0 on CUDA), spent
sleeping as a host waits on its GPU, on top of the small real model.
Waiting ranks spend the slow rank's extra time inside the all-reduce: on a GPU that is an NCCL kernel spinning,
which `utilization.gpu` counts as busy; `utilization_view` shows both accountings.

Run it (CPU: gloo; GPUs: NCCL, one GPU per rank, same code):

    torchrun --standalone --nproc-per-node 2 -m playbook.labs.workloads.collective_stragglers --steps 40 --run-dir runs/stragglers
    python -m playbook.labs.workloads.collective_stragglers --nproc 2 --steps 40          # spawns its own ranks
    python -m playbook.labs.workloads.collective_stragglers --nproc 4 --variants hw_fault,hw_fix --slow-rank 2 --nccl-debug

How to read the result: the table lists tokens/s per variant and repeat, then per-rank compute and collective
seconds per step for each fault. A hardware straggler shows one rank with straggler score < 0.75 in every repeat
(slowest in nearly every step, binomial p ≪ 0.05) while its token count is no larger than the others'; a software
straggler's slowest rank rotates and follows the token count. Then `playbook diagnose RUN_DIR/hw_fault-r0`.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.analysis.stats import paired_bootstrap
from playbook.core.errors import WorkloadError
from playbook.labs.workloads import dist as D
from playbook.labs.workloads._harness import cli, knob, lab_parser, run_distributed

VARIANTS = ("uniform", "sw_fault", "sw_fix", "hw_fault", "hw_fix")
MODULE = "playbook.labs.workloads.collective_stragglers"
# On CPU, ranks share cores (two ranks on the hyperthreads of one core each run at about half speed while both
# compute), so an overloaded rank partly catches up while the others wait and the straggler effect is blurred.
# Each rank therefore emulates its own accelerator: this many µs of device time per token, spent sleeping (the
# host waits on its device). The small real model still trains; on CUDA the real GPU is used (0).
DEFAULT_CPU_DEVICE_US = 100.0


@dataclass
class StragglerConfig:
    """Knobs of the stragglers lab (see the module docstring). Lengths and counts are tokens / sequences."""

    run_dir: str = knob("runs/stragglers", "where the recordings go (one folder per variant and repeat)")
    variants: tuple[str, ...] = knob(VARIANTS, "comma-separated subset of the variants")
    steps: int = knob(30, "training steps per variant and repeat")
    repeats: int = knob(2, "repeats per variant, each with reshuffled data")
    batch: int = knob(8, "sequences per rank per step")
    mean_len: float = knob(64.0, "mean sequence length (tokens); lengths are log-normal")
    sigma: float = knob(1.0, "log-normal sigma of the lengths (tail weight; 0 means all equal)")
    max_len: int = knob(512, "longest sequence (tokens)")
    vocab: int = knob(64, "vocabulary size (tokens)")
    hidden: int = knob(256, "model width")
    depth: int = knob(
        1, "weight-tied hidden layers: compute per token without more gradient to all-reduce")
    device_us_per_token: float | None = knob(
        None, "emulated accelerator time per token, µs (None: 100 on CPU, 0 on CUDA)")
    lr: float = knob(3e-3, "learning rate")
    slow_rank: int = knob(-1, "rank slowed in hw_fault (-1: the last)")
    slow_factor: float = knob(3.0, "how many times slower the hardware straggler computes")
    slow_mode: str = knob(
        "sleep", "sleep: slow device/host without using a core; compute: extra forward passes",
        choices=("sleep", "compute"))
    seed: int = knob(0, "random seed")
    device: str = knob("auto", "auto | cpu | cuda")
    sample_hz: float = knob(10.0, "telemetry sampling rate (Hz)")
    warmup_steps: int = knob(3, "untimed steps first")
    identify_steps: int = knob(8, "hw_fault steps whose straggler scores decide whom hw_fix excludes")

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


CONFIG = StragglerConfig


# ----------------------------------------------------------------------------------------------------- model
def build_model(vocab: int, hidden: int, seed: int, depth: int = 1):
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
@dataclass
class _Variant:
    """One variant's state inside a repeat: its model, optimizer, data split, ranks and recorder."""

    name: str
    model: Any
    opt: Any
    lengths: np.ndarray
    docs: list
    sampler: Any
    active: list[int]
    group: Any = None
    rec: Any = None
    tokens: int = 0
    seconds: float = 0.0


def rank_main(cfg: StragglerConfig) -> dict[str, Any] | None:
    """Everything one rank does; returns the gathered results on rank 0 (None elsewhere).

    Per repeat (a reshuffle: new documents), every variant keeps its own model and recording, and the variants
    take turns step by step (rotating order, a barrier before each step), so machine-load drift hits all alike.
    hw_fix excludes the ranks flagged by the straggler score in a short identification run of hw_fault first.
    """
    import torch

    from playbook.probes.step_timer import StepTimer

    ctx = D.init_from_env(cfg.device)
    dist = torch.distributed
    world, rank = ctx.world_size, ctx.rank
    slow_rank = cfg.slow_rank if cfg.slow_rank >= 0 else world - 1
    if slow_rank >= world:
        raise WorkloadError(f"slow rank {slow_rank} outside world size {world}")
    corpus = D.MarkovCorpus(cfg.vocab, seed=cfg.seed)
    n_docs = max(cfg.steps, cfg.identify_steps + cfg.warmup_steps) * cfg.batch * world
    segments: list[dict[str, Any]] = []
    losses: list[dict[str, Any]] = []

    def make(name: str, seed: int, active: list[int], record: str | None) -> _Variant:
        return _make_variant(cfg, ctx, corpus, n_docs, slow_rank, name, seed, active, record)

    # identification: a short hw_fault run (also the warm-up); its straggler scores decide whom hw_fix excludes
    flagged: list[int] = []
    probe = make("hw_fault" if "hw_fault" in cfg.variants else cfg.variants[0], 0, list(range(world)), None)
    timer = StepTimer(rank=rank, cuda=ctx.device.type == "cuda", nvtx=False)
    for i, gb in enumerate(probe.sampler.global_batches()[: cfg.warmup_steps + cfg.identify_steps]):
        dist.barrier()
        _train_step(probe, i, gb, rank, slow_rank, cfg, ctx, timer if i >= cfg.warmup_steps else None)
    timer.close()
    if "hw_fix" in cfg.variants:
        flagged = _flag_stragglers(timer, ctx)

    for rep in range(cfg.repeats):
        seed = cfg.seed * 1000 + rep + 1  # a new shuffle per repeat
        states = []
        for name in cfg.variants:
            active = [r for r in range(world) if not (name == "hw_fix" and r in flagged)] or list(range(world))
            states.append(make(name, seed, active, str(Path(cfg.run_dir) / f"{name}-r{rep}")))
        _run_repeat(cfg, ctx, states, rep, slow_rank, losses, segments)
    for row in losses:  # one device read per loss, after training (no host sync inside the loop)
        row["loss"] = float(row["loss"])
    gathered = D.gather_to_main({"segments": segments, "losses": losses}, ctx)
    D.shutdown()
    if gathered is None:
        return None
    return {
        "segments": [s for g in gathered for s in g["segments"]],
        "losses": [r for g in gathered for r in g["losses"]],
        "flagged": flagged, "slow_rank": slow_rank, "world_size": world, "backend": ctx.backend,
        "config": asdict(cfg),
    }


def _make_variant(cfg: StragglerConfig, ctx: Any, corpus: Any, n_docs: int, slow_rank: int, name: str, seed: int,
                  active: list[int], record: str | None) -> _Variant:
    """One variant's documents, model, optimizer, sampler over the `active` ranks, process group and (when
    `record` names a folder and this rank is active) its started recorder."""
    import torch

    from playbook.labs.fixes.balance import TokenBalancedSampler

    dist = torch.distributed
    world, rank = ctx.world_size, ctx.rank
    if name == "uniform":
        lengths = np.full(n_docs, int(round(_mean_length(cfg))), dtype=np.int64)
    else:
        lengths = D.long_tailed_lengths(n_docs, cfg.mean_len, cfg.sigma, 4, cfg.max_len, seed=seed)
    docs = corpus.documents(lengths, seed=seed)
    group = dist.new_group(active) if len(active) < world else None  # every rank calls new_group
    model = build_model(cfg.vocab, cfg.hidden, cfg.seed, cfg.depth).to(ctx.device)
    sampler = TokenBalancedSampler(lengths, cfg.batch * len(active), active.index(rank) if rank in active else 0,
                                   len(active), seed=seed, balanced=name != "sw_fault")
    rec = None
    if record and rank in active:
        # samplers (GPU / host) in one recording per process only: several at once would perturb the timing
        rec = D.rank_recorder(record, rank=rank, sample_hz=cfg.sample_hz,
                              samplers=None if name == _sampled(cfg.variants, "hw_fault") else False,
                              variant=name, slow_rank=slow_rank if name == "hw_fault" else -1,
                              active_ranks=active).start()
    return _Variant(name, model, torch.optim.Adam(model.parameters(), lr=cfg.lr), lengths, docs, sampler,
                    active, group, rec)


def _run_repeat(cfg: StragglerConfig, ctx: Any, states: list[_Variant], rep: int, slow_rank: int,
                losses: list[dict[str, Any]], segments: list[dict[str, Any]]) -> None:
    """Train every variant of repeat `rep` step by step in rotating order (a barrier before each step), then
    close their recordings and process groups; appends to `losses` (first active rank) and `segments`."""
    import torch

    dist = torch.distributed
    rank = ctx.rank
    for i in range(cfg.steps):
        for st in states[i % len(states):] + states[: i % len(states)]:
            dist.barrier()
            if rank not in st.active:
                continue
            gb = st.sampler.global_batches()[i]
            loss = _train_step(st, i, gb, rank, slow_rank, cfg, ctx, st.rec.timer)
            if rank == st.active[0]:
                losses.append({"variant": st.name, "repeat": rep, "step": i, "loss": loss,
                               "tokens_seen": st.tokens})
    dist.barrier()
    for st in states:
        if st.rec is not None:
            st.rec.close()
            segments.append({"variant": st.name, "repeat": rep, "rank": rank, "active": True,
                             "seconds": st.seconds, "steps": cfg.steps, "tokens": st.tokens,
                             "throughput": st.tokens / st.seconds, "world": len(st.active),
                             "run_dir": str(Path(cfg.run_dir) / f"{st.name}-r{rep}")})
        else:
            segments.append({"variant": st.name, "repeat": rep, "rank": rank, "active": False})
        if st.group is not None and rank in st.active:
            dist.destroy_process_group(st.group)


def _train_step(st: _Variant, i: int, gb: np.ndarray, rank: int, slow_rank: int, cfg: StragglerConfig,
                ctx: D.DistContext, timer: Any) -> float:
    """One data-parallel step of variant `st` on global batch `gb`; returns the global mean token loss."""
    import torch.nn.functional as F

    from playbook.labs.fixes.overlap import allreduce_gradients

    mine = st.sampler.split(gb)[st.active.index(rank)]
    targets_global = int(sum(st.lengths[j] - 1 for j in gb))
    tokens = int(sum(st.lengths[j] for j in mine))
    slow = st.name == "hw_fault" and rank == slow_rank
    t0 = time.perf_counter()
    with timer.step(i, tokens=tokens) if timer is not None else contextlib.nullcontext():
        with D.maybe_phase(timer, "data"):
            x, y = _inputs([st.docs[j] for j in mine], ctx.device)
        with D.maybe_phase(timer, "fwd"):
            t_c = time.perf_counter()
            loss_sum = F.cross_entropy(st.model(x), y, reduction="sum") if len(x) else st.model.out.weight.sum() * 0
        with D.maybe_phase(timer, "bwd"):
            (loss_sum / max(1, targets_global)).backward()
            emulated = _device_us(cfg, ctx)
            if emulated > 0:  # the emulated accelerator's time for this rank's tokens
                time.sleep(emulated * tokens / 1e6)
            if slow:
                _slow_down(st.model, x, cfg, t_c, ctx.device)
        with D.maybe_phase(timer, "collective"):
            loss_global = allreduce_gradients(st.model.parameters(), divisor=1.0, group=st.group,
                                              extra=[loss_sum.detach()])
        with D.maybe_phase(timer, "optimizer"):
            st.opt.step()
            st.opt.zero_grad(set_to_none=True)
        D.device_sync(ctx.device)
    st.seconds += time.perf_counter() - t0
    st.tokens += int(st.lengths[gb].sum())
    return loss_global / max(1, targets_global)


def _sampled(variants: tuple[str, ...], preferred: str) -> str:
    """The variant whose recording carries the GPU/host samplers: `preferred` when run, else the first."""
    return preferred if preferred in variants else variants[0]


def _device_us(cfg: StragglerConfig, ctx: D.DistContext) -> float:
    """Emulated accelerator µs per token: cfg's value, or by default 100 on CPU and 0 (the real GPU) on CUDA."""
    if cfg.device_us_per_token is not None:
        return float(cfg.device_us_per_token)
    return 0.0 if ctx.device.type == "cuda" else DEFAULT_CPU_DEVICE_US


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


def _flag_stragglers(timer: Any, ctx: D.DistContext) -> list[int]:
    """Ranks flagged by the straggler score (playbook.analysis.rank_stragglers) on the compute (busy) time per step of
    a StepTimer, gathered from every rank so that all ranks agree on whom to exclude."""
    import torch.distributed as dist

    from playbook.analysis.rank_stragglers import straggler_scores

    busy = [(step, b) for step, _, b in timer.recent]
    every: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(every, busy)
    per_step = pd.DataFrame([{"rank": r, "step": s, "compute": b} for r, rows in enumerate(every) for s, b in rows])
    if per_step.empty:
        return []
    scores = straggler_scores(per_step, "compute")
    return sorted(int(r) for r in scores.loc[scores["flagged"], "rank"])


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
        return first[["variant", "repeat", "throughput", "seconds", "tokens", "world", "run_dir"]].reset_index(drop=True)

    def recording(self, variant: str, repeat: int = 0) -> str:
        """Run directory of one (variant, repeat) segment."""
        return str(Path(self.run_dir) / f"{variant}-r{repeat}")


def run(cfg: StragglerConfig, nproc: int = 2, start_method: str | None = None, nccl_debug: bool = False,
        argv: list[str] | None = None) -> StragglerRun | None:
    """Run the lab (torchrun-launched or spawning `nproc` ranks) and return its results (None on ranks > 0)."""
    out = D.run_lab(rank_main, cfg, nproc, start_method, nccl_debug, argv)
    if out is None:
        return None
    return StragglerRun(cfg.run_dir, pd.DataFrame(out["segments"]), pd.DataFrame(out["losses"]), out["flagged"],
                        out["slow_rank"], out["world_size"], out["backend"], out["config"])


# ----------------------------------------------------------------------------------------------------- analyses
def rank_phase_table(steps: pd.DataFrame) -> pd.DataFrame:
    """Per rank, medians per step: compute_s (fwd+bwd+optimizer), collective_s, collective_wait_s (collective time
    beyond the step's shortest, i.e. waiting for the last arrival), step_s, tokens."""
    from playbook.analysis.rank_stragglers import steps_per_rank

    per = steps_per_rank(steps)
    cols = ["compute_s", "collective_s", "collective_wait_s", "step_s", "tokens"]
    return per.groupby("rank")[cols].median().reset_index()


def utilization_view(steps: pd.DataFrame) -> pd.DataFrame:
    """Per rank: share of step time a utilization counter reports busy (compute + collective, as utilization.gpu
    counts a spinning NCCL kernel) vs the share doing real work (compute only), 0-1."""
    from playbook.analysis.rank_stragglers import steps_per_rank

    per = steps_per_rank(steps).groupby("rank")[["compute_s", "collective_s", "step_s"]].sum()
    return pd.DataFrame({"counter_busy": ((per["compute_s"] + per["collective_s"]) / per["step_s"]).clip(upper=1),
                         "real_work": (per["compute_s"] / per["step_s"]).clip(upper=1)}).reset_index()


def straggler_summary(steps: pd.DataFrame) -> dict[str, Any]:
    """playbook.analysis.rank_stragglers.summarize on one recording's steps: scores, collective waits, persistence of
    the slowest rank (binomial test), correlation of work with tokens, and findings."""
    from playbook.analysis.rank_stragglers import summarize
    from playbook.model.schema import Bundle

    out = summarize(Bundle(steps=steps))
    return out["steps"] | {"findings": out["findings"]} if out and out.get("steps") else {}


def discrimination(res: StragglerRun, variants: tuple[str, ...] = ("sw_fault", "hw_fault")) -> pd.DataFrame:
    """Hardware or software? Per fault variant and repeat (a repeat = a data reshuffle), then pooled over repeats:
    flagged ranks (score < 0.75), the most frequent slowest rank, its share of steps, the binomial p-value and
    verdict (persistent / rotating / undetermined), and the within-step Spearman correlation of compute with tokens.
    The pooled row also says whether the same rank was slowest in every reshuffle."""
    from playbook.analysis.rank_stragglers import persistence, slowest_per_step, steps_per_rank
    from playbook.readers import rundir

    rows = []
    for v in variants:
        reps = sorted(res.segments.loc[res.segments["variant"] == v, "repeat"].unique())
        slow_all, modal = [], []
        for rep in reps:
            steps = rundir.read_run(res.recording(v, rep)).steps
            summ = straggler_summary(steps)
            pers, tok = summ.get("persistence") or {}, summ.get("tokens") or {}
            per = steps_per_rank(steps)
            slow_all.append(slowest_per_step(per, "collective_wait_s", "compute_s"))
            modal.append(pers.get("modal_rank"))
            rows.append({"variant": v, "repeat": str(rep),
                         "flagged": [s["rank"] for s in summ.get("scores", []) if s["flagged"]],
                         "modal_rank": pers.get("modal_rank"), "fraction": pers.get("fraction"),
                         "p_value": pers.get("p_value"), "verdict": pers.get("verdict"),
                         "rho_tokens": tok.get("rho_within_step"), "p_tokens": tok.get("p_within_step")})
        if slow_all:
            pooled = persistence(pd.concat(slow_all, ignore_index=True), res.world_size)
            rhos = [r["rho_tokens"] for r in rows if r["variant"] == v and r["rho_tokens"] is not None]
            rows.append({"variant": v, "repeat": "all", "flagged": None, "modal_rank": pooled["modal_rank"],
                         "fraction": pooled["fraction"], "p_value": pooled["p_value"], "verdict": pooled["verdict"],
                         "rho_tokens": float(np.median(rhos)) if rhos else None, "p_tokens": None,
                         "same_rank_every_reshuffle": len(set(modal)) == 1 and None not in modal})
    return pd.DataFrame(rows)


def slowest_table(res: StragglerRun, variants: tuple[str, ...] = ("sw_fault", "hw_fault")) -> pd.DataFrame:
    """label ("<variant> r<repeat>"), step, rank: the slowest rank of every step (the one that waits least in
    the all-reduce; playbook.analysis.rank_stragglers.slowest_per_step), for plots.ranks.slowest_rank."""
    from playbook.analysis.rank_stragglers import slowest_per_step, steps_per_rank
    from playbook.readers import rundir

    out = []
    for v in variants:
        for rep in sorted(res.segments.loc[res.segments["variant"] == v, "repeat"].unique()):
            slow = slowest_per_step(steps_per_rank(rundir.read_run(res.recording(v, rep)).steps),
                                    "collective_wait_s", "compute_s")
            out.append(pd.DataFrame({"label": f"{v} r{rep}", "step": slow.index.astype(int),
                                     "rank": slow.to_numpy().astype(int)}))
    return pd.concat(out, ignore_index=True)


def job_step_times(res: Any, variant: str) -> pd.DataFrame:
    """Per (repeat, step): the job's step time (median over its ranks, s) and its global tokens. `res`: any lab
    result with `segments` (variant, repeat columns) and `recording(variant, repeat)`."""
    from playbook.analysis.step_times import fleet_steps
    from playbook.readers import rundir

    out = []
    for rep in sorted(res.segments.loc[res.segments["variant"] == variant, "repeat"].unique()):
        steps = rundir.read_run(res.recording(variant, rep)).steps
        fleet = fleet_steps(steps)
        tok = steps[steps["phase"] == "step"].groupby("step")["tokens"].sum()
        out.append(fleet.assign(repeat=rep, tokens=fleet["step"].map(tok)))
    return pd.concat(out, ignore_index=True)[["repeat", "step", "duration_s", "tokens"]]


def paired_slowdown(res: StragglerRun, fault: str, reference: str) -> dict[str, float]:
    """Step time of `fault` ÷ step time of `reference` for the same (repeat, step) — the same global batch —
    median with a bootstrap 95% interval. Only for variants that see the same data (sw_fault, sw_fix, hw_fault)."""
    a = job_step_times(res, fault).set_index(["repeat", "step"])["duration_s"]
    b = job_step_times(res, reference).set_index(["repeat", "step"])["duration_s"]
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1).dropna()
    return paired_bootstrap(both["a"], both["b"], "ratio")


def assess(res: StragglerRun) -> dict[str, Any]:
    """The lab's verdict and its figures (see the notebook 20_collective_stragglers for the reasoning).

    confirmed: the hardware straggler is flagged (and only it), its slowest-rank pattern is persistent, the
      software straggler's is not, the software straggler's work follows tokens (ρ ≥ 0.5), token balancing cuts
      the step time (paired ratio interval below 1), and excluding the flagged rank raises throughput.
    refuted: neither fault slows the step beyond its interval (nothing to fix here).
    inconclusive: otherwise.
    """
    disc = discrimination(res).set_index(["variant", "repeat"])
    hw, sw = disc.loc[("hw_fault", "all")], disc.loc[("sw_fault", "all")]
    sw_cost = paired_slowdown(res, "sw_fault", "sw_fix")  # > 1: the software straggler costs step time
    hw_cost = paired_slowdown(res, "hw_fault", "sw_fix")  # > 1: the hardware straggler costs step time
    tp = res.throughput().groupby("variant")["throughput"].mean()
    hw_gain = float(tp["hw_fix"] / tp["hw_fault"])
    figures = {
        "slow_rank": res.slow_rank, "flagged": res.flagged, "hw_verdict": hw["verdict"],
        "hw_p_value": hw["p_value"], "sw_verdict": sw["verdict"], "sw_p_value": sw["p_value"],
        "sw_rho_tokens": sw["rho_tokens"], "hw_rho_tokens": hw["rho_tokens"],
        "sw_step_ratio": sw_cost["median"], "sw_step_ratio_lo": sw_cost["lo"], "sw_step_ratio_hi": sw_cost["hi"],
        "hw_step_ratio": hw_cost["median"], "hw_step_ratio_lo": hw_cost["lo"],
        "throughput_uniform": float(tp.get("uniform", np.nan)), "throughput_sw_fault": float(tp["sw_fault"]),
        "throughput_sw_fix": float(tp["sw_fix"]), "throughput_hw_fault": float(tp["hw_fault"]),
        "throughput_hw_fix": float(tp["hw_fix"]), "hw_fix_gain": hw_gain,
    }  # throughputs in tokens/s; step ratios = fault step time ÷ balanced step time on the same data
    healthy = (res.world_size - len(res.flagged)) / res.world_size * float(tp["sw_fix"])
    figures["hw_fix_vs_expected"] = float(tp["hw_fix"]) / healthy if healthy > 0 else float("nan")
    checks = {
        "hw rank flagged": res.flagged == [res.slow_rank],
        "hw persistent": hw["verdict"] == "persistent",
        "sw not persistent": sw["verdict"] != "persistent",
        "sw follows tokens": bool((sw["rho_tokens"] or 0) >= 0.5),
        "balancing cuts step time": bool(sw_cost["lo"] > 1.0),
        "excluding the rank raises throughput": bool(hw_gain > 1.0),
    }
    refuted = ("neither straggler slows the step beyond run-to-run variation"
               if sw_cost["hi"] <= 1.0 and hw_cost["lo"] <= 1.0 else None)
    return D.checked_verdict(checks, figures, refuted, lambda: (
        f"hardware straggler (rank {res.slow_rank}) flagged and persistent (p = {hw['p_value']:.2g}); "
        f"software straggler rotates and follows tokens (ρ = {sw['rho_tokens']:.2f}); token balancing "
        f"cuts the step time by {1 - 1 / sw_cost['median']:.0%}, excluding the slow rank raises "
        f"throughput {hw_gain:.2f}×"))


# ----------------------------------------------------------------------------------------------------- CLI
def _parser() -> argparse.ArgumentParser:
    p = lab_parser(MODULE, __doc__, [
        "python -m playbook.labs.workloads.collective_stragglers --nproc 2 --steps 40",
        "python -m playbook.labs.workloads.collective_stragglers --nproc 4 --variants hw_fault,hw_fix --slow-rank 2"],
        "playbook diagnose runs/stragglers/hw_fault-r0", StragglerConfig, distributed=True)
    return p


def main(argv: list[str] | None = None) -> int:
    cfg, res = run_distributed(_parser(), StragglerConfig, run, argv)
    if res is None:
        return 0
    from playbook.readers import rundir

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
    cli(main)
