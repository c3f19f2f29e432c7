"""Stragglers in GPU telemetry, across signals: a GPU low while most of its peers are high.

utilization.gpu counts any kernel, so an NCCL kernel spinning while it waits reads 100%. A GPU that is low while
≥ 75% of its peers are high is a straggler candidate; its peers are *waiting* for it when their power (or SM
activity) during those moments is clearly below their power when everyone is busy. Whether the same GPU is the
odd one out every time (binomial test against 1/G) separates a persistent (hardware-like or rank-specific)
straggler from a rotating (data-dependent, software) one. (Stragglers in profiler traces and step tables:
playbook.analysis.rank_stragglers.)
"""

from __future__ import annotations

import math

import numpy as np

from playbook.analysis.intervals import true_runs
from playbook.analysis.oscillation import ALPHA
from playbook.analysis.oscillation.levels import two_levels
from playbook.analysis.series import GAP_FACTOR, GpuSeries, hold_last, row_percentile
from playbook.analysis.stats import binom_sf

POWER_DROP_MIN = 0.15  # peers' power (or SM activity) ≥ 15% below their all-busy level: they are waiting
PEERS_HIGH = 0.75  # a straggler is low while at least this share of its peers is high


def peer_stragglers(series: GpuSeries, util: np.ndarray, valid: np.ndarray, dt: float, t0: float, n_bins: int,
                    has: dict) -> tuple[list[dict], dict | None]:
    """GPUs low while most peers are high; whether peers wait (power / SM activity) and whether it persists.

    `util`, `valid`: the (G × n_bins) utilization grid from t0 in bins of dt (series.grid_means) and where it is
    finite; `has[column]`: whether the series holds that metric. Returns (persistent stragglers, rotating
    summary or None): each straggler {gpu, episodes, time_share, share_of_all, persistence_p, waiting,
    waiting_p, peer_work_drop, peer_work_odd, peer_work_base, signal, first_s, peer_util_pct}."""
    g_count = util.shape[0]
    if g_count < 3 or n_bins < 4:
        return [], None
    thr = np.full(g_count, 50.0)
    for g in range(g_count):
        lv = two_levels(util[g][valid[g]])
        if lv.bimodal:
            thr[g] = lv.threshold
    filled, fvalid = hold_last(util, valid, int(GAP_FACTOR))
    high = (filled >= thr[:, None]) & fvalid
    low = (filled < thr[:, None]) & fvalid
    valid = fvalid
    n_valid = valid.sum(0)
    n_high = high.sum(0)
    peers_valid = n_valid[None, :] - valid
    odd = low & ((n_high[None, :] - high) >= PEERS_HIGH * peers_valid) & (peers_valid >= 2)
    all_high = (n_high == n_valid) & (n_valid >= max(2, g_count // 2))
    work_col = "sm_active" if has["sm_active"] else ("power_w" if has["power_w"] else None)
    work = _peer_work(series, work_col, high, dt, t0, n_bins) if work_col is not None else None
    episodes = _straggler_dips(odd, high)
    total = sum(len(s) for s, _ in episodes.values())
    found = []
    ufin = np.isfinite(util)
    usum, ucnt = np.where(ufin, util, 0.0).sum(0, dtype=np.float64), ufin.sum(0)
    if work is not None:
        wfin = np.isfinite(work)
        wsum, wcnt = np.where(wfin, work, 0.0).sum(0), wfin.sum(0)
    for g in range(g_count):
        s, n = episodes[g]
        k = len(s)
        if k == 0:
            continue
        share = float(n.sum() / max(valid[g].sum(), 1))
        p_persist = binom_sf(k, total, 1.0 / g_count) if total else 1.0
        item = {"gpu": series.ids[g], "episodes": k, "time_share": share, "share_of_all": k / total,
                "persistence_p": p_persist, "waiting": None, "peer_work_drop": math.nan,
                "peer_work_odd": math.nan, "peer_work_base": math.nan, "signal": work_col,
                "first_s": float(s[0] * dt), "peer_util_pct": math.nan}
        mask = odd[g]
        with np.errstate(all="ignore"):  # per-bin means of the other GPUs
            pu = (usum - np.where(ufin[g], util[g], 0.0)) / (ucnt - ufin[g])
            sel = pu[mask]
            sel = sel[np.isfinite(sel)]
            item["peer_util_pct"] = float(sel.mean()) if len(sel) else math.nan
            if work is not None and all_high.any():
                pw = (wsum - np.where(wfin[g], work[g], 0.0)) / (wcnt - wfin[g])
                _peers_waiting(item, pw, s, n, all_high)
        found.append(item)
    found.sort(key=lambda d: (-d["episodes"], d["gpu"]))
    strag, rotating = _persistent_or_rotating(found, total)
    if work is not None and all_high.any():
        strag += _dropped_out(series, odd, high, work, all_high, dt)
    return strag, rotating


def _dropped_out(series: GpuSeries, odd: np.ndarray, high: np.ndarray, work: np.ndarray, all_high: np.ndarray,
                 dt: float) -> list[dict]:
    """GPUs that go low for good — to the end of the recording, at least 3 bins and 5% of it, busy just before —
    while their peers stay high at clearly less than their working power: the peers wait in a collective for a
    rank that stopped (its process died or hangs), the job stuck. One episode, so no persistence test: the
    peers' power is the measurement (`hung` straggler items, `waiting` set by _peers_waiting)."""
    n_bins = odd.shape[1]
    out = []
    for g in np.flatnonzero(odd[:, -1]):
        start = n_bins - int(np.argmin(odd[g, ::-1])) if not odd[g].all() else 0
        length = n_bins - start
        if start == 0 or not high[g, start - 1] or length < max(3, 0.05 * n_bins):
            continue
        others = np.delete(np.arange(odd.shape[0]), g)
        pw = np.nanmean(work[others], axis=0)
        item = {"gpu": series.ids[g], "episodes": 1, "time_share": length / n_bins, "share_of_all": 1.0,
                "persistence_p": math.nan, "waiting": None, "signal": "power_w", "first_s": float(start * dt),
                "peer_util_pct": math.nan, "hung": True}
        _peers_waiting(item, pw, np.array([start]), np.array([length]), all_high)
        if item["waiting"]:
            out.append(item)
    return out


def _peer_work(series: GpuSeries, work_col: str, high: np.ndarray, dt: float, t0: float,
               n_bins: int) -> np.ndarray:
    """The (G × n_bins) grid of `work_col`; power as a fraction of each GPU's own busy level (its 90th
    percentile while high), SM activity as it is (already a fraction)."""
    work = series.grid_means(work_col, dt, t0, n_bins)
    if work_col == "power_w":  # each GPU's power relative to its own busy level
        ref = row_percentile(work, high & np.isfinite(work), 90).astype(np.float32)
        work = work / ref[:, None]
    return work


def _straggler_dips(odd: np.ndarray, high: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per GPU row, (start bins, lengths) of its dips while its peers are high, kept only when the GPU is high
    just before and just after."""
    n_bins = odd.shape[1]
    episodes = {}
    for g in range(odd.shape[0]):
        s, n = true_runs(odd[g])
        # a straggler's dip: the GPU was high just before and is high again just after, while its peers stayed
        # high — not the edge of a fleet-wide drop that it merely leads or trails by a poll
        before, after = s - 1, s + n
        ok = (before >= 0) & (after < n_bins)
        ok[ok] &= high[g, before[ok]] & high[g, after[ok]]
        episodes[g] = (s[ok], n[ok])
    return episodes


def _peers_waiting(item: dict, pw: np.ndarray, s: np.ndarray, n: np.ndarray, all_high: np.ndarray) -> None:
    """Fill `item`'s peer_work_* and waiting / waiting_p: do the peers' work (`pw`, per bin) drop during the
    straggler's dips (starts `s`, lengths `n`) against the bins where every GPU is high?"""
    okw = np.isfinite(pw)
    cs = np.r_[0.0, np.cumsum(np.where(okw, pw, 0.0))]
    cn = np.r_[0, np.cumsum(okw)]
    num, den = cs[s + n] - cs[s], cn[s + n] - cn[s]
    per_ep = (num / np.where(den > 0, den, 1))[den > 0]
    base = pw[all_high & okw]
    if len(per_ep) and len(base):
        b = float(np.median(base))
        o = float(np.median(per_ep))
        item["peer_work_odd"], item["peer_work_base"] = o, b
        item["peer_work_drop"] = 1 - o / b if b > 0 else math.nan
        k_below = int((per_ep < b).sum())
        p_wait = binom_sf(k_below, len(per_ep), 0.5) if len(per_ep) >= 5 else None
        item["waiting_p"] = p_wait
        item["waiting"] = bool(item["peer_work_drop"] >= POWER_DROP_MIN and (p_wait is None or p_wait < ALPHA))


def _persistent_or_rotating(found: list[dict], total: int) -> tuple[list[dict], dict | None]:
    """(stragglers: ≥ 3 dips, more than chance 1/G of all dips, ≥ 0.5% of the time; the rotating summary when
    ≥ 10 dips spread over ≥ 3 GPUs and none persists, else None), from `found` sorted by dips."""
    strag = [d for d in found if d["episodes"] >= 3 and d["persistence_p"] < ALPHA
             and d["time_share"] >= 0.005]
    rotating = None
    involved = [d for d in found if d["episodes"] >= 1]
    if total >= 10 and len(involved) >= 3 and not strag:
        top = involved[0]
        rotating = {"episodes": total, "gpus": len(involved), "top_gpu": top["gpu"],
                    "top_share": top["share_of_all"], "top_p": top["persistence_p"]}
    return strag, rotating
