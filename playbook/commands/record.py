"""`playbook record --out RUN_DIR -- COMMAND ...`: run a training command and record telemetry beside it.

What it does: starts COMMAND as a child process (in its own process group), samples this host's GPUs through NVML
(default 10 Hz) and the host (CPU per core, RSS of the command's process tree, disk and network rates) and any
InfiniBand ports until the command exits, then writes RUN_DIR (meta.json with the environment fingerprint, and
RUN_DIR/<host>-rank-1/ with telemetry / host / events / ib .parquet) and exits with the command's status.
Ctrl-C, SIGTERM, SIGHUP and SIGUSR1/2 are forwarded to the command's process group (a second Ctrl-C is forwarded
too); a command killed by signal N makes `record` exit with 128+N.

The child sees PLAYBOOK_RUN_DIR=RUN_DIR and PLAYBOOK_SAMPLER=external: a training script that uses
`playbook.probes.Recorder()` (no argument) writes its step timings into the same run directory, per rank, and
leaves GPU sampling to `record` so that no GPU is sampled twice. Multi-node: run one `record` per node into a
folder per node (or a shared filesystem path) and copy the folders together; parts never collide.

Read the result with `playbook info RUN_DIR` or `playbook diagnose RUN_DIR`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from playbook.errors import PlaybookError

HELP = "run a training command and record GPU / host telemetry beside it into a run directory"
EXAMPLES = """  playbook record --out runs/r1 -- torchrun --standalone --nproc-per-node 8 train.py --config big.yaml
  playbook record --out runs/r1 --hz 2 -- python train.py        2 Hz sampling for a days-long run
  playbook diagnose runs/r1                                      then: what made utilization oscillate
"""

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")


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
    parser.add_argument("--quiet", action="store_true", help="no summary line at the end")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                        help="the command to run, after `--`")  # not "command": the CLI's subcommand dest


def run(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise PlaybookError("no command given: playbook record --out RUN_DIR -- COMMAND ...")
    if not args.hz > 0:
        raise PlaybookError(f"--hz must be > 0, got {args.hz}")
    out = Path(args.out).resolve()
    from playbook import rundir
    from playbook.probes.recorder import Recorder, merge_run

    try:
        rundir.init_run(out, command=shlex.join(cmd))
    except OSError as exc:
        raise PlaybookError(f"cannot create run directory {out}: {exc}") from exc
    env = dict(os.environ, PLAYBOOK_RUN_DIR=str(out), PLAYBOOK_SAMPLER="external")
    try:
        child = _spawn(cmd, env)
    except FileNotFoundError as exc:
        raise PlaybookError(f"command not found: {cmd[0]}") from exc
    except OSError as exc:
        raise PlaybookError(f"cannot start {cmd[0]}: {exc}") from exc

    forwarded: list[str] = []
    previous = {}

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signal.Signals(signum).name)
        try:
            os.killpg(child.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    for name in FORWARDED:
        sig = getattr(signal, name, None)
        if sig is not None:
            previous[sig] = signal.signal(sig, forward)
    t0 = time.time()
    rec = Recorder(out, rank=-1, sample_hz=args.hz, host_hz=args.host_hz, flush_s=args.flush_s,
                   nvml=not args.no_nvml, host_probe=not args.no_host, interconnect=not args.no_ib,
                   pid=child.pid, gc=False, compile=False, cuda=False, nvtx=False, command=cmd, sample_here=True,
                   meta={"role": "playbook record", "child_pid": child.pid})
    try:
        try:
            rec.start()
        except PlaybookError as exc:  # recording failed; the command still runs to completion
            print(f"playbook record: not recording ({exc})", file=sys.stderr)
            rec = None
        if rec is not None:
            rec.event("start", detail=f"command: {shlex.join(cmd)[:400]}")
        rc = child.wait()
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
    if not args.quiet:
        print(_summary(out, rec, status, merged), file=sys.stderr)
    return status


def _spawn(cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
    """Start the command in its own process group, so that one forwarded signal reaches all of its processes."""
    if sys.version_info >= (3, 11):
        return subprocess.Popen(cmd, env=env, process_group=0)
    return subprocess.Popen(cmd, env=env, preexec_fn=os.setpgrp)  # noqa: PLW1509 - before any thread starts


def _summary(out: Path, rec: object, status: int, merged: int) -> str:
    rows = getattr(rec, "_rows", {}) if rec is not None else {}
    sampler = getattr(rec, "sampler", None)
    gpus = len(getattr(sampler, "names", {}) or {}) if sampler is not None else 0
    parts = [f"{rows.get('telemetry', 0)} GPU rows ({gpus} GPUs)" if sampler is not None else "no GPU telemetry",
             f"{rows.get('host', 0)} host rows"]
    if rows.get("ib"):
        parts.append(f"{rows['ib']} InfiniBand rows")
    ranks = sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.endswith("-rank-1"))
    if ranks:
        parts.append(f"{len(ranks)} rank folder(s) from the command")
    if merged:
        parts.append(f"merged {merged} leftover table(s)")
    return (f"playbook record: command exited with status {status}; run directory {out} "
            f"({', '.join(parts)}). Next: playbook diagnose {out}")
