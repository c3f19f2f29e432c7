"""`playbook record -- COMMAND`: end to end with a real child process (no GPU here: host metrics only)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from playbook import rundir

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


def record(tmp_path, *child_args, extra=()):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "playbook", "record", "--out", str(out), "--hz", "20", "--host-hz", "20",
           *extra, "--", sys.executable, *child_args]
    return out, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_record_runs_the_command_keeps_its_status_and_writes_the_run(tmp_path):
    out, proc = record(tmp_path, "-c", CHILD)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3, stderr
    assert "trained" in stdout and "rank0" in stdout
    assert f"run directory {out}" in stderr and "playbook diagnose" in stderr
    b = rundir.read_run(out)
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
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - t0 < 15
    assert proc.returncode == 130 and "child interrupted" in stdout
    part = next(p for p in out.iterdir() if p.is_dir())
    meta = json.loads((part / "meta.json").read_text())
    assert meta["signals_forwarded"] == ["SIGINT"]


def test_killed_child_exits_128_plus_signal(tmp_path):
    out, proc = record(tmp_path, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    proc.communicate(timeout=30)
    assert proc.returncode == 128 + 9
    assert rundir.is_run_dir(out)


@pytest.mark.parametrize("args, message", [((), "no command given"),
                                           (("--", "no-such-command-xyz"), "command not found")])
def test_user_errors_are_one_line(tmp_path, args, message):
    proc = subprocess.run([sys.executable, "-m", "playbook", "record", "--out", str(tmp_path / "r"), *args],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_help_has_an_example():
    proc = subprocess.run([sys.executable, "-m", "playbook", "record", "--help"], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0 and "torchrun" in proc.stdout and "--out" in proc.stdout
