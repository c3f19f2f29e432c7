"""`playbook record --out RUN_DIR -- COMMAND ...`: run a training command and record telemetry beside it.

What it does: starts COMMAND as a child process (in its own process group), samples this host's GPUs through NVML
(default 10 Hz) and the host (CPU per core, RSS of the command's process tree, disk and network rates) and any
InfiniBand ports until the command exits, then writes RUN_DIR (meta.json with the environment fingerprint, and
RUN_DIR/<host>-pid<PID>/ with telemetry / host / events / ib .parquet) and exits with the command's status.
The command's stdout and stderr go to the console as usual and, line by line, into RUN_DIR/<host>-pid<PID>.log,
which `playbook diagnose RUN_DIR` reads back (step lines a script prints are step timings).
An existing run directory is not replaced unless --force is given (then it is recorded afresh). RUN_DIR is claimed
with a create-exclusive lock file (RUN_DIR/.playbook-record.lock, holding the pid, removed at the end), so two
`record`s started together never share it: the second stops with a one-line error.
Nothing is lost silently: meta.json says "recording": "in progress" until the end, then "complete", or
"incomplete" with the reasons when a write failed (a full disk: the log tee stops, the console copy goes on, rows
that could not be written are counted); `record` then says so on stderr and exits non-zero (the command's status,
or 2 when the command succeeded), and `diagnose` / `info` / `report` warn "incomplete recording".
Ctrl-C, SIGTERM, SIGHUP and SIGUSR1/2 are forwarded to the command's process group (a second Ctrl-C is forwarded
too); a command still running --grace-s seconds after a forwarded SIGINT/SIGTERM/SIGHUP is killed (SIGKILL to
its group); on Linux the command also gets SIGKILL when `record` itself dies (PR_SET_PDEATHSIG). A command
killed by signal N makes `record` exit with 128+N.

The child sees PLAYBOOK_RUN_DIR=RUN_DIR and PLAYBOOK_SAMPLER=external: a training script that uses
`playbook.probes.Recorder()` (no argument) writes its step timings into the same run directory, per rank, and
leaves GPU sampling to `record` so that no GPU is sampled twice. Multi-node: run one `record` per node into a
folder per node (or a shared filesystem path) and copy the folders together; parts never collide.

Read the result with `playbook info RUN_DIR` or `playbook diagnose RUN_DIR`.
"""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from playbook.core.errors import PlaybookError

HELP = "run a training command and record GPU / host telemetry beside it into a run directory"
EXAMPLES = """  playbook record --out runs/r1 -- torchrun --standalone --nproc-per-node 8 train.py --config big.yaml
  playbook record --out runs/r1 --hz 2 -- python train.py        2 Hz sampling for a days-long run
  playbook record --out runs/r1 --force -- python train.py       record runs/r1 afresh
  playbook diagnose runs/r1                                      then: what made utilization oscillate
"""

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")
LOCK = ".playbook-record.lock"  # in RUN_DIR: the pid of the `record` writing it (hidden: the readers skip it)
INCOMPLETE_STATUS = 2  # exit status when the command succeeded but the recording is incomplete


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, metavar="RUN_DIR", help="run directory to write (created)")
    parser.add_argument("--hz", type=float, default=10.0, help="NVML sampling rate in Hz (default 10)")
    parser.add_argument("--host-hz", type=float, default=None,
                        help="host-probe rate in Hz (default min(--hz, 2))")
    parser.add_argument("--flush-s", type=float, default=30.0,
                        help="seconds between writes of what was recorded so far (default 30)")
    parser.add_argument("--no-nvml", action="store_true", help="do not sample GPUs")
    parser.add_argument("--no-host", action="store_true", help="do not sample the host (CPU, RSS, IO)")
    parser.add_argument("--no-ib", action="store_true", help="do not read InfiniBand port counters")
    parser.add_argument("--force", action="store_true", help="replace RUN_DIR when it already holds a run")
    parser.add_argument("--grace-s", type=float, default=30.0, metavar="S",
                        help="seconds a command may take to exit after a forwarded SIGINT/SIGTERM/SIGHUP before it "
                             "is killed (default 30)")
    parser.add_argument("--quiet", action="store_true", help="no summary line at the end")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                        help="the command to run, after `--`")  # not "command": the CLI's subcommand dest


