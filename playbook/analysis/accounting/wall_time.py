"""Wall-time accounting of step logs, per rank: each step against the rank's own steady step time (see
playbook.analysis.accounting for the buckets)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from playbook.analysis import step_pace as sp
from playbook.analysis import step_times as sa
from playbook.analysis.accounting.buckets import MIN_FLOOR, Accounting, Bucket, merged_windows
from playbook.analysis.intervals import true_runs
from playbook.analysis.rank_waits import (
    COLLECTIVE_PHASES,
    collective_waits,
    late_rank_lag,
    late_ranks,
    straggler_waits,
)
from playbook.knowledge import ids
from playbook.knowledge.causes import cause

COLLECTIVE_KINDS = tuple(f"phase:{p}" for p in COLLECTIVE_PHASES)  # the buckets of the ranks' collective phases


def step_accounting(steps: pd.DataFrame, marked_steps=(), events: pd.DataFrame | None = None,
                    epochs: bool = False) -> Accounting | None:
    """Wall-time accounting of a step table, per rank (see the module docstring); None without step times.
    `marked_steps` as in `account`; `events`: the run's, for the durations they state; `epochs`: each row is an
    epoch (schema.record_unit), whose start is no step's compilation (step_times.warmup_steps)."""
    st = sa.step_times(steps)
    st = st[np.isfinite(st["duration_s"].astype(np.float64)) & (st["duration_s"] >= 0)]
    if st.empty:
        return None
    t0 = st["time"].min() if st["time"].notna().all() else None
    timed, steps = steps, collective_waits(steps)  # timed: the collective phases as logged (transfer + wait)
    st, steps, lag = straggler_waits(st, steps)  # the ranks' waits for a straggler their own timers leave out
    per_rank = [_rank_runs(g.sort_values("step"), steps, rank, t0, marked_steps, sp.stated_waits(events, t0),
                           sp.restart_times(events, t0, rank), epochs)
                for rank, g in st.groupby("rank", sort=True) if len(g) >= 1]
    per_rank = [r for r in per_rank if r is not None]
    if not per_rank:
        return None
    total = sum(r["wall_s"] for r in per_rank)
    merged: dict[str, Bucket] = {}
    by_name: dict[str, dict[str, float]] = {}
    for r in per_rank:
        for b in r["buckets"]:
            m = merged.setdefault(b.kind, Bucket(b.kind, 0.0, detail=b.detail))
            m.seconds += b.seconds
            for n in b.names:
                by_name.setdefault(b.kind, {})[n] = by_name.get(b.kind, {}).get(n, 0.0) + b.seconds
            m.windows += b.windows
            m.steps = sorted(set(m.steps) | set(b.steps))
    many, ranks = len(per_rank) > 1, sorted(int(r) for r in st["rank"].unique())
    if lag is None and many:  # collectives timed: the rank the others wait for, from who waits least
        waits: dict[str, float] = {}
        for kind in COLLECTIVE_KINDS:
            for n, sec in by_name.get(kind, {}).items():
                waits[n] = waits.get(n, 0.0) + sec
        lag = late_rank_lag(st, timed, late_ranks(waits, ranks)) if waits else None
    if lag and lag["seconds"] > 0:  # the straggler's own time beyond its peers' on the same work
        merged["slow_rank"] = Bucket("slow_rank", lag["seconds"], steps=lag["steps"],
                                     detail="the late rank's own time beyond its peers' for the same work")
        by_name["slow_rank"] = {f"rank {lag['rank']}": lag["seconds"]}
    buckets = [b for b in merged.values() if b.seconds > 0]
    for b in buckets:
        b.share = b.seconds / total if total > 0 else 0.0
        # the ranks that carry the bucket: each at least a tenth of it, largest first (a rank whose loader waits
        # 0.17 s is named, its peers at 2 ms are not)
        parts = sorted(by_name.get(b.kind, {}).items(), key=lambda kv: -kv[1])
        b.names = [n for n, sec in parts if sec >= 0.1 * b.seconds]
        if b.kind in COLLECTIVE_KINDS and many and (late := late_ranks(by_name.get(b.kind, {}), ranks)):
            b.names, b.detail = late, "the other ranks waiting in the collective for the late rank"
    jitter = sum(r["jitter_s"] for r in per_rank)
    floor = max(jitter / total if total > 0 else 0.0, MIN_FLOOR)
    tick = float(np.median([r["step_s"] for r in per_rank]))
    return Accounting("wall", float(total), merged_windows(buckets, 0.5 * tick), floor,
                      f"the jitter of unflagged steps above the steady step time ({jitter / total:.1%} of wall "
                      f"time; at least {MIN_FLOOR:.0%})" if total > 0 else "no time",
                      warmup_s=float(sum(r["warmup_s"] for r in per_rank)),
                      span_s=float(max(r["wall_s"] for r in per_rank)), units=len(per_rank) if many else 1,
                      t0=t0, interval_s=tick, step_gap=max(1, int(np.median([r["gap"] for r in per_rank]))))


