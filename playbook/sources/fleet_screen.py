"""Fleet screen: per-GPU summaries computed by the Prometheus server, raw series only for the GPUs they point at.

    from playbook.sources import fleet_screen, prometheus
    bundle = fleet_screen.read("prometheus://prom:9090", prometheus.Window.last(7 * 86400, 15), mode="on")
    bundle.meta["screen"]["line"]        # what was asked and pulled, in one line

A raw pull reads every point of every GPU (10,000 GPUs × 7 days at 15 s: 403 M points a metric). The server
already holds them, so it is asked for summaries: instant queries at the window's last step T over the window
(range R = T - start + step, so the samples the raw pull's step grid would show), each answering one sample per
GPU series. U is the utilization metric, SM and P the SM clock and power (NAME{MATCH}, dcgm.METRICS' names):
  count_over_time(U[R])                  samples: coverage, and the size a raw pull would read
  avg_over_time(U[R])                    mean utilization
  quantile_over_time(0.1, U[R])          the low decile: the level a GPU sits at in its worst tenth of the time
  stddev_over_time(U[R])                 spread: a swing of amplitude A with a minority share m adds A·sqrt(m(1-m))
                                         (97% ↔ 20% at 75/25: 33 points, against ~3 of noise)
  quantile_over_time(0.9, SM[R])         the clock while busy: the top decile is a busy sample whenever the GPU is
                                         busy ≥ 10% of the time (no subquery, so no per-step evaluation)
  avg_over_time(P[R])                    mean power (reported)
  max_over_time(XID[R]) > 0              the GPUs that reported an XID (only those come back)
and, once the fleet's median mean utilization M is known,
  count_over_time((U < L)[R':step])      drops: samples below L = M / 2. A filter, not `< bool`: the points keep
                                         their series' labels (no label set built per point: 0.6 s against 7 s
                                         for 2,048 GPUs × 2,881 steps here) and only GPUs that drop answer. A
                                         subquery materialises series × steps on the server (Prometheus counts
                                         them against --query.max-samples, 50 M by default), so it is split in
                                         time into pieces of ≤ SUBQUERY_POINTS.
Several series of one GPU (a `pod` label that changed) are pooled: counts and drops summed, means weighted by
count, variances pooled, the worst decile and clock kept.

The statistic: each summary against the fleet's median and MAD across GPUs, as Iglewicz and Hoaglin's modified z
(0.6745 (x - median) / MAD), flagged at |z| ≥ MODIFIED_Z on the bad side (low mean, low decile, low clock; high
spread, high drop share) AND past an effect floor. Median and MAD because the reference must not move with the
outliers sought (a mean and standard deviation are pulled by the very stragglers, masking them; the median and
MAD stand until half the fleet is bad). The floor because a mean over thousands of samples has a tiny MAD, so z
alone would flag a 0.3-point difference; it is half the raw analysis' own effect (MIN_DELTA_PCT utilization
points; the analysis' 5% clock deficit) since the screen is a sieve and the raw analysis of what it pulls
decides. Also flagged: any XID, and coverage below COVERAGE_MIN of the fleet's median count (a lost or gapped
GPU). Flagged GPUs are ranked by suspected loss in GPU-hours: span × the largest of the utilization deficit
against the fleet median, the clock deficit × the GPU's mean utilization, and the missing share; hosts and jobs
(dcgm-exporter's `hpc_job` label with --hpc-job-mapping-dir, else a Kubernetes `namespace`) by the sum over their GPUs.

Then raw series (prometheus.pull) for the flagged GPUs (at most MAX_PULL, by loss) and a seeded sample of
SAMPLE_GPUS others (the peers the raw analysis compares against, and a check on what the screen passed), selected
by their UUID label (batches of BATCH), else their whole hosts, and fed to the normal diagnosis.

When: `read(mode="auto")` screens when a raw pull would read more than SCREEN_ABOVE points: utilization samples
(GPU series × samples, from the count query, which is the screen's first query anyway) × the gauges present.
20 M is what benchmarks/prometheus.py pulls and diagnoses within its 30 s target on 2 cores (512 GPUs × 24 h at
15 s × 6 metrics = 17.7 M: query 9 s, analysis 4 s; ~700 GPUs × 24 h at 15 s with 5 gauges). Below that the raw
pull is quick and gives every GPU its full diagnosis, so a screen would save little and lose detail; above it a
raw pull grows with the fleet (2 G points for 10,000 GPUs × 7 days, see benchmarks/fleet_screen.py) while the
screen's summaries grow with the GPU count only.
"""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import msgspec
import numpy as np
import pandas as pd

