"""A restart's cost as a Finding (restart_loss): the `resume` and `worker_restart` events readers/restart_lines.py
reads from a trainer's and a launcher's own statements, priced against the run's steady pace.

What a restart costs each GPU, against the what-if of a run that never stopped:
  - steps computed again: a checkpoint of step C loaded and the count starting again at S ≤ C runs C - S + 1 steps a
    second time, each at the run's median step time (the steps the log holds; without step times the count is
    stated and the seconds are not);
  - a resume's own stated seconds (the data fast-forward, the checkpoint load: "resume finished, taken 22534 s");
  - a fast-forward of B batches without a stated duration: the GPUs wait while the loader replays them (its seconds
    unknown: stated, not priced; a first step record within CHEAP_RESUME_S of the load bounds it: cheap);
  - the time without a step from the last step before the restart to the first after (the downtime: the
    relaunch, a requeue's wait, the reload; a stated resume time is part of it, not added to it);
  - a launcher's worker restart the log ends on: at least the time it shows, the rest in no line (not priced).
A restart that costs none of these (the count continues from the checkpoint's step, no fast-forward, back under
CHEAP_RESUME_S) is a cheap, healthy restart: no finding. The share is against the time the log observed: the accounting's
wall time, else the steps' summed time, else the restart's cost alone (all of what the log shows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.analysis.gpus import fmt_span
from playbook.diagnosis.findings import Finding
from playbook.diagnosis.ranking import impact
from playbook.knowledge import ids as cause_ids
from playbook.readers import restart_lines

KINDS = ("resume", "worker_restart")
CONFIDENCE = 0.85  # the trainer or launcher states the restart itself; what it cost is read from its own figures
UNPRICED_WEIGHT = 0.9  # a stated restart whose cost the log cannot price counts as a stated fault does
EVIDENCE_KEPT = 3
# a resume's stated seconds below this, with nothing computed again and no fast-forward, are the reload any restart
# pays (torchtitan's "Finished loading the checkpoint in 3.2 seconds"): a cheap restart, no finding
CHEAP_RESUME_S = 60.0


def pace(steps: pd.DataFrame | None) -> float | None:
    """The run's median step time (s) from its step rows, None without one."""
    if steps is None or not len(steps) or "duration_s" not in steps:
        return None
    sel = steps["phase"] == "step" if "phase" in steps else slice(None)
    d = steps.loc[sel, "duration_s"].astype(float)
    d = d[np.isfinite(d) & (d > 0)]
    return float(d.median()) if len(d) else None


def restart_findings(events: pd.DataFrame, steps: pd.DataFrame | None, observed_s: float | None = None) -> list[Finding]:
    """One restart_loss Finding for the restarts the events state, or none when every restart was cheap (see the
    module docstring). `observed_s`: the time the inputs observed (the accounting's wall time) when known;
    extra["lost_s"] holds the priced seconds (per GPU)."""
    if events is None or events.empty:
        return []
    rows = events[events["kind"].astype(str).isin(KINDS)]
    if rows.empty:
        return []
    step_s = pace(steps)
    # ranks state the same restart side by side (each rank's `Loading the checkpoint at step N`): a GPU's loss is its
    # own rank's restarts, so the cost is the costliest rank's, not the sum over ranks
    who = _who(rows)
    per: dict[tuple, float] = {}
    count: dict[tuple, int] = {}
    unpriced, texts = False, []
    for kind, detail, key in zip(rows["kind"].astype(str), rows["detail"].astype(str), who, strict=True):
        f = restart_lines.figures(detail)
        redone, took, skipped = f.get("redone", 0.0), f.get("took", 0.0), f.get("skipped", 0.0)
        # the time without a step holds the reload and any stated resume time: the larger of the two, not both
        cost = max(took, f.get("down", 0.0))
        if kind != "resume" and f.get("down_open", 1.0):
            unpriced = True  # the log ends before the workers step again: the rest of the wait is in no line
        elif not (redone or cost >= CHEAP_RESUME_S or (skipped and f.get("first", np.inf) >= CHEAP_RESUME_S)):
            # resumed where it stopped, back within a minute (a fast-forward whose first step came within it too:
            # the skip lies before that step): a cheap restart
            continue
        if redone:
            if step_s is not None:
                cost += redone * step_s
                detail += f" ≈ {fmt_span(redone * step_s)} at the run's {step_s:.3g} s per step"
            else:
                unpriced = True
        unpriced |= bool(skipped and not took)
        per[key] = per.get(key, 0.0) + cost
        count[key] = count.get(key, 0) + 1
        texts.append(detail)
    if not texts:
        return []
    # a line of no rank (a launcher's, a single-process trainer's) is every GPU's: added to the costliest rank's
    anyone = [k for k in per if k[1] is None or k[1] < 0]
    ranked = {k: v for k, v in per.items() if k not in anyone}
    lost = sum(per[k] for k in anyone) + max(ranked.values(), default=0.0)
    if observed_s is None and steps is not None and len(steps) and step_s is not None and "phase" in steps:
        st = steps[steps["phase"] == "step"]
        observed_s = float(st["duration_s"].astype(float).clip(lower=0).groupby(pd.Index(_who(st))).sum().max()) \
            if len(st) else None  # one GPU's logged time, as `lost` is one GPU's
    share = lost / (lost + observed_s) if lost > 0 and observed_s else (1.0 if lost > 0 else None)
    weight = max(impact(share), UNPRICED_WEIGHT if unpriced else 0.0) if share is not None else UNPRICED_WEIGHT
    n = sum(count[k] for k in anyone) + max((count[k] for k in ranked), default=0)  # the restarts one GPU went through
    head = (f"{n} restart{'s' if n > 1 else ''} stated in the logs"
            + (f" (each stated by {len(ranked)} ranks)" if len(ranked) > 1 else "")
            + (f", ≈ {fmt_span(lost)} of each GPU's time priced" if lost > 0 else "")
            + (" (part of the cost is in no line: the progress since the last checkpoint, or a fast-forward's "
               "seconds)" if unpriced else ""))
    return [Finding(cause_ids.RESTART_LOSS, f"{head}: " + "; ".join(texts[:EVIDENCE_KEPT]), confidence=CONFIDENCE,
                    weight=weight, lost_share=share, source="events", extra={"lost_s": lost, "unpriced": unpriced})]


def _who(rows: pd.DataFrame) -> list[tuple]:
    """Each row's (host, rank): the GPU whose time it is (one key for all when the rows name none)."""
    host = rows["host"].astype(str) if "host" in rows else pd.Series("", index=rows.index)
    rank = rows["rank"].fillna(-1).astype(int) if "rank" in rows else pd.Series(-1, index=rows.index)
    return list(zip(host, rank, strict=True))