def _rank_runs(g: pd.DataFrame, steps: pd.DataFrame, rank, t0: pd.Timestamp | None, marked, waits: np.ndarray,
               restarts: np.ndarray, epochs: bool = False) -> dict | None:
    """_rank_account of each run of the rank between its `restarts` (s since t0), added up: a restarted run is
    measured against its own steady pace (it may be another configuration, on other hardware: runs 1.3 s and
    0.81 s a step in one TensorBoard log) and warms up again; the downtime between runs is no step's time nor part
    of the wall time (the job was not running)."""
    if not len(restarts) or t0 is None or g["time"].isna().any():
        return _rank_account(g, steps, rank, t0, marked, waits, epochs)
    run = np.searchsorted(np.sort(restarts), (g["time"] - t0).dt.total_seconds().to_numpy(), side="right")
    parts = [p for k in np.unique(run) if (p := _rank_account(g[run == k], steps, rank, t0, marked, waits, epochs))]
    if len(parts) < 2:
        return parts[0] if parts else None
    return {"wall_s": sum(p["wall_s"] for p in parts), "buckets": [b for p in parts for b in p["buckets"]],
            "jitter_s": sum(p["jitter_s"] for p in parts), "warmup_s": sum(p["warmup_s"] for p in parts),
            "step_s": float(np.median([p["step_s"] for p in parts])),
            "gap": int(np.median([p["gap"] for p in parts]))}


