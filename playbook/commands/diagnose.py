"""`playbook diagnose PATH [PATH ...]`: name the cause of an oscillation, with evidence, from whatever telemetry the
user has (nvidia-smi / dmon / DCGM logs, step logs, Kineto traces, NCCL logs, playbook run directories)."""

from __future__ import annotations

import math
from collections import Counter

from playbook.analysis.series import mixed_models
from playbook.commands import TZ_HELP, emit
from playbook.core.errors import InputError, PlaybookError
from playbook.knowledge import ids as cause_ids

HELP = "name the cause of spotty or oscillating GPU utilization, with evidence, from logs, traces or a run"
EXAMPLES = """\
  playbook diagnose data/samples/synthetic-64gpu                 a folder of per-host nvidia-smi CSVs
  playbook diagnose node1.csv node2.csv steps.jsonl traces/       mixed inputs of one run
  playbook diagnose poll.txt --fields index,utilization.gpu,memory.used --interval 2
  playbook diagnose runs/r1 --json > diagnosis.json              one JSON object on stdout
  playbook diagnose gpu.csv --fail-on insufficient_data,hardware_fault,throttling
                                                                 exit 3 when the verdict is one of these (CI/alerts)
  playbook diagnose prometheus://prom:9090 --since 6h --match 'job="dcgm"'   dcgm-exporter series, last 6 h
"""


def add_arguments(parser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="files or folders, any format the readers know, or prometheus://HOST:PORT")
    parser.add_argument("--fields", default=None,
                        help="the --query-gpu list of a headerless nvidia-smi CSV, e.g. "
                             "index,utilization.gpu,memory.used")
    parser.add_argument("--interval", type=float, default=None, metavar="S",
                        help="polling interval in seconds, for inputs without timestamps")
    parser.add_argument("--tz", default="UTC", metavar="ZONE", help=TZ_HELP)
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    parser.add_argument("--fail-on", default=None, metavar="IDS",
                        help="comma-separated verdict ids (see playbook.knowledge.causes, e.g. insufficient_data,"
                             "hardware_fault; 'any' = any verdict but healthy): exit with status 3 when the top "
                             "hypothesis is one of them")
    from playbook import sources

    sources.add_arguments(parser)  # --since, --until, --step, --match for prometheus:// inputs


def run(args) -> int:
    if args.interval is not None and not (math.isfinite(args.interval) and args.interval > 0):
        raise InputError(f"--interval must be a positive number of seconds, not {args.interval:g}")
    try:
        from playbook.readers import read_paths
    except ImportError as exc:  # pragma: no cover - the readers ship with the package
        raise PlaybookError(f"the readers are not available: {exc}") from exc
    from playbook.diagnosis import diagnose
    from playbook.sources import fleet_screen

    fail_on = _fail_on(args.fail_on)
    fetched, paths = fleet_screen.read_inputs(args.paths, args)  # prometheus:// inputs, fetched into a Bundle
    bundle = read_paths(paths, fields=args.fields, interval_s=args.interval, tz=args.tz) if paths else fetched
    if fetched is not None and paths:
        bundle = fetched.extend(bundle)
    if bundle.is_empty():
        raise InputError(f"{', '.join(args.paths)}: nothing readable to diagnose")
    result = diagnose(bundle, interval_s=args.interval)
    if bundle.meta.get("screen"):  # a prometheus:// input read through the fleet screen: said in one line
        result.detail["screen"] = bundle.meta["screen"]
    status = emit(result, args.json, render)
    top = result.verdict.get("id")
    if fail_on and top and (top in fail_on or ("any" in fail_on and top != cause_ids.HEALTHY)):
        return FAIL_STATUS
    return status


FAIL_STATUS = 3  # 1 is Python's own failure status and 2 the CLI's input errors: 3 means "the verdict matched"


def _fail_on(text: str | None) -> set[str]:
    """The --fail-on ids, checked against the cause catalog (an unknown id is an input error)."""
    if not text:
        return set()
    from playbook.knowledge.causes import CAUSES

    ids = {t.strip() for t in text.split(",") if t.strip()}
    unknown = sorted(ids - set(CAUSES) - {"any"})
    if unknown:
        raise InputError(f"--fail-on: unknown verdict {', '.join(unknown)}; known: any, {', '.join(CAUSES)}")
    return ids


def _pct(v) -> str:
    return "?" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.0f}%"


