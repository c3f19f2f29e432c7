"""Per-run step tables for regression triage (step 1 of the method in diagnosis.regression): one row per step, its
wall time split into the causes that add up to it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from playbook.analysis import stats
from playbook.analysis import step_times as steps_analysis
from playbook.knowledge import causes as catalog
from playbook.knowledge import ids as cause_ids
from playbook.model import schema

SEGMENT_BREAK = 100.0  # a gap between steps longer than this many median steps, with no event in it, is a break
PHASE_CAUSE: dict[str, str] = catalog.PHASE_CAUSE
DEFAULT_CAUSE = cause_ids.SLOWER_COMPUTE
COMPUTE_PHASES = steps_analysis.COMPUTE_PHASES
COST_PREFIXES = ("phase:", "event:", "cause:", "net:", "skew:")  # per-step seconds columns of RunSteps.table


@dataclass
class RunSteps:
    """One run, one row per step (see the module docstring): wall_s, duration_s, tokens, phase:<p> (raw phase
    seconds, incl. "other" = step − phases and "gap" = wall − step), event:<kind> (exclusive seconds) and
    cause:<id> (the decomposition that adds up to wall_s); plus the run's event counts."""

    label: str
    table: pd.DataFrame
    events: pd.DataFrame
    has_phases: bool
    has_tokens: bool
    ranks: int
    block: int = 1
    warnings: list[str] = field(default_factory=list)
    tokens_unit: str = "tokens"  # what the steps' `tokens` count: meta.json's "tokens_unit" (the labs: samples)


