"""XLA's slow-operation alarm read as a compile event (readers/runtime_logs.py, held-out round 57), on logs written
here from XLA's own wording (xla/service/slow_operation_alarm.cc, service/constant_folding.cc, the GPU compiler's
SlowCompilationAlarm), apart from tests/data/eval/heldout57: the compile watchdog between `****` rules behind a
prefix-only glog line, absl's glog prefix, the verbose instruction, absl::FormatDuration's minutes and milliseconds,
an alarm the excerpt cuts before it ends, and prose that merely says "the operation took"."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_file
from playbook.readers.runtime_logs import _absl_seconds

EXPLAIN = ("This isn't necessarily a bug; constant-folding is inherently a trade-off between compilation time and speed "
           "at runtime. XLA has some guards that attempt to keep constant folding from taking too long, but "
           "fundamentally you'll always be able to come up with an input program that takes a long time.")
BUG = "If you'd like to file a bug, run with envvar XLA_FLAGS=--xla_dump_to=/tmp/foo and attach the results."


def _read(tmp_path, text):
    path = tmp_path / "train.log"
    path.write_text(text)
    return read_file(path)


def test_the_compile_watchdog_is_a_compile_event_of_its_module_with_the_time_it_took(tmp_path):
    text = ("I0301 08:00:00.000000  4242 train.py:88] compiling the train step\n"
            "2025-03-01 08:00:01.250000: E external/xla/xla/service/slow_operation_alarm.cc:73]\n"
            "********************************\n"
            "[Compiling module jit_train_step] Very slow compile? If you want to file a bug, run with envvar "
            "XLA_FLAGS=--xla_dump_to=/tmp/foo and attach the results.\n"
            "********************************\n"
            "2025-03-01 08:03:03.750000: E external/xla/xla/service/slow_operation_alarm.cc:140] "
            "The operation took 3m2.5s\n")
    rows = _read(tmp_path, text).events
    assert rows["kind"].tolist() == ["compile"]
    assert rows["duration_s"].iloc[0] == pytest.approx(182.5)
    assert "module jit_train_step" in rows["detail"].iloc[0]


def test_constant_folding_with_the_verbose_instruction_behind_absl_glog(tmp_path):
    text = ("E0519 20:16:26.694439   91 slow_operation_alarm.cc:65] Constant folding an instruction is taking > 2s:\n"
            "\n"
            "  %reduce.8 = f64[200000,10]{1,0} reduce(f64[200000,10,10]{2,1,0} %broadcast.2, f64[] %constant.3), "
            "dimensions={2}, to_apply=%region_0.4\n"
            "\n" + EXPLAIN + "\n\n" + BUG + "\n"
            "E0519 20:16:30.100000   91 slow_operation_alarm.cc:133] The operation took 5.405561s\n")
    rows = _read(tmp_path, text).events
    assert rows["kind"].tolist() == ["compile"]
    assert rows["duration_s"].iloc[0] == pytest.approx(5.405561)
    assert "instruction %reduce.8 = f64[200000,10]" in rows["detail"].iloc[0]


def test_an_alarm_cut_before_it_ends_counts_its_threshold_as_a_lower_bound(tmp_path):
    text = ("2023-02-24 10:00:00.000000: E external/xla/xla/service/slow_operation_alarm.cc:65] Constant folding an "
            "instruction is taking > 8s:\n\n  slice.22 (displaying the full instruction incurs a runtime overhead. "
            "Raise your logging level to 4 or above).\n\n" + EXPLAIN + "\n")
    rows = _read(tmp_path, text).events
    assert rows["duration_s"].tolist() == [8.0]
    assert "instruction slice.22" in rows["detail"].iloc[0] and "displaying" not in rows["detail"].iloc[0]


def test_each_alarm_takes_its_own_end(tmp_path):
    one = ("2024-01-02 03:04:05.000000: E xla/service/slow_operation_alarm.cc:65] Constant folding an instruction is "
           "taking > 1s:\n\n  %fusion.5 = (u32[8388608]{0}) fusion(), kind=kLoop\n\n" + EXPLAIN + "\n\n" + BUG + "\n")
    text = (one + "2024-01-02 03:04:07.000000: E xla/service/slow_operation_alarm.cc:133] The operation took 2.5s\n"
            + one + "2024-01-02 03:04:09.000000: E xla/service/slow_operation_alarm.cc:133] The operation took 1.25s\n")
    rows = _read(tmp_path, text).events
    assert rows["duration_s"].tolist() == [2.5, 1.25]


@pytest.mark.parametrize(("text", "seconds"), [("2.216622055s", 2.216622055), ("8m6.9600373s", 486.9600373),
                                               ("1h2m3s", 3723.0), ("150ms", 0.15), ("2m", 120.0), ("too", None),
                                               ("12", None)])
def test_absl_format_duration_is_read_in_seconds(text, seconds):
    got = _absl_seconds(text)
    assert got == (pytest.approx(seconds) if seconds is not None else None)


def test_prose_saying_the_operation_took_long_is_no_record(tmp_path):
    with pytest.raises(Exception, match="not telemetry"):
        _read(tmp_path, "The operation took too long, so we restarted the job\nThe operation took 3 attempts\n")


def test_a_slow_compile_alarm_is_no_healthy_run(tmp_path):
    text = ("2025-03-01 08:00:01.250000: E external/xla/xla/service/slow_operation_alarm.cc:73]\n"
            "********************************\n"
            "[Compiling module jit_update] Very slow compile? If you want to file a bug, run with envvar "
            "XLA_FLAGS=--xla_dump_to=/tmp/foo and attach the results.\n"
            "********************************\n"
            "2025-03-01 08:11:01.250000: E external/xla/xla/service/slow_operation_alarm.cc:140] "
            "The operation took 11m0.0s\n")
    assert diagnose(_read(tmp_path, text)).verdict["id"] in ("recompilation", "insufficient_data")


def test_a_step_line_after_an_alarm_is_no_instruction(tmp_path):
    text = ("2024-01-02 03:04:05.000000: E xla/service/slow_operation_alarm.cc:65] Constant folding an instruction is "
            "taking > 1s:\nstep 1 | loss 2.31 | time 1.20s\nstep 2 | loss 2.30 | time 1.21s\n")
    bundle = _read(tmp_path, text)
    assert "instruction" not in bundle.events["detail"].iloc[0].split("taking more than 1s")[1]
    assert len(bundle.steps) == 2
