"""The analyzers' adapters: each from_* function states one analyzer's result as Evidence for the ranker
(diagnosis.ranking): the signature seen (a key of knowledge.signatures.SPECIFICITY), its confidence (ranking.confidence of the
analysis's p-value, or the level of a thresholded measurement), its cost (ranking.impact of the share of GPU time
lost), the evidence text and the measurement that would confirm it. One module per kind of input:

  telemetry    GPU telemetry: the oscillation (synchrony, period) and the per-GPU status table (analysis.gpus)
  steps        step timings: periodic slow steps, GC, level shift / creep, recompiles, phase shares
  coincidence  utilization drops against logged events and host activity
  traces       Kineto idle time and the trace / straggler / NCCL analyses' findings

This module holds only what they share (the significance level, confidence levels, text helpers).
"""

from __future__ import annotations

import numpy as np

ALPHA = 0.01  # a coincidence of events or host activity with the drops counts below this p-value
LEVEL_CONFIDENCE = {"moderate": 0.4, "high": 0.85}


def _ids(ids: list[str], limit: int = 6) -> str:
    ids = list(ids)
    if len(ids) <= limit:
        return ", ".join(ids)
    return ", ".join(ids[:limit]) + f" and {len(ids) - limit} more"


def _hosts_of(ids: list[str]) -> set[str]:
    return {i.rsplit(":", 1)[0] for i in ids}


def _p(p: float | None) -> str:
    if p is None or not np.isfinite(p):
        return "untested"
    return f"p = {p:.1g}" if p >= 1e-300 else "p < 1e-300"
