"""Lab verdicts: per-variant throughput ratios to the no-fault run with a Student-t interval on the log scale
(a ratio of positive rates: never negative), and whether the fault → fix → no-fault experiment confirms, refutes
or cannot tell the hypothesised cause (never from fewer than MIN_REPEATS runs a variant)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from playbook.analysis.stats import t_quantile

MIN_REPEATS = 3  # runs per variant below which a verdict says "too few repeats" (2 runs: a t with ~1-2 df)


def variant_summary(runs: pd.DataFrame, metric: str = "throughput", baseline: str = "no_fault",
                    level: float = 0.95) -> pd.DataFrame:
    """Per variant: n, mean, std, cv, the mean ratio to `baseline` with a Student-t interval at `level`, and a
    `note` ("too few repeats" below MIN_REPEATS runs on either side).

    `runs` has one row per (variant, repeat) with a column `metric` (as from labs.workloads.common.measure_variants).
    The interval is taken on log(ratio), whose standard error is the root sum of both means' squared relative
    standard errors (delta method), and mapped back: ratio × exp(±t·se), so it stays positive and is as wide
    below the ratio as a factor as it is above. Its degrees of freedom are Welch-Satterthwaite's, so two repeats
    a side give a wide interval (t with ~2 df: ±4.3 standard errors) rather than a falsely tight normal one. One
    run of a variant has no spread: its interval is NaN (cannot tell).
    """
    g = runs.groupby("variant", sort=False)[metric]
    out = pd.DataFrame({"n": g.count(), "mean": g.mean(), "std": g.std(ddof=1)})
    out["cv"] = out["std"] / out["mean"].where(out["mean"] != 0)
    out["note"] = ""
    if baseline in out.index:
        b = out.loc[baseline]
        ratio = out["mean"] / b["mean"]
        va = (out["std"] / out["mean"]) ** 2 / out["n"]  # squared relative standard errors
        vb = (b["std"] / b["mean"]) ** 2 / b["n"]
        se_log = np.sqrt(va + vb)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = (va + vb) ** 2 / (va ** 2 / (out["n"] - 1) + vb ** 2 / (b["n"] - 1))
        df = df.where(np.isfinite(df) & (df > 0), out["n"] + b["n"] - 2)
        tq = pd.Series([t_quantile(0.5 + level / 2, d) for d in df.clip(lower=1e-9)], index=out.index)
        tq = tq.where((out["n"] >= 2) & (b["n"] >= 2) & (ratio > 0))
        out["ratio"] = ratio
        out["ratio_lo"] = ratio * np.exp(-tq * se_log)
        out["ratio_hi"] = ratio * np.exp(tq * se_log)
        out.loc[out.index == baseline, ["ratio_lo", "ratio_hi"]] = 1.0
        few = (out["n"] < MIN_REPEATS) | (b["n"] < MIN_REPEATS)
        out.loc[few & (out.index != baseline), "note"] = f"too few repeats (n < {MIN_REPEATS})"
    out["std"] = out["std"].fillna(0.0)
    return out


def paired(runs: pd.DataFrame, metric: str = "throughput", baseline: str = "no_fault") -> pd.DataFrame:
    """`runs` with a column `<metric>_paired`: each run's metric divided by the baseline's metric in the same repeat.

    measure_variants runs the variants of one repeat back to back, so each repeat is a block: dividing within the
    block removes drift in machine load between repeats (other jobs on shared cores), which otherwise dominates the
    variance of the raw means. variant_summary(paired(runs), "throughput_paired") then gives ratios whose interval
    reflects the within-repeat noise only. Runs whose repeat has no baseline run get NaN.
    """
    base = runs[runs["variant"] == baseline].set_index("repeat")[metric]
    out = runs.copy()
    out[f"{metric}_paired"] = out[metric] / out["repeat"].map(base)
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
                recover: float = 0.95, quantity: str = "throughput") -> LabVerdict:
    """The verdict from the ratios' intervals (variant_summary of `quantity`, e.g. "throughput" or "loop
    efficiency"; ratios to `baseline`), its sentence naming the quantity its percentages are of:

    confirmed     the fault costs `quantity` beyond the noise (its interval lies below 1) and the fix is faster
                  than the fault beyond the noise (their intervals do not overlap) and recovers ≥ `recover`
    refuted       the fault's interval holds 1 and is tight enough to rule out a cost of more than 1 - `recover`
                  (its lower end above `recover`): the hypothesised cause does not slow this run
    inconclusive  otherwise: fewer than MIN_REPEATS runs a variant ("too few repeats"), runs that cannot
                  separate fault, fix and noise (noisy), or a fix that does not recover enough
    """
    fr = float(summary.loc[fault, "ratio"])
    xr = float(summary.loc[fix, "ratio"]) if fix in summary.index else math.nan
    cv = float(summary["cv"].max())
    f_lo, f_hi = (float(summary.loc[fault, k]) for k in ("ratio_lo", "ratio_hi"))
    x_lo, x_hi = ((float(summary.loc[fix, k]) for k in ("ratio_lo", "ratio_hi")) if fix in summary.index
                  else (math.nan, math.nan))
    n = int(summary["n"].min())
    fault_txt = f"the fault's {quantity} is {fr:.0%} of no-fault's ({_interval(f_lo, f_hi)})"
    fix_txt = f"the fix's {xr:.0%} ({_interval(x_lo, x_hi)})"
    if n < MIN_REPEATS:
        return LabVerdict("inconclusive", f"{fault_txt}; {fix_txt}: too few repeats ({n} run{'s' * (n != 1)} a variant; "
                          f"{MIN_REPEATS} or more tell fix, fault and noise apart)", fr, xr, cv)
    if not (math.isfinite(f_lo) and math.isfinite(f_hi)):
        return LabVerdict("inconclusive", f"{fault_txt}: {n} runs per variant give no interval; repeat more",
                          fr, xr, cv)
    if f_hi < 1.0:
        if math.isfinite(x_lo) and x_lo > f_hi and xr >= recover:
            return LabVerdict("confirmed", f"{fault_txt}; {fix_txt}: the fix recovers the loss beyond the noise",
                              fr, xr, cv)
        if math.isfinite(x_lo) and x_lo > f_hi:
            return LabVerdict("inconclusive", f"{fault_txt}; {fix_txt}: faster than the fault, but short of the "
                              f"{recover:.0%} bar", fr, xr, cv)
        return LabVerdict("inconclusive", f"{fault_txt}; {fix_txt}: the {n} runs per variant cannot separate the "
                          "fix from the fault; repeat more (or run without --quick)", fr, xr, cv)
    if f_lo > recover:
        return LabVerdict("refuted", f"{fault_txt}: within run-to-run noise, and a cost above {1 - recover:.0%} is "
                          "ruled out", fr, xr, cv)
    return LabVerdict("inconclusive", f"{fault_txt}: the interval holds both no cost and a large one; the {n} runs "
                      "per variant cannot tell — repeat more", fr, xr, cv)


def _interval(lo: float, hi: float, level: float = 0.95) -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "no interval"
    return f"{level:.0%} interval {lo:.0%}-{hi:.0%}"


def period_text(periodic: dict | None, alpha: float = 0.05, unit: str = "steps") -> tuple[int | float | None, str]:
    """(period or None, text) for a periodicity test result with `every_n_steps` and `p_value`: the period is
    given only when p < `alpha`; otherwise "no period found"."""
    periodic = periodic or {}
    every, p = periodic.get("every_n_steps"), periodic.get("p_value")
    if every is None or p is None or not (p < alpha):
        tail = f" (best candidate every {every} {unit}, p = {p:.2g})" if every is not None and p is not None else ""
        return None, "no period found" + tail
    return every, f"slow steps recur every {every} {unit} (p = {p:.2g})"
