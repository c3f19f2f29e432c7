"""Writes the LABELED SYNTHETIC cases of tests/data/clock2 (deterministic): python tests/data/clock2/make_clock2.py

Each is written in the format of the tool's own print statement (SOURCES.md names it); what no thread states is drawn
here and named below. The tqdm bars are printed BY TQDM ITSELF (tqdm.std.tqdm, its default smoothing 0.3, or
smoothing=0 and the bar format of Lightning's TQDMProgressBar) under a simulated clock, one refresh a line.

- logback_midnight_perf_listener.log: logback's default pattern (BasicConfigurator: `%d{HH:mm:ss.SSS} [%thread]
  %-5level %logger{36} - %msg%n`) over deeplearning4j's PerformanceListener line (#1985). Drawn: ~40 ms an
  iteration, the lines ~200 ms apart (listeners outside the timer), 400 iterations from 23:59:20: past midnight.
- python_hms_logging.log: Python logging with `format="%(asctime)s | %(levelname)-8s | %(message)s",
  datefmt="%H:%M:%S"`, a script's `step N | loss x | step_time 0.120s` every 10 steps. Drawn: 0.12 s a step timed,
  0.20 s a step between the lines (an untimed data wait), 300 steps.
- tqdm_ema_stalls.log: a bare tqdm bar (default smoothing 0.3, mininterval 0.1 s), refreshed every 0.25 s. Drawn:
  40 steps/s, a 1.5 s stall (a blocking logger) every ~10 s, 4000 steps.
- tqdm_first_refresh_stall.log: a bare tqdm bar whose first refresh is a stall (printed as `1.53s/it`, the rest in
  it/s): 6000 steps at ~25 ms, a 1.5 s stall every 2000 steps from step 1, a refresh every 0.25 s.
- lightning_average_rate.log: Lightning's training bar (tqdm smoothing=0: the rate is the average since the epoch's
  start; BAR_FORMAT `{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_noinv_fmt}{postfix}]`).
  Drawn: 0.10 s a step, 0.20 s from step 1000 on (a slowdown), 2000 steps, a refresh every 5 steps.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import tqdm.std

HERE = Path(__file__).resolve().parent


def _write(name: str, lines: list[str]) -> None:
    (HERE / name).write_text("\n".join(lines) + "\n")


def _hms(t: float, ms: bool) -> str:
    t %= 86400
    h, r = divmod(t, 3600)
    m, s = divmod(r, 60)
    return f"{int(h):02d}:{int(m):02d}:{s:06.3f}" if ms else f"{int(h):02d}:{int(m):02d}:{int(s):02d}"


def logback_midnight() -> None:
    rng = np.random.default_rng(2)
    lines, t = [], 23 * 3600 + 59 * 60 + 20.0
    for it in range(1, 401):
        it_ms = int(round(40 * float(np.exp(0.1 * rng.standard_normal()))))
        t += 0.2 * float(np.exp(0.05 * rng.standard_normal()))
        lines.append(f"{_hms(t, True)} [main] INFO  o.d.o.l.PerformanceListener - iteration {it}; iteration time: "
                     f"{it_ms} ms; samples/sec: {32000 / it_ms:.3f}; batches/sec: {1000 / it_ms:.3f}; "
                     f"score: {2.0 * np.exp(-it / 300) + 0.3:.15f};")
    _write("logback_midnight_perf_listener.log", lines)


def python_hms() -> None:
    rng = np.random.default_rng(3)
    lines, t = ["09:14:02 | INFO     | starting training: 300 steps"], 9 * 3600 + 14 * 60 + 3.0
    for step in range(1, 301):
        timed = 0.12 * float(np.exp(0.05 * rng.standard_normal()))
        t += timed + 0.08
        if step % 10 == 0:
            lines.append(f"{_hms(t, False)} | INFO     | step {step} | loss {3.0 * np.exp(-step / 200):.4f} | "
                         f"step_time {timed:.3f}s")
    _write("python_hms_logging.log", lines)


class _Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _bar_lines(durations: np.ndarray, every_s: float | None, every_n: int | None, **kw) -> list[str]:
    """The lines tqdm itself writes for steps of `durations` (s), refreshed when `every_s` passed since the last
    refresh (or every `every_n` steps), one refresh a line."""
    clock, out = _Clock(), io.StringIO()
    saved = tqdm.std.time
    tqdm.std.time = clock
    try:
        bar = tqdm.std.tqdm(total=len(durations), file=out, mininterval=0.1, miniters=1, ascii=False, ncols=80,
                            **kw)
        last = clock.t
        for i, d in enumerate(durations, start=1):
            clock.t += float(d)
            if (every_n and i % every_n == 0) or (every_s and clock.t - last >= every_s) or i == len(durations):
                bar.update(i - bar.n)
                last = clock.t
        bar.close()
    finally:
        tqdm.std.time = saved
    return [s.strip("\n") for s in out.getvalue().split("\r") if s.strip()]


def tqdm_ema() -> None:
    rng = np.random.default_rng(4)
    d = 0.025 * np.exp(0.05 * rng.standard_normal(4000))
    t, next_stall = 0.0, 10.0
    for i in range(len(d)):
        t += d[i]
        if t >= next_stall:
            d[i] += 1.5
            t += 1.5
            next_stall = t + 10.0 * float(np.exp(0.1 * rng.standard_normal()))
    _write("tqdm_ema_stalls.log", _bar_lines(d, 0.25, None))


def tqdm_first_stall() -> None:
    rng = np.random.default_rng(6)
    d = 0.025 * np.exp(0.05 * rng.standard_normal(6000))
    d[::2000] += 1.5
    _write("tqdm_first_refresh_stall.log", _bar_lines(d, 0.25, None))


def lightning_average() -> None:
    rng = np.random.default_rng(5)
    d = 0.10 * np.exp(0.05 * rng.standard_normal(2000))
    d[1000:] *= 2.0
    fmt = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_noinv_fmt}{postfix}]"
    lines = _bar_lines(d, None, 5, desc="Epoch 0", smoothing=0, bar_format=fmt, postfix="v_num=0")
    _write("lightning_average_rate.log", lines)


if __name__ == "__main__":
    logback_midnight()
    python_hms()
    tqdm_ema()
    lightning_average()
    tqdm_first_stall()
