"""A log's own wall clock in forms read since clock2 (tests/data/clock2/SOURCES.md, expected.json): stamps without a
date (glog's month-day, logback's / logging's time of day, `%m-%d`) placed on a calendar that rolls over midnight and
New Year, and a tqdm bar's smoothed rate undone against its elapsed clock (readers/step_log/bar_rate.py). Each case
failed on the code before (the first try in expected.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from playbook.readers import lines
from playbook.readers.line_prefix import LEAP_YEAR, NAT, Prefix
from playbook.readers.textio import SYNTHETIC_EPOCH

DATA = Path(__file__).resolve().parents[1] / "data"
CLOCK2 = DATA / "clock2"
EXPECTED = json.loads((CLOCK2 / "expected.json").read_text())
S = 1_000_000_000


def _times(raw_lines: list[str], tz: str = "UTC") -> list[int]:
    p = Prefix(tz)
    return [p.split(line)[1] for line in raw_lines]


def test_time_of_day_rolls_over_midnight_and_states_its_placement():
    p = Prefix()
    t = [p.split(f"{hms} [main] INFO  o.d.Listener - iteration {i}; iteration time: 40 ms")[1]
         for i, hms in enumerate(("23:59:58.800", "23:59:59.900", "00:00:00.150", "00:00:01.000"), start=1)]
    assert t[0] == SYNTHETIC_EPOCH.value + (86_400 - 1.2) * S
    assert np.diff(t).tolist() == [int(1.1 * S), int(0.25 * S), int(0.85 * S)]  # midnight: the next day
    assert "date unknown" in p.undated and p.kinds.get("time of day") == 4
    # a fall of less than 12 h is a line out of order on the same day, not a day later
    back = _times(["10:00:05 | INFO | step 1", "09:59:58 | INFO | step 2"])
    assert back[1] - back[0] == -7 * S


def test_an_elapsed_clock_past_24_hours_runs_on():
    # LABELED SYNTHETIC (review6): `[HH:MM:SS]` counting from the start passes 23:59:59 as `[24:00:04]`: the lines
    # after it had no time, without a word
    t = _times(["[23:59:55] step 1 loss 2.3", "[24:00:04] step 2 loss 2.3", "[25:00:04] step 3 loss 2.3"])
    assert np.diff(t).tolist() == [9 * S, 3600 * S]


def test_time_of_day_after_a_dated_line_takes_its_day():
    t = _times(["2024-03-09 23:59:50,000 - INFO - start", "23:59:55 INFO step 1", "00:00:04 INFO step 2"])
    day = pd.Timestamp("2024-03-09", tz="UTC").value
    assert t == [day + (86_400 - 10) * S, day + (86_400 - 5) * S, day + (86_400 + 4) * S]


def test_month_day_without_a_year_rolls_into_the_next_year():
    glog = ["I1231 23:59:59.500000 77 solver.cpp:228] Iteration 10, loss = 2.1",
            "I0101 00:00:04.500000 77 solver.cpp:228] Iteration 20, loss = 2.0",
            "I0229 12:00:00.000000 77 solver.cpp:228] Iteration 30, loss = 1.9"]
    t = _times(glog)
    assert t[0] == pd.Timestamp(f"{LEAP_YEAR}-12-31 23:59:59.5", tz="UTC").value
    assert t[1] - t[0] == 5 * S
    assert t[2] == pd.Timestamp(f"{LEAP_YEAR + 1}-03-01 12:00", tz="UTC").value  # 1973 has no Feb 29: the day after
    # a full date earlier in the file gives the year (as before); `%m-%d %H:%M:%S` reads the same way
    dated = _times(["[2019-08-15 20:00:00] start", "I0815 20:41:26.810891 5 solver.cpp:232] Iteration 1660"])
    assert dated[1] == pd.Timestamp("2019-08-15 20:41:26.810891", tz="UTC").value
    assert _times(["09-24 22:50:46 Epoch 0/7 itr 26/3489: lr: 0.0001"])[0] == \
        pd.Timestamp(f"{LEAP_YEAR}-09-24 22:50:46", tz="UTC").value


def test_not_a_time_of_day():
    assert _times(["10:41:07step 3", "12:00 step 4 loss 1.0", "99:99:99 step 5"]) == [NAT, NAT, NAT]


@pytest.mark.parametrize("name", ["caffe_2_glog_no_year.log", "caffe_4371_glog_no_year.log"])
def test_glog_without_a_year_times_caffe_steps(name):
    """Caffe prints no step time: before, its year-less glog stamps gave no time and the file was refused."""
    want = EXPECTED[name]
    bundle = lines.scan(CLOCK2 / name)
    st = bundle.steps
    assert [int(st["step"].min()), int(st["step"].max())] == want["steps"]
    assert float(st["duration_s"].median()) == pytest.approx(want["per_step_s"], rel=0.03)
    assert any(f"placed in {LEAP_YEAR}" in w for w in bundle.warnings)


def test_time_of_day_lines_carry_their_clock():
    """logback's and logging's `%H:%M:%S` stamps: the steps' times rise with the lines across midnight (before: NaT)."""
    for name in ("logback_midnight_perf_listener.log", "python_hms_logging.log"):
        st = lines.scan(CLOCK2 / name).steps.sort_values("step")
        t = st["time"].astype("int64").to_numpy()
        assert st["time"].notna().all() and (np.diff(t) > 0).all()
        span = (t[-1] - t[0]) / S
        per_step = span / (st["step"].iloc[-1] - st["step"].iloc[0])
        assert per_step == pytest.approx(EXPECTED[name]["per_step_s"], rel=0.05)


