"""Per-rank and per-worker figures for the distributed labs: compute vs waiting, what a utilization counter sees,
straggler scores, who is slowest step by step, queue depth and busy/blocked timelines of pipeline workers, exposed
communication, and the side effects of bucketing and packing.

Inputs are tidy frames from playbook.analysis.rank_stragglers (steps_per_rank, straggler_scores) or the lab modules
(labs.workloads.collective_stragglers.utilization_view, labs.workloads.pipeline_imbalance queue depths, labs.workloads.comm_overlap
exposed_table, ...). Each plot takes an optional `ax` and returns the Figure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from playbook.plots.style import PALETTE, PHASE_COLORS, figure, outside_legend

_CYCLE = ["#e76f51", "#2a9d8f", "#264653", "#e9c46a", "#9b5de5", "#f4a261", "#8ab17d"]
WAIT_COLOR = "#e76f51"


def compute_vs_wait(per_rank: pd.DataFrame, ax=None, title: str = "Per rank: computing vs waiting in the all-reduce"):
    """Stacked bars per rank of median ms per step: compute, waiting inside the collective (for the last rank to
    arrive), the transfer itself, and the rest of the step. `per_rank`: rank, compute_s, collective_s,
    collective_wait_s, step_s (e.g. labs.workloads.collective_stragglers.rank_phase_table)."""
    fig, ax = figure(ax, figsize=(8, 0.5 * len(per_rank) + 1.8))
    ranks = per_rank["rank"].astype(int).astype(str).radd("rank ")
    compute = per_rank["compute_s"].to_numpy() * 1e3
    wait = per_rank["collective_wait_s"].fillna(0).to_numpy() * 1e3
    transfer = np.clip(per_rank["collective_s"].fillna(0).to_numpy() * 1e3 - wait, 0, None)
    rest = np.clip(per_rank["step_s"].to_numpy() * 1e3 - compute - wait - transfer, 0, None)
    left = np.zeros(len(per_rank))
    for label, vals, color in (("compute", compute, PHASE_COLORS["bwd"]), ("waiting in collective", wait, WAIT_COLOR),
                               ("transfer", transfer, PHASE_COLORS["collective"]), ("other", rest,
                                                                                    PHASE_COLORS["other"])):
        ax.barh(ranks, vals, left=left, color=color, label=label)
        left += vals
    ax.invert_yaxis()
    ax.set_xlabel("median time per step (ms)")
    ax.set_title(title)
    outside_legend(ax, fontsize="small", ncols=4)
    return fig


def utilization_vs_work(util: pd.DataFrame, ax=None,
                        title: str = "What a utilization counter reports vs real work"):
    """Per rank: the share of time a utilization.gpu-like counter calls busy (compute + collective, a spinning
    NCCL kernel counts) next to the share spent computing. `util`: rank, counter_busy, real_work (0-1)."""
    fig, ax = figure(ax, figsize=(7, 3.2))
    x = np.arange(len(util))
    ax.bar(x - 0.2, util["counter_busy"] * 100, width=0.4, color=PALETTE["no_fault"], label="utilization counter")
    ax.bar(x + 0.2, util["real_work"] * 100, width=0.4, color=PALETTE["busy"], label="real work (compute)")
    ax.set_xticks(x, [f"rank {int(r)}" for r in util["rank"]])
    ax.set_ylim(0, 105)
    ax.set_ylabel("share of step time (%)")
    ax.set_title(title)
    outside_legend(ax, fontsize="small")
    return fig


def straggler_scores(scores: pd.DataFrame, column: str = "score_vs_median", threshold: float = 0.75, ax=None,
                     title: str = "Straggler score per rank"):
    """Bars of the straggler score (reference median ÷ the rank's median compute time) with the flag threshold.
    `scores`: rank, `column`, optionally flagged (analysis.rank_stragglers.straggler_scores)."""
    fig, ax = figure(ax, figsize=(7, 3))
    flagged = scores["flagged"] if "flagged" in scores else scores[column] < threshold
    colors = [PALETTE["fault"] if f else PALETTE["busy"] for f in flagged]
    ax.bar([f"rank {int(r)}" for r in scores["rank"]], scores[column], color=colors)
    ax.axhline(threshold, color="#264653", ls="--", lw=1, label=f"flag below {threshold}")
    ax.set_ylabel("score (1 = typical speed)")
    ax.set_title(title)
    outside_legend(ax, fontsize="small")
    return fig


def slowest_rank(slowest: pd.DataFrame, world_size: int, ax=None,
                 title: str = "Slowest rank, step by step"):
    """The slowest rank of every step as dots, one row of panels per label (e.g. "hw_fault r0"), so a rank that
    is slowest every time (hardware-like) stands out from one that rotates with the data (software-like).
    `slowest`: label, step, rank."""
    labels = list(dict.fromkeys(slowest["label"]))
    fig, ax = figure(ax, figsize=(9, 0.45 * world_size * max(1, len(labels)) + 1.2))
    offset = 0
    ticks, names = [], []
    for i, label in enumerate(labels):
        g = slowest[slowest["label"] == label]
        ax.scatter(g["step"], g["rank"] + offset, s=14, color=_CYCLE[i % len(_CYCLE)], label=label)
        ticks += [offset + r for r in range(world_size)]
        names += [f"{label}: rank {r}" if r == 0 else f"rank {r}" for r in range(world_size)]
        offset += world_size + 1
    ax.set_yticks(ticks, names, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("step")
    ax.set_title(title)
    return fig


def queue_depth(depth: pd.DataFrame, capacity: int | None = None, ax=None,
                title: str = "Items queued per consumer over time"):
    """Queue depth against time, one line per consumer (and the total). `depth`: time_s, consumer, depth."""
    fig, ax = figure(ax)
    wide = depth.pivot_table(index="time_s", columns="consumer", values="depth")
    for i, c in enumerate(wide.columns):
        ax.step(wide.index, wide[c], where="post", lw=1.2, color=_CYCLE[i % len(_CYCLE)], label=f"consumer {c}")
    ax.step(wide.index, wide.sum(axis=1), where="post", lw=2, color="#264653", alpha=0.6, label="all queued")
    if capacity:
        ax.axhline(capacity, color="#6c757d", ls="--", lw=1, label=f"capacity {capacity}")
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("items queued")
    ax.set_title(title)
    outside_legend(ax, fontsize="small", ncols=2)
    return fig


def worker_gantt(steps: pd.DataFrame, labels: dict[int, str] | None = None, busy: Sequence[str] = ("produce",
                 "consume"), waits: Sequence[str] = ("blocked",), window_s: float | None = None, ax=None,
                 title: str = "Each worker: busy and blocked over time"):
    """Busy (teal) and blocked (orange) intervals of every worker (rank) against time; the first `window_s`
    seconds only when given. `labels`: rank → name (e.g. "producer 0")."""
    ph = steps[steps["phase"].isin([*busy, *waits]) & steps["time"].notna()]
    ranks = sorted(ph["rank"].unique())
    fig, ax = figure(ax, figsize=(9, 0.35 * len(ranks) + 1.4))
    t0 = ph["time"].min()
    for y, r in enumerate(ranks):
        g = ph[ph["rank"] == r]
        start = (g["time"] - t0).dt.total_seconds().to_numpy()
        dur = g["duration_s"].to_numpy()
        is_busy = g["phase"].isin(busy).to_numpy()
        keep = start < window_s if window_s else np.ones(len(g), bool)
        ax.broken_barh(list(zip(start[keep & is_busy], dur[keep & is_busy], strict=True)), (y - 0.4, 0.8),
                       color=PALETTE["busy"])
        ax.broken_barh(list(zip(start[keep & ~is_busy], dur[keep & ~is_busy], strict=True)), (y - 0.4, 0.8),
                       color=PALETTE["wait"])
    ax.set_yticks(range(len(ranks)), [(labels or {}).get(int(r), f"worker {r}") for r in ranks], fontsize="small")
    ax.invert_yaxis()
    if window_s:
        ax.set_xlim(0, window_s)
    ax.set_xlabel("time since start (s)")
    ax.set_title(title + "  (teal busy, orange blocked)")
    return fig


def exposed_comm(table: pd.DataFrame, ax=None, title: str = "Step time: compute vs exposed communication"):
    """Per variant: the compute-only step time and the exposed communication on top, with its 95% interval.
    `table`: variant, step_ms, exposed_ms, exposed_lo_ms, exposed_hi_ms (labs.workloads.comm_overlap.exposed_table)."""
    fig, ax = figure(ax, figsize=(8, 0.6 * len(table) + 1.6))
    base = table["step_ms"] - table["exposed_ms"]
    ax.barh(table["variant"], base, color=PHASE_COLORS["bwd"], label="compute (reference step)")
    ax.barh(table["variant"], table["exposed_ms"], left=base, color=WAIT_COLOR, label="exposed communication")
    err = np.vstack([table["exposed_ms"] - table["exposed_lo_ms"], table["exposed_hi_ms"] - table["exposed_ms"]])
    ax.errorbar(table["step_ms"], np.arange(len(table)), xerr=np.clip(err, 0, None), fmt="none", color="#264653",
                capsize=3)
    ax.invert_yaxis()
    ax.set_xlabel("median step time (ms)")
    ax.set_title(title)
    outside_legend(ax, fontsize="small")
    return fig


def measured_vs_model(table: pd.DataFrame, ax=None, title: str = "Tensor-parallel overlap: measured vs model"):
    """Grouped bars of measured ms next to the labelled model's ms. `table`: what, measured_ms, model_ms."""
    fig, ax = figure(ax, figsize=(8, 3.2))
    y = np.arange(len(table))
    ax.barh(y - 0.2, table["measured_ms"], height=0.4, color=PALETTE["no_fault"], label="measured")
    ax.barh(y + 0.2, table["model_ms"].fillna(0), height=0.4, color="#adb5bd", hatch="//",
            label="model (not a measurement)")
    ax.set_yticks(y, table["what"], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    ax.set_title(title)
    outside_legend(ax, fontsize="small")
    return fig


def weight_shares(demo: pd.DataFrame, ax=None, title: str = "Loss weight per document vs its length"):
    """Each document's share of the batch loss against its length, per weighting (columns other than doc and
    length; labs.workloads.padding_packing.weighting_demo)."""
    fig, ax = figure(ax, figsize=(7, 3.2))
    d = demo.sort_values("length")
    cols = [c for c in d.columns if c not in ("doc", "length")]
    for i, c in enumerate(cols):
        ax.plot(d["length"], d[c] * 100, marker="o" if i < 2 else "x", ls="-" if i < 2 else "--",
                color=_CYCLE[i % len(_CYCLE)], label=c.replace("_", " "))
    ax.set_xlabel("document length (tokens)")
    ax.set_ylabel("share of the batch loss (%)")
    ax.set_title(title)
    outside_legend(ax, fontsize="small")
    return fig


def batch_lengths(steps: pd.DataFrame, ax=None, title: str = "What a step holds: mean document length per step"):
    """Distribution over steps of the mean document length, per variant: bucketing widens it (the change in
    batch composition). `steps`: variant, repeat, step, mean_len (per rank rows are averaged per step)."""
    per = steps.groupby(["variant", "repeat", "step"])["mean_len"].mean().reset_index()
    variants = list(dict.fromkeys(per["variant"]))
    fig, ax = figure(ax, figsize=(7, 3.2))
    ax.boxplot([per.loc[per["variant"] == v, "mean_len"] for v in variants], orientation="horizontal", widths=0.6)
    ax.set_yticks(range(1, len(variants) + 1), variants)
    ax.invert_yaxis()
    ax.set_xlabel("mean document length in a step (tokens)")
    ax.set_title(title)
    return fig