from playbook.analysis.gpus import CLOCK_DEFICIT_MIN, MIN_DELTA_PCT, MODIFIED_Z
from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import dcgm
from playbook.sources import is_url, prometheus
from playbook.sources.prometheus import Window, matchers

SCREEN_ABOVE = 20_000_000  # points a raw pull would read (GPU series × samples × gauges) above which auto screens
SAMPLE_GPUS = 64  # unflagged GPUs pulled raw beside the flagged ones (seeded)
MAX_PULL = 512  # flagged GPUs pulled raw at most, by suspected loss (the rest stay in the screen's table)
BATCH = 256  # GPUs per raw-pull selector (a UUID regex of ~11 kB)
SUBQUERY_POINTS = 20_000_000  # series × steps one drop subquery may materialise (Prometheus' default limit: 50 M)
MIN_EFFECT_PCT = MIN_DELTA_PCT / 2  # utilization points: half the raw analysis' effect (a sieve, not a verdict)
MIN_DROP_SHARE = 0.02  # drop share above the fleet's median share
COVERAGE_MIN = 0.9  # share of the fleet's median sample count below which a GPU is flagged as gapped
LOW_Q, BUSY_Q = 0.1, 0.9
JOB_LABELS = ("hpc_job", "namespace")  # dcgm-exporter's Slurm job mapping, and Kubernetes' pod namespace
SEED = 0


class _Sample(msgspec.Struct):
    metric: dict[str, str]
    value: tuple[float, str]


class _Vector(msgspec.Struct):
    result: list[_Sample]
    resultType: str = "vector"  # noqa: N815 - the API's name


Key = tuple  # a series' labels without __name__, sorted


@dataclass
class Screen:
    """What the screen found: one row per GPU (`table`), the flagged ones ranked, what it cost and what a raw pull
    of the same window would have read."""

    table: pd.DataFrame
    flagged: list[str]
    picked: list[str]
    span_h: float
    groups: dict[str, list[dict]] = field(default_factory=dict)
    queries: int = 0
    rows: int = 0
    bytes: int = 0
    raw_rows: int = 0
    raw_queries: int = 0
    pull_queries: int = 0
    pull_rows: int = 0
    pull_bytes: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def raw_bytes(self) -> int:
        """A raw pull's bytes, at the bytes per point the targeted pull measured (0 before it)."""
        return int(self.raw_rows * self.pull_bytes / self.pull_rows) if self.pull_rows else 0

    def line(self) -> str:
        total = self.rows + self.pull_rows
        loss = float(self.table.loc[self.table["flagged"], "loss_gpu_h"].sum())
        return (f"fleet screen: {len(self.table):,} GPUs summarised by the server in {self.queries} queries "
                f"({self.rows:,} rows); {len(self.flagged)} flagged (suspected loss {loss:.3g} GPU-h); raw series "
                f"for {len(self.picked)} (flagged + a seeded sample), which the diagnosis covers: {total:,} rows "
                f"against {self.raw_rows:,} for a raw pull ({total / max(self.raw_rows, 1):.1%}); --screen off "
                "reads everything")

    def summary(self) -> dict:
        cols = ["id", "mean_util_pct", "low_decile_pct", "stddev_pct", "drop_share", "busy_clock_mhz", "power_w",
                "xid", "samples", "loss_gpu_h", "why"]
        top = self.table.loc[self.table["flagged"], cols].head(50)
        return {"line": self.line(), "gpus": len(self.table), "flagged": self.flagged, "pulled": self.picked,
                "queries": self.queries, "rows": self.rows, "bytes": self.bytes, "pull_queries": self.pull_queries,
                "pull_rows": self.pull_rows, "pull_bytes": self.pull_bytes, "raw_rows": self.raw_rows,
                "raw_queries": self.raw_queries, "raw_bytes_estimate": self.raw_bytes,
                "ranked": top.to_dict("records"), "groups": self.groups}


