"""Attribution: each bucket of the what-if accounting (playbook.analysis.accounting) goes to the cause whose evidence
sits on its own steps, windows and names, and what no evidence explains stays "unexplained"; then the verdict
follows from the accounting.

Evidence, strongest first (the candidates of a bucket kind and the phase → cause map are the catalog's,
playbook.knowledge.causes.BUCKET_CAUSES / PHASE_CAUSE):
1. a phase timer: a `phase:<name>` bucket is the time the step's own timer measured in that phase;
2. events at the bucket's steps (±1 step) or inside its windows: the cause of the kind logged at most of them
   (checkpoint → periodic_stall, gc → gc_pause, recompile → recompilation, xid → hardware_fault, ...); for the
   fleet's drops, host activity measured during them (swapping → memory_pressure, iowait → data_starvation) likewise:
   the best-ranked cause it supports, whether or not the drops' usual candidates list it;
3. a benign cadence with positive evidence (an optimizer phase logged on the slow steps only): "healthy", its cost
   still stated;
4. the bucket's own shape: every GPU recorded busy-waiting (`busy_wait`) and none idle or late (LATE_KINDS) is
   the ranks waiting on the collectives' transport (link_degradation, not measured: a rank outside the recording
   would look the same);
5. the findings: the best-ranked candidate cause of the bucket's kind whose score is at least SUPPORT_MIN — unless
   rule 6 applies and the finding is one the spin contradicts (SPIN_DENIES);
6. the buckets' shape again: some GPUs busy-waiting while the others work, or sit idle or late at the same
   moments, is the spinning ones waiting for the others (collective_straggler, `_waiting_for`), the spin and the
   others' shortfall alike.

The verdict (`decide`): healthy only while the harmful loss (buckets not attributed to "healthy") is within the
noise floor and no cause outranks healthy; otherwise the cause with the largest attributed share of the loss — or
`unexplained_slowdown` when the unexplained share is the largest and no cause is supported on its own.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd

from playbook.analysis.accounting import COLLECTIVE_PHASES, Accounting, Bucket
from playbook.analysis.series import mixed_models
from playbook.analysis.step_pace import run_restarts
from playbook.diagnosis.evidence import _hosts_of, _ids
from playbook.knowledge import ids as cause_ids
from playbook.knowledge.causes import (
    BUCKET_CAUSES,
    PHASE_CAUSE,
    PHASE_FALLBACK,
    STANDING_EVENT_KINDS,
    UTILIZATION_BLIND,
    cause,
    cause_of_event,
)

# a finding-based attribution needs the cause's own score to reach this: below it the cause is not supported by
# itself (a score is calibrated as the chance of being right: tests/diagnosis/test_calibration.py)
SUPPORT_MIN = 0.25
STRONG = 0.5  # a cause ranked above healthy on its own evidence
# buckets that show a GPU the others could be waiting for: one idle, below its peers, lost or slow beside them
LATE_KINDS = ("idle_gpu", "underused_gpu", "lost_gpu", "gpu_drops", "slow_rank")
# the same observations pick one reading when it scores at least twice any other's (odds of 2:1 between them)
PICK_RATIO = 2.0
UNEXPLAINED = "unexplained"
WAITING = "waiting on the GPUs that do not spin"  # the opening of _waiting_for's evidence
# readings of GPUs below their peers that the peers' spin contradicts: in both the busy GPUs do the work (the
# bottleneck stage; the ranks whose input keeps up), while a spinning GPU draws a fraction of its working power —
# it does no work, it waits. A finding for any other cause (the late GPU's own: a fault, a throttled clock; or the
# straggler itself, with its own measurement) still rules (rule 5 before 6).
SPIN_DENIES = (cause_ids.PIPELINE_IMBALANCE, cause_ids.DATA_STARVATION)


def attribute(acc: Accounting, events: pd.DataFrame, ranked: list[dict], steps_summary: dict,
              steps: pd.DataFrame | None = None, drop_causes=(), observed: dict[str, set[str]] | None = None) -> None:
    """Set `cause` and `evidence` on every bucket of `acc` (in place). `drop_causes`: the causes host activity
    measured during the fleet's drops supports (analyzers/host_probe.py); `observed`: per cause, the observations its
    evidence reads (ranking.observations; without it, the evidence texts stand for them)."""
    scores = {h["id"]: h for h in ranked}
    benign = (steps_summary.get("periodic_slow") or {}).get("benign") if steps_summary else None
    for b in acc.buckets:
        b.cause, b.evidence, b.direct = _attribution(b, acc, events, scores, benign, steps, drop_causes, observed)
    spin = next((b for b in acc.buckets if b.kind == "busy_wait" and b.evidence.startswith(WAITING)), None)
    if spin is not None:  # the GPUs waited for carry the spin, as late ranks carry a grown phase (_grown_phase)
        waited = [n for n in acc.unit_names if n not in spin.names]
        spin.detail += f" on {_ids(spin.names, 3)}, waiting for the GPU{'s' if len(waited) > 1 else ''}"
        spin.names = waited


def _attribution(b: Bucket, acc: Accounting, events: pd.DataFrame, scores: dict, benign: str | None,
                 steps: pd.DataFrame | None, drop_causes=(), observed: dict[str, set[str]] | None = None
                 ) -> tuple[str, str, bool]:
    """(cause, evidence, measured directly) for one bucket, by the order of the module docstring."""
    if b.kind.startswith("phase:"):
        phase = b.kind.split(":", 1)[1]
        cid = _phase_cause(phase)
        if cid:
            return cid, f"the step timer's own {phase} phase", True
    grown = _grown_phase(b, steps)
    if grown:
        if grown[2]:
            b.names = grown[2]  # the late ranks carry the bucket; the others only waited for them
        return grown[0], grown[1], True
    hit = _events_on(b, acc, events, steps)
    if hit:
        return (*hit, True)
    measured = [scores[c] for c in drop_causes if c in scores and scores[c]["score"] >= SUPPORT_MIN]
    if b.kind == "fleet_drops" and measured:
        best = max(measured, key=lambda h: h["score"])
        return best["id"], (best.get("evidence") or [""])[0], False
    if b.kind == "recurring_slow" and benign:
        return cause_ids.HEALTHY, benign, True
    if b.kind == "outside_timer":  # the bucket is the measurement: time the step timer does not see
        return cause_ids.BETWEEN_STEPS, "line timestamps advance faster than the step timer counts", True
    if b.kind == "stage_imbalance":  # the stages' own timers measure it
        return cause_ids.PIPELINE_IMBALANCE, "the stages' own timers", True
    if b.kind == cause_ids.UNUSED_GPUS:  # a job report's own figure: under 1% over the whole job
        return cause_ids.UNUSED_GPUS, b.detail, True
    if b.kind == "busy_wait" and 1 < acc.units == len(b.names) and not any(o.kind in LATE_KINDS for o in acc.buckets):
        return cause_ids.LINK_DEGRADATION, ("every GPU recorded spins at a fraction of its working power and none is "
                                            "idle or late: the ranks wait on the collectives' transport (or on a rank "
                                            "outside the recording)"), False
    supported = [scores[c] for c in BUCKET_CAUSES.get(b.kind, ()) if c in scores and scores[c]["score"] >= SUPPORT_MIN]
    best = max(supported, key=lambda h: h["score"], default=None)
    waiting = _waiting_for(b, acc)
    # a cause takes the bucket on an observation of its own, or when it is more likely right than not (STRONG: the
    # scores are calibrated) though it shares its observation: two drops every 60 s read as a stall 0.58, a loader 0.34
    own = best is not None and (best["score"] >= STRONG or _own_evidence(best, supported, observed))
    if own and not (waiting and best["id"] in SPIN_DENIES):
        return best["id"], (best.get("evidence") or [""])[0], False
    if waiting:
        return cause_ids.COLLECTIVE_STRAGGLER, waiting, False
    # supported candidates on the same observations: none takes the loss, all are named (b.tied)
    b.tied = [(h["id"], h["score"]) for h in sorted(supported, key=lambda h: -h["score"])[:3]]
    return UNEXPLAINED, (f"read as {' or '.join(_scored(b.tied))} alike: nothing in the inputs tells them apart"
                         if b.tied else ""), False


def _scored(tied: list[tuple[str, float]]) -> list[str]:
    """"periodic_stall (0.39)" per (cause, score)."""
    return [f"{cid} ({score:.2f})" for cid, score in tied]


def _waiting_for(b: Bucket, acc: Accounting) -> str:
    """Evidence that `b` is the run's GPUs waiting for some of their own, or "": some GPUs of the recording
    busy-wait (`busy_wait`: a kernel spinning at a fraction of the power the GPU draws at work, the way a collective
    or a receive waits) while the others do not. A spinning GPU waits on another device; when some of the recorded
    GPUs do not spin, those are the ones waited for — the stragglers, working at those moments or idle / late
    (LATE_KINDS) beside them. So the spin is time lost to them, and so is their own shortfall when it is a late
    bucket at the same moments. (Every GPU spinning is rule 4: the transport, or a rank outside the recording.)"""
    spin = next((o for o in acc.buckets if o.kind == "busy_wait" and o.seconds > 0), None)
    if spin is None or not 0 < len(spin.names) < acc.units or len(acc.unit_names) != acc.units:
        return ""
    spinning = set(spin.names)
    if b is spin:
        waited = [n for n in acc.unit_names if n not in spinning]
    elif b.kind in LATE_KINDS and b.names and not spinning & set(b.names) and _overlap(b.windows, spin.windows):
        waited = list(b.names)
    else:
        return ""
    late = sorted(set(waited) & {n for o in acc.buckets if o.kind in LATE_KINDS for n in o.names}, key=waited.index)
    who = _ids(sorted(spinning, key=acc.unit_names.index), 3)
    text = (f"{WAITING}: {who} spin{'s' if len(spinning) == 1 else ''} at a "
            f"fraction of {'its' if len(spinning) == 1 else 'their'} working power while {_ids(waited, 3)} "
            f"{'is' if len(waited) == 1 else 'are'} {'idle or late' if late else 'at work'} at the same moments: "
            f"the spinning GPUs wait in a collective (or a receive) for {_ids(late or waited, 3)}")
    models = dict(zip(acc.unit_names, acc.unit_models, strict=True)) if len(acc.unit_models) == acc.units else {}
    mix = Counter(models.get(n, "") for n in acc.unit_names)
    if len(mix) > 1 and "" not in mix:  # the slower part sets every collective's pace
        slow = sorted({models[n] for n in waited})
        hosts = len(_hosts_of(acc.unit_names))
        text += (f"; {mixed_models(mix, hosts)} — each GPU is judged against its own model, and the "
                 f"{' / '.join(slow)} {'sets' if len(slow) == 1 else 'set'} the pace")
    return text


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> bool:
    """Whether two buckets' windows meet (a bucket without windows spans the run)."""
    return not a or not b or any(x0 < y1 and y0 < x1 for x0, x1 in a for y0, y1 in b)


