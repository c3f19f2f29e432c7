"""Step and phase timer: one steps-table row per (step, phase) with UTC start and duration, no device sync.

    timer = StepTimer()
    for i, batch in enumerate(timed(loader, timer)):        # data wait -> phase "data" of step i
        with timer.step(i, tokens=batch_tokens):              # phase "step": the whole iteration
            with timer.phase("fwd"):
                loss = model(batch)
            with timer.phase("bwd"):
                loss.backward()
    steps = timer.frame()                                     # schema.steps_frame

On CPU, durations come from `time.perf_counter_ns`. With CUDA (auto-detected when torch is already imported and a
device exists, or `cuda=True`) each phase records two `torch.cuda.Event`s on the current stream and the duration
is the GPU time between them (`elapsed_time`). Events are resolved later with the non-blocking `event.query()`
at the end of each step, and with `synchronize()` only in `close()`/`frame()` — never a device sync in the hot path.
The `time` column is the CPU wall clock when the phase was entered (the GPU may start it later).

A data wait recorded outside a step (the usual `for batch in timed(loader)` then `with timer.step(i)` loop) is
attributed to the next step, whose start is moved back to the start of that wait, so the step row covers the whole
iteration and the phases of a step sum to at most its duration (unless you nest phases).

Each phase and step is also an NVTX range (named like the phase; steps are "step 12") when CUDA is in use, so
Nsight Systems timelines show the same phases. Cost on CPU: a few µs per phase (see benchmarks in the report).
"""

from __future__ import annotations

import collections
import logging
import math
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from playbook.model import schema

log = logging.getLogger(__name__)

# Phases whose time counts as "device busy" for the busy signal (same as playbook.analysis.step_times.COMPUTE_PHASES).
BUSY_PHASES = frozenset({"fwd", "bwd", "optimizer", "compute"})


class _Span:
    """One open or finished phase: CPU times in ns, optional CUDA events."""

    __slots__ = ("step", "phase", "wall_ns", "cpu_ns", "end_cpu_ns", "ev0", "ev1", "tokens", "children")

    def __init__(self, step: int, phase: str, wall_ns: int, cpu_ns: int):
        self.step, self.phase, self.wall_ns, self.cpu_ns = step, phase, wall_ns, cpu_ns
        self.end_cpu_ns = 0
        self.ev0 = self.ev1 = None
        self.tokens = math.nan
        self.children: list[_Span] | None = None