def _exclusive(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Seconds of each interval not covered by a longer one (events nested in a longer event belong to it)."""
    n = len(start)
    out = end - start
    if n < 2:
        return out
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    # clusters of transitively overlapping intervals
    run_end = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] >= run_end[:-1]]
    cluster = np.cumsum(new) - 1
    excl = e - s
    for c in np.flatnonzero(np.bincount(cluster) > 1):
        members = np.flatnonzero(cluster == c)
        claimed: list[tuple[float, float]] = []
        for i in sorted(members, key=lambda j: -(e[j] - s[j])):
            lo, hi = s[i], e[i]
            covered = 0.0
            for a, b in claimed:
                covered += max(0.0, min(hi, b) - max(lo, a))
            excl[i] = max(0.0, (hi - lo) - covered)
            claimed.append((lo, hi))
            # keep `claimed` disjoint so coverage is not counted twice
            claimed.sort()
            merged: list[tuple[float, float]] = []
            for a, b in claimed:
                if merged and a <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], b))
                else:
                    merged.append((a, b))
            claimed = merged
    result = np.empty(n)
    result[order] = excl
    return result


def _seconds(t: pd.Series, t0: pd.Timestamp) -> np.ndarray:
    return (t - t0).dt.total_seconds().to_numpy(dtype=np.float64)


def _tokens_unit(meta: dict) -> str | None:
    """What a run's step `tokens` count, from its meta.json or its parts' ("tokens_unit": "samples" in the labs)."""
    parts = meta.get("parts")
    metas = [meta.get("run"), *(parts.values() if isinstance(parts, dict) else parts if isinstance(parts, list)
                                else [])]
    units = {m.get("tokens_unit") for m in metas if isinstance(m, dict) and isinstance(m.get("tokens_unit"), str)}
    return units.pop() if len(units) == 1 else None


def run_steps(bundle: schema.Bundle, label: str = "") -> RunSteps | None:
    """The per-step table of one run (step 1 of the method in diagnosis.regression); None without step rows."""
    steps, events = bundle.steps, bundle.events
    if steps is None or steps.empty:
        return None
    timed = _wall_times(steps)
    if timed is None:
        return None
    st, t0 = timed
    warnings: list[str] = []
    med = float(np.median(st["duration_s"]))
    st, phases, cause_of = _phase_columns(st, steps)
    ev_summary, ev_cols = _event_costs(st, phases if len(phases) else None, events, t0, cause_of, warnings)
    st = st.join(ev_cols) if len(ev_cols.columns) else st
    if t0 is not None and np.isfinite(med) and med > 0:
        _drop_recording_breaks(st, med, label, warnings)
    table, ranks = _critical_table(st)
    has_tokens = bool(table["tokens"].notna().all() and (table["tokens"] > 0).all())
    unit = _tokens_unit(bundle.meta)
    out = RunSteps(label=label, table=table, events=ev_summary, has_phases=len(phases) > 0, has_tokens=has_tokens,
                   ranks=ranks, warnings=warnings, tokens_unit=unit if isinstance(unit, str) and unit else "tokens")
    out.block = stats.optimal_block_length(table["wall_s"].to_numpy())
    return out


def _wall_times(steps: pd.DataFrame) -> tuple[pd.DataFrame, pd.Timestamp | None] | None:
    """One row per (rank, step) with start_s and wall_s (start of the next step minus its own start, at least its
    duration), and the run's first start (None when start times are unknown); None without finite durations."""
    st = steps_analysis.step_times(steps)  # rank, step, host, time, duration_s
    st = st[np.isfinite(st["duration_s"].to_numpy(dtype=float))].sort_values(["rank", "step"]).reset_index(drop=True)
    if st.empty:
        return None
    has_time = bool(st["time"].notna().all())
    t0 = st["time"].min() if has_time else None
    st["start_s"] = _seconds(st["time"], t0) if has_time else np.nan
    wall = st["duration_s"].to_numpy(dtype=float).copy()
    if has_time:
        nxt = st.groupby("rank")["start_s"].shift(-1).to_numpy(dtype=float)
        gap_wall = nxt - st["start_s"].to_numpy()
        ok = np.isfinite(gap_wall)
        wall[ok] = np.maximum(wall[ok], gap_wall[ok])
    st["wall_s"] = wall
    return st, t0


def _phase_columns(st: pd.DataFrame, steps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """`st` with phase:<p> seconds (incl. "other" and "gap"), tokens, cause:<id> sums and net:<compute phase>
    columns; the phase rows of `steps`; the cause of each phase column."""
    phases = steps[steps["phase"] != "step"]
    key = ["rank", "step"]
    if len(phases):
        ph = phases.pivot_table(index=key, columns="phase", values="duration_s", aggfunc="sum", observed=True)
        ph.columns = [f"phase:{c}" for c in ph.columns.astype(str)]
        st = st.merge(ph.reset_index(), on=key, how="left")
        pcols = list(ph.columns)
        st[pcols] = st[pcols].fillna(0.0)
        st["phase:other"] = (st["duration_s"] - st[pcols].sum(axis=1)).clip(lower=0.0)
    else:
        st["phase:other"] = st["duration_s"]
    st["phase:gap"] = st["wall_s"] - st["duration_s"]

    whole = steps[steps["phase"] == "step"]
    if len(whole):
        tok = whole.groupby(key)["tokens"].sum(min_count=1).rename("tokens").reset_index()
        st = st.merge(tok, on=key, how="left")
    else:
        st["tokens"] = np.nan

    pcols = [c for c in st.columns if c.startswith("phase:")]
    cause_of = {c: PHASE_CAUSE.get(c.split(":", 1)[1], DEFAULT_CAUSE) for c in pcols}
    for c in sorted(set(cause_of.values())):
        st[f"cause:{c}"] = st[[p for p in pcols if cause_of[p] == c]].sum(axis=1)
    for p in COMPUTE_PHASES:
        if f"phase:{p}" in st:
            st[f"net:{p}"] = st[f"phase:{p}"]
    return st, phases, cause_of


def _drop_recording_breaks(st: pd.DataFrame, med: float, label: str, warnings: list[str]) -> None:
    """A gap between steps longer than SEGMENT_BREAK median steps with no event in it is a pause of the recording,
    not of the training: it leaves the step's wall time (in place)."""
    ev_in_gap = st[[c for c in st.columns if c.startswith("event:")]].sum(axis=1) if any(
        c.startswith("event:") for c in st.columns) else pd.Series(0.0, index=st.index)
    brk = (st["phase:gap"] > SEGMENT_BREAK * med) & (ev_in_gap <= 0)
    if brk.any():
        warnings.append(f"{label}: {int(brk.sum())} gap(s) between steps longer than {SEGMENT_BREAK:.0f} median "
                        f"steps with no event in them (longest {st.loc[brk, 'phase:gap'].max():.3g} s) left "
                        "out as recording breaks")
        st.loc[brk, "cause:between_steps"] -= st.loc[brk, "phase:gap"]
        st.loc[brk, "wall_s"] = st.loc[brk, "duration_s"]
        st.loc[brk, "phase:gap"] = 0.0


def _critical_table(st: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """One row per step, the critical rank's (with several ranks), and the number of ranks."""
    ranks = int(st["rank"].nunique())
    if ranks > 1:
        # a rank slower than its peers makes every rank wait: the critical rank's compute beyond the median
        # rank's is a straggler's excess, not a slower machine everywhere
        comp = f"cause:{DEFAULT_CAUSE}"
        st["_median_compute"] = st.groupby("step")[comp].transform("median")
        if "phase:collective" in st:
            crit = st.loc[st.groupby("step")["phase:collective"].idxmin()]
        else:
            crit = st.loc[st.groupby("step")["duration_s"].idxmax()]
        tokens = st.groupby("step")["tokens"].sum(min_count=st.groupby("step").size().min())
        crit = crit.set_index("step")
        crit["tokens"] = tokens.reindex(crit.index)
        skew = (crit[comp] - crit["_median_compute"]).clip(lower=0.0)
        crit[comp] -= skew
        crit["cause:collective_straggler"] = crit.get("cause:collective_straggler", 0.0) + skew
        crit["skew:straggler"] = skew
        critical = crit["rank"]
        table = crit
    else:
        table = st.set_index("step")
        critical = table["rank"]
    table = table.sort_index()
    keep = ["wall_s", "duration_s", "tokens"] + sorted(c for c in table.columns if c.startswith(COST_PREFIXES))
    table = table[keep].astype("float64")
    table["critical_rank"] = critical.reindex(table.index).astype("int64")
    return table, ranks


def _event_costs(st: pd.DataFrame, phases: pd.DataFrame | None, events: pd.DataFrame | None,
                 t0: pd.Timestamp | None, cause_of: dict[str, str],
                 warnings: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per event kind: counts; per step row of `st`: exclusive event seconds, moved from the phases' causes to
    the events' causes (in place on st's cause columns). Returns (summary per kind, event columns)."""
    empty = pd.DataFrame(index=st.index)
    cols_summary = ["kind", "events", "steps_with", "outside", "seconds", "cadence_steps", "first_step"]
    if events is None or events.empty:
        return pd.DataFrame(columns=cols_summary), empty
    ev = events.copy()
    ev["kind"] = ev["kind"].astype(str).str.lower()
    ev = ev[ev["kind"] != ""]
    if ev.empty:
        return pd.DataFrame(columns=cols_summary), empty
    row_of = {(int(r), int(s)): i for i, (r, s) in enumerate(zip(st["rank"], st["step"], strict=True))}
    steps_known = set(st["step"].astype(int))
    timed = t0 is not None and ev["time"].notna().all()
    ev["start_s"] = _seconds(ev["time"], t0) if t0 is not None and ev["time"].notna().any() else np.nan
    ev["step_"], ev["rank_"] = _place_events(ev, st, t0)
    in_steps = np.isin(ev["step_"].to_numpy(), list(steps_known))
    ev["excl_s"] = _exclusive_seconds(ev, st, row_of, in_steps, timed, warnings)
    ph_iv = _phase_intervals(phases, t0) if timed and phases is not None and phases["time"].notna().all() else {}
    ev_cols = _move_event_seconds(st, ev[in_steps & (ev["excl_s"] > 0)], ph_iv, row_of, cause_of)

    rows = []
    for kind, part in ev.groupby("kind", sort=True):
        inside = part[np.isin(part["step_"], list(steps_known))]
        distinct = np.unique(inside["step_"].to_numpy())
        rows.append({"kind": kind, "events": int(len(inside)), "steps_with": int(len(distinct)),
                     "outside": int(len(part) - len(inside)),
                     "seconds": float(part["duration_s"].sum(min_count=1)) if part["duration_s"].notna().any()
                     else math.nan,
                     "cadence_steps": float(np.median(np.diff(distinct))) if len(distinct) >= 3 else math.nan,
                     "first_step": int(distinct[0]) if len(distinct) else -1})
    return pd.DataFrame(rows, columns=cols_summary), pd.DataFrame(ev_cols, index=st.index)


def _place_events(ev: pd.DataFrame, st: pd.DataFrame, t0: pd.Timestamp | None) -> tuple[np.ndarray, np.ndarray]:
    """Each event's (step, rank): its own, or for an event without a step the step that was running at its time
    (same rank, else the first rank)."""
    ranks = np.unique(st["rank"].to_numpy())
    ev_start = ev["start_s"].to_numpy(dtype=float)
    step = ev["step"].to_numpy(dtype=np.int64).copy()
    rank = ev["rank"].to_numpy(dtype=np.int64).copy()
    rank = np.where(np.isin(rank, ranks), rank, ranks[0])
    if t0 is not None:
        for r in np.unique(rank):
            sr = st[st["rank"] == r]
            starts = sr["start_s"].to_numpy()
            ends = starts + sr["wall_s"].to_numpy()
            which = np.flatnonzero((rank == r) & (step < 0) & np.isfinite(ev_start))
            if len(which) and np.isfinite(starts).all():
                pos = np.searchsorted(starts, ev_start[which], side="right") - 1
                ok = (pos >= 0) & (ev_start[which] < ends[np.clip(pos, 0, len(ends) - 1)])
                step[which[ok]] = sr["step"].to_numpy()[pos[ok]]
    return step, rank


def _exclusive_seconds(ev: pd.DataFrame, st: pd.DataFrame, row_of: dict, in_steps: np.ndarray, timed: bool,
                       warnings: list[str]) -> np.ndarray:
    """Each event's exclusive seconds (nested events belong to the outer one); kinds logged without durations
    cost the excess of their steps over the run's median step."""
    ev_start = ev["start_s"].to_numpy(dtype=float)
    rank = ev["rank_"].to_numpy()
    dur = ev["duration_s"].to_numpy(dtype=float)
    has_dur = np.isfinite(dur) & (dur > 0)
    excl = np.where(has_dur, dur, 0.0)
    if timed:
        for r in np.unique(rank):
            m = np.flatnonzero((rank == r) & has_dur)
            if len(m) > 1:
                excl[m] = _exclusive(ev_start[m], ev_start[m] + dur[m])
    wall_by_row = st["wall_s"].to_numpy()
    med_wall = float(np.median(wall_by_row))
    for kind, part in ev[in_steps].groupby("kind"):
        if not np.isfinite(part["duration_s"].to_numpy(dtype=float)).any():
            idx = part.index
            rows = [row_of.get((int(r), int(s))) for r, s in zip(ev.loc[idx, "rank_"], ev.loc[idx, "step_"],
                                                                 strict=True)]
            pos = ev.index.get_indexer(idx)
            for p, row in zip(pos, rows, strict=True):
                if row is not None:
                    excl[p] = max(0.0, wall_by_row[row] - med_wall)
            warnings.append(f"'{kind}' events carry no durations: each is costed by its step's excess over the "
                            "median step")
    return excl


def _phase_intervals(phases: pd.DataFrame, t0: pd.Timestamp) -> dict[int, dict[str, np.ndarray]]:
    """Per rank, the phase intervals sorted by start (seconds since t0), with their step, phase and the longest
    interval's length (to bound the overlap search)."""
    start = _seconds(phases["time"], t0)
    frame = pd.DataFrame({"rank": phases["rank"].to_numpy(), "step": phases["step"].to_numpy(),
                          "start": start, "end": start + phases["duration_s"].to_numpy(dtype=float),
                          "phase": phases["phase"].astype(str).to_numpy(dtype=object)})
    out: dict[int, dict[str, np.ndarray]] = {}
    for r, g in frame.groupby("rank"):
        g = g.sort_values("start")
        out[int(r)] = {"start": g["start"].to_numpy(), "end": g["end"].to_numpy(),
                       "step": g["step"].to_numpy(dtype=np.int64), "phase": g["phase"].to_numpy(),
                       "max": float((g["end"] - g["start"]).max())}
    return out


def _move_event_seconds(st: pd.DataFrame, counted: pd.DataFrame, ph_iv: dict, row_of: dict,
                        cause_of: dict[str, str]) -> dict[str, np.ndarray]:
    """Move each counted event's seconds out of the phases it overlapped (else the step's compute, or the time
    between steps) into the event's cause, in place on st's cause:/net: columns (numpy arrays: a long run holds
    thousands of events). Returns the event:<kind> seconds per step row."""
    arrays = {c: st[c].to_numpy(dtype=np.float64, copy=True) for c in st.columns if c.startswith(("cause:", "net:"))}
    step_start = st["start_s"].to_numpy(dtype=np.float64)
    step_dur = st["duration_s"].to_numpy(dtype=np.float64)
    ev_cols: dict[str, np.ndarray] = {}
    for kind, x, rank_, step_, dur_, start_ in zip(counted["kind"], counted["excl_s"], counted["rank_"],
                                                   counted["step_"], counted["duration_s"], counted["start_s"],
                                                   strict=True):
        row = row_of.get((int(rank_), int(step_)))
        if row is None:
            continue
        x = float(x)
        cause = catalog.cause_of_event(kind)
        ev_cols.setdefault(f"event:{kind}", np.zeros(len(st)))[row] += x
        if cause is None:
            continue  # an event kind without a cause of its own: its time stays with the phases it fell in
        remaining = x
        d = float(dur_) if np.isfinite(dur_) and dur_ > 0 else 0.0
        g = ph_iv.get(int(rank_))
        if g is not None and d > 0 and np.isfinite(start_):
            s0, s1 = float(start_), float(start_) + d
            lo = np.searchsorted(g["start"], s0 - g["max"], side="left")
            hi = np.searchsorted(g["start"], s1, side="left")
            ov = np.minimum(s1, g["end"][lo:hi]) - np.maximum(s0, g["start"][lo:hi])
            for j in np.flatnonzero(ov > 0) + lo:
                take = min(float(ov[j - lo]) * x / d, remaining)
                prow = row_of.get((int(rank_), int(g["step"][j])))
                if prow is None or take <= 0:
                    continue
                phase = g["phase"][j]
                arrays[f"cause:{cause_of.get(f'phase:{phase}', DEFAULT_CAUSE)}"][prow] -= take
                if f"net:{phase}" in arrays:
                    arrays[f"net:{phase}"][prow] -= take
                remaining -= take
        if remaining > 1e-12:
            inside = not np.isfinite(start_) or not np.isfinite(step_start[row]) or \
                start_ < step_start[row] + step_dur[row]
            target = DEFAULT_CAUSE if inside or "cause:between_steps" not in arrays else cause_ids.BETWEEN_STEPS
            arrays[f"cause:{target}"][row] -= remaining
        arrays.setdefault(f"cause:{cause}", np.zeros(len(st)))[row] += x
    for c, v in arrays.items():
        st[c] = v
    return ev_cols
