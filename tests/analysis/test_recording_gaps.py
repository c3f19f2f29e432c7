"""A recording with no sample at all for longer than chance allows (the logger stopped, or the job was down) is
said by `info` and warned by `diagnose`; lost polls, jitter and GPUs stamped a few ms apart are not gaps."""

from __future__ import annotations

import json

import numpy as np

from playbook import cli
from playbook.analysis.intervals import recording_gaps

S = 10**9


def _smi(path, seconds) -> None:
    t0 = np.datetime64("2026-11-01T10:00:00")
    with open(path, "w") as fh:
        fh.write("timestamp, index, utilization.gpu [%], power.draw [W]\n")
        for s in seconds:
            for gpu in range(2):
                stamp = str(t0 + np.timedelta64(int(s * 1000) + gpu, "ms")).replace("-", "/").replace("T", " ")
                fh.write(f"{stamp}, {gpu}, 95 %, 300.0 W\n")


def test_a_six_hour_hole_is_a_gap():
    t = np.r_[np.arange(600), np.arange(600 + 6 * 3600, 1200 + 6 * 3600)] * S
    start, end = recording_gaps(t, 1.0)
    assert list(start) == [599 * S] and list(end) == [(600 + 6 * 3600) * S]


def test_lost_polls_jitter_and_staggered_gpus_are_no_gap():
    rng = np.random.default_rng(0)
    polls = np.arange(20_000)[rng.random(20_000) > 0.05]  # 5% of polls lost at random
    t = (polls * S + rng.integers(0, S // 10, len(polls)))[:, None] + np.arange(8)[None, :] * 2_000_000  # 8 GPUs 2 ms apart
    assert len(recording_gaps(t.ravel(), 1.0)[0]) == 0


def test_a_short_hole_moves_no_share_and_is_no_gap():
    t = np.r_[np.arange(3600), np.arange(3620, 7200)] * S  # 20 s of 2 h: under the 1% noise floor
    assert len(recording_gaps(t, 1.0)[0]) == 0


def test_info_and_diagnose_say_the_gap(tmp_path, capsys):
    path = tmp_path / "smi.csv"
    _smi(path, list(range(600)) + list(range(600 + 3 * 3600, 1200 + 3 * 3600)))
    assert cli.main(["info", str(path)]) == 0
    assert "no sample at all for 3.0 h from 2026-11-01T10:09:59.001Z" in capsys.readouterr().out
    assert cli.main(["info", str(path), "--json"]) == 0
    gaps = json.loads(capsys.readouterr().out)["tables"]["telemetry"]["by_source"][0]["gaps"]
    assert len(gaps) == 1 and abs(gaps[0]["seconds"] - (3 * 3600 + 1)) < 0.01, gaps  # last sample before → first after
    cli.main(["diagnose", str(path)])
    assert "no sample from any GPU for 3.0 h from 2026-11-01 10:09:59 UTC" in capsys.readouterr().err
