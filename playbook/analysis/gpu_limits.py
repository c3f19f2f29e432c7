"""Clock limiters read from physics rather than peers, for analysis.gpus: a busy clock that falls as the GPU heats
(thermal droop; without a clock, the busy power falling as the GPU heats and holds its top temperature) and a power
limit lowered below the one the same part runs at (a cap, readable without a clock). Each fills per-GPU columns of
analysis.gpus' table (`cols`, arrays indexed by GPU)."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from playbook.analysis.series import GpuSeries
from playbook.analysis.stats import binom_sf, effective_n, lag1, t_sf, wilson_lower

# GPU Boost trims one ~15 MHz bin per ~5 °C, ~5% from 40 to 85 °C: a clock falling twice that as the GPU heats is a
# thermal limiter (cooling, airflow, a low max operating temperature), with or without the event-reason bits
THERMAL_DEFICIT_MIN = 0.10
POWER_PINNED = 0.95  # power draw within 5% of the enforced limit: the power limit is what holds the clock down
# one poll can catch a boost spike or a mis-sampled value; three in a row at work is a clock the part held at this load
SUSTAINED_POLLS = 3
# a busy GPU warming at the same load draws as much power or more (leakage grows with temperature): a busy draw 15%
# below the one it sustained at work, held while the GPU sits at its top temperature, is its clock taken down
POWER_FALL_MIN = 0.15


def sustained_peak(x: np.ndarray, ok: np.ndarray, run: int = SUSTAINED_POLLS) -> np.ndarray:
    """Per row (the last axis is time): the highest value `x` holds for `run` consecutive `ok` samples — the lowest
    of each window of `run`, the highest such window — NaN without one. A GPU that clocked high at work for a few
    polls and was then held down for the rest of the run (throttled seconds after a clean start) shows its working
    clock here, where a percentile of its busy polls sees only the held-down clock."""
    x, ok = np.asarray(x, dtype=np.float64), np.asarray(ok, dtype=bool)
    if x.shape[-1] < run:
        return np.full(x.shape[:-1], math.nan)
    win_ok = window_min(ok, run)  # the minimum of booleans: all of them
    peak = np.where(win_ok, window_min(np.where(ok, x, np.inf), run), -np.inf).max(axis=-1)
    return np.where(np.isfinite(peak), peak, math.nan)


def window_min(x: np.ndarray, run: int) -> np.ndarray:
    """min(x[..., i:i + run]) for every i along the last axis (length n - run + 1): run - 1 element-wise minima of
    shifted views (of booleans: all); NaN propagates. A strided sliding_window_view(...).min reduces 3 values per call of its inner
    loop: ~50x slower on a 3,600-poll row (0.29 s against 6 ms for 2,048 rows, measured)."""
    n = x.shape[-1] - run + 1
    out = x[..., :n].copy()
    for k in range(1, run):
        np.minimum(out, x[..., k:k + n], out=out)
    return out


def thermal_clock_plateau(clock: np.ndarray, temp: np.ndarray, cols: dict, g: int,
                          pinned: np.ndarray | None = None) -> None:
    """A busy clock held THERMAL_DEFICIT_MIN or more below the clock the GPU sustained at work, on the polls where
    the GPU sits at its top temperature (within 1 °C, a quarter of its busy polls or more) off the power limit: a
    limiter holding its temperature target by the clock (ROCm/legacy-rocm-build#564's Radeon Pro Duo at 84-86 c,
    SCLK 1243 -> 910-1077 MHz). thermal_droop's rank test sees such a run as one trend — the clock flat while the GPU
    warms, then one fall — and cannot name it; this sign test counts the hot polls below the line (at most half for
    an unthrottled GPU), deflated by their lag-1 autocorrelation as thermal_power_fall's is. Fills the thermal
    columns only where thermal_droop left them unnamed (p ≥ 0.01)."""
    known = np.isfinite(clock) & np.isfinite(temp) & (clock > 0)
    if pinned is not None:
        known &= ~pinned
    c, t = clock[known], temp[known]
    if len(c) < 8 or np.ptp(t) == 0 or (np.isfinite(cols["thermal_p"][g]) and cols["thermal_p"][g] < 0.01):
        return
    hot = t >= t.max() - 1.0
    peak = float(sustained_peak(c, np.ones(len(c), dtype=bool)))
    line = (1 - THERMAL_DEFICIT_MIN) * peak
    if hot.sum() < max(5, 0.25 * len(t)) or not np.isfinite(peak) or np.median(c[hot]) > line:
        return
    held = c[hot]
    n = int(round(effective_n(len(held), lag1(held), floor=3.0)))
    k = int(round(float(np.mean(held <= line)) * n))
    cool = c >= peak
    cols["thermal_deficit"][g] = float(1 - np.median(held) / peak)
    cols["thermal_cost"][g] = float(np.mean(np.clip(1 - c / peak, 0, None)))
    cols["thermal_p"][g] = binom_sf(k, n, 0.5)
    cols["thermal_cool_c"][g] = float(np.median(t[cool])) if cool.any() else float(t.min())
    cols["thermal_hot_c"][g] = float(t.max())
    cols["thermal_power"][g] = PLATEAU_TEST


PLATEAU_TEST = 2.0  # thermal_power's mark of a GPU read by thermal_clock_plateau (1.0: thermal_power_fall)


def sustained_peak_segments(x: np.ndarray, ok: np.ndarray, offsets: np.ndarray,
                            run: int = SUSTAINED_POLLS) -> np.ndarray:
    """`sustained_peak` of each segment x[offsets[k]:offsets[k+1]] of a flat array (one GPU's samples each), in one
    vectorised pass: a window counts for the segment it starts in when it ends there too."""
    x, ok, offsets = np.asarray(x, dtype=np.float64), np.asarray(ok, dtype=bool), np.asarray(offsets)
    lengths = np.diff(offsets)
    out = np.full(len(lengths), math.nan)
    if len(x) < run or not len(lengths):
        return out
    win = window_min(np.where(ok, x, -np.inf), run)  # from each sample; -inf: not all ok
    starts = np.arange(len(win))
    seg = np.searchsorted(offsets, starts, side="right") - 1
    vals = np.where((starts + run <= offsets[seg + 1]) & np.isfinite(win), win, -np.inf)
    has = lengths >= run
    peak = np.maximum.reduceat(vals, np.minimum(offsets[:-1][has], len(vals) - 1))
    out[has] = np.where(np.isfinite(peak), peak, math.nan)
    return out


def thermal_droop(clock: np.ndarray, temp: np.ndarray, cols: dict, g: int, pinned: np.ndarray | None = None,
                  power: np.ndarray | None = None) -> None:
    """The busy SM clock falling as the GPU heats: a one-sided Spearman test of clock against temperature, its
    polls deflated by their lag-1 autocorrelation (a warming GPU is one slow trend, not n independent polls), and
    the clock at the hottest quarter of polls against the coolest quarter (thermal_deficit); thermal_cost is the
    mean shortfall of all busy polls below the cool clock. Polls drawing at the power limit (`pinned`) are left
    out: leakage grows with temperature, so at a fixed power limit the clock falls as the GPU warms — the power
    limit's trade (normal at TDP; a lowered one is the cap test's), not a thermal limiter.

    One warming trend deflates the rank test to a few effective polls (two trending series correlate by chance),
    so a GPU whose clock steps down poll by poll as it heats is also read by its co-movements (`co_movement_p`);
    the smaller p of the two, doubled (Bonferroni), is thermal_p. `power` (W, per poll, optional) tells those
    steps from a load's (co_movement_p)."""
    known = np.isfinite(temp) if pinned is None else np.isfinite(temp) & ~pinned
    c, t = clock[known], temp[known]
    if len(c) < 8 or np.ptp(t) == 0 or np.ptp(c) == 0:
        return
    cool, hot = t <= np.percentile(t, 25), t >= np.percentile(t, 75)
    if not (cool.any() and hot.any()) or np.median(t[hot]) <= np.median(t[cool]):
        return
    cool_mhz = float(np.median(c[cool]))
    p = _correlation_below_zero(c, t, effective_n(len(c), max(lag1(c), lag1(t)), floor=3.0))
    p = min(1.0, 2 * min(p, co_movement_p(c, t, None if power is None else power[known])))
    cols["thermal_deficit"][g] = float(1 - np.median(c[hot]) / cool_mhz)
    cols["thermal_cost"][g] = float(np.mean(np.clip(1 - c / cool_mhz, 0, None)))
    cols["thermal_p"][g] = p
    cols["thermal_cool_c"][g] = float(np.median(t[cool]))
    cols["thermal_hot_c"][g] = float(np.median(t[hot]))


