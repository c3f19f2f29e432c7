"""Ranking: turn the analyzers' Findings (diagnosis.findings) into scored hypotheses with evidence, a next
measurement and a fix. Causes, their fixes, next measurements and labs come from the catalog (playbook.knowledge.causes);
the from_* functions of diagnosis.evidence state each analyzer's observations as Findings, and `rank` reads
nothing but those Findings' fields.

Scoring (documented, deterministic):

* Every finding becomes an `Evidence` item (`expand`) for each hypothesis its signature points at, with a
  strength in [0, 1]:
      strength = confidence × specificity × impact
  - confidence: how sure the analysis is that the signature is present — 1 - p for a statistical test (p-values
    come from the analyses: spectral / regularity tests, sign and binomial tests, hypergeometric tests), or the
    level of a thresholded measurement (moderate 0.4, high 0.85 — the TF-profiler thresholds the Kineto and
    straggler analyses use: 5% / 20% of step time for input wait, 3% / 15% for launch and exposed collectives),
    times how sure the profiled steps make us that the level is typical of the run (`typical_share`).
  - specificity: how strongly that signature points at this cause rather than another (the table
    knowledge.signatures.SPECIFICITY, e.g. a synchronized *periodic* drop → periodic_stall 0.6, data_starvation 0.35; a
    synchronized *irregular* drop → data_starvation 0.55). A direct measurement of the cause (checkpoint events
    logged at the slow steps, GC events in the spikes, Xid-like loss of a GPU) has specificity ≈ 0.9.
  - impact: 1 - exp(-lost / 5%), where `lost` is the share of throughput the signature costs (time spent in the
    low state × depth of the drop, or the slow steps' extra time). A pattern costing 5% scores 0.63 of its
    maximum, 10% → 0.86, 1% → 0.18: a real but negligible pattern does not outrank "healthy".
* Items for the same hypothesis combine as independent pieces of support (noisy-OR): 1 - Π(1 - strength).
* `healthy` scores 1 - P(something is wrong), where P(something is wrong) is the noisy-OR over the distinct
  signatures of confidence × impact (the strength before specificity): an oscillation that certainly costs 17%
  leaves little room for "healthy" even when its cause is uncertain. It comes first only when the findings are
  weak or cheap: never while P(something is wrong) ≥ 0.5 (the best-supported cause then leads, even when its
  share of the support is below healthy's score).
* `insufficient_data` (when the inputs cannot show the signatures at all: host metrics only, three polls, a
  CPU-only trace) scores 1 - P(something is wrong) in healthy's place, and healthy is capped at 0.5.

`next_step` is the measurement that would confirm or refute the hypothesis (specialised with the numbers found:
period, N steps, the guilty GPU or host); `notebook` the lab that reproduces and fixes it.
"""


from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from playbook.diagnosis.findings import Finding
from playbook.knowledge import ids as cause_ids
from playbook.knowledge.causes import CAUSES, DIAGNOSIS_IDS
from playbook.knowledge.signatures import SPECIFICITY

VERDICTS = (cause_ids.HEALTHY, cause_ids.INSUFFICIENT_DATA, cause_ids.UNEXPLAINED_SLOWDOWN)  # what the ranking says when no cause wins, not causes
IMPACT_SCALE = 0.05


@dataclass
class Evidence:
    """One reading of a Finding for one hypothesis (the ranker's unit); `anomaly` = confidence × impact of the
    signature itself (how sure we are that *something* is wrong, whatever the cause)."""

    hypothesis: str
    strength: float
    text: str
    next_step: str | None = None
    anomaly: float | None = None
    observation: str | None = None  # one observation read several ways shares this key (counted once as an anomaly)
    lost: float | None = None  # share of GPU time / throughput the observation costs (0-1), None when unknown
    finding: Finding | None = None  # the analyzer's finding this reading comes from

    @property
    def key(self) -> str:
        return self.observation or self.text


def impact(lost_fraction: float | None) -> float:
    """1 - exp(-lost / 5%): how much a signature costing `lost_fraction` of throughput counts (0-1)."""
    if lost_fraction is None or not np.isfinite(lost_fraction) or lost_fraction <= 0:
        return 0.0
    return float(1 - math.exp(-lost_fraction / IMPACT_SCALE))


