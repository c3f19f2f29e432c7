"""The labs' shared training loop (not a workload itself; the models are in labs.workloads.models): synthetic datasets, the
training step with its timed phases, and the measurements every lab returns.

    from playbook.labs.workloads.loop import ImageDataset, train_step, LoopMeter, finish_run
    from playbook.labs.workloads.models import MLP
    data = ImageDataset(n=2048, shape=(3, 32, 32), decode_ms=1.0)     # 1 ms simulated read latency per sample
    model, opt = MLP.for_dataset(data).to(device), ...
    with Recorder(run_dir) as rec, LoopMeter(device) as meter:
        for i, (x, y) in enumerate(rec.timed(loader)):
            with rec.timer.step(i, tokens=len(x)):
                meter.add(train_step(model, opt, x.to(device), y.to(device), rec.timer), len(x))
    result = finish_run("fault", run_dir, meter)                       # throughput, step stats, phases, loss

The models themselves are in playbook.labs.workloads.models.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset

# ----------------------------------------------------------------------------------------------- datasets


class ImageDataset(Dataset):
    """`n` image-like float samples of `shape` with labels from a fixed random linear teacher (learnable).

    decode_ms: per-sample latency in milliseconds spent in `time.sleep` — a read from remote or disk storage, or a
        decoder that releases the GIL (PIL, libjpeg, torchvision.io do). Overlappable by threads and processes.
    augment_passes: CPU work per sample in milliseconds-ish units: that many rounds of flip + noise + normalise
        on the sample (torch ops; they need a core each, so they cannot be hidden on a machine with no spare core).
    A `bank` of distinct base samples is generated once and reused modulo `bank`, so memory stays small.
    """

    def __init__(self, n: int = 2048, shape: tuple[int, ...] = (3, 32, 32), classes: int = 10,
                 decode_ms: float = 0.0, augment_passes: int = 0, bank: int = 512, seed: int = 0):
        if n <= 0 or decode_ms < 0 or augment_passes < 0:
            raise ValueError("n must be > 0, decode_ms and augment_passes >= 0")
        self.n, self.shape, self.classes = int(n), tuple(shape), int(classes)
        self.decode_ms, self.augment_passes = float(decode_ms), int(augment_passes)
        g = torch.Generator().manual_seed(seed)
        self.bank = torch.randn((min(bank, n), *self.shape), generator=g)
        teacher = torch.randn(self.classes, self.bank[0].numel(), generator=g)
        self.labels = (self.bank.flatten(1) @ teacher.T).argmax(1)

    @property
    def features(self) -> int:
        """Number of floats in one sample."""
        return int(math.prod(self.shape))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.decode_ms:
            time.sleep(self.decode_ms / 1e3)
        j = int(i) % len(self.bank)
        x = self.bank[j].clone()
        for k in range(self.augment_passes):
            x = torch.flip(x, dims=(-1,)) if k % 2 else x
            x = (x + 0.01 * torch.randn_like(x)) / (1.0 + x.abs().mean() * 1e-3)
        return x, self.labels[j]


class SequenceDataset(Dataset):
    """`n` token sequences with lengths in [min_len, max_len], skewed short like real text (min + span·u², u
    uniform); label = whether most tokens are in the upper half of the vocabulary (learnable by mean pooling).
    Token 0 is padding, never a real token."""

    def __init__(self, n: int = 1024, min_len: int = 8, max_len: int = 64, vocab: int = 64, seed: int = 0):
        if not 1 <= min_len <= max_len:
            raise ValueError(f"need 1 <= min_len <= max_len, got {min_len}, {max_len}")
        g = torch.Generator().manual_seed(seed)
        self.vocab, self.min_len, self.max_len = int(vocab), int(min_len), int(max_len)
        u = torch.rand(n, generator=g)
        self.lengths = (min_len + ((max_len - min_len + 1) * u**2).floor().long()).clamp(max=max_len)
        self.seqs = [torch.randint(1, vocab, (int(L),), generator=g) for L in self.lengths]
        self.labels = torch.tensor([int((s >= vocab // 2).float().mean() > 0.5) for s in self.seqs])

    def __len__(self) -> int:
        return len(self.seqs)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.seqs[i], self.labels[i]


# ----------------------------------------------------------------------------------------------- models


def make_optimizer(model: nn.Module, lr: float = 1e-3) -> torch.optim.Optimizer:
    """Adam (its two moment buffers triple the state a checkpoint has to save), multi-tensor (foreach)
    implementation: torch picks the slower per-tensor loop on CPU by default."""
    return torch.optim.Adam(model.parameters(), lr=lr, foreach=True)


# ----------------------------------------------------------------------------------------------- the step


def _phase(timer: Any, name: str):
    return timer.phase(name) if timer is not None else contextlib.nullcontext()


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
               timer: Any = None) -> torch.Tensor:
    """One optimisation step with phases fwd / bwd / optimizer timed by `timer` (a StepTimer, or None).

    Returns the loss as a detached tensor on the model's device: reading it (`.item()`) is the caller's choice,
    because on a GPU that read is a host sync (see playbook.labs.fixes.sync).
    """
    with _phase(timer, "fwd"):
        loss = F.cross_entropy(model(x), y)
    with _phase(timer, "bwd"):
        loss.backward()
    with _phase(timer, "optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)
    return loss.detach()


@torch.no_grad()
def evaluate(model: nn.Module, batches: Any, device: torch.device) -> float:
    """Mean cross-entropy of `model` over `batches` of (x, y) (no grad; model put back in train mode)."""
    was = model.training
    model.eval()
    total, n = torch.zeros((), device=device), 0
    for x, y in batches:
        x, y = x.to(device), y.to(device)
        total += F.cross_entropy(model(x), y, reduction="sum")
        n += len(y)
    model.train(was)
    return float(total) / max(n, 1)


# ----------------------------------------------------------------------------------------------- measurements


@contextlib.contextmanager
def cpu_threads(n: int, device: torch.device):
    """Run with `n` torch intra-op threads when training on CPU (restored afterwards); no effect on CUDA runs or
    when n <= 0. One thread keeps a lab's timings stable on a shared machine and leaves cores to the loader."""
    if device.type != "cpu" or n <= 0:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def sync(device: torch.device) -> None:
    """Wait for the device (CUDA) to finish queued work; a no-op on CPU. Only at the edges of a timed loop."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class LoopMeter:
    """Wall-clock throughput of a timed loop, with the loss curve kept on the device (no per-step sync).

        with LoopMeter(device) as meter:
            for ...: meter.add(loss, samples)
        meter.throughput  # samples/s over the loop, device work included (synchronised at both edges)
    """

    def __init__(self, device: torch.device | str = "cpu"):
        self.device = torch.device(device)
        self.samples = 0
        self.steps = 0
        self.wall_s = math.nan
        self._losses: list[torch.Tensor] = []
        self._t0 = 0.0

    def start(self) -> LoopMeter:
        """Start the clock (after the warm-up steps), device work queued so far finished first."""
        if self.device.type == "cuda":
            sync(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        self._t0 = time.perf_counter()
        return self

    def stop(self) -> None:
        """Stop the clock once the device has finished the loop's work."""
        sync(self.device)
        self.wall_s = time.perf_counter() - self._t0

    def __enter__(self) -> LoopMeter:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def add(self, loss: torch.Tensor | None, samples: int) -> None:
        """Count one step of `samples` samples; keep its (detached) loss without reading it."""
        self.samples += int(samples)
        self.steps += 1
        if loss is not None:
            self._losses.append(loss)

    @property
    def throughput(self) -> float:
        """Samples per second over the loop."""
        return self.samples / self.wall_s if self.wall_s and self.wall_s > 0 else math.nan

    def losses(self) -> list[float]:
        """The loss curve as floats (one device read, after the loop)."""
        if not self._losses:
            return []
        return [float(v) for v in torch.stack([t.float().reshape(()) for t in self._losses]).cpu()]

    def peak_mem_mib(self) -> float:
        """Peak device memory allocated during the loop (MiB), CUDA only; NaN on CPU (see RunResult.peak_rss_mib)."""
        if self.device.type == "cuda":
            return torch.cuda.max_memory_allocated(self.device) / 2**20
        return math.nan


