"""Regression triage: GOOD ran at full speed, BAD does not — what changed, and is the difference even real?

    from playbook.analysis.regression import compare
    r = compare([read_run("runs/good")], [read_run("runs/bad")])     # one Bundle per run, any number per side
    r.verdict, r.causes[0]["id"], r.to_json()

Method (pure functions; no thresholds tuned to fixtures):

1. Per run, one row per step (playbook.schema steps table): the step's wall time (start of the next step minus its
   own start, so time spent between steps counts; its duration when start times are unknown), its work (tokens,
   summed over ranks), its phases and the seconds of each event kind in it. With several ranks the row is the
   critical rank's: the one that waited least in the collective (else the slowest) — the others' waiting is a
   consequence of it. An event's seconds are exclusive: an event nested inside a longer one (a GC pause inside a
   recompile) belongs to the outer one; event time is taken out of the phase it overlapped, so the step splits
   into causes that add up to its wall time:
     data → data_starvation, h2d → h2d_copy, collective → collective_straggler, checkpoint/eval/log phases and
     checkpoint/eval events → periodic_stall, compile/recompile events → recompilation, gc events → gc_pause,
     time between steps → between_steps, every other phase (fwd, bwd, optimizer, the unphased rest) →
     slower_compute — except, with several ranks, the critical rank's compute beyond the median rank's, which
     is a straggler's excess (→ collective_straggler).
   An event kind logged without durations is costed by the excess of the steps holding it over the run's median.
2. Throughput and cost per unit of work. With tokens on both sides, every per-step cost is expressed per token
   and scaled to GOOD's tokens per step (so a changed batch size does not read as a regression); otherwise per
   step. Noise: a circular block bootstrap over steps (block length by Politis-White, so autocorrelated steps
   are not counted as independent; its spread widened for the bootstrap's known variance bias and for the noise
   of that variance estimate, compare.block_bootstrap_widening), hierarchical over runs when a side has several.
   With ≥ 2 runs a side the throughput interval also covers a Student t interval on the runs' log throughputs
   (runs are the independent units and a bootstrap over few runs understates their variance; the run-to-run
   variance is pooled over both sides, i.e. taken to be the machine's). The throughput ratio BAD/GOOD gets a 95%
   interval; "no significant difference" when it holds 1. The step-time distributions are compared by Cliff's
   delta (the Mann-Whitney effect size; p-value on autocorrelation-deflated sample sizes) and the median ratio.
3. Each cause's change in seconds per step gets its own bootstrap interval and p-value (for event causes, also a
   Poisson rate test of their counts per step — conditional binomial — either test sufficing, Bonferroni). When
   the slowdown is significant, causes are ranked by (1 - p) × the share of the slowdown they account for
   (clipped to 0-1); otherwise by (1 - p) × (1 - exp(-change / 5% of GOOD's step)), the impact scale of
   analysis.hypotheses, and only causes whose own change is significant are listed.
4. The utilization pattern (oscillation, period, duty cycle, synchrony, per-GPU status, top hypothesis) comes from
   analysis.diagnosis.diagnose of each run. Without step logs on both sides, the causes are the hypotheses whose
   diagnose score rose from GOOD to BAD, and mean utilization replaces throughput (labelled as such).
5. The environment diff (meta.json "env" from playbook.probes.fingerprint, the run's configuration and command
   line, hardware read from telemetry) links every changed item to the causes it can produce (a compile cache or
   a shape setting → recompilation; NCCL_* → collective_straggler; loader settings → data_starvation, ...), and
   ranks it by the measured score of those causes.

JSON contract (`Regression.to_dict()`; NaN → null):
  verdict      slower | faster | no significant difference | not comparable
  summary      one line
  mode         steps | utilization | none
  good, bad    {inputs, runs, steps, ranks, unit, throughput, throughput_per_run, run_cv, median_step_s,
                mean_step_s, tokens_per_step, environment (bool)}
  throughput   {unit, good, bad, ratio, ratio_lo, ratio_hi, change, p_value, significant, method, n_boot,
                block_steps {good, bad}, good_per_run, bad_per_run, run_to_run {good_cv, bad_cv, measured},
                bootstrap_interval, runs_t_interval (with ≥ 2 runs a side), per}
  step_time    {median {good, bad, ratio, ratio_lo, ratio_hi}, mean {...}, p90 {good, bad}, cliffs_delta,
                p_value, lag1 {good, bad}}
  phases       [{phase, good_s, bad_s, delta_s, delta_lo, delta_hi, p_value, significant, share_of_change}]
  events       [{kind, good_events, bad_events, good_steps_with, bad_steps_with, good_per_100_steps,
                 bad_per_100_steps, rate_p_value, good_s_per_step, bad_s_per_step, good_outside, bad_outside,
                 good_cadence_steps, bad_cadence_steps}]
  causes       [{id, score, impact, share_of_change, good_s, bad_s, delta_s, delta_lo, delta_hi, p_value,
                 evidence [str], changes [key], next_step, fix, notebook}], highest score first
  pattern      {signal, good {oscillation, mean_util_pct, busy_share, straggler_ranks, slowest_rank {rank,
                straggler_score, persistence}, top_hypothesis, top_score,
                gpus {id: status}, signal}, bad {...}, changes [str], gpus [{id, good, bad}]}
  environment  [{key, group, good, bad, causes [id], link_weight, score, varies (several values on a side),
                 overlap (a value found on both sides)}] changed items, highest score first
  unchanged    [key] items equal on both sides
  warnings     [str]
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from playbook import causes as catalog
from playbook import schema
from playbook.analysis import hypotheses as hyp
from playbook.analysis import stats
from playbook.analysis import steps as steps_analysis

ALPHA = 0.05  # the intervals are 95%
N_BOOT = 2000
MIN_SCORE = 0.05  # causes scoring below this (e.g. < 5% of the slowdown) are not listed
SEGMENT_BREAK = 100.0  # a gap between steps longer than this many median steps, with no event in it, is a break

# views of the cause catalog (playbook.causes)
PHASE_CAUSE: dict[str, str] = catalog.PHASE_CAUSE
EVENT_CAUSE: dict[str, str] = catalog.EVENT_KIND_CAUSE
DEFAULT_CAUSE = "slower_compute"
COMPUTE_PHASES = steps_analysis.COMPUTE_PHASES
COST_PREFIXES = ("phase:", "event:", "cause:", "net:", "skew:")  # per-step seconds columns of RunSteps.table
REGRESSION_CAUSES = [c for c in catalog.CATALOG if c.kind == "regression"]
CAUSE_LABELS: dict[str, str] = {c.id: c.title for c in REGRESSION_CAUSES}
EXTRA_FIXES: dict[str, str] = {c.id: c.fix for c in REGRESSION_CAUSES}
EXTRA_NEXT: dict[str, str] = {c.id: c.next_step for c in REGRESSION_CAUSES}

# Which causes a changed item can produce, by the item's name (config keys, command options, env variables).
KEYWORD_LINKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"compil|dynamo|inductor|triton|dynamic|shape|bucket|pad|warm|backend|graph|cache",
     ("recompilation",)),
    (r"worker|loader|prefetch|decode|shuffle|buffer|dataset|data(?!_?parallel)|augment|num_proc|read|storage",
     ("data_starvation",)),
    (r"pin|non_blocking|h2d|copy", ("h2d_copy",)),
    (r"checkpoint|ckpt|save|eval|log_(every|interval|steps)|logging", ("periodic_stall",)),
    (r"(^|[^a-z])gc|garbage", ("gc_pause",)),
    (r"nccl|gloo|world|nodes|ranks|ddp|fsdp|allreduce|all_reduce|bucket_cap|overlap|comm|master_|ucx|^fi_|socket|"
     r"ib_|hca", ("collective_straggler",)),
    (r"sync|\bitem|print", ("host_sync",)),
    (r"alloc|memory|expandable", ("memory_pressure", "slower_compute")),
    (r"thread|omp_|mkl_|kmp_|batch|hidden|d_model|layers|seq|len|precision|dtype|amp|bf16|fp16|tf32|model|"
     r"device|cuda_|cublas|cudnn", ("slower_compute",)),
)
# Items whose meaning is known: (causes, link weight). Versions can change anything, so they link weakly.
FIXED_LINKS: dict[str, tuple[tuple[str, ...], float]] = {
    "python": (("gc_pause", "slower_compute", "data_starvation"), 0.5),
    "torch": (("slower_compute", "recompilation", "collective_straggler", "memory_pressure"), 0.6),
    "torch CUDA": (("slower_compute",), 0.6),
    "cuDNN": (("slower_compute",), 0.6),
    "NCCL": (("collective_straggler", "link_degradation"), 0.8),
    "driver": (("slower_compute", "throttling"), 0.5),
    "CUDA driver": (("slower_compute",), 0.5),
    "GPUs": (("slower_compute", "throttling", "h2d_copy"), 0.8),
    "CPU count": (("data_starvation", "slower_compute"), 0.8),
    "CPU affinity": (("data_starvation", "slower_compute"), 0.8),
    "compile cache (inductor)": (("recompilation",), 1.0),
    "compile cache (triton)": (("recompilation",), 1.0),
    "compile cache (inductor) location": (("recompilation",), 0.5),
    "compile cache (triton) location": (("recompilation",), 0.5),
    "git commit": (("slower_compute", "data_starvation", "recompilation", "periodic_stall", "host_sync"), 0.4),
    "ranks": (("collective_straggler", "slower_compute"), 0.8),
    "hosts": (("collective_straggler", "link_degradation"), 0.8),
    "power limit (measured)": (("throttling", "slower_compute"), 1.0),
    "PCIe link (measured)": (("h2d_copy", "link_degradation"), 1.0),
    "GPU memory (measured)": (("memory_pressure", "slower_compute"), 0.6),
    "package triton": (("recompilation", "slower_compute"), 0.6),
}
GROUP_PRIOR = {"versions": 0.3, "hardware": 0.3, "code": 0.2, "env": 0.2, "cache": 0.15, "config": 0.15,
               "command": 0.1, "host": 0.05}
# Recorder / rundir bookkeeping in meta.json: not configuration.
_META_SKIP = {"playbook_run", "schema_version", "created", "command", "env", "host", "rank", "pid", "world_size",
              "started", "local_rank", "ended", "sample_hz", "probes", "rows", "rows_dropped", "gc", "compile",
              "steps_timed", "step_timer", "warnings", "synthetic", "segments", "flushes", "nvml", "sampler",
              "exit_status", "returncode"}
_CONFIG_UNLINKED = {"variant", "lab", "seed", "sample_hz"}


# ---------------------------------------------------------------------------------------------------------------
# Per-run step tables


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
    """The per-step table of one run (module docstring, step 1); None without step rows."""
    steps, events = bundle.steps, bundle.events
    if steps is None or steps.empty:
        return None
    warnings: list[str] = []
    st = steps_analysis.step_times(steps)  # rank, step, host, time, duration_s
    st = st[np.isfinite(st["duration_s"].to_numpy(dtype=float))].sort_values(["rank", "step"]).reset_index(drop=True)
    if st.empty:
        return None
    has_time = bool(st["time"].notna().all())
    t0 = st["time"].min() if has_time else None
    st["start_s"] = _seconds(st["time"], t0) if has_time else np.nan
    med = float(np.median(st["duration_s"]))
    wall = st["duration_s"].to_numpy(dtype=float).copy()
    if has_time:
        nxt = st.groupby("rank")["start_s"].shift(-1).to_numpy(dtype=float)
        gap_wall = nxt - st["start_s"].to_numpy()
        ok = np.isfinite(gap_wall)
        wall[ok] = np.maximum(wall[ok], gap_wall[ok])
    st["wall_s"] = wall

    phases = steps[steps["phase"] != "step"]
    has_phases = len(phases) > 0
    key = ["rank", "step"]
    if has_phases:
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
    causes = sorted(set(cause_of.values()))
    for c in causes:
        st[f"cause:{c}"] = st[[p for p in pcols if cause_of[p] == c]].sum(axis=1)
    for p in COMPUTE_PHASES:
        if f"phase:{p}" in st:
            st[f"net:{p}"] = st[f"phase:{p}"]

    ev_summary, ev_cols = _event_costs(st, phases if has_phases else None, events, t0, cause_of, warnings)
    st = st.join(ev_cols) if len(ev_cols.columns) else st

    # segment breaks: a long gap with no event in it is a pause of the recording, not of the training
    if has_time and np.isfinite(med) and med > 0:
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
    has_tokens = bool(table["tokens"].notna().all() and (table["tokens"] > 0).all())
    unit = _tokens_unit(bundle.meta)
    out = RunSteps(label=label, table=table, events=ev_summary, has_phases=has_phases, has_tokens=has_tokens,
                   ranks=ranks, warnings=warnings, tokens_unit=unit if isinstance(unit, str) and unit else "tokens")
    out.block = stats.optimal_block_length(table["wall_s"].to_numpy())
    return out


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
    ranks = np.unique(st["rank"].to_numpy())
    steps_known = set(st["step"].astype(int))
    timed = t0 is not None and ev["time"].notna().all()
    ev_start = _seconds(ev["time"], t0) if t0 is not None and ev["time"].notna().any() else np.full(len(ev), np.nan)
    ev["start_s"] = ev_start
    # events without a step: place them by time in the step that was running (same rank, else the first rank)
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
    ev["step_"] = step
    ev["rank_"] = rank
    in_steps = np.isin(step, list(steps_known))
    dur = ev["duration_s"].to_numpy(dtype=float)
    has_dur = np.isfinite(dur) & (dur > 0)
    excl = np.where(has_dur, dur, 0.0)
    if timed:
        for r in np.unique(rank):
            m = np.flatnonzero((rank == r) & has_dur)
            if len(m) > 1:
                excl[m] = _exclusive(ev_start[m], ev_start[m] + dur[m])
    # kinds logged without durations: cost = the excess of their steps over the run's median step
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
    ev["excl_s"] = excl

    # move event seconds out of the phases they overlapped and into the event's cause (numpy arrays: a long
    # run holds thousands of events)
    ph_iv: dict[int, dict[str, np.ndarray]] = {}
    if timed and phases is not None and phases["time"].notna().all():
        start = _seconds(phases["time"], t0)
        frame = pd.DataFrame({"rank": phases["rank"].to_numpy(), "step": phases["step"].to_numpy(),
                              "start": start, "end": start + phases["duration_s"].to_numpy(dtype=float),
                              "phase": phases["phase"].astype(str).to_numpy(dtype=object)})
        for r, g in frame.groupby("rank"):
            g = g.sort_values("start")
            ph_iv[int(r)] = {"start": g["start"].to_numpy(), "end": g["end"].to_numpy(),
                             "step": g["step"].to_numpy(dtype=np.int64), "phase": g["phase"].to_numpy(),
                             "max": float((g["end"] - g["start"]).max())}
    arrays = {c: st[c].to_numpy(dtype=np.float64, copy=True) for c in st.columns if c.startswith(("cause:", "net:"))}
    step_start = st["start_s"].to_numpy(dtype=np.float64)
    step_dur = st["duration_s"].to_numpy(dtype=np.float64)
    counted = ev[in_steps & (ev["excl_s"] > 0)]
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
            target = DEFAULT_CAUSE if inside or "cause:between_steps" not in arrays else "between_steps"
            arrays[f"cause:{target}"][row] -= remaining
        arrays.setdefault(f"cause:{cause}", np.zeros(len(st)))[row] += x
    for c, v in arrays.items():
        st[c] = v

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


# ---------------------------------------------------------------------------------------------------------------
# Bootstrap of one side


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


# ---------------------------------------------------------------------------------------------------------------
# Environment


def _flat_config(prefix: str, value: Any, out: dict[str, str], depth: int = 0) -> None:
    if isinstance(value, dict) and depth < 2:
        for k, v in value.items():
            _flat_config(f"{prefix}.{k}" if prefix else str(k), v, out, depth + 1)
    else:
        out[prefix] = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _cache_text(c: dict | None) -> str | None:
    """"cold: missing" / "cold: empty" / "warm: 182.1 MB in 869 files" (the location is a key of its own)."""
    if not isinstance(c, dict):
        return None
    if not c.get("exists"):
        return "cold: missing"
    if not c.get("bytes"):
        return "cold: empty"
    more = "+" if c.get("truncated") else ""
    return f"warm: {_human_bytes(float(c['bytes']))}{more} in {c.get('files', '?')}{more} files"


def environment(bundle: schema.Bundle) -> tuple[dict[str, tuple[str, str]], bool]:
    """Flattened environment and configuration of one run: {key: (value, group)}, and whether a fingerprint
    (meta.json "env") was found. Groups: versions, hardware, env, cache, config, command, code, host."""
    out: dict[str, tuple[str, str]] = {}
    run_meta = bundle.meta.get("run") or {}
    parts = bundle.meta.get("parts") or {}
    fps = [run_meta.get("env")] + [p.get("env") for p in parts.values() if isinstance(p, dict)]
    fps = [f for f in fps if isinstance(f, dict) and f]
    found = bool(fps)

    def put(key: str, value: Any, group: str) -> None:
        if value is None or value == "" or value == {}:
            return
        out[key] = (value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True), group)

    if fps:
        fp = fps[0]
        torch = fp.get("torch") or {}
        put("python", fp.get("python"), "versions")
        put("torch", torch.get("version"), "versions")
        put("torch CUDA", torch.get("cuda"), "versions")
        put("cuDNN", torch.get("cudnn"), "versions")
        put("NCCL", torch.get("nccl"), "versions")
        nv = fp.get("nvidia") or {}
        put("driver", nv.get("driver"), "versions")
        put("CUDA driver", nv.get("cuda_driver"), "versions")
        for name, v in sorted((fp.get("packages") or {}).items()):
            if name not in ("torch", "playbook"):
                put(f"package {name}", v, "versions")
        gpus: dict[tuple, str] = {}
        for f in fps:
            for g in (f.get("nvidia") or {}).get("gpus") or []:
                gpus[(f.get("hostname"), g.get("uuid") or g.get("index"))] = str(g.get("name"))
        put("GPUs", ", ".join(f"{n} × {m}" for m, n in sorted(Counter(gpus.values()).items())) or "none",
            "hardware")
        cpu = fp.get("cpu") or {}
        put("CPU count", cpu.get("count"), "hardware")
        put("CPU affinity", cpu.get("affinity"), "hardware")
        for k, v in sorted((fp.get("env") or {}).items()):
            put(f"env {k}", str(v), "env")
        caches = fp.get("compile_cache") or {}
        for name in ("inductor", "triton"):
            put(f"compile cache ({name})", _cache_text(caches.get(name)), "cache")
            if isinstance(caches.get(name), dict):
                put(f"compile cache ({name}) location", caches[name].get("path"), "cache")
        put("git commit", fp.get("git_commit"), "code")
        put("host", ", ".join(sorted({str(f.get("hostname")) for f in fps if f.get("hostname")})), "host")
        put("platform", fp.get("platform"), "host")
        put("python executable", fp.get("python_executable"), "host")
    command = run_meta.get("command") or (fps[0].get("command") if fps else None)
    if isinstance(command, list):
        command = shlex.join(str(c) for c in command)
    from playbook.probes.fingerprint import is_kernel_command

    if command and not is_kernel_command(command):  # a kernel's argv is not the training command
        put("command", command, "command")
        for opt, v in _options(command).items():
            put(f"command {opt}", v, "config")
    config: dict[str, str] = {}
    for k, v in run_meta.items():
        if k not in _META_SKIP:
            _flat_config(k, v, config)
    for p in parts.values():
        if isinstance(p, dict):
            for k, v in p.items():
                if k not in _META_SKIP:
                    _flat_config(k, v, config)
    for k, v in config.items():
        put(k, v, "config")
    if len(bundle.steps):
        put("ranks", str(int(bundle.steps["rank"].nunique())), "config")
        put("hosts", str(int(bundle.steps["host"].nunique())), "config")
    tele = bundle.telemetry
    if len(tele):
        lim = tele["power_limit_w"].dropna()
        if len(lim):
            put("power limit (measured)", f"{lim.median():.0f} W (min {lim.min():.0f} W)", "hardware")
        gen, width = tele["pcie_link_gen"].dropna(), tele["pcie_link_width"].dropna()
        if len(gen) and len(width):
            put("PCIe link (measured)", f"gen{gen.max():.0f} x{width.max():.0f} (lowest gen{gen.min():.0f} "
                f"x{width.min():.0f})", "hardware")
        mem = tele["mem_total_mib"].dropna()
        if len(mem):
            put("GPU memory (measured)", f"{mem.median() / 1024:.0f} GiB", "hardware")
    return out, found


def _options(command: str) -> dict[str, str]:
    """--key value / --key=value / -k value options of a command line (flags → "on")."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        tokens = command.split()
    out: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.startswith("-") and len(t) > 1 and not re.fullmatch(r"-[\d.]+", t):
            if "=" in t:
                k, v = t.split("=", 1)
                out[k] = v
            elif i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                out[t] = tokens[i + 1]
                i += 1
            else:
                out[t] = "on"
        i += 1
    return out


