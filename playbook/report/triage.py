"""What the triage notebook shows from a diagnosis, as plain functions (the notebook stays thin): the tables, the
key figures, the period views, the lab pointer and the onboarding verdict. The triage verdict rule itself is in
playbook.report.verdict_rule (shared with the headline)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.analysis import inventory
from playbook.knowledge import ids as cause_ids
from playbook.model import schema
from playbook.report.catalog import TRIAGE
from playbook.report.scrapbook import count, md_inline
from playbook.report.verdict_rule import AMBIGUITY_MARGIN, CONFIRM_SCORE, ranked_causes, top_hypothesis


def as_dict(diagnosis: Any) -> dict[str, Any]:
    """The diagnosis as the diagnose JSON object, from a result with .to_json() (dict or text) or a dict."""
    if hasattr(diagnosis, "to_dict"):
        return diagnosis.to_dict()
    value = diagnosis.to_json() if hasattr(diagnosis, "to_json") else diagnosis
    return json.loads(value) if isinstance(value, str) else dict(value)


def timeline_frame(bundle: Any) -> tuple[pd.DataFrame, str]:
    """(frame, metric) to draw per-GPU timelines from: the telemetry's utilization.gpu when the inputs have GPU
    counters, else each rank's busy share from its step phases (analysis.step_times.busy_timeline, in %, one row per
    time bin, rank in the `gpu` column) — the utilization-like signal of a CPU run or of step logs alone."""
    tel = bundle.telemetry
    if len(tel) and tel["util_pct"].notna().any():
        return tel, "util_pct"
    from playbook.analysis.step_times import busy_timeline

    busy = busy_timeline(bundle.steps) if len(bundle.steps) else pd.DataFrame()
    if busy.empty:
        return tel, "util_pct"
    frame = pd.DataFrame({"time": busy["time"], "host": busy["host"].astype(str),
                          "gpu": busy["rank"].astype("int64"), "busy_pct": 100.0 * busy["busy_frac"]})
    times = frame["time"].drop_duplicates().sort_values()
    frame.attrs["interval_s"] = float(times.diff().dt.total_seconds().median()) if len(times) > 1 else float("nan")
    return frame, "busy_pct"


def key_figures(diagnosis: dict[str, Any]) -> dict[str, Any]:
    """The figures a report shows for a diagnosis: GPUs seen and their statuses, the oscillation's shape, the top
    hypothesis and its score."""
    gpus = diagnosis.get("gpus") or []
    osc = diagnosis.get("oscillation") or {}
    top = top_hypothesis(diagnosis) or {}
    statuses = pd.Series([g.get("status") for g in gpus], dtype="object").value_counts().to_dict()
    utils = [g["mean_util_pct"] for g in gpus if g.get("mean_util_pct") is not None]
    return {
        "gpus": len(gpus),
        "gpus_not_ok": int(sum(n for s, n in statuses.items() if s != "ok")),
        "mean_util_pct": round(float(sum(utils) / len(utils)), 1) if utils else None,
        "oscillation": bool(osc.get("detected")),
        "period_s": osc.get("period_s"),
        "duty_cycle": osc.get("duty_cycle"),
        "synchrony": osc.get("synchrony"),
        "top_hypothesis": top.get("id"),
        "top_score": top.get("score"),
        "warnings": len(diagnosis.get("warnings") or []),
    }


def folded(frame: pd.DataFrame, metric: str, period_s: float | None,
           gpus: list[str] | None = None) -> pd.DataFrame:
    """`metric` of `gpus` (default all) folded on the diagnosis's period (analysis.oscillation.fleet.fold_cycle);
    empty without a period."""
    from playbook.analysis.oscillation.fleet import fold_cycle

    if not period_s or len(frame) == 0:
        return pd.DataFrame(columns=["phase", "time_in_cycle_s", "median", "q25", "q75", "n"])
    return fold_cycle(frame, float(period_s), column=metric, gpus=gpus)


def swing_gpus(diagnosis: dict[str, Any]) -> tuple[list[str] | None, str]:
    """(GPU ids, description) of the GPUs that swing: the oscillation's groups when they are a strict subset of
    the GPUs, else None (= all) — the spectrum and the folded cycle are drawn over these, so one GPU's swing is
    not averaged away by 63 steady peers."""
    osc = diagnosis.get("oscillation") or {}
    members = sorted({str(g) for group in osc.get("groups") or [] for g in group})
    n = len(diagnosis.get("gpus") or [])
    if not members or len(members) >= n:
        return None, f"all {n} GPUs" if n else "all GPUs"
    names = ", ".join(members[:4]) + (f" and {len(members) - 4} more" if len(members) > 4 else "")
    if len(members) == 1:
        return members, f"the GPU that swings ({names})"
    return members, f"the {len(members)} GPUs that swing ({names})"


def status_map(diagnosis: dict[str, Any]) -> dict[str, str]:
    """"host:index" -> status, for the heatmap's row order."""
    return {str(g.get("id")): str(g.get("status")) for g in diagnosis.get("gpus") or [] if g.get("id")}