class StepTimer:
    """Times steps and phases; rows come out of `drain()` (new rows) or `frame()` (everything kept).

    host/rank label the rows (rank -1 when unknown). `cuda`: None = auto, True/False to force. `nvtx`: emit NVTX
    ranges when CUDA is in use. `keep`: keep drained rows for `frame()` (True when used standalone; the Recorder
    sets False and writes rows out instead). Thread-safety: use one timer from one thread (the training loop).
    """

    def __init__(self, host: str | None = None, rank: int | None = None, cuda: bool | None = None,
                 nvtx: bool = True, keep: bool = True, source: str = "probe:steps", recent: int = 64):
        self.host = host or socket.gethostname()
        self.rank = -1 if rank is None else int(rank)
        self.source = source
        self.keep = keep
        self._kept: list[tuple] = []
        self._done: collections.deque[tuple] = collections.deque()  # finished rows: (wall_ns, step, phase, s, tok)
        self._pending: collections.deque[_Span] = collections.deque()  # CUDA spans awaiting their events
        self._stack: list[_Span] = []
        self._step: _Span | None = None
        self._orphans: list[_Span] = []  # data waits before the next step
        self._listeners: list[Callable[[int], None]] = []
        self.recent: collections.deque[tuple[int, float, float]] = collections.deque(maxlen=recent)
        self.current_step = -1
        self.steps_done = 0
        self._wall0 = time.time_ns()
        self._perf0 = time.perf_counter_ns()
        self._torch = None
        self._event_pool: list[Any] = []
        self._nvtx_push = self._nvtx_pop = None
        self._warned = False
        self.cuda = self._setup_cuda(cuda, nvtx)

    # ------------------------------------------------------------------ setup
    def _setup_cuda(self, cuda: bool | None, nvtx: bool) -> bool:
        if cuda is False:
            return False
        torch = sys.modules.get("torch")
        if torch is None and cuda:
            import torch  # noqa: PLC0415 - lazily, only when asked for CUDA timing
        if torch is None:
            return False
        try:
            ok = bool(torch.cuda.is_available())
        except Exception:
            ok = False
        if not ok:
            if cuda:
                log.warning("StepTimer: CUDA requested but not available; timing on CPU")
            return False
        self._torch = torch
        if nvtx:
            try:
                from torch.cuda import nvtx as _nvtx

                self._nvtx_push, self._nvtx_pop = _nvtx.range_push, _nvtx.range_pop
            except Exception:
                self._nvtx_push = self._nvtx_pop = None
        return True

    def _now(self) -> tuple[int, int]:
        cpu = time.perf_counter_ns()
        return self._wall0 + (cpu - self._perf0), cpu

    def _event(self):
        if self._event_pool:
            return self._event_pool.pop()
        return self._torch.cuda.Event(enable_timing=True)

    def _begin(self, step: int, phase: str, nvtx_name: str) -> _Span:
        wall, cpu = self._now()
        span = _Span(step, phase, wall, cpu)
        if self.cuda:
            try:
                if self._nvtx_push is not None:
                    self._nvtx_push(nvtx_name)
                span.ev0 = self._event()
                span.ev0.record()
            except Exception as exc:  # never raise into training
                self._fail(exc)
        return span

    def _end(self, span: _Span) -> None:
        span.end_cpu_ns = time.perf_counter_ns()
        if self.cuda and span.ev0 is not None:
            try:
                span.ev1 = self._event()
                span.ev1.record()
                if self._nvtx_pop is not None:
                    self._nvtx_pop()
            except Exception as exc:
                self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        if not self._warned:
            log.warning("StepTimer: CUDA timing failed (%s: %s); falling back to CPU timing", type(exc).__name__, exc)
            self._warned = True
        self.cuda = False

    # ------------------------------------------------------------------ public API
    @contextmanager
    def step(self, i: int, tokens: float | None = None) -> Iterator[None]:
        """Time step `i` (phase "step"); `tokens` processed in it (for throughput), optional."""
        span = self._begin(int(i), "step", f"step {int(i)}")
        if self._orphans:  # a data wait just before this step belongs to it
            first = self._orphans[0]
            span.wall_ns, span.cpu_ns = first.wall_ns, first.cpu_ns
            if first.ev0 is not None and span.ev0 is not None:
                self._event_pool.append(span.ev0)
                span.ev0 = first.ev0
                first.ev0 = None
                first.ev1 = None
            for o in self._orphans:
                o.step = span.step
            span.children = self._orphans
            self._orphans = []
        else:
            span.children = []
        span.tokens = math.nan if tokens is None else float(tokens)
        self._step = span
        self.current_step = span.step
        try:
            yield
        finally:
            self._end(span)
            self._step = None
            self._finish(span)
            self.steps_done += 1
            if self.cuda:
                self._resolve(block=False)
            for fn in self._listeners:
                try:
                    fn(span.step)
                except Exception as exc:  # a listener (profiler) must not break the loop
                    log.warning("StepTimer: step listener %r failed: %s", fn, exc)
                    self._listeners.remove(fn)
                    break

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time a phase (data, h2d, fwd, bwd, collective, optimizer, checkpoint, eval, ...) of the current step."""
        step = self._step.step if self._step is not None else self.current_step
        span = self._begin(step, str(name), str(name))
        try:
            yield
        finally:
            self._end(span)
            self._attach(span)

    def add_wait(self, wall_ns: int, cpu_ns: int, end_cpu_ns: int, phase: str = "data") -> None:
        """Record a CPU-measured wait (e.g. blocked in next()) as `phase` of the current or next step."""
        span = _Span(-1, phase, wall_ns, cpu_ns)
        span.end_cpu_ns = end_cpu_ns
        if self._step is not None:
            span.step = self._step.step
            self._step.children.append(span)
        else:
            self._orphans.append(span)

    def begin_wait(self, phase: str = "data") -> tuple[int, int, Any, bool]:
        """Start a wait (used by `timed`); returns a token for `end_wait`. Records a CUDA event when timing on GPU
        so that the next step's GPU duration starts here too, and opens an NVTX range named `phase` (so that
        Nsight Systems shows the data wait, which happens before the step's own range opens)."""
        wall, cpu = self._now()
        ev = None
        pushed = False
        if self.cuda:
            try:
                if self._step is None:
                    ev = self._event()
                    ev.record()
                if self._nvtx_push is not None:
                    self._nvtx_push(str(phase))
                    pushed = True
            except Exception as exc:
                self._fail(exc)
        return wall, cpu, ev, pushed

    def _pop_wait(self, token: tuple) -> None:
        if len(token) > 3 and token[3] and self._nvtx_pop is not None:
            try:
                self._nvtx_pop()
            except Exception as exc:
                self._fail(exc)

    def end_wait(self, token: tuple, phase: str = "data") -> None:
        """Finish a wait started with `begin_wait`."""
        wall, cpu, ev = token[:3]
        end = time.perf_counter_ns()
        self._pop_wait(token)
        span = _Span(-1, phase, wall, cpu)
        span.end_cpu_ns = end
        span.ev0 = ev  # only used as the next step's start event; duration stays CPU-measured
        if self._step is not None:
            span.step = self._step.step
            self._step.children.append(span)
            if ev is not None:
                self._event_pool.append(ev)
                span.ev0 = None
        else:
            self._orphans.append(span)

    def cancel_wait(self, token: tuple) -> None:
        """Drop a wait that ended without an item (end of the iterator)."""
        self._pop_wait(token)
        if token[2] is not None:
            self._event_pool.append(token[2])

    def on_step_end(self, fn: Callable[[int], None]) -> None:
        """Call `fn(step)` at the end of every step (CPU side, immediately; e.g. a profiler's `step()`)."""
        self._listeners.append(fn)

    def busy_fraction(self, last: int = 8) -> float:
        """Share of the last `last` resolved steps spent in compute phases (fwd/bwd/optimizer/compute), 0-1; NaN
        when no step with phases is resolved yet. The utilization-like signal when no GPU counter is at hand."""
        items = list(self.recent)[-last:]
        total = sum(s for _, s, _ in items)
        if not items or total <= 0:
            return math.nan
        return min(1.0, sum(b for _, _, b in items) / total)

    # ------------------------------------------------------------------ rows
    def _attach(self, span: _Span) -> None:
        if self._step is not None:
            self._step.children.append(span)
        else:  # a phase outside any step: its own row now
            self._finish(span)

    def _finish(self, span: _Span) -> None:
        """Queue a finished top-level span (a step with its children, or a lone phase)."""
        spans = [span, *(span.children or [])]
        if self.cuda and any(s.ev1 is not None for s in spans):
            self._pending.append(span)
        else:
            self._emit(span)

    def _duration_s(self, s: _Span) -> float:
        if s.ev0 is not None and s.ev1 is not None:
            ms = s.ev0.elapsed_time(s.ev1)
            self._event_pool += [s.ev0, s.ev1]
            s.ev0 = s.ev1 = None
            return ms / 1e3
        if s.ev0 is not None:
            self._event_pool.append(s.ev0)
            s.ev0 = None
        return (s.end_cpu_ns - s.cpu_ns) / 1e9

    def _emit(self, span: _Span) -> None:
        busy = 0.0
        step_s = self._duration_s(span)
        for child in span.children or []:
            d = self._duration_s(child)
            if child.phase in BUSY_PHASES:
                busy += d
            self._push((child.wall_ns, child.step, child.phase, d, math.nan))
        self._push((span.wall_ns, span.step, span.phase, step_s, span.tokens))
        if span.phase == "step":
            self.recent.append((span.step, step_s, busy))

    def _push(self, row: tuple) -> None:
        self._done.append(row)

    def _resolve(self, block: bool) -> None:
        """Turn pending CUDA spans into rows: non-blocking (`query`) or blocking (`synchronize`, close only)."""
        try:
            while self._pending:
                span = self._pending[0]
                evs = [e for s in (span, *(span.children or [])) for e in (s.ev0, s.ev1) if e is not None]
                if block:
                    for e in evs:
                        e.synchronize()
                elif not all(e.query() for e in evs):
                    return
                self._pending.popleft()
                self._emit(span)
        except Exception as exc:
            self._fail(exc)
            while self._pending:  # fall back to CPU durations for what is left
                span = self._pending.popleft()
                for s in (span, *(span.children or [])):
                    s.ev0 = s.ev1 = None
                self._emit(span)

    def drain(self, block: bool = False) -> list[tuple]:
        """Remove and return finished rows (wall_ns, step, phase, duration_s, tokens); `block` resolves CUDA events
        still in flight first (a device wait: only at the end of a run). Safe to call from another thread when
        block=False."""
        if block:
            self._resolve(block=True)
            self._flush_orphans()
        rows = []
        dq = self._done
        for _ in range(len(dq)):
            rows.append(dq.popleft())
        if self.keep:
            self._kept += rows
        return rows

    def _flush_orphans(self) -> None:
        for o in self._orphans:  # waits with no following step (the last one): rows of their own
            o.step = self.current_step + 1
            self._emit(o)
        self._orphans = []

    def to_frame(self, rows: list[tuple]) -> Any:
        """A schema.steps_frame from drained rows."""
        if not rows:
            return schema.steps_frame()
        wall, step, phase, dur, tok = zip(*rows, strict=True)
        return schema.steps_frame({
            "time": list(wall), "host": self.host, "rank": self.rank, "step": list(step), "phase": list(phase),
            "duration_s": list(dur), "tokens": list(tok), "source": self.source,
        })

    def frame(self) -> Any:
        """Every row recorded so far (resolving in-flight CUDA events; requires keep=True for drained rows)."""
        self.drain(block=True)
        return self.to_frame(self._kept)

    def close(self) -> None:
        """Resolve everything in flight (the only place the timer waits for the device)."""
        if self.keep:
            self.drain(block=True)
        else:
            self._resolve(block=True)
            self._flush_orphans()
