"""What `playbook watch` costs while it runs: CPU time as a share of one core at 1 Hz, 8 GPUs.

What it checks
    `playbook watch --fake-nvml data_stall:8:8 --for DURATION --interval 1s` in a child process, three ways:
    plain lines (stdout a pipe) with the rolling diagnosis, plain lines with the rolling diagnosis switched off
    (--refresh 1h: sampling and the loop alone), and the rich dashboard on a pseudo-terminal. The figure is watch's
    own accounting: CPU seconds of the process from the first sample to the last (getrusage, every thread) ÷ wall
    seconds — start-up imports and the final diagnosis are outside it. The fake NVML is pure Python and holds the
    GIL in every call where pynvml's ctypes calls release it: an upper bound for the sampling side.

The exact command
    python benchmarks/watch.py                 # 3 × 60 s
    python benchmarks/watch.py --seconds 300   # longer runs amortise the first diagnosis' one-off imports

How to read the result
    One line per variant: the share of a core (target ≤ 1% at 1 Hz) and the part spent in the rolling diagnosis.
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import subprocess
import sys
import threading


def run(seconds: int, extra: list[str], tty: bool) -> str:
    cmd = [sys.executable, "-m", "playbook", "watch", "--fake-nvml", "data_stall:8:8", "--for", f"{seconds}s",
           "--interval", "1s", *extra]
    if not tty:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 300)
        return proc.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=slave, stderr=subprocess.PIPE, text=True)
    os.close(slave)

    def drain():
        try:
            while os.read(master, 65536):
                pass
        except OSError:
            pass

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    _out, err = proc.communicate(timeout=seconds + 300)
    os.close(master)
    return err


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=60)
    args = ap.parse_args(argv)
    for label, extra, tty in (("plain, rolling diagnosis every 5 s+", ["--plain"], False),
                              ("plain, sampling only (--refresh 1h)", ["--plain", "--refresh", "1h"], False),
                              ("rich dashboard on a pseudo-terminal", [], True)):
        err = run(args.seconds, extra, tty)
        m = re.search(r"cost ([\d.]+)% of a core, of which diagnosis ([\d.]+)%", err)
        if not m:
            print(f"{label}: no cost line\n{err[-1500:]}")
            return 1
        print(f"{label:<40} {float(m.group(1)):5.2f}% of a core (diagnosis {float(m.group(2)):.2f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