def _own_evidence(best: dict, supported: list[dict], observed: dict[str, set[str]] | None = None) -> bool:
    """Whether `best` rests on an observation of its own: at least one evidence line no other supported candidate
    of the bucket cites, or a score PICK_RATIO times each rival's that cites its every line. Candidates that cite
    the very same observations at near the same score (a level shift that a throttled GPU, a straggler or a failing
    part would all show: 0.40, 0.35, 0.15) differ only by their priors: the data does not pick one; an observation
    far likelier under one reading (a low busy clock: throttling 0.75, a failing board 0.3) does. An observation read
    several ways is one observation (`observed`): two drops read "if scheduled, a checkpoint" and "if unscheduled,
    the input pipeline" at 0.38 each are the same two drops."""
    keyed = bool(observed) and all(observed.get(h["id"]) for h in supported)  # one namespace: keys, or else texts

    def seen(h: dict) -> set[str]:
        return observed[h["id"]] if keyed else set(h.get("evidence") or ())

    mine = seen(best)
    rivals = [h for h in supported if h is not best and mine <= seen(h)]
    return all(best["score"] >= PICK_RATIO * h["score"] for h in rivals)


def _phase_cause(phase: str) -> str | None:
    return PHASE_CAUSE.get(phase) or PHASE_FALLBACK.get(phase)