def _rank_account(g: pd.DataFrame, steps: pd.DataFrame, rank, t0: pd.Timestamp | None, marked=(),
                  waits: np.ndarray | None = None, epochs: bool = False) -> dict | None:
    """One rank's buckets, warm-up, jitter and steady step (wall-seconds); windows in seconds since `t0`."""
    d = g["duration_s"].to_numpy(dtype=np.float64)
    stepno = g["step"].to_numpy(dtype=np.int64)
    name = f"rank {rank}" if int(rank) >= 0 else ""  # a log without ranks is one process: nothing to name
    t = g["time"]
    times = (t - t0).dt.total_seconds().to_numpy() if t0 is not None and len(t) > 1 else None
    per_row, k_typ = sp.steps_per_line(stepno)
    warm = sp.measured_warmup(sa.warmup_steps(d, stepno, marked, _input_wait(steps, rank, stepno), epochs), times, d,
                              per_row, waits)
    real, bstep = d[warm:], stepno[warm:]
    if len(real) == 0 or sp.below_resolution(real):
        return None
    # a step's what-if is the steady pace times its own work's factor (1 unless the step time follows the stated
    # work): the analysis below runs on work-normalised times, and `w` turns them back into seconds
    work = g["work"].to_numpy(dtype=np.float64) if "work" in g else np.full(len(d), np.nan)
    scale, _ = sa.work_scale(real, work[warm:])
    body, w = real / scale, per_row[warm:] * scale
    slow = sa.slow_steps(body) if len(body) >= 5 else np.zeros(len(body), dtype=bool)
    # the local pace (rolling median, as the slow-step test uses) and the run's best sustained pace (its 10th
    # percentile): a slow step's excess is over the local pace; the local pace's excess over the best one is a slow
    # stretch (a level shift, a creep, a recurring slow phase) once it exceeds CREEP_MIN, jitter below that
    # the local pace leaves the slow steps out: where they are near half the steps, a rolling median over them sits
    # between the two levels, and their fast neighbours would look like a slow stretch; within a printed tick, rounding
    tick = np.maximum(sp.duration_tick(real), sp.stamp_tick(d, per_row, times))[warm:] / scale
    slow, roll, best, stretch = sp.resolved_pace(body, bstep, slow, tick)
    credit = sp.moved_time(body, roll, slow)  # a step boundary read late: the pair took two steps' time
    slow = slow & (credit == 0)
    # a stretch's loss on a step is the local pace's excess over the best one, but never more than the step itself
    # lost (a fast step inside a slow stretch lost nothing)
    drift = np.minimum(np.clip(roll - best, 0.0, None), np.clip(body - best, 0.0, None))
    # without stamps a line starts where the steps before it end: each line stands for its per_row steps
    before = np.r_[0.0, np.cumsum(d * per_row)]
    start = (lambda i: float(times[warm + i])) if times is not None else (lambda i: float(before[warm + i]))
    buckets: list[Bucket] = []
    excess = np.clip(body - roll + credit, 0.0, None)
    lattice, clock_s = sp.slow_lattice(body, bstep, slow)
    on = slow & lattice
    for kind, mask, detail in (("recurring_slow", on, sp.every_phrase(body, bstep, on, best, clock_s)),
                               ("stalls", slow & ~lattice, sp.stall_phrase(body, slow & ~lattice, best))):
        if mask.any():
            idx = np.flatnonzero(mask)
            buckets.append(Bucket(kind, float(((excess[mask] + drift[mask]) * w[mask]).sum()),
                                  names=[name] if name else [],
                                  windows=[(start(i), start(i) + float(real[i] * per_row[warm + i])) for i in idx],
                                  steps=[int(bstep[i]) for i in idx], detail=detail))
    if stretch.any():
        lo, n = true_runs(stretch)
        buckets.append(Bucket("slow_stretches", float((drift * w)[stretch].sum()), names=[name] if name else [],
                              windows=[(start(int(a)), start(int(z)) + float(real[z] * per_row[warm + z]))
                                       for a, z in zip(lo, lo + n - 1, strict=True)],
                              steps=[int(bstep[i]) for i in np.flatnonzero(stretch)],
                              detail=sp.stretch_phrase(body, bstep, stretch, best, lo, n)))
    wall = float((d * per_row).sum())
    ordinary = ~slow & ~stretch
    if times is not None:
        # the timed steps plus, per gap between lines, what the steps at either end leave of it (a line's time is
        # its step's start or end; the most the outside-timer bucket claims there): the span, or more where the
        # lines' steps overrun their gaps
        untimed = float(np.clip(np.diff(times) - np.maximum(d[:-1], d[1:]) * per_row[1:], 0.0, None).sum())
        wall = max(float(times[-1] - times[0] + d[-1]), wall + untimed)
    rest, gaps_out = sp.untimed_gaps(times, d, stepno, warm) if times is not None else \
        (np.zeros(max(len(d) - 1, 0)),) * 2
    if not rest.any() and (apart := sp.waits_beside_timer(steps, rank, stepno, d, warm)).any():
        rest, gaps_out = apart, apart.copy()  # no clock shows the gaps: the waits timed apart fill them
        wall = max(wall, float((d * per_row).sum() + apart.sum()))
    # a slow step's waits beyond what its stall or stretch charged are its phases' too (a window of mostly data
    # waits, slow by half its wait: the other half is still waiting)
    charged = np.where(slow, excess + drift, np.where(stretch, drift, 0.0)) * w
    on = bstep.tolist()
    phases, gaps_out = _phase_buckets(steps, rank, dict(zip(on, per_row[warm:].tolist(), strict=True)), name, dict(
        zip(on, np.clip(real * per_row[warm:] - charged, 0.0, None).tolist(), strict=True)), stepno, rest, gaps_out,
        dict(zip(on, charged.tolist(), strict=True)))
    buckets += _outside_timer(times, stepno, gaps_out, name) + phases
    # a step's excess that its own waiting phases measure is theirs (charged above), not jitter
    own = np.clip(excess * w - sp.row_waits(steps, rank, bstep) * per_row[warm:], 0.0, None)  # waits: seconds
    jitter = float(own[ordinary].sum() + (drift * w)[~stretch & ~slow].sum())
    return {"wall_s": wall, "buckets": buckets, "jitter_s": jitter, "warmup_s": float((d * per_row)[:warm].sum()),
            "step_s": best, "gap": k_typ}


def _outside_timer(times, step: np.ndarray, gaps_out: np.ndarray, name: str) -> list[Bucket]:
    """The gaps between lines longer than the steps they hold (sp.untimed_gaps), less the waits the log timed there
    (which _phase_buckets charges to their phase)."""
    flagged = gaps_out > 1e-9
    if times is None or not flagged.any():
        return []
    idx = np.flatnonzero(flagged)
    return [Bucket("outside_timer", float(gaps_out[flagged].sum()), names=[name] if name else [],
                   windows=[(float(times[i]), float(times[i + 1])) for i in idx],
                   steps=[int(step[i]) for i in idx],
                   detail=f"{len(idx)} gap{'s' if len(idx) > 1 else ''} between steps longer than "
                          "the step timer measured (time spent outside the timed step)")]