LOAD_P = 0.01  # the clock's steps against the power's at this one-sided p: the load's trade, not heat's


def co_movement_p(clock: np.ndarray, temp: np.ndarray, power: np.ndarray | None = None) -> float:
    """One-sided test that the clock steps down as the temperature steps up, poll to poll: Spearman's rho of the
    first differences (GPU Boost trims a clock bin as the GPU crosses a temperature step, at once). Differences of a
    trend are not a trend: a clock and a temperature that drift apart for other reasons step independently, and
    a drift only shifts the steps' mean, which a correlation ignores. The pairs are deflated by the product of the
    two differences' lag-1 autocorrelations (Bretherton et al. 1999; negative for jittering levels, which a
    positive product of two then inflates). 1.0 where either never moves, and where the clock's steps go against
    the power's (`power`, W, optional; one-sided p < LOAD_P): a heat-trimmed clock lowers the power with it (DVFS, at
    the same load), while a heavier phase draws more power at a lower clock and warms the GPU — the load's trade or
    a power limit unrecorded, which co-moves with the temperature as well (LABELED SYNTHETIC 30 s heavy/light
    phases, 12% lower clock when heavy: p ~1e-4 without this check; tests/analysis/test_thermal_load.py)."""
    dt, dc = np.diff(temp), np.diff(clock)
    ok = np.isfinite(dt) & np.isfinite(dc)
    if power is not None:
        dp = np.diff(power)
        both = np.isfinite(dp) & np.isfinite(dc)
        # Pearson, not ranks: the few large steps a phase change makes are the load's signature, and ranks drown
        # them among the many small steps of each series' own jitter (LABELED SYNTHETIC phases: Pearson -0.88, Spearman p 0.002-0.02)
        if both.sum() >= 8 and np.ptp(dp[both]) > 0 and np.ptp(dc[both]) > 0 and _correlation_below_zero(
                dc[both], dp[both], effective_n(int(both.sum()), lag1(dc[both]) * lag1(dp[both]), floor=3.0),
                ranks=False) < LOAD_P:
            return 1.0
    dt, dc = dt[ok], dc[ok]
    if len(dt) < 8 or np.ptp(dt) == 0 or np.ptp(dc) == 0:
        return 1.0
    return _correlation_below_zero(dc, dt, effective_n(len(dt), lag1(dc) * lag1(dt), floor=3.0))


