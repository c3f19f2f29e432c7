"""`playbook compare GOOD BAD`: why a run that used to sit at 100% is now spotty — what changed between a good
and a bad run, whether the difference is bigger than the noise, and which change explains it.

What it checks
  Throughput (per token when both sides log tokens, named in the unit their meta.json gives as tokens_unit —
  samples/s for the labs —, else steps/s; mean GPU utilization when neither side has a step log) with a 95% interval that accounts for autocorrelated steps and, with repeats, run-to-run variance;
  the step-time distributions; the causes the slowdown splits into (data, h2d, collective, checkpoint/eval,
  recompiles, GC, time between steps, slower compute, one slow rank) with each one's share; event counts and
  cadence; the utilization pattern of each side (playbook diagnose); and the environment / configuration diff
  (versions, GPUs, NCCL_* / CUDA_* / OMP_* / TORCH_* variables, CPU count, compile cache state, command line,
  recorded settings), each changed item linked to the causes it can produce. Analysis:
  playbook.diagnosis.regression.

The exact command
  playbook compare runs/good runs/bad
  playbook compare --good runs/g1 --good runs/g2 --bad runs/b1 --bad runs/b2      repeats: run-to-run variance
  playbook compare runs/good runs/bad --json > diff.json
  GOOD and BAD are run directories (`playbook record`, the probes, the labs) or anything `playbook diagnose`
  reads. A folder holding several run directories is several runs of one side; `--good P [P ...]` names one run
  each time it is given (the files of one run go together after one flag).

How to read the result
  "Verdict" says slower / faster / no significant difference, with the throughput ratio and its interval. With
  one run a side the interval holds only the noise within each run: repeat runs before trusting a small change.
  "Likely causes" are ranked by the share of the slowdown they account for × confidence; each lists its evidence
  and the changed settings linked to it ("changed with it"). Two changes linked to the same cause (e.g. a cold
  compile cache and a new padding setting, both → recompilation) cannot be told apart by one pair of runs:
  revert one at a time and compare again (notebooks/40_regression_compare.ipynb does exactly that).
"""

from __future__ import annotations

import math
from pathlib import Path

from playbook.commands import TZ_HELP, emit
from playbook.core.errors import InputError, PlaybookError