def _input_wait(steps: pd.DataFrame, rank, stepno: np.ndarray) -> np.ndarray | None:
    """Seconds each of `stepno` spent in the phases that wait for input (the catalog's data_starvation phases) on
    `rank`, 0 where none is logged; None when the table has no such phase."""
    wait = steps[steps["phase"].astype(str).isin(cause(ids.DATA_STARVATION).phases) & (steps["rank"] == rank)]
    if wait.empty:
        return None
    per = wait.groupby("step")["duration_s"].sum()
    return per.reindex(stepno).fillna(0.0).to_numpy(dtype=np.float64)


def _phase_buckets(steps: pd.DataFrame, rank, ordinary: dict[int, float], name: str, room: dict[int, float],
                   stepno: np.ndarray, rest: np.ndarray, gaps_out: np.ndarray,
                   charged: dict[int, float] | None = None) -> tuple[list[Bucket], np.ndarray]:
    """Waiting phases of the ordinary steps (each weighted by the steps its line stands for), and the imbalance
    between named work stages; returns them and the outside-timer gaps (`gaps_out`) less the waits charged there.
    A step's waits are drawn, in the order the phases were logged, first from the untimed rest of the gap beside its
    line (`rest`, per gap between lines: a wait timed outside the step, sp.untimed_beside), then from the step's own
    time (`room`, wall-seconds per step); the imbalance gets at most what the waits left of the steps' time. No
    second is charged twice, to a phase and to the outside-timer bucket."""
    on_rank, is_step = steps["rank"] == rank, steps["phase"] == "step"
    part = steps[on_rank & ~is_step & steps["step"].isin(ordinary)]
    if part.empty:
        return [], gaps_out
    whole = steps[on_rank & is_step]  # the rank's steps' own times
    part = _without_enclosing(part, whole)
    weighted = part["duration_s"] * part["step"].map(ordinary).astype(np.float64)
    phase_of = part["phase"].astype(str)
    secs = weighted.groupby(phase_of).sum()
    wait = phase_of.isin(sa.WAIT_PHASES) & (weighted > 0)
    wt, at = weighted[wait], part.loc[wait, "step"]
    per_line = wt.groupby(at).sum().reindex(stepno, fill_value=0.0).to_numpy(dtype=np.float64)
    beside, shift = sp.untimed_beside(rest, per_line)
    room_out = at.map(dict(zip(stepno.tolist(), beside.tolist(), strict=True))).astype(np.float64)
    cum = wt.groupby(at).cumsum()
    outside = np.minimum(cum, room_out) - np.minimum(cum - wt, room_out)  # the part of each wait in the gap
    inside = wt - outside
    # the first `charged` seconds of a step's waits inside it were charged with its stall or stretch
    cum = inside.groupby(at).cumsum() - (at.map(charged).astype(np.float64) if charged else 0.0)
    cap = at.map(room).astype(np.float64)
    got = np.clip(np.minimum(cum, cap), 0.0, None) - np.clip(np.minimum(cum - inside, cap), 0.0, None)  # under its time
    charged = (got + outside).groupby(phase_of[wait]).sum()
    left = max(sum(room.values()) - float(got.sum()), 0.0)
    used = outside.groupby(at).sum()
    used = used[used > 0]
    if len(used):
        gaps_out = gaps_out.copy()
        np.subtract.at(gaps_out, np.searchsorted(stepno, used.index.to_numpy()) + shift, used.to_numpy())
        gaps_out = np.clip(gaps_out, 0.0, None)
    out = []
    for phase, s in charged.items():
        if s > 0:
            what = ("waiting in the collective for the last rank (beyond the fastest rank's transfer)"
                    if phase in COLLECTIVE_PHASES else _HANDOFF_WORDING.get(
                        phase, f"the {phase} phase of ordinary steps (waiting, not work)"))
            out.append(Bucket(f"phase:{phase}", float(s), names=[name] if name else [], steps=sorted(ordinary)[:16],
                              detail=what))
    stages = secs[[p for p in secs.index if p not in sa.WAIT_PHASES and p not in sa.COMPUTE_PHASES
                   and p != "other"]]
    stages = stages[stages > 0]
    # a step whose own timers measure the wait for the other side (a queue wait, a hand-off: handoff.py) states the
    # idle side itself: the pipeline model below, which infers it from the stages' sizes, would count it again
    measured = secs[[p for p in secs.index if p in sa.QUEUE_PHASES or p in ("handoff", "tail")]].sum()
    span = _span(whole, ordinary)
    # stages that add up to no more than the step ran one after another (NEST_TOL): the step lasts their sum, not the
    # slowest one's pace, and on which GPUs the timers do not say (verl's hybrid engine, NeMo-RL colocated: every GPU
    # in every stage, none idle), so their sizes are no loss; a pipeline's stages overlap, their sum past the step
    serial = np.isfinite(span) and float(secs.sum()) <= span * (1 + NEST_TOL)
    if len(stages) >= 2 and not measured > 0 and not serial:
        top = str(stages.idxmax())
        # a pipeline of k stages runs at the slowest one's pace: the others idle 1 - mean/max of the time
        lost = min(float(stages.sum() * (1.0 - stages.mean() / stages.max())), left)
        share = float(stages.max() / (span if np.isfinite(span) else secs.sum())) if secs.sum() > 0 else 0.0
        out.append(Bucket("stage_imbalance", lost, names=[name] if name else [], steps=sorted(ordinary)[:16],
                          detail=f"a {top} stage taking {share:.0%} of every step by its own timers (in a "
                                 f"pipeline of the {len(stages)} stages the others idle while it runs)"))
    return out, gaps_out


