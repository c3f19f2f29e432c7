"""Step-level figures for the labs and step-only runs: step times with events, a run's stalls, phase breakdown per variant, busy fraction over time,
throughput per variant with its run-to-run spread, loss curves.

Inputs are tidy frames (schema.STEP_COLUMNS / EVENT_COLUMNS, analysis.step_times.busy_timeline, the runs frame of
labs.workloads.common.measure_variants, labs.workloads.loop.loss_curves). Each plot takes an optional `ax` and returns the
Figure; the table-shaping helpers (`step_series`, `phase_ms_per_step`) are separate so they can be tested.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from playbook.plots.style import PALETTE, PHASE_COLORS, figure, outside_legend

EVENT_COLORS = {"checkpoint": "#9b5de5", "eval": "#f15bb5", "recompile": "#e63946", "compile": "#e9c46a",
                "gc": "#6c757d"}
FEW_POINTS = 30  # records up to which step_stalls marks each one (one step was an empty chart)
_CYCLE = ["#e76f51", "#2a9d8f", "#264653", "#e9c46a", "#9b5de5", "#f4a261", "#8ab17d"]


def _color(label: str, i: int) -> str:
    return PALETTE.get(label, _CYCLE[i % len(_CYCLE)])


def step_series(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per step (of the first rank present): step, duration_ms, and time_s since the first step start."""
    whole = steps[steps["phase"] == "step"]
    if whole.empty:
        return pd.DataFrame(columns=["step", "duration_ms", "time_s"])
    whole = whole[whole["rank"] == whole["rank"].iloc[0]].sort_values("step")
    t = whole["time"]
    time_s = (t - t.min()).dt.total_seconds() if t.notna().any() else pd.Series(np.nan, index=whole.index)
    return pd.DataFrame({"step": whole["step"].to_numpy(), "duration_ms": whole["duration_s"].to_numpy() * 1e3,
                         "time_s": time_s.to_numpy()})


def step_times(runs: Mapping[str, pd.DataFrame] | pd.DataFrame, events: pd.DataFrame | None = None, ax=None,
               title: str = "Step time", event_kinds: tuple[str, ...] = ("checkpoint", "eval", "recompile", "gc"),
               min_event_s: float = 0.0):
    """Step duration (ms) against step index for one steps table or {label: steps table}; `events` (of the first
    run) drawn as vertical lines at their step, one colour per kind (events shorter than `min_event_s` left out)."""
    fig, ax = figure(ax)
    runs = {"run": runs} if isinstance(runs, pd.DataFrame) else dict(runs)
    for i, (label, steps) in enumerate(runs.items()):
        s = step_series(steps)
        ax.plot(s["step"], s["duration_ms"], marker=".", lw=1, color=_color(label, i), label=label)
    if events is not None and len(events):
        ev = events[events["kind"].isin(event_kinds) & (events["step"] >= 0)]
        _event_lines(ax, ev[~(ev["duration_s"] < min_event_s)], ls="--", alpha=0.7)
    ax.set_xlabel("step")
    ax.set_ylabel("step time (ms)")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    outside_legend(ax, fontsize="small")
    return fig


def _display_unit(median_s: float) -> tuple[str, float]:
    """(unit, per second) to show step times of median `median_s` seconds in: ms under 1 s, s under 10 min, min."""
    return ("ms", 1e3) if median_s < 1 else ("s", 1.0) if median_s < 600 else ("min", 1 / 60)


