"""`playbook watch [SOURCE]`: a live dashboard of this host's GPUs (or a Prometheus endpoint) that says why
utilization swings while the job runs.

One row per GPU: a utilization sparkline, power, SM clock and the status the diagnosis gives it; then the
processes on the GPUs (PID, user, GPU memory, command: NVML and psutil, refreshed with the diagnosis); below, the
rolling diagnosis of the last --window (period, duty cycle, synchrony, the top cause and its evidence), re-run
every --refresh seconds — skipped while the window's per-GPU utilization has not moved (WindowStats), and less
often when one run costs more than DIAG_BUDGET of a core allows. `--for 60s`
samples for a fixed time, prints the diagnosis and exits (one command instead of polling nvidia-smi by hand);
Ctrl-C (or SIGTERM / SIGHUP) stops the same way. `--out DIR` keeps the recording as a run directory (read it
back with `playbook diagnose DIR`). When stdout is not a terminal, one plain line per refresh replaces the
dashboard (on stderr with --for, so that stdout holds only the answer). SOURCE: auto (NVML, else `nvidia-smi -lms` in a subprocess), nvml, nvidia-smi, or
prometheus://HOST:PORT (dcgm-exporter series, re-read over the window; see `playbook diagnose --help`).
"""

from __future__ import annotations

import argparse
import math
import resource
import signal
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

from playbook.core.errors import InputError, PlaybookError
from playbook.core.units import duration_s

HELP = "live dashboard of GPU utilization with a rolling diagnosis (NVML, nvidia-smi or Prometheus)"
EXAMPLES = """  playbook watch                                   this host's GPUs until Ctrl-C
  playbook watch --for 60s                         sample a minute, print the diagnosis, exit
  playbook watch --for 10m --out runs/w1           ... and keep the recording as a run directory
  playbook watch prometheus://prom:9090 --match 'Hostname=~"node0[0-7]"'   a fleet through dcgm-exporter
  playbook watch --fake-nvml data_stall:8 --for 30s     a demo without a GPU (fake NVML, 8 s period)
"""

DIAG_BUDGET = 0.005  # share of a core the rolling diagnosis may use on average: half of the 1% target
SPARK = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 40
FLUSH_S = 30.0  # seconds between writes of the recording (bounded memory, little lost on a kill -9)
# a refresh re-diagnoses only when some GPU's window moved this much since the last diagnosis (utilization mean in
# points, share of polls below LOW_PCT), a GPU came or went, or an event arrived; and at least every MAX_SKIPS refreshes
CHANGE_PCT = 2.0
CHANGE_LOW_SHARE = 0.02
LOW_PCT = 50.0
MAX_SKIPS = 11


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", default="auto", metavar="SOURCE",
                        help="auto (default: NVML, else nvidia-smi), nvml, nvidia-smi, or prometheus://HOST:PORT")
    parser.add_argument("--for", dest="for_s", type=duration_s, default=None, metavar="DURATION",
                        help="sample this long (e.g. 60s, 10m), print the diagnosis and exit (default: until Ctrl-C)")
    parser.add_argument("--interval", type=duration_s, default=None, metavar="DURATION",
                        help="sampling interval (default 1s; a prometheus:// server is re-read every --refresh)")
    parser.add_argument("--refresh", type=duration_s, default=5.0, metavar="DURATION",
                        help="seconds between diagnosis refreshes (default 5s; stretched to keep its cost under "
                             f"{DIAG_BUDGET * 100:.1f}%% of a core)")
    parser.add_argument("--window", type=duration_s, default=600.0, metavar="DURATION",
                        help="how much recent telemetry the rolling diagnosis looks at (default 10m; at least --for)")
    parser.add_argument("--out", metavar="RUN_DIR", help="keep the recording as a run directory")
    parser.add_argument("--plain", action="store_true", help="plain lines even on a terminal (no dashboard)")
    parser.add_argument("--json", action="store_true", help="at the end, print the diagnosis as one JSON object")
    parser.add_argument("--step", type=duration_s, default=15.0, metavar="DURATION",
                        help="prometheus:// only: resolution asked of the server (default 15s)")
    parser.add_argument("--match", default=None, metavar="LABELS",
                        help="prometheus:// only: label matchers, e.g. 'job=\"dcgm\"'")
    parser.add_argument("--fake-nvml", default=None, metavar="SCENARIO[:PERIOD_S[:GPUS]]",
                        help="demo / test without a GPU: a fake NVML scenario (probes/fake_nvml.py), e.g. "
                             "data_stall:8 or pipeline:6:8")