def run(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise PlaybookError("no command given: playbook record --out RUN_DIR -- COMMAND ...")
    from playbook.probes.recorder import Rates, check_period, check_rate

    check_rate("--hz", args.hz)
    if args.host_hz is not None:
        check_rate("--host-hz", args.host_hz)
    check_period("--flush-s", args.flush_s)
    check_period("--grace-s", args.grace_s, 0.0)
    rates = Rates(sample_hz=args.hz, host_hz=args.host_hz, flush_s=args.flush_s)
    out = Path(args.out).resolve()
    _claim(out, args.force)
    try:
        return _record(args, cmd, out, rates)
    finally:
        (out / LOCK).unlink(missing_ok=True)


def _record(args: argparse.Namespace, cmd: list[str], out: Path, rates: object) -> int:
    """Run and record `cmd` into the claimed `out`; the exit status (see the module docstring)."""
    from playbook.model import run_layout
    from playbook.probes.recorder import Hooks, Recorder, merge_run

    try:
        run_layout.init_run(out, command=shlex.join(cmd), recording="in progress")
    except OSError as exc:
        raise PlaybookError(f"cannot create run directory {out}: {exc}") from exc
    env = dict(os.environ, PLAYBOOK_RUN_DIR=str(out), PLAYBOOK_SAMPLER="external")
    env.setdefault("PYTHONUNBUFFERED", "1")  # a Python command's prints reach the console and the log as they happen
    forwarded: list[str] = []
    stop_asked: list[float] = []
    started: list[subprocess.Popen] = []  # the child, once spawned
    previous = {}

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signal.Signals(signum).name)
        if signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) and not stop_asked:
            stop_asked.append(time.monotonic())
        _signal_group(started, signum)

    # handlers before the spawn: a signal that arrives while the command starts is forwarded, never lost with
    # `record` killed by its default action (a test's SIGTERM right after the child's first line once was)
    for name in FORWARDED:
        sig = getattr(signal, name, None)
        if sig is not None:
            previous[sig] = signal.signal(sig, forward)
    try:
        child = _spawn(cmd, env)
    except (FileNotFoundError, OSError) as exc:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if isinstance(exc, FileNotFoundError):
            raise PlaybookError(f"command not found: {cmd[0]}") from exc
        raise PlaybookError(f"cannot start {cmd[0]}: {exc}") from exc
    started.append(child)
    if forwarded:  # asked to stop while the command was starting
        _signal_group(started, getattr(signal, forwarded[-1]))

    log = out / f"{socket.gethostname()}-pid{os.getpid()}.log"
    tee = _Tee(child, log)
    t0 = time.time()
    rec = Recorder(out, rank=-1, rates=rates, nvml=not args.no_nvml, host_probe=not args.no_host,
                   interconnect=not args.no_ib, gc=False, compile=False, cuda=False, nvtx=False, command=cmd,
                   meta={"role": "playbook record", "child_pid": child.pid},
                   hooks=Hooks(pid=child.pid, sample_here=True))
    try:
        try:
            rec.start()
        except PlaybookError as exc:  # recording failed; the command still runs to completion
            print(f"playbook record: not recording ({exc})", file=sys.stderr)
            rec = None
        if rec is not None:
            rec.event("start", detail=f"command: {shlex.join(cmd)[:400]}")
        rc = _wait(child, stop_asked, args.grace_s, forwarded)
        tee.join(5)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    status = 128 - rc if rc < 0 else rc  # killed by signal N -> 128+N, as a shell reports it
    if rec is not None:
        detail = f"exit status {status}" + (f"; forwarded {', '.join(forwarded)}" if forwarded else "")
        rec.event("exit", detail=detail)
        rec.extra_meta.update({"exit_status": status, "signals_forwarded": forwarded,
                               "duration_s": round(time.time() - t0, 3)})
        rec.close()
    merged = merge_run(out)  # segments left by in-process Recorders of ranks that were killed
    problems = ([tee.problem] if tee.problem else []) + (list(rec.incomplete) if rec is not None else [])
    _finish(out, problems)
    if not args.quiet:
        print(_summary(out, rec, status, merged), file=sys.stderr)
    if problems:
        return status or INCOMPLETE_STATUS
    return status