def links(key: str, group: str) -> tuple[tuple[str, ...], float]:
    """The causes a changed item can produce and how directly (0-1)."""
    if key in FIXED_LINKS:
        return FIXED_LINKS[key]
    if group == "host" or group == "command" or key.split(".")[-1] in _CONFIG_UNLINKED:
        return (), 0.0
    name = key.split(" ", 1)[1] if key.startswith(("env ", "command ", "package ")) else key
    name = name.lower()
    found: list[str] = []
    for pattern, causes in KEYWORD_LINKS:
        if re.search(pattern, name):
            found += [c for c in causes if c not in found]
    if group == "versions" and not found:
        return ("slower_compute",), 0.3
    if group == "env" and not found:
        return ("slower_compute",), 0.3
    return tuple(found), (1.0 if found else 0.0)


def environment_diff(good: list[schema.Bundle], bad: list[schema.Bundle]) -> tuple[list[dict], list[str], list[str]]:
    """Changed items [{key, group, good, bad, varies}], unchanged keys, and notes (sides without a fingerprint)."""
    notes = []
    sides = []
    for name, bundles in (("GOOD", good), ("BAD", bad)):
        envs = [environment(b) for b in bundles]
        if not any(found for _, found in envs):
            notes.append(f"no environment fingerprint in {name} (not a playbook run directory, or recorded before "
                         "fingerprints): versions, variables and caches are not compared")
        sides.append(envs)
    fingerprints = all(any(f for _, f in envs) for envs in sides)
    values: list[dict[str, set[str]]] = []
    groups: dict[str, str] = {}
    for envs in sides:
        v: dict[str, set[str]] = {}
        for env, _ in envs:
            for k, (val, g) in env.items():
                v.setdefault(k, set()).add(val)
                groups[k] = g
        values.append(v)
    changed, same = [], []
    for k in sorted(groups):
        g = groups[k]
        if not fingerprints and g not in ("config", "command"):
            continue
        gv, bv = values[0].get(k), values[1].get(k)
        if gv == bv:
            same.append(k)
            continue
        unset = "(unset)" if g == "env" else "(not recorded)"
        gtxt = " | ".join(sorted(gv)) if gv else unset
        btxt = " | ".join(sorted(bv)) if bv else unset
        if g == "cache" and gv and bv and not k.endswith("location") and \
                {_cache_state(v) for v in gv} == {_cache_state(v) for v in bv} and \
                not any(_cache_size_changed(a, b) for a in gv for b in bv):
            same.append(k)  # a warm cache that grew a little is the same warm cache
            continue
        changed.append({"key": k, "group": g, "good": gtxt, "bad": btxt,
                        "varies": bool((gv and len(gv) > 1) or (bv and len(bv) > 1)),
                        "overlap": bool(gv and bv and gv & bv)})
    return changed, same, notes