HELP = "why BAD is slower than GOOD: throughput vs noise, phases, events, utilization pattern, environment diff"
EXAMPLES = """\
  playbook compare runs/good runs/bad                        two run directories
  playbook compare runs/good runs/bad --json > diff.json     one JSON object on stdout
  playbook compare --good runs/g1 --good runs/g2 --bad runs/b1 --bad runs/b2    repeats: run-to-run variance
  playbook compare --good old/node*.csv old/steps.jsonl --bad new/node*.csv new/steps.jsonl   logs of one run each
"""


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="*", metavar="GOOD BAD",
                        help="the good run and the bad run (a run directory, a file, or a folder of run directories)")
    parser.add_argument("--good", action="append", nargs="+", metavar="PATH", default=None,
                        help="the paths of one good run (repeat the flag for more runs)")
    parser.add_argument("--bad", action="append", nargs="+", metavar="PATH", default=None,
                        help="the paths of one bad run (repeat the flag for more runs)")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    parser.add_argument("--fields", default=None,
                        help="the --query-gpu list of headerless nvidia-smi CSVs, e.g. index,utilization.gpu")
    parser.add_argument("--interval", type=float, default=None, metavar="S",
                        help="polling interval in seconds, for inputs without timestamps")
    parser.add_argument("--tz", default="UTC", metavar="ZONE", help=TZ_HELP)
    parser.add_argument("--boot", type=int, default=2000, metavar="N", help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap random seed")


def expand_side(path: str) -> list[list[str]]:
    """The runs one positional GOOD/BAD path holds: a folder of run directories is one run per directory."""
    from playbook.model import run_layout as rundir

    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file or directory")
    if p.is_dir() and not rundir.is_run_dir(p):
        children = sorted(c for c in p.iterdir() if c.is_dir() and rundir.is_run_dir(c))
        if children:
            return [[str(c)] for c in children]
    return [[path]]


def read_side(runs: list[list[str]], fields: str | None = None, interval_s: float | None = None, name: str = "",
              tz: str = "UTC"):
    """One Bundle per run (each run: its list of paths)."""
    from playbook.readers import read_paths

    out = []
    for paths in runs:
        bundle = read_paths(paths, fields=fields, interval_s=interval_s, tz=tz)
        if bundle.is_empty():
            raise InputError(f"{', '.join(paths)}: nothing readable in this {name} run")
        out.append(bundle)
    return out


def run(args) -> int:
    if args.interval is not None and not (math.isfinite(args.interval) and args.interval > 0):
        raise InputError(f"--interval must be a positive number of seconds, not {args.interval:g}")
    if args.boot < 100:
        raise InputError(f"--boot must be at least 100 resamples, not {args.boot}")
    if args.runs and (args.good or args.bad):
        raise InputError("give either GOOD BAD or --good/--bad, not both")
    if args.runs:
        if len(args.runs) != 2:
            raise InputError(f"expected two paths, GOOD and BAD, got {len(args.runs)}")
        good_runs, bad_runs = expand_side(args.runs[0]), expand_side(args.runs[1])
    else:
        if not args.good or not args.bad:
            raise InputError("name a good and a bad run: playbook compare GOOD BAD (or --good PATH --bad PATH)")
        good_runs, bad_runs = [list(g) for g in args.good], [list(b) for b in args.bad]
    from playbook.diagnosis.regression.verdict import compare_runs

    good = read_side(good_runs, args.fields, args.interval, "GOOD", args.tz)
    bad = read_side(bad_runs, args.fields, args.interval, "BAD", args.tz)
    try:
        result = compare_runs(good, bad, n_boot=args.boot, seed=args.seed)
    except ValueError as exc:
        raise PlaybookError(str(exc)) from exc
    if result.mode == "none":
        raise InputError(f"{args.runs[0] if args.runs else 'GOOD'} vs {args.runs[1] if args.runs else 'BAD'}: "
                         "nothing to compare — each side needs a step log or GPU telemetry")
    return emit(result, args.json, render)


# ---------------------------------------------------------------------------------------------------------------
# The readable report


def _text():
    """The regression report's number formats (imported when rendering: `playbook compare --help` stays light)."""
    from playbook.diagnosis.regression import text

    return text


def _s(x) -> str:
    return _text().fmt_seconds(x)


def _p(p) -> str:
    return _text().fmt_p(p)


def _signed(x) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "?"
    return ("+" if x > 0 else "−" if x < 0 else "±") + _s(abs(x))


def _pct(x, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "?"
    return f"{x:+.0%}" if signed else f"{x:.0%}"


def _side_label(side: dict) -> str:
    ins = side.get("inputs") or []
    shown = ", ".join(ins[:2]) + (f" and {len(ins) - 2} more" if len(ins) > 2 else "")
    runs = side.get("runs", 1)
    return f"{shown} ({runs} run{'s' if runs != 1 else ''}, {side.get('steps', 0)} steps)"


def render(r) -> str:
    """The readable report of a diagnosis.regression.verdict.Regression."""
    d = r.to_dict()
    lines = ["playbook compare", f"  GOOD: {_side_label(d['good'])}", f"  BAD:  {_side_label(d['bad'])}"]
    if d["warnings"]:
        lines.append(f"  ({len(d['warnings'])} warning{'s' if len(d['warnings']) != 1 else ''} on stderr)")
    lines += ["", f"Verdict: {d['summary']}"]
    lines += _throughput_section(d)
    lines += _causes_section(d)
    lines += _phases_section(d)
    lines += _events_section(d)
    lines += _pattern_section(d)
    lines += _environment_section(d)
    return "\n".join(lines).rstrip()


def _throughput_section(d: dict) -> list[str]:
    tp = d["throughput"]
    if not tp:
        return [""]
    lines = [""]
    head = "Throughput" if d["mode"] == "steps" else "Mean utilization (no step log on both sides)"
    values = (f"GOOD {_text().num(tp['good'])}, BAD {_text().num(tp['bad'])} {tp['unit']}" if d["mode"] == "steps" else
              f"GOOD {tp['good']:.1f}%, BAD {tp['bad']:.1f}%")
    lines.append(f"{head}: {values} — ratio {tp['ratio']:.3f} "
                 f"(95% CI {tp['ratio_lo']:.3f}-{tp['ratio_hi']:.3f}, {_p(tp['p_value'])}; "
                 f"{'bigger than the noise' if tp['significant'] else 'within the noise'})")
    rr = tp.get("run_to_run") or {}
    if rr.get("measured"):
        lines.append(f"  run to run: GOOD cv {_pct(rr.get('good_cv'))} over {len(tp['good_per_run'])} runs, BAD cv "
                     f"{_pct(rr.get('bad_cv'))} over {len(tp['bad_per_run'])} runs ({tp.get('method', '')})")
    else:
        noise = "step-to-step" if d["mode"] == "steps" else "sample-to-sample"
        lines.append(f"  run to run: not measured (one run on a side) — the interval holds the {noise} noise only")
    if tp.get("block_steps"):
        bs = tp["block_steps"]
        lines.append(f"  block bootstrap over steps, {tp['n_boot']} resamples, blocks of "
                     f"{'/'.join(map(str, bs['good']))} (GOOD) and {'/'.join(map(str, bs['bad']))} (BAD) steps")
    st = d["step_time"]
    if st:
        m, md = st["mean"], st["median"]
        per = "" if st.get("per") == "step" else f" (per {st['per']})"
        lines.append(f"  step time{per}: mean {_s(m['good'])} → {_s(m['bad'])} (×{m['ratio']:.3g}), median "
                     f"{_s(md['good'])} → {_s(md['bad'])} (×{md['ratio']:.3g}, 95% CI {md['ratio_lo']:.3g}-"
                     f"{md['ratio_hi']:.3g}), p90 {_s(st['p90']['good'])} → {_s(st['p90']['bad'])}")
        if st.get("cliffs_delta") is not None:
            lines.append(f"  distribution: Cliff's δ = {st['cliffs_delta']:+.2f} (P(BAD step slower) − P(faster); "
                         f"Mann-Whitney {_p(st['p_value'])} on autocorrelation-deflated sizes)")
    return lines


def _causes_section(d: dict) -> list[str]:
    lines = ["", "Likely causes (ranked by the share of the change they account for × confidence)"]
    if not d["causes"]:
        lines.append("  none: no cause accounts for a significant share of the change")
        return lines
    for i, c in enumerate(d["causes"][:6], 1):
        share = f", {_pct(c['share_of_change'])} of the change" if c.get("share_of_change") is not None else ""
        delta = f", {_signed(c['delta_s'])} per step" if c.get("delta_s") is not None else ""
        lines.append(f"  {i}. {c['id']:<22} score {c['score']:.2f}{delta}{share}")
        for e in c["evidence"][:6]:
            lines.append(f"       - {e}")
        lines.append(f"       next: {c['next_step']}")
        lines.append(f"       fix:  {c['fix']}")
        lines.append(f"       lab:  {c['notebook']}")
    return lines


def _phases_section(d: dict) -> list[str]:
    if not d["phases"]:
        return []
    per = d["step_time"].get("per", "step")
    lines = ["", f"Phases (seconds per step{'' if per == 'step' else ' at ' + per}; largest change first)",
             f"  {'phase':<12} {'GOOD':>10} {'BAD':>10} {'change':>10}   {'95% CI':<23} {'share':>6}"]
    for p in d["phases"][:10]:
        ci = f"{_signed(p['delta_lo'])} to {_signed(p['delta_hi'])}"
        share = _pct(p["share_of_change"]) if p.get("share_of_change") is not None and \
            abs(p["share_of_change"]) >= 0.005 else ""
        mark = "" if p["significant"] else "  (noise)"
        lines.append(f"  {p['phase']:<12} {_s(p['good_s']):>10} {_s(p['bad_s']):>10} {_signed(p['delta_s']):>10}   "
                     f"{ci:<23} {share:>6}{mark}")
    return lines


def _events_section(d: dict) -> list[str]:
    if not d["events"]:
        return []
    lines = ["", "Events (in the timed steps; steps per 100 holding one; outside = before/after/between runs' steps)"]
    for e in d["events"][:8]:
        secs = ""
        if e.get("delta_s") is not None:
            secs = f", {_s(e['good_s_per_step'])} → {_s(e['bad_s_per_step'])} per step"
        cad = ""
        if e.get("good_cadence_steps") is not None or e.get("bad_cadence_steps") is not None:
            cad = f", one every {_every(e.get('good_cadence_steps'))} → {_every(e.get('bad_cadence_steps'))} steps"
        out = f", outside {e['good_outside']} → {e['bad_outside']}" if e["good_outside"] or e["bad_outside"] else ""
        lines.append(f"  {e['kind']:<16} {e['good_events']} → {e['bad_events']} "
                     f"({e['good_per_100_steps']:.3g} → {e['bad_per_100_steps']:.3g} per 100 steps, rate "
                     f"{_p(e['rate_p_value'])}){secs}{cad}{out}")
    return lines


def _pattern_section(d: dict) -> list[str]:
    pat = d["pattern"]
    signal = pat.get("signal") or "no utilization-like signal"
    lines = ["", f"Utilization pattern ({signal})"]
    for side in ("good", "bad"):
        s = pat[side]
        osc = s.get("oscillation") or {}
        if osc.get("detected"):
            what = (f"periodic {osc.get('high_pct'):.0f}% ↔ {osc.get('low_pct'):.0f}% every {osc.get('period_s')} s, "
                    f"duty {osc.get('duty_cycle')}" if osc.get("periodic") else
                    f"irregular swings {osc.get('high_pct'):.0f}% ↔ {osc.get('low_pct'):.0f}%")
            if osc.get("synchrony"):
                what += f", {osc['synchrony']}"
        elif osc:
            what = "no oscillation" + (f" (level {osc['high_pct']:.0f}%)" if osc.get("high_pct") is not None else "")
        else:
            what = "not analysed"
        extra = []
        if s.get("mean_util_pct") is not None:
            extra.append(f"mean utilization {s['mean_util_pct']:.0f}%")
        if s.get("busy_share") is not None:
            extra.append(f"busy {s['busy_share']:.0%} of wall time")
        if s.get("top_hypothesis"):
            extra.append(f"diagnose: {s['top_hypothesis']} ({s['top_score']:.2f})")
        lines.append(f"  {side.upper():<4}  {what}" + (f"; {'; '.join(extra)}" if extra else ""))
    for c in pat.get("changes") or []:
        lines.append(f"  changed: {c}")
    return lines


def _environment_section(d: dict) -> list[str]:
    env = d["environment"]
    if not env and not d["unchanged"]:
        return ["", "Environment and configuration: not compared (no fingerprint or configuration recorded)"]
    lines = ["", f"Environment and configuration: {len(env)} changed, {len(d['unchanged'])} unchanged"]
    width = max((len(e["key"]) for e in env[:16]), default=10)
    for e in env[:16]:
        linked = f"  → {', '.join(e['causes'])}" if e["causes"] and e["score"] >= 0.05 else ""
        varies = " (varies within a side)" if e.get("varies") else ""
        lines.append(f"  {e['key']:<{width}}  {_text().short(str(e['good']), 60)} → {_text().short(str(e['bad']), 60)}{varies}{linked}")
    if len(env) > 16:
        lines.append(f"  … and {len(env) - 16} more (see --json)")
    if d["unchanged"]:
        shown = [k for k in d["unchanged"] if not k.startswith(("env ", "package ", "knobs."))][:10]
        lines.append(f"  unchanged: {', '.join(shown)}" + (" …" if len(d["unchanged"]) > len(shown) else ""))
    return lines


def _every(n) -> str:
    return "–" if n is None else f"{n:.3g}"
