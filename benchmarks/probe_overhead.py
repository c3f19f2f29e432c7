"""Probe overhead benchmark: what the step timer and the background samplers cost a training loop.

What it checks
    1. The step/phase timer's cost per `with timer.phase(...)` and per `with timer.step(...)`, and `timed()`'s
       cost per `next()`, on the CPU clock (perf_counter path; the CUDA path adds two cudaEventRecord calls and
       two NVTX calls per phase, measured on a GPU only).
    2. The samplers' cost to a CPU-bound loop: the same fixed amount of work (small matrix products in a Python
       loop, the GIL-heavy case where a background thread hurts most) timed with no sampler, and with the NVML
       sampler (a fake 8-GPU NVML unless --real-nvml) at 1, 10 and 100 Hz plus the host probe at min(rate, 2 Hz)
       (the Recorder's defaults). The fake NVML is pure Python and holds the GIL through every call, where
       pynvml's ctypes calls release it: an upper bound for the Python side. Variants are
       interleaved and rotated (playbook.labs.workloads.common.measure_variants) so drift hits all alike.

The exact command
    python benchmarks/probe_overhead.py                  # ~1 minute on 2 busy cores
    python benchmarks/probe_overhead.py --real-nvml      # on a GPU node: the real driver instead of the fake

How to read the result
    Part 1 prints µs per phase / step / next(). Part 2 prints, per rate, the median loop time ÷ the no-sampler
    median (1.00 = free) with the min-max range over repeats; the CPU time the sampler threads used as a share of
    the loop's own CPU time (process CPU minus main-thread CPU: robust on a shared machine, and the most a
    GIL-bound loop can lose to them); and the NVML fast tick's wall time inside its thread. Ratios within the no-sampler run-to-run range are noise. On a shared
    machine, rerun before believing a small difference.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np


def timer_costs(n: int = 20000) -> dict[str, float]:
    """µs per phase, per step (with no phases) and per timed next(), CPU path, and the bare loop's µs."""
    from playbook.probes.loader import timed
    from playbook.probes.step_timer import StepTimer

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    for _ in range(n):
        pass
    bare = (time.perf_counter() - t0) / n
    timer = StepTimer(cuda=False, keep=False)
    with timer.step(0):
        t0 = time.perf_counter()
        for _ in range(n):
            with timer.phase("fwd"):
                pass
        out["phase_us"] = ((time.perf_counter() - t0) / n - bare) * 1e6
    timer.drain()
    t0 = time.perf_counter()
    for i in range(n):
        with timer.step(i):
            pass
        if i % 1000 == 0:
            timer.drain()
    out["step_us"] = ((time.perf_counter() - t0) / n - bare) * 1e6
    timer.drain()
    items = list(range(n))
    t0 = time.perf_counter()
    for _ in items:
        pass
    plain = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in timed(items, timer):
        pass
    out["timed_next_us"] = (time.perf_counter() - t0 - plain) / n * 1e6
    return out


def work(units: int) -> float:
    """A fixed amount of CPU work in a Python loop (GIL held between small numpy calls); seconds."""
    a = np.random.default_rng(0).standard_normal((48, 48))
    t0 = time.perf_counter()
    for _ in range(units):
        a = np.tanh(a @ a * 0.01)
    return time.perf_counter() - t0