def _finish(out: Path, problems: list[str]) -> None:
    """Mark the run complete or incomplete in meta.json; say on stderr what was lost. When even that cannot be
    written (a full disk), meta.json keeps "in progress", which the readers also warn of."""
    from playbook.model import run_layout

    for problem in problems:
        print(f"playbook record: incomplete recording: {problem}", file=sys.stderr)
    try:
        if problems:
            run_layout.update_run(out, recording="incomplete", incomplete=problems)
        else:
            run_layout.update_run(out, recording="complete")
    except OSError as exc:
        print(f"playbook record: cannot mark {out / 'meta.json'} ({exc.strerror or exc}); it says the recording "
              "is still in progress", file=sys.stderr)


def _claim(out: Path, force: bool) -> None:
    """Take RUN_DIR for this `record`: refuse an existing run unless `force` (then it is removed, so meta.json and
    the parts are the new run's), and create the lock file exclusively, so that of two `record`s started together
    exactly one goes on; the other gets a one-line error."""
    from playbook.model import run_layout
    from playbook.probes.recorder import _alive

    if out.exists() and not out.is_dir():
        raise PlaybookError(f"{out} exists and is not a folder")
    holder = _lock_holder(out)
    if holder is not None and _alive(holder):
        raise PlaybookError(f"{out} is being recorded by another `playbook record` (process {holder}); "
                            "choose another --out")
    if out.is_dir() and run_layout.is_run_dir(out):
        if not force:
            raise PlaybookError(f"{out} already holds a recorded run: pass --force to replace it, or another --out")
        shutil.rmtree(out)
    elif holder is not None and force:
        (out / LOCK).unlink(missing_ok=True)  # left by a `record` that was killed
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out / LOCK, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        holder = _lock_holder(out)  # None while the winner has not yet written its pid
        who = f" (process {holder})" if holder is not None else ""
        raise PlaybookError(f"{out} is being recorded by another `playbook record`{who}; choose "
                            "another --out" if holder is None or _alive(holder) else
                            f"{out} has a lock left by `playbook record` process {holder}, which has exited: pass "
                            "--force to record afresh") from None
    except OSError as exc:
        raise PlaybookError(f"cannot create run directory {out}: {exc.strerror or exc}") from None
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)


def _lock_holder(out: Path) -> int | None:
    """The pid in RUN_DIR's lock file (None when there is none or it cannot be read)."""
    try:
        return int((out / LOCK).read_text().strip() or "0") or None
    except (OSError, ValueError):
        return None


def _child_setup() -> None:  # runs in the child between fork and exec (single-threaded: nothing started yet)
    os.setpgrp()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass  # no prctl: the forwarded signals and the grace kill still stop the command


