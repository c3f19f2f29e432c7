"""Throughput and each cause's change between GOOD and BAD runs (steps 2-3 of the method in diagnosis.regression):
block-bootstrap intervals over steps (and runs), rate tests of event counts, the causes ranked by their share of
the change."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from playbook.analysis import stats
from playbook.diagnosis import ranking
from playbook.diagnosis.regression.runs import COST_PREFIXES, DEFAULT_CAUSE, PHASE_CAUSE, RunSteps
from playbook.diagnosis.regression.text import fmt_p, fmt_seconds
from playbook.knowledge import causes as catalog
from playbook.knowledge import ids as cause_ids
from playbook.model import schema

ALPHA = 0.05  # the intervals are 95%
N_BOOT = 2000
MIN_SCORE = 0.05  # causes scoring below this (e.g. < 5% of the slowdown) are not listed


@dataclass
class SideStats:
    """Point estimates and bootstrap replicates of one side's per-step costs (s per step at GOOD's work per
    step), throughput, median step."""

    columns: list[str]
    cost: np.ndarray  # (m,)
    cost_boot: np.ndarray  # (B, m)
    throughput: float
    throughput_boot: np.ndarray
    throughput_per_run: list[float]
    median: float
    median_boot: np.ndarray
    per_step_cost: np.ndarray  # pooled per-step wall cost, for the distribution comparison


def _side(runs: list[RunSteps], columns: list[str], per_token: bool, tps_ref: float, n_boot: int, n_med: int,
          rng: np.random.Generator) -> SideStats:
    reps, tps, meds, costs, tp_runs, med_runs, pooled = [], [], [], [], [], [], []
    iw, it = columns.index("wall_s"), columns.index("tokens")
    for r in runs:
        x = r.table.reindex(columns=columns).fillna(0.0).to_numpy(dtype=np.float64)
        n = len(x)
        sums, n2 = stats.block_bootstrap_sums(x, r.block, n_boot, rng)
        total = x.sum(axis=0)
        if per_token:
            rep, tp = sums / sums[:, [it]] * tps_ref, sums[:, it] / sums[:, iw]
            costs.append(total / total[it] * tps_ref)
            tp_runs.append(float(total[it] / total[iw]))
            pooled.append(x[:, iw] / x[:, it] * tps_ref)
        else:
            rep, tp = sums / n2, n2 / sums[:, iw]
            costs.append(total / n)
            tp_runs.append(float(n / total[iw]))
            pooled.append(x[:, iw])
        # widen the replicates' spread for the block bootstrap's variance bias and the noise of its estimate
        f = stats.block_bootstrap_widening(pooled[-1], r.block, 1 - ALPHA)
        reps.append(costs[-1] + f * (rep - costs[-1]))
        tps.append(tp_runs[-1] + f * (tp - tp_runs[-1]))
        idx = stats.block_bootstrap_indices(n, r.block, n_med, rng)
        med_runs.append(float(np.median(pooled[-1])))
        meds.append(med_runs[-1] + f * (np.median(pooled[-1][idx], axis=1) - med_runs[-1]))
    k = len(runs)
    if k > 1:  # hierarchical: resample runs, then steps within each run
        pick = rng.integers(0, k, size=(n_boot, k))
        rows = np.arange(n_boot)[:, None]
        cost_boot = np.stack(reps)[pick, rows].mean(axis=1)
        tp_boot = np.stack(tps)[pick, rows].mean(axis=1)
        med_boot = np.stack(meds)[pick[:n_med], np.arange(n_med)[:, None]].mean(axis=1)
    else:
        cost_boot, tp_boot, med_boot = reps[0], tps[0], meds[0]
    return SideStats(columns, np.mean(costs, axis=0), cost_boot, float(np.mean(tp_runs)), tp_boot, tp_runs,
                     float(np.mean(med_runs)), med_boot, np.concatenate(pooled))


def _interval(boot: np.ndarray) -> tuple[float, float]:
    b = boot[np.isfinite(boot)]
    if len(b) < 3:
        return math.nan, math.nan
    lo, hi = np.percentile(b, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    return float(lo), float(hi)


def _ratio_block(good: float, bad: float, gb: np.ndarray, bb: np.ndarray) -> dict:
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = bad / good if good > 0 else math.nan
        boot = bb / gb
    lo, hi = _interval(boot)
    logb = np.log(boot[np.isfinite(boot) & (boot > 0)])
    p = stats.bootstrap_p(math.log(ratio), logb, 0.0) if np.isfinite(ratio) and ratio > 0 else math.nan
    return {"good": good, "bad": bad, "ratio": ratio, "ratio_lo": lo, "ratio_hi": hi, "p_value": p}


def compare_steps(g_runs: list[RunSteps], b_runs: list[RunSteps], n_boot: int, rng: np.random.Generator,
                  warnings: list[str]) -> dict:
    """GOOD's and BAD's step tables compared: throughput, step-time distributions, phases, events and the causes
    whose change is significant (steps 2-3 of the method in diagnosis.regression)."""
    per_token = all(r.has_tokens for r in g_runs + b_runs)
    tps_ref = (sum(r.table["tokens"].sum() for r in g_runs) / sum(len(r.table) for r in g_runs)) if per_token else 1.0
    if not per_token and any(r.has_tokens for r in g_runs + b_runs):
        warnings.append("tokens are logged on one side only: compared per step, not per token")
    cols = sorted({c for r in g_runs + b_runs for c in r.table.columns if c.startswith(COST_PREFIXES)})
    columns = ["wall_s", "tokens", *cols]
    n_steps = min(len(r.table) for r in g_runs + b_runs)
    if n_steps < 5:
        warnings.append(f"a run has only {n_steps} steps: the intervals are unreliable")
    n_med = int(min(n_boot, max(200, 4e6 // max(max(len(r.table) for r in g_runs + b_runs), 1))))
    g = _side(g_runs, columns, per_token, tps_ref, n_boot, n_med, rng)
    b = _side(b_runs, columns, per_token, tps_ref, n_boot, n_med, rng)
    iw = columns.index("wall_s")
    throughput = _throughput(g, b, g_runs, b_runs, per_token, tps_ref, n_boot, warnings)
    step_time = _step_time(g, b, g_runs, b_runs, iw, throughput["per"])
    d_wall = float(b.cost[iw] - g.cost[iw])
    delta_row = partial(_delta_row, g, b, columns, d_wall, throughput["significant"])

    both_phased = all(r.has_phases for r in g_runs) and all(r.has_phases for r in b_runs)
    if not both_phased and any(r.has_phases for r in g_runs + b_runs):
        warnings.append("step phases are logged on one side only: the phase comparison is left out")
    phases = []
    for col in columns:
        if col.startswith("phase:") and (both_phased or col in ("phase:other", "phase:gap")):
            row = {"phase": col.split(":", 1)[1], **delta_row(col)}
            if row["good_s"] == 0 and row["bad_s"] == 0:
                continue
            phases.append(row)
    phases.sort(key=lambda r: -abs(r["delta_s"]))
    events = _events_table(g_runs, b_runs, columns, delta_row)
    causes = _cause_rows(g_runs, b_runs, columns, delta_row, events, float(g.cost[iw]), d_wall,
                         throughput["significant"], both_phased)
    if per_token:
        wl = _workload_change(g_runs, b_runs)
        if wl:
            causes.append(wl)
    return {"throughput": throughput, "step_time": step_time, "phases": phases, "events": events,
            "causes": causes, "detail": {"good_stats": g, "bad_stats": b, "columns": columns}}


def _throughput(g: SideStats, b: SideStats, g_runs: list[RunSteps], b_runs: list[RunSteps], per_token: bool,
                tps_ref: float, n_boot: int, warnings: list[str]) -> dict:
    """The throughput ratio BAD / GOOD with its interval (with ≥ 2 runs a side, also a t interval over runs)."""
    units = {r.tokens_unit for r in g_runs + b_runs}
    unit = f"{units.pop() if len(units) == 1 else 'tokens'}/s" if per_token else "steps/s"
    tp = _ratio_block(g.throughput, b.throughput, g.throughput_boot, b.throughput_boot)
    tp["method"] = "block bootstrap over steps" + (" (runs resampled)" if len(g_runs) > 1 or len(b_runs) > 1 else "")
    run_to_run = len(g_runs) > 1 and len(b_runs) > 1
    if run_to_run:
        # few runs: the hierarchical bootstrap understates run-to-run variance; a t interval on the runs' log
        # throughputs does not. The reported interval is the wider of the two (their union).
        t_int = stats.log_ratio_t(np.array(g.throughput_per_run), np.array(b.throughput_per_run))
        tp["bootstrap_interval"] = [tp["ratio_lo"], tp["ratio_hi"]]
        if t_int is not None:
            tp["runs_t_interval"] = [t_int["ratio_lo"], t_int["ratio_hi"]]
            tp["ratio_lo"] = min(tp["ratio_lo"], t_int["ratio_lo"])
            tp["ratio_hi"] = max(tp["ratio_hi"], t_int["ratio_hi"])
            tp["p_value"] = max(tp["p_value"], t_int["p_value"])
            tp["method"] = ("union of a block bootstrap over steps and runs and a t interval over the runs' log "
                            "throughputs (pooled run-to-run variance)")
    else:
        warnings.append("one run on a side: the interval holds the step-to-step noise within each run, not "
                        "run-to-run variance — repeat runs (--good A1 --good A2 ...) to measure it")
    significant = bool(np.isfinite(tp["ratio_lo"]) and (tp["ratio_lo"] > 1 or tp["ratio_hi"] < 1))
    return {"unit": unit, **tp, "change": tp["ratio"] - 1 if np.isfinite(tp["ratio"]) else math.nan,
            "significant": significant, "n_boot": n_boot,
            "good_per_run": g.throughput_per_run, "bad_per_run": b.throughput_per_run,
            "block_steps": {"good": [r.block for r in g_runs], "bad": [r.block for r in b_runs]},
            "run_to_run": {"measured": run_to_run,
                           "good_cv": _cv(g.throughput_per_run), "bad_cv": _cv(b.throughput_per_run)},
            "per": f"GOOD's {tps_ref:.4g} tokens per step" if per_token else "step"}


def _step_time(g: SideStats, b: SideStats, g_runs: list[RunSteps], b_runs: list[RunSteps], iw: int,
               per: str) -> dict:
    """Median and mean step cost ratios with intervals, p90, Cliff's delta (autocorrelation-deflated)."""
    mean = _ratio_block(float(g.cost[iw]), float(b.cost[iw]), g.cost_boot[:, iw], b.cost_boot[:, iw])
    median = _ratio_block(g.median, b.median, g.median_boot, b.median_boot)
    lag_g = float(np.mean([stats.lag1(r.table["wall_s"].to_numpy()) for r in g_runs]))
    lag_b = float(np.mean([stats.lag1(r.table["wall_s"].to_numpy()) for r in b_runs]))
    delta, p_mw = stats.cliffs_delta(g.per_step_cost, b.per_step_cost, lag_g, lag_b)
    return {"median": median, "mean": mean,
            "p90": {"good": float(np.percentile(g.per_step_cost, 90)),
                    "bad": float(np.percentile(b.per_step_cost, 90))},
            "cliffs_delta": delta, "p_value": p_mw, "lag1": {"good": lag_g, "bad": lag_b}, "per": per}