def render(d) -> str:
    """The readable report: inputs, GPU table, oscillation, steps, ranks, ranked hypotheses."""
    lines = []
    osc_obj = d.detail.get("oscillation")
    n_in = len(d.inputs)
    if d.verdict.get("sentence"):
        lines += [f"Verdict: {d.verdict['sentence']}", ""]
    lines.append(f"playbook diagnose — {n_in} input{'s' if n_in != 1 else ''}: "
                 + ", ".join(d.inputs[:4]) + (f" and {n_in - 4} more" if n_in > 4 else ""))
    if d.detail.get("screen"):
        lines.append(d.detail["screen"]["line"])
    if d.warnings:
        lines.append(f"({len(d.warnings)} warning{'s' if len(d.warnings) != 1 else ''} on stderr)")
    lines.append("")
    lines += _accounting_section(d.accounting)
    lines += _gpu_section(d)
    lines += _oscillation_section(d, osc_obj)
    lines += _steps_section(d.steps)
    lines += _ranks_section(d.ranks)
    lines += _machine_section(d.detail.get("links"))
    lines.append("Hypotheses (the verdict first, then by score)")
    for i, h in enumerate(d.hypotheses[:6], 1):
        lines.append(f"  {i}. {h['id']:<22} score {h['score']:.2f}")
        for e in h["evidence"][:4]:
            lines.append(f"       - {e}")
        lines.append(f"       next: {h['next_step']}")
        lines.append(f"       fix:  {h['fix']}")
        lines.append(f"       lab:  {h['notebook']}" + (f"  ({h['command']})" if h.get("command") else ""))
    return "\n".join(lines)


def _accounting_section(acc: dict) -> list[str]:
    """Where the time went: the what-if accounting's total, the noise floor and one row per bucket."""
    if not acc:
        return []
    gpu = acc["basis"] == "gpu"
    unit = "GPU-s" if gpu else "s"
    out = [f"Where the time went ({'GPU' if gpu else 'wall'} time against the same work at the run's own healthy "
           "pace)",
           f"  {acc['wall_s']:.6g} {unit} = ideal {acc['ideal_s']:.6g} + lost {acc['lost_s']:.4g} "
           f"({acc['lost_share']:.1%}) + warm-up {acc['warmup_s']:.4g}; noise floor {acc['noise_floor_share']:.1%}: "
           f"{acc['noise_floor']}"]
    if acc["buckets"]:
        out.append(f"  {'bucket':<20} {unit:>9} {'share':>6}  {'cause':<22} what")
    for b in acc["buckets"][:8]:
        where = ", ".join(b["names"][:3]) + (" …" if len(b["names"]) > 3 else "")
        out.append(f"  {b['kind']:<20} {b['seconds']:>9.4g} {b['share']:>6.1%}  {b['cause']:<22} {b['detail']}"
                   + (f" [{where}]" if where else ""))
    return out + [""]


def _gpu_section(d) -> list[str]:
    if not d.gpus:
        return ["GPUs: no GPU telemetry in the inputs", ""]
    hosts = sorted({g["host"] for g in d.gpus})
    counts = Counter(g["status"] for g in d.gpus)
    models = Counter(g["model"] for g in d.gpus if g.get("model"))
    mixed = f" ({mixed_models(models, len(hosts))})" if len(models) > 1 else ""
    lines = [f"GPUs: {len(d.gpus)} on {len(hosts)} host{'s' if len(hosts) != 1 else ''}{mixed} — "
             + ", ".join(f"{n} {s}" for s, n in counts.most_common())]
    shown = d.gpus if len(d.gpus) <= 16 else [g for g in d.gpus if g["status"] != "ok"][:24]
    width = max((len(g["id"]) for g in shown), default=6)
    for g in shown:
        model = f"{g.get('model', '')}: " if mixed else ""
        lines.append(f"  {g['id']:<{width}}  {_pct(g['mean_util_pct']):>5}  {g['status']:<13} {model}{g['evidence']}")
    if len(d.gpus) > 16:
        hidden = len(d.gpus) - len(shown)
        ok = [g["mean_util_pct"] for g in d.gpus if g["status"] == "ok" and g["mean_util_pct"] is not None]
        if hidden:
            rng = f" (mean utilization {min(ok):.0f}-{max(ok):.0f}%)" if ok else ""
            lines.append(f"  {'all' if not shown else 'the other'} {hidden} GPUs ok{rng}")
    lines.append("")
    return lines


def _oscillation_section(d, osc_obj) -> list[str]:
    o = d.oscillation
    signal = getattr(osc_obj, "signal", "util_pct") if osc_obj is not None else "util_pct"
    what = "utilization" if signal == "util_pct" else signal
    lines = [f"Oscillation ({what})"]
    if osc_obj is None:
        lines += ["  no utilization-like signal in the inputs", ""]
        return lines
    if not o["detected"]:
        lvl = f" (level ≈ {o['high_pct']:.0f}%)" if o.get("high_pct") is not None else ""
        unit = "GPU" if signal == "util_pct" or "SM" in str(signal) else "rank"
        lines += [f"  none: no {unit} swings between a high and a low level{lvl}", ""]
        return lines
    if o["periodic"]:
        lines.append(f"  periodic: {o['high_pct']:.0f}% ↔ {o['low_pct']:.0f}%, period {o['period_s']:.3g} s, "
                     f"duty cycle {o['duty_cycle']:.2f} (share of each period spent high)")
    elif getattr(osc_obj, "few_samples", False):
        duty = f", high in {o['duty_cycle']:.0%} of polls" if o.get("duty_cycle") is not None else ""
        lines.append(f"  swings: {o['high_pct']:.0f}% ↔ {o['low_pct']:.0f}%{duty}; too few polls to tell a period "
                     "from irregular swings")
    else:
        duty = f", high {o['duty_cycle']:.0%} of the time" if o.get("duty_cycle") is not None else ""
        lines.append(f"  irregular swings: {o['high_pct']:.0f}% ↔ {o['low_pct']:.0f}%{duty}; no dominant period")
    n_swing = len(getattr(osc_obj, "swinging", []))
    if o["synchrony"]:
        sizes = ", ".join(str(len(g)) for g in o["groups"][:8])
        lines.append(f"  synchrony: {o['synchrony']} — {n_swing} swinging, groups of {sizes}")
        for a, b in getattr(osc_obj, "antiphase", [])[:2]:
            lines.append(f"  anti-phase: {', '.join(a[:4])}{'…' if len(a) > 4 else ''} vs "
                         f"{', '.join(b[:4])}{'…' if len(b) > 4 else ''}")
    elif n_swing:
        lines.append(f"  swinging: {', '.join(osc_obj.swinging[:8])}{'…' if n_swing > 8 else ''}")
    lines.append("")
    return lines


