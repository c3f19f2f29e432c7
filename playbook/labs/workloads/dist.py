"""Shared plumbing of the distributed labs: one torch.distributed code path for gloo (CPU) and NCCL (CUDA).

Every distributed lab module has a `rank_main(cfg)` that calls `init_from_env()` and trains. Two ways to run it:

    torchrun --standalone --nproc-per-node 2 -m playbook.labs.workloads.collective_stragglers --steps 40
    python -m playbook.labs.workloads.collective_stragglers --nproc 2 --steps 40        # spawns its own ranks (`spawn`)

Both set the same environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and
call the same `rank_main`. `init_from_env` picks NCCL when the rank has a CUDA device (one GPU per local rank)
and gloo otherwise; on CPU it gives each rank cores ÷ local ranks intra-op threads so ranks do not oversubscribe.
Multi-node: `torchrun --nnodes N --node-rank I --rdzv-backend c10d --rdzv-endpoint HOST:PORT ...`, then copy
every node's `<host>-rank<R>/` folders into one run directory (each rank writes its own folder).

NCCL transport evidence: with `--nccl-debug` the lab sets NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET and
NCCL_DEBUG_FILE=<run dir>/nccl.<host>.<pid>.log before the process group starts; read the logs for
`via NET/IB/...` (InfiniBand, good), `NET/Socket` (TCP fallback: a missing or misconfigured IB/RoCE device),
`P2P/IPC` or `P2P/CUMEM` (NVLink/PCIe peer-to-peer within a node), `SHM` (through host memory: no P2P), and
whether `GDRDMA` appears (GPUDirect RDMA in use).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue as queue_mod
import shlex
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from playbook.core.errors import WorkloadError

ENV_KEYS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@dataclass
class DistContext:
    """Where this process sits in the job: rank, world size, local rank, backend ("gloo"/"nccl") and device."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    backend: str
    device: Any  # torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def launched_by_torchrun() -> bool:
    """True inside a process started by torchrun (or by `spawn`): RANK and WORLD_SIZE are set."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def init_from_env(device: str = "auto", timeout_s: float = 300.0, threads: int | None = None) -> DistContext:
    """Join the process group described by the torchrun environment; NCCL on CUDA, gloo on CPU.

    device: "auto" (CUDA when every local rank has a GPU, else CPU), "cpu" or "cuda". On CUDA the rank uses
    cuda:LOCAL_RANK. threads: intra-op CPU threads (default cores ÷ local ranks). Idempotent: returns the context
    if the group already exists.
    """
    import torch
    import torch.distributed as dist

    from playbook.labs.workloads.common import pick_device

    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        raise WorkloadError(f"not launched by torchrun: {', '.join(missing)} unset (use torchrun or spawn())")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    dev = pick_device(device)
    if device == "auto" and dev.type == "cuda" and torch.cuda.device_count() < local_world:
        # NCCL needs one GPU per rank: with fewer GPUs than local ranks run the same code on CPU with gloo
        if local_rank == 0:
            print(f"device auto: {torch.cuda.device_count()} GPU(s) for {local_world} local ranks; using gloo on CPU "
                  "(NCCL needs one GPU per rank)", file=sys.stderr, flush=True)
        dev = torch.device("cpu")
    if dev.type == "cuda":
        if torch.cuda.device_count() <= local_rank:
            raise WorkloadError(f"local rank {local_rank} has no GPU ({torch.cuda.device_count()} visible); "
                                "run one rank per GPU or pass --device cpu")
        dev = torch.device("cuda", local_rank)
        torch.cuda.set_device(dev)
    backend = "nccl" if dev.type == "cuda" else "gloo"
    if dev.type == "cpu":
        torch.set_num_threads(threads or max(1, (os.cpu_count() or 1) // max(1, local_world)))
    if not dist.is_initialized():
        kwargs: dict[str, Any] = {"backend": backend, "timeout": timedelta(seconds=timeout_s)}
        if dev.type == "cuda":
            kwargs["device_id"] = dev  # binds the communicator to this GPU (eager NCCL init)
        dist.init_process_group(**kwargs)
    return DistContext(rank, world, local_rank, local_world, backend, dev)


def shutdown() -> None:
    """Leave the process group (no-op when none)."""
    import torch.distributed as dist

    if dist.is_initialized():
        with contextlib.suppress(Exception):
            dist.barrier()
        dist.destroy_process_group()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for MASTER_PORT)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def nccl_debug_env(run_dir: str | os.PathLike) -> dict[str, str]:
    """Environment that makes NCCL write its init/transport lines into RUN_DIR/nccl.<host>.<pid>.log."""
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET",
            "NCCL_DEBUG_FILE": str(Path(run_dir) / "nccl.%h.%p.log")}


# ------------------------------------------------------------------------------------------------------- launching
def _child(fn: Callable[..., Any], rank: int, env: dict[str, str], results: Any, args: tuple, kwargs: dict) -> None:
    os.environ.update(env)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank))
    try:
        results.put((rank, "ok", fn(*args, **kwargs)))
    except BaseException as exc:  # report every failure to the parent, then exit
        results.put((rank, "error", f"{type(exc).__name__}: {exc}", traceback.format_exc()))


def spawn(fn: Callable[..., Any], world_size: int, *args: Any, start_method: str | None = None,
          timeout_s: float = 900.0, env: dict[str, str] | None = None,
          preload: tuple[str, ...] = ("torch", "torch.distributed", "pandas", "playbook.probes.recorder",
                                      "playbook.labs.workloads.common"), **kwargs: Any) -> list[Any]:
    """Run `fn(*args, **kwargs)` in `world_size` local processes with a torchrun-like environment; return each
    rank's return value (index = rank).

    start_method: "fork" (default on Linux: starts in milliseconds and accepts functions defined anywhere) or
    "spawn" (default elsewhere, and required when the children use CUDA: a forked child cannot initialise CUDA
    if the parent already did). The first rank to fail stops all ranks and raises WorkloadError naming it (its
    traceback goes to stderr); so does exceeding `timeout_s`. With fork, the `preload` modules are imported
    once here so that the children share them instead of each importing them (seconds each on a small machine).
    """
    import importlib
    import multiprocessing as mp

    if world_size < 1:
        raise WorkloadError(f"world size must be >= 1, not {world_size}")
    if start_method is None:
        start_method = "fork" if sys.platform.startswith("linux") and not _cuda_initialized() else "spawn"
    ctx = mp.get_context(start_method)
    if start_method == "fork":
        for name in preload:
            importlib.import_module(name)
    base = {"WORLD_SIZE": str(world_size), "LOCAL_WORLD_SIZE": str(world_size), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(free_port()), **(env or {})}
    results = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(fn, r, base, results, args, kwargs), daemon=False)
             for r in range(world_size)]
    for p in procs:
        p.start()
    out: dict[int, Any] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(out) < world_size:
            msg = _poll(results, procs, out, deadline)
            if msg[1] == "error":
                sys.stderr.write(f"--- rank {msg[0]} failed ---\n{msg[3]}")
                raise WorkloadError(f"rank {msg[0]} failed: {msg[2]}")
            out[msg[0]] = msg[2]
    finally:
        for p in procs:
            p.join(timeout=5 if len(out) == world_size else 0.1)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
    return [out[r] for r in range(world_size)]


def _poll(results: Any, procs: list, done: dict, deadline: float) -> tuple:
    while True:
        with contextlib.suppress(queue_mod.Empty):
            return results.get(timeout=0.05)
        dead = [r for r, p in enumerate(procs) if r not in done and p.exitcode is not None]
        if dead:
            with contextlib.suppress(queue_mod.Empty):  # its result may still be in the pipe
                return results.get(timeout=1.0)
            raise WorkloadError(f"rank {dead[0]} exited with code {procs[dead[0]].exitcode} without a result")
        if time.monotonic() > deadline:
            raise WorkloadError("distributed run timed out; ranks stopped")


def _cuda_initialized() -> bool:
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized())


def torchrun_command(module: str, nproc: int, argv: list[str] | tuple[str, ...] = ()) -> str:
    """The exact torchrun command line for a lab module."""
    return shlex.join(["torchrun", "--standalone", "--nproc-per-node", str(nproc), "-m", module, *argv])


def run_torchrun(module: str, nproc: int, argv: list[str] | tuple[str, ...] = (), timeout_s: float = 600.0,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `torchrun --standalone --nproc-per-node N -m module argv` as a subprocess (with this interpreter);
    raise WorkloadError with the tail of its output on failure."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
           "-m", module, *argv]
    full_env = {**os.environ, **(env or {})}
    for key in ENV_KEYS:  # a nested launch must not inherit this process's rank
        full_env.pop(key, None)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=full_env)
    except subprocess.TimeoutExpired as exc:
        raise WorkloadError(f"torchrun {module} timed out after {timeout_s:.0f} s") from exc
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        # the failing rank's own reason ("terminate called …", "what(): … Connection closed by peer", a Python
        # error) sits above torchrun's summary, which the tail alone shows: name it first
        why = [ln.strip() for ln in lines if ln.lstrip().startswith(("what():", "terminate called", "RuntimeError",
                                                                     "Error", "Exception"))][:3]
        tail = " | ".join(why + lines[-5:])
        raise WorkloadError(f"torchrun {module} failed (exit {proc.returncode}): {tail}")
    return proc


def launch(rank_main: Callable[[Any], Any], cfg: Any, nproc: int, start_method: str | None = None,
           env: dict[str, str] | None = None) -> Any:
    """Run `rank_main(cfg)` on every rank: in this process when torchrun started it, else through `spawn`.
    Returns rank 0's result (None on other ranks under torchrun)."""
    if launched_by_torchrun():
        if env:
            for k, v in env.items():
                os.environ.setdefault(k, v)
        return rank_main(cfg)
    return spawn(rank_main, nproc, cfg, start_method=start_method, env=env)[0]


