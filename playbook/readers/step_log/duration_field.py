"""Which field of a step log is its step duration, chosen once per file (the grammar's per-file choice).

Among the duration and rate fields present on at least half as many step lines as the best-covered one, the most
specific role wins (vocab.PREFERENCE: per-step > generic time > window > verified-monotone cumulative > running
average > unnamed); a field named like a total that goes up and down, a Unix clock reading, a time of day and a plain
time are re-read by their values first (columns.py); a clock on the lines that the chosen field does not account for
replaces it (line_clock.py), and so do the differences of its running totals when it is a mean since the
start that the stamps show (global_mean.py); a field longer than the wall time between the stamped lines around it is no step's
time (line_clock.outlasts_lines).
"""

from __future__ import annotations

import numpy as np

from playbook.readers.step_log.bar_end import epoch_end_totals
from playbook.readers.step_log.columns import (
    below,
    clock_reading,
    epoch_clock,
    field_seconds,
    monotone,
    stage_total,
    time_of_day,
    total_reading,
)
from playbook.readers.step_log.global_mean import since_start_steps
from playbook.readers.step_log.line_clock import clock_or, outlasts_lines
from playbook.readers.step_log.vocab import (
    CLOCK,
    CUMULATIVE,
    GENERIC,
    NAT,
    PER_STEP,
    PREFERENCE,
    STEP_NAMES,
    UNNAMED,
    WINDOW,
)


def epoch_named(name: str) -> bool:
    """A field named for the epoch and no step (`epoch_time`, `epoch_Time`): an epoch's time or an estimate of
    what is left of it, never one step's (`epoch_step_time` is a step's)."""
    words = set(name.split("_"))
    return "epoch" in words and not words & set(STEP_NAMES + ("steps", "iters", "it"))


def one_step_total(step, rank, seconds, stages) -> bool:
    """Whether a time named like a total, printed once per rank (nothing to difference, no stamps to tell a window
    from a running total), is one step's: at least the forward + backward + optimizer times on its line (less 10%
    for their rounding) and under twice them, where a total over two or more steps would be at least twice one
    step's stages (ESPnet2's lone `... optim_step_time=0.007, train_time=0.471` window line)."""
    ok = np.isfinite(seconds)
    if stages is None or not ok.any() or len(np.unique(rank[ok])) != len(np.unique(np.c_[rank[ok], step[ok]], axis=0)):
        return False
    s, t = seconds[ok], stages[ok]
    return bool(np.isfinite(t).all() and (t > 0).all() and (s >= 0.9 * t).all() and (s < 2 * t).all())


def stamped_steps(step, rank, time) -> int:
    """How many distinct (rank, step) records carry a clock reading."""
    ok = time != NAT
    return len(np.unique(np.c_[rank[ok], step[ok]], axis=0)) if ok.any() else 0


def beside_stated(k: str, cands: dict, eligible: list, cols: dict, step=None, rank=None) -> int:
    """1 when `k` is a rate printed on other lines than a stated per-step time printed step after step (a tqdm bar's
    it/s between Hugging Face's `{'train_step_runtime': 0.63, ...}` dicts): the rate is a smoothed average over the
    bar's updates, the stated time is each step's own measurement, so the stated time wins however many more bar
    lines there are; also 1 when the rate and a stated per-step time on the same lines disagree (agrees: the rate
    counts other units than the record's counter, rsl_rl's `Computation: 90000 steps/s` of env steps beside its
    `Iteration time: 1.06s`); 0 otherwise (a rate alone, or one on the same lines as the time and agreeing with it:
    NeMo's bar with `train_step_timing` keeps its order; or a time printed once every N steps, which may be the N
    steps' window)."""
    if cands[k][0] != "rate":
        return 0
    mine = np.isfinite(cols[k])
    for o in eligible:
        if o == k or cands[o][0] != "dur" or cands[o][1] != PER_STEP:
            continue
        theirs = np.isfinite(cols[o])
        if not (mine & theirs).any() and (step is None or step_by_step(step, rank, theirs)):
            return 1
        with np.errstate(divide="ignore"):
            if (mine & theirs).any() and not agrees(cols[o] * cands[o][2], 1.0 / cols[k]):
                return 1
    return 0


def step_by_step(step, rank, ok) -> bool:
    """Whether the records `ok` follow one another a step apart on their ranks (their median gap is one step)."""
    pairs = np.unique(np.c_[rank[ok], step[ok]], axis=0)  # by rank, then step
    gaps = np.diff(pairs[:, 1])[pairs[1:, 0] == pairs[:-1, 0]]
    return bool(gaps.size) and float(np.median(gaps)) <= 1


