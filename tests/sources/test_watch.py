"""`playbook watch`: the fake NVML scenarios end to end in a subprocess, a fake `nvidia-smi` on PATH when NVML
cannot be loaded, Ctrl-C, the recording as a run directory."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from playbook.commands.watch import Panel
from playbook.core.units import duration_s
from playbook.readers import rundir

FAKE_SMI = textwrap.dedent("""\
    #!{python}
    # a stand-in for nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N: 4 GPUs whose utilization
    # drops together for 40% of every 3 s, power following it; an error line now and then, as real drivers print
    import os, sys, time
    args = sys.argv[1:]
    fields = next(a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")).split(",")
    ms = int(args[args.index("-lms") + 1])
    if os.environ.get("FAKE_SMI_OLD") and "clocks_throttle_reasons.active" in fields:  # a driver without it
        print('Field "clocks_throttle_reasons.active" is not a valid field to query.', flush=True)
        sys.exit(2)
    t0 = time.time()
    values = {{"index": None, "utilization.gpu": None, "power.draw": None, "clocks.sm": "1980",
              "memory.used": "61000", "memory.total": "81559", "utilization.memory": "40", "clocks.mem": "2619",
              "temperature.gpu": "63", "clocks_throttle_reasons.active": "0x0000000000000004",
              "pcie.link.gen.current": "5", "pcie.link.width.current": "16"}}
    tick = 0
    while True:
        busy = ((time.time() - t0) % 3.0) < 1.8
        for i in range(4):
            values["index"] = str(i)
            values["utilization.gpu"] = "98" if busy else "0"
            values["power.draw"] = "650.12" if busy else "[N/A]" if i == 3 else "95.40"
            print(", ".join(values[f] for f in fields), flush=True)
        if tick == 3:
            print("Unable to determine the device handle for GPU0000:04:00.0: Unknown Error", flush=True)
        tick += 1
        time.sleep(ms / 1000)
""")


def _ctrl_c_reaches_it() -> None:
    """Runs in the child before exec: Ctrl-C back to its default. A suite started in the background of a
    non-interactive shell (nohup, `&`) inherits SIGINT ignored, and an ignored signal stays ignored across exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def watch(*args, env=None, **kw):
    return subprocess.Popen([sys.executable, "-m", "playbook", "watch", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_ctrl_c_reaches_it, **kw)


def _period(line: str) -> float | None:
    """The period the watch line names (s), or None when it found no significant one."""
    m = re.search(r"period ([\d.]+) s", line)
    return float(m.group(1)) if m else None


def test_watch_for_prints_period_and_cause_and_keeps_the_run(tmp_path):
    out = tmp_path / "w1"
    proc = watch("--fake-nvml", "data_stall:2:4", "--for", "20s", "--interval", "0.5s", "--out", str(out))
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr
    first = stdout.splitlines()[0]
    assert first.startswith("4 GPUs, 20 s of fake NVML (data_stall)")
    assert "98%" in first and "0%" in first and "synchronized" in first
    # the fake stalls every 2 s of wall time; sampled every 0.5 s on a loaded machine (one CI run) the swings can read
    # irregular, and a period, when one is significant, is the fake's
    assert _period(first) is None or abs(_period(first) - 2.0) < 0.2, first
    cause = re.search(r"top cause (\w+)", first).group(1)
    assert cause != "healthy"
    assert "Hypotheses" in stdout and f"1. {cause}" in stdout
    # which process holds each GPU: the fake's GPUs are held by the watch itself (NVML + psutil)
    assert "processes on the GPUs (4):" in stdout and f"GPU 3  PID {proc.pid}  " in stdout, stdout[:1500]
    assert "61,000 MiB" in stdout and "--fake-nvml data_stall:2:4" in stdout
    assert re.search(r"cost [\d.]+% of a core", stderr)
    b = rundir.read_run(out)
    assert sorted(b.telemetry["gpu"].unique()) == [0, 1, 2, 3]
    assert (b.telemetry["util_pct"] == 0).any() and (b.telemetry["util_pct"] == 98).any()
    span = (b.telemetry["time"].max() - b.telemetry["time"].min()).total_seconds()
    assert 15 < span < 25


def test_ctrl_c_stops_cleanly_with_the_diagnosis(tmp_path):
    proc = watch("--fake-nvml", "pipeline:2:4", "--interval", "0.5s", "--refresh", "2s", "--out",
                 str(tmp_path / "w2"))
    line = proc.stdout.readline()  # the first plain refresh line: sampling and diagnosing are under way
    assert line.startswith("[") and "GPUs" in line, proc.stderr.read()
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=180)  # hang guards: a loaded CI run once took > 60 s
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "stopped by Ctrl-C" in stderr
    assert "of fake NVML (pipeline)" in stdout and "Hypotheses" in stdout
    assert len(rundir.read_run(tmp_path / "w2").telemetry)


def _fake_smi(tmp_path, **env_extra):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_SMI.format(python=sys.executable))
    smi.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env_extra)


