"""Step columns once a log is scanned (readers/step_log/grammar.py): per-step seconds from cumulative clocks,
windows and throughput, ranks adopted for untagged rows, and the checks that choose between readings."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from playbook.readers.step_log.vocab import CLASS_NAMES, CUMULATIVE, GENERIC, NAT, WINDOW


class EpochRestarts:
    """A batch count that starts again each epoch, its total not printed (icefall's `Epoch 2, batch 0` after `Epoch
    1, batch 250`): an epoch whose first count is not above the previous epoch's last counts on from that epoch's last
    count plus the logging interval (the batches per epoch, to within one interval) when the counts start at 0, or
    from that last count when they start at 1 (DLLogger's `Epoch: 1 Iteration: 10`, the 10th iteration done); a
    count that keeps rising across epochs is a global one and keeps its value. Epochs are shared by all ranks."""

    def __init__(self):
        self.offset: dict[int, int] = {}  # epoch -> steps before its batch 0
        self.last: dict[int, int] = {}  # epoch -> its largest count seen
        self.interval = 0  # the smallest rise seen between consecutive counts of one epoch
        self.from_zero = False  # a count of 0 seen: counts are positions (0-based), not iterations done

    def step(self, epoch: int, i: int) -> int:
        self.from_zero = self.from_zero or i == 0
        if epoch not in self.offset:
            before = [e for e in self.last if e < epoch]
            prev = max(before) if before else None
            restart = prev is not None and i <= self.last[prev]  # a run-wide count rises from epoch to epoch
            gap = max(self.interval, 1) if self.from_zero else 0
            self.offset[epoch] = self.offset[prev] + self.last[prev] + gap if restart else 0
        if epoch in self.last and i > self.last[epoch]:
            rise = i - self.last[epoch]
            self.interval = min(self.interval, rise) if self.interval else rise
        self.last[epoch] = max(i, self.last.get(epoch, i))
        return self.offset[epoch] + i


def from_throughput(cols, roles, batch: int | None = None, step=None, rank=None):
    """Without a time field: step seconds = samples per step (a batch-size field, else the file's `batch`) / samples
    per second, or tokens per step (a token field, else the rise per step of a running token count such as EasyLM's
    `dataset_total_tokens`, given `step` and `rank`) / tokens per second."""
    if batch and cols and not any(r[0] == "batch" for r in roles.values()):
        n = len(next(iter(cols.values())))
        cols, roles = {**cols, "batch_size": np.full(n, float(batch))}, {**roles, "batch_size": ("batch", None, 1.0)}
    counts = [k for k, r in roles.items() if r[0] == "token_count"]
    if step is not None and counts and not any(r[0] == "tokens" for r in roles.values()):
        k = max(counts, key=lambda k: np.isfinite(cols[k]).sum())
        if monotone(step, rank, cols[k]):
            name = f"{k} (rise per step)"
            cols, roles = {**cols, name: per_step_diff(step, rank, cols[k])}, {**roles, name: ("tokens", None, 1.0)}
    for rate_role, size_role in (("sample_rate", "batch"), ("token_rate", "tokens")):
        best = {}
        for want in (rate_role, size_role):
            names = [k for k, r in roles.items() if r[0] == want]
            if names:
                best[want] = max(names, key=lambda k: (np.isfinite(cols[k]).sum(), "curr" in k, -len(k)))
        if len(best) < 2:
            continue
        rate, size = cols[best[rate_role]], cols[best[size_role]]
        with np.errstate(divide="ignore", invalid="ignore"):
            seconds = np.where(rate > 0, size / rate, np.nan)
        name = f"{best[size_role]} / {best[rate_role]}"
        what = "batch size / samples" if rate_role == "sample_rate" else "tokens / tokens"
        return name, seconds, f"{name} ({what} per second)"
    return None, None, None


def best_column(cols, roles, kinds, idx) -> np.ndarray:
    """The values at `idx` of the field of the first role in `kinds` the file has (the best-covered field of that
    role); NaN when it has none."""
    for kind in kinds:
        named = [k for k, r in roles.items() if r[0] == kind]
        if named:
            return cols[max(named, key=lambda k: np.isfinite(cols[k]).sum())][idx]
    return np.full(len(idx), np.nan)


def stated_efficiency(cols, roles, idx) -> dict:
    """What the step lines state of the device's efficiency, over the step rows `idx`: {"tflops": the median model
    TFLOP/s per device, "mfu": the median model-FLOP utilization (0-1), "fields": their names, "rows": how many rows
    state one}; {} when they state neither. Values at or under 0 are placeholders (nanoGPT's `mfu -100.00%` before
    its first estimate) and left out; an MFU without a `%` that reads above 1 is a percentage (one with its `%` is what
    it says, above 100% too: nanoGPT's estimate against an A100's peak prints `mfu 104.21%` on an H100)."""
    out: dict = {}
    for kind in ("flops", "mfu"):
        named = [k for k, r in roles.items() if r[0] == kind]
        if not named:
            continue
        name = max(named, key=lambda k: np.isfinite(cols[k][idx]).sum())
        values = cols[name][idx] * roles[name][2]
        values = values[np.isfinite(values) & (values > 0)]
        if not len(values):
            continue
        value = float(np.median(values))
        if kind == "mfu" and value > 1.0 and roles[name][2] == 1.0:  # `mfu 104.21%` is 1.04 (a wrong peak)
            value /= 100.0
        out["tflops" if kind == "flops" else "mfu"] = value
        out.setdefault("fields", []).append(name)
        out["rows"] = max(out.get("rows", 0), int(len(values)))
    return out


def stage_sum(cols, roles):
    """Without a whole-step field: the step as the sum of its stage timers (a family such as `time/forward`,
    `time/backward`, `time/optimizer`; two at least), on the lines where every stage is present; else the data wait
    plus the compute after it (DLLogger's `train.data_time` + `train.compute_time`), or the compute time alone when
    the file times nothing else."""
    stages = [k for k, r in roles.items() if r[0] == "phase" and len(r) > 3]
    if len(stages) < 2:
        halves = {r[1]: k for k, r in roles.items() if r[0] == "phase" and r[1] in ("data", "compute")}
        if set(halves) == {"compute"}:  # the compute time alone, the only time the file gives: the step's
            k = halves["compute"]
            return k, cols[k] * roles[k][2], f"{k} (the compute time, no other)"
        stages = list(halves.values()) if len(halves) == 2 else []
    if len(stages) < 2:
        return None, None, None
    values = np.sum([cols[k] * roles[k][2] for k in stages], axis=0)  # NaN where a stage is missing
    return "+".join(stages), values, f"sum of {len(stages)} stage timers ({', '.join(stages)})"


def stage_total(cols, roles) -> np.ndarray | None:
    """Per line, the sum of its forward, backward and optimizer phase times in seconds (NaN where one is missing);
    None when the file has fewer than two of these phases."""
    names = {}
    for k, r in roles.items():
        if r[0] == "phase" and r[1] in ("fwd", "bwd", "optimizer"):
            names.setdefault(r[1], k)
    if len(names) < 2:
        return None
    return np.sum([cols[k] * roles[k][2] for k in names.values()], axis=0)


def below(seconds: np.ndarray, stages: np.ndarray | None) -> bool:
    """Whether a time is mostly under half the sum of the stages on its lines: a part of the step, not the step."""
    if stages is None:
        return False
    both = np.isfinite(seconds) & np.isfinite(stages) & (stages > 0)
    return bool(both.sum() >= 1 and np.median(seconds[both] / stages[both]) < 0.5)


def data_apart(seconds: np.ndarray, data: np.ndarray, stamped: np.ndarray) -> bool:
    """Whether a step time leaves out its data wait, as the lines' time stamps tell (`stamped`: each line's window
    mean from them): the time plus the wait matches the stamps (within 10%) on four in five lines that have all
    three, and the time alone falls short of them on a tenth or more (Coqui's step_time, the optimize call alone,
    beside loader_time, the wait before it). Without stamps a wait is added only where it cannot be inside its step:
    longer than the step's time on some line (by a fifth and 10 ms; Open-AnimateAnyone's `load_data_time: 19.6173,
    train_step_time: 0.686`, a timer of the model's work alone); else a time that holds it reads alike."""
    known = np.isfinite(seconds) & np.isfinite(data)
    if np.any((data[known] > 1.2 * seconds[known]) & (data[known] - seconds[known] > 0.01)):
        return True  # a part is never longer than its whole
    both = known & np.isfinite(stamped) & (stamped > 0)
    if both.sum() < 4:
        return False
    s, d, w = seconds[both], data[both], stamped[both]
    summed = np.abs(s + d - w) <= 0.1 * w
    return bool(summed.mean() >= 0.8 and (summed & (s < 0.9 * w)).sum() * 10 >= len(w))


def adopt_untagged(step: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Ranks with untagged rows (rank -1) given to the one tagged rank whose steps they mostly share (most of the
    smaller set, either way round): the same process printing through a second logger (DeepSpeed's timer lines on
    every step next to its `[Rank 0]` line every few steps, or the other way round)."""
    untagged = rank < 0
    if untagged.any() and not untagged.all():
        mine = set(step[untagged].tolist())
        for r in np.unique(rank[~untagged]):
            theirs = set(step[rank == r].tolist())
            if len(mine & theirs) * 2 >= min(len(mine), len(theirs)):
                rank = rank.copy()
                rank[untagged] = r
                break
    return rank


CLOCK_FLOOR_S = 1e8  # seconds: a time past this is a Unix time (1973 on), never a duration (no step lasts 3 years)


def epoch_clock(seconds: np.ndarray) -> bool:
    """Values that are Unix times, not durations: a median past CLOCK_FLOOR_S."""
    ok = seconds[np.isfinite(seconds)]
    return len(ok) > 0 and float(np.median(ok)) > CLOCK_FLOOR_S


def clock_reading(step, rank, time, seconds, share: float = 0.8) -> int | None:
    """What the time stamps of the lines say a plain time field is: WINDOW when its values match the gaps between a
    rank's consecutive step lines that lie more than one step apart, or fall short of them by less than half
    (Marian's `Time 61.00s`: since the previous display, 500 updates ago; fairseq2's `Lapse Time`, which pauses for
    validation), CUMULATIVE when its differences match them (OpenNMT's `323 sec`: since the start);
    None when fewer than two gaps of 2 s or more are stamped, or neither fits `share` of them. A gap may differ
    from the value by 1 s (time stamps in whole seconds) or 5%."""
    ok = np.isfinite(seconds) & (time != NAT)
    pairs = window = running = 0
    for r in np.unique(rank[ok]):
        idx = np.flatnonzero(ok & (rank == r))
        idx = idx[np.argsort(step[idx], kind="stable")]
        ds, dt, v = np.diff(step[idx]), np.diff(time[idx]) / 1e9, seconds[idx]
        gap = (ds > 0) & (dt >= 2.0)
        tol = np.maximum(1.0, 0.05 * dt)
        pairs += int(gap.sum())
        # nearer the gap than the gap per step, never past it: a window's time, less any pause it leaves out
        # (fairseq2's `Lapse Time` stops while it validates)
        window += int((gap & (ds > 1) & (v[1:] <= dt + tol) & (2 * v[1:] > dt * (1 + 1 / np.maximum(ds, 1)))).sum())
        running += int((gap & (np.abs(np.diff(v) - dt) <= tol)).sum())
    if pairs < 2:
        return None
    if running >= share * pairs:
        return CUMULATIVE
    if window >= share * pairs:
        return WINDOW
    return None


def total_reading(step, rank, time, seconds) -> int:
    """The class of a field named like a total (`train_time`, `training time`) whose values go up and down: what the
    lines' time stamps say it is (clock_reading; ESPnet's `train_time=0.450` is neither the window's nor a running
    total: a time per step), else, with no stamps to tell, the total since the previous line, the one total that
    does not accumulate (DeePMD's `training time 45.67 s` for the 2000 batches since the last line); but a total
    that restarts (`elapsed` since the epoch began) is a running total between its restarts."""
    return clock_reading(step, rank, time, seconds) or (CUMULATIVE if restarts(step, rank, seconds) else
                                                         GENERIC if int((time != NAT).sum()) >= 2 else WINDOW)


def restarts(step, rank, values) -> bool:
    """Whether a total that goes up and down is a running total that starts again (since each epoch's start, or a
    restarted run's): per rank in step order it rises at least twice as often as it falls, and every fall lands
    within twice the median rise of zero (the first window after the restart). A window's own time falls to about
    its level instead, half the time."""
    rises, lows = [], []
    falls = pairs = 0
    for r in np.unique(rank[np.isfinite(values)]):
        sel = np.isfinite(values) & (rank == r)
        v = values[sel][np.argsort(step[sel], kind="stable")]
        d = np.diff(v)
        rises.extend(d[d > 0].tolist())
        lows.extend(v[1:][d < 0].tolist())
        falls, pairs = falls + int((d < 0).sum()), pairs + len(d)
    return falls >= 1 and pairs - falls >= 2 * falls and bool(rises) and max(lows) <= 2 * float(np.median(rises))


def time_of_day(step, rank, seconds) -> bool:
    """Whether a field written as a clock is the wall clock when its line was printed (torch_xla's `Time=10:01:38`),
    not a duration: it rises line after line (a midnight may wrap it once) by far less than its value."""
    if not monotone(step, rank, seconds):
        return False
    ok = np.isfinite(seconds)
    rises = []
    for r in np.unique(rank[ok]):
        sel = ok & (rank == r)
        d = np.diff(seconds[sel][np.argsort(step[sel], kind="stable")])
        rises.extend(d[d > 0].tolist())
    return bool(rises) and float(np.median(seconds[ok])) > 10 * float(np.median(rises))


def rise_shares(step, rank, values) -> tuple[int, float, float]:
    """(pairs, share that does not fall, share that rises) of the steps from each of a rank's finite values to its
    next, in step order; (0, 0, 0) without a pair."""
    ok = np.isfinite(values)
    pairs = held = up = 0
    for r in np.unique(rank[ok]):
        sel = ok & (rank == r)
        d = np.diff(values[sel][np.argsort(step[sel], kind="stable")])
        pairs, held, up = pairs + len(d), held + int((d >= 0).sum()), up + int((d > 0).sum())
    return (pairs, held / pairs, up / pairs) if pairs else (0, 0.0, 0.0)


def monotone(step, rank, values) -> bool:
    """At least 3 pairs that do not fall, and at most one drop in 20 (a restart resets a running total)."""
    pairs, held, _ = rise_shares(step, rank, values)
    return pairs >= 3 and held >= 0.95


def per_step_diff(step, rank, values, cumulative: bool = True, pos=None) -> np.ndarray:
    """Per-step seconds from a cumulative time (difference / steps between consecutive lines of a rank) or from a
    window's time (value / steps since the previous line). The first line of a rank has no previous: NaN, unless
    `pos` (each line's position within its epoch, -1 unknown) says where a total since the epoch began starts
    (Flair's `time (sec)`): where the total and the position restart, value / pos, and then on the first epoch's
    first line too (a total that never restarted may count from before the first step: its first line stays NaN);
    a total that falls on the line one step after another began again between them: its value is that step's."""
    out = np.full(len(step), np.nan)
    ok = np.isfinite(values)
    for r in np.unique(rank[ok]):
        # a cumulative time needs two readings; a window's time only the previous line's step
        idx = np.flatnonzero((ok if cumulative else np.ones(len(step), bool)) & (rank == r))
        idx = idx[np.argsort(step[idx], kind="stable")]
        epochs = False  # the total began again with the position in the epoch: a total since the epoch began
        for a, b in pairwise(idx):
            ds = step[b] - step[a]
            if ds <= 0:
                continue
            dv = values[b] - values[a] if cumulative else values[b]
            if dv >= 0:  # NaN (no reading on this line) fails too
                out[b] = dv / ds
            elif cumulative and pos is not None and 0 < pos[b] <= min(ds, pos[a]) and values[b] >= 0:
                out[b] = values[b] / pos[b]  # a new epoch: the total and the position began again
                epochs = True
            elif cumulative and ds == 1 and values[b] >= 0:
                out[b] = values[b]  # the total began again after the line before: all of it is this step's
        if epochs and 0 < pos[idx[0]] == step[idx[0]]:
            out[idx[0]] = values[idx[0]] / pos[idx[0]]  # the first epoch's first line: its total since step 0
    return out


def window_means(step, rank, time, keyword) -> np.ndarray:
    out = np.full(len(step), np.nan)
    ok = (time != NAT) & keyword
    for r in np.unique(rank[ok]):
        idx = np.flatnonzero(ok & (rank == r))
        first: dict[int, int] = {}
        for i in idx:
            first.setdefault(int(step[i]), i)  # the first line naming a step
        a = None  # the window's first step: the first one of the last stamp before
        for b in sorted(first):
            if a is not None:
                seconds = (time[first[b]] - time[first[a]]) / 1e9
                if seconds == 0:
                    continue  # the same stamp (a clock coarser than a step): the window runs on to the next one
                if seconds > 0:
                    out[first[b]] = seconds / (b - a)
            a = b
    return out


def window_starts(step, rank, time, idx) -> np.ndarray:
    """For window-mean rows: the window's start, the time of the previous logged step's line of the same rank."""
    starts = np.full(len(idx), NAT, dtype=np.int64)
    prev: dict[tuple[int, int], int] = {}
    ok = time != NAT
    by_rank: dict[int, list[int]] = {}
    for i in np.flatnonzero(ok):
        key = (int(rank[i]), int(step[i]))
        if key not in prev:
            prev[key] = int(time[i])
            by_rank.setdefault(int(rank[i]), []).append(int(step[i]))
    before: dict[tuple[int, int], int] = {}
    for r, steps in by_rank.items():
        steps = sorted(set(steps))
        for a, b in pairwise(steps):
            before[(r, b)] = prev[(r, a)]
    for j, i in enumerate(idx):
        starts[j] = before.get((int(rank[i]), int(step[i])), NAT)
    return starts


def field_seconds(name, cls, role, step, rank, cols, pos=None) -> tuple[np.ndarray, str]:
    """Per-step seconds of the field `name` read as class `cls` (a rate inverted, a cumulative clock or a window's
    time per step between lines, else as stated), and the reading in words; `pos`: per_step_diff's."""
    kind, _, factor = role[:3]
    values = cols[name] * factor
    if kind == "rate":
        with np.errstate(divide="ignore"):
            values = np.where(values > 0, 1.0 / values, np.nan)
        return values, f"{name} (steps per second, inverted)"
    if cls == CUMULATIVE:
        return per_step_diff(step, rank, values, pos=pos), f"{name} (cumulative: difference per step)"
    if cls == WINDOW:
        return per_step_diff(step, rank, values, cumulative=False), "time since the previous log line / steps between"
    return values, f"{name} ({CLASS_NAMES[cls]})"


def phase_fields(cols, roles, chosen) -> dict[str, str]:
    """Per phase, its best-covered field; with a `last_` step time (detectron2), the `last_` phase times."""
    out: dict[str, str] = {}
    last = str(chosen).startswith("last_")

    def score(k):
        return (np.isfinite(cols[k]).sum(), k.startswith("last_") == last, -len(k))

    for k, r in roles.items():
        if r[0] != "phase":
            continue
        have = out.get(r[1])
        if have is None or score(k) > score(have):
            out[r[1]] = k
    return out


SUMMED_PHASES = ("handoff", "wait", "tail")  # phases named by meaning (handoff.py, sample_tail.py): one of many fields


def summed_phases(cols, roles, idx) -> dict:
    """The phases several fields of a record name by their meaning (`perf/sleep_time` and `perf/wake_up_time` both a
    hand-off): the sum of those fields, where phase_fields keeps one field per phase."""
    out = {}
    for phase in SUMMED_PHASES:
        keys = [k for k, r in roles.items() if r[0] == "phase" and r[1] == phase]
        if len(keys) > 1:
            parts = np.vstack([cols[k] * roles[k][2] for k in keys])[:, idx]
            out[phase] = np.where(np.isfinite(parts).any(axis=0), np.nansum(parts, axis=0), np.nan)
    return out