def confidence(p_value: float | None) -> float:
    """How sure a test with this p-value makes us that the signature is there (0-1); unknown p → 0.5.

    1 - p is not a probability of anything and overstates weak tests (p = 0.1 → 0.9). The calibration of Sellke,
    Bayarri & Berger (2001) bounds the Bayes factor in favour of "no signature" by B(p) = -e p ln p (p < 1/e), so
    at even prior odds P(signature | p) ≤ 1 / (1 + B(p)): p = 0.125 → 0.59, 0.05 → 0.71, 0.01 → 0.89,
    0.001 → 0.98, 1e-6 → 1.00 (capped by 1 - p for large p). Three polls can thus only give modest confidence,
    hundreds a high one."""
    if p_value is None or not np.isfinite(p_value):
        return 0.5
    p = min(max(float(p_value), 0.0), 1.0)
    if p <= 0.0:
        return 1.0
    bound = 1.0 / (1.0 - math.e * p * math.log(p)) if p < 1 / math.e else 0.5
    return float(min(1.0 - p, bound))


def typical_share(k: int, n: int) -> float:
    """P(most steps of the run reach a level | k of n profiled steps did), with a uniform prior on that share:
    P(Beta(k+1, n-k+1) > 1/2) = P(Binomial(n+1, 1/2) ≤ k). One step → 0.75, 2 of 2 → 0.88, 5 of 5 → 0.98: a
    finding from a window of one or two steps (perhaps the warm-up) counts for less than one seen step after
    step."""
    if n <= 0:
        return 1.0
    k = min(max(k, 0), n)
    return float(sum(math.comb(n + 1, i) for i in range(k + 1)) / 2 ** (n + 1))


def support(signature: str, conf: float, weight: float, text: str, next_step: str | None = None,
            only: str | None = None, readings: dict[str, tuple[str, str | None]] | None = None,
            anomaly: float | None = None, lost: float | None = None, p_value: float | None = None,
            names: tuple[str, ...] = ()) -> list[Evidence]:
    """The per-cause readings (Evidence) of one Finding built from these fields: see `expand`."""
    return expand(Finding(signature, text, conf, weight, p_value=p_value, lost_share=lost, names=tuple(names),
                          next_step=next_step, readings=readings, only=only, anomaly=anomaly))


def expand(f: Finding) -> list[Evidence]:
    """Evidence items for every cause the finding's signature points at (SPECIFICITY; a cause id as signature
    points at that cause alone), strength confidence × specificity × weight.

    The evidence text and next step are the reading for the signature's most specific cause; `readings` gives
    another cause its own (text, next step) — how the same observation reads for it and the measurement that
    would tell it apart. A cause without a reading keeps the text and gets its own generic next step
    (the catalog's), never another cause's. `anomaly` overrides confidence × weight (0: the observation is no sign by
    itself that anything is wrong). Without `lost_share`, the share the weight stands for when the weight is
    impact(lost) (its inverse, -5% × ln(1 - weight))."""
    out = []
    conf, weight = f.confidence, f.weight
    anomaly = float(np.clip(conf * weight if f.anomaly is None else f.anomaly, 0.0, 1.0))
    table = SPECIFICITY.get(f.signature) or ({f.signature: 1.0} if f.signature in DIAGNOSIS_IDS else {})
    primary = max(table, key=table.get) if table else None
    lost = f.lost_share if f.lost_share is not None else _implied_lost(weight)
    for hyp, spec in table.items():
        if f.only is not None and hyp != f.only:
            continue
        s = float(np.clip(conf * spec * weight, 0.0, 1.0))
        if s <= 0:
            continue
        if f.readings and hyp in f.readings:
            t, nxt = f.readings[hyp]
        else:
            t, nxt = f.evidence, (f.next_step if hyp == primary or f.only == hyp else None)
        out.append(Evidence(hyp, s, t, nxt, anomaly, f.evidence, lost, f))
    return out


def observations(evidence: list[Evidence | Finding]) -> dict[str, set[str]]:
    """Per hypothesis, the keys of the observations its evidence reads: one observation read several ways (a
    Finding's `readings`) keeps one key across the causes it points at, whatever each reading's text says."""
    out: dict[str, set[str]] = {}
    for e in _expanded(evidence):
        out.setdefault(e.hypothesis, set()).add(e.key)
    return out


def _expanded(evidence: list[Evidence | Finding]) -> list[Evidence]:
    """Every Finding expanded into its per-cause readings; Evidence items as they are."""
    return [x for e in evidence for x in (expand(e) if isinstance(e, Finding) else [e])]


def _implied_lost(weight: float) -> float | None:
    """The lost share impact() maps to `weight` (None for weights ≥ 0.999, where the inverse says nothing)."""
    if not np.isfinite(weight) or weight <= 0 or weight >= 0.999:
        return None
    return float(-IMPACT_SCALE * math.log(1 - weight))