@dataclass
class RunResult:
    """What one lab run measured. `throughput` is samples/s over the timed loop (wall clock); `phase_share` the
    share of step time per phase (0-1) and `phase_s` the seconds per phase, over the timed steps."""

    variant: str
    run_dir: str
    steps: int
    samples: int
    wall_s: float
    throughput: float
    step_median_s: float
    step_p90_s: float
    step_max_s: float
    phase_share: dict[str, float]
    phase_s: dict[str, float]
    losses: list[float]
    peak_mem_mib: float
    peak_rss_mib: float
    extra: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        """A flat dict of the scalar measurements (for measure_variants / variant_summary)."""
        out: dict[str, Any] = {
            "throughput": self.throughput, "wall_s_loop": self.wall_s, "steps": self.steps,
            "step_median_s": self.step_median_s, "step_p90_s": self.step_p90_s, "step_max_s": self.step_max_s,
            "peak_mem_mib": self.peak_mem_mib, "peak_rss_mib": self.peak_rss_mib,
            "final_loss": self.losses[-1] if self.losses else math.nan, "run_dir": self.run_dir,
        }
        out.update({f"share_{k}": v for k, v in self.phase_share.items()})
        out.update({k: v for k, v in self.extra.items() if isinstance(v, (int, float, str, bool))})
        return out


