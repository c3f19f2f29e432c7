"""`playbook record -- COMMAND`: end to end with a real child process (no GPU here: host metrics only)."""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from playbook.model import run_layout
from playbook.readers.rundir import read_run

CHILD = textwrap.dedent("""
    import sys, time
    from playbook.probes import Recorder
    with Recorder() as rec:             # PLAYBOOK_RUN_DIR from `playbook record`
        for i in range(5):
            with rec.timer.step(i):
                with rec.timer.phase("fwd"):
                    time.sleep(0.01)
    print("trained", rec.part.name)
    sys.exit(3)
""")


def _ctrl_c_reaches_it() -> None:
    """Runs in the child before exec: Ctrl-C back to its default. A suite started in the background of a
    non-interactive shell (nohup, `&`) inherits SIGINT ignored, and an ignored signal stays ignored across exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def record(tmp_path, *child_args, extra=()):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "playbook", "record", "--out", str(out), "--hz", "20", "--host-hz", "20",
           *extra, "--", sys.executable, *child_args]
    return out, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=_ctrl_c_reaches_it)


def test_record_runs_the_command_keeps_its_status_and_writes_the_run(tmp_path):
    out, proc = record(tmp_path, "-c", CHILD)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 3, stderr
    assert "trained" in stdout and "-pid" in stdout  # no torch rank: the script's part is <host>-pid<PID>
    assert f"run directory {out}" in stderr and "playbook diagnose" in stderr
    b = read_run(out)
    assert sorted(m["rank"] for m in b.meta["parts"].values()) == [-1, 0]  # record's sampler + the script
    assert (b.steps["rank"] == 0).all() and (b.steps["phase"] == "step").sum() == 5
    assert len(b.host) >= 1 and (b.host["rss_mib"] > 5).any()  # NaN once the command has exited
    ev = b.events.set_index("kind")
    assert ev.loc["exit", "detail"] == "exit status 3"
    assert sys.executable in b.meta["run"]["command"]
    sampler_meta = next(m for m in b.meta["parts"].values() if m["rank"] == -1)
    assert sampler_meta["exit_status"] == 3 and sampler_meta["role"] == "playbook record"
    assert "env" in b.meta["run"] and b.meta["run"]["env"]["python"]


def test_ctrl_c_is_forwarded_and_reported(tmp_path):
    child = textwrap.dedent("""
        import sys, time
        print("up", flush=True)
        try:
            time.sleep(60)
        except KeyboardInterrupt:
            print("child interrupted", flush=True)
            sys.exit(130)
    """)
    out, proc = record(tmp_path, "-c", child)
    assert proc.stdout.readline().strip() == "up"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=180)  # hang guards: a loaded CI run once took > 30 s
    # the child's own handler ran (it would otherwise sleep its 60 s out and exit 0): forwarded, not waited out
    assert proc.returncode == 130 and "child interrupted" in stdout
    part = next(p for p in out.iterdir() if p.is_dir())
    meta = json.loads((part / "meta.json").read_text())
    assert meta["signals_forwarded"] == ["SIGINT"]


def test_killed_child_exits_128_plus_signal(tmp_path):
    out, proc = record(tmp_path, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    proc.communicate(timeout=180)
    assert proc.returncode == 128 + 9
    assert run_layout.is_run_dir(out)


@pytest.mark.parametrize("args, message", [((), "no command given"),
                                           (("--", "no-such-command-xyz"), "command not found")])
def test_user_errors_are_one_line(tmp_path, args, message):
    proc = subprocess.run([sys.executable, "-m", "playbook", "record", "--out", str(tmp_path / "r"), *args],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_help_has_an_example():
    proc = subprocess.run([sys.executable, "-m", "playbook", "record", "--help"], capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0 and "torchrun" in proc.stdout and "--out" in proc.stdout


STEP_PRINTER = textwrap.dedent("""
    import sys, time
    for i in range(40):
        print(f"step {i} loss 1.0 step_time: {0.12 if i % 10 else 0.9}", flush=True)
    print("warning on stderr", file=sys.stderr)
    sys.exit(5)