def _fake(spec: str):
    from playbook.probes import fake_nvml

    name, *rest = spec.split(":")
    try:
        period = float(rest[0]) if rest else 8.0
        gpus = int(rest[1]) if len(rest) > 1 else 8
    except ValueError:
        raise InputError(f"--fake-nvml {spec!r}: expected SCENARIO[:PERIOD_S[:GPUS]], e.g. data_stall:8:4") from None
    try:
        return fake_nvml.scenario(name, gpus=gpus, period_s=period)
    except ValueError as exc:
        raise InputError(f"--fake-nvml: {exc}") from None


class _Stop(Exception):
    """Raised by the SIGTERM / SIGHUP handler to end the watch like Ctrl-C."""


def _raise_stop(signum, _frame):
    raise _Stop(signal.Signals(signum).name)


class RunWriter:
    """The recording as a run directory (run_layout.py layout; segments merged by probes/recorder.merge_segments)."""

    def __init__(self, out: str, host: str, source: str):
        from playbook.model import run_layout

        self.run = Path(out)
        try:
            run_layout.init_run(self.run, command=" ".join(sys.argv), role="playbook watch")
            self.part = run_layout.init_part(self.run, host, None, role="playbook watch", source=source)
        except OSError as exc:
            raise PlaybookError(f"cannot create run directory {out}: {exc}") from exc
        self.pending: list = []
        self.latest = None
        self.seq = 0
        self.rows = 0
        self.last_flush = time.monotonic()

    def add(self, got, replaces: bool) -> None:
        """Poll rows (or, for a re-reading source, its whole window) into the recording."""
        if replaces:
            self.latest = got  # a re-read window: only the last one is kept
        elif len(got):
            self.pending.extend(got)
            if time.monotonic() - self.last_flush >= FLUSH_S:
                self.flush()

    def flush(self) -> None:
        from playbook.model.run_layout import SEGMENT_DIR
        from playbook.sources.live import rows_frame

        self.last_flush = time.monotonic()
        if isinstance(self.pending, list):
            if not self.pending:
                return
            frame = rows_frame(self.pending)
        else:
            frame = self.pending
        self.pending = []
        self.seq += 1
        seg = self.part / SEGMENT_DIR
        seg.mkdir(exist_ok=True)
        tmp = seg / f"telemetry-{self.seq:06d}.tmp"
        frame.to_parquet(tmp, index=False)
        tmp.replace(seg / f"telemetry-{self.seq:06d}.parquet")
        self.rows += len(frame)

    def close(self, events) -> Path:
        from playbook.model import run_layout
        from playbook.model.run_layout import SEGMENT_DIR
        from playbook.probes.recorder import merge_segments

        if self.latest is not None and len(self.latest):
            self.pending = self.latest  # a telemetry table, written as it is
        self.flush()
        merge_segments(self.part, "telemetry")
        seg = self.part / SEGMENT_DIR
        if seg.is_dir() and not any(seg.iterdir()):
            seg.rmdir()
        if len(events):
            run_layout.write_table(self.part, "events", events)
        return self.run


class WindowStats:
    """Per GPU, running sums of the window's utilization (sum, valid polls, polls below LOW_PCT), kept up to date by
    the rows entering and leaving the window: deciding whether a refresh needs a new diagnosis costs O(new rows)."""

    def __init__(self):
        from playbook.model import schema

        self.util = schema.TELEMETRY_METRICS.index("util_pct")
        self.sums: dict[tuple, list] = {}

    def add(self, rows, sign: int = 1) -> None:
        """Count `rows` (poll() tuples) into the window (sign 1) or out of it (sign -1)."""
        for _t, host, gpu, _src, v in rows:
            u = v[self.util]
            if u == u:  # not NaN
                a = self.sums.setdefault((host, gpu), [0.0, 0, 0])
                a[0] += sign * u
                a[1] += sign
                a[2] += sign * (u < LOW_PCT)

    def snapshot(self) -> dict[tuple, tuple[float, float]]:
        """GPU → (mean utilization %, share of polls below LOW_PCT) over the window."""
        return {k: (s / n, low / n) for k, (s, n, low) in self.sums.items() if n > 0}

    @staticmethod
    def moved(a: dict, b: dict) -> bool:
        """Whether two snapshots differ enough for the diagnosis to change (see CHANGE_PCT)."""
        if a.keys() != b.keys():
            return True
        return any(abs(a[k][0] - b[k][0]) >= CHANGE_PCT or abs(a[k][1] - b[k][1]) >= CHANGE_LOW_SHARE for k in a)


