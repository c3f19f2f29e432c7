"""Fault events as Findings: what the logs state outright (the readers' event lexicon) is evidence by itself.

One Finding per event kind of playbook.knowledge.causes.FAULT_EVENTS: the cause the catalog gives the kind, its confidence,
a weight that does not depend on time lost (a failing GPU is a finding even when the run died before losing any),
the ranks and hosts it names (not for an event the waiting ranks log, causes.WAITERS_EVENTS) and the first line as
evidence. Xid codes that report the application's own error
(playbook.knowledge.causes.APPLICATION_XIDS) are left out.
"""

from __future__ import annotations

import re

import pandas as pd

from playbook.diagnosis.findings import Finding
from playbook.knowledge.causes import APPLICATION_XIDS, FAULT_EVENTS, WAITERS_EVENTS, cause_of_event

XID_CODE = re.compile(r"\bXid\b[^:]*(?:\([^)]*\))?\s*:\s*(\d{1,4})\b", re.IGNORECASE)
FAULT_WEIGHT = 0.9  # a stated fault counts nearly fully, whatever it cost


def from_fault_events(events: pd.DataFrame) -> list[Finding]:
    """One Finding per fault event kind found in `events` (see the module docstring)."""
    kinds = events["kind"].astype(str).str.lower()
    out = []
    for kind, conf in FAULT_EVENTS.items():
        rows = events[kinds == kind]
        if kind == "xid" and len(rows):
            codes = rows["detail"].astype(str).str.extract(XID_CODE)[0]
            rows = rows[~codes.astype(float).isin(APPLICATION_XIDS)]
        cid = cause_of_event(kind)
        if rows.empty or cid is None:
            continue
        names = [] if kind in WAITERS_EVENTS else list(dict.fromkeys(
            f"rank {int(r)}" if int(r) >= 0 else str(h) for r, h in zip(rows["rank"], rows["host"], strict=True)))
        first = str(rows["detail"].iloc[0])[:200]
        out.append(Finding(cid, f"{len(rows)} {kind} event{'s' if len(rows) > 1 else ''} in the logs: {first}",
                           confidence=conf, weight=FAULT_WEIGHT, lost_share=0.0, names=tuple(names[:16]),
                           source="events",
                           anomaly=conf * FAULT_WEIGHT))
    return out
