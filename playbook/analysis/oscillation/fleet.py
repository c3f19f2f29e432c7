"""The fleet: the oscillation verdict for a set of GPUs (levels, swings, period, duty cycle, synchrony) from
the per-series analyses, and the frames the plots draw (the period spectrum, the folded cycle)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from playbook.analysis.oscillation import MIN_SAMPLES_PERIOD
from playbook.analysis.oscillation.levels import MIN_AMPLITUDE_PCT, hysteresis_states
from playbook.analysis.oscillation.spectrum import empty_spectrum, spectrum
from playbook.analysis.oscillation.swing import MIN_MINORITY_SHARE, SeriesOscillation, analyze_series
from playbook.analysis.oscillation.synchrony import correlation_bins, staggered, state_grid, synchrony
from playbook.analysis.oscillation.turns import turn_taking
from playbook.analysis.series import MAX_GRID, GpuSeries, gpu_series, group_mean
from playbook.core.jsonable import json_float


@dataclass
class OscillationResult:
    """The oscillation verdict for a set of GPUs (or ranks), plus per-series detail for reports."""

    detected: bool = False
    periodic: bool = False
    period_s: float = math.nan
    duty_cycle: float = math.nan
    high_pct: float = math.nan
    low_pct: float = math.nan
    synchrony: str | None = None
    groups: list[list[str]] = field(default_factory=list)
    antiphase: list[tuple[list[str], list[str]]] = field(default_factory=list)
    p_value: float = math.nan
    method: str = ""
    signal: str = "util_pct"
    interval_s: float = math.nan
    lost_fraction: float = 0.0
    swinging: list[str] = field(default_factory=list)
    per_gpu: pd.DataFrame = field(default_factory=pd.DataFrame)
    group_detail: list[SeriesOscillation] = field(default_factory=list)
    reference_onset_s: float = math.nan
    dips_s: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # the main unit's drops (s since t0)
    t0: pd.Timestamp | None = None
    warnings: list[str] = field(default_factory=list)
    few_samples: bool = False  # too few samples per series to test for a period or synchrony
    # when nothing swings: one drop shared by the GPUs (a stall, or one cycle of a swing slower than the recording)
    # {gpus, of, start_s, end_s (s since t0), high_pct, low_pct, lost_fraction}; None otherwise
    single_drop: dict | None = None
    # GPUs swinging with one period at phases stepping in GPU order (pipeline bubbles): synchrony.staggered's dict
    staggered: dict | None = None
    # swinging GPUs busy one at a time, far less often together than independent ones (turns.turn_taking's dict
    # with 'gpus'): stages of one model run in sequence
    turns: dict | None = None

    def contract(self) -> dict:
        """The `oscillation` object of the diagnose JSON contract (NaN → None)."""

        return {
            "detected": bool(self.detected),
            "periodic": bool(self.periodic),
            "period_s": json_float(self.period_s, 2) if self.periodic else None,
            "duty_cycle": json_float(self.duty_cycle, 3) if self.detected else None,
            "high_pct": json_float(self.high_pct, 1),
            "low_pct": json_float(self.low_pct, 1) if self.detected else None,
            "synchrony": self.synchrony,
            "groups": [list(g) for g in self.groups],
        }


def _single_drop(per: dict[int, SeriesOscillation], table: pd.DataFrame) -> dict | None:
    """One drop inside the busy span on at least half of the GPUs (and at least one), all overlapping in time.

    A swing needs two drops (analyze_series); a single shared drop is still time lost — a one-off stall, or one
    cycle of a swing slower than the recording. Its lost fraction is computed as for a swing."""
    once = [g for g, so in per.items() if so.levels.bimodal and len(so.dips_s) == 1
            and min(so.high_share, 1.0 - so.high_share) >= MIN_MINORITY_SHARE]
    if not once or 2 * len(once) < len(per):
        return None
    spans = np.array([per[g].dips_s[0] for g in once])
    start, end = float(spans[:, 0].max()), float(spans[:, 1].min())
    if end <= start:  # not all at once: separate one-off events, not a shared stall
        return None
    sub = table.iloc[once]
    amp = ((sub["high_pct"] - sub["low_pct"]) / sub["high_pct"].clip(lower=1)).clip(0, 1)
    return {"gpus": len(once), "of": len(per), "start_s": float(np.median(spans[:, 0])),
            "end_s": float(np.median(spans[:, 1])), "high_pct": float(np.nanmedian(sub["high_pct"])),
            "low_pct": float(np.nanmedian(sub["low_pct"])),
            "lost_fraction": float(((1 - sub["high_share"]) * amp).sum() / len(per))}


def analyze_oscillation(telemetry: pd.DataFrame, column: str = "util_pct", interval_s: float | None = None,
                        signal: str | None = None) -> OscillationResult:
    """Levels, swings, period, duty cycle and synchrony of `column` across all GPUs of `telemetry`."""
    series = gpu_series(telemetry, (column,), interval_s=interval_s)
    return analyze_gpu_series(series, column, signal=signal or column)


def analyze_gpu_series(series: GpuSeries, column: str = "util_pct", signal: str | None = None) -> OscillationResult:
    """analyze_oscillation on an already split GpuSeries.

    GPUs whose recordings do not overlap in time (e.g. two runs passed together) are analysed as separate sets;
    the summary is the largest set's, with the other sets' groups appended and a warning."""
    clusters = series.time_clusters()
    if len(clusters) > 1:
        parts = [_analyze_one(series.subset(c), column, signal) for c in clusters]
        main = parts[0]
        main.warnings = list(series.warnings) + [
            f"the inputs cover {len(clusters)} separate time ranges ({', '.join(str(len(c)) for c in clusters)} "
            "GPUs): GPUs are compared only within their own range; the summary is the largest range's"] + \
            [w for p in parts for w in p.warnings if w not in series.warnings]
        main.per_gpu = pd.concat([p.per_gpu for p in parts], ignore_index=True)
        main.swinging = [i for p in parts for i in p.swinging]
        main.groups = [g for p in parts for g in p.groups]
        main.warnings = list(dict.fromkeys(main.warnings))
        return main
    return _analyze_one(series, column, signal)


def _analyze_one(series: GpuSeries, column: str = "util_pct", signal: str | None = None) -> OscillationResult:
    res = OscillationResult(signal=signal or column, t0=series.t0, warnings=list(series.warnings))
    if len(series) == 0:
        res.warnings.append("no telemetry samples: nothing to analyse for oscillation")
        return res
    table, per, states = _per_gpu(series, column)
    return _summarise_fleet(res, series, column, table, per, states)


def _per_gpu(series: GpuSeries, column: str) -> tuple[pd.DataFrame, dict[int, SeriesOscillation],
                                                      dict[int, np.ndarray]]:
    """(one row per GPU of its levels, swings and period; each GPU's SeriesOscillation; the high/low states
    of the bimodal ones), for `column` of every GPU in `series`."""
    rows, per, states = [], {}, {}
    for g in range(len(series)):
        t, x = series.get(g, column)
        so = analyze_series(t, x, series.interval(g))
        per[g] = so
        if so.levels.bimodal and len(t):
            states[g] = hysteresis_states(x, so.levels)
        rows.append({
            "id": series.ids[g], "host": series.hosts[g], "gpu": series.index[g], "samples": so.n,
            "interval_s": so.interval_s, "mean_pct": float(np.mean(x)) if len(x) else math.nan,
            "high_pct": so.levels.high, "low_pct": so.levels.low, "separation": so.levels.separation,
            "bimodal": so.levels.bimodal, "transitions": so.transitions, "swings": so.swings, "dips": so.dips,
            "high_share": so.high_share, "duty_cycle": so.duty_cycle if so.swings else math.nan,
            "periodic": so.periodic, "period_s": so.period_s, "p_value": so.p_value, "method": so.method,
            "acf_at_period": so.acf_at_period, "group": -1,
        })
    return pd.DataFrame(rows), per, states


def _summarise_fleet(res: OscillationResult, series: GpuSeries, column: str, table: pd.DataFrame,
                     per: dict[int, SeriesOscillation], states: dict[int, np.ndarray]) -> OscillationResult:
    """Fill `res` from the per-GPU results: which GPUs swing, the fleet's levels and lost fraction, and (with
    two or more swinging GPUs and enough samples) their synchrony groups and period."""
    intervals = table["interval_s"].to_numpy(dtype=float)
    res.interval_s = float(np.nanmedian(intervals)) if np.isfinite(intervals).any() else math.nan
    swinging = [g for g in range(len(series)) if per[g].swings]
    res.swinging = [series.ids[g] for g in swinging]
    median_n = float(np.median(table["samples"])) if len(table) else 0.0
    few = median_n < MIN_SAMPLES_PERIOD
    res.few_samples = few
    if few:
        res.warnings.append(
            f"only {int(median_n)} sample{'s' if int(median_n) != 1 else ''} per GPU ({'' if not np.isfinite(res.interval_s) else f'{res.interval_s:g} s apart, '}"
            f"{median_n * (res.interval_s if np.isfinite(res.interval_s) else 0):.0f} s): too few to estimate a period "
            f"or synchrony (needs ≥ {MIN_SAMPLES_PERIOD}); reporting levels and which GPUs sit idle or busy only")
    notes = sorted({per[g].note for g in swinging if per[g].note and not few})
    res.warnings += notes[:3]
    res.detected = bool(swinging)
    res.per_gpu = table
    if not swinging:
        busy = table["high_pct"].where(table["bimodal"], table["mean_pct"])
        res.high_pct = float(np.nanmedian(busy)) if busy.notna().any() else math.nan
        if not few:
            res.single_drop = _single_drop(per, table)
        return res
    sub = table.iloc[swinging]
    res.high_pct = float(np.nanmedian(sub["high_pct"]))
    res.low_pct = float(np.nanmedian(sub["low_pct"]))
    res.duty_cycle = float(np.nanmedian(sub["duty_cycle"]))
    amp_loss = ((sub["high_pct"] - sub["low_pct"]) / sub["high_pct"].clip(lower=1)).clip(0, 1)
    res.lost_fraction = float(((1 - sub["high_share"]) * amp_loss).sum() / len(series))
    res.dips_s = max((per[g].dips_s for g in swinging), key=len)
    for g in per:
        per[g].spectrum = None  # keep memory flat: the per-GPU periodograms are not needed any more
    if few or len(swinging) < 2:
        res.groups = [[series.ids[g]] for g in swinging] if not few else []
        res.synchrony = None
        _fleet_period(res, [per[g] for g in swinging])
        return res
    _synchrony_groups(res, series, column, table, per, states, swinging, intervals)
    if res.synchrony in ("independent", "groups"):  # neighbours in a pipeline overlap: they can pair up
        found = staggered([per[g].dips_s for g in swinging], [per[g].period_s for g in swinging])
        if found:
            res.staggered = {**found, "gpus": [series.ids[swinging[i]] for i in found["gpus"]]}
    return res


def _synchrony_groups(res: OscillationResult, series: GpuSeries, column: str, table: pd.DataFrame,
                      per: dict[int, SeriesOscillation], states: dict[int, np.ndarray], swinging: list[int],
                      intervals: np.ndarray) -> None:
    """Group the swinging GPUs by synchrony (sets res.synchrony, groups, antiphase and table["group"]) and take
    the period, levels and duty cycle from the dominant group's mean signal (else from its members)."""
    lo, hi = series.span
    dt = max(float(np.nanmedian(intervals[swinging])), 1e-6)
    nb = int((hi - lo) / dt) + 1
    if nb > MAX_GRID:
        dt *= math.ceil(nb / MAX_GRID)
        nb = int((hi - lo) / dt) + 1
    grid = state_grid(series, swinging, states, dt, lo, nb)
    corr = correlation_bins(grid)
    sync = synchrony(grid, corr)
    res.synchrony = sync.label
    res.groups = [[series.ids[swinging[r]] for r in c] for c in sync.groups]
    for gi, c in enumerate(sync.groups):
        table.loc[[swinging[r] for r in c], "group"] = gi
    res.antiphase = [(res.groups[i], res.groups[j]) for i, j in sync.antiphase]
    if sync.label in ("independent", "groups"):
        found = turn_taking(grid, corr)
        if found:
            res.turns = {**found, "gpus": [series.ids[swinging[r]] for r in found["rows"]]}
    # the dominant group: most members, then most time lost; its mean signal carries the period
    main = sync.groups[0]
    if len(main) >= 2:
        t_mean, x_mean = group_mean(series, [swinging[r] for r in main], column, dt, lo, nb)
        gso = analyze_series(t_mean, x_mean, dt, min_amplitude=MIN_AMPLITUDE_PCT / 2, with_spectrum=True)
        res.group_detail.append(gso)
        if len(gso.dips_s):
            res.dips_s = gso.dips_s
        member = [per[swinging[r]] for r in main]
        if gso.periodic:
            res.periodic, res.period_s, res.p_value, res.method = True, gso.period_s, gso.p_value, gso.method
            res.reference_onset_s = float(gso.onsets[0]) if len(gso.onsets) else math.nan
        else:
            _fleet_period(res, member)
        res.high_pct = float(np.nanmedian([m.levels.high for m in member]))
        res.low_pct = float(np.nanmedian([m.levels.low for m in member]))
        res.duty_cycle = float(np.nanmedian([m.duty_cycle for m in member]))
    else:
        _fleet_period(res, [per[g] for g in swinging])