def add_launch_arguments(parser: argparse.ArgumentParser, nproc: int = 2) -> None:
    """--nproc, --device, --start-method, --nccl-debug: the options every distributed lab shares."""
    g = parser.add_argument_group("launch")
    g.add_argument("--nproc", type=int, default=nproc,
                   help=f"ranks to spawn when not started by torchrun (default {nproc}; ignored under torchrun)")
    g.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                   help="auto: NCCL on GPUs when present, gloo on CPU otherwise")
    g.add_argument("--start-method", default=None, choices=["fork", "spawn"],
                   help="how to spawn ranks without torchrun (default fork on Linux CPU, spawn with CUDA)")
    g.add_argument("--nccl-debug", action="store_true",
                   help="write NCCL INIT/NET log lines into the run directory (transport evidence)")


# ------------------------------------------------------------------------------------------------------- recording
def rank_recorder(run_dir: str | os.PathLike, rank: int | None = None, sample_hz: float = 10.0,
                  samplers: bool | None = None, **meta: Any):
    """A playbook.probes.Recorder for this rank's part of RUN_DIR (folder `<host>-rank<R>`).

    rank: default $RANK. samplers: NVML / host / InfiniBand samplers on (default: only in the process whose
    LOCAL_RANK is 0 or unset, the Recorder's own rule). Flushes only at exit (lab runs are short). `meta` goes
    into the part's meta.json (e.g. variant, role).
    """
    from playbook.probes.recorder import Rates, Recorder

    on = {} if samplers is None else {"nvml": samplers, "host_probe": samplers, "interconnect": samplers}
    return Recorder(run_dir, rank=rank, rates=Rates(sample_hz=sample_hz, flush_s=3600.0), meta=meta, **on)


