"""What a run does once per epoch, costed against the epoch it belongs to when a log holds less than one epoch.

A step log's excerpt of a few minutes around an epoch's end holds the epoch's once-only work at full size — the save
at its end (LLaMA2-Accessory#48: 211 s of `optimizer saved` / `rank-specific saved` after a 1:52 h epoch), the
evaluation pass, the loader's restart at the next epoch's first batch — against a few minutes of steps: 42 % of the
excerpt, 3 % of the run. Where the log states its epochs' length (`[i/N]` counters: readers/step_log/epoch_length.py)
and its wall time is shorter than one epoch at the steady pace, a bucket whose every step sits at an epoch boundary
(the rows on either side of it belong to different epochs) is costed against that epoch: its seconds / (N × the
steady step + its seconds). Up to EPOCH_WORK_MAX it is the epoch's own work, stated with its cost and not the run's
loss (the same as any per-epoch save or evaluation inside a whole-epoch log, where the epochs' steps dilute it);
above it, it stays what attribution made of it. A log of one epoch or more keeps its own mix: its wall time already
counts the epochs around the once-per-epoch work."""

from __future__ import annotations

import numpy as np

from playbook.analysis.accounting import Accounting
from playbook.knowledge import ids as cause_ids
from playbook.model import schema

# a once-per-epoch cost up to this share of its epoch is the epoch's work, not the run's loss: the budget commonly
# set for periodic checkpointing (its overhead kept under ~5 % of training time), and the ranking's own scale of a
# loss that matters (diagnosis/ranking.py IMPACT_SCALE)
EPOCH_WORK_MAX = 0.05


def amortize(acc: Accounting, bundle: schema.Bundle) -> None:
    """Buckets of a less-than-an-epoch log that sit at its epoch boundaries, within EPOCH_WORK_MAX of their epoch:
    cause "healthy", the evidence stating the epoch's length and the share (see the module docstring)."""
    sizes = set((bundle.meta.get(schema.EPOCH_STEPS) or {}).values())
    if acc.basis != "wall" or len(sizes) != 1 or not acc.interval_s > 0 or bundle.steps is None:
        return
    n = int(next(iter(sizes)))
    epoch_s = n * acc.interval_s
    if acc.span_s >= epoch_s:
        return
    logged = np.unique(bundle.steps.loc[bundle.steps["phase"] == "step", "step"].to_numpy(dtype=np.int64))
    for b in acc.buckets:
        if b.cause == cause_ids.HEALTHY or not b.steps or not all(at_boundary(s, logged, n) for s in b.steps):
            continue
        share = b.seconds / (epoch_s + b.seconds)
        if share > EPOCH_WORK_MAX:
            continue
        was = f"read as {b.cause.replace('_', ' ')}" if b.cause and b.cause != "unexplained" else "unexplained"
        b.evidence = (f"once per {n}-step epoch, at its boundary: {b.seconds:.3g} s against the epoch's "
                      f"{_span(epoch_s)} at the steady pace ({share:.1%} of an epoch; the log holds less than one "
                      f"epoch, {was} within it) — the epoch's own work (its save, its evaluation, the loader's "
                      "restart), not the run's loss")
        b.cause = cause_ids.HEALTHY


def at_boundary(step: int, logged: np.ndarray, n: int) -> bool:
    """Whether a logged step sits at an epoch boundary: the logged row before or after it is in another epoch."""
    k = int(np.searchsorted(logged, step))
    here = step // n
    before = logged[k - 1] // n if k > 0 else here
    after = logged[k + 1] // n if k + 1 < len(logged) else here
    return bool(before != here or after != here)


def _span(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"