def _correlation_below_zero(x: np.ndarray, y: np.ndarray, n_eff: float, ranks: bool = True) -> float:
    """One-sided p of a correlation of x and y below 0 by the t approximation on `n_eff` pairs: Spearman's rho
    (Pearson on average ranks, as scipy.stats.spearmanr), or Pearson's r on the values with `ranks` False."""
    from scipy.stats import rankdata

    rho = float(np.corrcoef(rankdata(x), rankdata(y))[0, 1] if ranks else np.corrcoef(x, y)[0, 1])
    if not np.isfinite(rho) or rho >= 0:
        return 1.0
    if rho <= -1:
        return 0.0
    return t_sf(-rho * math.sqrt((n_eff - 2) / (1 - rho * rho)), n_eff - 2)


def sku_limit_refs(series: GpuSeries, has: dict) -> np.ndarray:
    """Per GPU, the larger of the highest enforced power limit among the run's GPUs of the same part
    (GpuSeries.parts: the same product name, else memory.total within 2% — a run mixing 40 and 80 GB parts, or
    A100s and H100s, is not compared across — else all GPUs) and the GPU's own default power limit where logged (a
    limit below the board's default is a cap by definition, even when every GPU of the run shares it). NaN
    without a power limit."""
    g_count = len(series)
    refs = np.full(g_count, math.nan)
    if not has["power_limit_w"]:
        return refs
    top = np.array([np.nanmax(v) if np.isfinite(v := series.get(g, "power_limit_w", dropna=False)[1]).any()
                    else math.nan for g in range(g_count)])
    refs = part_values(top, series.parts(), np.nanmax)
    if has["power_default_limit_w"]:
        for g in range(g_count):
            d = series.get(g, "power_default_limit_w", dropna=False)[1]
            d = d[np.isfinite(d) & (d > 0)]
            if len(d):
                refs[g] = float(np.nanmax([refs[g], np.median(d)]))
    return refs