_WARNING_KINDS = {  # whose warnings: the words before the count, and what they are
    "reader": ("reader warning", "expected for inputs without headers or timestamps; each names its file and line"),
    "analysis": ("analysis note", "what an analysis could not do with these inputs, or assumed"),
}


def warnings_html(warnings: list[str], limit: int = 12, kind: str = "reader") -> str:
    """Reader (or, `kind` "analysis", the diagnosis's) warnings as an escaped HTML list: identical messages counted
    once, at most `limit` shown."""
    from collections import Counter

    noun, what = _WARNING_KINDS[kind]
    if not warnings:
        return f"<p><em>No {noun}s.</em></p>"
    counts = Counter(str(w) for w in warnings)
    items = [f"<li>{html.escape(w)}{f' <small>(×{n})</small>' if n > 1 else ''}</li>"
             for w, n in counts.most_common(limit)]
    more = len(counts) - limit
    tail = f"<li><em>and {more} more kinds</em></li>" if more > 0 else ""
    return (f'<p>{len(warnings)} {noun}{"s" if len(warnings) > 1 else ""} ({what}):</p><ul style="text-align:left">'
            + "".join(items) + tail + "</ul>")


def show_analysis_notes(report: dict[str, Any], bundle: Any = None) -> None:
    """The diagnosis's own warnings (an analysis skipped, one GPU with no peers to compare), escaped; those the
    readers already gave (shown with the inputs) left out."""
    from IPython.display import HTML, display

    read = set(map(str, getattr(bundle, "warnings", None) or []))
    display(HTML(warnings_html([w for w in report.get("warnings") or [] if str(w) not in read], kind="analysis")))


def inputs_table(bundle: Any) -> pd.DataFrame:
    """What was read: rows per non-empty table, with the GPUs and hosts the telemetry and host tables cover."""
    rows = {name: len(getattr(bundle, name)) for name in bundle.TABLES if len(getattr(bundle, name))}
    frame = pd.DataFrame({"table": list(rows), "rows": list(rows.values())})
    for name in ("telemetry", "host"):
        tab = getattr(bundle, name)
        if not len(tab):
            continue
        span = (tab["time"].max() - tab["time"].min()).total_seconds() if tab["time"].notna().any() else None
        what = f"{count(tab.groupby(['host', 'gpu']).ngroups, 'GPU')} on " if name == "telemetry" else ""
        frame.loc[frame["table"] == name, "covers"] = (f"{what}{count(tab['host'].nunique(), 'host')}"
                                                       + (f", {span / 60:.1f} min" if span else ""))
    return frame.fillna("")


def left_table(frame: pd.DataFrame, formats: dict[str, str] | None = None):
    """A Styler with text left-aligned and wrapping, no index, and `formats` (column -> format) applied; values
    escaped, lists and dicts as text, `code` spans rendered (tables.readable)."""
    from playbook.report.tables import readable

    return readable(frame, formats, index=False)


def hypotheses_table(diagnosis: dict[str, Any]) -> pd.DataFrame:
    """Ranked hypotheses, one row each: id, score (0-1), evidence (joined), next_step, fix, notebook."""
    rows = [{"id": h.get("id"), "score": h.get("score"), "evidence": "; ".join(h.get("evidence") or []),
             "next_step": h.get("next_step"), "fix": h.get("fix"), "notebook": h.get("notebook")}
            for h in diagnosis.get("hypotheses") or []]
    frame = pd.DataFrame(rows, columns=["id", "score", "evidence", "next_step", "fix", "notebook"])
    return frame.sort_values("score", ascending=False, kind="stable").reset_index(drop=True)


def gpu_table(diagnosis: dict[str, Any]) -> pd.DataFrame:
    """The GPUs that are not ok first, then the rest: id, mean_util_pct, status, evidence."""
    frame = pd.DataFrame(diagnosis.get("gpus") or [],
                         columns=["id", "host", "index", "mean_util_pct", "status", "evidence"])
    frame["_ok"] = frame["status"].eq("ok")
    return frame.sort_values(["_ok", "id"], kind="stable").drop(columns="_ok").reset_index(drop=True)