class Panel:
    """What the dashboard shows per GPU: recent utilization (sparkline), latest power / SM clock / status."""

    def __init__(self, width: int = SPARK_WIDTH):
        self.width = width
        self.util: dict[str, deque] = {}
        self.latest: dict[str, dict[str, float]] = {}
        self.status: dict[str, str] = {}

    def add_rows(self, rows: list[tuple]) -> None:
        """One bar per poll per GPU (the mean utilization of its new rows); plain Python, no pandas per sample."""
        from playbook.model import schema

        at = {name: i for i, name in enumerate(schema.TELEMETRY_METRICS)}
        util, shown = at["util_pct"], [(c, at[c]) for c in ("util_pct", "power_w", "sm_clock_mhz")]
        acc: dict[str, list[float]] = {}
        for _t, host, gpu, _src, v in rows:
            gid = f"{host}:{gpu}"
            a = acc.setdefault(gid, [0.0, 0])
            if v[util] == v[util]:  # not NaN
                a[0] += v[util]
                a[1] += 1
            latest = self.latest.setdefault(gid, {})
            for col, i in shown:
                if v[i] == v[i]:
                    latest[col] = v[i]
        for gid, (total, n) in acc.items():
            self.util.setdefault(gid, deque(maxlen=self.width)).append(total / n if n else math.nan)

    def set_window(self, frame) -> None:
        """A re-read window (Prometheus): one bar per 1/width of it per GPU."""
        import numpy as np

        self.util.clear()
        if not len(frame):
            return
        ids = (frame["host"].astype(str) + ":" + frame["gpu"].astype(str)).to_numpy()
        t = frame["time"].astype("int64").to_numpy() / 1e9
        u = frame["util_pct"].to_numpy(np.float64)
        edges = np.linspace(t.min(), t.max() + 1e-9, self.width + 1)
        k = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, self.width - 1)
        for gid in np.unique(ids):
            mine = ids == gid
            bars = deque(maxlen=self.width)
            for b in range(self.width):
                sel = u[mine & (k == b) & np.isfinite(u)]
                bars.append(float(sel.mean()) if len(sel) else math.nan)
            self.util[gid] = bars
            latest = self.latest.setdefault(gid, {})
            for col in ("util_pct", "power_w", "sm_clock_mhz"):
                v = frame[col].to_numpy(np.float64)[mine]
                v = v[np.isfinite(v)]
                if len(v):
                    latest[col] = float(v[-1])

    def sparkline(self, gid: str) -> str:
        return "".join(" " if not math.isfinite(v) else SPARK[min(len(SPARK) - 1, max(0, int(v / 100 * len(SPARK))))]
                       for v in self.util.get(gid, ()))


def summary(d, seconds: float | None = None, source: str = "") -> str:
    """One line, the loss first: the share of GPU time lost, the oscillation (period, duty, synchrony), the top cause."""
    o = d.oscillation or {}
    n = len(d.gpus)
    head = f"{n} GPU{'s' if n != 1 else ''}" + (f", {seconds:.0f} s" if seconds is not None else "") + \
        (f" of {source}" if source else "")
    if not o.get("detected"):
        osc = "no oscillation"
    elif o.get("periodic"):
        osc = f"periodic {o['high_pct']:.0f}% ↔ {o['low_pct']:.0f}%, period {o['period_s']:.3g} s, " \
              f"duty cycle {o['duty_cycle']:.2f}"
    else:
        osc = f"irregular swings {o['high_pct']:.0f}% ↔ {o['low_pct']:.0f}%"
    if o.get("synchrony"):
        osc += f", {o['synchrony']}"
    top = d.hypotheses[0] if d.hypotheses else None
    word = (d.verdict or {}).get("confidence")
    cause = f"top cause {top['id']} ({word + ', ' if word else ''}score {top['score']:.2f})" if top else \
        "no cause ranked"
    acc = getattr(d, "accounting", None) or {}
    loss = ""
    if acc.get("wall_s"):
        unit = "GPU time" if acc.get("basis") == "gpu" else "wall time"
        loss = f"loses {acc['lost_share']:.0%} of {unit}" + (" (within noise)" if acc["lost_share"] <=
                                                            acc.get("noise_floor_share", 0) else "") + "; "
    return f"{head}: {loss}{osc}; {cause}"


