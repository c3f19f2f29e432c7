"""Per-GPU status and cross-signal reasoning, relative to the run's own GPUs.

Statuses (first that applies):
  lost           the GPU stops reporting for good, or reports errors for a stretch while its peers report. A
                 stretch counts when it is longer than chance allows: L ≥ max(3, log(α/n) / log(q)) polls, q being
                 the GPU's own share of missing polls (so a flaky 5% loss over a day needs ~6 in a row). A stretch
                 with no rows at all after which the GPU reports normally again is a logger hiccup (a warning): a
                 GPU that falls off the bus (Xid 79) does not come back without a reset, and the poller's own
                 stalls leave exactly such holes.
  throttled      harmful clock-event reasons (HW slowdown, SW/HW thermal, power brake — not the SW power cap,
                 which is normal at full load) in ≥ 1% of busy polls (95% Wilson lower bound), or an SM clock
                 while busy that is a low outlier among its peers (modified z ≤ -3.5, Iglewicz-Hoaglin) and ≥ 5%
                 below their median; or a busy clock that falls ≥ 10% as the GPU heats (thermal, bits or not); or
                 busy polls pinned at a power limit below the one the same part runs at in the run (a cap, with or
                 without clocks.sm in the log).
  underutilized  utilization below the other GPUs' median at the same moment, by ≥ MIN_DELTA_PCT on average,
  saturated      or above it by as much while itself busy in ≥ 90% of polls — and significantly so: a sign test on the
                 per-poll differences, with the number of polls deflated by their lag-1 autocorrelation
                 (n_eff = n (1 - ρ) / (1 + ρ)). With too few polls to test (n_eff < 5) the effect alone decides
                 and the evidence says so.
  ok             otherwise.

Stragglers across GPUs (low while their peers are high) come from playbook.analysis.peer_stragglers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from playbook.analysis.gpu_limits import (
    PLATEAU_TEST,
    POWER_PINNED,
    THERMAL_DEFICIT_MIN,
    part_values,
    power_only_cap,
    sku_limit_refs,
    sustained_peak_segments,
    thermal_clock_plateau,
    thermal_droop,
    thermal_power_fall,
)
from playbook.analysis.intervals import chance_run, true_runs
from playbook.analysis.job_members import IDLE_PCT, UNUSED_MIB, faulted_gpus, holds_working_memory, job_gpus  # noqa: F401
from playbook.analysis.oscillation import ALPHA, MIN_SAMPLES_PERIOD
from playbook.analysis.oscillation.levels import two_levels
from playbook.analysis.peer_stragglers import peer_stragglers
from playbook.analysis.series import GpuSeries, gpu_series
from playbook.analysis.stats import sidak, sign_tests, wilson_lower
from playbook.core.jsonable import json_float
from playbook.model import schema

MIN_DELTA_PCT = 10.0
MIN_LOST_POLLS = 3  # the shortest stretch of missing polls that can count as a loss (one or two can be a glitch)
SATURATED_SHARE = 0.9  # saturated: busy (above the fleet's busy threshold) in ≥ 90% of polls
THROTTLE_SHARE_MIN = 0.01
CLOCK_DEFICIT_MIN = 0.05
# self-reference: at full load, power-limited boost (DVFS) alone lowers the SM clock by up to ~25% (an H100 at 700 W
# runs ~1.5-1.98 GHz); a busy clock more than 30% below what the same GPU or model reaches in the run is a limiter
SELF_DEFICIT_MIN = 0.30
MODIFIED_Z = 3.5
MEM_SWING_FRACTION = 0.10
MEM_SWING_MIB = 8192.0  # without memory.total: 10% of an 80 GB part
COLUMNS = ("util_pct", "power_w", "power_limit_w", "power_default_limit_w", "sm_clock_mhz", "throttle_reasons", "sm_active",
           "mem_used_mib", "mem_total_mib", "temp_c", "pcie_link_gen", "pcie_link_width", "pcie_replay_count")


@dataclass
class GpuReport:
    """Per-GPU table (one row per GPU, `status` and `evidence` included) and the cross-signal findings."""

    table: pd.DataFrame
    stragglers: list[dict] = field(default_factory=list)
    rotating: dict | None = None
    interval_s: float = math.nan
    warnings: list[str] = field(default_factory=list)
    # P(GPUs this uneven | work spread evenly): the best underutilized GPU's sign-test p, Šidák-corrected over the
    # GPUs tested; with too few polls for that test, a permutation test on the polls (see imbalance_p)
    imbalance_p: float = math.nan

    def contract(self) -> list[dict]:
        """The `gpus` list of the diagnose JSON contract."""
        out = []
        for r in self.table.itertuples(index=False):
            mean = float(r.mean_util_pct)
            out.append({"id": r.id, "host": r.host, "index": int(r.index),
                        "mean_util_pct": json_float(mean, 1),
                        "status": r.status, "evidence": r.evidence})
            if getattr(r, "model", ""):  # the part, where the input names it (nvidia-smi `name`)
                out[-1]["model"] = r.model
        return out


def _peer_median(u: np.ndarray) -> np.ndarray:
    """Per bin, the median of the *other* GPUs (exact for ≤ 16 GPUs, the fleet median beyond)."""
    g = u.shape[0]
    if g == 1:
        return np.full_like(u, np.nan)
    if g > 16:
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                med = np.nanmedian(u, axis=0)
        return np.broadcast_to(med, u.shape)
    out = np.empty_like(u)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i in range(g):
            out[i] = np.nanmedian(np.delete(u, i, axis=0), axis=0)
    return out


def fmt_span(seconds: float) -> str:
    """A span of seconds in words a person reads: "6.0 h", "45 min", "90 s"; "?" when not finite."""
    if not np.isfinite(seconds):
        return "?"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def analyze_gpus(telemetry: pd.DataFrame, interval_s: float | None = None,
                 series: GpuSeries | None = None, events: pd.DataFrame | None = None) -> GpuReport:
    """Status and evidence for every GPU in `telemetry`, plus straggler findings (see module docstring). `events`:
    the run's events; a GPU a fault event names is never called unused (faulted_gpus)."""
    if series is None:
        series = gpu_series(telemetry, tuple(c for c in COLUMNS if c in telemetry), interval_s=interval_s)
    faulted = faulted_gpus(events) if events is not None else set()
    clusters = series.time_clusters()
    if len(clusters) > 1:  # separate recordings: compare GPUs only within their own time range
        parts = [_analyze(series.subset(c), faulted) for c in clusters]
        table = pd.concat([p.table for p in parts], ignore_index=True)
        order = {gid: i for i, gid in enumerate(series.ids)}
        table = table.sort_values("id", key=lambda s: s.map(order)).reset_index(drop=True)
        return GpuReport(table, [x for p in parts for x in p.stragglers], parts[0].rotating, parts[0].interval_s,
                         list(dict.fromkeys(w for p in parts for w in p.warnings)), parts[0].imbalance_p)
    return _analyze(series, faulted)