def lab_pointer(diagnosis: dict[str, Any], notebooks_dir: str | Path | None = None) -> str:
    """Markdown naming the lab notebook for the top hypothesis (a link relative to `notebooks_dir`, default the
    repository's notebooks/ as catalog.repo_root finds it from the kernel's folder, when the notebook is there)."""
    if notebooks_dir is None:
        from playbook.report.catalog import repo_root

        notebooks_dir = repo_root() / "notebooks"
    top = top_hypothesis(diagnosis)
    if top is None:
        return "No hypothesis to follow up yet: record more of the run (see `playbook record --help`)."
    if top["id"] == cause_ids.HEALTHY:
        return "The run looks healthy: no lab to follow. `notebooks/00_onboarding.ipynb` shows what to watch."
    text = _lab_line(top, Path(notebooks_dir))
    causes = ranked_causes(diagnosis)
    if len(causes) > 1 and (top.get("score") or 0) - (causes[1].get("score") or 0) < AMBIGUITY_MARGIN:
        text += "  \nClose behind: " + _lab_line(causes[1], Path(notebooks_dir))
    return text


def _lab_line(hyp: dict[str, Any], notebooks_dir: Path) -> str:
    notebook = hyp.get("notebook")
    if notebook and Path(notebook).stem == TRIAGE:  # a verdict cause (healthy, insufficient data): this page
        return f"`{hyp['id']}` has no lab; next step: {md_inline(hyp.get('next_step') or 'n/a')}."
    if not notebook:
        return f"No lab notebook covers `{hyp['id']}` yet; next step: {md_inline(hyp.get('next_step') or 'n/a')}."
    name = Path(notebook).name
    link = f"[{name}]({name})" if (notebooks_dir / name).is_file() else f"`{notebook}` (not in {notebooks_dir})"
    return (f"**Next: the lab for `{hyp['id']}`** — {link}. It reproduces this failure on a small real training "
            f"loop, measures it, and applies the fix. Confirm here first: {md_inline(hyp.get('next_step') or 'n/a')}")


DATA_STALL_CAUSES = (cause_ids.DATA_STARVATION, cause_ids.PERIODIC_STALL)
PERIOD_TOLERANCE = 0.10


def onboarding_verdict(synthetic: dict[str, Any], truth: Any, real: dict[str, Any],
                       fix: Any) -> tuple[str, str, dict[str, Any]]:
    """The onboarding notebook's verdict: does the diagnosis recover known causes, and does the fix help?

    synthetic / real: diagnosis dicts of the simulated run (answers in `truth`, a simulate.Truth) and of the real
    lab recording with a data-stall fault; `fix`: the fix's row of analysis.lab_verdict.variant_summary with the
    fault as baseline (ratio, ratio_lo, ratio_hi: throughput ÷ the fault's, 95% interval).
    Confirmed when the synthetic answer is recovered (top hypothesis, period within PERIOD_TOLERANCE, synchrony),
    the real fault's top hypothesis is a data-stall cause scoring at least CONFIRM_SCORE, and the fix is faster
    beyond run-to-run noise (ratio_lo > 1); refuted when the synthetic answer is missed; inconclusive otherwise.
    """
    osc = synthetic.get("oscillation") or {}
    syn_top, real_top = top_hypothesis(synthetic) or {}, top_hypothesis(real) or {}
    period = osc.get("period_s")
    period_ok = bool(period and truth.period_s and abs(period - truth.period_s) <= PERIOD_TOLERANCE * truth.period_s)
    synthetic_ok = syn_top.get("id") == truth.hypothesis and period_ok and osc.get("synchrony") == truth.synchrony
    real_ok = real_top.get("id") in DATA_STALL_CAUSES and float(real_top.get("score") or 0) >= CONFIRM_SCORE
    speedup, lo, hi = (float(fix[k]) for k in ("ratio", "ratio_lo", "ratio_hi"))
    figures = {
        "synthetic_top": syn_top.get("id"), "synthetic_truth": truth.hypothesis,
        "synthetic_period_s": period, "truth_period_s": truth.period_s,
        "real_top": real_top.get("id"), "real_top_score": real_top.get("score"),
        "fix_speedup": speedup, "fix_speedup_lo": lo, "fix_speedup_hi": hi,
    }
    found = (f"synthetic: {syn_top.get('id')} every {period} s (truth {truth.hypothesis}, {truth.period_s:g} s); "
             f"real: {real_top.get('id')} ({float(real_top.get('score') or 0):.2f}); the fix runs "
             f"{speedup:.2f}x the fault's throughput (95% interval {lo:.2f}-{hi:.2f})")
    if not synthetic_ok:
        return "refuted", "the diagnosis missed the synthetic run's known cause — " + found, figures
    if real_ok and lo > 1.0:
        return "confirmed", "known causes recovered and fixed — " + found, figures
    return "inconclusive", "synthetic answer recovered, the real recording less clearly — " + found, figures


