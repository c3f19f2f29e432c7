"""Local timestamps across a daylight-saving change: the hour written twice is read as two hours, in file order."""
from __future__ import annotations

import pandas as pd

from playbook.readers import read_paths
from playbook.readers.local_time import localize

# Europe/Berlin falls back on 2024-10-27: 03:00 CEST -> 02:00 CET, so 02:00-02:59 local happens twice
_FALL = ["01:59:00", "02:30:00", "02:59:30", "02:00:30", "02:30:00", "03:00:00"]
_UTC = ["23:59:00", "00:30:00", "00:59:30", "01:00:30", "01:30:00", "02:00:00"]


def test_repeated_hour_is_resolved_by_order_and_skipped_hour_is_nat():
    days = ["2024-10-26"] + ["2024-10-27"] * 5
    s = pd.Series(pd.to_datetime([f"2024-10-27 {t}" for t in _FALL]))
    out = localize(s, "Europe/Berlin")
    assert [f"{x:%Y-%m-%d %H:%M:%S}" for x in out] == [f"{d} {t}" for d, t in zip(days, _UTC, strict=True)]
    assert localize(pd.Series(pd.to_datetime(["2024-03-31 02:30:00"])), "Europe/Berlin").isna().all()


def _utc_times(frame) -> list[str]:
    return [f"{x:%H:%M:%S}" for x in frame["time"]]


def test_readers_keep_every_row_of_the_repeated_hour(tmp_path):
    smi = tmp_path / "node1.csv"
    smi.write_text("timestamp, index, utilization.gpu [%]\n"
                   + "".join(f"2024/10/27 {t}.000, 0, 50 %\n" for t in _FALL))
    generic = tmp_path / "gpu.csv"
    generic.write_text("time,gpu,util\n" + "".join(f"2024-10-27 {t},0,50\n" for t in _FALL))
    log = tmp_path / "steps.jsonl"
    log.write_text("".join(f'{{"time": "2024-10-27 {t}", "step": {i}, "step_time": 0.5}}\n' for i, t in enumerate(_FALL, 1)))
    for path in (smi, generic):
        b = read_paths([path], tz="Europe/Berlin")
        assert _utc_times(b.telemetry) == _UTC, path.name
        assert not [w for w in b.warnings if "does not exist" in w]
    steps = read_paths([log], tz="Europe/Berlin").steps
    assert len(steps) == len(_FALL) and steps["time"].is_monotonic_increasing


def test_text_log_lines_across_the_repeated_hour_keep_their_order_and_durations(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"2024-10-27 {t} step {i} step_time: 0.5s\n" for i, t in enumerate(_FALL, 1)))
    steps = read_paths([log], tz="Europe/Berlin").steps
    assert [f"{x + pd.Timedelta(seconds=0.5):%H:%M:%S}" for x in steps["time"]] == _UTC