def _grown_phase(b: Bucket, steps: pd.DataFrame | None) -> tuple[str, str, list[str]] | None:
    """(cause, evidence, late ranks) of the phase that grows most on the bucket's steps against the other steps,
    when it carries at least half of the phases' growth and of the steps' own excess and a cause measures it; else
    None. With several ranks the growth is each rank's own: the ranks whose phase grows (at least a tenth of the most any
    rank's does) are the late ones, and the others' steps stretch because they wait for them in the collective."""
    if steps is None or steps.empty or not b.steps or b.kind.startswith("phase:"):
        return None
    part = steps[steps["phase"] != "step"]
    on = part["step"].isin(b.steps)
    if part.empty or not on.any() or on.all():
        return None
    keys = [part["rank"], part["phase"].astype(str)]
    mean_on = part[on].groupby([k[on] for k in keys])["duration_s"].mean()
    # a phase logged only on these steps (a checkpoint) takes no time on the others
    usual = part[~on].groupby([k[~on] for k in keys])["duration_s"].median().reindex(mean_on.index).fillna(0.0)
    grow = (mean_on - usual).dropna().clip(lower=0.0)  # (rank, phase) → seconds
    if grow.empty or grow.sum() <= 0:
        return None
    by_phase = grow.groupby(level=1).max()  # the most any rank's phase grows
    # ranks that wait for a late one show it as a longer collective: the late rank's own phase is the cause, the
    # collective only when no other phase grows as much
    own = by_phase[~by_phase.index.isin(COLLECTIVE_PHASES)]
    top = str(own.idxmax() if len(own) and own.max() >= 0.5 * by_phase.max() else by_phase.idxmax())
    cid = _phase_cause(top)
    whole = steps[steps["phase"] == "step"]
    w_on = whole["step"].isin(b.steps)
    extra = float(whole.loc[w_on, "duration_s"].mean() - whole.loc[~w_on, "duration_s"].median()) \
        if w_on.any() and (~w_on).any() else float(by_phase.sum())
    # the phase must carry most of the growth of the phases and at least half of the steps' own excess (time in
    # no phase — a GC pause, a sync — is not the phase's)
    if cid is None or by_phase[top] < 0.5 * by_phase.drop(list(COLLECTIVE_PHASES), errors="ignore").sum() \
            or by_phase[top] < 0.5 * extra:
        return None
    ranks = grow.xs(top, level=1)
    late = sorted(int(r) for r in ranks.index[ranks >= 0.1 * ranks.max()])  # waiting ranks grow ~0
    names = [f"rank {r}" for r in late if r >= 0]
    text = f"the {top} phase is {by_phase[top]:.3g} s longer on these steps"
    if names and len(names) < part["rank"].nunique():
        text += f" on {', '.join(names[:6])}{' …' if len(names) > 6 else ''} — the late ranks; the others wait for them"
    return cid, text + f" ({by_phase[top] / by_phase.sum():.0%} of the phases' growth)", names