def part_values(values: np.ndarray, parts: np.ndarray, reduce) -> np.ndarray:
    """Per GPU, `reduce` of `values` (one per GPU) over the GPUs of its part (NaN where none is finite)."""
    out = np.full(len(values), math.nan)
    for p in np.unique(parts):
        sel = parts == p
        if np.isfinite(values[sel]).any():
            out[sel] = float(reduce(values[sel][np.isfinite(values[sel])]))
    return out


def power_only_cap(series: GpuSeries, cols: dict, has: dict, busy_thr: float) -> None:
    """A lowered power limit without an SM clock in the log (nvidia-smi with power.draw / power.limit only, DCGM
    without a clock field): busy polls whose draw sits pinned at an enforced limit below the one the same part
    runs at elsewhere in the run, or below its own default limit. The clock it costs is estimated by DVFS physics — dynamic power ~ f·V² with the
    voltage rising with the clock, P ~ f³ — so the clock falls to (limit / reference)^(1/3): 700 → 600 W on an
    H100 costs ~5%, 300 → 150 W on a V100 ~21%. A GPU at its full limit (TDP-bound, the common healthy case) has
    no higher reference and is never called capped."""
    if not (has["power_w"] and has["power_limit_w"]):
        return
    refs = sku_limit_refs(series, has)
    for g in range(len(series)):
        u = series.get(g, "util_pct", dropna=False)[1]
        p = series.get(g, "power_w", dropna=False)[1]
        lim = series.get(g, "power_limit_w", dropna=False)[1]
        ok = np.isfinite(u) & (u >= busy_thr) & np.isfinite(p) & np.isfinite(lim) & (lim > 0)
        if ok.sum() < 3 or not np.isfinite(refs[g]):
            continue
        p, lim = p[ok], lim[ok]
        capped = (lim < POWER_PINNED * refs[g]) & (p >= POWER_PINNED * lim)
        if not capped.any():
            continue
        cap = float(np.median(lim[capped]))
        cols["cap_share"][g] = float(capped.mean())
        cols["cap_lower"][g] = wilson_lower(int(capped.sum()), len(capped))
        cols["cap_limit_w"][g] = cap
        cols["cap_ref_w"][g] = refs[g]
        cols["cap_deficit"][g] = float(1 - (cap / refs[g]) ** (1 / 3))


def thermal_power_fall(series: GpuSeries, cols: dict, has: dict, busy_thr: float) -> None:
    """Thermal throttling without an SM clock in the log (nvidia-smi's table, power and temperature only): busy
    polls, off the power limit, whose draw falls at least POWER_FALL_MIN below what the GPU sustained at work once
    it reaches its top temperature and holds it (within 1 °C on a quarter of the busy polls: a limiter holding its
    temperature target, convnet-benchmarks#71's Titan X at 84 °C; a lighter load would cool the GPU instead). The
    clock is estimated by DVFS physics (power ~ clock³, as power_only_cap); `thermal_power` marks the GPUs so read."""
    if not (has["power_w"] and has["temp_c"]):
        return
    for g in range(len(series)):
        u, p, t = (series.get(g, c, dropna=False)[1] for c in ("util_pct", "power_w", "temp_c"))
        ok = np.isfinite(u) & (u >= busy_thr) & np.isfinite(p) & (p > 0) & np.isfinite(t)
        pinned = np.zeros(len(ok), dtype=bool)
        if has["power_limit_w"]:
            lim = series.get(g, "power_limit_w", dropna=False)[1]
            with np.errstate(invalid="ignore"):
                pinned = np.isfinite(lim) & (p >= POWER_PINNED * lim)
        if ok.sum() < 8:
            continue
        p, t, pinned = p[ok], t[ok], pinned[ok]
        # the hot polls off the power limit (at the limit a lower clock is the limit's trade: the cap test's)
        hot = (t >= t.max() - 1.0) & ~pinned
        peak = sustained_peak(p, np.ones(len(p), dtype=bool))
        if hot.sum() < max(5, 0.25 * len(t)) or not np.isfinite(peak) or \
                np.median(p[hot]) > (1 - POWER_FALL_MIN) * peak:
            continue
        # a sign test: the hot polls draw below the 85% line more often than an unthrottled GPU's would (at most
        # half), their count deflated by the draw's lag-1 autocorrelation (a plateau is one slow state)
        hot_p = p[hot]
        n = int(round(effective_n(len(hot_p), lag1(hot_p), floor=3.0)))
        k = int(round(float(np.mean(hot_p <= (1 - POWER_FALL_MIN) * peak)) * n))
        cols["thermal_deficit"][g] = float(1 - np.cbrt(np.median(hot_p) / peak))
        cols["thermal_cost"][g] = float(np.mean(1 - np.cbrt(np.minimum(p / peak, 1.0))))
        cols["thermal_p"][g] = binom_sf(k, n, 0.5)
        cols["thermal_cool_c"][g] = float(np.median(t[p >= POWER_PINNED * peak]))
        cols["thermal_hot_c"][g] = float(t.max())
        cols["thermal_power"][g] = 1.0