def _fleet_period(res: OscillationResult, members: list[SeriesOscillation]) -> None:
    """Periodic when most members are; the period is the median of theirs."""
    periodic = [m for m in members if m.periodic]
    if members and len(periodic) * 2 > len(members):
        res.periodic = True
        res.period_s = float(np.median([m.period_s for m in periodic]))
        res.p_value = float(np.median([m.p_value for m in periodic]))
        res.method = periodic[0].method
        on = [m.onsets[0] for m in periodic if len(m.onsets)]
        res.reference_onset_s = float(np.median(on)) if on else math.nan
    else:
        res.periodic = False
        res.p_value = float(np.median([m.p_value for m in members])) if members else math.nan


def period_spectrum(telemetry: pd.DataFrame, column: str = "util_pct", gpus: list[str] | None = None,
                    interval_s: float | None = None) -> pd.DataFrame:
    """Periodogram of the mean of `column` over `gpus` (default all), with its red-noise null and the
    significance threshold: columns freq_hz, period_s, power, null, threshold, p_value, in_band. Empty when the
    series is too short for any period."""
    series = gpu_series(telemetry, (column,), interval_s=interval_s)
    members = [i for i, g in enumerate(series.ids) if gpus is None or g in gpus]
    if not members:
        return empty_spectrum().frame()
    dt = float(np.nanmedian([series.interval(g) for g in members]))
    lo, hi = series.span
    nb = int((hi - lo) / dt) + 1 if np.isfinite(dt) and dt > 0 else 0
    if nb < 4:
        return empty_spectrum().frame()
    if nb > MAX_GRID:
        dt *= math.ceil(nb / MAX_GRID)
        nb = int((hi - lo) / dt) + 1
    t, x = group_mean(series, members, column, dt, lo, nb)
    spec = spectrum(t, x, dt)
    if spec is None:
        return empty_spectrum(dt).frame()
    frame = spec.frame()
    return frame[frame["freq_hz"] > 0].reset_index(drop=True)