def resolve_inputs(inputs: list[str] | str, root: str | Path | None = None) -> list[str]:
    """Input paths (a list, or one path as papermill's `-p inputs PATH` gives it) as the notebook documents them:
    relative to the repository root, wherever the kernel started
    (JupyterLab starts it in notebooks/, papermill at the root); a relative path that only exists from the
    current folder is kept as it is. `root`: default catalog.repo_root() from the kernel's folder."""
    from playbook.report.catalog import repo_root

    root = Path(root) if root is not None else repo_root()
    if isinstance(inputs, (str, Path)):  # papermill -p inputs PATH passes one string: one input, not its letters
        inputs = [inputs]
    out = []
    for p in inputs:
        path = Path(p).expanduser()
        if not path.is_absolute() and (root / path).exists():
            path = root / path
        out.append(str(path))
    return out


def has_samples(frame: pd.DataFrame, metric: str) -> bool:
    """True when `frame` holds at least one value of `metric` (GPU telemetry or a busy timeline)."""
    return bool(len(frame)) and metric in frame and bool(frame[metric].notna().any())


def show_headline(report: dict[str, Any], frame: pd.DataFrame, metric: str, max_bins: int = 400,
                  bundle: Any = None) -> dict:
    """Display the verdict card (verdict, confidence, GPU time lost, guilty units, next command) with the figure
    of what was measured inside it: the heatmap (not-ok GPUs first) for utilization samples, else the step times
    and their stalls of `bundle` (a step-only run); returns the headline dict, with the figure as base64 PNG under
    `figure_png` (the batch runner moves it into a file for the index)."""
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    from playbook.plots import step_charts as steps_plots
    from playbook.plots import timeline
    from playbook.report import headline

    head = headline.from_diagnosis(report, frame, metric)
    steps = getattr(bundle, "steps", None)
    png, note, alt = None, None, "heatmap of every GPU over time, the ones not ok first"
    if has_samples(frame, metric):
        period = (report.get("oscillation") or {}).get("period_s")
        shown = metric
        if (top_hypothesis(report) or {}).get("id") == cause_ids.THROTTLING and has_samples(frame, "sm_clock_mhz"):
            shown, alt = "sm_clock_mhz", "SM clock of every GPU over time, the throttled ones first"
        fig = timeline.heatmap(frame, shown, max_bins=max_bins, status=status_map(report), period_s=period,
                               figsize=(11, 4.6))
    elif steps is not None and len(steps):
        record = schema.record_unit(bundle)
        fig, alt = steps_plots.step_stalls(steps, bundle.events, record=record), \
            f"{record} time per {record}, the stalls in red"
    else:
        fig, note = None, "No figure: the inputs hold no utilization samples or step times (see the reader warnings)."
    if fig is not None:
        png = headline.figure_png(fig)
        plt.close(fig)
    display(HTML(headline.card_html(head, png, alt, figure_note=note)))
    return {**head, "figure_png": png, "figure_alt": alt}


def show_timelines(bundle: Any, frame: pd.DataFrame, metric: str) -> None:
    """Per-host utilization lines when the inputs hold samples; else each step's time with its stalls (a
    step-only run); else one line saying there is nothing over time to draw."""
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    from playbook.plots import step_charts as steps_plots
    from playbook.plots import timeline

    if has_samples(frame, metric):
        fig = timeline.host_lines(frame, metric)
    elif len(bundle.steps):
        fig = steps_plots.step_stalls(bundle.steps, bundle.events, record=schema.record_unit(bundle))
    else:
        display(HTML("<p><em>Nothing over time to draw: the inputs hold no samples and no step times.</em></p>"))
        return
    plt.show()
    plt.close(fig)


def show_gpu_status(report: dict[str, Any], rows: int = 16) -> None:
    """The GPU status grid and table (not-ok first, `rows` rows), or one line when the inputs hold no GPU."""
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    from playbook.plots import timeline

    gpus = report.get("gpus") or []
    if not gpus:
        display(HTML("<p><em>No GPU status: the inputs hold no GPU telemetry (only what is drawn above).</em></p>"))
        return
    fig = timeline.status_table(gpus)
    plt.show()
    plt.close(fig)
    display(gpu_status_view(report, rows))