# NVIDIA's DCGM guidance on SM activity (DCGM_FI_PROF_SM_ACTIVE, the fraction of time at least one warp is active
# on an SM, averaged over the SMs): 0.8 or more is necessary but not sufficient for effective use; below 0.5 likely
# indicates ineffective use. Utilization (a kernel running, any size) can read 100% over SMs mostly idle.
SM_INEFFECTIVE = 0.5
BUSY_UTIL_PCT = 50.0  # samples with a kernel running at least half the time: where SM activity measures the kernels


def _underfilled_gpus(busy) -> list:
    """The (host, gpu) keys whose busy samples' median SM activity is below SM_INEFFECTIVE (at least 10 samples)."""
    med = busy.groupby(["host", "gpu"], sort=True)["sm_active"].agg(["median", "size"])
    return [k for k, r in med.iterrows() if r["size"] >= 10 and r["median"] < SM_INEFFECTIVE]


def _rows_of(tele, gpus: list):
    """Mask of `tele`'s rows on the (host, gpu) keys `gpus` (a telemetry table always has both columns)."""
    return pd.MultiIndex.from_frame(tele[["host", "gpu"]]).isin(gpus)


def sm_fill(tele) -> dict | None:
    """How much of the GPU the kernels fill while they run, per GPU: over its samples with utilization ≥
    BUSY_UTIL_PCT and an SM activity, the GPUs whose median SM activity is below SM_INEFFECTIVE (`underfilled`,
    `gpus` of `of` GPUs); over those GPUs' busy samples (all GPUs' when none), the median SM activity (0-1) and
    utilization (%), the share of samples below SM_INEFFECTIVE and a sign-test p-value that most are (n deflated
    by the lag-1 autocorrelation). Per GPU: two GPUs at 0.2 beside two at 0.9 pooled to a median of 0.55 and read
    'Healthy (confirmed)'. None without both columns on busy samples (at least 10)."""
    if "sm_active" not in tele or not tele["sm_active"].notna().any() or not tele["util_pct"].notna().any():
        return None
    busy = tele[(tele["util_pct"] >= BUSY_UTIL_PCT) & tele["sm_active"].between(0.0, 1.0)]
    if len(busy) < 10:
        return None
    gpus = _underfilled_gpus(busy)
    part = busy[_rows_of(busy, gpus)] if gpus else busy
    sm = part["sm_active"].to_numpy(dtype=np.float64)
    below = int((sm < SM_INEFFECTIVE).sum())
    n_eff = effective_n(len(sm), lag1(sm), floor=1.0)
    k_eff = int(round(below * n_eff / len(sm)))
    n_gpus = len(busy.groupby(["host", "gpu"]).size())
    return {"sm_active": float(np.median(sm)), "util_pct": float(part["util_pct"].median()), "samples": len(sm),
            "below_share": below / len(sm), "gpus": len(gpus), "of": n_gpus, "keys": gpus,
            "p_value": binom_sf(k_eff, max(int(round(n_eff)), 1), 0.5), "underfilled": bool(gpus)}


# Training at full load draws 60-100% of the power limit: in the real reports of this project's corpus the busy
# (>= 90% utilization) GPUs drew 0.68-0.97 of their limit, a thermally throttled one 0.50; the only three below half
# (0.24-0.26: QwenLM/Qwen#970, maskrcnn-benchmark#659, voxceleb_trainer#110) were ranks spinning in a collective.
# Below half the limit a kernel runs, but the GPU does little work (the accounting's floor for "at work" too).
WORK_POWER_FLOOR = 0.5
BUSY_POWER_UTIL_PCT = 90.0