def test_nvidia_smi_subprocess_when_nvml_cannot_load(tmp_path):
    proc = watch("--fake-nvml", "no_driver", "--for", "14s", "--interval", "0.25s", env=_fake_smi(tmp_path))
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr
    assert "sampling with nvidia-smi instead" in stderr and "NVMLError_LibraryNotFound" in stderr
    assert "skipped 1 non-data line" in stderr and "Unable to determine" in stderr
    first = stdout.splitlines()[0]
    assert first.startswith("4 GPUs, 14 s of nvidia-smi")
    assert _period(first) is None or abs(_period(first) - 3.0) < 0.3, first  # the fake's 3 s, if significant


def test_nvidia_smi_without_a_field_falls_back_to_the_basic_fields(tmp_path, monkeypatch):
    from playbook.sources.live import SMI_BASIC, SMI_FIELDS, SmiSource, rows_frame

    env = _fake_smi(tmp_path, FAKE_SMI_OLD="1")
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("FAKE_SMI_OLD", "1")
    src = SmiSource(interval_s=0.1, host="h")
    try:
        assert src.start()
        time.sleep(1.0)
        frame = rows_frame(src.poll())
    finally:
        src.stop()
    assert src.fields == SMI_FIELDS[:SMI_BASIC]
    assert len(frame) >= 8 and sorted(frame["gpu"].unique()) == [0, 1, 2, 3]
    assert frame["sm_clock_mhz"].eq(1980).all() and frame["temp_c"].isna().all()


def test_no_source_is_one_line():
    proc = watch("nvml", "--fake-nvml", "no_driver", "--for", "1s")
    _out, err = proc.communicate(timeout=180)
    assert proc.returncode == 2 and err.count("\n") == 1 and "no GPU telemetry source" in err


def test_bad_fake_scenario_is_one_line():
    proc = watch("--fake-nvml", "nonsense", "--for", "1s")
    _out, err = proc.communicate(timeout=180)
    assert proc.returncode == 2 and "unknown fake NVML scenario" in err and "Traceback" not in err


def test_durations():
    assert duration_s("500ms") == 0.5 and duration_s("20s") == 20 and duration_s("6h") == 21600
    assert duration_s("90") == 90 and duration_s("1.5m") == 90
    for bad in ("0s", "-1s", "6x", "", "nan"):
        with pytest.raises(argparse.ArgumentTypeError):
            duration_s(bad)


def _row(t, gpu, util, power=300.0, clock=1980.0):
    import math

    from playbook.model import schema

    v = [math.nan] * len(schema.TELEMETRY_METRICS)
    at = {name: i for i, name in enumerate(schema.TELEMETRY_METRICS)}
    v[at["util_pct"]], v[at["power_w"]], v[at["sm_clock_mhz"]] = util, power, clock
    return (int(t * 1e9), "node00", gpu, "probe:nvml", v)


def test_sparkline_levels():
    p = Panel(width=4)
    for k, u in enumerate((0.0, 50.0, 100.0, float("nan"))):
        p.add_rows([_row(k, 0, u)])
    assert p.sparkline("node00:0") == "▁▅█ " and p.latest["node00:0"]["util_pct"] == 100.0


def test_dashboard_renders_rows_and_the_rolling_diagnosis():
    from rich.console import Console

    from playbook.commands.watch import _dashboard
    from playbook.diagnosis import diagnose
    from playbook.labs.synthetic import simulate_bundle

    b, _ = simulate_bundle("oscillation", hosts=1, gpus_per_host=2, duration_s=300, interval_s=1.0, period_s=20)
    d = diagnose(b)
    p = Panel(width=10)
    for t in range(12):
        p.add_rows([_row(t, 0, 100.0 * (t % 2), 650.0, 1980.0), _row(t, 1, 50.0, 300.0, 1410.0)])
    p.status = {g["id"]: g["status"] for g in d.gpus}
    console = Console(record=True, width=160, force_terminal=False)
    console.print(_dashboard(p, d, "fake NVML (test)", 12.0, 1.0, 0.004))
    text = console.export_text()
    assert "cost 0.40% of a core" in text and "node00:0" in text and "▁█▁█▁█▁█▁█" in text
    assert "650 W" in text and "1410 MHz" in text and "period 20 s" in text
    assert f"top cause {d.hypotheses[0]['id']}" in text


