"""Step and phase analyses on the steps table (schema.STEP_COLUMNS).

A device's "busy" time is the time spent in compute phases. Without a GPU counter this busy fraction over time is
the utilization-like signal the labs plot and `diagnose` analyses (labelled as derived from step phases).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COMPUTE_PHASES: tuple[str, ...] = ("fwd", "bwd", "optimizer", "compute")


def phase_breakdown(steps: pd.DataFrame) -> pd.DataFrame:
    """Seconds and share of step time per (rank, phase); the remainder of each step is phase "other".

    Returns columns rank, phase, seconds, share (0-1 of that rank's summed step time).
    """
    whole = steps[steps["phase"] == "step"]
    parts = steps[steps["phase"] != "step"]
    by = parts.groupby(["rank", "phase"], sort=False)["duration_s"].sum().rename("seconds").reset_index()
    if len(whole):
        total = whole.groupby("rank")["duration_s"].sum()
        other = (total - parts.groupby("rank")["duration_s"].sum().reindex(total.index, fill_value=0.0))
        other = other.clip(lower=0.0).rename("seconds").reset_index().assign(phase="other")
        by = pd.concat([by, other[["rank", "phase", "seconds"]]], ignore_index=True)
    else:
        total = by.groupby("rank")["seconds"].sum()
    by["share"] = by["seconds"] / by["rank"].map(total).where(lambda s: s > 0)
    return by.sort_values(["rank", "seconds"], ascending=[True, False]).reset_index(drop=True)


def step_stats(steps: pd.DataFrame) -> pd.DataFrame:
    """Per rank: n steps, median / p90 / max step time (s), and steps per second over the median."""
    whole = steps[steps["phase"] == "step"]
    g = whole.groupby("rank")["duration_s"]
    out = pd.DataFrame({
        "steps": g.count(),
        "median_s": g.median(),
        "p90_s": g.quantile(0.9),
        "max_s": g.max(),
        "total_s": g.sum(),
    })
    out["steps_per_s"] = 1.0 / out["median_s"]
    return out.reset_index()


def busy_timeline(steps: pd.DataFrame, bin_s: float | None = None,
                  busy_phases: tuple[str, ...] = COMPUTE_PHASES) -> pd.DataFrame:
    """Fraction of each time bin that a rank spent in `busy_phases` (0-1), from phases with start times.

    `bin_s` defaults to about four median steps. Returns columns time (UTC bin start), host, rank, busy_frac.
    Rows with no start time are ignored.
    """
    ph = steps[steps["phase"].isin(busy_phases) & steps["time"].notna()]
    if ph.empty:
        return pd.DataFrame(columns=["time", "host", "rank", "busy_frac"])
    if bin_s is None:
        med = steps.loc[steps["phase"] == "step", "duration_s"].median()
        bin_s = float(4 * med) if np.isfinite(med) and med > 0 else 1.0
    t0 = ph["time"].min()
    start = (ph["time"] - t0).dt.total_seconds().to_numpy()
    end = start + ph["duration_s"].fillna(0).to_numpy()
    rows = []
    for (host, rank), idx in ph.groupby(["host", "rank"], sort=True).indices.items():
        s, e = start[idx], end[idx]
        nbins = int(np.ceil(e.max() / bin_s)) or 1
        edges = np.arange(nbins + 1) * bin_s
        # overlap of each interval [s, e) with each bin, summed: O(intervals × bins touched)
        busy = np.zeros(nbins)
        for a, b in zip(s, e, strict=True):
            i0, i1 = int(a // bin_s), min(int(b // bin_s), nbins - 1)
            for i in range(i0, i1 + 1):
                busy[i] += max(0.0, min(b, edges[i + 1]) - max(a, edges[i]))
        rows.append(pd.DataFrame({
            "time": t0 + pd.to_timedelta(edges[:-1], unit="s"),
            "host": host, "rank": rank, "busy_frac": np.clip(busy / bin_s, 0.0, 1.0),
        }))
    return pd.concat(rows, ignore_index=True)