def gather_to_main(obj: Any, ctx: DistContext) -> list[Any] | None:
    """Every rank's `obj` on rank 0 (list by rank), None elsewhere (gather_object over the default group)."""
    import torch.distributed as dist

    out = [None] * ctx.world_size if ctx.is_main else None
    dist.gather_object(obj, out, dst=0)
    return out


@contextlib.contextmanager
def maybe_phase(timer: Any, name: str) -> Iterator[None]:
    """timer.phase(name) when a timer is given, else nothing."""
    if timer is None:
        yield
    else:
        with timer.phase(name):
            yield


def device_sync(device: Any) -> None:
    """Wait for queued CUDA work (a no-op on CPU); used only around timed regions that need wall-clock truth."""
    import torch

    if getattr(device, "type", "cpu") == "cuda":
        torch.cuda.synchronize(device)


# ------------------------------------------------------------------------------------------------ synthetic data
def long_tailed_lengths(n: int, mean: float = 64.0, sigma: float = 1.0, min_len: int = 4, max_len: int = 512,
                        seed: int = 0) -> np.ndarray:
    """`n` sequence lengths from a log-normal with the given mean and log-space sigma, clipped to
    [min_len, max_len]: the long right tail of real corpora (most documents short, a few very long)."""
    rng = np.random.default_rng(seed)
    mu = np.log(mean) - sigma**2 / 2
    return np.clip(np.round(rng.lognormal(mu, sigma, n)), min_len, max_len).astype(np.int64)


