"""Recompilation lab: torch.compile meets a new sequence length, stops to recompile, and eventually gives up.

What it reproduces
  A tiny transformer classifies variable-length token sequences under torch.compile. Knobs:
    shapes=batch_max, dynamic=off   the fault: every batch padded to its own longest sequence, graphs specialised
                                    to exact shapes: a recompile ("recompile" event) for each new length, in the
                                    loop, until dynamo's recompile limit (8) — then that function runs eagerly
    warmup=False                    the cold start: the first compile happens inside step 0
  Fixes (playbook.labs.fixes.compile):
    shapes=bucket, warmup=True      pad to `buckets` lengths; compile each once, single-threaded, before step 0
    dynamic=mark, warmup=True       mark the length dimension dynamic: one shape-generic graph
  `backend=auto` is inductor on CUDA and "eager" on CPU: dynamo's tracing and guards (what recompiles) without
  inductor's C++ code generation, which takes tens of seconds per graph on a small CPU (aot_eager adds the
  AOTAutograd backward trace: a few times slower to compile). The stall per recompile is therefore smaller on CPU
  than what inductor costs on a GPU — the lab understates the fault.
  `thread_demo()` shows the thread-safe pattern for serving a compiled model from several threads.

The exact command
  python -m playbook.labs.workloads.recompilation --variants no_fault,fault,fix --repeats 3
  python -m playbook.labs.workloads.recompilation --variants no_fault,fault,fix --device cuda     # inductor
  playbook diagnose runs/recompilation/fault-r0

How to read the result
  The fault's steps that meet a new length take the compile time (0.1-0.3 s with eager, seconds with inductor);
  the events table holds one "recompile" event per stall with dynamo's guard-failure reason (e.g. a size
  mismatch). The fix moves all compiles before step 0 (`warmup_compile_s`, reported separately) and keeps
  throughput ≥ 95% of no_fault (static shapes: everything padded to max_len, one compile); bucketing can beat it
  because it pads less (`padding_waste`).
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playbook.core.errors import WorkloadError
from playbook.knowledge import ids as cause_ids
from playbook.labs.workloads._harness import LoopKnobs, defaults, knob, resolve_knobs, variant_cli


@dataclass
class RecompilationConfig(LoopKnobs):
    """The knobs of one run (defaults; a variant's preset in VARIANTS overrides them)."""

    steps: int = knob(48, "timed training steps per run")
    batch_size: int = knob(8, "sequences per step")
    min_len: int = knob(8, "shortest sequence")
    max_len: int = knob(64, "longest sequence (lengths are skewed short, from 8 to max_len)")
    shapes: str = knob("batch_max", "padding: batch_max | bucket | max")
    buckets: int = knob(4, "bucket count")
    dynamic: str = knob("off", "off (dynamic=False) | auto (torch default) | mark (mark_dynamic on the length dim)")
    warmup: bool = knob(False, "compile every shape before step 0 (single-threaded)")
    backend: str = knob("auto", "torch.compile backend (auto: inductor on CUDA, eager on CPU)")
    compile: bool = knob(True, "use torch.compile (False: eager)")
    d_model: int = knob(32, "transformer width")
    layers: int = knob(1, "transformer blocks")
    threads_demo: bool = knob(
        True, "notebook appendix: serve the compiled model from 4 threads (warm-up first vs compile under a lock)",
        cli=False)
    race_demo: bool = knob(False, "also run the unsafe concurrent compile, in a child process (it may crash there)", cli=False)


KNOBS: dict[str, Any] = defaults(RecompilationConfig)
CONFIG = RecompilationConfig
VARIANTS: dict[str, dict[str, Any]] = {
    "no_fault": {"shapes": "max", "dynamic": "off", "warmup": True},
    "fault": {"shapes": "batch_max", "dynamic": "off", "warmup": False},
    "fix": {"shapes": "bucket", "dynamic": "off", "warmup": True},
    "fix_dynamic": {"shapes": "batch_max", "dynamic": "mark", "warmup": True},
    "cold": {"shapes": "max", "dynamic": "off", "warmup": False},
    "eager": {"shapes": "batch_max", "compile": False},
}


def _lengths_for(k: dict[str, Any]) -> list[int]:
    from playbook.labs.fixes.shapes import even_buckets

    if k["shapes"] == "max":
        return [k["max_len"]]
    if k["shapes"] == "bucket":
        return even_buckets(k["max_len"], k["buckets"])
    return [k["min_len"], k["max_len"]]  # dynamic: the two ends of the range


def _collate(k: dict[str, Any]):
    from playbook.labs.fixes.compile import BucketPadder
    from playbook.labs.fixes.shapes import collate_padded, even_buckets

    if k["shapes"] == "max":
        return lambda samples: collate_padded(samples, k["max_len"])
    if k["shapes"] == "bucket":
        return BucketPadder(even_buckets(k["max_len"], k["buckets"]))
    if k["shapes"] == "batch_max":
        return collate_padded
    raise WorkloadError(f"shapes must be batch_max, bucket or max, not {k['shapes']!r}")


def build_model(k: dict[str, Any], device: Any) -> tuple[Any, Any]:
    """(module, callable): the tiny transformer and its torch.compile'd (or eager) callable, dynamo reset first."""
    import torch

    from playbook.labs.workloads.models import TinyTransformer

    if k["dynamic"] not in ("off", "auto", "mark"):
        raise WorkloadError(f"dynamic must be off, auto or mark, not {k['dynamic']!r}")
    module = TinyTransformer(vocab=64, d_model=k["d_model"], layers=k["layers"], max_len=k["max_len"]).to(device)
    if not k["compile"]:
        return module, module
    torch._dynamo.reset()  # every run starts with dynamo's in-process caches empty
    dynamic = False if k["dynamic"] == "off" else None
    return module, torch.compile(module, backend=resolve_backend(k["backend"], device), dynamic=dynamic)


def resolve_backend(backend: str, device: Any) -> str:
    """"auto" → inductor on CUDA, eager (dynamo only) on CPU; anything else unchanged."""
    if backend != "auto":
        return backend
    return "inductor" if getattr(device, "type", str(device)) == "cuda" else "eager"


def run(run_dir: str | Path, variant: str = "fault", **overrides: Any):
    """Train with the variant's shape policy; record into `run_dir` (compile/recompile events); return a
    RunResult (extra: recompiles, compiles, warmup_compile_s, distinct_shapes, padding_waste)."""
    import torch
    import torch.nn.functional as F

    from playbook.labs.fixes.compile import mark_dynamic, warmup
    from playbook.labs.fixes.shapes import padding_waste
    from playbook.labs.workloads.common import pick_device, seed_everything
    from playbook.labs.workloads.loop import (
        LoopMeter,
        SequenceDataset,
        cpu_threads,
        finish_run,
        make_optimizer,
        train_step,
    )
    from playbook.probes import Rates, Recorder

    k = resolve_knobs(VARIANTS, variant, KNOBS, overrides)
    if k["steps"] < 1 or k["batch_size"] < 1:
        raise WorkloadError("steps and batch_size must be >= 1")
    seed_everything(k["seed"])
    device = pick_device(k["device"])
    data = SequenceDataset(n=k["steps"] * k["batch_size"], min_len=k["min_len"], max_len=k["max_len"],
                           seed=k["seed"])
    collate = _collate(k)
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(k["seed"])).tolist()
    batches = [collate([data[j] for j in order[i:i + k["batch_size"]]])
               for i in range(0, len(order) - k["batch_size"] + 1, k["batch_size"])][: k["steps"]]
    real = [int(len(data[j][0])) for j in order[: len(batches) * k["batch_size"]]]
    padded = [int(b[0].shape[1]) for b in batches for _ in range(k["batch_size"])]
    meter = LoopMeter(device)
    meta = {"lab": cause_ids.RECOMPILATION, "variant": variant, "tokens_unit": "sequences", "knobs": k}
    warm_s = 0.0
    module, fn = build_model(k, device)  # resets dynamo, which also drops compile callbacks: before the Recorder
    opt = make_optimizer(module)
    with cpu_threads(k["torch_threads"], device), Recorder(run_dir, rates=Rates(sample_hz=k["sample_hz"]), meta=meta) as rec:
        if k["warmup"] and k["compile"]:
            examples = []
            for L in _lengths_for(k):
                x = torch.randint(1, 64, (k["batch_size"], L), device=device)
                examples.append(mark_dynamic(x, 1) if k["dynamic"] == "mark" else x)
            with rec.event_span("compile", detail=f"warm-up of {len(examples)} shape(s), one thread"):
                t0 = time.perf_counter()
                warmup(lambda x: F.cross_entropy(fn(x), torch.zeros(len(x), dtype=torch.long, device=device)),
                       examples, backward=True)
                module.zero_grad(set_to_none=True)
                warm_s = time.perf_counter() - t0
        c0 = rec.events.compile_stats()
        meter.start()
        for i, (x, y) in enumerate(rec.timed(batches)):
            with rec.timer.step(i, tokens=int((x != 0).sum())):
                with rec.timer.phase("h2d"):
                    x, y = x.to(device), y.to(device)
                    if k["dynamic"] == "mark" and k["compile"]:
                        mark_dynamic(x, 1)
                loss = train_step(fn, opt, x, y, rec.timer)
            meter.add(loss, len(x))
        meter.stop()
        c1 = rec.events.compile_stats()
    return finish_run(
        variant, run_dir, meter, recompiles=c1["recompile"] - c0["recompile"],
        compiles=c1["compile"] - c0["compile"], loop_compile_s=c1["total_s"] - c0["total_s"],
        warmup_compile_s=warm_s, distinct_shapes=len({tuple(b[0].shape) for b in batches}),
        padding_waste=padding_waste(real, padded), shapes=k["shapes"], dynamic=k["dynamic"],
        backend=resolve_backend(k["backend"], device) if k["compile"] else "none")