def _events_on(b: Bucket, acc: Accounting, events: pd.DataFrame,
               steps: pd.DataFrame | None = None) -> tuple[str, str] | None:
    """(cause, evidence) of the event kind logged at most of the bucket's steps or windows (at least half), or
    None. An event kind logged beside (nearly) every step line and as often at the run's other steps as at the
    bucket's (a validation line after every epoch, when only the later epochs are slow) marks every step alike: it
    cannot say why these are slow; so does one as common before or after a slow stretch as inside it, however
    sparse (an evaluation after every epoch, logged once per four step lines). (Against slow lines interleaved with
    fast ones a sparser one is kept: with lines every k steps an event numbered at one line may have slowed the
    next, so its window reaches both.) A run restart is none of them: it happens between two runs
    (step_pace.run_restarts), in no step's time."""
    if events is None or events.empty:
        return None
    events = events[~run_restarts(events)]
    ev = events.assign(cause=events["kind"].map(cause_of_event)).dropna(subset=["cause"])
    if ev.empty:
        return None
    counts: dict[str, set] = {}
    if b.steps:
        st = ev[ev["step"] >= 0]
        # a step line logged every k steps stands for the k steps since the previous one: an event logged in that
        # window (numbered by the line before it or after it) is at the step (Marian's checkpoint after `Up. 1500`
        # slows the line `Up. 2000`); every-step logs keep ±1 step
        back = max(acc.step_gap, 1)
        at_steps = {cid: np.sort(g.to_numpy(dtype=np.float64)) for cid, g in st.groupby("cause")["step"]}
        for cid, at in at_steps.items():
            hit = _logged_near(at, b.steps, back, 1)
            if hit.any():
                counts[cid] = {s for s, h in zip(b.steps, hit.tolist(), strict=True) if h}
        n = len(b.steps)
        unit = "slow steps" if b.kind in ("recurring_slow", "stalls") else "steps"
        others = _other_steps(b, steps)
        lines = sorted(set(others) | set(b.steps))
        for cid in list(counts):
            at = at_steps[cid]
            # beside every line, or any density against a stretch (its own steps and the others each one block:
            # the windows' reach biases neither), and as common away from the bucket as on it: no evidence
            if others and (b.kind == "slow_stretches" or _logged_near(at, lines, 1, 1).mean() >= 0.8) and \
                    _logged_near(at, others, back, 1).mean() >= 0.5 * len(counts[cid]) / n:
                exact = _exact_offset_hits(at, b.steps, others) if back == 1 and b.kind != "slow_stretches" else None
                if exact is None:
                    del counts[cid]
                else:
                    counts[cid] = exact
    elif b.windows and acc.t0 is not None and ev["time"].notna().any():
        t = (ev["time"] - acc.t0).dt.total_seconds().to_numpy()
        tol = acc.interval_s
        for i, (lo, hi) in enumerate(b.windows):
            inside = (t >= lo - tol) & (t <= hi + tol)
            for cid in set(ev.loc[inside, "cause"]):
                counts.setdefault(cid, set()).add(i)
        n = len(b.windows)
        unit = "windows"
    else:
        return None
    if not counts:
        return None
    cid, hits = max(counts.items(), key=lambda kv: (len(kv[1]), kv[0]))
    if 2 * len(hits) < n and len(hits) < 3:
        return None
    kinds = sorted(set(ev.loc[ev["cause"] == cid, "kind"].astype(str)))
    return cid, f"{'/'.join(kinds[:3])} events at {len(hits)} of {n} {unit}"