def _delta_row(g: SideStats, b: SideStats, columns: list[str], d_wall: float, significant: bool, col: str) -> dict:
    """One cost column's change BAD − GOOD (s per step) with its bootstrap interval, p-value and share of the
    change in wall time (when the throughput change is significant)."""
    j = columns.index(col)
    est = float(b.cost[j] - g.cost[j])
    boot = b.cost_boot[:, j] - g.cost_boot[:, j]
    lo, hi = _interval(boot)
    p = stats.bootstrap_p(est, boot)
    return {"good_s": float(g.cost[j]), "bad_s": float(b.cost[j]), "delta_s": est, "delta_lo": lo,
            "delta_hi": hi, "p_value": p,
            "significant": bool(np.isfinite(lo) and (lo > 0 or hi < 0)),
            "share_of_change": est / d_wall if d_wall != 0 and significant else math.nan}


def _cause_rows(g_runs: list[RunSteps], b_runs: list[RunSteps], columns: list[str], delta_row, events: list[dict],
                base: float, d_wall: float, significant: bool, both_phased: bool) -> list[dict]:
    """The causes whose change counts: scored by confidence × their share of the change (when the throughput
    change is significant), else × the impact of their own change; below MIN_SCORE left out."""
    causes = []
    direction = 1.0 if d_wall >= 0 else -1.0
    for col in columns:
        if not col.startswith("cause:"):
            continue
        cid = col.split(":", 1)[1]
        if not both_phased and cid not in (cause_ids.RECOMPILATION, cause_ids.GC_PAUSE, cause_ids.PERIODIC_STALL, cause_ids.BETWEEN_STEPS,
                                           DEFAULT_CAUSE):
            continue
        row = delta_row(col)
        p = row["p_value"]
        rate_p = _cause_rate_p(cid, events, sum(len(r.table) for r in g_runs), sum(len(r.table) for r in b_runs))
        if np.isfinite(rate_p):  # two tests of "BAD has more of it", either suffices (Bonferroni)
            p = min(1.0, 2 * min(p if np.isfinite(p) else 1.0, rate_p))
            row["p_value"] = p
        impact = direction * row["delta_s"] / base if base > 0 else math.nan
        if significant:  # rank by the share of the slowdown (or speed-up) the cause accounts for
            weight = float(np.clip(row["delta_s"] / d_wall, 0.0, 1.0)) if d_wall else 0.0
        else:
            weight = ranking.impact(impact)
        score = ranking.confidence(p) * weight if np.isfinite(p) else 0.0
        if score < MIN_SCORE or (not significant and not p < ALPHA):
            continue
        evidence = _cause_evidence(cid, row, events, d_wall, significant, columns)
        if cid == cause_ids.COLLECTIVE_STRAGGLER and "skew:straggler" in columns:
            evidence.append(_straggler_text(delta_row("skew:straggler"), g_runs, b_runs))
        causes.append({"id": cid, "score": round(float(score), 3), "impact": impact, **row,
                       "evidence": evidence, "changes": [], **advice(cid)})
    return causes