def choose_duration(step, rank, time, kind, cols, roles, pos=None) -> tuple:
    """(name, seconds per step, how, window) of the file's duration field, or Nones: `step`/`rank`/`time` (int64 ns)/
    `kind` (the counter's kind) / `pos` (its position within its epoch, -1 unknown) per record, `cols` name ->
    values, `roles` name -> role; `window`: the field is a window's time (its phases are divided per step too)."""
    # a time named for the epoch (`epoch_Time`, `epoch_time`) is no step's, whatever the line's counter
    cands = {k: r for k, r in roles.items() if r[0] in ("dur", "rate") and not epoch_named(k)}
    # a time under half its lines' fwd + bwd + optimizer times is a part of the step (ESPnet's iter_time)
    stages = stage_total(cols, roles)
    cands = {k: r for k, r in cands.items() if r[0] != "dur" or not below(cols[k] * r[2], stages)}
    # a step rate printed as 0 (fairseq's `ups=0`: under its one printed digit) times no step: its lines do not count
    cols = {**cols, **{k: np.where(cols[k] > 0, cols[k], np.nan) for k, r in cands.items() if r[0] == "rate"}}
    if not cands:
        return None, None, None, False
    cover = {k: int(np.isfinite(cols[k]).sum()) for k in cands}
    best = max(cover.values())
    # a field on under half the lines of the best-covered one is an occasional message, not the step time
    eligible = [k for k in cands if cover[k] * 2 >= best and cover[k] > 0]
    # a field whose lines all name one step times no series (tensorpack's bar printed only at `2000/2000`, once an
    # epoch): another field on lines of two or more steps is the step time
    spans = {k: len(np.unique(np.c_[rank, step][np.isfinite(cols[k])], axis=0)) for k in eligible}
    if max(spans.values(), default=0) >= 2:
        eligible = [k for k in eligible if spans[k] >= 2]
    elif stamped_steps(step, rank, time) >= 3:
        # nor when the clock on three or more step lines times a series (torchtitan's one `Finished dumping profiler
        # traces in 0.22 seconds` beside its stamped `step: N` lines): an occasional message's time
        eligible = []
    if not eligible:
        return None, None, None, False
    ranked = []
    for k in eligible:
        cls = cands[k][1]
        if cls == CUMULATIVE and not monotone(step, rank, cols[k]):  # named like a total but goes up and down:
            cls = PER_STEP if set(k.split("_")) & set(STEP_NAMES) else GENERIC if one_step_total(
                step, rank, cols[k] * cands[k][2], stages) else total_reading(step, rank, time, cols[k])
        elif cls != CUMULATIVE and cands[k][0] == "dur" and epoch_clock(cols[k] * cands[k][2]) and \
                monotone(step, rank, cols[k]):
            cls = CUMULATIVE  # MLPerf's `time_ms: 1721026805975`: a clock reading, its differences are the steps
        elif cands[k][0] == "dur" and epoch_clock(cols[k] * cands[k][2]):
            continue  # a clock reading that cannot be differenced (one value, or not rising): no step's time
        elif cls in (GENERIC, UNNAMED) and cands[k][3:] == (CLOCK,) and time_of_day(step, rank, cols[k]):
            cls = CUMULATIVE  # torch_xla's `Time=10:01:38`: the clock when the line was printed
        elif cls in (GENERIC, UNNAMED) and cands[k][0] == "dur" and \
                (per := epoch_end_totals(rank, pos, cols[k], step if cls == UNNAMED else None)) is not None:
            # only on the lines closing a bar's epoch: the epoch's time (bar_end.py); with no bar updates between
            # them, only a bare time (Keras' `- 3943s -`): a named `time: 0.411` there is the step's meter (mmcv
            # logging at an interval equal to the epoch's length)
            cols = {**cols, k: per}
        elif cls in (GENERIC, UNNAMED) and cands[k][0] == "dur":
            # a plain `Time 61.00s` / `323 sec`: a window's time (Marian), a running total (OpenNMT) or the step's
            cls = clock_reading(step, rank, time, cols[k] * cands[k][2]) or cls
        if cands[k][0] == "dur" and cls != CUMULATIVE and outlasts_lines(step, rank, time, cols[k] * cands[k][2]):
            continue  # longer than the stamped lines around it (arcface_torch's `Required: 99 hours`): no step's time
        ranked.append((PREFERENCE.index(cls), beside_stated(k, cands, eligible, cols, step, rank), -cover[k], len(k), k, cls))
    if not ranked:
        return None, None, None, False
    *_, name, cls = min(ranked)
    name, cls, values, how = clock_or(name, cls, field_seconds(name, cls, cands[name], step, rank, cols, pos), step,
                                      rank, cols, cands, pos)  # a clock on the lines the field does not account for
    if cls not in (CUMULATIVE, WINDOW) and (mean := since_start_steps(step, rank, time, values)) is not None:
        values, how = mean, f"{how}: a mean since the start, its running totals' differences (the stamps agree)"
    # counters of another kind count other things (Ray Train's `iteration N` per report, its workers' tqdm bar
    # per batch): the file's step records are those of the kinds that carry its duration field
    mine = np.isin(kind, np.unique(kind[np.isfinite(cols[name])]))
    # a line without the file's field keeps its own explicit per-step time, if it states one
    for other in sorted(cands, key=lambda k: -int(np.isfinite(cols[k]).sum())):
        if other == name or cands[other][1] != PER_STEP:
            continue
        gap = ~np.isfinite(values)
        if not gap.any():
            break
        theirs, _ = field_seconds(other, PER_STEP, cands[other], step, rank, cols)
        if not agrees(values, theirs):
            continue  # it times other units (rsl_rl's env `Steps per second` beside its `Iteration time`)
        values = np.where(gap & mine, theirs, values)
    return name, values, how, cls == WINDOW


def agrees(values, theirs, factor: float = 2.0) -> bool:
    """Whether a per-step field may stand in for the chosen one where that is missing: on the records stating both,
    their median ratio is within `factor` (none stating both: nothing says otherwise). A rate of the run's env steps
    (rsl_rl's `Steps per second: 1702`, 0.6 ms) beside its iterations' `Iteration time: 0.15s` counts other units."""
    both = np.isfinite(values) & np.isfinite(theirs) & (values > 0) & (theirs > 0)
    if not both.any():
        return True
    ratio = float(np.median(theirs[both] / values[both]))
    return 1 / factor <= ratio <= factor

