"""Event log: timestamped checkpoint / eval / gc / compile / recompile events (schema.events_frame rows).

    log = EventLog(step_of=lambda: timer.current_step)
    log.watch_gc()                           # Python GC pauses ≥ gc_min_s become "gc" events (generation, s)
    log.watch_compile()                      # torch.compile: "compile" (first compile of a frame) and
                                             # "recompile" events with the guard-failure reason when torch has it
    with log.event_span("checkpoint", step=120):
        save(...)
    log.event("eval", step=200, duration_s=3.1, detail="val loss 2.31")

GC: `gc.callbacks` start/stop pairs; a pause shorter than `gc_min_s` (default 2 ms) is only counted
(`gc_stats()`), so the table holds the pauses that can show up in a step time. Compile: torch._dynamo's
compile start/end callbacks (torch ≥ 2.4) give the duration and compile id "frame/n" (n > 0: a recompilation);
the reason is the newest entry of `torch._dynamo.utils.guard_failures` for that frame (dynamo records it when
`torch._dynamo.config.report_guard_failures` is on, the default). torch is never imported by this module: compile
tracking only hooks in when torch is already imported.
"""

from __future__ import annotations

import collections
import gc
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


class EventLog:
    """Collects events; `drain()` returns new rows, `frame()` every row kept. Thread-safe appends."""

    def __init__(self, host: str | None = None, rank: int | None = None,
                 step_of: Callable[[], int] | None = None, gc_min_s: float = 0.002, keep: bool = True,
                 source: str = "probe:events"):
        self.host = host or socket.gethostname()
        self.rank = -1 if rank is None else int(rank)
        self.source = source
        self.keep = keep
        self.gc_min_s = gc_min_s
        self._step_of = step_of or (lambda: -1)
        self._done: collections.deque[tuple] = collections.deque()
        self._kept: list[tuple] = []
        self._gc_t0 = 0
        self._gc_counts = {"collections": 0, "recorded": 0, "below_min": 0, "below_min_s": 0.0, "total_s": 0.0}
        self._gc_cb = None
        self._compile_cbs: tuple[Any, Any] | None = None
        self._compile_t0: dict[str, int] = {}
        self._reasons_seen: dict[Any, int] = {}
        self._compile_counts = {"compile": 0, "recompile": 0, "total_s": 0.0}
        self._wall0 = time.time_ns()
        self._perf0 = time.perf_counter_ns()

    def _wall_ns(self, perf_ns: int | None = None) -> int:
        return self._wall0 + ((time.perf_counter_ns() if perf_ns is None else perf_ns) - self._perf0)

    def _current_step(self) -> int:
        try:
            return int(self._step_of())
        except Exception:
            return -1

    # ------------------------------------------------------------------ public API
    def event(self, kind: str, step: int | None = None, duration_s: float | None = None, detail: str = "",
              time_ns: int | None = None) -> None:
        """Record one event now (or at `time_ns`, UTC ns since the epoch); step defaults to the current step."""
        self._done.append((
            self._wall_ns() if time_ns is None else int(time_ns),
            self._current_step() if step is None else int(step),
            str(kind),
            math.nan if duration_s is None else float(duration_s),
            str(detail),
        ))

    @contextmanager
    def event_span(self, kind: str, step: int | None = None, detail: str = "") -> Iterator[None]:
        """Record an event with its duration (seconds, CPU clock) around the block; also recorded if it raises."""
        t0 = time.perf_counter_ns()
        try:
            yield
        finally:
            t1 = time.perf_counter_ns()
            self.event(kind, step=step, duration_s=(t1 - t0) / 1e9, detail=detail, time_ns=self._wall_ns(t0))

    # ------------------------------------------------------------------ GC
    def watch_gc(self) -> None:
        """Record Python garbage-collector pauses (gc.callbacks)."""
        if self._gc_cb is not None:
            return
        counts, perf = self._gc_counts, time.perf_counter_ns

        def on_gc(phase: str, info: dict[str, Any]) -> None:
            if phase == "start":
                self._gc_t0 = perf()
                return
            t1 = perf()
            if not self._gc_t0:
                return
            dt = (t1 - self._gc_t0) / 1e9
            self._gc_t0 = 0
            counts["collections"] += 1
            counts["total_s"] += dt
            if dt < self.gc_min_s:
                counts["below_min"] += 1
                counts["below_min_s"] += dt
                return
            counts["recorded"] += 1
            gen = info.get("generation", -1)
            detail = f"generation {gen}; collected {info.get('collected', 0)}; uncollectable {info.get('uncollectable', 0)}"
            self._done.append((self._wall_ns(t1) - int(dt * 1e9), self._current_step(), "gc", dt, detail))

        self._gc_cb = on_gc
        gc.callbacks.append(on_gc)

    def unwatch_gc(self) -> None:
        """Stop recording GC pauses."""
        if self._gc_cb is not None:
            try:
                gc.callbacks.remove(self._gc_cb)
            except ValueError:
                pass
            self._gc_cb = None

    def gc_stats(self) -> dict[str, float]:
        """Collections seen, recorded as events, counted only (below gc_min_s) and their seconds."""
        return dict(self._gc_counts)

    # ------------------------------------------------------------------ torch.compile
    def watch_compile(self) -> bool:
        """Record torch.compile compilations; False when torch is not imported or too old to have the hooks."""
        if self._compile_cbs is not None:
            return True
        if "torch" not in sys.modules:
            return False
        try:
            from torch._dynamo.callback import callback_handler
        except Exception:
            return False

        def on_start(args: Any) -> None:
            self._compile_t0[str(getattr(args, "compile_id", ""))] = time.perf_counter_ns()

        def on_end(args: Any) -> None:
            try:
                self._on_compile_end(args)
            except Exception as exc:  # never break compilation
                log.debug("EventLog: compile callback failed: %s", exc)

        callback_handler.register_start_callback(on_start)
        callback_handler.register_end_callback(on_end)
        self._compile_cbs = (on_start, on_end)
        return True

    def _on_compile_end(self, args: Any) -> None:
        t1 = time.perf_counter_ns()
        cid = str(getattr(args, "compile_id", ""))
        t0 = self._compile_t0.pop(cid, None)
        dt = (t1 - t0) / 1e9 if t0 is not None else math.nan
        kind = "recompile" if _is_recompile(cid) else "compile"
        trigger = getattr(getattr(args, "callback_trigger", None), "name", "")
        detail = f"compile_id {cid}" + (f"; trigger {trigger}" if trigger and trigger != "DYNAMO" else "")
        if kind == "recompile":
            reason = self._new_guard_failure()
            if reason:
                detail += f"; reason: {reason}"
        self._compile_counts[kind] += 1
        if not math.isnan(dt):
            self._compile_counts["total_s"] += dt
        start = self._wall_ns(t0) if t0 is not None else self._wall_ns(t1)
        self._done.append((start, self._current_step(), kind, dt, detail))

    def _new_guard_failure(self) -> str:
        """The newest guard-failure reason dynamo recorded since the last call ('' when none)."""
        try:
            from torch._dynamo.utils import guard_failures
        except Exception:
            return ""
        newest = ""
        for code, reasons in list(guard_failures.items()):
            seen = self._reasons_seen.get(code, 0)
            if len(reasons) > seen:
                newest = str(reasons[-1])
                self._reasons_seen[code] = len(reasons)
        return " ".join(newest.split())[:500]

    def unwatch_compile(self) -> None:
        """Stop recording compilations."""
        if self._compile_cbs is None:
            return
        try:
            from torch._dynamo.callback import callback_handler

            callback_handler.remove_start_callback(self._compile_cbs[0])
            callback_handler.remove_end_callback(self._compile_cbs[1])
        except Exception:
            pass
        self._compile_cbs = None

    def compile_stats(self) -> dict[str, float]:
        """Compilations and recompilations seen, and their seconds."""
        return dict(self._compile_counts)

    # ------------------------------------------------------------------ rows
    def drain(self) -> list[tuple]:
        """Remove and return new rows (wall_ns, step, kind, duration_s, detail)."""
        dq = self._done
        rows = [dq.popleft() for _ in range(len(dq))]
        if self.keep:
            self._kept += rows
        return rows

    def to_frame(self, rows: list[tuple]) -> Any:
        """A schema.events_frame from drained rows."""
        if not rows:
            return schema.events_frame()
        wall, step, kind, dur, detail = zip(*rows, strict=True)
        return schema.events_frame({
            "time": list(wall), "host": self.host, "rank": self.rank, "step": list(step), "kind": list(kind),
            "duration_s": list(dur), "detail": list(detail), "source": self.source,
        })

    def frame(self) -> Any:
        """Every event recorded so far (requires keep=True for rows already drained)."""
        self.drain()
        return self.to_frame(self._kept)

    def close(self) -> None:
        """Unhook GC and compile callbacks."""
        self.unwatch_gc()
        self.unwatch_compile()


def _is_recompile(compile_id: str) -> bool:
    """True for dynamo compile ids "frame/n" (optionally "!ca/frame/n" or "_attempt") with n > 0."""
    try:
        tail = compile_id.split("/")[-1].split("_")[0]
        return int(tail) > 0
    except (ValueError, IndexError):
        return False