def _steps_section(s: dict) -> list[str]:
    if not s:
        return []
    unit = s.get("record", "step")  # "epoch" where every row is an epoch (schema.record_unit)
    lines = [f"{unit.capitalize()}s: {s.get('steps', 0)} {unit}s on {s.get('ranks', 0)} rank(s)"
             + (f", median {s['median_step_s']:.3g} s, p90 {s['p90_step_s']:.3g} s, max {s['max_step_s']:.3g} s"
                if s.get("median_step_s") is not None else "")]
    if s.get("phase_share"):
        lines.append("  phases: " + ", ".join(f"{k} {v:.0%}" for k, v in list(s["phase_share"].items())[:8]))
    ps = s.get("periodic_slow")
    if ps:
        per = f" (≈ {ps['period_s']:.3g} s)" if ps.get("period_s") is not None else ""
        every = (f"about every {ps['clock_period_s']:.3g} s of wall time (~{ps['every_n_steps']} steps): "
                 f"{ps['hits']} episodes" if ps.get("clock") else
                 f"every {ps['every_n_steps']} steps{per}: {ps['hits']} of {ps['lattice_steps']}")
        lines.append(f"  slow {every}, +{ps['extra_s']:.3g} s each; events there: {ps.get('events') or 'none logged'}")
    if s.get("gc") and s["gc"].get("coincide"):
        lines.append(f"  GC: {s['gc']['slow_with_gc']} of {s['gc']['slow_steps']} isolated slow steps hold a GC event")
    if s.get("creep") and s["creep"].get("creeping"):
        lines.append(f"  creep: step time {s['creep']['relative_change']:+.0%} over the run")
    if s.get("recompiles"):
        lines.append(f"  recompiles: {s['recompiles']['events']} events at {s['recompiles']['steps']} steps")
    lines.append("")
    return lines


def _ranks_section(ranks: list[dict]) -> list[str]:
    if not ranks:
        return []
    lines = [f"Ranks: {len(ranks)}"]
    flagged = [r for r in ranks if r.get("flagged")]
    slowest = [r for r in ranks if r.get("slowest")]
    for r in flagged[:4]:
        lines.append(f"  rank {r['rank']}: straggler score {r.get('straggler_score')} (< 0.75 flags a straggler)")
    for r in slowest[:1]:
        p = r.get("persistence_p")
        p_text = f", p = {p:.2g}" if isinstance(p, (int, float)) else ""
        lines.append(f"  slowest most often: rank {r['rank']} ({r.get('persistence')}{p_text})")
    lines.append("")
    return lines


def _machine_section(links: dict | None) -> list[str]:
    """Facts about the machine from lspci -vv and nvidia-smi topo -m: PCIe links as stated (degraded first), and
    per matrix the GPU-pair paths and each GPU's NUMA node."""
    from playbook.analysis.links import STATED  # the words of a link lspci states (imported when used)

    stated = [r for r in (links or {}).get("links") or [] if STATED in str(r.get("evidence", ""))]
    topo = (links or {}).get("topology") or []
    if not stated and not topo:
        return []
    lines = ["Machine (lspci -vv, nvidia-smi topo -m: facts at one moment)"]
    for r in sorted(stated, key=lambda r: r["status"] != "degraded")[:8]:
        lines.append(f"  {r['host']} {r['link']}: {r['status']}: {r['evidence'][:200]}")
    for t in topo:
        paths = ", ".join(f"{n} {k}" for k, n in sorted(t["pairs"].items(), key=lambda kv: -kv[1]))
        numa = sorted({str(n) for _, n in t["affinity"].values() if n is not None})
        lines.append(f"  {t['host']}: {t['gpus']} GPUs, GPU pairs by path: {paths}"
                     + (f"; NUMA nodes {', '.join(numa)}" if numa else ""))
    lines.append("")
    return lines
