"""Before/after comparisons with run-to-run variance: is a difference bigger than the noise?"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd


def variant_summary(runs: pd.DataFrame, metric: str = "throughput", baseline: str = "no_fault") -> pd.DataFrame:
    """Per variant: n, mean, std, cv, and mean ratio to `baseline` with a 95% interval (delta method on the means).

    `runs` has one row per (variant, repeat) with a column `metric` (as from workloads.common.measure_variants).
    """
    g = runs.groupby("variant", sort=False)[metric]
    out = pd.DataFrame({"n": g.count(), "mean": g.mean(), "std": g.std(ddof=1).fillna(0.0)})
    out["cv"] = out["std"] / out["mean"].where(out["mean"] != 0)
    if baseline in out.index:
        b = out.loc[baseline]
        ratio = out["mean"] / b["mean"]
        # relative standard errors of the two means, combined (delta method for a ratio)
        rse = np.sqrt((out["std"] / out["mean"]) ** 2 / out["n"] + (b["std"] / b["mean"]) ** 2 / b["n"])
        out["ratio"] = ratio
        out["ratio_lo"] = ratio * (1 - 1.96 * rse)
        out["ratio_hi"] = ratio * (1 + 1.96 * rse)
    return out


@dataclass
class LabVerdict:
    """The verdict of a fault → fix → no-fault experiment."""

    status: str  # confirmed | refuted | inconclusive
    summary: str
    fault_ratio: float  # fault throughput ÷ no-fault throughput
    fix_ratio: float  # fix throughput ÷ no-fault throughput
    noise_cv: float  # largest coefficient of variation among the variants

    def as_dict(self) -> dict:
        return asdict(self)


def lab_verdict(summary: pd.DataFrame, fault: str = "fault", fix: str = "fix", baseline: str = "no_fault",
                recover: float = 0.95) -> LabVerdict:
    """Confirmed when the fault costs throughput beyond the noise and the fix recovers ≥ `recover` of the baseline.

    Refuted when the fault's cost lies within the noise (the hypothesised cause does not slow this run);
    inconclusive when the fault hurts but the fix does not recover enough (or the noise is too large to tell).
    """
    fr = float(summary.loc[fault, "ratio"])
    xr = float(summary.loc[fix, "ratio"]) if fix in summary.index else math.nan
    cv = float(summary["cv"].max())
    fault_hi = float(summary.loc[fault, "ratio_hi"])
    if fault_hi >= 1.0:
        return LabVerdict("refuted", f"the fault's throughput ({fr:.0%} of no-fault) is within run-to-run noise",
                          fr, xr, cv)
    if xr >= recover:
        return LabVerdict("confirmed", f"fault runs at {fr:.0%} of no-fault throughput; the fix recovers {xr:.0%}",
                          fr, xr, cv)
    return LabVerdict("inconclusive", f"fault runs at {fr:.0%} of no-fault, but the fix recovers only {xr:.0%}",
                      fr, xr, cv)