def _rate_p(k_good: int, k_bad: int, n_good: int, n_bad: int) -> float:
    """Poisson rates per step compared: given k_good + k_bad events, k_bad ~ Binomial(n, n_bad / (n_good +
    n_bad)) when the rates are equal (exact, two-sided). NaN without events."""
    if k_good + k_bad == 0 or n_good + n_bad == 0:
        return math.nan
    return stats.binom_two_sided(k_bad, k_good + k_bad, n_bad / (n_good + n_bad))


def _cause_rate_p(cid: str, events: list[dict], n_good: int, n_bad: int) -> float:
    """Rate test of the cause's event kinds taken together (steps holding one); NaN without events."""
    rows = [e for e in events if catalog.cause_of_event(e["kind"]) == cid]
    return _rate_p(sum(e["good_steps_with"] for e in rows), sum(e["bad_steps_with"] for e in rows), n_good, n_bad)


def _cv(values: list[float]) -> float | None:
    return float(np.std(values, ddof=1) / np.mean(values)) if len(values) > 1 and np.mean(values) > 0 else None


def label(cid: str) -> str:
    """A cause's name in a comparison: the catalog title of the causes only a comparison names, else its id."""
    c = catalog.CAUSES.get(cid)
    return c.title if c is not None and c.kind == "regression" else cid.replace("_", " ")