def _analyze(series: GpuSeries, faulted: set[str]) -> GpuReport:
    warnings: list[str] = []
    g_count = len(series)
    if g_count == 0:
        return GpuReport(pd.DataFrame(columns=["id", "host", "index", "mean_util_pct", "status", "evidence"]),
                         warnings=warnings)
    dt, lo, n_bins = series.common_grid()
    has = {c: c in series.values and np.isfinite(series.values[c]).any() for c in COLUMNS}
    util = series.grid_means("util_pct", dt, lo, n_bins)
    valid = np.isfinite(util)
    rows = []
    median, p95 = series.quantiles("util_pct", ("median", 95))  # one sort for all GPUs
    for g in range(g_count):
        t, x = series.get(g, "util_pct", dropna=False)
        ok = np.isfinite(x)
        rows.append({
            "id": series.ids[g], "host": series.hosts[g], "index": series.index[g], "samples": int(len(x)),
            "errors": int((~ok).sum()), "mean_util_pct": float(x[ok].mean()) if ok.any() else math.nan,
            "median_util_pct": float(median[g]),
            "idle_throughout": bool(ok.sum() >= 3 and p95[g] <= IDLE_PCT),
            "first_s": float(t[0]) if len(t) else math.nan, "last_s": float(t[ok][-1]) if ok.any() else math.nan,
        })
    table = pd.DataFrame(rows)
    table["model"] = [series.models.get(i, "") for i in series.ids]
    pooled = series.values["util_pct"]
    fleet_levels = two_levels(pooled)
    busy_thr = fleet_levels.threshold if fleet_levels.bimodal else 50.0
    table["busy_share"] = [float(np.mean(util[g][valid[g]] >= busy_thr)) if valid[g].any() else math.nan
                           for g in range(g_count)]
    table["lost"], table["lost_note"] = _lost(series, table, util, valid, dt, lo, warnings)
    _throttle(series, table, has, busy_thr)
    _relative(table, util, valid, dt)
    _memory(series, table, has)
    stragglers, rotating = peer_stragglers(series, util, valid, dt, lo, n_bins, has)
    table["unused"] = table["idle_throughout"] & (table["mem_peak_mib"] < UNUSED_MIB) & ~holds_working_memory(
        table["mem_peak_mib"].to_numpy(dtype=float), table["idle_throughout"].to_numpy(dtype=bool)) & \
        ~(table["id"].isin(faulted) | table["host"].astype(str).isin(faulted))
    if table["unused"].any() and not table["unused"].all():
        ids = list(table.loc[table["unused"], "id"])
        warnings.append(f"{', '.join(ids[:8])}{' …' if len(ids) > 8 else ''}: idle throughout with under "
                        f"{UNUSED_MIB / 1024:.0f} GiB of memory — probably not used by this job (left out of the "
                        "imbalance evidence)")
    status, evidence = [], []
    for r in table.itertuples(index=False):
        s, ev = _status(r, g_count)
        status.append(s)
        evidence.append(ev)
    table["status"] = status
    table["evidence"] = evidence
    table["clock_cost"] = [clock_cost(r) if st == "throttled" else math.nan
                           for r, st in zip(table.itertuples(index=False), status, strict=True)]
    if g_count == 1:
        warnings.append("one GPU only: underutilized / saturated need peers to compare against")
    return GpuReport(table, stragglers, rotating, dt, warnings, imbalance_p(table, util, valid))