def sampler_overhead(rates: list[float], repeats: int, units: int, real_nvml: bool) -> None:
    from playbook.labs.workloads.common import measure_variants
    from playbook.probes import fake_nvml
    from playbook.probes.host import HostProbe
    from playbook.probes.nvml import NvmlSampler

    costs: dict[str, list[float]] = {}

    def run_one(variant: str, _rep: int) -> dict[str, float]:
        if variant == "off":
            p0, t0 = time.process_time(), time.thread_time()
            loop_s = work(units)
            return {"loop_s": loop_s, "probe_cpu_pct": 100 * ((time.process_time() - p0) - (time.thread_time() - t0))
                    / max(time.thread_time() - t0, 1e-9)}
        hz = float(variant.split()[0])
        nv = None if real_nvml else fake_nvml.scenario("healthy", gpus=8)
        s = NvmlSampler("bench", hz=hz, nvml=nv)
        h = HostProbe("bench", hz=min(hz, 2.0))  # the Recorder's default host rate
        p0, t0 = time.process_time(), time.thread_time()
        s.start()
        h.start()
        loop_s = work(units)
        s.stop()
        h.stop()
        main_cpu = time.thread_time() - t0
        probe_cpu = (time.process_time() - p0) - main_cpu  # CPU seconds of the sampler threads
        st = s.stats()
        costs.setdefault(variant, []).append(st["mean_cost_us"] or 0.0)
        return {"loop_s": loop_s, "probe_cpu_pct": 100 * probe_cpu / max(main_cpu, 1e-9)}

    variants = ["off"] + [f"{r:g} Hz" for r in rates]
    df = measure_variants(run_one, variants, repeats=repeats)
    base = df[df["variant"] == "off"]["loop_s"]
    med0 = base.median()
    print(f"\nsamplers ({'real NVML' if real_nvml else 'fake NVML, 8 GPUs'} + host probe) on a CPU-bound loop "
          f"({med0:.2f} s without samplers, range {base.min() / med0:.3f}-{base.max() / med0:.3f}):")
    cpu0 = df[df["variant"] == "off"]["probe_cpu_pct"].median()
    for v in variants[1:]:
        x = df[df["variant"] == v]["loop_s"]
        cpu = df[df["variant"] == v]["probe_cpu_pct"].median() - cpu0
        print(f"  {v:>7}: loop time x{x.median() / med0:.3f} (range {x.min() / med0:.3f}-{x.max() / med0:.3f}); "
              f"sampler threads' CPU = {cpu:.2f}% of the loop's CPU time; "
              f"NVML fast tick {statistics.median(costs[v]):.0f} µs wall in its thread")


def isolated_costs(rates: list[float]) -> None:
    """Each probe's own cost per sample, run alone in this thread (no contention): µs."""
    from playbook.probes import fake_nvml
    from playbook.probes.host import HostProbe
    from playbook.probes.nvml import NvmlSampler

    s = NvmlSampler("bench", hz=100, nvml=fake_nvml.scenario("healthy", gpus=8))
    s.open()
    for _ in range(20):
        s.sample_once()
    t0 = time.perf_counter()
    for _ in range(300):
        s.sample_once()
    fast = (time.perf_counter() - t0) / 300 * 1e6
    t0 = time.perf_counter()
    for _ in range(30):
        s.sample_slow_once()
    slow = (time.perf_counter() - t0) / 30 * 1e6
    s.stop()
    h = HostProbe("bench", hz=100)
    h.open()
    for _ in range(5):
        h.sample_once()
    t0 = time.perf_counter()
    for _ in range(100):
        h.sample_once()
    host = (time.perf_counter() - t0) / 100 * 1e6
    h.stop()
    print(f"\nalone, per sample: NVML fast tick {fast:.0f} µs and slow round {slow:.0f} µs (fake, 8 GPUs); "
          f"host probe {host:.0f} µs")
    for hz in rates:  # steady state: fast ticks at hz, one slow round a second, host at min(hz, 2)
        per_s = hz * fast + min(hz, 1.0) * slow + min(hz, 2.0) * host
        print(f"  steady state at {hz:g} Hz: {per_s / 1e3:.2f} ms of CPU per second = {per_s / 1e4:.2f}% of a core")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="example: python benchmarks/probe_overhead.py --repeats 5",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, help="interleaved repeats per variant (default 5)")
    p.add_argument("--units", type=int, default=200000, help="work units per loop (default 200000, ~2 s)")
    p.add_argument("--rates", default="1,10,100", help="sampler rates in Hz (default 1,10,100)")
    p.add_argument("--real-nvml", action="store_true", help="sample the real GPUs instead of a fake NVML")
    args = p.parse_args(argv)
    costs = [timer_costs() for _ in range(3)]
    print("step timer (CPU clock), median of 3 runs:")
    for key in ("phase_us", "step_us", "timed_next_us"):
        print(f"  {key:>14}: {statistics.median(c[key] for c in costs):.2f} µs")
    rates = [float(r) for r in args.rates.split(",")]
    isolated_costs(rates)
    sampler_overhead(rates, args.repeats, args.units, args.real_nvml)
    return 0


if __name__ == "__main__":
    sys.exit(main())