def advice(cid: str) -> dict:
    """The catalog's label, next step, fix and lab for a cause id."""
    c = catalog.CAUSES.get(cid)
    return {"label": label(cid), "next_step": c.next_step if c else "", "fix": c.fix if c else "",
            "notebook": c.notebook if c else "notebooks/40_regression_compare.ipynb"}


def _events_table(g_runs: list[RunSteps], b_runs: list[RunSteps], columns: list[str], delta_row) -> list[dict]:
    kinds = sorted({k for r in g_runs + b_runs for k in r.events["kind"]})
    n_g = sum(len(r.table) for r in g_runs)
    n_b = sum(len(r.table) for r in b_runs)
    rows = []

    def tot(runs: list[RunSteps], kind: str, col: str) -> float:
        return float(sum(r.events.loc[r.events["kind"] == kind, col].sum() for r in runs))

    def cad(runs: list[RunSteps], kind: str) -> float:
        vals = [float(r.events.loc[r.events["kind"] == kind, "cadence_steps"].iloc[0]) for r in runs
                if (r.events["kind"] == kind).any()]
        vals = [v for v in vals if np.isfinite(v)]
        return float(np.median(vals)) if vals else math.nan

    for kind in kinds:
        kg, kb = int(tot(g_runs, kind, "steps_with")), int(tot(b_runs, kind, "steps_with"))
        p = _rate_p(kg, kb, n_g, n_b)
        row = {"kind": kind, "good_events": int(tot(g_runs, kind, "events")),
               "bad_events": int(tot(b_runs, kind, "events")),
               "good_steps_with": kg, "bad_steps_with": kb,
               "good_per_100_steps": 100 * kg / n_g if n_g else math.nan,
               "bad_per_100_steps": 100 * kb / n_b if n_b else math.nan, "rate_p_value": p,
               "good_outside": int(tot(g_runs, kind, "outside")), "bad_outside": int(tot(b_runs, kind, "outside")),
               "good_cadence_steps": cad(g_runs, kind), "bad_cadence_steps": cad(b_runs, kind)}
        col = f"event:{kind}"
        if col in columns:
            d = delta_row(col)
            row.update(good_s_per_step=d["good_s"], bad_s_per_step=d["bad_s"], delta_s=d["delta_s"],
                       delta_lo=d["delta_lo"], delta_hi=d["delta_hi"], p_value=d["p_value"])
        rows.append(row)
    rows.sort(key=lambda r: -abs(r.get("delta_s") or 0.0))
    return rows


