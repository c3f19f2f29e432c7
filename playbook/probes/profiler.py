"""Profiler windows: short torch.profiler captures every N steps, on demand, or when utilization drops.

    with Recorder("runs/r1") as rec:
        prof = rec.profiler(every=500, warmup=1, active=3,       # a 3-step window every 500 steps
                            trigger_util_pct=50)                 # ... and one when the GPUs fall below 50 %
        for i, batch in enumerate(rec.timed(loader)):
            with rec.timer.step(i):
                ...
        # or: prof.trigger("manual") from anywhere (a signal handler, a callback) to capture the next steps

A window is a torch.profiler.profile with schedule(wait, warmup, active, repeat=1) started at the end of a step
and advanced by the step timer (`timer.on_step_end`), or by calling `windows.step()` yourself once per step.
Triggers, checked at each step end, with at least `min_gap_steps` steps between windows and at most
`max_windows` windows per run:
  every               every N steps (the first at step N)
  trigger_util_pct    the live NVML sampler's mean utilization.gpu (over this host's GPUs) is below X % — the
                      trace catches the low phase of an oscillation rather than the busy phase
  trigger_busy        the step timer's busy fraction (compute phases / step time, last 8 steps) is below X (0-1)
  trigger_slow_step   the last step took more than X × the median of the recent steps
  trigger(reason)     on demand
Each window writes one Chrome trace (`<host>-rank<R>.step<first>-<last>.<reason>.pt.trace.json.gz`, "norank" for
a process without a rank) into
`out_dir` (the Recorder passes RUN_DIR/<part>/traces/), readable by Perfetto (ui.perfetto.dev), HTA, TensorBoard
and playbook.readers.kineto; top-level trace keys "playbook_first_step", "playbook_trigger", "playbook_rank" say
which steps it holds (the trace's own ProfilerStep#k count from 0 within the window). Exporting a trace stalls the
training loop for a moment; the EventLog (when given) records it as a "profiler" event with that duration so that
a diagnosis does not mistake it for a periodic stall. Cost outside windows: one comparison per step.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import statistics
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("playbook.probes")


class ProfilerWindows:
    """See the module docstring. Never raises into the training loop: a failure disables windows with a warning."""

    def __init__(self, out_dir: str | os.PathLike, timer: Any = None, sampler: Any = None, events: Any = None,
                 rank: int | None = None, host: str | None = None, every: int | None = None, wait: int = 0,
                 warmup: int = 1, active: int = 3, trigger_util_pct: float | None = None,
                 trigger_busy: float | None = None, trigger_slow_step: float | None = None,
                 min_gap_steps: int = 50, max_windows: int = 5, activities: list[str] | None = None,
                 record_shapes: bool = False, with_stack: bool = False, profile_memory: bool = False):
        if active < 1 or warmup < 0 or wait < 0:
            raise ValueError("profiler window needs active >= 1, warmup >= 0, wait >= 0")
        self.out_dir = Path(out_dir)
        self.timer, self.sampler, self.events = timer, sampler, events
        self.rank = -1 if rank is None else int(rank)
        self.host = host or socket.gethostname()
        self.every, self.wait, self.warmup, self.active = every, wait, warmup, active
        self.trigger_util_pct, self.trigger_busy, self.trigger_slow_step = (
            trigger_util_pct, trigger_busy, trigger_slow_step)
        self.min_gap_steps, self.max_windows = min_gap_steps, max_windows
        self.activities = activities
        self.options = {"record_shapes": record_shapes, "with_stack": with_stack, "profile_memory": profile_memory}
        self.traces: list[Path] = []
        self.windows = 0
        self.disabled = False
        self._prof: Any = None
        self._left = 0
        self._first = self._last_end = -(10**9)
        self._reason = ""
        self._requested: str | None = None
        self._steps = 0
        self._recent: list[float] = []
        self._last_t = time.perf_counter()
        if timer is not None:
            timer.on_step_end(self.step)

    @property
    def length(self) -> int:
        """Steps one window spans (wait + warmup + active)."""
        return self.wait + self.warmup + self.active

    @property
    def active_window(self) -> bool:
        return self._prof is not None

    def trigger(self, reason: str = "manual") -> None:
        """Capture a window starting at the next step (ignored while one runs or when max_windows is reached)."""
        self._requested = reason

    # ------------------------------------------------------------------ per step
    def step(self, step: int | None = None) -> None:
        """Call once at the end of every training step (the step timer does it when given)."""
        if self.disabled:
            return
        now = time.perf_counter()
        self._recent = (self._recent + [now - self._last_t])[-32:]
        self._last_t = now
        step = self._steps if step is None else int(step)
        self._steps += 1
        try:
            if self._prof is not None:
                self._prof.step()
                self._left -= 1
                if 0 < self._left <= self.active:  # recording: label the trace (keys are a map, idempotent)
                    self._label(self._prof)
                if self._left <= 0:
                    self._finish(step)
                return
            reason = self._why(step)
            if reason:
                self._begin(step, reason)
        except Exception as exc:
            self._disable(exc)

    def _why(self, step: int) -> str | None:
        if self.windows >= self.max_windows:
            return None
        if self._requested:
            reason, self._requested = self._requested, None
            return reason
        if step - self._last_end < self.min_gap_steps:
            return None
        if self.every and step > 0 and (step + 1) % self.every == 0:
            return "every"
        if self.trigger_util_pct is not None and self.sampler is not None:
            util = self.sampler.mean_util()
            if util == util and util < self.trigger_util_pct:
                return "util"
        if self.trigger_busy is not None and self.timer is not None:
            busy = self.timer.busy_fraction()
            if busy == busy and busy < self.trigger_busy:
                return "busy"
        if self.trigger_slow_step is not None and len(self._recent) >= 8:
            med = statistics.median(self._recent[:-1])
            if med > 0 and self._recent[-1] > self.trigger_slow_step * med:
                return "slow_step"
        return None

    def _begin(self, step: int, reason: str) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule

        acts = self.activities
        if acts is None:
            acts = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
        kinds = [getattr(ProfilerActivity, a.upper()) for a in acts]
        self._first = step + 1 + self.wait + self.warmup
        self._reason = reason
        self._prof = profile(activities=kinds, schedule=schedule(wait=self.wait, warmup=self.warmup,
                                                                  active=self.active, repeat=1),
                             on_trace_ready=self._save, **self.options)
        self._left = self.length
        self._prof.start()
        if self.wait == 0 and self.warmup == 0:
            self._label(self._prof)
        self.windows += 1

    def _save(self, prof: Any) -> None:
        t0 = time.perf_counter()
        last = self._first + self.active - 1
        self.out_dir.mkdir(parents=True, exist_ok=True)
        who = f"rank{self.rank}" if self.rank >= 0 else "norank"  # "rank-1" would read as rank 1 in file names
        name = f"{self.host}-{who}.step{self._first}-{last}.{self._reason}.pt.trace.json.gz"
        path = self.out_dir / name
        prof.export_chrome_trace(str(path))
        self.traces.append(path)
        if self.events is not None:
            self.events.event("profiler", step=last, duration_s=time.perf_counter() - t0,
                              detail=f"trace {name} ({self._reason}); steps {self._first}-{last}")

    def _label(self, prof: Any) -> None:
        """Top-level trace keys saying which training steps and trigger this window holds."""
        for key, value in (("playbook_first_step", self._first), ("playbook_trigger", self._reason),
                           ("playbook_rank", self.rank), ("playbook_host", self.host)):
            try:
                prof.add_metadata_json(key, str(value) if isinstance(value, int) else json.dumps(value))
            except Exception as exc:
                log.debug("profiler metadata %s not added: %s", key, exc)

    def _finish(self, step: int) -> None:
        prof, self._prof = self._prof, None
        self._last_end = step
        prof.stop()

    def _disable(self, exc: BaseException) -> None:
        self.disabled = True
        log.warning("profiler windows disabled (%s: %s)", type(exc).__name__, exc)
        prof, self._prof = self._prof, None
        if prof is not None:
            try:
                prof.stop()
            except Exception:
                pass

    def close(self) -> None:
        """Stop a window still running (its trace is not written: it did not reach its active steps)."""
        prof, self._prof = self._prof, None
        if prof is not None:
            try:
                prof.stop()
            except Exception as exc:
                log.debug("profiler stop failed: %s", exc)