def _signal_group(started: list[subprocess.Popen], signum: int) -> None:
    """Send `signum` to the command's process group, if the command has started and is still there."""
    if started:
        try:
            os.killpg(started[0].pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def _spawn(cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
    """Start the command in its own process group (one forwarded signal reaches all of its processes), killed
    with SIGKILL if `record` dies (Linux), its stdout/stderr piped for the tee."""
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_child_setup)  # noqa: PLW1509 - spawned before any thread starts


def _open_log(path: Path) -> IO[bytes]:
    return open(path, "ab")  # noqa: SIM115 - closed by the last pump thread


class _Tee:
    """Copy the child's stdout and stderr, line by line, to ours and into `log` (whole lines, never interleaved
    mid-line). A write to the log that fails (a full disk) stops the log copy for good, counted in `problem`; the
    console copy goes on."""

    def __init__(self, child: subprocess.Popen, log: Path):
        self.log = log
        self.kept = self.lost = 0  # lines written to the log / not
        self.error: OSError | None = None
        self._lock = threading.Lock()
        try:
            self.sink: IO[bytes] | None = _open_log(log)
        except OSError as exc:
            self.error, self.sink = exc, None
        self._left = 2
        self.threads = [threading.Thread(target=self._pump, args=(src, dst), daemon=True, name=f"playbook-record-{n}")
                        for src, dst, n in ((child.stdout, sys.stdout.buffer, "stdout"),
                                            (child.stderr, sys.stderr.buffer, "stderr"))]
        for t in self.threads:
            t.start()

    @property
    def problem(self) -> str | None:
        """What the log lost, in one line (None when nothing)."""
        if self.error is None:
            return None
        reason = self.error.strerror or str(self.error)
        return (f"the command's output log {self.log.name} stopped after {self.kept} lines ({reason}); "
                f"{self.lost} later lines reached the console only")

    def join(self, timeout_s: float) -> None:
        for t in self.threads:
            t.join(timeout_s)

    def _pump(self, src: IO[bytes], dst: IO[bytes]) -> None:
        for line in iter(src.readline, b""):
            try:
                dst.write(line)
                dst.flush()
            except (OSError, ValueError):
                pass
            with self._lock:
                self._keep(line)
        src.close()
        with self._lock:
            self._left -= 1
            if self._left == 0:
                self._close_sink()

    def _keep(self, line: bytes) -> None:
        if self.sink is None:
            self.lost += 1
            return
        try:
            self.sink.write(line)
            self.sink.flush()
            self.kept += 1
        except OSError as exc:
            self.error = exc if exc.errno is not None else OSError(errno.EIO, str(exc))
            self.lost += 1
            self._close_sink()

    def _close_sink(self) -> None:
        sink, self.sink = self.sink, None
        if sink is not None:
            try:
                sink.close()
            except OSError as exc:  # the last buffered bytes could not be written
                self.error = self.error or exc


def _wait(child: subprocess.Popen, stop_asked: list[float], grace_s: float, forwarded: list[str]) -> int:
    """The child's return code; a child still running `grace_s` after a forwarded stop request is killed."""
    while True:
        try:
            return child.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            if stop_asked and time.monotonic() - stop_asked[0] > grace_s:
                forwarded.append("SIGKILL (grace period over)")
                try:
                    os.killpg(child.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                stop_asked.clear()


def _summary(out: Path, rec: object, status: int, merged: int) -> str:
    rows = getattr(rec, "_rows", {}) if rec is not None else {}
    sampler = getattr(rec, "sampler", None)
    gpus = len(getattr(sampler, "names", {}) or {}) if sampler is not None else 0
    parts = [f"{rows.get('telemetry', 0)} GPU rows ({gpus} GPUs)" if sampler is not None else "no GPU telemetry",
             f"{rows.get('host', 0)} host rows"]
    if rows.get("ib"):
        parts.append(f"{rows['ib']} InfiniBand rows")
    own = getattr(rec, "part", None)
    ranks = sorted(p.name for p in out.iterdir() if p.is_dir() and (own is None or p != own))
    if ranks:
        parts.append(f"{len(ranks)} rank folder(s) from the command")
    if merged:
        parts.append(f"merged {merged} leftover table(s)")
    return (f"playbook record: command exited with status {status}; run directory {out} "
            f"({', '.join(parts)}). Next: playbook diagnose {out}")