def show_inputs(bundle: Any, root: str | Path | None = None) -> None:
    """The files read (escaped; named relative to the repository `root`, default catalog.repo_root(), when in it)
    and the rows per table, then the reader warnings, summarised."""
    from IPython.display import HTML, display

    from playbook.report.catalog import repo_root

    base = (Path(root) if root is not None else repo_root()).resolve()

    def short(p: str) -> str:
        try:
            return str(Path(p).resolve().relative_to(base))
        except (ValueError, OSError):
            return str(p)

    names = [html.escape(short(p)) for p in bundle.inputs]
    shown = ", ".join(f"<code>{n}</code>" for n in names[:12]) + (f" and {len(names) - 12} more"
                                                                    if len(names) > 12 else "")
    display(HTML(f'<p style="text-align:left">Read {len(names)} input{"s" if len(names) != 1 else ""}: '
                 f"{shown or 'none'}</p>"))
    frame = inputs_table(bundle)
    display(left_table(frame) if len(frame) else HTML(summaries_html(bundle)))
    display(HTML(warnings_html(bundle.warnings)))


def summaries_html(bundle: Any) -> str:
    """What inputs without table rows hold (a profiler text, a job's usage figures, nsys summaries): `playbook
    info`'s lines for them (analysis.inventory), escaped."""
    summary = dict(inventory.summarize(bundle), warnings=[])  # the warnings follow, counted (warnings_html)
    lines = [ln for ln in inventory.render(summary).splitlines()
             if ln.strip() and not ln.startswith(("inputs (", "warnings"))]
    return (f"<p>No table rows; what the inputs hold:</p><pre>{html.escape(chr(10).join(lines))}</pre>" if lines
            else "<p><em>No table rows.</em></p>")


def show_period(report: dict[str, Any], frame: pd.DataFrame, metric: str) -> None:
    """Spectrum and folded cycle over the GPUs that swing; each left out with one line saying why when it has
    nothing to show."""
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    from playbook.analysis.oscillation.fleet import period_spectrum
    from playbook.plots import timeline

    period = (report.get("oscillation") or {}).get("period_s")
    gpus, over = swing_gpus(report)
    spec = period_spectrum(frame, metric, gpus=gpus) if len(frame) else pd.DataFrame()
    if spec.empty or not np.isfinite(spec.get("period_s", pd.Series(dtype=float))).any():
        display(HTML("<p><em>No spectrum: too few samples in time for any period.</em></p>"))
    else:
        fig = timeline.spectrum(spec, period, title=f"Period spectrum of {over}")
        plt.show()
        plt.close(fig)
    if not period:
        display(HTML("<p><em>No period found, so there is no cycle to fold.</em></p>"))
        return
    fold = folded(frame, metric, period, gpus)
    if fold.empty:
        display(HTML("<p><em>No folded cycle: no samples of the swinging GPUs.</em></p>"))
        return
    fig = timeline.folded_cycle(fold, period, metric, over=over)
    plt.show()
    plt.close(fig)


def gpu_status_view(report: dict[str, Any], rows: int = 16):
    """The GPU table for the page: not-ok first, `rows` rows, with units in the headers."""
    frame = gpu_table(report).head(rows)[["id", "status", "mean_util_pct", "evidence"]]
    frame = frame.rename(columns={"id": "GPU (host:index)", "mean_util_pct": "mean utilization (%)"})
    # one decimal, as the JSON holds it: a whole percent of 72.5 (from 72.54) read 72 beside the evidence's "mean 73%"
    return left_table(frame, {"mean utilization (%)": "{:.1f}"})


def hypotheses_view(report: Any, rows: int | None = None, brief: bool = False):
    """The ranked hypotheses for the page (score 0-1, two decimals, evidence as sentences), from a diagnosis or
    its dict: the first `rows` (default all), and with `brief` only cause, score and evidence (the labs' view)."""
    frame = hypotheses_table(as_dict(report)).rename(columns={"id": "cause", "score": "score (0-1)",
                                                               "next_step": "next step"})
    frame["notebook"] = frame["notebook"].map(lambda nb: Path(nb).name if isinstance(nb, str) else nb)
    if brief:
        frame = frame[["cause", "score (0-1)", "evidence"]]
    styler = left_table(frame.head(rows) if rows else frame, {"score (0-1)": "{:.2f}"})
    styler = styler.set_properties(subset=["cause"], **{"white-space": "nowrap"})
    styler = styler.set_properties(subset=["evidence"], **{"min-width": "24em"})  # the reason comes first
    wordy = [c for c in ("next step", "fix") if c in frame.columns]  # commands with long options break anywhere
    return styler.set_properties(subset=wordy, **{"min-width": "12em", "overflow-wrap": "anywhere"}) if wordy \
        else styler
