"""Cross-rank straggler analysis: who the collectives wait for, by how much, and whether it is always the same rank.

Inputs: per-rank Kineto traces (the `trace` table) and/or the `steps` table (per-rank phases, with a "collective"
phase as the labs record it).

- Collectives in traces: NCCL kernels (`ncclKernel_*`, NCCL < 2.19, and `ncclDevKernel_*`, newer) are matched
  across ranks by type (AllReduce, SendRecv, ...) and order of appearance. Rank clocks are not aligned (they differ
  by milliseconds), but a collective completes on all ranks at nearly the same moment, so each instance is aligned
  on its end: the shortest duration across ranks is the transfer, the rest of each rank's duration is waiting for
  the last arrival, and the spread of durations is the arrival skew. The rank that waits least arrived last: the
  straggler.
- Straggler score (NVIDIA resiliency extension): reference median ÷ the rank's median compute time per step (NCCL
  kernels left out), against the fastest rank and against the median rank; a rank scoring below 0.75 is flagged.
- Persistence: in how many steps the same rank is the slowest, against 1/world_size expected if the slowest rank
  rotated at random; a one-sided binomial tail with a Bonferroni correction over ranks gives the p-value.
  Persistent (p < 0.01) with slower compute on a rank other than 0 → hardware-like (throttling, a slow link, a bad
  host); persistent with normal compute (late for host reasons) or on rank 0 → software-like (rank-specific host
  work such as rank-0 checkpointing, logging, evaluation); several different slowest ranks and
  p ≥ 0.05 → software-like (the data decides who is slow: padding, uneven batches, loader hiccups).
- Tokens: when the steps table carries tokens per step, the rank correlation between a rank's compute time and its
  token count says whether the work itself is uneven (padding / packing imbalance).

All times µs in trace-based frames, seconds in steps-based ones. Pure functions: no printing, no I/O.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from playbook.analysis.intervals import merge_intervals
from playbook.analysis.kineto.hta import COMM_KERNEL_RE, GPU_WORK_CATS, kernel_kind, profiler_steps
from playbook.analysis.stats import binom_sf
from playbook.core.jsonable import json_float
from playbook.knowledge import ids as cause_ids

COLLECTIVE_RE = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z0-9]+)")
FLAG_BELOW = 0.75  # straggler score threshold (NVIDIA resiliency extension)
PERSISTENT_P = 0.01
ROTATING_P = 0.05
# ranks' token counts must differ by this much within a step (median (max - min) / mean) before work following them
# names padding: a rank that ran 5% longer (a moderate straggler) with the same batch ± 1% is not padded; tokens
# read as a rate × the step's own time (torchtitan's tps) vary only by rounding and follow the time by construction
TOKEN_SPREAD = 0.05
EXPOSED_MODERATE, EXPOSED_HIGH = 0.03, 0.15  # TF profiler: exposed-collective share of step time
COMPUTE_PHASES = ("fwd", "bwd", "optimizer", "compute")
INPUT_RATIO = 5.0  # an input straggler waits for its batches this many times longer (by share of step) than any other
STEP_MATCH = 0.1  # ... while the others' steps are this close to its own (they wait for it in the collectives)


def collective_type(name: str) -> str | None:
    """"AllReduce" for ncclKernel_AllReduce_RING_LL_Sum_float(...) or ncclDevKernel_AllReduce_Sum_f32_RING_LL;
    None for anything that is not an NCCL kernel."""
    m = COLLECTIVE_RE.match(name)
    return m.group(1) if m else None


# ------------------------------------------------------------------ traces

def collectives(trace: pd.DataFrame) -> pd.DataFrame:
    """NCCL kernels per rank: rank, type, seq (0-based order within (rank, type)), ts_us, dur_us, end_us, step."""
    cols = ["rank", "type", "seq", "ts_us", "dur_us", "end_us", "step"]
    k = trace[trace["cat"].astype(str).isin(GPU_WORK_CATS) & (trace["stream"] != -1)]
    names = k["name"].astype(str)
    k = k[names.str.match(COMM_KERNEL_RE)]
    if k.empty:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame({"rank": k["rank"].to_numpy(),
                        "type": k["name"].astype(str).map(collective_type).to_numpy(),
                        "ts_us": k["ts_us"].to_numpy(), "dur_us": k["dur_us"].to_numpy()})
    out["end_us"] = out["ts_us"] + out["dur_us"]
    out = out.sort_values(["rank", "type", "ts_us"], kind="stable").reset_index(drop=True)
    out["seq"] = out.groupby(["rank", "type"]).cumcount()
    launch_step = _launch_step(trace, k)
    out["step"] = out.set_index(["rank", "ts_us"]).index.map(launch_step).fillna(-1).astype("int64")
    return out[cols]


def _launch_step(trace: pd.DataFrame, gpu_rows: pd.DataFrame) -> dict:
    """{(rank, ts_us) of a GPU row: ProfilerStep number of the CPU call that launched it (or that it runs in)}."""
    steps = profiler_steps(trace)
    if steps.empty:
        return {}
    rt = trace[(trace["stream"] == -1) & (trace["correlation"] >= 0)]
    launch = {(r, c): ts for r, c, ts in zip(rt["rank"], rt["correlation"], rt["ts_us"], strict=True)}
    out = {}
    for rank, grp in gpu_rows.groupby("rank"):
        st = steps[steps["rank"] == rank].sort_values("ts_us")
        s0, s1, num = st["ts_us"].to_numpy(), (st["ts_us"] + st["dur_us"]).to_numpy(), st["step"].to_numpy()
        at = np.array([launch.get((rank, c), t) for c, t in zip(grp["correlation"], grp["ts_us"], strict=True)])
        idx = np.searchsorted(s0, at, side="right") - 1
        ok = (idx >= 0) & (s1[np.clip(idx, 0, None)] > at) if len(s0) else np.zeros(len(at), bool)
        for t, i, good in zip(grp["ts_us"], idx, ok, strict=True):
            out[(rank, t)] = int(num[i]) if good else -1
    return out


def collective_waits(trace: pd.DataFrame) -> pd.DataFrame:
    """One row per (collective instance, rank): type, seq, step, rank, dur_us, transfer_us (shortest duration of
    the instance across ranks), wait_us (dur_us − transfer_us), skew_us (longest − shortest), straggler (True for
    the rank that waits least). Only instances seen on every rank that has collectives; `attrs["warnings"]` says
    when ranks launched different numbers of a collective type (the extra tail is left out)."""
    c = collectives(trace)
    cols = ["type", "seq", "step", "rank", "dur_us", "transfer_us", "wait_us", "skew_us", "straggler"]
    warnings: list[str] = []
    if c.empty or c["rank"].nunique() < 2:
        out = pd.DataFrame(columns=cols)
        out.attrs["warnings"] = warnings
        return out
    n_ranks = c["rank"].nunique()
    counts = c.groupby(["type", "rank"]).size().unstack(fill_value=0)
    for typ, row in counts.iterrows():
        if row.nunique() > 1:
            warnings.append(f"collectives: ranks launched different numbers of {typ} kernels "
                            f"({row.min()}–{row.max()}); matched the first {row.min()} by order")
    per = c.groupby(["type", "seq"])["rank"].transform("size")
    c = c[per == n_ranks].copy()
    g = c.groupby(["type", "seq"])["dur_us"]
    c["transfer_us"] = g.transform("min")
    c["wait_us"] = c["dur_us"] - c["transfer_us"]
    c["skew_us"] = g.transform("max") - c["transfer_us"]
    first_min = c.loc[g.idxmin(), ["type", "seq", "rank"]]
    c["straggler"] = False
    c = c.set_index(["type", "seq", "rank"])
    c.loc[list(first_min.itertuples(index=False, name=None)), "straggler"] = True
    c = c.reset_index()
    # one step number per instance: the most common one among ranks
    c["step"] = c.groupby(["type", "seq"])["step"].transform(lambda s: s.mode().iloc[0])
    out = c.sort_values(["step", "type", "seq", "rank"]).reset_index(drop=True)[cols]
    out.attrs["warnings"] = warnings
    return out


def rank_compute(trace: pd.DataFrame) -> pd.DataFrame:
    """Per (rank, step): compute_us (union of computation kernels, NCCL/copies/syncs left out) and step_us.

    Without ProfilerStep annotations each rank's whole trace is one step (-1) and step_us is its GPU span.
    """
    rows = []
    gpu = trace[trace["cat"].astype(str).isin(GPU_WORK_CATS) & (trace["stream"] != -1)]
    kinds = gpu["name"].astype(str).map(_kind_cached)
    comp = gpu[(kinds == "computation").to_numpy()]
    steps = profiler_steps(trace)
    step_of = _launch_step(trace, comp) if not steps.empty else {}
    for rank, g in comp.groupby("rank"):
        st = steps[steps["rank"] == rank]
        num = np.array([step_of.get((rank, t), -1) for t in g["ts_us"]]) if len(st) else np.full(len(g), -1)
        ts, end = g["ts_us"].to_numpy(), (g["ts_us"] + g["dur_us"]).to_numpy()
        dur_of = dict(zip(st["step"], st["dur_us"], strict=True))
        for step in (st["step"].tolist() if len(st) else [-1]):
            sel = num == step
            s, e = merge_intervals(ts[sel], end[sel])
            span = dur_of.get(step, float(end.max() - ts.min()) if len(ts) else np.nan)
            rows.append((int(rank), int(step), float(np.sum(e - s)), float(span)))
    return pd.DataFrame(rows, columns=["rank", "step", "compute_us", "step_us"])


_KINDS: dict[str, str] = {}


def _kind_cached(name: str) -> str:
    kind = _KINDS.get(name)
    if kind is None:
        kind = _KINDS.setdefault(name, kernel_kind(name))
    return kind


# ------------------------------------------------------------------ scores and statistics

def straggler_scores(per_step: pd.DataFrame, value: str = "compute") -> pd.DataFrame:
    """Per rank: median of `value` per step, score_vs_fastest and score_vs_median (reference median ÷ the rank's
    median, ≤ 1 for the fastest rank), score_vs_own_best (the rank's best step ÷ its median) and flagged (score
    against the median rank below 0.75; with fewer than three ranks the median is just the mean of the pair, so
    the fastest rank is the reference). `per_step` has columns rank, step, `value`."""
    med = per_step.groupby("rank")[value].median()
    best = per_step.groupby("rank")[value].min()
    out = pd.DataFrame({"rank": med.index.astype(int), "median": med.to_numpy()})
    positive = med[med > 0]
    fastest = float(positive.min()) if len(positive) else np.nan
    typical = float(positive.median()) if len(positive) else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        out["score_vs_fastest"] = fastest / out["median"].where(out["median"] > 0)
        out["score_vs_median"] = (typical / out["median"].where(out["median"] > 0)).clip(upper=None)
        out["score_vs_own_best"] = best.to_numpy() / out["median"].where(out["median"] > 0)
    reference = "score_vs_median" if len(positive) >= 3 else "score_vs_fastest"
    out["flagged"] = out[reference] < FLAG_BELOW
    return out


def persistence(slowest: pd.Series, world_size: int) -> dict:
    """Is the slowest rank the same step after step? `slowest`: the slowest rank of each step.

    Returns {steps, modal_rank, count, fraction, expected_fraction (1/world_size), distinct, p_value, verdict}:
    p_value is the chance that some rank is slowest in at least `count` of `steps` if the slowest rank were drawn
    at random each step (binomial tail × world_size, Bonferroni). verdict: "persistent" (hardware-like, p < 0.01),
    "rotating" (software-like: several different slowest ranks, p ≥ 0.05, and enough steps that a persistent rank
    would have been detected), else "undetermined".
    """
    s = pd.Series(slowest).dropna().astype(int)
    n, w = len(s), max(int(world_size), 2)
    if n == 0:
        return {"steps": 0, "modal_rank": None, "count": 0, "fraction": None, "expected_fraction": 1 / w,
                "distinct": 0, "p_value": None, "verdict": "undetermined"}
    counts = s.value_counts()
    modal, k = int(counts.index[0]), int(counts.iloc[0])
    p = min(1.0, w * binom_sf(k, n, 1.0 / w))
    # could `n` steps have shown persistence at all? (a rank slowest every time must reach p < PERSISTENT_P)
    powered = w * binom_sf(n, n, 1.0 / w) < PERSISTENT_P
    if p < PERSISTENT_P:
        verdict = "persistent"
    elif counts.size >= 2 and p >= ROTATING_P and powered:
        verdict = "rotating"
    else:
        verdict = "undetermined"
    return {"steps": n, "modal_rank": modal, "count": k, "fraction": k / n, "expected_fraction": 1 / w,
            "distinct": int(counts.size), "p_value": p, "verdict": verdict}


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman rank correlation and its two-sided p-value (Fisher z with the 1.06/√(n−3) standard error)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = len(x)
    if n < 4 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return np.nan, np.nan
    rx, ry = pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy()
    rho = float(np.corrcoef(rx, ry)[0, 1])
    z = math.atanh(max(min(rho, 0.999999), -0.999999)) * math.sqrt((n - 3) / 1.06)
    return rho, float(math.erfc(abs(z) / math.sqrt(2)))


# ------------------------------------------------------------------ steps table

def steps_per_rank(steps: pd.DataFrame) -> pd.DataFrame:
    """Per (rank, step) from the steps table: step_s, compute_s (fwd+bwd+optimizer+compute), collective_s,
    collective_wait_s (collective_s − the step's shortest collective_s across ranks), tokens, data_s (the wait for
    the batch)."""
    cols = ["rank", "step", "step_s", "compute_s", "collective_s", "collective_wait_s", "tokens", "data_s"]
    if steps is None or len(steps) == 0:
        return pd.DataFrame(columns=cols)
    piv = steps.pivot_table(index=["rank", "step"], columns="phase", values="duration_s", aggfunc="sum")
    out = pd.DataFrame(index=piv.index)
    out["step_s"] = piv["step"] if "step" in piv else piv.sum(axis=1)
    present = [p for p in COMPUTE_PHASES if p in piv]
    out["compute_s"] = piv[present].sum(axis=1, min_count=1) if present else np.nan
    out["collective_s"] = piv["collective"] if "collective" in piv else np.nan
    out["data_s"] = piv["data"] if "data" in piv else np.nan
    out["tokens"] = steps.groupby(["rank", "step"])["tokens"].max() if "tokens" in steps else np.nan
    out = out.reset_index()
    out["collective_wait_s"] = out["collective_s"] - out.groupby("step")["collective_s"].transform("min")
    return out[cols]


def input_straggler(per_step: pd.DataFrame) -> dict | None:
    """One rank waiting for its batches while the others, with batches at hand, take as long a step: they wait for
    it in the collectives. {rank, data_share (its median wait ÷ its step), others_data_share (their largest), step_ratio
    (the others' median step ÷ its median step)}; None without data waits on ≥ 2 ranks or without such a rank."""
    d = per_step.dropna(subset=["data_s", "step_s"])
    d = d[d["step_s"] > 0]
    if d["rank"].nunique() < 2:
        return None
    by = d.groupby("rank").agg(data=("data_s", "median"), step=("step_s", "median"))
    by["share"] = by["data"] / by["step"]
    rank = int(by["share"].idxmax())
    others = by.drop(index=rank)
    share, rest = float(by.loc[rank, "share"]), float(others["share"].max())
    ratio = float(others["step"].median() / by.loc[rank, "step"])
    if share < EXPOSED_MODERATE or share < INPUT_RATIO * max(rest, 0.01) or not 1 - STEP_MATCH <= ratio <= 1 + STEP_MATCH:
        return None
    return {"rank": rank, "data_share": json_float(share), "others_data_share": json_float(rest),
            "step_ratio": json_float(ratio)}


def slowest_per_step(per_step: pd.DataFrame, wait: str, work: str) -> pd.Series:
    """The slowest rank of each step (index: step): the one that waits least in collectives when `wait` is
    known on ≥ 2 ranks, else the one with the most `work`."""
    out = {}
    for step, g in per_step.groupby("step"):
        w = g.dropna(subset=[wait]) if wait in g else g.iloc[0:0]
        if len(w) >= 2 and w[wait].max() > 0:
            out[step] = int(w.loc[w[wait].idxmin(), "rank"])
        elif work in g and g[work].notna().sum() >= 2:
            out[step] = int(g.loc[g[work].idxmax(), "rank"])
    return pd.Series(out, dtype="float64")


# ------------------------------------------------------------------ summary for `diagnose`

def _scores_json(scores: pd.DataFrame, scale: float, unit: str) -> list[dict]:
    return [{"rank": int(r.rank), f"median_compute_{unit}": json_float(r.median * scale), "score_vs_fastest":
             json_float(r.score_vs_fastest), "score_vs_median": json_float(r.score_vs_median), "score_vs_own_best":
             json_float(r.score_vs_own_best), "flagged": bool(r.flagged)} for r in scores.itertuples()]


def _trace_summary(bundle: Any) -> dict | None:
    trace = bundle.trace
    if trace is None or len(trace) == 0 or trace["rank"].nunique() < 2:
        return None
    meta = (bundle.meta or {}).get("kineto", {})
    world = max([m.get("world_size") or 0 for m in meta.values() if isinstance(m, dict)] + [trace["rank"].nunique()])
    waits = collective_waits(trace)
    comp = rank_compute(trace)
    scores = straggler_scores(comp, "compute_us") if len(comp) else pd.DataFrame()
    res: dict[str, Any] = {"ranks": sorted(int(r) for r in trace["rank"].unique()), "world_size": int(world),
                           "warnings": list(waits.attrs.get("warnings", []))}
    res["scores"] = _scores_json(scores, 1e-3, "ms") if len(scores) else []
    if len(waits):
        inst = waits.groupby(["type", "seq"]).agg(skew=("skew_us", "first"), step=("step", "first"))
        strag = waits[waits["straggler"]]["rank"].value_counts()
        total = waits["dur_us"].sum()
        res["collectives"] = {
            "instances": int(len(inst)), "types": sorted(waits["type"].unique().tolist()),
            "median_skew_ms": json_float(inst["skew"].median() / 1e3), "max_skew_ms": json_float(inst["skew"].max() / 1e3),
            "wait_share": json_float(waits["wait_us"].sum() / total if total > 0 else np.nan),
            "straggler_counts": {str(int(k)): int(v) for k, v in strag.items()},
            "wait_ms_by_rank": {str(int(k)): json_float(v / 1e3) for k, v in waits.groupby("rank")["wait_us"].sum().items()},
        }
        # waiting inside collectives as a share of each rank's step time
        step_us = comp.groupby("rank")["step_us"].sum() if len(comp) else pd.Series(dtype=float)
        by_rank = waits.groupby("rank")["wait_us"].sum()
        share = (by_rank / step_us.reindex(by_rank.index)).replace([np.inf, -np.inf], np.nan).dropna()
        res["collectives"]["wait_share_of_step"] = json_float(share.median()) if len(share) else None
        res["collectives"]["least_waiting_rank"] = int(by_rank.idxmin())
        # slowest rank per step: the one that waits least in that step's collectives
        per_step = waits[waits["step"] >= 0].groupby(["step", "rank"])["wait_us"].sum().reset_index()
        slow = slowest_per_step(per_step, "wait_us", "none")
        res["persistence"] = {**persistence(slow, len(res["ranks"])), "unit": "steps"}
    else:
        res["collectives"] = None
        slow = slowest_per_step(comp.rename(columns={"compute_us": "work"}), "none", "work") if len(comp) else []
        res["persistence"] = {**persistence(pd.Series(slow), len(res["ranks"])), "unit": "steps"}
    return res


def _steps_summary(bundle: Any) -> dict | None:
    steps = getattr(bundle, "steps", None)
    if steps is None or len(steps) == 0 or steps["rank"].nunique() < 2:
        return None
    per = steps_per_rank(steps)
    work = "compute_s" if per["compute_s"].notna().any() else "step_s"
    world = int(steps["rank"].nunique())
    scores = straggler_scores(per.rename(columns={work: "value"}), "value")
    res: dict[str, Any] = {"ranks": sorted(int(r) for r in per["rank"].unique()), "world_size": world,
                           "work": work, "scores": _scores_json(scores, 1e3, "ms")}
    if per["collective_s"].notna().any():
        inst = per.groupby("step")["collective_s"].agg(lambda s: s.max() - s.min())
        by_rank = per.groupby("rank")[["collective_wait_s", "step_s"]].sum()
        share = (by_rank["collective_wait_s"] / by_rank["step_s"]).replace([np.inf, -np.inf], np.nan).dropna()
        res["collectives"] = {"steps": int(len(inst)), "median_skew_ms": json_float(inst.median() * 1e3),
                              "max_skew_ms": json_float(inst.max() * 1e3),
                              "wait_share": json_float(per["collective_wait_s"].sum() / per["collective_s"].sum()),
                              "wait_share_of_step": json_float(share.median()) if len(share) else None,
                              "least_waiting_rank": int(by_rank["collective_wait_s"].idxmin())}
    else:
        res["collectives"] = None
    res["input"] = input_straggler(per)
    slow = slowest_per_step(per, "collective_wait_s" if res["collectives"] else "none", work)
    res["persistence"] = {**persistence(slow, world), "unit": "steps"}
    tok = per.dropna(subset=["tokens"])
    if len(tok) >= 4 and tok["tokens"].nunique() > 1:
        # within-step comparison across ranks: remove each step's mean so step-to-step drift does not count
        x = tok["tokens"] - tok.groupby("step")["tokens"].transform("mean")
        y = tok[work] - tok.groupby("step")[work].transform("mean")
        rho, p = spearman(x.to_numpy(), y.to_numpy())
        rho_all, p_all = spearman(tok["tokens"].to_numpy(), tok[work].to_numpy())
        g = tok.groupby("step")["tokens"]
        spread = float(((g.transform("max") - g.transform("min")) / g.transform("mean").abs()).median())
        res["tokens"] = {"rho_within_step": json_float(rho), "p_within_step": json_float(p, 6), "rho_all": json_float(rho_all),
                         "p_all": json_float(p_all, 6), "pairs": int(len(tok)), "spread": json_float(spread, 4)}
    else:
        res["tokens"] = None
    return res


def summarize(bundle: Any) -> dict | None:
    """JSON-ready cross-rank summary for `playbook diagnose` (the `ranks` section); None without ≥ 2 ranks.

    Keys:
      trace / steps     per source (None when that source has < 2 ranks):
        ranks, world_size
        scores          [{rank, median_compute_ms, score_vs_fastest, score_vs_median, score_vs_own_best, flagged}]
                        flagged: score_vs_median < 0.75 (NVIDIA resiliency extension's threshold)
        collectives     trace: {instances, types, median_skew_ms, max_skew_ms, wait_share (waiting ÷ collective
                        kernel time), wait_share_of_step (median over ranks of waiting ÷ step time),
                        least_waiting_rank, straggler_counts {rank: instances it was last to}, wait_ms_by_rank};
                        steps: {steps, median_skew_ms, max_skew_ms, wait_share, wait_share_of_step,
                        least_waiting_rank}; None without collectives
        persistence     {steps, unit (steps|collectives), modal_rank, count, fraction, expected_fraction,
                        distinct, p_value, verdict: persistent|rotating|undetermined}
        tokens          (steps only) {rho_within_step, p_within_step, rho_all, p_all, pairs, spread}: Spearman
                        correlation of per-step work with tokens, and the ranks' median relative token spread
                        within a step (padding is named from TOKEN_SPREAD on), or None
        warnings        (trace only) collective matching notes
      warnings          notes for the user (e.g. collectives matched on fewer instances than some ranks ran)
      findings          [{hypothesis, level: moderate|high, rank, evidence, nature: hardware-like|software-like|
                        unknown}]: collective_straggler when a rank is flagged or waiting in collectives is ≥ 3 %
                        (moderate) / ≥ 15 % (high) of step time; padding_imbalance when work follows tokens
                        (ρ ≥ 0.5, p < 0.01)
    """
    tr, st = _trace_summary(bundle), _steps_summary(bundle)
    if tr is None and st is None:
        return None
    findings: list[dict] = []
    for label, part in (("trace", tr), ("steps", st)):
        if part is not None:
            findings += _findings(label, part)
    warnings = list((tr or {}).get("warnings", []))
    return {"trace": tr, "steps": st, "findings": findings, "warnings": warnings}


def _findings(label: str, part: dict) -> list[dict]:
    out = []
    pers = part.get("persistence") or {}
    verdict = pers.get("verdict")
    nature = {"persistent": "hardware-like", "rotating": "software-like"}.get(verdict, "unknown")
    coll = part.get("collectives") or {}
    flagged = [s for s in part.get("scores", []) if s["flagged"]]
    waiting = coll.get("wait_share_of_step")
    wait_level = "high" if (waiting or 0) >= EXPOSED_HIGH else "moderate" if (waiting or 0) >= EXPOSED_MODERATE \
        else None
    if flagged or wait_level:
        worst = min(flagged, key=lambda s: s["score_vs_median"]) if flagged else None
        rank = worst["rank"] if worst else (pers.get("modal_rank") if verdict == "persistent"
                                            else coll.get("least_waiting_rank"))
        bits = []
        if worst:
            bits.append(f"rank {rank} computes at {worst['score_vs_median']:.2f}× the median rank's speed "
                        f"(a score < 0.75 flags a straggler)")
        if waiting is not None:
            bits.append(f"ranks wait for the last arrival inside collectives for a median {100 * waiting:.1f}% of "
                        f"step time (median skew {coll.get('median_skew_ms')} ms, max {coll.get('max_skew_ms')} ms"
                        + (f"; rank {coll['least_waiting_rank']} waits least: it arrives last"
                           if coll.get("least_waiting_rank") is not None else "") + ")")
        if pers.get("steps", 0) >= 2:
            bits.append(f"rank {pers['modal_rank']} is slowest in {pers['count']}/{pers['steps']} steps "
                        f"(expected {pers['expected_fraction']:.2f} if it rotated; p = {pers['p_value']:.3g}: "
                        f"{verdict}, {nature})")
        else:
            bits.append("one profiled step: too few to tell a persistent straggler from a rotating one")
        if nature == "hardware-like" and (not worst or rank == 0):
            # persistent but its compute is as fast as its peers' (it arrives late for host-side reasons), or it is
            # rank 0, whose rank-only work (checkpoint, logging, evaluation) is the first suspect: software
            nature = "software-like"
            bits.append(f"rank {rank}'s kernels are not slower than its peers'" if not worst else
                        "it is rank 0: rank-0-only work (checkpoint saving, logging, evaluation) comes first")
        level = "high" if (worst and worst["score_vs_median"] < 0.5) or wait_level == "high" else "moderate"
        out.append({"hypothesis": cause_ids.COLLECTIVE_STRAGGLER, "level": level, "rank": rank, "nature": nature,
                    "share": waiting,
                    "evidence": f"{label}: " + "; ".join(bits)})
    inp = part.get("input")
    if inp and not out:
        share = inp["data_share"]
        out.append({"hypothesis": cause_ids.COLLECTIVE_STRAGGLER, "level": "high" if share >= EXPOSED_HIGH else
                    "moderate", "rank": inp["rank"], "nature": "software-like", "share": share, "evidence": (
                        f"{label}: rank {inp['rank']} waits for its batches {share:.0%} of its step while the other ranks "
                        f"wait at most {inp['others_data_share']:.0%} of theirs, yet their steps take as long "
                        f"({inp['step_ratio']:.2f}× its own): they wait for rank {inp['rank']} in the collectives, so "
                        f"its input wait is lost on every rank — an input straggler (its loader, storage or host)")})
    tokens = part.get("tokens")
    if tokens and tokens.get("rho_within_step") is not None and tokens["rho_within_step"] >= 0.5 \
            and tokens.get("p_within_step") is not None and tokens["p_within_step"] < 0.01 \
            and (tokens.get("spread") or 0.0) >= TOKEN_SPREAD:
        out.append({"hypothesis": cause_ids.PADDING_IMBALANCE, "level": "high" if tokens["rho_within_step"] >= 0.8
                    else "moderate", "rank": None, "nature": "software-like", "evidence": (
                        f"{label}: a rank's step work follows its token count (Spearman ρ = "
                        f"{tokens['rho_within_step']:.2f} within steps over {tokens['pairs']} rank-steps, "
                        f"p = {tokens['p_within_step']:.2g}; their token counts differ by a median "
                        f"{tokens['spread']:.0%} within a step): uneven batches decide who is slow")})
    return out