def _column_metric(names: list[str], column: str) -> tuple[str, float] | None:
    """The present metric for a schema column with the best priority, and its factor to the column's units."""
    found = [(dcgm.METRICS[n][2], n) for n in names if n in dcgm.METRICS and dcgm.METRICS[n][0] == column]
    if not found:
        return None
    name = min(found)[1]
    return name, dcgm.METRICS[name][1]


def _key(labels: dict[str, str]) -> Key:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


def _instant(client: prometheus._Client, query: str, at: float) -> tuple[dict[Key, float], list[str]]:
    """One instant query: value per series (by its labels) and the server's warnings."""
    raw = client.get("/api/v1/query", {"query": query, "time": repr(at)})
    try:
        answer = msgspec.json.decode(raw, type=prometheus.Answer[_Vector])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InputError(f"{client.display}: not a Prometheus API answer to {query[:80]} ({str(exc)[:120]})") from None
    if answer.status != "success" or answer.data is None:
        raise InputError(f"{client.display}: query failed: {query[:80]} ({answer.error or answer.status})")
    out: dict[Key, float] = {}
    for s in answer.data.result:
        try:
            out[_key(s.metric)] = float(s.value[1])
        except ValueError:
            out[_key(s.metric)] = float("nan")
    return out, [f"{client.display}: server warning: {w}" for w in answer.warnings]


def _rng(window: Window) -> str:
    """The range selector covering the window's step grid: [T - R, T] holds the samples its steps show."""
    ms = int(round((window.steps - 1) * window.step * 1000 + window.step * 1000)) - 1
    return f"[{ms}ms]"


def _summary_queries(names: list[str], match: str | None, rng: str) -> dict[str, tuple[str, float]]:
    """Summary name -> (PromQL over the range selector `rng`, factor to the column's units) for the metrics
    present."""
    util = _column_metric(names, "util_pct")
    if util is None:
        raise InputError("no utilization metric (DCGM_FI_DEV_GPU_UTIL or another the readers map) to screen by")
    u, f = prometheus.selector(util[0], match) + rng, util[1]
    out = {"samples": (f"count_over_time({u})", 1.0), "mean": (f"avg_over_time({u})", f),
           "low": (f"quantile_over_time({LOW_Q}, {u})", f), "std": (f"stddev_over_time({u})", f)}
    clock = _column_metric(names, "sm_clock_mhz")
    if clock:
        out["clock"] = (f"quantile_over_time({BUSY_Q}, {prometheus.selector(clock[0], match)}{rng})", clock[1])
    power = _column_metric(names, "power_w")
    if power:
        out["power"] = (f"avg_over_time({prometheus.selector(power[0], match)}{rng})", power[1])
    if dcgm.XID in names:
        out["xid"] = (f"max_over_time({prometheus.selector(dcgm.XID, match)}{rng}) > 0", 1.0)
    return out


def last_step(window: Window) -> float:
    """The time of the window's last step (where the instant queries are evaluated)."""
    return window.start + (window.steps - 1) * window.step


def count_samples(client: prometheus._Client, window: Window, match: str | None,
                  names: list[str]) -> dict[Key, float]:
    """Utilization samples per series in the window (the screen's first query)."""
    query, _f = _summary_queries(names, match, _rng(window))["samples"]
    return _instant(client, query, last_step(window))[0]


def summarise(client: prometheus._Client, window: Window, match: str | None, names: list[str],
              workers: int = prometheus.WORKERS,
              known: dict[str, dict[Key, float]] | None = None) -> tuple[dict[str, dict[Key, float]], list[str], int]:
    """Every summary's value per series, the server's warnings, and the rows received (`known`: summaries
    already asked, not asked again)."""
    queries = _summary_queries(names, match, _rng(window))
    known = dict(known or {})
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        jobs = {k: pool.submit(_instant, client, q, last_step(window))
                for k, (q, _f) in queries.items() if k not in known}
        answers = {k: j.result() for k, j in jobs.items()}
    values = {**known, **{k: {s: v * queries[k][1] for s, v in a[0].items()} for k, a in answers.items()}}
    warnings = [w for a in answers.values() for w in a[1]]
    rows = sum(len(a[0]) for a in answers.values())
    means = np.array(list(values["mean"].values()))
    level = float(np.nanmedian(means)) / 2 if len(means) else 0.0
    util = _column_metric(names, "util_pct")
    values["drops"], more, drop_rows = _drops(client, window, prometheus.selector(util[0], match), level / util[1],
                                              max(len(values["samples"]), 1), workers)
    return values, warnings + more, rows + drop_rows