def _exact_offset_hits(at: np.ndarray, slow: list[int], others: list[int]) -> set[int] | None:
    """The slow steps an event kind sits on at one exact offset (the event numbered by the slow step itself, by the
    line before it or by the line after it), when at that offset it sits on at least half of them (and 3), at least
    EVENT_SLOWED of its own occurrences on the logged lines fall on them (an evaluation or a checkpoint does the same
    work each time: it slows nearly every line it sits on), it sits on under half as large a share of the other
    steps, and stalls placed at random among the logged lines would sit on its lines as well at most CHANCE_MAX of
    the time (hypergeometric tail); else None. With every step logged, a ±1-step window around events every 2nd step
    covers every line (nanoGPT's evaluation and checkpoint every eval_interval = 2 iterations, each inside the next
    iteration's time): the window cannot tell them from events beside every line, their exact step numbers can. An
    event every 2nd step whose every 5th occurrence is slow stays no evidence: most of its occurrences cost nothing;
    so do random stalls that happen to sit on a frequent event's lines in a short log (8 stalls of 20 steps, 4 of them
    after 4 of the 6 validations every 3rd step: 1 time in 6)."""
    logged = set(np.asarray(at, dtype=np.int64).tolist())
    lines = set(slow) | set(others)
    n = len(slow)
    best: set[int] | None = None
    for off in (0, -1, 1):
        hits = {s for s in slow if s + off in logged}
        marked = {e - off for e in logged} & lines  # the lines this offset's events would slow
        away = float(np.mean([s + off in logged for s in others])) if others else 0.0
        if len(hits) >= max(3, (n + 1) // 2) and len(hits) >= EVENT_SLOWED * len(marked) and \
                away < 0.5 * len(hits) / n and \
                _chance(len(lines), len(marked), n, len(hits)) <= CHANCE_MAX and (best is None or len(hits) > len(best)):
            best = hits
    return best


EVENT_SLOWED = 0.75  # three quarters and more: one occurrence in four may hide in the step times' noise
CHANCE_MAX = 0.1  # 1 in 10: keeps an 8-step log whose 3 events all sit on 3 of its 4 stalls (1 in 14; nanoGPT #673's
# 4 of 4 stalls on 4 of 9 lines is 1 in 126), refuses the 1-in-6 alignments random stalls make


def _chance(lines: int, marked: int, n: int, hits: int) -> float:
    """P(at least `hits` of `n` stalls on `marked` of `lines` lines), the stalls placed at random among the lines (in
    logarithms: a long log's binomials are thousands of digits)."""
    if n > lines or marked > lines:
        return 1.0

    def log_comb(a: int, b: int) -> float:
        return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)
    total = log_comb(lines, n)
    return min(1.0, sum(math.exp(log_comb(marked, k) + log_comb(lines - marked, n - k) - total)
                        for k in range(hits, min(marked, n) + 1) if n - k <= lines - marked))