def busy_power(tele) -> dict | None:
    """What the GPUs draw while utilization says they are busy: per GPU, the median of power / enforced limit over
    its polls at >= BUSY_POWER_UTIL_PCT (at least 10); `share` the median over the GPUs (0-1), `gpus`, `samples`;
    `pinned` the median share of a GPU's busy polls drawing within POWER_PINNED of the limit, `limit_w` the median
    enforced limit, `default_known` whether the input logs the default limit too. Utilization counts a kernel of any
    size as busy; power says how much of the chip it uses. None without both columns on 10 busy polls."""
    if not {"power_w", "power_limit_w", "util_pct"} <= set(tele.columns):
        return None
    ok = (tele["util_pct"] >= BUSY_POWER_UTIL_PCT) & (tele["power_w"] > 0) & (tele["power_limit_w"] > 0)
    share = (tele["power_w"] / tele["power_limit_w"])[ok]
    busy = tele.loc[ok, ["host", "gpu"]].assign(share=share, pinned=share >= POWER_PINNED,
                                                 limit=tele["power_limit_w"][ok])
    per = busy.groupby(["host", "gpu"], sort=False).agg(median=("share", "median"), size=("share", "size"),
                                                        pinned=("pinned", "mean"), limit=("limit", "median"))
    per = per[per["size"] >= 10]
    if not len(per):
        return None
    default = tele["power_default_limit_w"] if "power_default_limit_w" in tele else None
    return {"share": float(per["median"].median()), "gpus": len(per), "samples": int(per["size"].sum()),
            "pinned": float(per["pinned"].median()), "limit_w": float(per["limit"].median()),
            "default_known": bool(default is not None and (default > 0).any())}


def sm_basis(tele):
    """`tele` with GPU time counted on SM activity (util_pct := 100 × sm_active) where that is the better measure:
    every GPU when the table has no utilization, else the GPUs whose kernels fill under half the SMs (sm_fill),
    utilization reading a running kernel of any size as busy; and the basis for the page: "all" when every GPU
    that ran kernels was so counted, "N of M" GPUs when some were, "" when none."""
    if "sm_active" not in tele or not tele["sm_active"].notna().any():
        return tele, ""
    if not tele["util_pct"].notna().any():
        return tele.assign(util_pct=tele["sm_active"] * 100.0), "all"
    fill = sm_fill(tele)
    if not fill or not fill["underfilled"]:
        return tele, ""
    rows = _rows_of(tele, fill["keys"])
    busy = (tele["util_pct"] >= BUSY_UTIL_PCT).to_numpy()  # a GPU that never ran a kernel reads idle on either basis
    basis = "all" if rows[busy].all() else f"{fill['gpus']} of {fill['of']}"
    return tele.assign(util_pct=np.where(rows, tele["sm_active"] * 100.0, tele["util_pct"])), basis


def _sms_idle(m: re.Match) -> str:
    """"GPUs idle 74%" → "GPUs' SMs idle 74%", "a GPU idle" → "a GPU's SMs idle", "idle" → "SMs idle"."""
    who = m.group(1)
    return "SMs idle " if not who else f"{who}' SMs idle " if who.endswith("s") else f"{who}'s SMs idle "


def sm_wording(acc, basis: str = "all") -> None:
    """Bucket details and noise floor of an accounting (analysis.accounting) read on the SM-activity basis: the
    level is the SMs', not the time's ("GPUs' SMs idle 74% … their SM-activity level is 26%"; a GPU idle throughout
    stays "idle": no kernel ran on it). `basis` as sm_basis gives it: for "N of M", the level is named as mixed (a
    utilization plot at 97% on every GPU had sat under 'busy level 60%')."""
    acc.busy_pct = float("nan")  # an SM-activity level is no utilization: FED_PCT does not apply
    if basis != "all":
        level = f"busy level (utilization; SM activity on the {basis} GPUs whose kernels fill under half their SMs)"
        for b in acc.buckets:
            b.detail = b.detail.replace("busy level", level, 1)
        acc.noise_floor = acc.noise_floor.replace("busy level", level, 1)
        return
    for b in acc.buckets:
        b.detail = re.sub(r"\b(?:(GPUs|GPU) )?idle (?=\d)", _sms_idle, b.detail.replace("busy level", "SM-activity level"))
    acc.noise_floor = acc.noise_floor.replace("busy level", "SM-activity level")