class MarkovCorpus:
    """Documents of tokens from a fixed random first-order Markov chain over `vocab` tokens (learnable: the best
    achievable next-token loss is the chain's conditional entropy, `entropy_nats`).

    Each row of the transition matrix is a Dirichlet(`concentration`) draw: small concentration → few likely
    successors → low entropy → a loss curve that visibly falls within a few dozen steps.
    """

    def __init__(self, vocab: int = 64, concentration: float = 0.1, seed: int = 0):
        rng = np.random.default_rng([seed, 7919])
        self.vocab = int(vocab)
        self.trans = rng.dirichlet(np.full(vocab, concentration), size=vocab)
        self._cum = self.trans.cumsum(1)
        self._cum[:, -1] = 1.0

    @property
    def entropy_nats(self) -> float:
        """Conditional entropy of the next token (nats), averaged over a uniform current token."""
        p = self.trans
        return float(-(p * np.log(np.where(p > 0, p, 1))).sum(1).mean())

    def documents(self, lengths: np.ndarray, seed: int = 0) -> list[np.ndarray]:
        """One int64 token array per length (vectorised over documents, one step at a time)."""
        rng = np.random.default_rng([seed, 104729])
        lengths = np.asarray(lengths, dtype=np.int64)
        n, width = len(lengths), int(lengths.max()) if len(lengths) else 0
        toks = np.zeros((n, width), dtype=np.int64)
        if width:
            toks[:, 0] = rng.integers(0, self.vocab, n)
            for t in range(1, width):
                u = rng.random(n)
                toks[:, t] = (self._cum[toks[:, t - 1]] < u[:, None]).sum(1)
        return [toks[i, : lengths[i]] for i in range(n)]


# ------------------------------------------------------------------------------------------------ lab command lines
def run_lab(rank_main: Callable[[Any], Any], cfg: Any, nproc: int, start_method: str | None = None,
            nccl_debug: bool = False, argv: list[str] | None = None) -> dict[str, Any] | None:
    """Create cfg.run_dir, then run `rank_main(cfg)` on every rank (torchrun or `nproc` spawned ranks); rank 0's
    result, None on the other ranks. `argv`: the command line, to print the equivalent torchrun command."""
    Path(cfg.run_dir).mkdir(parents=True, exist_ok=True)
    if argv is not None and not launched_by_torchrun():
        module = sys.modules[rank_main.__module__].__spec__.name if rank_main.__module__ == "__main__" \
            else rank_main.__module__
        print(f"spawning {nproc} ranks (same as: {torchrun_command(module, nproc, argv)})", flush=True)
    env = nccl_debug_env(cfg.run_dir) if nccl_debug else None
    return launch(rank_main, cfg, nproc, start_method=start_method, env=env)


def checked_verdict(checks: dict[str, bool], figures: dict[str, Any], refuted: str | None,
                    confirmed: Callable[[], str]) -> dict[str, Any]:
    """The distributed labs' verdict rule: "refuted" with that sentence when `refuted` is given (the lab found the
    fault costs nothing beyond the noise), else "confirmed" when every check holds (the summary from `confirmed`,
    called only then: its figures exist), else "inconclusive" naming the failed checks."""
    if refuted is not None:
        status, summary = "refuted", refuted
    elif all(checks.values()):
        status, summary = "confirmed", confirmed()
    else:
        status, summary = "inconclusive", "failed checks: " + ", ".join(k for k, ok in checks.items() if not ok)
    return {"status": status, "summary": summary, "checks": checks, "figures": figures}