def _logged_near(at: np.ndarray, steps, below: float, above: float) -> np.ndarray:
    """Per step s of `steps`, whether an event step of `at` (sorted) lies in [s - below, s + above] (one binary
    search each: linear in the run's steps, however many events)."""
    s = np.asarray(steps, dtype=np.float64)
    i = np.searchsorted(at, s - below, side="left")
    return (i < len(at)) & (at[np.minimum(i, len(at) - 1)] <= s + above) if len(at) else np.zeros(len(s), bool)


def _other_steps(b: Bucket, steps: pd.DataFrame | None) -> list[int]:
    """The run's logged step numbers outside the bucket (after the first), [] without a steps table."""
    if steps is None or steps.empty:
        return []
    logged = sorted(int(s) for s in pd.unique(steps["step"]) if s > 0)
    inside = set(b.steps)
    return [s for s in logged if s not in inside]


def harmful(acc: Accounting) -> dict[str, float]:
    """Seconds lost per attributed cause ("unexplained" included, "healthy" — a benign cadence — left out),
    largest first."""
    out: dict[str, float] = {}
    for b in acc.buckets:
        if b.cause != cause_ids.HEALTHY:
            out[b.cause] = out.get(b.cause, 0.0) + b.seconds
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


RECURRING = 0.5  # events of a cause on at least half as many occasions as the run logged steps: every step pays it


def rare_event_causes(events: pd.DataFrame | None, steps: pd.DataFrame | None) -> set[str]:
    """The causes whose logged events (knowledge.causes.cause_of_event) number fewer than RECURRING × the logged
    step numbers: a moment (one CUDA OOM caught and retried, one allocator retry), which the run's own pace shows if
    it cost anything — not a cost every step pays (torchtitan#1558's retries at each logged step)."""
    if events is None or events.empty or steps is None or steps.empty:
        return set()
    logged = steps.loc[steps["phase"] == "step", "step"].nunique()
    per_cause: Counter = Counter()
    for kind, n in events["kind"].astype(str).value_counts().items():  # a few kinds, however many events
        if (c := cause_of_event(kind)) is not None and kind not in STANDING_EVENT_KINDS:
            per_cause[c] += int(n)
    return {c for c, n in per_cause.items() if n < RECURRING * logged}


def decide(acc: Accounting, ranked: list[dict], rare: set[str] = frozenset()) -> str | None:
    """The verdict's id from the accounting (see the module docstring), or None to keep the ranking's order.
    `rare`: the causes whose events are moments, not a cost of every step (rare_event_causes): they do not outrank
    healthy as a cause the basis cannot see (one allocator retry beside GPUs busy throughout), only when measured
    directly."""
    top = ranked[0]["id"] if ranked else None
    if top == cause_ids.INSUFFICIENT_DATA and not _idle_measured(acc):
        return None
    by = harmful(acc)
    loss = sum(by.values()) / acc.wall_s if acc.wall_s > 0 else 0.0
    largest = max(by.values(), default=0.0) / acc.wall_s if acc.wall_s > 0 else 0.0
    strong = top not in (None, cause_ids.HEALTHY, cause_ids.INSUFFICIENT_DATA) and ranked[0]["score"] >= STRONG
    if loss <= acc.noise_floor_share or largest <= acc.noise_floor_share:
        # no time lost beyond the noise (in all, or by any one cause): only a cause measured directly (a fault)
        # or one the basis cannot see outranks healthy: a throttled GPU reads 100%, and on the wall-time basis a
        # cost every step pays (the clock held down, allocator retries in every step: torchtitan#1558) slows the
        # run's own pace with it, so the pace shows no loss either
        blind = strong and top in UTILIZATION_BLIND and top not in rare
        direct = strong and ranked[0]["score"] >= CONFIRM
        return None if direct or blind or top == cause_ids.INSUFFICIENT_DATA else cause_ids.HEALTHY
    lead = next(iter(by))
    if lead == UNEXPLAINED:
        return top if strong else cause_ids.UNEXPLAINED_SLOWDOWN
    return lead