def _amount(x: float) -> str:
    """`x` with three significant digits and no exponent: 0.0123, 4.86, 4,860 (a legend's "4.86e+03 ms")."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def step_stalls(steps: pd.DataFrame, events: pd.DataFrame | None = None, ax=None, title: str | None = None,
                record: str = "step"):
    """What a step-only run measured: each step's time (median over ranks) against its index, the slow steps
    (analysis.step_times.slow_steps: the stalls; judged on the time for each step's own work when the step time
    follows its stated work, as the accounting does: work_scale) as red dots, the median as a dashed line, the
    slowest rank's own line when it lags, the largest waiting phase of one rank as a shaded area and logged events
    as vertical lines; "no step times" when `steps` holds none. `record`: what a row stands for ("step" or
    "epoch", schema.record_unit); times in ms, s or min by their median (an epoch of 4.6 min read 274,000 ms)."""
    from playbook.analysis.step_times import fleet_steps, slow_steps, work_scale

    fig, ax = figure(ax, figsize=(10, 3.6))
    fleet = fleet_steps(steps) if len(steps) else pd.DataFrame(columns=["step", "duration_s"])
    fleet = fleet[np.isfinite(fleet["duration_s"].to_numpy(dtype="float64"))]
    if fleet.empty:
        ax.text(0.5, 0.5, "no step times", ha="center", va="center", transform=ax.transAxes)
        return fig
    median_s = float(np.median(fleet["duration_s"].to_numpy(dtype="float64")))
    unit, per_s = _display_unit(median_s)
    shown = fleet["duration_s"].to_numpy(dtype="float64") * per_s  # in `unit`
    scale, by_work = work_scale(shown, fleet["work"].to_numpy(dtype="float64"))
    slow = slow_steps(shown / scale)
    few = len(fleet) <= FEW_POINTS  # a line through one or a few records draws nothing visible: mark each
    ax.plot(fleet["step"], shown, lw=0.8, color="#264653", marker="o" if few else None, markersize=4,
            label=f"{record} time" + (" (median over ranks)" if (
        slowest := _slowest_rank(steps, median_s * 1e3)) is not None else ""))
    if slowest is not None:  # a rank persistently slower than the median rank: the one the others wait for
        rank, series = slowest
        ax.plot(series.index, series.to_numpy() * per_s, lw=0.8, color="#f4a261",
                label=f"rank {rank} (slowest, median {_amount(series.median() * per_s)} {unit})")
    ax.axhline(float(np.median(shown)), color="#6c757d", lw=1, ls="--", label=f"median {_amount(float(np.median(shown)))} {unit}")
    if by_work is not None:  # the time each step's own work takes at the run's median pace
        ax.plot(fleet["step"], float(np.median(shown / scale)) * scale, lw=0.8, color="#2a9d8f", alpha=0.8,
                label="expected for its work")
    if slow.any():
        ax.scatter(fleet["step"][slow], shown[slow], color="#d62828", s=18, zorder=3,
                   label=f"stall ({int(slow.sum())} slow {record}{'s' if slow.sum() != 1 else ''}"
                         f"{(' for its work' if slow.sum() == 1 else ' for their work') if by_work is not None else ''})")
    if (waits := _largest_wait(steps, median_s * 1e3)) is not None:  # the time a step spends waiting
        rank, phase, series = waits
        who = f"rank {rank} " if rank >= 0 else ""
        ax.fill_between(series.index, series.to_numpy() * per_s, color=PHASE_COLORS.get(phase, "#ced4da"), alpha=0.35,
                        step="mid", label=f"{who}{phase} wait (median {_amount(series.median() * per_s)} {unit})")
    if events is not None and len(events):
        _event_lines(ax, events[events["step"].notna() & (events["step"] >= 0)], ls=":", alpha=0.8)
    ax.set_xlabel(record)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # records are counted: no tick at step 0.96
    if (first := float(fleet["step"].min())) + 2 > (last := float(fleet["step"].max())):
        ax.set_xlim(first - 1, last + 1)  # one or two records: a span the integer ticks can mark
    ax.set_ylabel(f"{record} time ({unit})")
    ax.set_ylim(bottom=0)
    ax.set_title(title or f"Time per {record} (red: stalls)")
    outside_legend(ax, fontsize="small")
    return fig


def _slowest_rank(steps: pd.DataFrame, median_ms: float) -> tuple[int, pd.Series] | None:
    """(rank, its step times in s by step) of the slowest of several ranks when its median step is at least
    CREEP_MIN above the median over ranks (`median_ms`), else None."""
    from playbook.analysis.step_times import CREEP_MIN

    whole = steps[(steps["phase"] == "step") & np.isfinite(steps["duration_s"].to_numpy(dtype="float64"))]
    if whole["rank"].nunique() < 2:
        return None
    medians = whole.groupby("rank")["duration_s"].median()
    rank = int(medians.idxmax())
    if not medians[rank] * 1e3 >= (1 + CREEP_MIN) * median_ms:
        return None
    return rank, whole[whole["rank"] == rank].groupby("step")["duration_s"].last()


def _largest_wait(steps: pd.DataFrame, median_ms: float) -> tuple[int, str, pd.Series] | None:
    """(rank, phase, its time in s by step) of the waiting phase (step_times.WAIT_PHASES: waits, not work) that
    takes the most time on one rank, when its median is at least CREEP_MIN of the median step (the share a slow
    rank must exceed to count: smaller waits are the step's own jitter), else None."""
    from playbook.analysis.step_times import CREEP_MIN, WAIT_PHASES

    waits = steps[steps["phase"].astype(str).isin(WAIT_PHASES)
                  & np.isfinite(steps["duration_s"].to_numpy(dtype="float64"))]
    if waits.empty:
        return None
    totals = waits.groupby(["rank", "phase"], observed=True)["duration_s"].sum()
    rank, phase = totals.idxmax()
    series = waits[(waits["rank"] == rank) & (waits["phase"] == phase)].groupby("step")["duration_s"].sum()
    if not series.median() * 1e3 >= CREEP_MIN * median_ms:
        return None
    return int(rank), str(phase), series


def _event_lines(ax, events: pd.DataFrame, ls: str, alpha: float) -> None:
    """A vertical line at each event's step, coloured by kind, each kind labelled once in the legend."""
    shown: set[str] = set()
    for kind, step in zip(events["kind"].astype(str), events["step"], strict=True):
        ax.axvline(step, color=EVENT_COLORS.get(kind, "#adb5bd"), lw=1, ls=ls, alpha=alpha,
                   label=f"{kind} event" if kind not in shown else None)
        shown.add(kind)


def phase_ms_per_step(runs: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Mean milliseconds per step spent in each phase, per label: rows label, columns phases (PHASE_COLORS order,
    then others), "other" = step time not covered by a phase."""
    rows = {}
    for label, steps in runs.items():
        whole = steps[steps["phase"] == "step"]
        n = max(len(whole), 1)
        parts = steps[steps["phase"] != "step"].groupby("phase")["duration_s"].sum()
        row = (parts / n * 1e3).to_dict()
        row["other"] = max(0.0, (whole["duration_s"].sum() - parts.sum()) / n * 1e3)
        rows[label] = row
    table = pd.DataFrame.from_dict(rows, orient="index").fillna(0.0)
    order = [p for p in PHASE_COLORS if p in table.columns and p != "other"]
    order += sorted(c for c in table.columns if c not in order and c != "other") + ["other"]
    return table[[c for c in order if c in table.columns]]


def phase_bars(runs: Mapping[str, pd.DataFrame], ax=None, title: str = "Where a step's time goes"):
    """Stacked horizontal bars: mean ms per step in each phase, one bar per label."""
    table = phase_ms_per_step(runs)
    fig, ax = figure(ax, figsize=(9, 0.6 * len(table) + 1.6))
    left = np.zeros(len(table))
    for phase in table.columns:
        vals = table[phase].to_numpy()
        if not np.any(vals > 0):
            continue
        ax.barh(table.index.astype(str), vals, left=left, color=PHASE_COLORS.get(phase, "#adb5bd"), label=phase)
        left += vals
    ax.invert_yaxis()
    ax.set_xlabel("mean time per step (ms)")
    ax.set_title(title)
    outside_legend(ax, fontsize="small", ncols=min(len(table.columns), 5))
    return fig


def busy_over_time(timelines: Mapping[str, pd.DataFrame], ax=None,
                   title: str = "Busy fraction over time (from step phases)"):
    """busy_frac (0-1) against seconds since each run's start, one line per label (analysis.step_times.busy_timeline
    frames) — the utilization-like signal: its dips are the idle gaps."""
    fig, ax = figure(ax)
    for i, (label, tl) in enumerate(timelines.items()):
        if tl.empty:
            continue
        t = (tl["time"] - tl["time"].min()).dt.total_seconds().to_numpy()
        ax.step(t, tl["busy_frac"].to_numpy(), where="post", color=_color(label, i), label=label, lw=1.5)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("busy fraction (0-1)")
    ax.set_title(title)
    outside_legend(ax, fontsize="small")
    return fig


def throughput_by_variant(runs: pd.DataFrame, metric: str = "throughput", ax=None,
                          unit: str = "samples/s", title: str = "Throughput per run"):
    """Each repeat as a dot and the mean ± std as a bar, per variant (the runs frame of measure_variants)."""
    fig, ax = figure(ax, figsize=(7, 3.2))
    variants = list(dict.fromkeys(runs["variant"]))
    for i, v in enumerate(variants):
        vals = runs.loc[runs["variant"] == v, metric].to_numpy(dtype=float)
        color = _color(v, i)
        ax.errorbar(np.mean(vals), i, xerr=np.std(vals, ddof=1) if len(vals) > 1 else 0, fmt="|", ms=18,
                    color=color, capsize=4)
        ax.scatter(vals, np.full(len(vals), i), color=color, alpha=0.7, zorder=3)
    ax.set_yticks(range(len(variants)), variants)
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel(f"{metric} ({unit})")
    ax.set_title(title)
    return fig


def loss_curves(curves: pd.DataFrame, ax=None, title: str = "Training loss per variant"):
    """Loss against step, one line per (variant, repeat), coloured by variant (labs.workloads.loop.loss_curves)."""
    fig, ax = figure(ax)
    for i, (variant, g) in enumerate(curves.groupby("variant", sort=False)):
        for j, (_, r) in enumerate(g.groupby("repeat")):
            ax.plot(r["step"], r["loss"], color=_color(str(variant), i), alpha=0.8, lw=1,
                    label=str(variant) if j == 0 else None)
    ax.set_xlabel("step (timed)")
    ax.set_ylabel("training loss")
    ax.set_title(title)
    outside_legend(ax, fontsize="small")
    return fig