def fold_cycle(telemetry: pd.DataFrame, period_s: float | None = None, column: str = "util_pct",
               bins: int | None = None, gpus: list[str] | None = None,
               reference_s: float | None = None) -> pd.DataFrame:
    """Utilization folded on the oscillation period: columns phase (0-1), time_in_cycle_s, median, q25, q75, n.

    Without `period_s` the period (and the reference: the first drop of the dominant group) comes from
    analyze_oscillation; empty when no period was found. Phase 0 is a drop from high to low (without
    `reference_s`, the steepest fall of the folded median).
    """
    cols = ["phase", "time_in_cycle_s", "median", "q25", "q75", "n"]
    ref = reference_s
    if period_s is None:
        res = analyze_oscillation(telemetry, column)
        if not res.periodic:
            return pd.DataFrame(columns=cols)
        period_s = res.period_s
        ref = res.reference_onset_s if ref is None else ref
    series = gpu_series(telemetry, (column,))
    members = [i for i, g in enumerate(series.ids) if gpus is None or g in gpus]
    if not members or not (period_s and period_s > 0):
        return pd.DataFrame(columns=cols)
    t = np.concatenate([series.get(g, column)[0] for g in members])
    x = np.concatenate([series.get(g, column)[1] for g in members])
    dt = float(np.nanmedian([series.interval(g) for g in members]))
    if bins is None:
        bins = int(np.clip(round(period_s / dt) if np.isfinite(dt) and dt > 0 else 24, 8, 120))
    if ref is None or not np.isfinite(ref):
        # align on the data: fold once, then start the cycle at the steepest drop of the folded median
        k0 = np.minimum((((t / period_s) % 1.0) * bins).astype(np.int64), bins - 1)
        sums = np.bincount(k0, weights=x, minlength=bins)
        counts = np.bincount(k0, minlength=bins)
        prof = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        prof = pd.Series(prof).interpolate(limit_direction="both").to_numpy()
        drop = prof - np.roll(prof, -1)  # fall from bin b to b+1
        ref = (int(np.nanargmax(drop)) + 1) / bins * period_s if np.isfinite(drop).any() else 0.0
    phase = ((t - ref) / period_s) % 1.0
    k = np.minimum((phase * bins).astype(np.int64), bins - 1)
    order = np.lexsort((x, k))
    ks, xs = k[order], x[order]
    starts = np.searchsorted(ks, np.arange(bins))
    ends = np.searchsorted(ks, np.arange(bins), side="right")
    out = []
    for b in range(bins):
        v = xs[starts[b]:ends[b]]
        q = np.percentile(v, [25, 50, 75]) if len(v) else [math.nan] * 3
        out.append(((b + 0.5) / bins, (b + 0.5) / bins * period_s, q[1], q[0], q[2], len(v)))
    return pd.DataFrame(out, columns=cols)