def _idle_measured(acc: Accounting) -> bool:
    """True when the accounting itself measures idle GPU time — a steady idle level, or drops of all the GPUs below
    their busy level beyond the noise floor: the time is lost even if the inputs cannot say why (a level that
    wanders in minute-long drops is no steady level for "not enough data" to stand on)."""
    drops = sum(b.seconds for b in acc.buckets if b.kind == "fleet_drops")
    return any(b.kind == "steady_idle" for b in acc.buckets) or (
        acc.wall_s > 0 and drops / acc.wall_s > acc.noise_floor_share)


def unexplained_hypothesis(acc: Accounting, score: float, ranked: list[dict] | None = None) -> dict:
    """The `unexplained_slowdown` hypothesis: the loss no evidence explains, its windows and names, and what to
    record next (the next step of the `ranked` candidates that tie on it, when they do)."""
    c = cause(cause_ids.UNEXPLAINED_SLOWDOWN)
    rest = [b for b in acc.buckets if b.cause == UNEXPLAINED]
    rest.sort(key=lambda b: -b.seconds)
    evidence = [f"{b.detail} — {_fmt(b.seconds)} {'GPU-' if acc.basis == 'gpu' else ''}s "
                f"({b.share:.0%}){_where(b, acc.record)}: {b.evidence or 'no event, phase or finding at them names a cause'}"
                for b in rest[:4]]
    names = list(dict.fromkeys(n for b in rest for n in b.names if n != "all GPUs"))
    # candidates that tie on the largest such bucket: the measurement that tells them apart is theirs
    by_id = {h["id"]: h for h in ranked or ()}
    tied = [by_id[cid] for cid, _ in (rest[0].tied if rest else []) if cid in by_id]
    return {"id": c.id, "score": round(float(np.clip(score, 0.0, 1.0)), 3), "evidence": evidence,
            "next_step": next((h["next_step"] for h in tied if h.get("next_step")), c.next_step), "fix": c.fix,
            "notebook": c.notebook, "command": c.command,
            "lost_share": round(sum(b.share for b in rest), 4), "names": names[:16], "named": len(names)}


# buckets of a level held all run long (accounting.gpu_time): their one window is the whole span, no place to name
THROUGHOUT_KINDS = ("steady_idle", "idle_gpu", "underused_gpu")


def _where(b: Bucket, record: str = "step") -> str:
    """" on rank 1, rank 2; at steps 57, 143" / " at 5–8 s, 13–16 s …": who and when, short (`record`: what a
    step number counts, Accounting.record)."""
    parts = []
    if b.names and b.names != ["all GPUs"]:
        parts.append("on " + _ids(b.names, 3))
    if b.steps and len(b.steps) <= 2 * max(len(b.windows), 1):
        parts.append(f"at {record}{'' if len(b.steps) == 1 else 's'} " + ", ".join(map(str, b.steps[:5]))
                     + (" …" if len(b.steps) > 5 else ""))
    elif b.windows and not (len(b.windows) == 1 and b.windows[0][0] <= 0 and b.kind in THROUGHOUT_KINDS):
        parts.append("at " + ", ".join(_window(a, z) for a, z in b.windows[:3])
                     + (" …" if len(b.windows) > 3 else ""))
    return (" " + "; ".join(parts)) if parts else ""


def _window(a: float, z: float) -> str:
    """"5–8 s", "2.1–2.3 s": as many decimals (up to 3) as tell the window's ends apart (s since the start)."""
    decimals = int(min(3, max(0, -np.floor(np.log10(z - a))))) if z > a else 0
    return f"{a:.{decimals}f}–{z:.{decimals}f} s"


