"""A background polling thread with a bounded row buffer: the base of the NVML, host and InfiniBand probes."""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any

log = logging.getLogger("playbook.probes")
_LOGGED: set[str] = set()  # messages already logged by any probe in this process


class Poller:
    """Calls `_sample()` `hz` times a second on a daemon thread; rows go to a bounded buffer `drain()` empties.

    A sample that raises is counted and logged once; after `max_failures` consecutive failures the thread stops
    (the training never notices). When the buffer is full (nobody drains), the oldest rows are dropped and counted.
    `cost_s` / `samples` give the probe's own cost (seconds of CPU-clock time spent sampling).
    """

    name = "probe"

    def __init__(self, hz: float, max_rows: int = 1_000_000, max_failures: int = 50):
        if not hz > 0:
            raise ValueError(f"{self.name}: sampling rate must be > 0 Hz, got {hz}")
        self.hz = float(hz)
        self.max_failures = max_failures
        self._buf: collections.deque[tuple] = collections.deque(maxlen=max_rows)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples = 0
        self.cost_s = 0.0
        self.overruns = 0
        self.failures = 0
        self.dropped = 0
        self.warnings: list[str] = []
        self._warned: set[str] = set()

    # subclasses -------------------------------------------------------
    def _setup(self) -> bool:
        """Prepare (open handles); False when the probe cannot run here (it has said why, once)."""
        return True

    def _sample(self) -> None:
        raise NotImplementedError

    def _teardown(self) -> None:
        pass

    # helpers ----------------------------------------------------------
    def warn_once(self, key: str, message: str) -> None:
        """Log `message` once per `key` and keep it in `warnings`."""
        if key in self._warned:
            return
        self._warned.add(key)
        self.warnings.append(message)
        if message not in _LOGGED:  # logged once per process: a notebook may start many recorders
            _LOGGED.add(message)
            log.warning("%s", message)

    def _emit(self, row: tuple) -> None:
        if len(self._buf) == self._buf.maxlen:
            self.dropped += 1
        self._buf.append(row)

    # lifecycle --------------------------------------------------------
    def start(self) -> bool:
        """Set up and start the thread; False (and no thread) when the probe cannot run."""
        if not self.open():
            return False
        self._thread = threading.Thread(target=self._run, name=f"playbook-{self.name}", daemon=True)
        self._thread.start()
        return True

    def open(self) -> bool:
        """Set up without starting the thread (drive it with `sample_once()`; end with `stop()`)."""
        try:
            return bool(self._setup())
        except Exception as exc:
            self.warn_once("setup", f"{self.name}: could not start ({type(exc).__name__}: {exc}); not recorded")
            return False

    def sample_once(self) -> None:
        """Take one sample now, in the calling thread (tests, and a final sample at stop)."""
        t0 = time.perf_counter()
        try:
            self._sample()
            self.failures = 0
        except Exception as exc:
            self.failures += 1
            self.warn_once(f"sample:{type(exc).__name__}",
                           f"{self.name}: sampling failed ({type(exc).__name__}: {exc}); will keep trying")
        finally:
            self.cost_s += time.perf_counter() - t0
            self.samples += 1

    def _run(self) -> None:
        period = 1.0 / self.hz
        next_t = time.monotonic()
        while not self._stop.is_set():
            self.sample_once()
            if self.failures >= self.max_failures:
                self.warn_once("gave_up", f"{self.name}: {self.failures} failures in a row; sampler stopped")
                break
            next_t += period
            delay = next_t - time.monotonic()
            if delay < 0:
                self.overruns += 1
                next_t = time.monotonic()
                delay = 0.0
            if self._stop.wait(delay):
                break

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (waits up to `timeout` s) and release resources."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self.warn_once("stuck", f"{self.name}: sampler thread did not stop within {timeout} s")
        try:
            self._teardown()
        except Exception as exc:
            log.debug("%s teardown failed: %s", self.name, exc)

    def drain(self) -> list[tuple]:
        """Remove and return the buffered rows (thread-safe)."""
        dq = self._buf
        return [dq.popleft() for _ in range(len(dq))]

    def to_frame(self, rows: list[tuple]) -> Any:
        raise NotImplementedError

    def stats(self) -> dict[str, Any]:
        """Samples taken, mean cost per sample (µs), overruns, dropped rows, warnings."""
        return {
            "hz": self.hz, "samples": self.samples,
            "mean_cost_us": round(1e6 * self.cost_s / self.samples, 1) if self.samples else None,
            "overruns": self.overruns, "dropped_rows": self.dropped, "warnings": list(self.warnings),
        }
