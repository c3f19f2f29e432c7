"""Turn-taking: swinging GPUs busy one at a time, almost never together.

One model split layer-wise over several GPUs without a pipeline schedule (Hugging Face `device_map="auto"`, naive
model parallelism) runs its stages in sequence: each GPU works while the others wait for it, so the busy intervals
of the GPUs hardly overlap. GPUs on schedules of their own (per-rank input pipelines) overlap by chance as often as
independence predicts, and data-parallel ranks overlap more (they start each step together; a rank waiting in a
collective even reads busy, NCCL's kernels spinning). The test compares the share of time with two or more GPUs busy
with the share that independent GPUs of the same duty cycles would give (a Poisson-binomial sum), on an effective
sample size that discounts the states' autocorrelation.
"""

from __future__ import annotations

import numpy as np

from playbook.analysis.oscillation import ALPHA
from playbook.analysis.stats import binom_sf, effective_n

# Turn-taking needs the overlap well under chance, not just significantly under it: GPUs whose busy times merely
# repel a little (a shared CPU slowing whichever loader runs) are not stages in sequence. Independent schedules give
# a ratio of 1 on average (0.8-1.2 measured on tests/analysis/test_turns.py's random telegraph GPUs); stages in
# sequence give 0, except where a poll straddles a hand-off and reads both GPUs busy: with bursts of 2-4 polls the
# ratio measured ~0.25 when a quarter of the hand-offs straddle and ~0.45-0.5 when half do (same test file's drawing).
MAX_OVERLAP_RATIO = 0.5


def turn_taking(grid: np.ndarray, corr_bins: np.ndarray, alpha: float = ALPHA) -> dict | None:
    """{'rows', 'overlap', 'expected', 'p_value'} when the rows of a state grid (1 high, 0 low, -1 unknown) are
    high together significantly and substantially less often than independent rows of the same duty cycles;
    else None. overlap / expected: shares of the bins (with every row known) with two or more rows high;
    corr_bins: each row's correlation time in bins (synchrony.correlation_bins)."""
    if grid.shape[0] < 2:
        return None
    known = (grid >= 0).all(0)
    n = int(known.sum())
    if n < 2:
        return None
    high = grid[:, known] == 1
    duty = high.mean(1)
    if (duty <= 0).any() or (duty >= 1).any():
        return None
    none = float(np.prod(1 - duty))
    one = none * float(np.sum(duty / (1 - duty)))
    expected = 1.0 - none - one
    overlap = float((high.sum(0) >= 2).mean())
    # AR(1) variance inflation at the rows' mean correlation time (lag-1 autocorrelation exp(-1 / tau))
    n_eff = max(int(effective_n(n, float(np.exp(-1.0 / max(float(np.mean(corr_bins)), 1e-9))))), 1)
    p_value = 1.0 - binom_sf(int(round(overlap * n_eff)) + 1, n_eff, expected)  # P(X <= k)
    if p_value >= alpha or overlap > MAX_OVERLAP_RATIO * expected:
        return None
    return {"rows": list(range(grid.shape[0])), "overlap": overlap, "expected": expected, "p_value": p_value}