def _span(whole: pd.DataFrame, ordinary: dict[int, float]) -> float:
    """The ordinary steps' own time (`whole`: a rank's whole-step rows), each weighted as its stages are; inf for a
    log with no step time of its own (then whether its stages overlap is not known: read as a pipeline, as before)."""
    whole = whole[whole["step"].isin(ordinary)]
    if whole.empty:
        return float("inf")
    per = whole.groupby("step")["duration_s"].max()
    return float((per * per.index.map(ordinary).astype(np.float64)).sum())


# the phases a hand-off between GPU roles names (readers/step_log/handoff.py, sample_tail.py), said as what they are
_HANDOFF_WORDING = {
    # a `wait` is also a pipeline-parallel rank's send / recv (timer_line.py): the wording names no hand-off
    "wait": "the step's own timed wait for another stage or side (a rollout, a neighbouring pipeline stage): the one "
            "it waits on is the bottleneck",
    "handoff": "the hand-off between GPU roles (weights synced, memory offloaded and reloaded): neither side works",
    "tail": "the batch waiting on its slowest sample: the stage lasts as long as its longest sample, the others "
            "finish at the samples' mean"}
NEST_TOL = 0.05  # stages that add up to more than the step by this share cannot all be one after another
BESIDE_STEP = ("data", "eval", "checkpoint", "log")  # stages a loop runs between its steps: no timer around others


def _without_enclosing(part: pd.DataFrame, whole: pd.DataFrame) -> pd.DataFrame:
    """`part` (the stage rows of steps) less, per step, the one stage that holds others: when a step's stages add up
    to more than the step (by NEST_TOL) and dropping one stage, at least as long as the excess, brings them within
    it, that stage is a timer around some of the others (vime's `train_wait_time` around its `sleep_time` and
    `wake_up_time`): its parts are the finer account, and it is left out so no second is counted twice."""
    if whole.empty or part.empty:
        return part
    d = part["duration_s"].astype(np.float64)
    step = part["step"].map(whole.groupby("step")["duration_s"].max()).astype(np.float64)  # NaN: no step time
    total = d.groupby(part["step"]).transform("sum")
    limit, excess, rest = step * (1 + NEST_TOL), total - step, total - d
    # it overlaps the others by the excess, so they hold at least that much (a lone stage beside the step's timer,
    # lerobot's `data_s` outside its `updt_s`, holds none: it is outside the step, not around a stage); a loop's stages
    # between its steps (loading the next batch, an evaluation, a save) hold none of the step's own: `data_time`
    # beside `fwd_time` + `bwd_time` = `step_time` is outside the step, however the sums fall
    fits = ((total > limit) & ~part["phase"].astype(str).isin(BESIDE_STEP) & (d >= excess) & (rest <= limit)
            & (rest >= excess))
    if not fits.any():
        return part
    # a timer around others is at least as long as what it holds: per step, the longest that fits (vectorized: a
    # loop over 20,000 steps took 25 s)
    return part.drop(index=d[fits].groupby(part.loc[fits, "step"]).idxmax().to_numpy())


_STEP_WORD = re.compile(r"\bstep(s?)\b")


def epoch_wording(acc: Accounting) -> None:
    """Bucket details and noise floor of a wall-time accounting whose rows are epochs (schema.record_unit):
    "slow epochs every 10 epochs", "from epoch 18 on" — the phrases of step_pace name the rows they count."""
    acc.record = "epoch"
    for b in acc.buckets:
        b.detail = _STEP_WORD.sub(r"epoch\1", b.detail)
    acc.noise_floor = _STEP_WORD.sub(r"epoch\1", acc.noise_floor)

