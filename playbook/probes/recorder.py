"""Recorder: every probe behind one context manager, writing this process's part of a run directory.

    with Recorder("runs/r1") as rec:
        for i, batch in enumerate(rec.timed(loader)):
            with rec.timer.step(i, tokens=n):
                with rec.timer.phase("fwd"):
                    ...
            with rec.event_span("checkpoint", step=i):
                ...

What runs where: the step timer and event log (GC pauses, torch.compile recompilations) in every rank; the NVML
sampler, host probe and InfiniBand counters only in LOCAL_RANK 0 (or a process that is not distributed), so one
host's GPUs are sampled once; none of the samplers when `PLAYBOOK_SAMPLER=external` (set by `playbook record`,
which samples beside the command). `run_dir=None` uses `PLAYBOOK_RUN_DIR` (also set by `playbook record`).

Writes: RUN_DIR/meta.json (run-level, with the environment fingerprint under "env"), and RUN_DIR/<host>-rank<R>/
(<host>-pid<PID>/ for a process without a torch rank, so two recordings on a host never share a folder)
with meta.json (host, rank, world size, probe statistics, fingerprint), telemetry / steps / events / host /
ib .parquet. Rows are flushed every `flush_s` seconds from a background thread into
<part>/segments/<table>-NNNNNN.parquet (bounded memory), and merged into the table files at exit; a run killed
before exit keeps its segments, and `merge_segments(part)` (run by `playbook record` after the command exits)
merges them.

After `start()` nothing raises into the training loop: a failing probe logs one warning and stops.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from playbook.core.errors import ProbeError
from playbook.model import run_layout
from playbook.model.run_layout import SEGMENT_DIR
from playbook.probes.event_log import EventLog
from playbook.probes.loader import Timed
from playbook.probes.step_timer import StepTimer

log = logging.getLogger("playbook.probes")

MAX_UNWRITTEN_ROWS = 2_000_000  # rows per table kept for a retry after a failed write; more are dropped, counted
# Tables a part folder can hold (run_layout.TABLE_FILES, including the InfiniBand counters ib.parquet).
PART_FILES = run_layout.TABLE_FILES


MAX_HZ = 100.0  # NVML refreshes its counters at most every few ms-tens of ms; faster sampling repeats values
MIN_FLUSH_S = 0.01  # a flush writes Parquet segments (~ms each): 100/s is already more than any run needs


def check_rate(name: str, hz: Any, most: float = MAX_HZ) -> float:
    """`hz` as a float in (0, most] Hz, else a one-line ProbeError (inf or 0 would burn a core beside training)."""
    try:
        value = float(hz)
    except (TypeError, ValueError):
        raise ProbeError(f"{name} must be a number of Hz, got {hz!r}") from None
    if not (math.isfinite(value) and 0 < value <= most):
        raise ProbeError(f"{name} must be between 0 and {most:g} Hz (exclusive of 0), got {hz!r}")
    return value


def check_period(name: str, seconds: Any, least: float = MIN_FLUSH_S) -> float:
    """`seconds` as a finite float ≥ least, else a one-line ProbeError."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        raise ProbeError(f"{name} must be a number of seconds, got {seconds!r}") from None
    if not (math.isfinite(value) and value >= least):
        raise ProbeError(f"{name} must be a finite number of seconds ≥ {least:g}, got {seconds!r}")
    return value