def _cache_state(text: str) -> str:
    return text.split(":", 1)[0]


def _cache_size_changed(a: str, b: str) -> bool:
    def size(t: str) -> float:
        m = re.search(r"warm: ([\d.]+) (B|KB|MB|GB|TB)", t)
        if not m:
            return 0.0
        return float(m.group(1)) * 1000 ** ("B", "KB", "MB", "GB", "TB").index(m.group(2))

    sa, sb = size(a), size(b)
    return bool(sa and sb and max(sa, sb) / min(sa, sb) > 2)


# ---------------------------------------------------------------------------------------------------------------
# The comparison


@dataclass
class Regression:
    """The result of `compare` (see the module docstring for the JSON contract)."""

    verdict: str
    summary: str
    mode: str
    good: dict
    bad: dict
    throughput: dict
    step_time: dict
    phases: list[dict]
    events: list[dict]
    causes: list[dict]
    pattern: dict
    environment: list[dict]
    unchanged: list[str]
    warnings: list[str]
    detail: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        """The JSON contract as plain Python (NaN → None)."""
        from playbook.analysis.diagnosis import _clean

        return _clean({k: getattr(self, k) for k in (
            "verdict", "summary", "mode", "good", "bad", "throughput", "step_time", "phases", "events", "causes",
            "pattern", "environment", "unchanged", "warnings")})

    def to_json(self, indent: int | None = 2) -> str:
        """One JSON object (strict: no NaN)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)

    @property
    def top(self) -> dict:
        """The highest-ranked cause ({} when none)."""
        return self.causes[0] if self.causes else {}

    def phase_frame(self) -> pd.DataFrame:
        """The phases section as a frame (seconds per step), for tables and plots."""
        return pd.DataFrame(self.phases)

    def cause_frame(self) -> pd.DataFrame:
        """The causes section as a frame (without the long texts)."""
        cols = ["id", "score", "impact", "share_of_change", "good_s", "bad_s", "delta_s", "delta_lo", "delta_hi",
                "p_value"]
        return pd.DataFrame([{k: c.get(k) for k in cols} for c in self.causes], columns=cols)


def _as_list(x: schema.Bundle | Sequence[schema.Bundle]) -> list[schema.Bundle]:
    return [x] if isinstance(x, schema.Bundle) else list(x)


def fmt_seconds(s: float | None) -> str:
    """Seconds in readable units: "1.23 s", "45.6 ms", "789 µs", "0"; "?" for None/NaN."""
    if s is None or not np.isfinite(s):
        return "?"
    a = abs(s)
    if a >= 1:
        return f"{s:.3g} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if a == 0:
        return "0"
    return f"{s * 1e6:.3g} µs"


def fmt_p(p: float | None) -> str:
    """A p-value for a report: "p = 0.012", "p < 1e-16", "untested"."""
    if p is None or not np.isfinite(p):
        return "untested"
    return f"p = {p:.2g}" if p >= 1e-16 else "p < 1e-16"


def _binom_two_sided(k: int, n: int, p: float) -> float:
    """Exact two-sided binomial test (doubling the smaller tail)."""
    if n <= 0:
        return math.nan
    upper = stats.binom_sf(k, n, p)
    lower = 1.0 - stats.binom_sf(k + 1, n, p)
    return float(min(1.0, 2 * min(upper, lower)))


def compare(good: schema.Bundle | Sequence[schema.Bundle], bad: schema.Bundle | Sequence[schema.Bundle],
            n_boot: int = N_BOOT, seed: int = 0, diagnoses: bool = True) -> Regression:
    """Compare GOOD run(s) with BAD run(s): one Bundle per run (several per side measure run-to-run variance)."""
    good_b, bad_b = _as_list(good), _as_list(bad)
    if not good_b or not bad_b:
        raise ValueError("compare needs at least one run on each side")
    rng = np.random.default_rng(seed)
    warnings: list[str] = []
    for name, bs in (("GOOD", good_b), ("BAD", bad_b)):
        for b in bs:
            warnings += [f"{name}: {w}" for w in b.warnings]
    g_runs = [run_steps(b, f"GOOD run {i + 1}") for i, b in enumerate(good_b)]
    b_runs = [run_steps(b, f"BAD run {i + 1}") for i, b in enumerate(bad_b)]
    for r in g_runs + b_runs:
        if r is not None:
            warnings += r.warnings
    g_ok = [r for r in g_runs if r is not None]
    b_ok = [r for r in b_runs if r is not None]
    diag_g = [_diagnose(b, warnings) for b in good_b] if diagnoses else []
    diag_b = [_diagnose(b, warnings) for b in bad_b] if diagnoses else []
    pattern = _pattern(good_b, bad_b, diag_g, diag_b, g_ok, b_ok)
    changed, unchanged, notes = environment_diff(good_b, bad_b)
    warnings += notes
    info = {"good": _side_info(good_b, g_ok), "bad": _side_info(bad_b, b_ok)}

    if g_ok and b_ok:
        if len(g_ok) < len(good_b) or len(b_ok) < len(bad_b):
            warnings.append("some runs have no step log: throughput is compared on the runs that have one")
        res = _compare_steps(g_ok, b_ok, n_boot, rng, warnings)
        mode = "steps"
    else:
        res = _compare_utilization(good_b, bad_b, n_boot, rng, warnings)
        mode = "utilization" if res else "none"
        if res is None:
            res = {"throughput": {}, "step_time": {}, "phases": [], "events": [], "causes": []}
    throughput, step_time, phases, events, causes = (res["throughput"], res["step_time"], res["phases"],
                                                     res["events"], res["causes"])
    if mode != "steps":
        causes = _causes_from_diagnoses(diag_g, diag_b)
    else:
        _diagnose_evidence(causes, diag_g, diag_b)
    env = _link_environment(changed, causes)
    causes.sort(key=lambda c: (-c["score"], c["id"]))
    if mode == "steps":
        info["good"].update(throughput=throughput["good"], throughput_per_run=throughput["good_per_run"],
                            unit=throughput["unit"])
        info["bad"].update(throughput=throughput["bad"], throughput_per_run=throughput["bad_per_run"],
                           unit=throughput["unit"])
        for side in ("good", "bad"):
            tp = info[side]["throughput_per_run"]
            info[side]["run_cv"] = float(np.std(tp, ddof=1) / np.mean(tp)) if len(tp) > 1 else None
            info[side]["median_step_s"] = step_time["median"][side]
            info[side]["mean_step_s"] = step_time["mean"][side]
    verdict, summary = _verdict(mode, throughput, causes, env)
    return Regression(verdict=verdict, summary=summary, mode=mode, good=info["good"], bad=info["bad"],
                      throughput=throughput, step_time=step_time, phases=phases, events=events, causes=causes,
                      pattern=pattern, environment=env, unchanged=unchanged, warnings=list(dict.fromkeys(warnings)),
                      detail={"good_runs": g_ok, "bad_runs": b_ok, "good_diagnoses": diag_g,
                              "bad_diagnoses": diag_b, **res.get("detail", {})})


def _side_info(bundles: list[schema.Bundle], runs: list[RunSteps]) -> dict:
    inputs = [i for b in bundles for i in b.inputs]
    out: dict[str, Any] = {"inputs": inputs, "runs": len(bundles), "steps": int(sum(len(r.table) for r in runs)),
                           "ranks": max((r.ranks for r in runs), default=0),
                           "environment": any(environment(b)[1] for b in bundles)}
    if runs and all(r.has_tokens for r in runs):
        out["tokens_per_step"] = float(sum(r.table["tokens"].sum() for r in runs) / sum(len(r.table) for r in runs))
    return out


def _diagnose(bundle: schema.Bundle, warnings: list[str]):
    from playbook.analysis.diagnosis import diagnose

    try:
        return diagnose(bundle)
    except Exception as exc:  # one failing diagnosis must not stop the comparison
        warnings.append(f"diagnose skipped for {', '.join(bundle.inputs[:2])}: {type(exc).__name__}: {exc}"[:300])
        return None


def _compare_steps(g_runs: list[RunSteps], b_runs: list[RunSteps], n_boot: int, rng: np.random.Generator,
                   warnings: list[str]) -> dict:
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
    throughput = {"unit": unit, **tp, "change": tp["ratio"] - 1 if np.isfinite(tp["ratio"]) else math.nan,
                  "significant": significant, "n_boot": n_boot,
                  "good_per_run": g.throughput_per_run, "bad_per_run": b.throughput_per_run,
                  "block_steps": {"good": [r.block for r in g_runs], "bad": [r.block for r in b_runs]},
                  "run_to_run": {"measured": run_to_run,
                                 "good_cv": _cv(g.throughput_per_run), "bad_cv": _cv(b.throughput_per_run)},
                  "per": f"GOOD's {tps_ref:.4g} tokens per step" if per_token else "step"}
    mean = _ratio_block(float(g.cost[iw]), float(b.cost[iw]), g.cost_boot[:, iw], b.cost_boot[:, iw])
    median = _ratio_block(g.median, b.median, g.median_boot, b.median_boot)
    lag_g = float(np.mean([stats.lag1(r.table["wall_s"].to_numpy()) for r in g_runs]))
    lag_b = float(np.mean([stats.lag1(r.table["wall_s"].to_numpy()) for r in b_runs]))
    delta, p_mw = stats.cliffs_delta(g.per_step_cost, b.per_step_cost, lag_g, lag_b)
    step_time = {"median": median, "mean": mean,
                 "p90": {"good": float(np.percentile(g.per_step_cost, 90)),
                         "bad": float(np.percentile(b.per_step_cost, 90))},
                 "cliffs_delta": delta, "p_value": p_mw, "lag1": {"good": lag_g, "bad": lag_b},
                 "per": throughput["per"]}
    d_wall = float(b.cost[iw] - g.cost[iw])

    def delta_row(col: str) -> dict:
        j = columns.index(col)
        est = float(b.cost[j] - g.cost[j])
        boot = b.cost_boot[:, j] - g.cost_boot[:, j]
        lo, hi = _interval(boot)
        p = stats.bootstrap_p(est, boot)
        return {"good_s": float(g.cost[j]), "bad_s": float(b.cost[j]), "delta_s": est, "delta_lo": lo,
                "delta_hi": hi, "p_value": p,
                "significant": bool(np.isfinite(lo) and (lo > 0 or hi < 0)),
                "share_of_change": est / d_wall if d_wall != 0 and significant else math.nan}

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
    causes = []
    direction = 1.0 if d_wall >= 0 else -1.0
    base = float(g.cost[iw])
    for col in columns:
        if not col.startswith("cause:"):
            continue
        cid = col.split(":", 1)[1]
        if not both_phased and cid not in ("recompilation", "gc_pause", "periodic_stall", "between_steps",
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
            weight = hyp.impact(impact)
        score = hyp.confidence(p) * weight if np.isfinite(p) else 0.0
        if score < MIN_SCORE or (not significant and not p < ALPHA):
            continue
        evidence = _cause_evidence(cid, row, events, d_wall, significant, columns)
        if cid == "collective_straggler" and "skew:straggler" in columns:
            evidence.append(_straggler_text(delta_row("skew:straggler"), g_runs, b_runs))
        causes.append({"id": cid, "score": round(float(score), 3), "impact": impact, **row,
                       "evidence": evidence, "changes": [], **_advice(cid)})
    if per_token:
        wl = _workload_change(g_runs, b_runs)
        if wl:
            causes.append(wl)
    return {"throughput": throughput, "step_time": step_time, "phases": phases, "events": events,
            "causes": causes, "detail": {"good_stats": g, "bad_stats": b, "columns": columns}}


def _rate_p(k_good: int, k_bad: int, n_good: int, n_bad: int) -> float:
    """Poisson rates per step compared: given k_good + k_bad events, k_bad ~ Binomial(n, n_bad / (n_good +
    n_bad)) when the rates are equal (exact, two-sided). NaN without events."""
    if k_good + k_bad == 0 or n_good + n_bad == 0:
        return math.nan
    return _binom_two_sided(k_bad, k_good + k_bad, n_bad / (n_good + n_bad))


def _cause_rate_p(cid: str, events: list[dict], n_good: int, n_bad: int) -> float:
    """Rate test of the cause's event kinds taken together (steps holding one); NaN without events."""
    rows = [e for e in events if catalog.cause_of_event(e["kind"]) == cid]
    return _rate_p(sum(e["good_steps_with"] for e in rows), sum(e["bad_steps_with"] for e in rows), n_good, n_bad)