""")


def test_the_commands_output_is_teed_and_read_back(tmp_path):
    out, proc = record(tmp_path, "-c", STEP_PRINTER)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 5
    assert "step 39 loss" in stdout and "warning on stderr" in stderr  # the console still sees both streams
    logs = list(out.glob("*-pid*.log"))
    assert len(logs) == 1
    text = logs[0].read_text()
    assert "step 0 loss" in text and "warning on stderr" in text
    b = read_run(out)
    assert len(b.steps) == 40 and b.steps["duration_s"].max() == pytest.approx(0.9)  # read back as steps


def test_an_existing_run_is_kept_unless_forced_and_force_rewrites_the_command(tmp_path):
    out, proc = record(tmp_path, "-c", "print('first')")
    proc.communicate(timeout=180)
    assert proc.returncode == 0
    res = subprocess.run([sys.executable, "-m", "playbook", "record", "--out", str(out), "--", sys.executable,
                          "-c", "print('second')"], capture_output=True, text=True, timeout=180)
    assert res.returncode == 2 and "--force" in res.stderr and "Traceback" not in res.stderr
    assert "first" in json.loads((out / "meta.json").read_text())["command"]
    res = subprocess.run([sys.executable, "-m", "playbook", "record", "--out", str(out), "--force", "--",
                          sys.executable, "-c", "print('second')"], capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    assert "second" in json.loads((out / "meta.json").read_text())["command"]


@pytest.mark.parametrize("args", [("--flush-s", "0"), ("--host-hz", "inf"), ("--hz", "nan")])
def test_rates_are_validated_in_one_line(tmp_path, args):
    res = subprocess.run([sys.executable, "-m", "playbook", "record", "--out", str(tmp_path / "r"), *args, "--",
                          sys.executable, "-c", "pass"], capture_output=True, text=True, timeout=180)
    assert res.returncode == 2 and args[0] in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "r").exists()


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path):
    child = textwrap.dedent("""
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("up", flush=True)
        time.sleep(120)
    """)
    out, proc = record(tmp_path, "-c", child, extra=("--grace-s", "1"))
    assert proc.stdout.readline().strip() == "up"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 128 + 9
    part = next(p for p in out.iterdir() if p.is_dir())
    assert "SIGKILL (grace period over)" in json.loads((part / "meta.json").read_text())["signals_forwarded"]


def test_the_command_dies_with_record(tmp_path):
    child = textwrap.dedent("""
        import os, time
        print(os.getpid(), flush=True)
        time.sleep(120)
    """)
    out, proc = record(tmp_path, "-c", child)
    pid = int(proc.stdout.readline())
    proc.kill()  # SIGKILL: record gets no chance to forward anything
    proc.communicate(timeout=180)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the command outlived a SIGKILLed record")


class _FullDisk(io.RawIOBase):
    """A log file on a disk that fills after `room` bytes: writes past it raise ENOSPC."""

    def __init__(self, room: int):
        self.room, self.data = room, bytearray()

    def writable(self):
        return True

    def write(self, b):
        if len(self.data) + len(b) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.data += b
        return len(b)


def test_a_full_disk_stops_the_log_marks_the_run_incomplete_and_exits_non_zero(tmp_path, monkeypatch, capfd):
    from playbook import cli
    from playbook.commands import record as record_command

    disk = _FullDisk(room=2000)
    monkeypatch.setattr(record_command, "_open_log", lambda path: disk)
    out = tmp_path / "run"
    rc = cli.main(["record", "--out", str(out), "--no-nvml", "--no-host", "--no-ib", "--", sys.executable, "-c",
                   "for i in range(500): print(f'line {i:04d} of the command', flush=True)"])
    stdout, stderr = capfd.readouterr()
    assert rc == 2  # the command succeeded; the recording did not
    assert "line 0499" in stdout  # the console copy went on
    kept = disk.data.decode().splitlines()
    assert 0 < len(kept) < 500 and kept[-1] == f"line {len(kept) - 1:04d} of the command"  # whole lines, in order
    log = f"{socket.gethostname()}-pid{os.getpid()}.log"
    assert (f"playbook record: incomplete recording: the command's output log {log} stopped after {len(kept)}"
            f" lines (No space left on device); {500 - len(kept)} later lines reached the console only"
            in stderr)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["recording"] == "incomplete" and "No space left on device" in meta["incomplete"][0]
    assert not (out / record_command.LOCK).exists()
    assert any("incomplete recording" in w for w in read_run(out).warnings)
    for command in ("info", "diagnose"):
        rc = cli.main([command, str(out)])
        said = "".join(capfd.readouterr())
        assert rc == 0 and "incomplete recording" in said, command
    assert "Verdict: Healthy" not in said and "the recording is incomplete" in said  # never vouched for as healthy


def test_a_run_record_never_finished_is_read_with_a_warning(tmp_path):
    run_layout.init_run(tmp_path / "run", command="x", recording="in progress")
    assert any("incomplete recording" in w and "did not finish" in w for w in read_run(tmp_path / "run").warnings)
    run_layout.update_run(tmp_path / "run", recording="complete")
    assert not any("incomplete" in w for w in read_run(tmp_path / "run").warnings)


def test_out_is_claimed_exclusively(tmp_path):
    from playbook.commands.record import LOCK, _claim
    from playbook.core.errors import PlaybookError

    out = tmp_path / "run"
    _claim(out, force=False)
    assert (out / LOCK).read_text() == str(os.getpid())
    with pytest.raises(PlaybookError, match=f"being recorded by another `playbook record` .process {os.getpid()}"):
        _claim(out, force=True)  # a live holder: not even --force takes it over


def test_two_records_started_together_never_share_the_run_dir(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "playbook", "record", "--out", str(out), "--no-nvml", "--no-ib", "--", sys.executable,
           "-c", "import time; print('working', flush=True); time.sleep(3)"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=180), *p.communicate(timeout=180)) for p in procs]
    assert sorted(rc for rc, _o, _e in results) == [0, 2], results
    _rc, out_text, err = next(r for r in results if r[0] == 2)
    assert err.count("\n") == 1 and ("being recorded by another" in err or "already holds a recorded run" in err)
    assert out_text == ""  # the loser never started the command
    assert len(list(out.glob("*.log"))) == 1