def _alive(pid: int) -> bool:
    """Whether process `pid` exists (a zombie counts as exited only once reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _env_int(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


@dataclass(frozen=True)
class Rates:
    """How often the recorder samples and writes; refused in one line when a rate would burn a core.

    sample_hz: NVML sampling rate (Hz, at most MAX_HZ). host_hz: host-probe rate (Hz; None: min(sample_hz, 2)).
    flush_s: seconds between background writes (at least MIN_FLUSH_S).
    """

    sample_hz: float = 10.0
    host_hz: float | None = None
    flush_s: float = 30.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sample_hz", check_rate("Recorder: sample_hz", self.sample_hz, MAX_HZ))
        if self.host_hz:
            object.__setattr__(self, "host_hz", check_rate("Recorder: host_hz", self.host_hz, MAX_HZ))
        object.__setattr__(self, "flush_s", check_period("Recorder: flush_s", self.flush_s))

    @property
    def host_rate(self) -> float:
        """The host-probe rate in Hz (host_hz, or min(sample_hz, 2) when unset)."""
        return float(self.host_hz) if self.host_hz else min(self.sample_hz, 2.0)


@dataclass(frozen=True)
class Hooks:
    """What tests and `playbook record` put in place of this process's own machine and rule.

    nvml_module: a pynvml stand-in (probes.fake_nvml). sysfs_root: where /sys is (InfiniBand counters).
    gpus: GPU indices to sample (None: all). pid: root of the process tree whose RSS the host probe sums
    (None: this process, or the torchrun agent above it). sample_here: force the samplers on/off regardless of
    LOCAL_RANK and PLAYBOOK_SAMPLER (None: that rule).
    """

    nvml_module: Any = None
    sysfs_root: str | os.PathLike = "/sys"
    gpus: list[int] | None = None
    pid: int | None = None
    sample_here: bool | None = None


class Recorder:
    """Records a training process into RUN_DIR; see the module docstring.

    run_dir: the run directory (None: $PLAYBOOK_RUN_DIR). rank: None reads $RANK (-1 when unset; 0 under
    `playbook record`, whose own sampler part is rank -1). host: the host name (default socket.gethostname()).
    rates: sampling and flush rates (Rates; default 10 Hz NVML, 2 Hz host, 30 s flushes).
    nvml / host_probe / interconnect: enable the GPU sampler, the psutil host probe, the InfiniBand sysfs counters.
    cuda / nvtx: passed to StepTimer. gc / compile: record GC pauses / torch.compile (re)compilations.
    command: the command line for meta.json (default sys.argv). meta: extra keys for the part's meta.json.
    hooks: stand-ins for the machine (Hooks: fake NVML, sysfs root, GPU list, host-probe pid, sampler rule).
    """

    def __init__(self, run_dir: str | os.PathLike | None = None, rank: int | None = None, host: str | None = None,
                 *, rates: Rates | None = None, nvml: bool = True, host_probe: bool = True,
                 interconnect: bool = True, cuda: bool | None = None, nvtx: bool = True, gc: bool = True,
                 compile: bool = True, command: list[str] | str | None = None, meta: dict[str, Any] | None = None,
                 hooks: Hooks | None = None):
        run_dir = run_dir if run_dir is not None else os.environ.get("PLAYBOOK_RUN_DIR")
        if not run_dir:
            raise ProbeError("Recorder: no run directory (pass run_dir or set PLAYBOOK_RUN_DIR)")
        self.rates = rates if rates is not None else Rates()
        self.hooks = hooks if hooks is not None else Hooks()
        self.run_dir = Path(run_dir)
        self.rank = rank if rank is not None else _env_int("RANK")
        # a torch rank names the part; without one the process does (two recordings on a host never share one)
        self._by_pid = self.rank is None or self.rank < 0
        if self.rank is None and os.environ.get("PLAYBOOK_SAMPLER") == "external":
            self.rank = 0  # a single-process script under `playbook record` (whose own part is rank -1)
        self.local_rank = _env_int("LOCAL_RANK")
        self.world_size = _env_int("WORLD_SIZE")
        self.host = host or socket.gethostname()
        self.sample_hz = self.rates.sample_hz
        self.host_hz = self.rates.host_rate
        self.flush_s = self.rates.flush_s
        self.command = command
        self.extra_meta = dict(meta or {})
        samples_here = self.hooks.sample_here if self.hooks.sample_here is not None else (
            self.local_rank in (None, 0) and os.environ.get("PLAYBOOK_SAMPLER") != "external")
        self._want = {"nvml": nvml and samples_here, "host": host_probe and samples_here,
                      "ib": interconnect and samples_here}
        self.timer = StepTimer(self.host, self.rank, cuda=cuda, nvtx=nvtx, keep=False)
        self.events = EventLog(self.host, self.rank, step_of=lambda: self.timer.current_step, keep=False)
        self._gc, self._compile = gc, compile
        self.sampler: Any = None
        self.host_probe: Any = None
        self.ib: Any = None
        self.part: Path | None = None
        self.warnings: list[str] = []
        self.incomplete: list[str] = []  # what a failed write lost, one line each (set by close)
        self._seq = 0
        self._rows = {name: 0 for name in PART_FILES}
        self._unwritten: dict[str, list[pd.DataFrame]] = {}
        self._dropped: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        self._started = self._closed = False
        self._t0 = time.time()
        self._fingerprint: dict[str, Any] = {}
        self._profilers: list[Any] = []

    def _replace_finished_parts(self) -> None:
        """A rank-less recording replaces this host's rank-less parts whose process has exited (an earlier run
        of the same script into the same folder, as a rerun lab does); parts of live processes (the sampler of
        `playbook record`, a concurrent job) are kept, so two recordings at once never mix or lose rows."""
        for other in self.run_dir.glob(f"{self.host}-pid*"):
            if other == self.part or not other.is_dir():
                continue
            try:
                pid = int(json.loads((other / "meta.json").read_text()).get("pid"))
            except (OSError, ValueError, TypeError, AttributeError):
                continue
            if pid != os.getpid() and not _alive(pid):
                self._warn(f"{other}: replacing an earlier recording (process {pid} has exited)", level=logging.INFO)
                shutil.rmtree(other, ignore_errors=True)

    def part_name(self) -> str:
        """This writer's folder: "<host>-rank<R>" with a torch rank, else "<host>-pid<PID>" (unique per process)."""
        return f"{self.host}-pid{os.getpid()}" if self._by_pid else run_layout.part_name(self.host, self.rank)

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> Recorder:
        """Create the part folder and start the probes. Raises ProbeError only when the folder cannot be made."""
        if self._started:
            return self
        try:
            self._fingerprint = self._take_fingerprint()
            run_layout.init_run(self.run_dir, command=self._fingerprint.get("command"), env=self._fingerprint)
            self.part = run_layout.init_part(self.run_dir, self.host, self.rank, world_size=self.world_size,
                                         started=_utc(self._t0), name=self.part_name())
        except OSError as exc:
            raise ProbeError(f"Recorder: cannot write run directory {self.run_dir}: {exc}") from exc
        if self._by_pid:
            self._replace_finished_parts()
        stale = [f for f in PART_FILES.values() if (self.part / f).exists()]
        if stale or (self.part / SEGMENT_DIR).exists():
            self._warn(f"{self.part}: replacing an earlier recording in this folder", level=logging.INFO)
            for f in stale:
                (self.part / f).unlink(missing_ok=True)
            shutil.rmtree(self.part / SEGMENT_DIR, ignore_errors=True)
        self._started = True
        self._start_probes()
        if self._gc:
            self.events.watch_gc()
        if self._compile:
            self.events.watch_compile()
        self._flusher = threading.Thread(target=self._flush_loop, name="playbook-recorder-flush", daemon=True)
        self._flusher.start()
        return self

    def _start_probes(self) -> None:
        def make_nvml() -> Any:
            from playbook.probes.nvml import NvmlSampler

            return NvmlSampler(self.host, hz=self.sample_hz, nvml=self.hooks.nvml_module, gpus=self.hooks.gpus)

        def make_host() -> Any:
            from playbook.probes.host import HostProbe

            return HostProbe(self.host, hz=self.host_hz, pid=self.hooks.pid or _tree_root())

        def make_ib() -> Any:
            from playbook.probes.interconnect import IbProbe

            return IbProbe(self.host, hz=min(self.sample_hz, 1.0), root=self.hooks.sysfs_root)

        for key, attr, make in (("nvml", "sampler", make_nvml), ("host", "host_probe", make_host),
                                ("ib", "ib", make_ib)):
            if not self._want[key]:
                continue
            probe = None
            try:
                probe = make()
                started = probe.start()
            except Exception as exc:
                self._warn(f"Recorder: {key} probe not started ({type(exc).__name__}: {exc})")
                started = False
            if not started and probe is not None:
                for w in probe.warnings:  # e.g. "NVML not available ...; recording host metrics only"
                    self.warnings.append(w)  # already logged once by the probe
            setattr(self, attr, probe if started else None)

    def _take_fingerprint(self) -> dict[str, Any]:
        try:
            from playbook.probes.fingerprint import fingerprint

            return fingerprint(command=self.command, nvml=self.hooks.nvml_module)
        except Exception as exc:
            self._warn(f"Recorder: environment fingerprint incomplete ({type(exc).__name__}: {exc})")
            return {}

    def close(self) -> None:
        """Stop the probes, resolve in-flight CUDA timings, write and merge every table, finish meta.json."""
        if not self._started or self._closed:
            return
        self._closed = True
        try:
            for prof in self._profilers:
                prof.close()
            self._stop.set()
            if self._flusher is not None:
                self._flusher.join(30)
            for probe in (self.sampler, self.host_probe, self.ib):
                if probe is not None:
                    probe.stop()
            self.timer.close()
            self.events.close()
            try:
                self.flush()
            except Exception as exc:
                self._lost(exc)
            else:
                self._lost(None)
            for name in PART_FILES:
                merge_segments(self.part, name)
            seg = self.part / SEGMENT_DIR
            if seg.is_dir() and not any(seg.iterdir()):
                seg.rmdir()
            self._write_part_meta()
        except Exception as exc:  # never raise into the training script
            self._warn(f"Recorder: closing {self.run_dir} failed ({type(exc).__name__}: {exc})")

    def _lost(self, exc: Exception | None) -> None:
        """Count into `incomplete` the rows the last write left unwritten (`exc`) and those dropped before."""
        lost = dict(self._dropped)
        for name, frames in self._unwritten.items():
            lost[name] = lost.get(name, 0) + sum(len(f) for f in frames)
        self._unwritten = {}
        if any(lost.values()):
            why = f" ({exc.strerror or exc})" if isinstance(exc, OSError) else f" ({type(exc).__name__}: {exc})" \
                if exc is not None else ""
            self.incomplete.append(f"{self.part}: rows not written{why}: "
                                   + ", ".join(f"{n} {name}" for name, n in lost.items() if n))
            self._warn(f"Recorder: incomplete recording: {self.incomplete[-1]}")

    def _write_part_meta(self) -> None:
        path = self.part / "meta.json"
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            info = {}
        probes: dict[str, Any] = {}
        for key, probe in (("nvml", self.sampler), ("host", self.host_probe), ("ib", self.ib)):
            if probe is not None:
                probes[key] = probe.stats()
        info.update({
            "host": self.host, "rank": -1 if self.rank is None else self.rank, "local_rank": self.local_rank,
            "world_size": self.world_size, "pid": os.getpid(), "started": _utc(self._t0), "ended": _utc(time.time()),
            "sample_hz": self.sample_hz, "probes": probes, "rows": dict(self._rows),
            "rows_dropped": dict(self._dropped),
            "gc": self.events.gc_stats(), "compile": self.events.compile_stats(),
            "steps_timed": self.timer.steps_done, "step_timer": "cuda" if self.timer.cuda else "cpu",
            "warnings": self.warnings, "env": self._fingerprint, **self.extra_meta,
        })
        if self.incomplete:
            info["incomplete"] = list(self.incomplete)
        run_layout.write_json(path, info)

    # ------------------------------------------------------------------ writing
    def _flush_loop(self) -> None:
        while not self._stop.wait(self.flush_s):
            try:
                self.flush()
            except Exception as exc:
                self._warn(f"Recorder: periodic write failed ({type(exc).__name__}: {exc}); will retry")

    def flush(self) -> None:
        """Write the rows gathered since the last flush as segment files (called periodically off the hot path)."""
        if self.part is None:
            return
        with self._lock:
            out: dict[str, pd.DataFrame] = {}
            if self.sampler is not None:
                for t, gpu, kind, detail in self.sampler.drain_events():
                    self.events.event(kind, step=-1, detail=f"gpu {gpu}: {detail}", time_ns=t)
            rows = self.timer.drain()
            if rows:
                out["steps"] = self.timer.to_frame(rows)
            rows = self.events.drain()
            if rows:
                out["events"] = self.events.to_frame(rows)
            for name, probe in (("telemetry", self.sampler), ("host", self.host_probe), ("ib", self.ib)):
                if probe is not None:
                    rows = probe.drain()
                    if rows:
                        out[name] = probe.to_frame(rows)
            for name, frames in self._unwritten.items():  # retry what a failed write kept
                if name in out:
                    frames = [*frames, out[name]]
                out[name] = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
            self._unwritten = {}
            if not out:
                return
            self._seq += 1
            failed = None
            for name, frame in out.items():
                tmp = self.part / SEGMENT_DIR / f"{name}-{self._seq:06d}.tmp"
                try:
                    tmp.parent.mkdir(exist_ok=True)
                    frame.to_parquet(tmp, index=False)
                    tmp.replace(tmp.with_suffix(".parquet"))
                    self._rows[name] += len(frame)
                except Exception as exc:
                    failed = exc
                    tmp.unlink(missing_ok=True)  # no 0-byte .tmp left behind (a full disk)
                    if len(frame) <= MAX_UNWRITTEN_ROWS:
                        self._unwritten[name] = [frame]
                    else:
                        self._dropped[name] = self._dropped.get(name, 0) + len(frame)
            if failed is not None:
                raise failed

    def _warn(self, message: str, level: int = logging.WARNING) -> None:
        if message in self.warnings:  # once per distinct message
            return
        self.warnings.append(message)
        log.log(level, "%s", message)

    # ------------------------------------------------------------------ training-loop API
    def timed(self, iterable: Iterable[Any], phase: str = "data") -> Timed:
        """Wrap a loader: time blocked in next() becomes `phase` of the current/next step."""
        return Timed(iterable, self.timer, phase)

    def step(self, i: int, tokens: float | None = None):
        """Same as `rec.timer.step(i, tokens)`."""
        return self.timer.step(i, tokens)

    def phase(self, name: str):
        """Same as `rec.timer.phase(name)`."""
        return self.timer.phase(name)

    def event(self, kind: str, step: int | None = None, duration_s: float | None = None, detail: str = "") -> None:
        """Record an instantaneous (or already-timed) event."""
        self.events.event(kind, step=step, duration_s=duration_s, detail=detail)

    def event_span(self, kind: str, step: int | None = None, detail: str = ""):
        """Context manager recording an event with the block's duration."""
        return self.events.event_span(kind, step=step, detail=detail)

    def profiler(self, **kwargs: Any) -> Any:
        """Profiler windows writing into this part's traces/ folder (see playbook.probes.profiler.ProfilerWindows);
        stepped by the step timer and, with `trigger_util_pct`, triggered by this recorder's sampler."""
        from playbook.probes.profiler import ProfilerWindows

        if self.part is None:
            self.start()
        kwargs.setdefault("rank", self.rank)
        prof = ProfilerWindows(self.part / "traces", timer=self.timer, sampler=self.sampler, events=self.events,
                               **kwargs)
        self._profilers.append(prof)
        return prof

    def bundle(self) -> Any:
        """The run directory read back (playbook.readers.rundir.read_run); call after the `with` block."""
        from playbook.readers.rundir import (
            read_run,  # probes sit above the readers; most recordings never read
        )

        return read_run(self.run_dir)


