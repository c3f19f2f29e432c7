"""Lab benchmark: the timing claims behind the notebook labs' verdicts, run with the notebooks' own defaults.

What it checks
    The tests run these notebooks with small parameters on a loaded machine and assert only that each verdict
    follows the lab's rule applied to the figures it printed, plus counted facts and several-fold directions. The
    timing targets those tests used to assert are measured here, one line per notebook, with the target beside
    the figure:
      00 onboarding         the streaming buffer's throughput ÷ the fault's, 95% interval above 1
      02 observability      the 10 Hz recorder's threads ≤ 5% of the loop's CPU; step-time ratio's low end ≤ 1.05
      20 stragglers         token balancing's step-time ratio, interval above 1; excluding the slow rank > 1
      21 padding/packing    packing's paired step-time speed-up, interval above 1
      22 pipeline           least-loaded dispatch ÷ round-robin, interval above 1; ≥ 85% of predicted capacity
      23 comm overlap       bucketed DDP saves exposed communication: the saving's interval above 0 ms
      30 serving            bucketed p99 below exact-shape p99
      31 sharded loader     prefetch recovers ≥ 90% of no-fault throughput beyond the noise
      40 regression compare BAD ÷ GOOD throughput interval below 1; reverting the shapes closes ≥ 50% of the gap
      10, 12, 14            (their throughput: benchmarks/labs.py) the diagnosis of the fault recording
    Each line also gives the cause the diagnosis ranks first on the notebook's own fault recording beside the
    cause(s) the catalog links to that lab: which cause ranks first on a timed run is a timing-based verdict, so it
    is measured here, not asserted by the tests. (The probes' cost in detail: benchmarks/probe_overhead.py.)

The exact command
    python benchmarks/lab_verdicts.py                        # all twelve notebooks with their defaults (minutes each)
    python benchmarks/lab_verdicts.py --labs 22 --param duration_s=1.0   # one notebook, shortened: ~45 s
    python benchmarks/lab_verdicts.py --labs 21,31 --param repeats=3

How to read the result
    One line per notebook: its verdict and the figures its target is stated in (point [95% interval]). A verdict
    of "inconclusive" with an interval that reaches the target means the noise is too large to tell on this
    machine: rerun on a quiet one, or with more repeats (--param repeats=N where the notebook has that knob).
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _iv(f: dict, mid: str, lo: str, hi: str, unit: str = "") -> str:
    return f"{f.get(mid, float('nan')):.3g}{unit} [{f.get(lo, float('nan')):.3g}-{f.get(hi, float('nan')):.3g}]"


# notebook -> (what the figures are, how to print them from the recorded verdict figures)
CLAIMS = {
    "00_onboarding.ipynb": ("fix ÷ fault throughput (target: interval > 1)",
                            lambda f: _iv(f, "fix_speedup", "fix_speedup_lo", "fix_speedup_hi")),
    "02_observability.ipynb": ("10 Hz threads % of loop CPU (≤ 5), step ratio low end (≤ 1.05)",
                               lambda f: f"{f.get('sampler_cpu_pct', float('nan')):.2f}%, "
                                         f"{f.get('ratio_lo', float('nan')):.3f}"),
    "20_collective_stragglers.ipynb": ("sw fault ÷ balanced step (interval > 1), hw fix gain (> 1)",
                                       lambda f: _iv(f, "sw_step_ratio", "sw_step_ratio_lo", "sw_step_ratio_hi")
                                       + f", {f.get('hw_fix_gain', float('nan')):.2f}x"),
    "21_padding_vs_packing.ipynb": ("packed speed-up (interval > 1)",
                                    lambda f: _iv(f, "packed_speedup", "packed_speedup_lo", "packed_speedup_hi")),
    "22_pipeline_imbalance.ipynb": ("fix ÷ fault (low end > 1), fix ÷ predicted capacity (≥ 0.85)",
                                    lambda f: f"{f.get('fix_vs_fault', float('nan')):.2f} "
                                              f"[lo {f.get('fix_vs_fault_lo', float('nan')):.2f}], "
                                              f"{f.get('fix_vs_capacity', float('nan')):.2f}"),
    "23_comm_overlap.ipynb": ("overlap saving, ms (interval > 0)",
                              lambda f: _iv(f, "overlap_saved_ms", "overlap_saved_lo_ms", "overlap_saved_hi_ms")),
    "30_serving_parity.ipynb": ("p99 ms bucketed vs exact (bucketed lower)",
                                lambda f: f"{f.get('p99_bucketed_ms', float('nan')):.3g} vs "
                                          f"{f.get('p99_exact_ms', float('nan')):.3g}"),
    "31_sharded_blob_loader.ipynb": ("fault, fix ÷ no-fault (fix ≥ 0.90)",
                                     lambda f: f"{f.get('fault_ratio', float('nan')):.2f}, "
                                               f"{f.get('fix_ratio', float('nan')):.2f}"),
    "10_data_starvation.ipynb": ("fix, fault ÷ no-fault", lambda f: f"{f.get('fix_ratio', float('nan')):.2f}, "
                                                                   f"{f.get('fault_ratio', float('nan')):.2f}"),
    "12_checkpoint_eval_stalls.ipynb": ("fix, fault loop efficiency ÷ no-fault",
                                        lambda f: f"{f.get('fix_ratio', float('nan')):.2f}, "
                                                  f"{f.get('fault_ratio', float('nan')):.2f}"),
    "14_recompilation.ipynb": ("fix, fault ÷ no-fault", lambda f: f"{f.get('fix_ratio', float('nan')):.2f}, "
                                                                 f"{f.get('fault_ratio', float('nan')):.2f}"),
    "40_regression_compare.ipynb": ("BAD ÷ GOOD (interval < 1), gap closed shapes vs cache (≥ 0.5, more)",
                                    lambda f: _iv(f, "throughput_ratio", "ratio_lo", "ratio_hi")
                                    + f", {f.get('shapes_gap_closed', float('nan')):.2f} vs "
                                      f"{f.get('cache_gap_closed', float('nan')):.2f}"),
}


def run_one(name: str, out: Path, parameters: dict) -> tuple[dict, float]:
    """Execute notebooks/<name> with `parameters` over its defaults; return (everything it recorded, wall s)."""
    import papermill as pm

    from playbook.report.scrapbook import collect

    nb_out = out / name
    params = {"out_dir": str(out / "runs" / name), **parameters}
    if name.startswith(("30_", "31_")):  # these two name their output folder run_dir
        params["run_dir"] = params.pop("out_dir")
    t0 = time.perf_counter()
    pm.execute_notebook(str(ROOT / "notebooks" / name), str(nb_out), parameters=params, cwd=str(ROOT),
                        kernel_name="python3", progress_bar=False)
    return collect(nb_out), time.perf_counter() - t0


def diagnosis_line(name: str, recorded: dict) -> str:
    """The cause the diagnosis ranked first on the notebook's fault recording, beside the lab's own cause(s)."""
    from playbook.knowledge.causes import CATALOG

    top = recorded.get("diagnosis_top") or recorded["verdict"]["figures"].get("real_top")
    if not top:
        return ""
    own = [c.id for c in CATALOG if c.notebook == f"notebooks/{name}"]
    if not own and name.startswith("00_"):
        own = [c.id for c in CATALOG if c.notebook == "notebooks/10_data_starvation.ipynb"]  # its lab is lab 10's
    return f"; diagnosis ranks first: {top} ({'as' if top in own else 'NOT'} the lab's {'/'.join(own)})"


def _parse_param(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: python benchmarks/lab_verdicts.py --labs 20,21 --param repeats=3",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labs", default="", help="comma-separated notebook numbers (default: all twelve)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="override a notebook parameter (applied to every selected notebook that has it)")
    args = parser.parse_args(argv)
    from playbook.report.catalog import load

    wanted = [x.strip() for x in args.labs.split(",") if x.strip()]
    names = [n for n in CLAIMS if not wanted or n[:2] in wanted]
    if wanted and len(names) != len(wanted):
        parser.error(f"unknown lab number(s) among {wanted}; known: {', '.join(n[:2] for n in CLAIMS)}")
    overrides = dict(_parse_param(p) for p in args.param)
    with tempfile.TemporaryDirectory(prefix="playbook-lab-verdicts-") as tmp:
        for i, name in enumerate(names, 1):
            print(f"[{i}/{len(names)}] {name} ...", file=sys.stderr, flush=True)
            known = {p.name for p in load(ROOT / "notebooks" / name).parameters}
            recorded, wall = run_one(name, Path(tmp), {k: v for k, v in overrides.items() if k in known})
            verdict = recorded["verdict"]
            what, show = CLAIMS[name]
            print(f"{name[:2]} {verdict['status']:<13} {what}: {show(verdict['figures'])}"
                  f"{diagnosis_line(name, recorded)}  ({wall:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