def _cause_evidence(cid: str, row: dict, events: list[dict], d_wall: float, significant: bool,
                    columns: list[str]) -> list[str]:
    out = []
    grew = "grew" if row["delta_s"] > 0 else "shrank"
    share = (f" = {row['share_of_change']:.0%} of the {'slowdown' if d_wall > 0 else 'speed-up'}"
             if np.isfinite(row["share_of_change"]) else "")
    out.append(f"{label(cid)}: {fmt_seconds(row['good_s'])} → {fmt_seconds(row['bad_s'])} "
               f"per step, {grew} by {fmt_seconds(abs(row['delta_s']))} (95% CI {fmt_seconds(row['delta_lo'])} to "
               f"{fmt_seconds(row['delta_hi'])}, {fmt_p(row['p_value'])}){share}")
    for e in events:
        if catalog.cause_of_event(e["kind"]) != cid:
            continue
        if e["good_events"] == e["bad_events"] == 0 and not (e["good_outside"] or e["bad_outside"]):
            continue
        outside = ""
        if e["good_outside"] or e["bad_outside"]:
            outside = f"; outside the timed steps {e['good_outside']} → {e['bad_outside']}"
        cadence = ""
        if np.isfinite(e["good_cadence_steps"]) or np.isfinite(e["bad_cadence_steps"]):
            cadence = f"; one every {_every(e['good_cadence_steps'])} → {_every(e['bad_cadence_steps'])} steps"
        secs = ""
        if e.get("delta_s") is not None and np.isfinite(e.get("delta_s", math.nan)):
            secs = f"; {fmt_seconds(e['good_s_per_step'])} → {fmt_seconds(e['bad_s_per_step'])} per step"
        out.append(f"{e['kind']} events: {e['good_events']} → {e['bad_events']} in the timed steps "
                   f"({e['good_per_100_steps']:.3g} → {e['bad_per_100_steps']:.3g} steps per 100 hold one, rate "
                   f"test {fmt_p(e['rate_p_value'])}){secs}{cadence}{outside}")
    phases = [p for p, c in PHASE_CAUSE.items() if c == cid and f"phase:{p}" in columns]
    if phases and cid not in (cause_ids.BETWEEN_STEPS,):
        out.append("measured in phase" + ("s " if len(phases) > 1 else " ") + ", ".join(phases))
    return out


def _straggler_text(skew: dict, g_runs: list[RunSteps], b_runs: list[RunSteps]) -> str:
    """The critical rank's compute beyond the median rank's, and how often the same rank is the critical one."""
    def modal(runs: list[RunSteps]) -> tuple[int, float]:
        ranks = pd.concat([r.table["critical_rank"] for r in runs])
        counts = ranks.value_counts()
        return int(counts.index[0]), float(counts.iloc[0] / len(ranks))

    rg, sg = modal(g_runs)
    rb, sb = modal(b_runs)
    n = max(r.ranks for r in b_runs)
    return (f"of which the slowest rank's compute beyond the median rank's: {fmt_seconds(skew['good_s'])} → "
            f"{fmt_seconds(skew['bad_s'])} per step; the rank everyone waits for is rank {rb} in {sb:.0%} of BAD's steps "
            f"(rank {rg} in {sg:.0%} of GOOD's; {1 / n:.0%} if it rotated at random)")


def _every(n: float) -> str:
    return f"{n:.3g}" if np.isfinite(n) else "–"