def merge_segments(part: str | os.PathLike, name: str) -> Path | None:
    """Merge <part>/segments/<name>-*.parquet into <part>/<file> (streaming, bounded memory); remove segments."""
    part = Path(part)
    segs = sorted((part / SEGMENT_DIR).glob(f"{name}-*.parquet"))
    if not segs:
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    dest = part / PART_FILES[name]
    tmp = dest.with_suffix(".merge.tmp")
    sources = ([dest] if dest.exists() else []) + segs
    if len(sources) == 1:
        segs[0].replace(dest)
        return dest
    writer = None
    try:
        for path in sources:
            table = pq.read_table(path)
            if "source" in table.column_names:  # dictionary-encoded per segment: write plain strings
                i = table.column_names.index("source")
                table = table.set_column(i, "source", table.column("source").cast(pa.string()))
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()
    tmp.replace(dest)
    for path in segs:
        path.unlink(missing_ok=True)
    return dest


def merge_run(run_dir: str | os.PathLike) -> int:
    """Merge leftover segments in every part of a run directory (after a writer was killed); parts merged."""
    merged = 0
    for part in Path(run_dir).iterdir():
        if (part / SEGMENT_DIR).is_dir():
            for name in PART_FILES:
                try:
                    if merge_segments(part, name) is not None:
                        merged += 1
                except Exception as exc:
                    log.warning("%s: could not merge %s segments (%s)", part, name, exc)
    return merged


def _tree_root() -> int:
    """The process whose tree the host probe watches: the torchrun agent above us when there is one."""
    if os.environ.get("TORCHELASTIC_RUN_ID") or os.environ.get("LOCAL_WORLD_SIZE"):
        return os.getppid()
    return os.getpid()


def _utc(t: float) -> str:
    """ISO 8601 UTC with milliseconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1e3):03d}Z"
