"""What a Bundle holds, before any analysis: per table its rows, hosts, GPUs, samples per GPU, time span and median
sampling interval (telemetry); ranks, steps, phases and the median step time (steps); event kinds; what text inputs
hold beyond the tables (profiler texts, nccl-tests, structure); machine facts and job figures; every warning.
`summarize` gives it as one JSON-able dict, `render` as text (`playbook info`, and the report's inputs section for
inputs that fill no table)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from playbook.analysis.device_use import notes as device_notes
from playbook.analysis.gpu_sharing import notes as sharing_notes
from playbook.analysis.series import mixed_models
from playbook.core.jsonable import json_float
from playbook.model.schema import GPU_MODELS, GPU_PROCESSES, meta_sections


def has_content(summary: dict) -> bool:
    """Whether `summary` (one input group's) read anything: table rows, summary reports, machine facts, job figures,
    or a profiler table / nccl-tests table in a text log."""
    return bool(any(tb["rows"] for tb in summary["tables"].values()) or summary.get("nsys_reports")
                or summary.get("machine") or summary.get("jobs") or summary.get("limits") or summary.get("sharing")
                or summary.get("devices")
                or any(f.get("profiler") or f.get("nccl_tests") for f in summary["text_lines"].values()))



def _ts(t: pd.Timestamp) -> str | None:
    return None if pd.isna(t) else t.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".") + "Z"


def _span(times: pd.Series) -> dict[str, Any]:
    t = times.dropna()
    if not len(t):
        return {"start": None, "end": None, "span_s": None}
    start, end = t.min(), t.max()
    return {"start": _ts(start), "end": _ts(end), "span_s": json_float((end - start).total_seconds(), 3)}


def summarize(bundle) -> dict[str, Any]:
    """A JSON-able summary of a Bundle: per-table counts, hosts, GPUs, spans, intervals, ranks, steps, warnings."""
    tables: dict[str, dict[str, Any]] = {}
    tel = bundle.telemetry
    info: dict[str, Any] = {"rows": len(tel)}
    if len(tel):
        hosts = sorted(tel["host"].astype(str).unique())
        per_gpu = tel.groupby(["host", "gpu"], sort=True, observed=True).size()
        metrics = [m for m in _metric_names(tel) if tel[m].notna().any()]
        info.update({
            "hosts": hosts,
            "gpus": int(len(per_gpu)),
            "gpus_per_host": {h: int((per_gpu.index.get_level_values(0) == h).sum()) for h in hosts},
            "samples_per_gpu": {"min": int(per_gpu.min()), "median": json_float(per_gpu.median(), 1),
                                "max": int(per_gpu.max())},
            **_span(tel["time"]),
            "median_interval_s": json_float(tel.attrs.get("interval_s"), 4),
            "metrics": metrics,
            "mean": {m: json_float(tel[m].mean(), 3) for m in metrics if m in ("util_pct", "sm_active", "power_w")},
            "by_source": _by_source(tel),
            "models": dict(Counter((bundle.meta.get(GPU_MODELS) or {}).values())),
            "shared": {g: p for g, p in (bundle.meta.get(GPU_PROCESSES) or {}).items() if len(p) > 1},
        })
    tables["telemetry"] = info
    steps = bundle.steps
    info = {"rows": len(steps)}
    if len(steps):
        whole = steps[steps["phase"] == "step"]
        info.update({
            "hosts": sorted(steps["host"].astype(str).unique()),
            "ranks": sorted(int(r) for r in steps["rank"].unique()),
            "steps": int(steps["step"].nunique()),
            "step_range": [int(steps["step"].min()), int(steps["step"].max())],
            "phases": sorted(steps["phase"].astype(str).unique()),
            "median_step_s": json_float(whole["duration_s"].median(), 4) if len(whole) else None,
            **_span(steps["time"]),
        })
    tables["steps"] = info
    ev = bundle.events
    info = {"rows": len(ev)}
    if len(ev):
        info.update({"kinds": {str(k): int(v) for k, v in ev["kind"].astype(str).value_counts().items()},
                     "hosts": sorted(ev["host"].astype(str).unique()), **_span(ev["time"])})
    tables["events"] = info
    host = bundle.host
    info = {"rows": len(host)}
    if len(host):
        means = {c: m for c in host.columns
                 if c not in ("time", "host", "source") and (m := json_float(host[c].mean(), 3)) is not None}
        info.update({"hosts": sorted(host["host"].astype(str).unique()), "means": means, **_span(host["time"])})
    tables["host"] = info
    trace = bundle.trace
    info = {"rows": len(trace)}
    if len(trace):
        info.update({"ranks": sorted(int(r) for r in trace["rank"].unique()),
                     "categories": {str(k): int(v) for k, v in trace["cat"].astype(str).value_counts().head(8).items()}})
    tables["trace"] = info
    nccl = bundle.nccl
    info = {"rows": len(nccl)}
    if len(nccl):
        for col in ("host", "rank"):
            if col in nccl:
                info[col + "s"] = sorted(map(str, nccl[col].dropna().astype(str).unique()))[:32]
    tables["nccl"] = info
    from playbook.readers import nsys

    # nsys stats summary reports (totals per kernel, call, copy) live in the bundle's meta, one per file
    summaries = {name: len(frame) for name, frame in nsys.reports(bundle).items()}
    tools = sorted({v.get("tool") or "nsys" for _, v in meta_sections(bundle.meta, nsys.META_PREFIX)})
    return {"inputs": list(bundle.inputs), "tables": tables, "warnings": list(bundle.warnings),
            "text_lines": text_lines(bundle), "nsys_reports": summaries, "profile_tools": tools,
            "machine": _machine(bundle), "jobs": _jobs(bundle), "limits": _limits(bundle),
            "sharing": sharing_notes(bundle), "devices": device_notes(bundle)}


def _jobs(bundle) -> list[str]:
    """A Slurm job's usage figures (readers/slurm_usage.py), one line per job step."""
    from playbook.analysis.job_usage import jobs_of

    out = []
    for j in jobs_of(bundle):
        what = [f"{j['stat']} GPU utilization {j['util_pct']:g}%"
                if j.get("util_pct") is not None else "",
                f"{j.get('mem_stat') or j['stat']} GPU memory {j['mem_mib'] / 1024:.1f} GiB"
                if j.get("mem_mib") is not None else "",
                f"{j['gpus']} x {j['model'] or 'GPU'}" if j.get("gpus") else (j.get("model") or ""),
                f"wall {_seconds(j['elapsed_s'])}" if j.get("elapsed_s") else ""]
        out.append(f"{j.get('job') or j['source']}: " + ", ".join(w for w in what if w))
    from playbook.readers.slurm_usage import META_PREFIX

    # a job report that measured nothing (readers/job_reports): said as it is
    return out + [e for _, v in meta_sections(bundle.meta, META_PREFIX) for e in v.get("empty") or []]


def _limits(bundle) -> list[str]:
    """A container's limits (readers/container_limits.py): one line per cgroup's CPU-quota counters, per /dev/shm."""
    from playbook.readers.container_limits import META_PREFIX

    out = []
    for _, section in meta_sections(bundle.meta, META_PREFIX):
        for g in section.get("cgroups") or []:
            share = g["throttled"] / g["periods"] if g.get("periods") else 0.0
            version = f"v{g['version']}" if isinstance(g["version"], int) else str(g["version"])
            out.append(f"{g['name']}: cgroup {version}, throttled {g['throttled']:,} of {g['periods']:,} CFS "
                       f"periods ({share:.0%})" + (f", {_seconds(g['throttled_s'])} stopped"
                                                   if g.get("throttled_s") is not None else "")
                       + (f", {_seconds(g['usage_s'])} CPU used" if g.get("usage_s") is not None else ""))
        for m in section.get("shm") or []:
            out.append(f"/dev/shm ({m['filesystem']}): {m['size_mib']:.4g} MiB, {m['used_mib']:.4g} MiB used")
    return out


def _machine(bundle) -> list[dict[str, Any]]:
    """Per machine-facts file (lspci -vv, nvidia-smi topo -m, -q Link Info): its format, GPUs, GPU pairs by path
    and the links it states degraded."""
    from playbook.analysis import topology

    out = []
    for path, sec in topology.sections(bundle.meta):
        gpus = sec.get("gpus") or {}
        links = [*gpus.values(), *(sec.get("devices") or [])]
        pairs: dict[str, int] = {}
        for kind in (sec.get("pairs") or {}).values():
            pairs[kind] = pairs.get(kind, 0) + 1
        out.append({"file": path, "format": sec.get("format"), "gpus": int(sec.get("gpu_count") or len(gpus)),
                    "pairs": pairs, "degraded": sum(bool(x.get("downgraded")) for x in links)})
    return out


# --------------------------------------------------------------------------------------------------------------
# Text logs read line by line (readers/lines.py): what each scanner understood, what was left

def text_lines(bundle) -> dict[str, Any]:
    """Per text file: lines, lines understood per scanner, lines skipped by class, unread lines with examples."""
    return {src: dict(info) for src, info in (bundle.meta.get("lines") or {}).items()}


def render_text_lines(per_file: dict[str, Any]) -> list[str]:
    """One block per text file: 'understood: steps 4, nccl 5; skipped: code 8; unread 1 (e.g. line 30: ...)'."""
    out = []
    for src, info in per_file.items():
        understood = ", ".join(f"{k} {v:,}" for k, v in info.get("understood", {}).items()) or "nothing"
        skipped = ", ".join(f"{k} {v:,}" for k, v in info.get("skipped", {}).items())
        line = f"  {src}: {info.get('lines', 0):,} lines; understood: {understood}"
        if skipped:
            line += f"; skipped: {skipped}"
        out.append(line)
        if info.get("step_field"):
            out.append(f"    step time from {info['step_field']}")
        out += _structure_lines(info)
        if info.get("unread"):
            examples = "; ".join(info.get("unread_examples", [])[:3])
            out.append(f"    left unread: {info['unread']:,} line{'s' * (info['unread'] != 1)} (e.g. {examples})")
    return out


def _structure_lines(info: dict[str, Any]) -> list[str]:
    """A text log's structure as read (readers/lines.structure): ranks and where they came from, phases, sections,
    events, the prefixes read, the ERROR/WARNING lines left unexplained."""
    out = []
    if info.get("ranks"):
        ranks = _ranks(info["ranks"])
        source = f" (from {info['rank_from']})" if info.get("rank_from") else ""
        phases = ", ".join(info.get("phases") or []) or "none"
        out.append(f"    ranks {ranks}{source}; phases {phases}")
    sections = info.get("sections") or {}
    if sections:
        out.append("    sections: " + ", ".join(
            f"{k} {v['count']}" + (f" ({_seconds(v['seconds'])} in all)" if v.get("seconds") is not None else "")
            for k, v in sections.items()))
    if info.get("events"):
        out.append("    events: " + ", ".join(f"{k} {v}" for k, v in info["events"].items()))
    if info.get("prefixes"):
        out.append("    prefixes read: " + ", ".join(f"{k} {v:,}" for k, v in info["prefixes"].items()))
    p = info.get("profiler") or {}
    if p.get("totals_only"):
        out.append(f"    torch.profiler totals without their table: self CPU {_seconds(p['self_cpu_total_s'])}, "
                   f"self device {_seconds(p['self_device_total_s'])}")
    if p.get("ops"):
        top = ", ".join(f"{name} {_seconds(sec)}" for name, sec in p["top"][:3])
        device = f", self device {_seconds(p['self_device_total_s'])}" if p.get("self_device_total_s") else ""
        loader = (f"; data loader {p['loader_share']:.0%} of self CPU (its CPU total: the loading it runs "
                  "included)") if p.get("loader_share") else ""
        out.append(f"    torch.profiler table{'s' * (p['tables'] != 1)}: {p['ops']:,} ops, self CPU "
                   f"{_seconds(p['self_cpu_total_s'])}{device}; top by {p['top_by'].removesuffix('_s').replace('_', ' ')}: "
                   f"{top or 'none'}; {p['kernel_launches']:,} kernel launches{loader}")
    if p.get("fit_epoch_s") is not None:
        epochs = f"training epochs {_seconds(p['fit_epoch_s'])}" if p["fit_epoch_s"] else "no epoch time stated"
        out.append(f"    Lightning profiler report: {epochs}, waits for the next batch "
                   f"{_seconds(p.get('fit_loader_s') or 0.0)}")
    for sec in (p.get("pstats") or {}).get("sections", [])[:3]:
        total = f"{_seconds(sec['total_s'])} stated" if sec.get("total_s") is not None else "no total stated"
        top = ", ".join(f"{name} {_seconds(t)}" for name, t in sec["top"])
        out.append(f"    cProfile listing{' (action ' + sec['action'] + ')' if sec.get('action') else ''}: "
                   f"{sec['functions']:,} functions, {total}; top by own time: {top or 'none'}")
    out.extend(f"    {line}" for line in _other_profilers(p))
    if sr := info.get("straggler_reports"):  # readers/rank_reports.StragglerReports
        figs = [f"{name} {f['min']:g}-{f['max']:g}{f.get('unit') or ''} (ranks {f['min_rank']}, {f['max_rank']})"
                for name, f in sr.items() if isinstance(f, dict) and "min" in f and "max" in f]
        out.append(f"    Megatron straggler reports: {sr['reports']:,}; least-most across ranks: {', '.join(figs[:8])}")
    if st := info.get("stated"):  # readers/step_log/columns.stated_efficiency
        said = [f"{st['tflops']:.4g} TFLOP/s per device" if st.get("tflops") is not None else "",
                f"MFU {st['mfu']:.2%}" if st.get("mfu") is not None else ""]
        out.append(f"    efficiency stated: {', '.join(x for x in said if x)} (median of {st.get('rows', 0)} rows; "
                   f"{', '.join(st.get('fields') or [])})")
    if info.get("nccl_tests"):
        from playbook.readers.nccl_tests import describe

        out.append(f"    {describe(info['nccl_tests'])}")
    if info.get("serving"):  # readers/serving_metrics.describe
        out.append(f"    {info['serving']}")
    if info.get("devices"):  # readers/device_lines.describe
        out.append(f"    {info['devices']}")
    if info.get("loud_unread"):
        out.append(f"    ERROR/WARNING lines not understood: {info['loud_unread']:,}")
    return out


def _other_profilers(p: dict) -> list[str]:
    """One line per host-side profiler text and tfprof table a log holds (readers/stack_samples.py,
    line_profile.py, tfprof_text.py), and one for the input-pipeline tools' statements (input_pipeline_text.py)."""
    out = []
    if st := p.get("stacks"):
        out.append(f"folded stacks: {st['stacks']:,} stacks, {st['samples']:,.0f} samples; DataLoader "
                   f"{st['loader']:,.0f}, device syncs {st['sync']:,.0f}, collectives {st['collective']:,.0f}")
    if d := p.get("dump"):
        kinds = [m["kind"] or f"elsewhere ({m['top']})" for m in d["main"]]
        where = ", ".join(f"{k} {kinds.count(k)}" for k in dict.fromkeys(kinds)) or "no main thread"
        out.append(f"py-spy dump: {d['threads']:,} thread{'s' * (d['threads'] != 1)}; main threads in: {where}")
    for f in (p.get("line_profile") or [])[:3]:
        total = f"{_seconds(f['total_s'])} stated" if f.get("total_s") else "no total stated"
        out.append(f"line_profiler listing: {f['rows']:,} rows holding {f['shown_pct']:.1f}% of the function, "
                   f"{total}; loader lines {f['loader_pct']:.1f}%, sync lines {f['sync_pct']:.1f}%")
    if tf := p.get("tfprof"):
        top = ", ".join(f"{name} {_seconds(sec)}" for name, sec in tf["top"])
        out.append(f"tfprof op table: {tf['ops']:,} ops; top by accelerator time: {top or 'none'}")
    if ip := p.get("input_pipeline"):  # readers/input_pipeline_text.py
        said = [f"TensorFlow Profiler {v['level']} input-bound ({v['input_share']:.1%} waiting for input)"
                for v in ip.get("tf") or []][:3]
        said += [f"DataLoader warning: {w['workers']} workers, "
                 + (f"{w['suggested']} suggested" if w["suggested"] is not None else "no suggestion")
                 for w in ip.get("torch_workers") or []][:2]
        said += [f"Lightning warning: {w['loader']} has few workers" for w in ip.get("lightning") or []][:2]
        said += [f"Ray Data iterator: {_seconds(it['overall_s'])} overall, blocked "
                 f"{_seconds(it.get('blocked_s') or 0.0)}, user thread {_seconds(it.get('user_s') or 0.0)}"
                 for it in ip.get("ray_iterators") or []][:2]
        if qs := ip.get("queue_depths"):
            said.append(f"input queue depth ({qs[0]['key']}): {sum(q['depth'] < 0.5 for q in qs)} of {len(qs)} "
                        "record(s) empty")
        if ws := ip.get("queue_waits"):
            said.append(f"empty-queue warnings: {len(ws)}")
        if snaps := ip.get("ray_progress"):
            gpus = [s for s in snaps if s.get("gpu_limit")]
            said.append(f"Ray Data progress: {len(snaps)} snapshot(s)" + (
                f", GPUs running {gpus[-1]['gpu_used']:g}/{gpus[-1]['gpu_limit']:g} at the last" if gpus else ""))
        out.append("input-pipeline statements: " + "; ".join(said))
    return out


def _by_source(tel: pd.DataFrame) -> list[dict[str, Any]]:
    """Per input file: hosts, GPUs, samples, span and interval (inputs from different runs differ a lot)."""
    from playbook.model.schema import median_interval_s

    out = []
    for src, part in tel.groupby(tel["source"].astype(str), sort=True):
        span, interval = _span(part["time"]), median_interval_s(part)
        out.append({"source": src, "hosts": sorted(part["host"].astype(str).unique()),
                    "gpus": int(part.groupby(["host", "gpu"], observed=True).ngroups), "samples": len(part),
                    **span, "median_interval_s": json_float(interval, 4),
                    "synthetic_clock": bool(part["time"].max() < pd.Timestamp("1971-01-01", tz="UTC")),
                    "gaps": _gaps(part, interval)})
    return out


def _gaps(part: pd.DataFrame, interval_s: float, keep: int = 5) -> list[dict[str, Any]]:
    """The source's stretches with no sample at all (analysis.intervals.telemetry_gaps), longest first."""
    from playbook.analysis.intervals import telemetry_gaps

    start, end = next(iter(telemetry_gaps(part, interval_s).values()), ((), ()))
    order = np.argsort(np.subtract(start, end), kind="stable")[:keep]
    return [{"start": _ts(pd.Timestamp(int(start[i]), tz="UTC")), "end": _ts(pd.Timestamp(int(end[i]), tz="UTC")),
             "seconds": json_float((end[i] - start[i]) / 1e9, 3)} for i in order]


def _gap_words(gaps: list[dict[str, Any]]) -> str:
    """"; no sample at all for 6.0 h from 2026-11-01T10:09:59Z (1 gap)", or "" without gaps."""
    if not gaps:
        return ""
    g = gaps[0]
    more = f", longest of {len(gaps)}{'+' if len(gaps) >= 5 else ''} gaps" if len(gaps) > 1 else ""
    return f"; no sample at all for {_seconds(g['seconds'])} from {g['start']}{more}"


def _metric_names(tel: pd.DataFrame) -> list[str]:
    from playbook.model.schema import TELEMETRY_METRICS

    return [m for m in TELEMETRY_METRICS if m in tel]


def _seconds(s: float | None) -> str:
    if s is None:
        return "?"
    if s >= 86400:
        return f"{s / 86400:.1f} d"
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.1f} min"
    if s >= 1:
        return f"{s:.3g} s"
    return f"{s * 1e3:.3g} ms"