def _workload_change(g_runs: list[RunSteps], b_runs: list[RunSteps]) -> dict | None:
    """Tokens per step compared (Welch-like bootstrap over steps): a changed batch is a cause of its own."""
    tg = np.concatenate([r.table["tokens"].to_numpy() for r in g_runs])
    tb = np.concatenate([r.table["tokens"].to_numpy() for r in b_runs])
    mg, mb = float(tg.mean()), float(tb.mean())
    if mg <= 0 or mg == mb:
        return None
    se = math.sqrt(tg.var(ddof=1) / len(tg) + tb.var(ddof=1) / len(tb)) if len(tg) > 1 and len(tb) > 1 else 0.0
    from statistics import NormalDist

    p = float(2 * (1 - NormalDist().cdf(abs(mb - mg) / se))) if se > 0 else 0.0
    change = mb / mg - 1
    score = ranking.confidence(p) * ranking.impact(abs(change)) * 0.5  # explains step time, not throughput
    if score < MIN_SCORE or not p < ALPHA:
        return None
    return {"id": cause_ids.WORKLOAD_CHANGE, "score": round(score, 3), "impact": abs(change), "share_of_change": math.nan,
            "good_s": math.nan, "bad_s": math.nan, "delta_s": math.nan, "delta_lo": math.nan, "delta_hi": math.nan,
            "p_value": p, "significant": p < ALPHA,
            "evidence": [f"tokens per step {mg:.4g} → {mb:.4g} ({change:+.0%}, {fmt_p(p)}): step times are "
                         "compared per token at GOOD's tokens per step"],
            "changes": [], **advice(cause_ids.WORKLOAD_CHANGE)}


def compare_utilization(good_b: list[schema.Bundle], bad_b: list[schema.Bundle], n_boot: int,
                         rng: np.random.Generator, warnings: list[str]) -> dict | None:
    """Without step logs: mean utilization per side (block bootstrap over the fleet-mean series)."""
    def series(b: schema.Bundle) -> np.ndarray | None:
        t = b.telemetry
        if t.empty:
            return None
        col = "util_pct" if t["util_pct"].notna().any() else ("sm_active" if t["sm_active"].notna().any() else None)
        if col is None:
            return None
        vals = t[col] * (100.0 if col == "sm_active" else 1.0)
        dt = t.attrs.get("interval_s") or schema.median_interval_s(t)
        if not (dt and np.isfinite(dt) and dt > 0) or t["time"].isna().any():
            return vals.dropna().to_numpy()
        k = ((t["time"] - t["time"].min()).dt.total_seconds() // dt).astype(np.int64)
        return vals.groupby(k.to_numpy()).mean().dropna().to_numpy()

    sg = [s for s in (series(b) for b in good_b) if s is not None and len(s)]
    sb = [s for s in (series(b) for b in bad_b) if s is not None and len(s)]
    if not sg or not sb:
        warnings.append("nothing to compare: each side needs a step log or GPU telemetry")
        return None
    warnings.append("no step log on both sides: mean GPU utilization is compared instead of throughput "
                    "(utilization is not throughput: a GPU spinning in NCCL reads 100%)")

    def side(ss):
        reps, pts = [], []
        for s in ss:
            sums, n2 = stats.block_bootstrap_sums(s, stats.optimal_block_length(s), n_boot, rng)
            reps.append(sums[:, 0] / n2)
            pts.append(float(s.mean()))
        if len(ss) > 1:
            pick = rng.integers(0, len(ss), size=(n_boot, len(ss)))
            return float(np.mean(pts)), np.stack(reps)[pick, np.arange(n_boot)[:, None]].mean(axis=1), pts
        return pts[0], reps[0], pts

    pg, bg, rg = side(sg)
    pb, bb, rb = side(sb)
    tp = _ratio_block(pg, pb, bg, bb)
    significant = bool(np.isfinite(tp["ratio_lo"]) and (tp["ratio_lo"] > 1 or tp["ratio_hi"] < 1))
    throughput = {"unit": "mean utilization %", **tp, "change": tp["ratio"] - 1, "significant": significant,
                  "n_boot": n_boot, "good_per_run": rg, "bad_per_run": rb,
                  "run_to_run": {"measured": len(sg) > 1 and len(sb) > 1, "good_cv": _cv(rg), "bad_cv": _cv(rb)}}
    return {"throughput": throughput, "step_time": {}, "phases": [], "events": [], "causes": []}