def stop_loader(iterator: Any) -> None:
    """Stop a batch iterator's background threads or worker processes now (generators are closed; DataLoader
    iterators shut their workers down), rather than whenever garbage collection gets to it."""
    for name in ("close", "_shutdown_workers"):
        fn = getattr(iterator, name, None)
        if callable(fn):
            try:
                fn()
            except Exception:
                pass
            return


def finish_run(variant: str, run_dir: str | Path, meter: LoopMeter, first_step: int = 0,
               **extra: Any) -> RunResult:
    """Read the run directory back and combine it with the meter into a RunResult (step stats from the steps
    table's steps ≥ `first_step`, i.e. without the warm-up; peak RSS from the host probe's samples when it ran,
    else the process's RSS now). `extra` values are carried into RunResult.extra, plus `<kind>_events` and
    `<kind>_max_s` (longest, s) for every event kind recorded in the timed steps."""
    from playbook.analysis.step_times import phase_breakdown
    from playbook.readers import rundir

    bundle = rundir.read_run(run_dir)
    steps = bundle.steps[bundle.steps["step"] >= first_step]
    whole = steps.loc[steps["phase"] == "step", "duration_s"]
    share: dict[str, float] = {}
    seconds: dict[str, float] = {}
    if len(steps):
        pb = phase_breakdown(steps)
        share = {str(p): float(s) for p, s in pb.groupby("phase")["share"].mean().items()}
        seconds = {str(p): float(s) for p, s in pb.groupby("phase")["seconds"].sum().items()}
    events = bundle.events[bundle.events["step"] >= first_step]
    extra = dict(extra)
    for kind, dur in events.groupby("kind")["duration_s"]:
        extra.setdefault(f"{kind}_events", int(len(dur)))
        extra.setdefault(f"{kind}_max_s", float(dur.max()) if dur.notna().any() else math.nan)
    rss = bundle.host["rss_mib"].max() if len(bundle.host) else math.nan
    if not math.isfinite(rss):
        rss = current_rss_mib()
    return RunResult(
        variant=variant, run_dir=str(run_dir), steps=meter.steps, samples=meter.samples, wall_s=meter.wall_s,
        throughput=meter.throughput,
        step_median_s=float(whole.median()) if len(whole) else math.nan,
        step_p90_s=float(whole.quantile(0.9)) if len(whole) else math.nan,
        step_max_s=float(whole.max()) if len(whole) else math.nan,
        phase_share=share, phase_s=seconds, losses=meter.losses(), peak_mem_mib=meter.peak_mem_mib(), peak_rss_mib=float(rss),
        extra=extra,
    )


def current_rss_mib() -> float:
    """This process's resident memory now (MiB); NaN when psutil is unavailable."""
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except Exception:
        return math.nan


def loss_curves(results: list[RunResult]) -> Any:
    """Long frame (variant, repeat index within the variant, step, loss) from results, for convergence plots."""
    import pandas as pd

    rows, seen = [], {}
    for r in results:
        rep = seen.get(r.variant, 0)
        seen[r.variant] = rep + 1
        rows += [{"variant": r.variant, "repeat": rep, "step": i, "loss": v} for i, v in enumerate(r.losses)]
    return pd.DataFrame(rows, columns=["variant", "repeat", "step", "loss"])


def run_variants(run: Any, variants: list[str], repeats: int, out: str | Path, progress: bool | None = None,
                 **knobs: Any) -> tuple[Any, dict[str, list[RunResult]]]:
    """Run each variant `repeats` times, interleaved and rotated (labs.workloads.common.measure_variants), each into
    OUT/<variant>-r<k>. Returns (runs frame: one row per run, RunResult.row() columns + variant, repeat, wall_s;
    {variant: [RunResult per repeat]}). `progress`: labs.workloads.common.Progress (None: silent inside a notebook)."""
    from playbook.labs.workloads.common import measure_variants

    out = Path(out)
    results: dict[str, list[RunResult]] = {v: [] for v in variants}

    def one(variant: str, rep: int) -> dict[str, Any]:
        result = run(out / f"{variant}-r{rep}", variant, **knobs)
        results[variant].append(result)
        return result.row()

    runs = measure_variants(one, variants, repeats=repeats, progress=progress)
    return runs, results


