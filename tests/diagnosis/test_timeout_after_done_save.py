"""A watchdog timeout beside a checkpoint save whose own line states it done in a few seconds
(evidence/from_events.timeout_after_save): the save ended long before the timeout ran out, so the ranks did not wait
the timeout for a rank still saving. LABELED SYNTHETIC: PyTorch's watchdog line, a trainer's save lines."""

from __future__ import annotations

import pandas as pd

from playbook.diagnosis.evidence.from_events import timeout_after_save

WATCHDOG = ("[Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1512677, OpType=ALLREDUCE, "
            "NumelIn=306176, NumelOut=306176, Timeout(ms)=1200000) ran for 1200027 milliseconds before timing out.")


def _events(save_s: float) -> pd.DataFrame:
    return pd.DataFrame({"kind": ["checkpoint", "nccl_timeout"],
                         "time": pd.to_datetime(["2026-02-18 10:27:58.000", "2026-02-18 10:48:25.681"], utc=True),
                         "duration_s": [save_s, float("nan")],
                         "detail": ["line 1: Saving checkpoint to /ck/step_1000.pt", f"line 3: {WATCHDOG}"]})


def test_a_save_stated_done_in_seconds_is_not_what_the_timeout_waited_for():
    assert timeout_after_save(_events(2.0)) == []


def test_a_save_of_unknown_or_long_seconds_still_names_the_save():
    assert timeout_after_save(_events(float("nan")))
    assert timeout_after_save(_events(1500.0))