def _refresh_seconds(path: Path, every: int = 1) -> tuple[np.ndarray, np.ndarray, str]:
    res = lines.scan_steps(path.read_text().split("\n")[::every])
    step, d = res["step"], res["duration"]
    return step, d * np.diff(np.r_[0, step]), res["how"]


def test_tqdm_smoothing_undone_gives_each_stall_its_refresh():
    """A bare tqdm bar (smoothing 0.3): before, each 1.5 s stall was smeared over the refreshes after it."""
    step, secs, how = _refresh_seconds(CLOCK2 / "tqdm_ema_stalls.log")
    assert "smoothing 0.3 undone" in how
    assert int((secs > 1.0).sum()) == EXPECTED["tqdm_ema_stalls.log"]["stalls"]  # 10 stalls, each in one refresh
    assert secs.sum() == pytest.approx(115.14, abs=0.1)  # the drawn wall time
    assert np.median(secs[secs < 1.0] / np.diff(np.r_[0, step])[secs < 1.0]) == pytest.approx(0.025, rel=0.02)


def test_lightning_average_rate_is_the_bar_clock():
    """Lightning's bar (smoothing=0): its rate is n / elapsed, so each line gives the bar's time since it started;
    this holds on every third line too (no refresh needs the one before)."""
    for every in (1, 3):
        step, secs, how = _refresh_seconds(CLOCK2 / "lightning_average_rate.log", every)
        assert "time since it started" in how
        per = secs / np.diff(np.r_[0, step])
        assert np.median(per[step <= 1000]) == pytest.approx(0.10, rel=0.03)
        assert np.median(per[step > 1010]) == pytest.approx(0.20, rel=0.03)
        assert secs.sum() == pytest.approx(EXPECTED["lightning_average_rate.log"]["wall_s"], rel=0.01)


def test_smoothed_rate_kept_when_refreshes_are_missing():
    """Every third line of an EMA bar: the recursion needs every refresh, no smoothing keeps to the clock, and the
    printed rate stays (with its note)."""
    _, secs, how = _refresh_seconds(CLOCK2 / "tqdm_ema_stalls.log", 3)
    assert "undone" not in how and "since it started" not in how


