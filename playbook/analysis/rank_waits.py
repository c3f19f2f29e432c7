"""The time ranks wait for each other in a step's collectives (wall-seconds), from per-rank step tables.

Data-parallel ranks meet in a collective every step, so a step ends on every rank when the slowest rank's work
ends. Two shapes of log show the wait:
- a collective phase each rank times (`collective_waits`): per step, the shortest duration across ranks is the
  transfer every rank does, the rest waiting for the last rank;
- step times that differ across ranks, the same rank slowest step after step (`straggler_waits`): a timer that
  included the wait would read the same on every rank, so these timers cover each rank's own work only, and each
  faster rank waited the difference to the slowest one at every step (a `collective` phase added to its steps).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.analysis.stats import binom_sf
from playbook.analysis.step_pace import steps_per_line
from playbook.analysis.step_times import ALPHA, COLLECTIVE_PHASES, CREEP_MIN

MIN_COMMON_STEPS = 10  # steps every rank logged: fewer cannot tell a persistent straggler from jitter


def collective_waits(steps: pd.DataFrame) -> pd.DataFrame:
    """`steps` with each collective phase cut to its wait: for each step, the shortest duration across ranks is the
    transfer (work every rank does), the rest is waiting for the last rank. One rank: no peers, no wait known."""
    coll = steps["phase"].astype(str).isin(COLLECTIVE_PHASES)
    if not coll.any() or steps.loc[coll, "rank"].nunique() < 2:
        return steps[~coll] if coll.any() else steps
    part = steps[coll]
    wait = part["duration_s"] - part.groupby(["phase", "step"])["duration_s"].transform("min")
    # who waits changes from step to step with the ranks' jitter: only a rank's typical wait beyond the least-waiting
    # rank's is a persistent loss (a straggler the others wait for); the step-to-step rest is noise
    typical = wait.groupby(part["rank"]).transform("median")
    persistent = (typical - typical.groupby(part["rank"]).first().min()).clip(lower=0.0)
    return pd.concat([steps[~coll], part.assign(duration_s=np.minimum(wait, persistent))], ignore_index=True)


def straggler_waits(st: pd.DataFrame, steps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict | None]:
    """(`st`, `steps`, lag) with the waits of the faster ranks added where the ranks' step times show a persistent
    straggler (see the module docstring): the same rank slowest on more steps than rotation explains (binomial
    p < ALPHA, Bonferroni over the ranks), its own time at least CREEP_MIN over its peers' median on the median
    step. Each faster rank's step time grows by its wait, which `steps` holds as its `collective` phase; `lag` is the
    straggler's own steady excess over its peers on the same work, {rank, seconds, steps} (its median step time
    less its peers' median, per common step: its stalls stay its own). Unchanged and None otherwise (one rank,
    collectives timed already, ranks that disagree within their jitter)."""
    ranks = st["rank"].nunique()
    if ranks < 2 or steps["phase"].astype(str).isin(COLLECTIVE_PHASES).any():
        return st, steps, None
    grid = st.pivot_table(index="step", columns="rank", values="duration_s", aggfunc="last").dropna()
    grid = grid[(grid > 0).all(axis=1)]  # (a step printed as 0 s is below the log's resolution: no pace to compare)
    if len(grid) < MIN_COMMON_STEPS:
        return st, steps, None
    d = grid.to_numpy(dtype=np.float64)
    top = np.bincount(d.argmax(axis=1), minlength=d.shape[1])
    slowest = int(top.argmax())
    p = min(1.0, ranks * binom_sf(int(top[slowest]), len(d), 1.0 / ranks))
    # the straggler's own excess over its peers on the same step (the slowest of many ranks' spread over their
    # median is jitter: 8 ranks at 4% read ~6% at every step, a rank 1.5% slower than the rest among them is not late)
    peers = np.median(np.delete(d, slowest, axis=1), axis=1)
    excess = float(np.median((d[:, slowest] - peers) / peers))
    if p >= ALPHA or not excess >= CREEP_MIN or not _kept_pace(st, grid, slowest):
        return st, steps, None
    wait = pd.DataFrame(d.max(axis=1)[:, None] - d, index=grid.index, columns=grid.columns).stack()
    wait = wait[wait > 0].rename("wait").reset_index()
    rows = st.merge(wait, on=["step", "rank"], how="left")["wait"].fillna(0.0).to_numpy()
    st = st.assign(duration_s=st["duration_s"].to_numpy(dtype=np.float64) + rows)
    first = steps[steps["phase"] == "step"].drop_duplicates(["rank", "step"], keep="last")
    added = first.merge(wait, on=["step", "rank"]).assign(phase="collective")
    added = added.assign(duration_s=added.pop("wait"))[steps.columns]
    own = float(np.median(d[:, slowest]) - np.median(peers))  # against its peers' pace, as their waits are
    lag = {"rank": grid.columns[slowest], "seconds": max(own, 0.0) * float(steps_per_line(grid.index)[0].sum()),
           "steps": [int(x) for x in grid.index]}
    return st, pd.concat([steps, added], ignore_index=True), lag


def late_rank_lag(st: pd.DataFrame, steps: pd.DataFrame, late: list[str]) -> dict | None:
    """The late rank's own time beyond its peers' on the same work where the ranks time their collectives, as
    `straggler_waits`' lag: {rank, seconds, steps}; `steps` with its collective phases as logged (not cut to their
    waits by `collective_waits`). Its peers' waits for it are the collective bucket; if it kept
    their pace, its own excess would go too (a step ends when its work does). Per common step, the rank's work (step
    time less its collective phases) less the median of its peers' work; the median over steps, times the steps.
    None unless exactly one rank is late (`late_ranks`) with an excess on MIN_COMMON_STEPS common steps that is
    persistent (sign test)."""
    if len(late) != 1:
        return None
    rank = int(late[0].removeprefix("rank "))
    coll = steps[steps["phase"].astype(str).isin(COLLECTIVE_PHASES)]
    waited = coll.groupby(["step", "rank"])["duration_s"].sum()
    step = st.pivot_table(index="step", columns="rank", values="duration_s", aggfunc="last")
    work = (step - waited.unstack("rank").reindex_like(step).fillna(0.0)).dropna()
    if rank not in work.columns or work.shape[1] < 2 or len(work) < MIN_COMMON_STEPS:
        return None
    d = work.to_numpy(dtype=np.float64)
    at = list(work.columns).index(rank)
    excess = d[:, at] - np.median(np.delete(d, at, axis=1), axis=1)
    # persistent, not jitter: the rank's work above its peers' median on more steps than a coin gives (sign test at
    # ALPHA, Bonferroni over the ranks it was picked from: the least-waiting rank of a healthy run is chance)
    p = min(1.0, d.shape[1] * binom_sf(int((excess > 0).sum()), len(excess), 0.5))
    own = float(np.median(excess))
    if p >= ALPHA or not own > 0:
        return None
    return {"rank": rank, "seconds": own * float(steps_per_line(work.index)[0].sum()),
            "steps": [int(x) for x in work.index]}


def late_ranks(waits: dict[str, float], ranks: list[int]) -> list[str]:
    """The ranks ("rank N") that wait at most a tenth of the most any rank waits in the collectives (`waits`: name ->
    seconds): who waits is not who is late, the ranks that (nearly) never wait are the ones the others wait for.
    [] when that is every rank or none."""
    most = max(waits.values(), default=0.0)
    late = [n for n in (f"rank {r}" for r in ranks if r >= 0) if waits.get(n, 0.0) <= 0.1 * most]
    return late if 0 < len(late) < len(ranks) else []


def _kept_pace(st: pd.DataFrame, grid: pd.DataFrame, slowest: int) -> bool:
    """Whether the faster ranks kept the straggler's pace, as ranks that wait for it in a collective do: unless every
    rank's lines are stamped, assumed (a timer alone cannot say); with stamps, the faster ranks' lines advance per
    step (over the common steps: start to end, robust to the stamps' tick) nearer the straggler's than their own
    timers' pace. Independent processes (no collective between them) each keep their own pace: no one waited."""
    if st["time"].isna().any():
        return True
    secs = (st["time"] - st["time"].min()).dt.total_seconds()
    at = st.assign(secs=secs).pivot_table(index="step", columns="rank", values="secs", aggfunc="last")
    at = at.reindex(index=grid.index, columns=grid.columns).to_numpy(dtype=np.float64)
    span = float(grid.index[-1] - grid.index[0])
    if not span > 0 or not np.isfinite(at[[0, -1]]).all():
        return True
    pace = (at[-1] - at[0]) / span  # seconds per step, each rank's lines
    own = np.median(grid.to_numpy(dtype=np.float64), axis=0)  # seconds per step, each rank's timer
    fast = np.arange(len(own)) != slowest
    return bool(pace[slowest] - np.median(pace[fast]) < 0.5 * (own[slowest] - np.median(own[fast])))