def thread_demo(threads: int = 4, requests: int = 6, mode: str = "warm", max_len: int = 64, buckets: int = 4,
                backend: str = "eager", seed: int = 0) -> dict[str, Any]:
    """Serve a compiled model from `threads` threads, each running `requests` forward passes on bucketed shapes.

    mode="warm": compile every bucket in this thread first, then start the threads (nothing compiles in them).
    mode="guarded": no warm-up; CompileGuard serialises the calls that compile, so threads wait for each other.
    Returns wall_s (threads only), warmup_s, first_result_s (mean time to a thread's first answer), max_first_s,
    errors (exceptions raised in threads), compiles_in_threads and compile_s_in_threads (counted by dynamo's
    compile callbacks), lock_wait_s. Never compiles from two threads at once.
    """
    import torch

    from playbook.labs.fixes.compile import CompileGuard, same_threads_as_warmup, warmup
    from playbook.labs.fixes.shapes import even_buckets
    from playbook.probes import EventLog

    if mode not in ("warm", "guarded"):
        raise WorkloadError("mode must be warm or guarded (the unguarded race runs only in race_check())")
    torch.manual_seed(seed)
    k = {**KNOBS, "max_len": max_len, "backend": backend, "dynamic": "off"}
    module, fn = build_model(k, torch.device("cpu"))
    module.eval()
    lengths = even_buckets(max_len, buckets)
    warm_s = 0.0
    if mode == "warm":
        t0 = time.perf_counter()
        warmup(fn, [torch.randint(1, 64, (4, L)) for L in lengths])
        warm_s = time.perf_counter() - t0
    guard = CompileGuard(fn)
    adopt_thread_count = same_threads_as_warmup()
    first: list[float] = [math.nan] * threads
    errors: list[str] = []
    start = threading.Barrier(threads + 1)

    def serve(t: int) -> None:
        rng = torch.Generator().manual_seed(seed + t)
        adopt_thread_count()
        start.wait()
        t0 = time.perf_counter()
        for r in range(requests):
            L = lengths[int(torch.randint(0, len(lengths), (1,), generator=rng))]
            try:
                with torch.no_grad():
                    guard(torch.randint(1, 64, (4, L), generator=rng))
            except Exception as exc:  # recorded, never raised into the caller
                errors.append(f"thread {t}: {type(exc).__name__}: {exc}")
            if r == 0:
                first[t] = time.perf_counter() - t0

    log = EventLog()
    log.watch_compile()
    pool = [threading.Thread(target=serve, args=(t,), name=f"serve-{t}") for t in range(threads)]
    for th in pool:
        th.start()
    start.wait()
    t0 = time.perf_counter()
    for th in pool:
        th.join()
    wall = time.perf_counter() - t0
    stats = log.compile_stats()
    log.close()
    return {"mode": mode, "threads": threads, "wall_s": wall, "warmup_s": warm_s,
            "first_result_s": sum(first) / threads, "max_first_s": max(first), "errors": len(errors),
            "compiles_in_threads": int(stats["compile"] + stats["recompile"]),
            "compile_s_in_threads": stats["total_s"], "lock_wait_s": guard.stats["wait_s"]}