def test_heldout8_wandb_bar_reads_its_blocks():
    """wandb#8666: each 1.2 s block at half speed now shows in its refreshes (0.5 s at 20 steps, 0.5 s at 10)."""
    step, secs, how = _refresh_seconds(DATA / "eval" / "heldout8" / "wandb_8666_log_blocks.log")
    per = secs / np.diff(np.r_[0, step])
    assert "undone" in how
    assert secs.sum() == pytest.approx(551.0, abs=1.0)
    assert np.percentile(per, 5) == pytest.approx(0.025, rel=0.06) and np.percentile(per, 95) > 0.04


def test_detectron2_bracket_month_day_is_the_line_time():
    """detectron2's `[03/15 07:48:04 d2.utils.events]:` (datefmt `%m/%d %H:%M:%S`): before, the lines had no time."""
    st = lines.scan(CLOCK2 / "d2go_19_month_day.log").steps
    st = st[st["phase"] == "step"].sort_values("step")
    assert st["time"].notna().all()
    assert st["time"].iloc[0] < pd.Timestamp(f"{LEAP_YEAR}-03-15 07:48:04", tz="UTC")  # the end less the step's time
    span = (st["time"].iloc[-1] - st["time"].iloc[0]).total_seconds() / (st["step"].iloc[-1] - st["step"].iloc[0])
    assert span == pytest.approx(EXPECTED["d2go_19_month_day.log"]["per_step_s"], rel=0.05)


def test_sparse_refreshes_keep_the_line_clock():
    """Every 20th refresh of the EMA bar (lines ~5 s apart): no smoothing can be undone, and the elapsed clock rising
    by seconds a line is the lines' clock (line_clock.py), as before."""
    _, secs, how = _refresh_seconds(CLOCK2 / "tqdm_ema_stalls.log", 20)
    assert "the lines' clock" in how and secs.sum() == pytest.approx(112.0, abs=1.0)  # whole seconds, first line on


def test_tqdm_first_refresh_in_seconds_per_step():
    """A bar whose first refresh is a stall prints it as `1.53s/it`: the same rate in the other unit, and the EMA's
    first call (the bar's count 0 is the line before), so the recursion starts exact."""
    want = EXPECTED["tqdm_first_refresh_stall.log"]
    step, secs, how = _refresh_seconds(CLOCK2 / "tqdm_first_refresh_stall.log")
    assert "undone" in how
    assert int((secs > 1.0).sum()) == want["stalls"] and secs.sum() == pytest.approx(want["wall_s"], abs=0.05)


def test_a_two_digit_year_date_reads_its_time_and_a_new_date_a_new_day():
    """mmsr / BasicSR 0.x / traiNNer log with logging's `datefmt='%y-%m-%d %H:%M:%S'` (`22-12-06 08:58:44.018 -
    INFO:`); `%d-%m-%y` looks the same, so the order is not guessed: the time of day is read, and a line whose date
    differs from the line before is on the next day even where the time fell less than 12 h (a 9 h night's gap)."""
    p = Prefix()
    lines_ = ["22-12-06 08:58:44.018 - INFO: <epoch:249, iter:     250, lr:1.000e-04, t:286.9083s>",
              "22-12-06 08:59:24.027 - INFO: # Validation # PSNR: 17.699", "22-12-06 23:59:59.000 - INFO: x",
              "22-12-07 00:00:04.000 - INFO: y", "22-12-08 07:00:00.000 - INFO: z"]
    t = [p.split(line)[1] for line in lines_]
    assert np.diff(t).tolist() == [int(40.009 * S), int((86_399 - 32_364.027) * S), 5 * S, int((31 * 3600 - 4) * S)]
    assert p.split(lines_[0])[2].startswith("<epoch:249")  # the logger's ` - INFO:` is read as its level
    assert "two-digit year" in p.undated
    # a US date with a two-digit year (rich's `[03/09/23 10:00:01]`) keeps its full reading
    us = Prefix().split("[03/09/23 10:00:01] step 3")[1]
    assert us == pd.Timestamp("2023-03-09 10:00:01", tz="UTC").value