def processes(source: Any) -> list[dict]:
    """The compute processes on the source's GPUs (NVML only: nvidia-smi's loop and Prometheus do not say)."""
    get = getattr(source, "processes", None)
    return get() if get is not None else []


def process_lines(procs: list[dict], limit: int = 16) -> str:
    """The processes as plain lines, one per (GPU, PID): "GPU 0  PID 4242  alice  61,000 MiB  python train.py"."""
    if not procs:
        return "processes: none seen on the GPUs (or not reported by this source)"
    lines = [f"processes on the GPUs ({len(procs)}):"]
    for p in sorted(procs, key=lambda p: (str(p.get("host")), p["gpu"], p["pid"]))[:limit]:
        lines.append(f"  GPU {p['gpu']}  PID {p['pid']}  {p['user']}  {_mib(p['gpu_mem_mib'])}  {p['command']}")
    if len(procs) > limit:
        lines.append(f"  … and {len(procs) - limit} more")
    return "\n".join(lines)


def _mib(v: float) -> str:
    return "? MiB" if v is None or not math.isfinite(v) else f"{v:,.0f} MiB"


def run(args: argparse.Namespace) -> int:
    import logging

    from playbook.diagnosis import diagnose
    from playbook.sources import is_url
    from playbook.sources.live import open_source

    logging.getLogger("playbook.probes").addHandler(logging.NullHandler())  # their warnings are printed below
    prom = is_url(args.source)
    interval = args.interval or (args.refresh if prom else 1.0)  # a server is re-read once per refresh
    window = max(args.window, args.for_s or 0.0)
    nvml = _fake(args.fake_nvml) if args.fake_nvml else None
    try:
        source = open_source(args.source, interval_s=interval, nvml=nvml, window_s=window, step_s=args.step,
                             match=args.match)
    except InputError as exc:
        if prom or nvml is not None:
            raise
        raise InputError(f"{exc}. Without a GPU here: `playbook watch --fake-nvml data_stall:8` shows the "
                         "dashboard on a fake NVML; `playbook watch prometheus://HOST:9090` watches GPUs elsewhere "
                         "through dcgm-exporter and Prometheus") from None
    host = getattr(source, "host", "prometheus")
    writer = RunWriter(args.out, host, source.name) if args.out else None
    session = _Session(args, source, interval, window, writer, diagnose)
    _warm_up(diagnose)
    previous = {s: signal.signal(s, _raise_stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    t0 = time.monotonic()
    cpu0 = _cpu_s()
    stopped = None
    try:
        session.loop(t0, cpu0)
    except (KeyboardInterrupt, _Stop) as exc:
        stopped = "Ctrl-C" if isinstance(exc, KeyboardInterrupt) else str(exc)
    finally:
        if session.live is not None:
            session.live.stop()
        for s, h in previous.items():
            signal.signal(s, h)
        source.stop()
    elapsed = time.monotonic() - t0
    if not source.replaces:
        last = source.poll()
        session.rows.extend(last)
        session.stats.add(last)
        if writer is not None:
            writer.add(last, False)
    cost, loop_diag = _share(cpu0, t0), session.diag_cost
    session.refresh(procs=False)  # the source has stopped: the processes are those of the last refresh
    sys.stdout.flush()
    if writer is not None:
        out = writer.close(source.events_table())
        print(f"recording: {out} (read it with `playbook diagnose {out}`)", file=sys.stderr)
    session.print_warnings()
    print(f"watch: {elapsed:.0f} s{' (stopped by ' + stopped + ')' if stopped else ''}; cost "
          f"{cost:.2%} of a core, of which diagnosis {loop_diag / max(elapsed, 1e-9):.2%}", file=sys.stderr)
    diag = session.diag
    if diag is None:
        raise InputError(f"{source.name}: no GPU samples in {elapsed:.0f} s")
    from playbook.commands import emit
    from playbook.commands.diagnose import render

    if not args.json:
        print(summary(diag, elapsed, source.name) + "\n", flush=True)
    code = emit(diag, args.json, render)
    if not args.json:  # after the answer: who holds each GPU
        print("\n" + process_lines(session.procs), flush=True)
    return code


class _Session:
    """One `playbook watch`: the rows in the window, the panel, the latest diagnosis and what it cost."""

    def __init__(self, args: argparse.Namespace, source: Any, interval: float, window: float,
                 writer: RunWriter | None, diagnose: Any):
        self.args, self.source, self.interval, self.window = args, source, interval, window
        self.writer, self.diagnose = writer, diagnose
        self.shown = 0
        self.print_warnings()
        self.tty = sys.stdout.isatty() and not args.plain and not args.json
        self.panel = Panel()
        self.rows: deque = deque()  # incremental sources: recent poll() rows, trimmed to the window at each refresh
        self.frames: list = []  # a re-reading source (Prometheus): its latest window
        self.diag, self.diag_at, self.diag_cost = None, 0.0, 0.0
        self.procs: list[dict] = []  # the compute processes on the GPUs, as of the last refresh
        self.stats, self.diag_inputs, self.skips = WindowStats(), None, 0  # the window when last diagnosed
        self.live = _live() if self.tty else None

    def print_warnings(self) -> None:
        """Print the source's warnings not printed yet (to stderr)."""
        for w in self.source.warnings[self.shown:]:
            print(f"warning: {w}", file=sys.stderr)
        self.shown = len(self.source.warnings)

    def window_frame(self):
        """The telemetry of the last `window` seconds (a re-reading source's latest window)."""
        from playbook.model import schema
        from playbook.sources.live import rows_frame

        if self.source.replaces:
            return self.frames[-1] if self.frames else schema.telemetry_frame(interval_s=self.interval)
        self.trim()
        return rows_frame(list(self.rows))

    def trim(self) -> None:
        """Drop the rows older than the window (and their counts in the window's statistics)."""
        cut = time.time_ns() - int(self.window * 1e9)
        while self.rows and self.rows[0][0] < cut:
            self.stats.add([self.rows.popleft()], -1)

    def unchanged(self) -> bool:
        """Whether the window is, for the diagnosis, the one last diagnosed (see CHANGE_PCT); counts the skip."""
        if self.source.replaces or self.diag is None or self.skips >= MAX_SKIPS:
            return False
        self.trim()
        inputs = (self.stats.snapshot(), len(getattr(self.source, "events", ())))
        if inputs[1] != self.diag_inputs[1] or WindowStats.moved(inputs[0], self.diag_inputs[0]):
            return False
        self.skips += 1
        return True

    def refresh(self, force: bool = True, procs: bool = True) -> None:
        """Diagnose the window (when it holds two samples or more; unless `force`, only when it changed since the
        last diagnosis) and, with `procs` (the source still runs), list the GPUs' processes again; its thread CPU
        time adds to diag_cost."""
        from playbook.model import schema

        c0 = time.thread_time()
        if procs:
            self.procs = processes(self.source)
        if not force and self.unchanged():
            self.diag_cost += time.thread_time() - c0
            return
        tel = self.window_frame()
        if len(tel) < 2:
            return
        self.diag_inputs, self.skips = (self.stats.snapshot(), len(getattr(self.source, "events", ()))), 0
        bundle = schema.Bundle(inputs=[self.source.name], telemetry=tel, events=self.source.events_table())
        self.diag = self.diagnose(bundle)
        self.diag_at = time.monotonic()
        self.diag_cost += time.thread_time() - c0
        for g in self.diag.gpus:
            self.panel.status[g["id"]] = g["status"]

    def take(self, got) -> None:
        """Add one poll's rows to the window, the panel and the recording."""
        if not len(got):
            return
        if self.source.replaces:
            self.frames[:] = [got]
            self.panel.set_window(got)
        else:
            self.rows.extend(got)
            self.stats.add(got)
            self.panel.add_rows(got)
        if self.writer is not None:
            self.writer.add(got, self.source.replaces)

    def loop(self, t0: float, cpu0: float) -> None:
        """Poll every `interval` s and re-diagnose every `refresh` s (stretched to keep the diagnosis under
        DIAG_BUDGET of a core once warm) until --for runs out; raises KeyboardInterrupt / _Stop to end early."""
        args = self.args
        next_diag = time.monotonic() + args.refresh
        warm = False  # the first diagnosis may still pay one-off costs: it does not stretch the refresh interval
        shown_procs: set = set()
        if self.live is not None:
            self.live.start()
        while True:
            remaining = None if args.for_s is None else args.for_s - (time.monotonic() - t0)
            if remaining is not None and remaining <= 0:
                break
            time.sleep(min(self.interval, remaining) if remaining is not None else self.interval)
            self.take(self.source.poll())
            self.print_warnings()
            now = time.monotonic()
            if now >= next_diag:
                c0 = time.thread_time()
                self.refresh(force=False)
                spent = time.thread_time() - c0
                next_diag = now + (max(args.refresh, spent / DIAG_BUDGET) if warm else args.refresh)
                warm = warm or self.diag is not None
                if not self.tty and self.diag is not None:  # with --for, stdout is kept for the answer at the end
                    out = sys.stderr if args.for_s else sys.stdout
                    print(f"[{now - t0:5.0f} s] {summary(self.diag)}", flush=True, file=out)
                    held = {(p.get("host"), p["gpu"], p["pid"]) for p in self.procs}
                    if held != shown_procs:  # the processes, when they change
                        print(process_lines(self.procs), flush=True, file=out)
                        shown_procs = held
            if self.live is not None:
                self.live.update(_dashboard(self.panel, self.diag, self.source.name, now - t0,
                                            self.diag_at and now - self.diag_at, _share(cpu0, t0), self.procs),
                                 refresh=True)


def _warm_up(diagnose) -> None:
    """One diagnosis of a small LABELED SYNTHETIC swing (4 GPUs, 2 min, every metric) at start-up, so that the
    analyses' one-off imports (scipy.stats, scipy.cluster) and caches are not charged to the first refresh (nor
    stretch the refresh interval)."""
    from playbook.labs.synthetic import simulate_bundle

    try:
        diagnose(simulate_bundle("oscillation", hosts=1, gpus_per_host=4, duration_s=120.0, period_s=20.0)[0])
    except Exception:  # a failed warm-up only costs the first refresh its imports
        pass


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _share(cpu0: float, t0: float) -> float:
    """CPU time of this process since sampling began, as a share of one core."""
    return (_cpu_s() - cpu0) / max(time.monotonic() - t0, 1e-9)


def _live():
    from rich.console import Console
    from rich.live import Live

    return Live(console=Console(), auto_refresh=False, transient=False, redirect_stderr=False)


def _dashboard(panel: Panel, d, source: str, elapsed: float, age: float, cost: float, procs: list[dict] = ()):
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    head = Text(f"playbook watch — {source} — {elapsed:.0f} s — cost {cost:.2%} of a core — Ctrl-C stops",
                style="bold")
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (("GPU", "left"), ("utilization", "left"), ("util", "right"), ("power", "right"),
                      ("SM clock", "right"), ("status", "left")):
        table.add_column(col, justify=just)
    ids = sorted(panel.latest)
    for gid in ids[:64]:
        row = panel.latest[gid]
        status = panel.status.get(gid, "…")
        style = "green" if status == "ok" else "yellow" if status in ("…", "underutilized", "saturated") else "red"
        table.add_row(gid, Text(panel.sparkline(gid), style="cyan"), _fmt(row.get("util_pct"), "%"),
                      _fmt(row.get("power_w"), " W"), _fmt(row.get("sm_clock_mhz"), " MHz"), Text(status, style=style))
    parts = [head, table]
    if len(ids) > 64:
        parts.append(Text(f"… and {len(ids) - 64} more GPUs"))
    if procs:
        ptable = Table(box=None, pad_edge=False, header_style="bold", title_justify="left")
        for col, just in (("GPU", "left"), ("PID", "right"), ("user", "left"), ("GPU memory", "right"),
                          ("command", "left")):
            ptable.add_column(col, justify=just, overflow="ellipsis", no_wrap=True)
        shown = sorted(procs, key=lambda p: (str(p.get("host")), p["gpu"], p["pid"]))
        for p in shown[:16]:
            ptable.add_row(f"{p.get('host')}:{p['gpu']}", str(p["pid"]), p["user"], _mib(p["gpu_mem_mib"]),
                           p["command"])
        parts += [Text("processes", style="bold"), ptable]
        if len(procs) > 16:
            parts.append(Text(f"… and {len(procs) - 16} more processes"))
    if d is None:
        parts.append(Text("diagnosis: gathering samples…", style="dim"))
    else:
        parts.append(Text(f"diagnosis ({age:.0f} s ago): {summary(d)}", style="bold"))
        top = d.hypotheses[0] if d.hypotheses else None
        if top:
            for e in top["evidence"][:2]:
                parts.append(Text(f"  - {e}"))
            parts.append(Text(f"  next: {top['next_step']}", style="dim"))
    return Group(*parts)


def _fmt(v, unit: str) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.0f}{unit}"