_RACE = textwrap.dedent("""
    import threading, torch
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    f = torch.compile(m, backend={backend!r}, dynamic=False)
    errors = []
    def call(n):
        try:
            with torch.no_grad():
                f(torch.randn(n, 16))
        except Exception as exc:
            errors.append(type(exc).__name__ + ": " + str(exc)[:200])
    ts = [threading.Thread(target=call, args=(n,)) for n in range(2, 2 + {threads})]
    [t.start() for t in ts]; [t.join() for t in ts]
    print("ERRORS", len(errors)); [print(e) for e in errors]
""")


def race_check(threads: int = 4, backend: str = "eager", timeout_s: float = 180.0) -> dict[str, Any]:
    """The unsafe pattern — `threads` threads making a fresh compiled module compile different shapes at once —
    in a child process, so that a crash cannot take the caller (a notebook kernel) down. Returns returncode
    (negative: killed by a signal), errors (exceptions the threads raised), output (the child's last lines).
    A clean run proves nothing: the race is timing-dependent (see pytorch/pytorch#136833)."""
    code = _RACE.format(backend=backend, threads=int(threads))
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"returncode": None, "errors": math.nan, "output": f"timed out after {timeout_s} s"}
    out = (proc.stdout + proc.stderr).strip().splitlines()
    n = next((int(line.split()[1]) for line in out if line.startswith("ERRORS ")), math.nan)
    return {"returncode": proc.returncode, "errors": n, "output": "\n".join(out[-8:])}


def main(argv: list[str] | None = None) -> int:
    return variant_cli(cause_ids.RECOMPILATION, __doc__, run, VARIANTS, RecompilationConfig, argv)


if __name__ == "__main__":
    sys.exit(main())
