"""GPU utilization over time: heatmap of GPUs × time, per-host lines, period spectrum, folded cycle, status table.

Inputs are tidy frames (schema.TELEMETRY_COLUMNS, or any frame with `time`, `host`, a unit column such as `gpu`
or `rank`, and a metric column, e.g. analysis.step_times.busy_timeline's `busy_frac`). Each plot takes an optional
`ax` and returns the Figure; the binning helpers are separate so they can be tested and reused.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from playbook.plots.style import PALETTE, figure

METRIC_LABELS = {
    "util_pct": "utilization.gpu (%)",
    "mem_util_pct": "memory utilization (%)",
    "sm_active": "SM active (fraction)",
    "power_w": "power draw (W)",
    "sm_clock_mhz": "SM clock (MHz)",
    "mem_used_mib": "memory used (MiB)",
    "temp_c": "temperature (°C)",
    "busy_frac": "busy fraction (0-1, from step phases)",
    "busy_pct": "busy (% of time in compute phases)",
    "kernel_busy_pct": "GPU busy (% of time a kernel or copy runs, from the trace)",
}
STATUS_COLORS = {
    "ok": "#2a9d8f",
    "underutilized": "#e76f51",
    "saturated": "#264653",
    "throttled": "#e9c46a",
    "lost": "#6c757d",
}


def metric_label(metric: str) -> str:
    """Axis label with unit for a metric column."""
    return METRIC_LABELS.get(metric, metric)


def time_axis(seconds: np.ndarray) -> tuple[np.ndarray, str]:
    """Seconds since start rescaled to s, min or h (whichever keeps the span readable) and the axis label."""
    span = float(np.nanmax(seconds)) if len(seconds) else 0.0
    if span > 3 * 3600:
        return seconds / 3600.0, "time since start (h)"
    if span > 30 * 60:
        return seconds / 60.0, "time since start (min)"
    return seconds, "time since start (s)"


def unit_ids(frame: pd.DataFrame, unit: str = "gpu") -> pd.Series:
    """"host:unit" identity per row (schema.gpu_id for GPUs)."""
    return frame["host"].astype(str) + ":" + frame[unit].astype("int64").astype(str)


def binned_matrix(frame: pd.DataFrame, metric: str = "util_pct", unit: str = "gpu",
                  max_bins: int = 400) -> pd.DataFrame:
    """Mean of `metric` per (unit, time bin): rows "host:unit" ordered by host then index, columns the bin start
    in seconds since the first sample; NaN where a bin holds no sample. Bins are a whole number of sampling
    intervals (as few as keep at most `max_bins`, and at least as long as the longest regular poll: see
    sampling_interval), starting half an interval early so a sample falls in the bin of its nominal time. So the
    jitter of an ordinary 1 s poll leaves no empty bin; a gap in the log longer than a bin does."""
    data, assumed = with_times(frame, unit)
    if data.empty:
        return pd.DataFrame(dtype="float64")
    ns = data["time"].dt.as_unit("ns").astype("int64").to_numpy()
    t0_ns = int(ns.min())
    secs = (ns - t0_ns) / 1e9
    span = float(secs.max())
    host_codes, host_names = pd.factorize(data["host"].astype(str), sort=True)
    units = data[unit].to_numpy(dtype="int64")
    u_min, u_span = int(units.min()), int(units.max() - units.min()) + 1
    pairs, row = np.unique(host_codes.astype("int64") * u_span + (units - u_min), return_inverse=True)
    interval, longest = sampling_interval(secs, row)  # measured: a nominal one drifts off the samples
    if not np.isfinite(interval) or interval <= 0:
        interval = data.attrs.get("interval_s") or frame.attrs.get("interval_s") or np.nan
        longest = interval
    if not np.isfinite(interval) or interval <= 0:
        interval = longest = span / max(len(data) / len(pairs), 1) or 1.0
    # whole intervals, at least as long as the longest regular poll (so none falls between two bins), and few
    # enough for max_bins
    k = max(int(np.ceil(longest / interval - 1e-6)), int(np.ceil((span + interval) / max_bins / interval - 1e-9)), 1)
    bin_s = float(interval) * k
    bins = np.floor((secs + interval / 2) / bin_s).astype("int64")
    n_bins = int(bins.max()) + 1
    values = pd.to_numeric(data[metric], errors="coerce").to_numpy(dtype="float64")
    ok = np.isfinite(values)
    cell = row[ok] * n_bins + bins[ok]
    sums = np.bincount(cell, weights=values[ok], minlength=len(pairs) * n_bins)
    counts = np.bincount(cell, minlength=len(pairs) * n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).reshape(len(pairs), n_bins)
    ids = [f"{host_names[p // u_span]}:{p % u_span + u_min}" for p in pairs]
    matrix = pd.DataFrame(mean, index=pd.Index(ids), columns=np.arange(n_bins) * bin_s)
    t0 = pd.Timestamp(t0_ns, unit="ns", tz="UTC")
    matrix.attrs["bin_s"] = bin_s
    matrix.attrs["t0"] = t0
    matrix.attrs["assumed_interval_s"] = assumed
    return matrix


def sampling_interval(secs: np.ndarray, unit_row: np.ndarray) -> tuple[float, float]:
    """(mean, longest): the mean time (s) between consecutive samples of one unit, and the 99th percentile of
    those times (the longest a regular poll takes: jitter, or whole-second timestamps of a 1.03 s loop);
    (NaN, NaN) with fewer than two samples per unit."""
    order = np.lexsort((secs, unit_row))
    gaps = np.diff(secs[order])[np.diff(unit_row[order]) == 0]
    gaps = gaps[gaps > 0]
    if not len(gaps):
        return float("nan"), float("nan")
    return float(gaps.mean()), float(np.quantile(gaps, 0.99))


def with_times(frame: pd.DataFrame, unit: str) -> tuple[pd.DataFrame, float | None]:
    """Rows with a time; when no row has one (e.g. a bare nvidia-smi poll), samples placed `interval_s` (1 s
    unless attrs say otherwise) apart in file order per unit, and that interval returned as the second item."""
    if frame["time"].notna().any():
        return frame.dropna(subset=["time"]), None
    if frame.empty:
        return frame, None
    step = frame.attrs.get("interval_s")
    step = float(step) if step and np.isfinite(step) and step > 0 else 1.0
    order = frame.groupby(["host", unit], sort=False).cumcount().to_numpy()
    data = frame.assign(time=pd.Timestamp(0, tz="UTC") + pd.to_timedelta(order * step, unit="s"))
    data.attrs = {**frame.attrs, "interval_s": step}
    return data, step


def _xlabel(label: str, matrix: pd.DataFrame) -> str:
    step = matrix.attrs.get("assumed_interval_s")
    return label if step is None else f"{label}: no timestamps, samples placed {step:g} s apart"


STATUS_ORDER = ("lost", "throttled", "underutilized", "saturated")  # shown first, most severe first
MAX_BINS_PER_PERIOD = 8  # a known period gets at least this many bins per cycle, so one GPU's swing survives
MAX_HEATMAP_BINS = 2000  # about the pixel width of the figure: finer bins are invisible


def heatmap_bins(span_s: float, max_bins: int, period_s: float | None = None) -> int:
    """Time bins for a heatmap of `span_s` seconds: `max_bins`, raised so a period of `period_s` spans at least
    MAX_BINS_PER_PERIOD bins (averaging over a whole cycle would flatten the swing to its mean), capped at
    MAX_HEATMAP_BINS."""
    bins = int(max_bins)
    if period_s and np.isfinite(period_s) and period_s > 0 and span_s > 0:
        bins = max(bins, int(np.ceil(MAX_BINS_PER_PERIOD * span_s / period_s)))
    return int(min(max(bins, 1), MAX_HEATMAP_BINS))


def heatmap_rows(ids: list[str], status: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """(row order, status per row): GPUs that are not ok first (most severe status first, then host and index),
    then the ok ones by host and index. `status` maps "host:index" -> diagnosis status; missing = ok."""
    status = status or {}

    def key(gid: str):
        host, _, idx = gid.rpartition(":")
        st = status.get(gid, "ok")
        rank = STATUS_ORDER.index(st) if st in STATUS_ORDER else (len(STATUS_ORDER) if st != "ok" else 99)
        return (rank, host, int(idx) if idx.lstrip("-").isdigit() else 0)

    order = sorted(ids, key=key)
    return order, [status.get(g, "ok") for g in order]


def heatmap(frame: pd.DataFrame, metric: str = "util_pct", unit: str = "gpu", ax=None,
            max_bins: int = 400, title: str | None = None, status: dict[str, str] | None = None,
            period_s: float | None = None, figsize: tuple[float, float] | None = None):
    """Heatmap of `metric` for every GPU (rows) over time (columns); hatched grey = no sample (never 0%).

    Rows: GPUs that are not ok first (`status`: "host:index" -> status, e.g. from the diagnosis's `gpus`), each
    marked by a status-coloured strip and a bold red label, then the rest by host. Every row is labelled
    host:index when the rows are tall enough to read; else the non-ok rows and one label per host block.
    Bins: heatmap_bins."""
    data, _ = with_times(frame, unit)
    span = float((data["time"].max() - data["time"].min()).total_seconds()) if len(data) else 0.0
    matrix = binned_matrix(frame, metric, unit, heatmap_bins(span, max_bins, period_s))
    n = max(len(matrix), 1)
    fig, ax = figure(ax, figsize=figsize or (10, min(1.5 + 0.12 * n, 9)))
    if matrix.empty:
        ax.text(0.5, 0.5, "no samples", ha="center", va="center", transform=ax.transAxes)
        return fig
    order, statuses = heatmap_rows(list(matrix.index), status)
    matrix = matrix.loc[order]
    x, xlabel = time_axis(np.append(matrix.columns.to_numpy(dtype="float64"),
                                    matrix.columns[-1] + matrix.attrs["bin_s"]))
    share = metric.endswith("_pct") or metric in ("sm_active", "busy_frac")  # a share: from 0 to its top
    vmax = 100.0 if metric.endswith("_pct") else (1.0 if share else None)
    bad = [k for k, st in enumerate(statuses) if st != "ok"]
    y = np.concatenate([[0.0], np.cumsum(row_heights(statuses))])
    values = matrix.to_numpy()
    mesh = ax.pcolormesh(x, y, np.ma.masked_invalid(values), cmap="viridis",
                         vmin=0.0 if share else None, vmax=vmax, shading="flat", zorder=1)
    fig.colorbar(mesh, ax=ax, label=metric_label(metric), pad=0.01)
    if np.isnan(values).any():  # "no sample" must not read as 0% (dark) nor as a stall: hatched grey
        ax.add_patch(_no_sample_band(x[0], 0.0, x[-1] - x[0], y[-1]))
        ax.legend(handles=[_no_sample_band(0, 0, 1, 1)], labels=["no sample"], loc="lower left",
                  bbox_to_anchor=(1.0, -0.16), frameon=False, fontsize="small", handlelength=1.4)
    hosts = [i.rsplit(":", 1)[0] for i in matrix.index]
    edges = [k for k in range(len(bad) + 1, n) if hosts[k] != hosts[k - 1]]
    for k in edges:
        ax.axhline(y[k], color="white", lw=1.0)
    if bad and len(bad) < n:
        ax.axhline(y[len(bad)], color="#d62828", lw=1.6)
    strip = (x[-1] - x[0]) * 0.012
    for k in bad:
        ax.add_patch(_band(x[0] - strip, y[k], strip, y[k + 1] - y[k], STATUS_COLORS.get(statuses[k], "#d62828")))
    mid = (y[:-1] + y[1:]) / 2
    pitch_pt = fig.get_figheight() * 72 * 0.8 / y[-1]  # points per unit row (the axes take ~80% of the height)
    if pitch_pt >= 6:  # room for a label on every row
        ticks, labels = list(mid), list(matrix.index)
    else:  # non-ok rows, then one label per host block at its middle
        blocks = [k for k in range(len(bad), n) if k == len(bad) or hosts[k] != hosts[k - 1]] + [n]
        ticks = [mid[k] for k in bad] + [(y[a] + y[b]) / 2 for a, b in zip(blocks[:-1], blocks[1:], strict=True)]
        labels = [matrix.index[k] for k in bad] + [f"{hosts[k]} (GPUs ok)" for k in blocks[:-1]]
    ax.set_yticks(ticks, labels, fontsize=float(np.clip(pitch_pt * 0.85, 5.5, 9)) if pitch_pt >= 6 else 7)
    for label in ax.get_yticklabels()[:len(bad)]:
        label.set_color("#d62828")
        label.set_fontweight("bold")
    ax.set_xlim(x[0] - strip, x[-1])
    ax.set_ylim(y[-1], 0)
    ax.set_xlabel(_xlabel(xlabel, matrix) + f" · bins of {matrix.attrs['bin_s']:.3g} s")
    what = "GPU (host:index)" if unit == "gpu" else f"{unit} (host:{unit})"
    ax.set_ylabel(what + ("; not ok first, in red" if bad else ""))
    ax.grid(False)
    ax.set_title(title or f"{metric_label(metric)} per {unit} over time")
    return fig


def row_heights(statuses: list[str], share: float = 1 / 3, most: float = 8.0) -> np.ndarray:
    """Row heights of a heatmap (ok rows = 1): the rows that are not ok are the finding, so together they get up
    to `share` of the height (each at most `most` rows tall) — one straggler among 63 peers stays visible."""
    h = np.ones(len(statuses))
    bad = np.array([s != "ok" for s in statuses], dtype=bool)
    if bad.any() and (~bad).any():
        h[bad] = float(np.clip(share / (1 - share) * (~bad).sum() / bad.sum(), 1.0, most))
    return h


def _no_sample_band(x: float, y: float, width: float, height: float):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), width, height, facecolor="#e9ecef", edgecolor="#adb5bd", hatch="////", lw=0,
                     zorder=0)


def _band(x: float, y: float, width: float, height: float, color: str):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), width, height, facecolor=color, edgecolor="none", clip_on=False)


def host_series(frame: pd.DataFrame, metric: str = "util_pct", unit: str = "gpu",
                max_bins: int = 1000) -> pd.DataFrame:
    """Per host and time bin: mean, min and max of `metric` over the host's GPUs (columns time_s, host, mean,
    lo, hi)."""
    matrix = binned_matrix(frame, metric, unit, max_bins)
    if matrix.empty:
        return pd.DataFrame(columns=["time_s", "host", "mean", "lo", "hi"])
    assumed = matrix.attrs.get("assumed_interval_s")
    hosts = pd.Index([i.rsplit(":", 1)[0] for i in matrix.index], name="host")
    grouped = matrix.set_axis(hosts).groupby(level="host", sort=True)
    out = pd.concat({"mean": grouped.mean().stack(), "lo": grouped.min().stack(), "hi": grouped.max().stack()},
                    axis=1).reset_index()
    out = out.rename(columns={out.columns[1]: "time_s"})[["time_s", "host", "mean", "lo", "hi"]]
    out.attrs["assumed_interval_s"] = assumed
    return out


def host_lines(frame: pd.DataFrame, metric: str = "util_pct", unit: str = "gpu", ax=None,
               max_bins: int = 1000, title: str | None = None):
    """One line per host (mean over its GPUs) with a band from its lowest to its highest GPU; with a single
    host, one line per GPU instead."""
    fig, ax = figure(ax)
    hosts = frame["host"].astype(str).unique()
    if len(hosts) == 1:
        matrix = binned_matrix(frame, metric, unit, max_bins)
        x, xlabel = time_axis(matrix.columns.to_numpy(dtype="float64"))
        for gid, row in matrix.iterrows():
            ax.plot(x, row.to_numpy(), lw=1.2, label=gid)
        xlabel = _xlabel(xlabel, matrix)
    else:
        series = host_series(frame, metric, unit, max_bins)
        x_all, xlabel = time_axis(series["time_s"].to_numpy(dtype="float64"))
        xlabel = _xlabel(xlabel, series)
        series = series.assign(x=x_all)
        for host, part in series.groupby("host", sort=True):
            line, = ax.plot(part["x"], part["mean"], lw=1.4, label=str(host))
            ax.fill_between(part["x"], part["lo"], part["hi"], color=line.get_color(), alpha=0.15, lw=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(metric_label(metric))
    if metric.endswith("_pct"):
        ax.set_ylim(-2, 102)
    n_lines = len(ax.get_lines())
    if 0 < n_lines <= 16:
        ax.legend(fontsize=8, ncol=1 if n_lines <= 8 else 2, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  frameon=False)
    ax.set_title(title or (f"{metric_label(metric)} per GPU" if len(hosts) == 1
                           else f"{metric_label(metric)} per host (line: mean, band: min-max of its GPUs)"))
    return fig


def significant_at(spec: pd.DataFrame, period_s: float | None) -> bool:
    """Whether the spectrum's power near `period_s` (within ±10%, a periodogram bin's width at long periods)
    rises above its significance threshold; without a threshold column, whether any power is there at all."""
    if period_s is None or not np.isfinite(period_s) or spec.empty:
        return False
    near = spec[(spec["period_s"] >= period_s / 1.1) & (spec["period_s"] <= period_s * 1.1)]
    if near.empty:
        return False
    if "threshold" not in near:
        return True
    return bool((near["power"].to_numpy(dtype="float64") > near["threshold"].to_numpy(dtype="float64")).any())


def spectrum(spec: pd.DataFrame, period_s: float | None = None, ax=None, title: str | None = None):
    """Periodogram against period (log axis): power, its noise background and significance threshold when given
    (analysis.oscillation.fleet.period_spectrum's frame: period_s, power[, null, threshold, in_band]); the detected
    period marked when given. Periods outside the searchable band are greyed."""
    fig, ax = figure(ax)
    frame = spec[np.isfinite(spec["period_s"]) & (spec["period_s"] > 0)].sort_values("period_s")
    if frame.empty:
        ax.text(0.5, 0.5, "too few samples for a spectrum", ha="center", va="center", transform=ax.transAxes)
        return fig
    band = frame["in_band"].to_numpy(dtype=bool) if "in_band" in frame else np.ones(len(frame), dtype=bool)
    ax.plot(frame["period_s"], frame["power"], color="#adb5bd", lw=1.0)
    ax.plot(frame["period_s"].where(band), frame["power"].where(band), color=PALETTE["no_fault"], lw=1.4,
            label="power")
    if "null" in frame:
        ax.plot(frame["period_s"], frame["null"], color=PALETTE["busy"], lw=1.0, ls=":", label="noise background")
    if "threshold" in frame:
        ax.plot(frame["period_s"], frame["threshold"], color=PALETTE["wait"], lw=1.0, ls="-.",
                label="significance threshold")
    ax.set_xscale("log")
    marked = significant_at(frame, period_s)
    if marked:
        ax.axvline(period_s, color=PALETTE["fault"], ls="--", lw=1.2, label=f"period {period_s:.3g} s")
    ax.set_xlabel("period (s)")
    ax.set_ylabel("power (variance units)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    note = "" if marked or period_s is None else f" (the {period_s:.3g} s period is not significant here)"
    ax.set_title(title or "Period spectrum of mean utilization" + note)
    return fig


def folded_cycle(fold: pd.DataFrame, period_s: float | None = None, metric: str = "util_pct", ax=None,
                 title: str | None = None, over: str = "all GPUs"):
    """One cycle of the oscillation: median and quartile band per position within the period
    (analysis.oscillation.fleet.fold_cycle's frame: phase, time_in_cycle_s, median, q25, q75; the period is read from
    it when not given)."""
    fig, ax = figure(ax)
    if fold.empty:
        ax.text(0.5, 0.5, "no period to fold on", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title or "One cycle, folded on its period")
        return fig
    if period_s is None:
        period_s = float(fold["time_in_cycle_s"].iloc[0] / fold["phase"].iloc[0])
    x = fold["time_in_cycle_s"].to_numpy(dtype="float64")
    ax.fill_between(x, fold["q25"].to_numpy(dtype="float64"), fold["q75"].to_numpy(dtype="float64"),
                    color=PALETTE["busy"], alpha=0.3, lw=0, step="mid", label=f"quartiles ({over})")
    ax.step(x, fold["median"].to_numpy(dtype="float64"), where="mid", color=PALETTE["busy"], lw=2,
            label="median")
    ax.set_xlim(0, period_s)
    ax.set_xlabel(f"time within the {period_s:.3g} s cycle (s)")
    ax.set_ylabel(metric_label(metric))
    if metric.endswith("_pct"):
        ax.set_ylim(-2, 102)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(title or f"One cycle of {over}, folded on its period ({period_s:.3g} s)")
    return fig


def status_grid(gpus: Any) -> pd.DataFrame:
    """GPU entries (diagnosis "gpus": list of dicts or a frame with id/host/index/mean_util_pct/status) as a
    frame sorted by host and index."""
    frame = pd.DataFrame(list(gpus)) if not isinstance(gpus, pd.DataFrame) else gpus.copy()
    if frame.empty:
        return pd.DataFrame(columns=["id", "host", "index", "mean_util_pct", "status"])
    if "host" not in frame or "index" not in frame:
        parts = frame["id"].astype(str).str.rsplit(":", n=1, expand=True)
        frame["host"], frame["index"] = parts[0], pd.to_numeric(parts[1], errors="coerce")
    frame["index"] = pd.to_numeric(frame["index"], errors="coerce").fillna(-1).astype("int64")
    if "mean_util_pct" not in frame:
        frame["mean_util_pct"] = np.nan
    return frame.sort_values(["host", "index"]).reset_index(drop=True)


def status_table(gpus: Any, ax=None, title: str | None = None):
    """GPU status table: hosts as rows, GPU index as columns; each cell coloured by status and labelled with
    the GPU's mean utilization (%)."""
    frame = status_grid(gpus)
    hosts = list(dict.fromkeys(frame["host"].astype(str)))
    indices = sorted(frame["index"].unique().tolist()) or [0]
    fig, ax = figure(ax, figsize=(max(4.0, 0.9 * len(indices) + 2.5), 0.9 + 0.42 * max(len(hosts), 1)))
    col = {k: j for j, k in enumerate(indices)}
    row = {h: i for i, h in enumerate(hosts)}
    for rec in frame.itertuples(index=False):
        status = str(rec.status)
        i, j = row[str(rec.host)], col[rec.index]
        ax.add_patch(_rect(j, i, STATUS_COLORS.get(status, "#adb5bd")))
        util = "n/a" if pd.isna(rec.mean_util_pct) else f"{rec.mean_util_pct:.0f}%"
        ax.text(j + 0.5, i + 0.5, util, ha="center", va="center", fontsize=8,
                color="black" if status == "throttled" else "white")
    ax.set_xlim(0, len(indices))
    ax.set_ylim(max(len(hosts), 1), 0)
    ax.set_xticks(np.arange(len(indices)) + 0.5, [str(k) for k in indices])
    ax.set_yticks(np.arange(len(hosts)) + 0.5, hosts, fontsize=8)
    ax.set_xlabel("GPU index")
    ax.set_ylabel("host")
    ax.grid(False)
    present = [s for s in STATUS_COLORS if s in set(frame["status"].astype(str))]
    handles = [_rect(0, 0, STATUS_COLORS[s]) for s in present]
    if handles:
        ax.legend(handles, present, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(title or "GPU status (cell: mean utilization.gpu)")
    return fig


def _rect(x: float, y: float, color: str):
    from matplotlib.patches import Rectangle

    return Rectangle((x + 0.04, y + 0.06), 0.92, 0.88, facecolor=color, edgecolor="none")