def _drops(client, window: Window, selector: str, level: float, series: int,
           workers: int) -> tuple[dict[Key, float], list[str], int]:
    """Samples below `level` per series, warnings and rows received: the subquery split in time so that each
    piece materialises ≤ SUBQUERY_POINTS on the server."""
    per = max(1, SUBQUERY_POINTS // series)
    pieces = window.chunks(per)
    query = "count_over_time(({sel} < {level!r})[{ms}ms:{step}ms])"  # a filter: only GPUs that drop answer
    step_ms = int(round(window.step * 1000))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        jobs = [pool.submit(_instant, client, query.format(sel=selector, level=level, step=step_ms,
                                                           ms=int(round((b - a) * 1000)) + step_ms - 1), b)
                for a, b in pieces]
        answers = [j.result() for j in jobs]
    total: dict[Key, float] = {}
    for got, _w in answers:
        for k, v in got.items():
            total[k] = total.get(k, 0.0) + (v if np.isfinite(v) else 0.0)
    return total, [w for a in answers for w in a[1]], sum(len(a[0]) for a in answers)


def gpu_table(values: dict[str, dict[Key, float]], default_host: str) -> tuple[pd.DataFrame, dict[str, list[Key]]]:
    """One row per GPU (series of one GPU pooled) and each GPU id's series keys."""
    ident = dcgm.Samples("", default_host)
    keys_of: dict[tuple[str, int], list[Key]] = {}
    for key in values["samples"]:
        who = ident.identity(dict(key))
        if who is not None:
            keys_of.setdefault(who, []).append(key)
    records = []
    for (host, gpu), keys in sorted(keys_of.items()):
        def get(name: str, keys=keys) -> np.ndarray:
            return np.array([values.get(name, {}).get(k, np.nan) for k in keys], dtype=np.float64)

        n = np.nan_to_num(get("samples"))
        total = float(n.sum())
        w = n / total if total > 0 else np.full(len(n), 1.0 / len(n))
        mean = float(np.nansum(w * get("mean")))
        var = float(np.nansum(w * (get("std") ** 2 + (get("mean") - mean) ** 2)))
        labels = dict(keys[0])
        records.append({
            "id": schema.gpu_id(host, gpu), "host": host, "gpu": gpu,
            "job": next((labels[k] for k in JOB_LABELS if labels.get(k)), None), "samples": total,
            "mean_util_pct": mean, "stddev_pct": var ** 0.5, "low_decile_pct": _nan(np.nanmin, get("low")),
            "drop_share": float(np.nansum(get("drops"))) / total if total else np.nan,
            "busy_clock_mhz": _nan(np.nanmax, get("clock")), "power_w": float(np.nansum(w * get("power")))
            if np.isfinite(get("power")).any() else np.nan, "xid": _nan(np.nanmax, get("xid"), 0.0)})
    table = pd.DataFrame.from_records(records, columns=[
        "id", "host", "gpu", "job", "samples", "mean_util_pct", "stddev_pct", "low_decile_pct", "drop_share",
        "busy_clock_mhz", "power_w", "xid"])
    return table, {schema.gpu_id(h, g): k for (h, g), k in keys_of.items()}


def _nan(fn, x: np.ndarray, empty: float = np.nan) -> float:
    return float(fn(x)) if np.isfinite(x).any() else empty


def _modified_z(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Iglewicz-Hoaglin modified z of each value against the values' median and MAD, and the median."""
    med = float(np.nanmedian(x)) if np.isfinite(x).any() else np.nan
    mad = float(np.nanmedian(np.abs(x - med))) if np.isfinite(med) else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        return 0.6745 * (x - med) / max(mad, 1e-9), med


def flag(table: pd.DataFrame, span_h: float) -> pd.DataFrame:
    """`table` with `why` (the summaries that flag each GPU, in words), `flagged` and `loss_gpu_h`, the flagged
    first by suspected loss (see the module docstring)."""
    t = table.copy()
    why: list[list[str]] = [[] for _ in range(len(t))]

    def mark(hit: np.ndarray, text) -> None:
        for i in np.flatnonzero(np.nan_to_num(hit).astype(bool)):
            why[i].append(text(i))

    x = {c: t[c].to_numpy(np.float64) for c in ("mean_util_pct", "low_decile_pct", "stddev_pct", "drop_share",
                                                "busy_clock_mhz", "samples", "xid")}
    z, med = {}, {}
    for c in x:
        z[c], med[c] = _modified_z(x[c])
    u = x["mean_util_pct"]
    mark((z["mean_util_pct"] <= -MODIFIED_Z) & (med["mean_util_pct"] - u >= MIN_EFFECT_PCT),
         lambda i: f"mean utilization {u[i]:.0f}% against the fleet's {med['mean_util_pct']:.0f}% "
                   f"(z {z['mean_util_pct'][i]:.3g})")
    lo = x["low_decile_pct"]
    mark((z["low_decile_pct"] <= -MODIFIED_Z) & (med["low_decile_pct"] - lo >= MIN_EFFECT_PCT),
         lambda i: f"low decile {lo[i]:.0f}% against {med['low_decile_pct']:.0f}%")
    sd = x["stddev_pct"]
    mark((z["stddev_pct"] >= MODIFIED_Z) & (sd - med["stddev_pct"] >= MIN_EFFECT_PCT),
         lambda i: f"swings: sd {sd[i]:.0f} points against {med['stddev_pct']:.0f}")
    dr = x["drop_share"]
    mark((z["drop_share"] >= MODIFIED_Z) & (dr - med["drop_share"] >= MIN_DROP_SHARE),
         lambda i: f"below half the fleet's level {dr[i]:.0%} of the time")
    ck = x["busy_clock_mhz"]
    mark((z["busy_clock_mhz"] <= -MODIFIED_Z) & (ck <= (1 - CLOCK_DEFICIT_MIN) * med["busy_clock_mhz"]),
         lambda i: f"busy SM clock {ck[i]:.0f} MHz against {med['busy_clock_mhz']:.0f}")
    mark(x["xid"] > 0, lambda i: f"XID {x['xid'][i]:.0f}")
    n = x["samples"]
    mark(n < COVERAGE_MIN * med["samples"], lambda i: f"{n[i]:.0f} samples against {med['samples']:.0f}")
    with np.errstate(invalid="ignore", divide="ignore"):
        deficit = np.fmax.reduce([np.clip((med["mean_util_pct"] - u) / 100, 0, 1),
                                  np.clip(1 - ck / med["busy_clock_mhz"], 0, 1) * np.clip(u / 100, 0, 1),
                                  np.clip(1 - n / med["samples"], 0, 1)])
    t["loss_gpu_h"] = np.nan_to_num(deficit) * span_h
    t["why"] = ["; ".join(w) for w in why]
    t["flagged"] = [bool(w) for w in why]
    return t.sort_values(["flagged", "loss_gpu_h", "id"], ascending=[False, False, True], kind="stable",
                         ignore_index=True)


def groups(table: pd.DataFrame) -> dict[str, list[dict]]:
    """Hosts and jobs (where a label names them) by the suspected loss of their GPUs, the largest first."""
    out = {}
    for by in ("host", "job"):
        if table[by].isna().all():
            continue
        g = table.groupby(by, sort=False).agg(gpus=("id", "size"), flagged=("flagged", "sum"),
                                              loss_gpu_h=("loss_gpu_h", "sum"))
        g = g[g["flagged"] > 0].sort_values(["loss_gpu_h", "flagged"], ascending=False).head(10)
        out[by] = [{by: str(k), "gpus": int(r.gpus), "flagged": int(r.flagged), "loss_gpu_h": float(r.loss_gpu_h)}
                   for k, r in g.iterrows()]
    return out


def pick(table: pd.DataFrame, sample: int = SAMPLE_GPUS, max_pull: int = MAX_PULL,
         seed: int = SEED) -> tuple[list[str], list[str]]:
    """(flagged GPUs pulled raw, by loss, at most `max_pull`; a seeded sample of `sample` of the others)."""
    flagged = table.loc[table["flagged"], "id"].tolist()[:max_pull]
    rest = sorted(set(table["id"]) - set(flagged))
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(rest), size=min(sample, len(rest)), replace=False) if rest else []
    return flagged, sorted(rest[i] for i in chosen)


_RE2_SPECIAL = re.compile(r"[\\.+*?()|\[\]{}^$]")


def selectors(ids: list[str], keys_of: dict[str, list[Key]]) -> list[str] | None:
    """Label matchers that select these GPUs' series, BATCH GPUs each: by UUID, else their whole hosts (by the
    host label the readers use); None when neither labels all of them."""
    labels = [dict(k) for i in ids for k in keys_of[i]]
    for names, per in ((("UUID",), 1), (dcgm.HOST_LABELS, 8)):
        name = next((n for n in names if all(lab.get(n) for lab in labels)), None)
        if name is None:
            continue
        values = sorted({lab[name] for lab in labels})
        step = max(1, BATCH // per)
        quoted = [_RE2_SPECIAL.sub(lambda m: "\\" + m.group(0), v) for v in values]
        return [f"{name}=~{json.dumps('|'.join(quoted[i:i + step]))}" for i in range(0, len(values), step)]
    return None


def screen(client: prometheus._Client, window: Window, match: str | None, names: list[str],
           workers: int = prometheus.WORKERS, sample: int = SAMPLE_GPUS,
           known: dict[str, dict[Key, float]] | None = None,
           since: tuple[int, int] | None = None) -> tuple[Screen, dict[str, list[Key]]]:
    """The summaries, the flagged GPUs ranked and the GPUs to pull raw (no raw pull yet). `known`: summaries
    already asked, and `since` the client's (requests, bytes_in) before they were."""
    q0, b0 = since or (client.requests, client.bytes_in)
    values, warnings, rows = summarise(client, window, match, names, workers, known)
    rows += sum(len(v) for v in (known or {}).values())
    host = client.base.split("//", 1)[1].split(":")[0]
    table, keys_of = gpu_table(values, host)
    if table.empty:
        raise InputError(f"{client.display}: no utilization series with a gpu label from "
                         f"{prometheus.describe(window, match)}")
    span_h = window.steps * window.step / 3600
    table = flag(table, span_h)
    flagged, sampled = pick(table, sample)
    s = Screen(table, table.loc[table["flagged"], "id"].tolist(), flagged + sampled, span_h, groups(table),
               queries=client.requests - q0, rows=rows, bytes=client.bytes_in - b0,
               raw_rows=int(table["samples"].sum()) * _gauges(names), raw_queries=1 + len(names) * len(window.chunks()),
               warnings=warnings)
    if len(s.flagged) > len(flagged):
        s.warnings.append(f"{client.display}: {len(s.flagged) - len(flagged)} more GPUs flagged than the "
                          f"{MAX_PULL} pulled raw (by suspected loss); all are in the screen's table")
    return s, keys_of


def _gauges(names: list[str]) -> int:
    """Metrics a raw pull reads in full (XID is asked as `!= 0`: next to nothing from a healthy fleet)."""
    return sum(1 for n in names if n != dcgm.XID)


def read(url: str, window: Window, match: str | None = None, mode: str = "auto",
         workers: int = prometheus.WORKERS, sample: int | None = None, **limits) -> schema.Bundle:
    """Exporter telemetry in `window` from the server at `url`: everything (`mode` "off", or "auto" at or below
    SCREEN_ABOVE points), else screened (see the module docstring) with bundle.meta["screen"] saying how."""
    if mode not in ("auto", "on", "off"):
        raise InputError(f"--screen: auto, on or off, not {mode!r}")
    window.check()
    client = prometheus._Client(url, **limits)
    names = prometheus.metric_names(client, window, match)
    if _column_metric(names, "util_pct") is None and mode == "on":
        raise InputError(f"{url}: --screen on needs a utilization metric (DCGM_FI_DEV_GPU_UTIL or another the "
                         f"readers map) from {prometheus.describe(window, match)}")
    if mode == "off" or _column_metric(names, "util_pct") is None:
        return prometheus.pull(client, window, match, names, workers)[0]
    known, since = None, (client.requests, client.bytes_in)
    try:
        if mode == "auto":
            known = {"samples": count_samples(client, window, match, names)}
            if sum(known["samples"].values()) * _gauges(names) <= SCREEN_ABOVE:
                return prometheus.pull(client, window, match, names, workers)[0]
        s, keys_of = screen(client, window, match, names, workers, SAMPLE_GPUS if sample is None else sample, known,
                            since)
    except InputError as exc:  # a frontend that refuses an instant query or a subquery: auto reads everything
        if mode == "on" or not any(w in str(exc) for w in ("refused", "query failed")):
            raise
        bundle = prometheus.pull(client, window, match, names, workers)[0]
        bundle.warnings.append(f"{url}: the fleet screen was refused ({str(exc)[:160]}); everything was pulled")
        return bundle
    return pull_screened(client, window, match, names, s, keys_of, workers)


def pull_screened(client: prometheus._Client, window: Window, match: str | None, names: list[str], s: Screen,
                  keys_of: dict[str, list[Key]], workers: int = prometheus.WORKERS) -> schema.Bundle:
    """The raw series of the GPUs the screen picked, with the screen's summary in meta["screen"]."""
    q0, b0 = client.requests, client.bytes_in
    src = client.display if not matchers(match) else f"{client.display} {{{matchers(match)}}}"
    batches = selectors(s.picked, keys_of)
    bundle = schema.Bundle()
    if batches is None:
        s.warnings.append(f"{src}: the flagged GPUs carry no UUID or host label to select them by; everything "
                          "was pulled")
        batches = [""]
    parts = []
    for sel in batches:
        both = ",".join(m for m in (matchers(match), sel) if m)
        part, points = prometheus.pull(client, window, both, names, workers, src=f"{src} (screened)")
        parts.append(part)
        s.pull_rows += points
    bundle.extend_all(parts)
    s.pull_queries, s.pull_bytes = client.requests - q0, client.bytes_in - b0
    bundle.warnings += s.warnings
    bundle.meta["screen"] = s.summary()
    return bundle


def measure(url: str, window: Window, match: str | None = None, sample: int = SAMPLE_GPUS,
            **limits) -> tuple[schema.Bundle, Screen, float]:
    """The screened bundle, its Screen and its wall time (s), for tests and benchmarks."""
    t = time.perf_counter()
    client = prometheus._Client(url, **limits)
    names = prometheus.metric_names(client, window, match)
    s, keys_of = screen(client, window, match, names, sample=sample)
    bundle = pull_screened(client, window, match, names, s, keys_of)
    return bundle, s, time.perf_counter() - t


def read_inputs(paths: list[str], args) -> tuple[schema.Bundle | None, list[str]]:
    """Split command-line inputs: the prometheus:// ones fetched into one Bundle (None when there are none), and
    the other paths for the readers."""
    urls = [p for p in paths if is_url(p)]
    if not urls:
        return None, list(paths)
    until = _until(getattr(args, "until", None))
    bundle = schema.Bundle()
    limits = {key: getattr(args, arg) for key, arg in (("deadline_s", "deadline"), ("max_bytes", "max_response"))
              if getattr(args, arg, None) is not None}
    for url in urls:
        window = Window.last(args.since, args.step, until)
        bundle.extend(read(url, window, match=args.match, mode=getattr(args, "screen", "auto"), **limits))
    return bundle, [p for p in paths if not is_url(p)]


def _until(text: str | None) -> float | None:
    if not text or text == "now":
        return None
    try:
        ts = pd.Timestamp(text)
    except (ValueError, TypeError):
        raise InputError(f"--until: not a time: {text!r} (e.g. 2026-01-15T10:00:00Z)") from None
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts
    return ts.value / 1e9


def save_inputs(paths: list[str], args, dest) -> list[str]:
    """`paths` with each prometheus:// input fetched (as read_inputs) and saved as a run directory under `dest`
    (for commands that hand paths on, e.g. `playbook report` to the triage notebook)."""
    from pathlib import Path

    from playbook.model import run_layout

    out = []
    for p in paths:
        if not is_url(p):
            out.append(p)
            continue
        bundle, _ = read_inputs([p], args)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        name = prometheus.base_url(p).split("//", 1)[1].replace(":", "-").replace("/", "_")
        run = run_layout.init_run(Path(dest) / f"prometheus-{name}-{stamp}", command=f"prometheus query {p}",
                              source=bundle.inputs[0], window={"since_s": args.since, "step_s": args.step,
                                                               "until": args.until, "match": args.match})
        part = run_layout.init_part(run, "prometheus", None, source=bundle.inputs[0])
        run_layout.write_table(part, "telemetry", bundle.telemetry)
        if len(bundle.events):
            run_layout.write_table(part, "events", bundle.events)
        out.append(str(run))
    return out