def _names(items: list, limit: int = 6) -> str:
    shown = ", ".join(map(str, items[:limit]))
    return shown + (f", ... (+{len(items) - limit})" if len(items) > limit else "")


def _ranks(ranks: list[int]) -> str:
    if not ranks:
        return "none"
    arr = np.asarray(ranks)
    if len(arr) > 3 and np.all(np.diff(arr) == 1):
        return f"{arr[0]}-{arr[-1]}"
    return _names([("unknown" if r < 0 else r) for r in ranks], 10)


def render(summary: dict[str, Any]) -> str:
    """The summary as readable text, one block per non-empty table, then the warnings."""
    out: list[str] = []
    inputs = summary["inputs"]
    out.append(f"inputs ({len(inputs)}): {_names(inputs, 4)}")
    t = summary["tables"]
    tel = t["telemetry"]
    if tel["rows"]:
        hosts = tel["hosts"]
        per_host = ", ".join(f"{h}: {n}" for h, n in list(tel["gpus_per_host"].items())[:6])
        spg = tel["samples_per_gpu"]
        samples = (f"{spg['min']}" if spg["min"] == spg["max"] else f"{spg['min']}-{spg['max']} (median {spg['median']:g})")
        out.append(f"telemetry  {tel['rows']:,} rows; {len(hosts)} host{'s' * (len(hosts) != 1)} ({per_host} GPUs); "
                   f"{tel['gpus']} GPU{'s' * (tel['gpus'] != 1)}; {samples} samples per GPU")
        if len(tel.get("models") or {}) > 1:  # which parts, where the input names them
            out.append(f"           {mixed_models(tel['models'], len(hosts))}")
        for gpu, pids in list((tel.get("shared") or {}).items())[:8]:  # nvidia-smi pmon: processes per GPU
            if not any(line.startswith(f"{gpu} is held by") for line in summary.get("sharing") or []):
                out.append(f"           {gpu} is shared by {len(pids)} processes (pids {', '.join(pids[:6])}"
                           f"{' …' if len(pids) > 6 else ''}): its utilization is their sum")
        means = "; ".join(f"mean {k} {v:g}" for k, v in tel["mean"].items() if v is not None)
        out.append(f"           metrics: {', '.join(tel['metrics']) or 'none'}" + (f" ({means})" if means else ""))
        sources = tel["by_source"]
        if len(sources) == 1:
            out.append(f"           span {_seconds(tel['span_s'])} ({tel['start']} .. {tel['end']}); "
                       f"median interval {_seconds(tel['median_interval_s'])}"
                       + (" (synthetic clock)" if sources[0]["synthetic_clock"] else "") + _gap_words(sources[0]["gaps"]))
        else:
            for src in sources[:12]:
                out.append(f"  {src['source']}: {_names(src['hosts'], 3)}; {src['gpus']} GPUs; {src['samples']:,} "
                           f"samples; span {_seconds(src['span_s'])} from {src['start']}; interval "
                           f"{_seconds(src['median_interval_s'])}" + (" (synthetic clock)" if src["synthetic_clock"]
                                                                     else "") + _gap_words(src["gaps"]))
            if len(sources) > 12:
                out.append(f"  ... and {len(sources) - 12} more inputs")
    st = t["steps"]
    if st["rows"]:
        out.append(f"steps      {st['rows']:,} rows; ranks {_ranks(st['ranks'])}; {st['steps']:,} steps "
                   f"({st['step_range'][0]}..{st['step_range'][1]}); phases {', '.join(st['phases'])}; "
                   f"median step {_seconds(st['median_step_s'])}")
        if st.get("span_s") is not None:
            out.append(f"           span {_seconds(st['span_s'])} ({st['start']} .. {st['end']})")
    ev = t["events"]
    if ev["rows"]:
        kinds = ", ".join(f"{k} {v}" for k, v in ev["kinds"].items())
        out.append(f"events     {ev['rows']:,} rows: {kinds}")
    for name in ("host", "trace", "nccl"):
        tb = t[name]
        if tb["rows"]:
            extra = ""
            if name == "host":
                extra = f"; hosts {_names(tb['hosts'])}; span {_seconds(tb.get('span_s'))}"
            elif name == "trace":
                extra = f"; ranks {_ranks(tb['ranks'])}; " + ", ".join(f"{k} {v}" for k, v in tb["categories"].items())
            elif name == "nccl" and tb.get("hosts"):
                extra = f"; hosts {_names(tb['hosts'])}"
            out.append(f"{name:<10s} {tb['rows']:,} rows{extra}")
            if name == "host" and tb.get("means"):  # what the host files held: a misread unit shows here
                out.append("           means: " + ", ".join(f"{k} {v:g}" for k, v in tb["means"].items()))
    reports = summary.get("nsys_reports") or {}
    if reports:
        tool = "/".join(summary.get("profile_tools") or ["nsys"])  # rocprof's summaries too: named by their tool
        out.append(f"{tool:<10s} {len(reports)} summary report{'s' if len(reports) != 1 else ''}: "
                   + ", ".join(f"{k} {v} rows" for k, v in reports.items()))
    for line in summary.get("jobs") or []:
        out.append(f"job        {line}")
    for line in summary.get("limits") or []:
        out.append(f"limits     {line}")
    for line in (summary.get("sharing") or [])[:12]:  # who holds each GPU: processes, MIG slices, compute mode
        out.append(f"sharing    {line}")
    for line in (summary.get("devices") or [])[:12]:  # what the inputs say of the devices the job uses
        out.append(f"devices    {line}")
    for m in summary.get("machine") or []:
        pairs = ", ".join(f"{n} {k}" for k, n in sorted(m["pairs"].items(), key=lambda kv: -kv[1]))
        out.append(f"machine    {m['format']} ({m['file']}): {m['gpus']} GPUs"
                   + (f"; GPU pairs {pairs}" if pairs else "") + (f"; {m['degraded']} link(s) downgraded"
                                                                   if m["degraded"] else ""))
    if not has_content(summary):
        out.append("no rows read")
    if summary.get("text_lines"):
        out.append("text logs, line by line:")
        out += render_text_lines(summary["text_lines"])
    warnings = summary["warnings"]
    if warnings:
        out.append(f"warnings ({len(warnings)}):")
        out += [f"  - {w}" for w in warnings]
    else:
        out.append("warnings: none")
    return "\n".join(out)