PERMUTATIONS = 4000


def imbalance_p(table: pd.DataFrame, util: np.ndarray, valid: np.ndarray, seed: int = 0) -> float:
    """P-value that the GPUs' utilization is this uneven when the work is spread evenly (NaN: untestable).

    With enough polls (some underutilized GPU's sign test has n_eff ≥ 5): the smallest sign-test p among the
    underutilized GPUs, Šidák-corrected over all GPUs tested (the best of G is reported). With fewer polls, a
    Monte Carlo permutation test that uses the magnitudes too: under "work spread evenly" the GPUs are
    exchangeable within each poll, so the labels are shuffled within each poll and the variance of the per-GPU
    means is compared with its permutation distribution (polls thinned to roughly independent ones by the
    sign series' autocorrelation, n / n_eff). GPUs idle throughout without memory (not in the job) are left out."""
    if table.empty or "delta_p" not in table:
        return math.nan
    keep = ~table["unused"].to_numpy(dtype=bool) if "unused" in table else np.ones(len(table), dtype=bool)
    under = table[keep & (table["delta_pct"] <= -MIN_DELTA_PCT)]
    tested = table[keep & table["delta_p"].notna()]
    if under.empty or len(tested) < 2:
        return math.nan
    if (under["delta_n_eff"] >= 5).any():
        p = float(under.loc[under["delta_n_eff"] >= 5, "delta_p"].astype(float).min())
        return float(sidak(p, len(tested)))
    x = util[keep].astype(np.float64)
    cols = np.flatnonzero(np.isfinite(x).sum(0) >= 2)
    if len(cols) == 0:
        return math.nan
    # (a lag-1 autocorrelation from a dozen polls or fewer is noise: those polls are taken as they are)
    ratio = float(np.nanmedian(tested["polls_compared"] / np.maximum(tested["delta_n_eff"], 1.0)))
    few = float(np.median(tested["polls_compared"])) < MIN_SAMPLES_PERIOD
    stride = 1 if few or not np.isfinite(ratio) else max(1, int(round(ratio)))
    x = x[:, cols[::stride]][:, :256]  # (one poll: every shuffle has the same spread, p = 1 — no evidence)

    def spread(v: np.ndarray) -> np.ndarray:  # variance over GPUs of each GPU's mean over polls (NaN-aware)
        with np.errstate(all="ignore"):
            n = np.isfinite(v).sum(-1)
            m = np.where(n > 0, np.nansum(v, -1) / np.maximum(n, 1), np.nan)
            mu = np.nanmean(m, -1, keepdims=True)
            return np.nanmean((m - mu) ** 2, -1)

    observed = float(spread(x))
    rng = np.random.default_rng(seed)
    g, polls = x.shape
    chunk = max(1, min(PERMUTATIONS, 2_000_000 // max(g * polls, 1)))
    hits = done = 0
    while done < PERMUTATIONS:
        r = min(chunk, PERMUTATIONS - done)
        order = np.argsort(rng.random((r, polls, g)), axis=-1)  # one shuffle of the GPUs per poll
        perm = np.take_along_axis(np.broadcast_to(x.T, (r, polls, g)), order, axis=-1).transpose(0, 2, 1)
        hits += int((spread(perm) >= observed - 1e-9).sum())
        done += r
    return (hits + 1) / (PERMUTATIONS + 1)


def _lost(series: GpuSeries, table: pd.DataFrame, util: np.ndarray, valid: np.ndarray, dt: float,
          t0: float, warnings: list[str] | None = None) -> tuple[list[bool], list[str]]:
    """(lost?, note) per GPU: a long run of polls without a valid reading while most peers reported (from the
    GPU's first reading on), or no valid reading at all. Vectorised over GPUs; only the GPUs with a missed poll
    that peers answered are looked at one by one."""
    g_count, n_bins = util.shape
    notes = [""] * g_count
    errors = table["errors"].to_numpy(dtype=np.int64)
    samples = table["samples"].to_numpy(dtype=np.int64)
    if g_count >= 2 and n_bins >= 4:
        # bins where most peers reported: evidence either way (none without peers); a late start is not a loss
        peers = valid.sum(0, dtype=np.int64)[None, :] - valid
        watched = (2 * peers >= g_count - 1) & (np.arange(n_bins)[None, :] >= np.argmax(valid, axis=1)[:, None])
        watched &= valid.any(1)[:, None]
        candidates = np.flatnonzero((watched.sum(1) >= 4) & (watched & ~valid).any(1))
        for g in candidates:
            notes[g] = _gap_note(series, valid[g], np.flatnonzero(watched[g]), int(errors[g]), g, dt, t0,
                                 warnings)
    others_valid = valid.sum() - valid.sum(1) > 0  # the field exists: other GPUs report it
    never = others_valid & (samples > 0) & (errors == samples) & (errors >= MIN_LOST_POLLS) & ~_mig_parents(series)
    for g in np.flatnonzero(never):
        if not notes[g]:
            notes[g] = f"no valid utilization reading at all ({errors[g]} missing or error readings)"
    return [bool(n) for n in notes], notes


def _mig_parents(series: GpuSeries) -> np.ndarray:
    """Per GPU, whether its MIG instances are devices of the run (readers.dcgm numbers them MIG_BASE x (GPU + 1) +
    GPU_I_ID on its host): in MIG mode the GPU's own series (power, temperature) carry no utilization by design."""
    from playbook.readers.dcgm import MIG_BASE

    parents = {(h, int(i) // MIG_BASE - 1) for h, i in zip(series.hosts, series.index, strict=True)
               if int(i) >= MIG_BASE}
    return np.array([(h, int(i)) in parents for h, i in zip(series.hosts, series.index, strict=True)], dtype=bool)


def _gap_note(series: GpuSeries, valid: np.ndarray, watched: np.ndarray, errors: int, g: int, dt: float,
              t0: float, warnings: list[str] | None) -> str:
    """The note for GPU g's longest-lasting significant run of missed polls among `watched` bins ("" if none):
    it stopped for good, or a gap with error readings; a gap without errors is a logging gap (a warning)."""
    missing = ~valid[watched]
    need = chance_run(float(missing.mean()), len(watched), ALPHA, MIN_LOST_POLLS)
    start, length = true_runs(missing)
    long = length >= need
    if not long.any():
        return ""
    i = int(np.flatnonzero(long)[-1])
    a, b = int(watched[start[i]]), int(watched[start[i] + length[i] - 1])
    when = _clock(series, t0 + a * dt)
    if not valid[a:].any():
        return (f"stopped reporting at {when}, {fmt_span((int(watched[-1]) - a + 1) * dt)} before its "
                "peers' last sample" + (f" ({errors} missing or error readings)" if errors else ""))
    ts, x = series.get(g, "util_pct", dropna=False)
    inside = (ts >= t0 + (a - 0.5) * dt) & (ts < t0 + (b + 1.5) * dt)
    errors_in = int((inside & ~np.isfinite(x)).sum())
    gap = f"no valid reading for {fmt_span((b - a + 1) * dt)} from {when} while its peers reported"
    if errors_in >= MIN_LOST_POLLS:
        return f"{gap} ({errors_in} error readings)"
    if warnings is not None:
        warnings.append(f"{series.ids[g]}: {gap}, then reported normally again — a gap in the "
                        "logging, not a lost GPU (a lost GPU reports errors or stops for good)")
    return ""


def _clock(series: GpuSeries, seconds: float) -> str:
    if series.t0 is None:
        return f"t={seconds:.0f} s"
    return (series.t0 + pd.Timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S UTC")


def _throttle(series: GpuSeries, table: pd.DataFrame, has: dict, busy_thr: float) -> None:
    g_count = len(series)
    share = np.full(g_count, math.nan)
    low_bound = np.zeros(g_count)
    bits = [""] * g_count
    clock = np.full(g_count, math.nan)
    if has["sm_clock_mhz"]:  # the median SM clock of each GPU's busy polls (with 3 or more)
        u_all = series.values["util_pct"]
        busy_clock = np.isfinite(u_all) & (u_all >= busy_thr) & np.isfinite(series.values["sm_clock_mhz"])
        clock = np.where(series.counts(busy_clock) >= 3,
                         series.quantiles("sm_clock_mhz", ("median",), keep=busy_clock)[0], math.nan)
    for g in range(g_count) if has["throttle_reasons"] else ():  # the harmful clock-event reasons while busy
        _, u = series.get(g, "util_pct", dropna=False)
        busy = np.isfinite(u) & (u >= busy_thr)
        _, tr = series.get(g, "throttle_reasons", dropna=False)
        known = busy & np.isfinite(tr)
        n = int(known.sum())
        if n:
            masks = tr[known].astype(np.int64)
            bad = (masks & schema.THROTTLE_HARMFUL) != 0
            share[g] = float(bad.mean())
            low_bound[g] = wilson_lower(int(bad.sum()), n)
            if bad.any():
                names = schema.throttle_names(float(np.bitwise_or.reduce(masks[bad] & schema.THROTTLE_HARMFUL)))
                bits[g] = ", ".join(names)
    table["harmful_share"] = share
    table["harmful_lower"] = low_bound
    table["harmful_bits"] = bits
    table["busy_clock_mhz"] = clock
    deficit = np.full(g_count, math.nan)
    mz = np.full(g_count, math.nan)
    parts = series.parts()  # a clock is compared with the clocks of the same part only (a box may mix models)
    for part in np.unique(parts):
        fin = np.isfinite(clock) & (parts == part)
        if fin.sum() >= 3:
            med = float(np.median(clock[fin]))
            mad = max(float(np.median(np.abs(clock[fin] - med))), 0.01 * med / 0.6745)
            mz[fin] = 0.6745 * (clock[fin] - med) / mad
            deficit[fin] = 1 - clock[fin] / med
    table["clock_deficit"] = deficit
    table["clock_z"] = mz
    table["peer_clock_mhz"] = part_values(clock, parts, np.median)
    _self_reference(series, table, has, busy_thr)


def _self_reference(series: GpuSeries, table: pd.DataFrame, has: dict, busy_thr: float) -> None:
    """Throttling by self-reference: busy polls whose SM clock sits far below the clock this GPU — or the run's
    other GPUs — reaches while busy (95th percentile), so a single GPU can be throttled too. Columns self_ref_mhz,
    self_slow_share (share of busy polls that slow), self_slow_lower (its 95% Wilson lower bound), self_deficit
    (1 - median slow clock / reference), power_pinned_share (slow polls drawing ≥ 95% of the power limit) and
    power_limit_at_slow_w."""
    g_count = len(series)
    cols = {k: np.full(g_count, math.nan) for k in ("self_ref_mhz", "self_slow_share", "self_deficit",
                                                     "power_pinned_share", "power_limit_at_slow_w")}
    cols["self_slow_lower"] = np.zeros(g_count)
    cols.update({k: np.full(g_count, math.nan) for k in ("cap_share", "cap_limit_w", "cap_ref_w", "cap_deficit")})
    cols["cap_lower"] = np.zeros(g_count)
    cols.update({k: np.full(g_count, math.nan) for k in ("thermal_deficit", "thermal_cost", "thermal_p",
                                                         "thermal_cool_c", "thermal_hot_c", "thermal_power")})
    if not has["sm_clock_mhz"]:
        power_only_cap(series, cols, has, busy_thr)
        thermal_power_fall(series, cols, has, busy_thr)
        for k, v in cols.items():
            table[k] = v
        return
    v, offsets = series.values, series.offsets
    u_all, c_all = v["util_pct"], v["sm_clock_mhz"]
    busy_any = np.isfinite(u_all) & (u_all >= busy_thr)
    busy = busy_any & np.isfinite(c_all)  # per poll: busy with a clock reading
    # per GPU: the clock its part's GPUs reach while busy (the 95th percentile of their busy polls, 3 or more)
    parts, lengths = series.parts(), np.diff(offsets)
    fleet_ref = np.full(g_count, math.nan)
    for part in np.unique(parts):
        pooled = c_all[busy & np.repeat(parts == part, lengths)]
        if len(pooled) >= 3:
            fleet_ref[parts == part] = float(np.percentile(pooled, 95))
    limit_ref = sku_limit_refs(series, has)  # per GPU: the limit its own part runs at in the run (not another model's)
    p95 = series.quantiles("sm_clock_mhz", (95,), keep=busy_any)[0]
    pinned_all = None
    powered = has["power_w"] and has["power_limit_w"]
    if powered:
        with np.errstate(invalid="ignore"):
            pinned_all = np.isfinite(v["power_w"]) & np.isfinite(v["power_limit_w"]) & (
                v["power_w"] >= POWER_PINNED * v["power_limit_w"])
    # the clock it held at work for a few polls in a row; a poll drawing at its power limit is judged against it
    # only below the clock the run reaches anyway (a lower clock at the limit is the limit's trade: the cap test's)
    peak = sustained_peak_segments(c_all, busy, offsets)
    held = busy if pinned_all is None else busy & ~pinned_all
    with np.errstate(invalid="ignore"):
        reached = np.fmax(p95, fleet_ref)  # the clock this GPU, or its part's GPUs in the run, reach while busy
        ref = np.fmax(reached, peak)
    n_busy = series.counts(busy)
    eligible = n_busy >= 3
    with np.errstate(invalid="ignore"):
        slow = busy & (c_all < np.repeat((1 - SELF_DEFICIT_MIN) * reached, lengths)) | held & (
            c_all < np.repeat((1 - SELF_DEFICIT_MIN) * ref, lengths))
    n_slow = series.counts(slow)
    cols["self_ref_mhz"][eligible] = ref[eligible]
    with np.errstate(invalid="ignore", divide="ignore"):
        cols["self_slow_share"][eligible] = (n_slow / n_busy)[eligible]
    for g in np.flatnonzero(eligible):
        cols["self_slow_lower"][g] = wilson_lower(int(n_slow[g]), int(n_busy[g]))
    has_slow = eligible & (n_slow > 0)
    if has_slow.any():
        med = series.quantiles("sm_clock_mhz", ("median",), keep=slow)[0]
        cols["self_deficit"][has_slow] = 1 - med[has_slow] / ref[has_slow]
        if powered:
            pw, lim = v["power_w"], v["power_limit_w"]
            with np.errstate(invalid="ignore"):
                known = slow & np.isfinite(pw) & np.isfinite(lim) & (lim > 0)
                n_known, n_pinned = series.counts(known), series.counts(known & (pw >= POWER_PINNED * lim))
            sel = has_slow & (n_known > 0)
            if sel.any():
                cols["power_pinned_share"][sel] = (n_pinned / np.maximum(n_known, 1))[sel]
                cols["power_limit_at_slow_w"][sel] = series.quantiles("power_limit_w", ("median",), keep=known)[0][sel]
    if has["temp_c"]:
        for g in np.flatnonzero(eligible):  # a rank test per GPU (see gpu_limits.thermal_droop)
            a, b = offsets[g], offsets[g + 1]
            ok = busy[a:b]
            thermal_droop(c_all[a:b][ok], v["temp_c"][a:b][ok], cols, g,
                          None if pinned_all is None else pinned_all[a:b][ok],
                          v["power_w"][a:b][ok] if has["power_w"] else None)
            thermal_clock_plateau(c_all[a:b][ok], v["temp_c"][a:b][ok], cols, g,
                                  None if pinned_all is None else pinned_all[a:b][ok])
    if has["power_w"] and np.isfinite(limit_ref).any():
        _power_cap(series, cols, busy, eligible, n_busy, fleet_ref, limit_ref)
    for k, val in cols.items():
        table[k] = val


def _power_cap(series: GpuSeries, cols: dict, busy: np.ndarray, eligible: np.ndarray, n_busy: np.ndarray,
               fleet_ref: np.ndarray, limit_ref: np.ndarray) -> None:
    """A lowered power limit, by self-reference: busy polls pinned at a limit below the highest one this GPU or
    its peers of the same part run at (`limit_ref`, per GPU: gpu_limits.sku_limit_refs) — a cap someone set
    (nvidia-smi -pl, a scheduler, a BMC) holding the clock."""
    pw, lim = series.values["power_w"], series.values["power_limit_w"]
    ref_rows = np.repeat(limit_ref, np.diff(series.offsets))
    with np.errstate(invalid="ignore"):
        capped = busy & np.isfinite(pw) & np.isfinite(lim) & (lim < POWER_PINNED * ref_rows) & (
            pw >= POWER_PINNED * lim)
    n_cap = series.counts(capped)
    sel = eligible & (n_cap > 0)
    if not sel.any():
        return
    free = busy & ~capped
    free_ref = np.where(series.counts(free) >= 3, series.quantiles("sm_clock_mhz", (95,), keep=free)[0], fleet_ref)
    med = series.quantiles("sm_clock_mhz", ("median",), keep=capped)[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        deficit = np.where(np.isfinite(free_ref), 1 - med / free_ref, math.nan)
        cols["cap_share"][sel] = (n_cap / n_busy)[sel]
    for g in np.flatnonzero(sel):
        cols["cap_lower"][g] = wilson_lower(int(n_cap[g]), int(n_busy[g]))
    cols["cap_limit_w"][sel] = series.quantiles("power_limit_w", ("median",), keep=capped)[0][sel]
    cols["cap_ref_w"][sel] = limit_ref[sel]
    cols["cap_deficit"][sel] = deficit[sel]


def _relative(table: pd.DataFrame, util: np.ndarray, valid: np.ndarray, dt: float) -> None:
    """Each GPU against the median of its peers at the same polls: mean difference, sign test, poll counts."""
    peer = _peer_median(util)
    ok = valid & np.isfinite(peer)
    res = sign_tests((util - peer).astype(np.float64), ok)
    table["delta_pct"] = res["mean"]
    table["delta_p"] = list(res["p"])  # None where untested, as a float column (NaN) when any p exists
    table["delta_n_eff"] = res["n_eff"]
    table["polls_below"] = res["below"]
    table["polls_above"] = res["above"]
    table["polls_compared"] = res["kept"]
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            table["peer_median_pct"] = np.nanmean(np.where(valid, peer, np.nan), axis=1).astype(np.float64)


def _memory(series: GpuSeries, table: pd.DataFrame, has: dict) -> None:
    g_count = len(series)
    swing = np.full(g_count, math.nan)
    peak = np.full(g_count, math.nan)
    total = np.full(g_count, math.nan)
    if has["mem_used_mib"]:  # the 5th-95th percentile swing and the peak (min-max below 20 readings)
        n = series.counts(np.isfinite(series.values["mem_used_mib"]))
        p5, p95, top, low = series.quantiles("mem_used_mib", (5, 95, 100, 0))
        many = n >= 20
        swing = np.where(n >= 2, np.where(many, p95 - p5, top - low), math.nan)
        peak = np.where(n >= 2, top, math.nan)
    if has["mem_total_mib"]:
        total = series.quantiles("mem_total_mib", ("median",))[0]
    table["mem_swing_mib"] = swing
    table["mem_peak_mib"] = peak
    table["mem_total_mib"] = total
    limit = np.where(np.isfinite(total), MEM_SWING_FRACTION * total, MEM_SWING_MIB)
    table["mem_swings"] = np.isfinite(swing) & (swing >= limit)
    table["mem_near_full"] = np.isfinite(total) & np.isfinite(peak) & (peak >= 0.97 * total)


def clock_cost(r) -> float:
    """The share of a throttled GPU's busy work its clock limiter costs (a table row): the largest of the peer
    clock deficit, the self-referenced slow share × its deficit, the capped share × the cap's (DVFS) deficit and
    the thermal cost (the clock given up to heat over the busy polls); 0 where none is measured (throttle reason
    bits alone)."""
    cost = float(r.clock_deficit) if np.isfinite(r.clock_deficit) else 0.0
    self_cost = getattr(r, "self_slow_share", math.nan) * getattr(r, "self_deficit", math.nan)
    if getattr(r, "self_slow_lower", 0.0) >= 0.01 and np.isfinite(self_cost):
        cost = max(cost, float(self_cost))  # clock-bound work runs at the clock's pace
    cap_cost = getattr(r, "cap_share", math.nan) * getattr(r, "cap_deficit", math.nan)
    if getattr(r, "cap_lower", 0.0) >= 0.01 and np.isfinite(cap_cost) and cap_cost > 0:
        cost = max(cost, float(cap_cost))
    thermal_cost = getattr(r, "thermal_cost", math.nan)
    if np.isfinite(thermal_cost):
        cost = max(cost, float(thermal_cost))
    return cost


def _status(r, g_count: int) -> tuple[str, str]:
    """Status and a one-line evidence string for one table row."""
    mean = f"mean {r.mean_util_pct:.0f}%" if np.isfinite(r.mean_util_pct) else "no valid utilization"
    peers = (f"peers {r.peer_median_pct:.0f}%" if np.isfinite(r.peer_median_pct) else "")
    extra = []
    if r.mem_swings:
        extra.append(f"memory swings by {r.mem_swing_mib / 1024:.1f} GiB")
    if r.mem_near_full:
        extra.append(f"memory peaks at {r.mem_peak_mib / 1024:.1f} of {r.mem_total_mib / 1024:.0f} GiB")
    tail = ("; " + "; ".join(extra)) if extra else ""
    if r.lost:
        return "lost", f"{r.lost_note}; {mean}{tail}"
    if not np.isfinite(r.mean_util_pct) and r.errors:
        return "ok", (f"no valid utilization ({r.errors} missing or error reading{'s' if r.errors != 1 else ''}: "
                      f"too few to call it lost, which takes {MIN_LOST_POLLS} in a row){tail}")
    harmful = r.harmful_lower >= THROTTLE_SHARE_MIN
    slow_clock = (np.isfinite(r.clock_z) and r.clock_z <= -MODIFIED_Z and r.clock_deficit >= CLOCK_DEFICIT_MIN)
    self_slow = r.self_slow_lower >= THROTTLE_SHARE_MIN
    capped = (r.cap_lower >= THROTTLE_SHARE_MIN and np.isfinite(r.cap_deficit) and r.cap_deficit >= CLOCK_DEFICIT_MIN)
    by_power = r.thermal_power == 1.0  # no clock: the DVFS estimate of a power fall (gpu_limits)
    thermal = (np.isfinite(r.thermal_deficit) and r.thermal_p < ALPHA
               and r.thermal_deficit >= (CLOCK_DEFICIT_MIN if by_power else THERMAL_DEFICIT_MIN))
    if harmful or slow_clock or self_slow or capped or thermal:
        parts = []
        if thermal:
            plateau = r.thermal_power == PLATEAU_TEST
            clock = (f"no SM clock recorded: the busy power falls as the GPU heats from {r.thermal_cool_c:.0f} to "
                     f"{r.thermal_hot_c:.0f} °C and holds there, by DVFS (power ~ clock³) the clock ≈ "
                     f"{r.thermal_deficit:.0%} lower" if by_power else
                     f"SM clock held {r.thermal_deficit:.0%} below the clock it sustained at work while the GPU sits "
                     f"at its top temperature ({r.thermal_hot_c:.0f} °C)" if plateau else
                     f"SM clock falls {r.thermal_deficit:.0%} as the GPU heats from {r.thermal_cool_c:.0f} to "
                     f"{r.thermal_hot_c:.0f} °C while busy")
            test = f"sign test of the hot polls' {'draw' if by_power else 'clock'}" if by_power or plateau else \
                "one-sided Spearman"
            parts.append(f"{clock} ({test}, p = {r.thermal_p:.1g}): thermal throttling — check cooling, airflow and "
                         "the GPU's max operating temperature")
        if harmful:
            parts.append(f"{r.harmful_bits} in {r.harmful_share:.0%} of busy polls")
        if slow_clock:
            parts.append(f"SM clock {r.busy_clock_mhz:.0f} MHz while busy vs peers {r.peer_clock_mhz:.0f} MHz "
                         f"({-r.clock_deficit:+.0%})")
        if self_slow:
            ref_clock = (1 - r.self_deficit) * r.self_ref_mhz
            parts.append(f"busy at {ref_clock:.0f} MHz in {r.self_slow_share:.0%} of busy polls against the "
                         f"{r.self_ref_mhz:.0f} MHz {'the GPU reaches' if g_count == 1 else 'the GPUs reach'} busy in this "
                         f"run ({-r.self_deficit:+.0%}; 100% utilization counts any kernel running, not speed)")
            if np.isfinite(r.power_pinned_share) and r.power_pinned_share >= 0.5:
                parts.append(f"power pinned at its {r.power_limit_at_slow_w:.0f} W limit in "
                             f"{r.power_pinned_share:.0%} of those polls: a power cap")
        if capped and not (self_slow and np.isfinite(r.power_pinned_share) and r.power_pinned_share >= 0.5):
            clock = (f"the SM clock {r.cap_deficit:.0%} below what it reaches without the cap" if
                     np.isfinite(r.self_ref_mhz) else f"no SM clock recorded: by DVFS (power ~ clock³) the clock "
                     f"≈ {r.cap_deficit:.0%} lower; record clocks.sm and clocks_event_reasons to confirm")
            parts.append(f"power limit lowered to {r.cap_limit_w:.0f} W (below the {r.cap_ref_w:.0f} W its default "
                         f"or the run's GPUs of this part allow) and pinned there in {r.cap_share:.0%} of busy polls, "
                         f"{clock}: a power cap")
        return "throttled", "; ".join(parts) + f"; {mean}{tail}"
    if g_count >= 2 and np.isfinite(r.delta_pct) and r.polls_compared:
        testable = r.delta_n_eff >= 5
        sig = (not testable) or (r.delta_p is not None and r.delta_p < ALPHA)
        how = (f"below peers in {r.polls_below}/{r.polls_compared} polls" if r.delta_pct < 0
               else f"above peers in {r.polls_above}/{r.polls_compared} polls")
        note = "" if testable else " (too few polls to test)"
        if r.delta_pct <= -MIN_DELTA_PCT and sig:
            idle = ("idle throughout (no memory allocated: not used by this job?); " if r.unused else
                    "idle throughout; " if r.idle_throughout else "")
            return "underutilized", (f"{idle}{mean} vs {peers} at the same moments ({r.delta_pct:+.0f} points); "
                                     f"{how}{note}{tail}")
        if r.delta_pct >= MIN_DELTA_PCT and r.busy_share >= SATURATED_SHARE and sig:
            return "saturated", f"{mean} vs {peers} at the same moments ({r.delta_pct:+.0f} points); {how}{note}{tail}"
    # ok next to its peers, yet idle (one busy Gaudi among idle ones, or all idle): said, never left to read as busy
    idle = "idle: " if np.isfinite(r.mean_util_pct) and r.mean_util_pct <= IDLE_PCT else ""
    return "ok", f"{idle}{mean}" + (f" ({peers})" if peers and g_count >= 2 else "") + tail