def _fmt(seconds: float) -> str:
    return f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.2g}"


# Words for a score, so that the sentence never says more than the number: "confirmed" only when the score is at
# least CONFIRM and the next cause is at least MARGIN behind; "likely" from LIKELY; "possible" below.
CONFIRM, LIKELY, MARGIN = 0.8, 0.5, 0.2


def confidence_word(score: float, runner_up: float = 0.0) -> str:
    """"confirmed", "likely" or "possible" for a top score and the next cause's score (see above)."""
    if score >= CONFIRM and score - runner_up >= MARGIN:
        return "confirmed"
    return "likely" if score >= LIKELY else "possible"


def unexplained_why(acc: Accounting) -> str:
    """Why the largest unexplained loss has no cause: no input says, or its candidates tie (Bucket.tied)."""
    rest = sorted((b for b in acc.buckets if b.cause == UNEXPLAINED), key=lambda b: -b.seconds)
    tied = _scored(rest[0].tied) if rest else []
    if len(tied) == 2:
        return f"the findings cannot tell {tied[0]} from {tied[1]}"
    if tied:
        return f"the findings cannot tell {', '.join(tied[:-1])} or {tied[-1]} apart"
    return "no event, phase or finding in the inputs says why"


def loss_phrase(acc: Accounting, lead: str) -> str:
    """"loses 26% of wall time (28 s of 108 s) in slow steps every 10 steps, …": the loss and where the lead
    cause's share of it sits (all of it for healthy / unexplained)."""
    unit = "GPU time" if acc.basis == "gpu" else "wall time"
    su = " GPU-s" if acc.basis == "gpu" else " s"
    head = f"loses {acc.lost_share:.0%} of {unit} ({_fmt(acc.lost_s)}{su} of {_fmt(acc.wall_s)}{su})"
    if lead == cause_ids.HEALTHY:
        if not acc.buckets:
            return f"loses nothing measurable against its steady pace, within the noise floor of " \
                   f"{acc.noise_floor_share:.0%} ({acc.noise_floor})"
        if not acc.significant:
            return f"{head}, within the run's noise floor of {acc.noise_floor_share:.0%} ({acc.noise_floor})"
        if any(b.cause == cause_ids.HEALTHY for b in acc.buckets):  # time off the pace that is the run's own work
            return (f"{acc.lost_share:.0%} of {unit} ({_fmt(acc.lost_s)}{su} of {_fmt(acc.wall_s)}{su}) off its "
                    f"steady pace, {_benign(acc)}")
        return f"{head}, {_benign(acc)}"
    want = UNEXPLAINED if lead == cause_ids.UNEXPLAINED_SLOWDOWN else lead
    mine = [b for b in acc.buckets if b.cause == want]
    if not mine and not acc.significant:
        return ""  # the leading cause is stated in the inputs, not measured as lost time: no loss to lead with
    mine = sorted(mine or acc.buckets, key=lambda b: -b.seconds)
    if len(mine) > 1 and mine[0].names and mine[0].names == mine[1].names and not mine[1].windows:
        # two parts of one culprit's loss (a straggler's peers' wait and its own extra time): its name once
        where = f"{mine[0].detail} ({mine[0].share:.0%}) and {mine[1].detail} ({mine[1].share:.0%}){_where(mine[0], acc.record)}"
    else:
        where = "; ".join(f"{b.detail}{_where(b, acc.record)}" for b in mine[:2])
    return f"{head} in {where}" if where else head


def _benign(acc: Accounting) -> str:
    """What of a loss above the noise floor is not harmful: the benign buckets, or (healthy leading without one) the
    loss spread over causes each within the floor (decide)."""
    kept = [b for b in acc.buckets if b.cause == cause_ids.HEALTHY]
    if kept:
        return "of it " + "; ".join(f"{b.share:.0%} in {b.detail} ({b.evidence})" for b in kept)
    by = harmful(acc)
    cause, sec = next(iter(by.items()))
    return (f"spread over {len(by)} cause{'s' if len(by) > 1 else ''}, none above the noise floor of "
            f"{acc.noise_floor_share:.1%} (the largest {sec / acc.wall_s:.1%}, {cause})")