def _cv(values: list[float]) -> float | None:
    return float(np.std(values, ddof=1) / np.mean(values)) if len(values) > 1 and np.mean(values) > 0 else None


def _advice(cid: str) -> dict:
    return {"label": CAUSE_LABELS.get(cid, cid.replace("_", " ")),
            "next_step": hyp.NEXT_STEPS.get(cid) or EXTRA_NEXT.get(cid, ""),
            "fix": hyp.FIXES.get(cid) or EXTRA_FIXES.get(cid, ""),
            "notebook": hyp.NOTEBOOKS.get(cid, "notebooks/40_regression_compare.ipynb")}


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
    out.append(f"{CAUSE_LABELS.get(cid, cid.replace('_', ' '))}: {fmt_seconds(row['good_s'])} → {fmt_seconds(row['bad_s'])} "
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
    if phases and cid not in ("between_steps",):
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
    score = hyp.confidence(p) * hyp.impact(abs(change)) * 0.5  # explains step time, not throughput
    if score < MIN_SCORE or not p < ALPHA:
        return None
    return {"id": "workload_change", "score": round(score, 3), "impact": abs(change), "share_of_change": math.nan,
            "good_s": math.nan, "bad_s": math.nan, "delta_s": math.nan, "delta_lo": math.nan, "delta_hi": math.nan,
            "p_value": p, "significant": p < ALPHA,
            "evidence": [f"tokens per step {mg:.4g} → {mb:.4g} ({change:+.0%}, {fmt_p(p)}): step times are "
                         "compared per token at GOOD's tokens per step"],
            "changes": [], **_advice("workload_change")}


def _compare_utilization(good_b: list[schema.Bundle], bad_b: list[schema.Bundle], n_boot: int,
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


def _hyp_scores(diags: list) -> dict[str, float]:
    scores: dict[str, list[float]] = {}
    ds = [d for d in diags if d is not None]
    for d in ds:
        for h in d.hypotheses:
            scores.setdefault(h["id"], []).append(float(h["score"]))
    return {k: float(np.sum(v) / len(ds)) for k, v in scores.items()} if ds else {}


def _causes_from_diagnoses(diag_g: list, diag_b: list) -> list[dict]:
    """Without step logs: the hypotheses whose diagnose score rose from GOOD to BAD."""
    sg, sb = _hyp_scores(diag_g), _hyp_scores(diag_b)
    out = []
    for hid, s in sb.items():
        if hid == "healthy":
            continue
        rise = s - sg.get(hid, 0.0)
        if rise < 0.05:
            continue
        ev = []
        for d in diag_b:
            if d is None:
                continue
            h = next((h for h in d.hypotheses if h["id"] == hid), None)
            if h:
                ev += [e for e in h["evidence"][:3] if e not in ev]
        ev.insert(0, f"diagnose score {sg.get(hid, 0.0):.2f} in GOOD → {s:.2f} in BAD")
        out.append({"id": hid, "score": round(rise, 3), "impact": math.nan, "share_of_change": math.nan,
                    "good_s": math.nan, "bad_s": math.nan, "delta_s": math.nan, "delta_lo": math.nan,
                    "delta_hi": math.nan, "p_value": math.nan, "evidence": ev, "changes": [], **_advice(hid)})
    return out


def _diagnose_evidence(causes: list[dict], diag_g: list, diag_b: list) -> None:
    sg, sb = _hyp_scores(diag_g), _hyp_scores(diag_b)
    for c in causes:
        if c["id"] in sb or c["id"] in sg:
            c["evidence"].append(f"diagnose score for {c['id']}: {sg.get(c['id'], 0.0):.2f} in GOOD → "
                                 f"{sb.get(c['id'], 0.0):.2f} in BAD")


def _link_environment(changed: list[dict], causes: list[dict]) -> list[dict]:
    by_id = {c["id"]: c for c in causes}
    out = []
    for item in changed:
        linked, weight = links(item["key"], item["group"])
        score = max((by_id[c]["score"] * weight for c in linked if c in by_id), default=0.0)
        if item["overlap"]:
            score *= 0.5  # some runs of both sides share a value, so it cannot be the whole story
        prior = GROUP_PRIOR.get(item["group"], 0.05)
        out.append({**item, "causes": list(linked), "link_weight": weight,
                    "score": round(score if score > 0 else 0.1 * prior, 4)})
    out.sort(key=lambda e: (-e["score"], e["key"]))
    for e in out:
        for c in e["causes"]:
            if c in by_id and e["score"] >= 0.1 * GROUP_PRIOR.get(e["group"], 0.05) and by_id[c]["score"] > 0:
                by_id[c]["changes"].append(e["key"])
    for c in causes:
        if c["changes"]:
            items = {e["key"]: e for e in out}
            text = "; ".join(f"{k}: {_short(items[k]['good'])} → {_short(items[k]['bad'])}" for k in c["changes"][:4])
            more = f" (+{len(c['changes']) - 4} more)" if len(c["changes"]) > 4 else ""
            c["evidence"].append(f"changed with it: {text}{more}")
    return out


def _short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _pattern(good_b, bad_b, diag_g, diag_b, g_runs, b_runs) -> dict:
    """The utilization pattern of each side and what changed (from diagnose, plus busy share from phases)."""
    def side(bundles, diags, runs) -> dict:
        d = next((x for x in diags if x is not None), None)
        osc = dict(d.oscillation) if d is not None else {}
        tele = pd.concat([b.telemetry for b in bundles if len(b.telemetry)], ignore_index=True) if any(
            len(b.telemetry) for b in bundles) else None
        util = float(tele["util_pct"].mean()) if tele is not None and tele["util_pct"].notna().any() else None
        busy = None
        if runs and all(r.has_phases for r in runs):
            shares = [r.table[[c for c in r.table.columns if c.startswith("net:")]].sum().sum()
                      / r.table["wall_s"].sum() for r in runs if any(c.startswith("net:") for c in r.table.columns)]
            busy = float(np.mean(shares)) if shares else None
        top = d.top if d is not None else {}
        flagged = sorted({int(r["rank"]) for x in diags if x is not None for r in x.ranks if r.get("flagged")})
        slow = next((r for r in (d.ranks if d is not None else []) if r.get("slowest")), None)
        slowest = ({"rank": int(slow["rank"]), "straggler_score": slow.get("straggler_score"),
                    "persistence": slow.get("persistence")} if slow else None)
        return {"oscillation": osc, "mean_util_pct": util, "busy_share": busy, "straggler_ranks": flagged,
                "slowest_rank": slowest,
                "top_hypothesis": top.get("id"), "top_score": top.get("score"),
                "gpus": {g["id"]: g["status"] for g in (d.gpus if d is not None else [])},
                "signal": ("util_pct" if util is not None else ("busy share derived from step phases"
                                                                 if busy is not None else None))}

    g, b = side(good_b, diag_g, g_runs), side(bad_b, diag_b, b_runs)
    changes = []
    if g["mean_util_pct"] is not None and b["mean_util_pct"] is not None:
        changes.append(f"mean GPU utilization {g['mean_util_pct']:.0f}% → {b['mean_util_pct']:.0f}%")
    if g["busy_share"] is not None and b["busy_share"] is not None and \
            f"{g['busy_share']:.0%}" != f"{b['busy_share']:.0%}":
        changes.append(f"busy share of wall time (fwd+bwd+optimizer, less compile and GC stalls inside them) "
                       f"{g['busy_share']:.0%} → {b['busy_share']:.0%}")
    og, ob = g["oscillation"], b["oscillation"]
    if og and ob:
        if og.get("detected") != ob.get("detected"):
            changes.append(f"oscillation: {_osc_text(og)} → {_osc_text(ob)}")
        elif ob.get("detected"):
            if og.get("periodic") != ob.get("periodic") or (
                    og.get("period_s") and ob.get("period_s") and
                    abs(math.log(ob["period_s"] / og["period_s"])) > math.log(1.25)):
                changes.append(f"oscillation: {_osc_text(og)} → {_osc_text(ob)}")
            if og.get("duty_cycle") is not None and ob.get("duty_cycle") is not None and \
                    abs(og["duty_cycle"] - ob["duty_cycle"]) >= 0.1:
                changes.append(f"duty cycle {og['duty_cycle']:.2f} → {ob['duty_cycle']:.2f}")
            if og.get("synchrony") != ob.get("synchrony"):
                changes.append(f"synchrony {og.get('synchrony')} → {ob.get('synchrony')}")
    sg, sb = g["slowest_rank"], b["slowest_rank"]
    if sb and sb.get("persistence") == "persistent" and (not sg or sg.get("persistence") != "persistent"
                                                          or sg["rank"] != sb["rank"]):
        changes.append(f"the same rank is slowest every time in BAD: rank {sb['rank']} (straggler score "
                       f"{sb['straggler_score']}; in GOOD: "
                       + (f"rank {sg['rank']}, {sg.get('persistence')})" if sg else "none)"))
    if g["straggler_ranks"] != b["straggler_ranks"]:
        changes.append(f"ranks flagged as stragglers (score < 0.75): {g['straggler_ranks'] or 'none'} → "
                       f"{b['straggler_ranks'] or 'none'}")
    gpus = []
    for gid in sorted(set(g["gpus"]) | set(b["gpus"])):
        sg, sb = g["gpus"].get(gid), b["gpus"].get(gid)
        gpus.append({"id": gid, "good": sg, "bad": sb})
        if sg != sb and sg is not None and sb is not None:
            changes.append(f"GPU {gid}: {sg} → {sb}")
    if g["top_hypothesis"] != b["top_hypothesis"] and g["top_hypothesis"] and b["top_hypothesis"]:
        changes.append(f"diagnose's top hypothesis {g['top_hypothesis']} ({g['top_score']:.2f}) → "
                       f"{b['top_hypothesis']} ({b['top_score']:.2f})")
    return {"signal": b["signal"] or g["signal"], "good": g, "bad": b, "changes": changes, "gpus": gpus}


def _osc_text(o: dict) -> str:
    if not o.get("detected"):
        lvl = f" (level {o['high_pct']:.0f}%)" if o.get("high_pct") is not None else ""
        return f"none{lvl}"
    core = f"{o['high_pct']:.0f}% ↔ {o['low_pct']:.0f}%"
    if o.get("periodic"):
        return f"periodic {core} every {o['period_s']:.3g} s (duty {o['duty_cycle']:.2f})"
    return f"irregular {core}"


def _verdict(mode: str, tp: dict, causes: list[dict], env: list[dict] | None = None) -> tuple[str, str]:
    """The verdict line, from every finding: the throughput interval first; when it holds 100% (e.g. one run a
    side), a cause whose own change is significant (p < ALPHA: a phase that grew beyond its interval) still makes
    BAD slower / faster, and a changed setting linked to a cause is named as a difference that the runs could not
    measure."""
    if mode == "none" or not tp:
        return "not comparable", "nothing to compare: each side needs a step log or GPU telemetry"
    unit = tp["unit"]
    what = "throughput" if mode == "steps" else "mean utilization"
    nums = f"{_num(tp['bad'])} vs {_num(tp['good'])} {unit}" if mode == "steps" else \
        f"{tp['bad']:.0f}% vs {tp['good']:.0f}%"
    ci = f"95% CI {tp['ratio_lo']:.0%}-{tp['ratio_hi']:.0%}"
    sign = 1.0 if tp["ratio"] < 1 else -1.0  # slower: a cause's time grew; faster: it shrank
    found = [c for c in causes if c["id"] != "workload_change" and np.isfinite(c.get("p_value", math.nan))
             and c["p_value"] < ALPHA and sign * float(c.get("delta_s", math.nan)) > 0]
    if not tp["significant"] and not found:
        knobs = [e for e in env or [] if e.get("causes") and e.get("score", 0) > 0.01]
        if knobs:
            shown = "; ".join(f"{e['key']}: {_short(str(e['good']), 24)} → {_short(str(e['bad']), 24)}"
                              for e in knobs[:2])
            return ("no significant difference",
                    f"no measurable difference, but the configuration differs ({shown}): BAD's {what} is "
                    f"{tp['ratio']:.0%} of GOOD's ({nums}; {ci} holds 100%) — repeat runs to measure it")
        return ("no significant difference",
                f"no significant difference: BAD's {what} is {tp['ratio']:.0%} of GOOD's ({nums}; {ci} holds 100%)")
    verdict = "slower" if tp["ratio"] < 1 else "faster"
    state = verdict if mode == "steps" else ("less utilized" if verdict == "slower" else "more utilized")
    top = (found or causes or [None])[0]
    cause = ""
    if top:
        share = f", {top['share_of_change']:.0%} of the change" if np.isfinite(top.get("share_of_change", math.nan)) \
            else ""
        cause = f"; top cause: {top['id']} (score {top['score']:.2f}{share})"
    if not tp["significant"]:
        p = top["p_value"]
        return verdict, (f"BAD is {state}: {top['id']} grew beyond its interval (p = {p:.2g}); {what} "
                         f"{tp['ratio']:.0%} of GOOD's ({nums}; {ci}, wide: too few runs to bound it)")
    return verdict, f"BAD is {state}: {what} {tp['ratio']:.0%} of GOOD's ({nums}; {ci}){cause}"


def _num(x: float) -> str:
    if x is None or not np.isfinite(x):
        return "?"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def gap_closed(bad: Regression, reverted: Regression) -> float:
    """Share of BAD's throughput gap to GOOD that a run with one change reverted closes, on a log scale:
    log(reverted ratio / BAD ratio) / log(1 / BAD ratio) — 1 = back to GOOD, 0 = no better than BAD. NaN when BAD
    is not slower."""
    rb, rr = bad.throughput.get("ratio", math.nan), reverted.throughput.get("ratio", math.nan)
    if not (np.isfinite(rb) and np.isfinite(rr) and 0 < rb < 1 and rr > 0):
        return math.nan
    return float(math.log(rr / rb) / math.log(1 / rb))


def injected_verdict(result: Regression, injected: str, culprit: str | None = None,
                     reverted: Regression | None = None, other: Regression | None = None,
                     closes: float = 0.5) -> tuple[str, str]:
    """(status, summary) of a regression lab: did `compare` find the cause that was injected?

    confirmed: BAD is significantly slower, compare's top cause is `injected`, the top cause's linked changes
    include `culprit` (a config or environment key prefix, when given), and — when half-way runs are given —
    reverting the culprit alone (`reverted`: GOOD vs that run) closes at least `closes` of the throughput gap on a
    log scale (gap_closed) and more than reverting the other change (`other`). A log-scale share of the gap, not
    "back to 100%", because machine load moves single runs by tens of percent while the injected fault costs
    several times that. refuted: no significant slowdown, or another cause on top. inconclusive otherwise.
    """
    tp = result.throughput
    top = result.top
    if result.verdict != "slower":
        return "refuted", f"no significant slowdown to explain ({result.summary})"
    if top.get("id") != injected:
        return "refuted", f"compare's top cause is {top.get('id')}, not the injected {injected} ({result.summary})"
    share = top.get("share_of_change")
    head = (f"BAD runs at {tp['ratio']:.0%} of GOOD's throughput (95% CI {tp['ratio_lo']:.0%}-{tp['ratio_hi']:.0%}); "
            f"compare's top cause is {injected}" + (f" ({share:.0%} of the slowdown)" if share is not None and
                                                    np.isfinite(share) else ""))
    if culprit and not any(k.startswith(culprit) for k in top.get("changes", [])):
        return "inconclusive", head + f", but the change {culprit} is not among its linked changes"
    if reverted is not None:
        closed = gap_closed(result, reverted)
        closed_other = gap_closed(result, other) if other is not None else -math.inf
        what = culprit or "the culprit"
        text = (f"; reverting {what} alone reaches {reverted.throughput['ratio']:.0%} of GOOD's throughput "
                f"({closed:.0%} of the gap closed on a log scale)")
        if other is not None:
            text += (f", reverting the other change alone {other.throughput['ratio']:.0%} "
                     f"({closed_other:.0%} of the gap)")
        if not (closed >= closes and closed > closed_other):
            return "inconclusive", head + text
        head += text
    return "confirmed", head
