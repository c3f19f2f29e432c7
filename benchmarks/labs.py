"""Lab benchmark: each single-process lab's fault and fix throughput as a share of no-fault, side by side.

What it checks
    The timing claim behind each lab's verdict (notebooks 10-14): the fault costs throughput beyond run-to-run
    noise, and the fix recovers ≥ 95% of no-fault throughput. The test suite asserts only that each notebook's
    verdict agrees with its own figures (on a shared machine even the direction of one short round can flip: a
    loaded fresh-clone run measured lab 13's fault at 1.02× no-fault); this script measures the figures themselves,
    with each lab's default knobs and more repeats. Variants run interleaved and rotated, and each fault/fix run is
    divided by the no-fault run of its own round (playbook.analysis.lab_verdict.paired), so slow drift of the machine
    cancels.

The exact command
    python benchmarks/labs.py                                  # all five labs, 5 repeats: ~80 s on 2 cores
    python benchmarks/labs.py --labs checkpoint_stalls --repeats 8

How to read the result
    One line per lab: the fault's and the fix's throughput ÷ no-fault (point estimate and 95% interval over the
    paired repeats) and the verdict `lab_verdict` draws from them. "inconclusive" with a fix interval that still
    reaches 0.95 means the noise is too large to tell: rerun on a quiet machine or with more repeats. The H2D lab
    needs CUDA (on a CPU the copies it studies do not exist), so there it is expected to be inconclusive or refuted.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path

LABS = ("data_starvation", "h2d_copies", "checkpoint_stalls", "host_sync_gc", "recompilation")


def bench_lab(name: str, repeats: int, out: Path, device: str) -> dict:
    """Run no_fault / fault / fix `repeats` times each with the lab's defaults; return the paired figures."""
    from playbook.analysis.lab_verdict import lab_verdict, paired, variant_summary
    from playbook.labs.workloads.loop import run_variants

    lab = importlib.import_module(f"playbook.labs.workloads.{name}")
    t0 = time.perf_counter()
    runs, _ = run_variants(lab.run, ["no_fault", "fault", "fix"], repeats, out / name, progress=False, device=device)
    summary = variant_summary(paired(runs, "throughput", baseline="no_fault"), "throughput_paired",
                              baseline="no_fault")
    verdict = lab_verdict(summary, recover=0.95)
    return {"lab": name, "n": int(summary.loc["fault", "n"]), "summary": summary, "verdict": verdict,
            "wall_s": time.perf_counter() - t0}


def _interval(summary, variant: str) -> str:
    row = summary.loc[variant]
    return f"{row['ratio']:.2f} [{row['ratio_lo']:.2f}-{row['ratio_hi']:.2f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: python benchmarks/labs.py --labs checkpoint_stalls,host_sync_gc --repeats 5",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labs", default=",".join(LABS), help=f"comma-separated subset of {', '.join(LABS)}")
    parser.add_argument("--repeats", type=int, default=5, help="runs per variant (default 5)")
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda (default auto)")
    parser.add_argument("--out", default="", help="where run directories go (default: a temporary directory)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.labs.split(",") if n.strip()]
    unknown = sorted(set(names) - set(LABS))
    if unknown or args.repeats < 2:
        parser.error(f"unknown lab(s) {unknown}" if unknown else "--repeats must be >= 2 (an interval needs two)")

    with tempfile.TemporaryDirectory(prefix="playbook-labs-") as tmp:
        out = Path(args.out or tmp)
        print(f"{'lab':<18} {'n':>2}  {'fault / no-fault':<20} {'fix / no-fault':<20} {'verdict':<13} wall")
        for i, name in enumerate(names, 1):
            print(f"[{i}/{len(names)}] {name} ...", file=sys.stderr, flush=True)
            r = bench_lab(name, args.repeats, out, args.device)
            s = r["summary"]
            print(f"{name:<18} {r['n']:>2}  {_interval(s, 'fault'):<20} {_interval(s, 'fix'):<20} "
                  f"{r['verdict'].status:<13} {r['wall_s']:.0f} s", flush=True)
    print("ratios: throughput ÷ no-fault of the same round; [95% interval over rounds]. Target: fault < 1 beyond "
          "the noise, fix ≥ 0.95.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