def test_without_a_gpu_the_error_suggests_the_fake_nvml_and_prometheus(monkeypatch):
    from playbook.commands import watch as w
    from playbook.core.errors import InputError
    from playbook.sources import live

    def no_gpu(*_args, **_kwargs):
        raise InputError("no GPU telemetry source: NVML not available | nvidia-smi: not found on PATH")

    monkeypatch.setattr(live, "open_source", no_gpu)
    parser = argparse.ArgumentParser()
    w.add_arguments(parser)
    with pytest.raises(InputError) as err:
        w.run(parser.parse_args(["--for", "1s"]))
    line = str(err.value)
    assert "\n" not in line and line.startswith("no GPU telemetry source")
    assert "playbook watch --fake-nvml data_stall:8" in line and "playbook watch prometheus://HOST:9090" in line


def test_the_dashboard_and_plain_lines_name_the_process_on_each_gpu():
    from rich.console import Console

    from playbook.commands.watch import _dashboard, process_lines

    procs = [{"host": "node00", "gpu": 1, "pid": 4242, "user": "alice", "gpu_mem_mib": 61000.0,
              "command": "torchrun --nproc-per-node 8 train.py"},
             {"host": "node00", "gpu": 0, "pid": 4241, "user": "bob", "gpu_mem_mib": float("nan"), "command": "?"}]
    console = Console(record=True, width=160, force_terminal=False)
    console.print(_dashboard(Panel(width=4), None, "NVML", 3.0, 0.0, 0.001, procs))
    text = console.export_text()
    assert "PID" in text and "4242" in text and "alice" in text and "61,000 MiB" in text and "train.py" in text
    lines = process_lines(procs).splitlines()
    assert lines == ["processes on the GPUs (2):", "  GPU 0  PID 4241  bob  ? MiB  ?",
                     "  GPU 1  PID 4242  alice  61,000 MiB  torchrun --nproc-per-node 8 train.py"]
    assert process_lines([]).startswith("processes: none seen")


def _rows(t_ns: int, utils: list[float]) -> list[tuple]:
    from playbook.model import schema

    at = schema.TELEMETRY_METRICS.index("util_pct")
    out = []
    for gpu, u in enumerate(utils):
        v = [float("nan")] * len(schema.TELEMETRY_METRICS)
        v[at] = u
        out.append((t_ns, "h", gpu, "fake", tuple(v)))
    return out


def test_window_statistics_follow_rows_in_and_out():
    from playbook.commands.watch import WindowStats

    w = WindowStats()
    a, b = _rows(1, [90.0, 20.0]), _rows(2, [10.0, 20.0])
    w.add(a)
    w.add(b)
    assert w.snapshot() == {("h", 0): (50.0, 0.5), ("h", 1): (20.0, 1.0)}
    w.add(a, -1)
    assert w.snapshot() == {("h", 0): (10.0, 1.0), ("h", 1): (20.0, 1.0)}
    assert not WindowStats.moved(w.snapshot(), {("h", 0): (11.9, 1.0), ("h", 1): (20.0, 1.0)})
    assert WindowStats.moved(w.snapshot(), {("h", 0): (12.0, 1.0), ("h", 1): (20.0, 1.0)})
    assert WindowStats.moved(w.snapshot(), {("h", 0): (10.0, 1.0)})  # a GPU came or went


def test_a_refresh_rediagnoses_only_when_the_window_moved():
    """Issue 31: the rolling diagnosis is re-run when some GPU's window mean or low share moved (or at least every
    MAX_SKIPS + 1 refreshes), not on every refresh of an unchanged job."""
    from playbook.commands import watch as W

    class Source:
        replaces, name, warnings, events = False, "stub", [], []

        def events_table(self):
            from playbook.model import schema
            return schema.events_frame()

    calls = []

    def diagnose(bundle):
        calls.append(len(bundle.telemetry))
        return argparse.Namespace(gpus=[])

    args = argparse.Namespace(plain=True, json=False)
    s = W._Session(args, Source(), 1.0, 3600.0, None, diagnose)
    now = time.time_ns()
    for k in range(60):  # a steady swing: 90 / 20 on both GPUs
        s.take(_rows(now - (120 - k) * 10**9, [90.0 if k % 4 else 20.0] * 2))
    s.refresh(force=False)
    assert len(calls) == 1
    s.take(_rows(now - 59 * 10**9, [90.0, 90.0]))
    s.refresh(force=False)
    assert len(calls) == 1  # one more poll of the same job: the answer's inputs did not move
    for k in range(10):  # GPU 1 goes idle: its mean falls by more than CHANGE_PCT
        s.take(_rows(now - (50 - k) * 10**9, [90.0, 0.0]))
    s.refresh(force=False)
    assert len(calls) == 2
    for _ in range(W.MAX_SKIPS):
        s.refresh(force=False)
    assert len(calls) == 2
    s.refresh(force=False)  # stale for MAX_SKIPS refreshes: diagnosed again
    assert len(calls) == 3