def rank(evidence: list[Evidence | Finding], healthy_evidence: list[str] | None = None,
         untestable: str | None = None) -> list[dict]:
    """Hypotheses sorted by score (noisy-OR of their evidence), `healthy` scored 1 - P(something is wrong).

    `untestable` (a reason) says the data were too few to look for the signatures at all: finding nothing then is
    no evidence of health, so `healthy` scores at most 0.5 — the confidence of an untested p-value."""
    evidence = _expanded(evidence)
    by: dict[str, list[Evidence]] = {}
    for e in evidence:
        if e.hypothesis not in DIAGNOSIS_IDS or e.hypothesis in VERDICTS:
            continue
        by.setdefault(e.hypothesis, []).append(e)
    out = []
    for hyp, items in by.items():
        items.sort(key=lambda e: -e.strength)
        score = 1.0 - float(np.prod([1.0 - e.strength for e in items]))
        if score <= 0.005:
            continue
        texts = list(dict.fromkeys(e.text for e in items))
        nxt = next((e.next_step for e in items if e.next_step), None)
        losts = [e.lost for e in items if e.lost is not None and np.isfinite(e.lost)]
        names = list(dict.fromkeys(n for e in items if e.finding is not None for n in e.finding.names))
        out.append(hypothesis(hyp, score, texts, nxt, round(min(max(losts), 1.0), 4) if losts else None, names))
    # healthy: 1 - P(something is wrong), the noisy-OR of each distinct signature's anomaly (which is at least
    # as large as any single cause's score, since a signature's support is split between its causes)
    anomalies: dict[str, float] = {}
    for e in evidence:
        if e.hypothesis in by:
            a = e.anomaly if e.anomaly is not None else e.strength
            anomalies[e.key] = max(anomalies.get(e.key, 0.0), a)
    wrong = 1.0 - float(np.prod([1.0 - a for a in anomalies.values()])) if anomalies else 0.0
    best = max((h["score"] for h in out), default=0.0)
    wrong = max(wrong, best)
    healthy_texts = list(healthy_evidence or [])
    healthy_score = 1.0 - wrong
    if untestable:
        # the inputs cannot show the signatures at all: what is not "wrong" is unknown, not healthy
        out.append(hypothesis(cause_ids.INSUFFICIENT_DATA, 1.0 - wrong,
                               [f"{untestable}: finding nothing is no evidence of health"]))
        healthy_score = min(healthy_score, 0.5)  # untested: no more than the confidence of an untested p-value
        healthy_texts.append(f"{untestable}: finding nothing is no evidence of health (score at most 0.5)")
    if best > 0:
        top = max(out, key=lambda h: h["score"])
        healthy_texts.append(f"something is wrong with probability {wrong:.2f}; strongest cause: {top['id']} "
                             f"at {top['score']:.2f}")
    out.append(hypothesis(cause_ids.HEALTHY, healthy_score, healthy_texts or ["no finding points at a cause"]))
    out.sort(key=lambda h: (-h["score"], h["id"] not in VERDICTS, h["id"] != cause_ids.HEALTHY, h["id"]))
    causes = [h for h in out if h["id"] not in VERDICTS]
    if wrong >= 0.5 and causes and out[0] is not causes[0]:
        # more likely wrong than right: the best-supported cause leads even when the support is split between
        # causes (each below healthy's share); the verdicts follow it
        out.remove(causes[0])
        out.insert(0, causes[0])
    return out



def hypothesis(cause_id: str, score: float, evidence: list[str], next_step: str | None = None,
                lost_share: float | None = None, names: list[str] | tuple[str, ...] = ()) -> dict:
    """One ranked hypothesis: the score and evidence found, the catalog's fix, lab and command (its next step
    unless the evidence names a more specific one); `names` keeps the first 16, `named` counts them all."""
    c = CAUSES[cause_id]
    return {"id": cause_id, "score": round(score, 3), "evidence": evidence, "next_step": next_step or c.next_step,
            "fix": c.fix, "notebook": c.notebook, "command": c.command, "lost_share": lost_share,
            "names": list(names)[:16], "named": len(names)}


def discount(evidence: list[Evidence], explained: dict[str, float]) -> list[Evidence]:
    """Scale evidence for other causes by the share of slow steps the step analysis did not explain."""
    rest = max(0.0, 1.0 - sum(explained.values()))
    if not explained:
        return evidence
    return [e if e.hypothesis in explained else
            Evidence(e.hypothesis, e.strength * rest, e.text, e.next_step, e.anomaly, e.observation, e.lost,
                     e.finding)
            for e in evidence]
