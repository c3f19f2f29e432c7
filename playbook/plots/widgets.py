"""Interactive widgets for JupyterLab: a live monitor and an explorer for recorded runs.

    from playbook.plots import widgets
    widgets.watch()                      # GPUs through NVML when present, else host CPU (+ step busy)
    widgets.watch(step_timer=rec.timer)  # add the training loop's busy fraction from a StepTimer
    widgets.explore(bundle)                     # time window, GPU subset, smoothing, metric; plots update

Headless runs (`playbook report`, papermill under pytest) save no widget state, so a widget there would render
as nothing: both functions return a one-line note instead when `headless()` is true. The computations behind the
widgets (`explorer_view`, `LiveMonitor.poll`) are plain functions that work without a frontend.
"""

from __future__ import annotations

import io
import os
import socket
import threading
import time
from typing import Any

import numpy as np
import pandas as pd

from playbook.plots import timeline

HEADLESS_ENV = "PLAYBOOK_HEADLESS"


def headless() -> bool:
    """True when no person is looking: a batch run (PLAYBOOK_HEADLESS set, or under pytest) or no IPython kernel."""
    if os.environ.get(HEADLESS_ENV) or os.environ.get("PYTEST_CURRENT_TEST"):
        return True
    try:
        from IPython import get_ipython
    except ImportError:
        return True
    shell = get_ipython()
    return shell is None or getattr(shell, "kernel", None) is None


def _skipped(what: str):
    from IPython.display import Markdown

    return Markdown(f"*{what}: skipped in a headless run (widgets need a live kernel; open the notebook in "
                    f"JupyterLab with `make lab`).*")


# ----------------------------------------------------------------------------------------------- explorer
def explorer_view(frame: pd.DataFrame, metric: str = "util_pct", window_s: tuple[float, float] | None = None,
                  units: list[str] | None = None, smooth_s: float = 0.0, unit: str = "gpu") -> pd.DataFrame:
    """The rows the explorer plots: `frame` cut to `window_s` (seconds since its first sample, inclusive), to the
    "host:unit" ids in `units` (None = all), with `metric` replaced by its rolling mean over `smooth_s` seconds
    per unit (0 = raw). Without any timestamp, samples are placed attrs['interval_s'] apart. Returns columns time, host, `unit`, `metric`, sorted by host, unit, time."""
    data, _ = timeline.with_times(frame, unit)  # no timestamps at all: samples placed interval_s apart
    if data.empty:
        return data[["time", "host", unit, metric]].copy()
    t0 = data["time"].min()
    secs = (data["time"] - t0).dt.total_seconds()
    keep = pd.Series(True, index=data.index)
    if window_s is not None:
        keep &= (secs >= window_s[0]) & (secs <= window_s[1])
    if units is not None:
        keep &= timeline.unit_ids(data, unit).isin(set(units))
    view = data.loc[keep, ["time", "host", unit, metric]].sort_values(["host", unit, "time"])
    view = view.reset_index(drop=True)
    if smooth_s and smooth_s > 0 and len(view):
        window = pd.Timedelta(seconds=float(smooth_s))
        smoothed = (view.set_index("time").groupby(["host", unit], sort=False)[metric]
                    .rolling(window, min_periods=1).mean())
        view[metric] = smoothed.to_numpy()
    view.attrs = dict(frame.attrs)
    return view


def _numeric_metrics(frame: pd.DataFrame, skip: tuple[str, ...]) -> list[str]:
    return [c for c in frame.columns
            if c not in skip and pd.api.types.is_numeric_dtype(frame[c]) and frame[c].notna().any()]


class Explorer:
    """Widgets over a recorded run: time window, GPU subset, smoothing and metric; the heatmap and the per-host
    lines redraw on every change. `view` holds the rows last plotted, `figure` the last figure."""

    def __init__(self, frame: pd.DataFrame, metric: str | None = None, unit: str = "gpu"):
        import ipywidgets as w

        frame, _ = timeline.with_times(frame, unit)
        self.frame, self.unit = frame, unit
        metrics = _numeric_metrics(frame, ("time", "host", unit, "gpu", "rank"))
        if not metrics:
            raise ValueError("nothing to explore: no numeric metric with values")
        metric = metric if metric in metrics else metrics[0]
        secs = (frame["time"] - frame["time"].min()).dt.total_seconds()
        span = float(secs.max()) if len(secs) else 0.0
        interval = float(frame.attrs.get("interval_s") or 0) or max(span / 100, 0.1)
        ids = list(dict.fromkeys(timeline.unit_ids(frame.sort_values(["host", unit]), unit)))
        self.metric = w.Dropdown(options=metrics, value=metric, description="metric")
        self.window = w.FloatRangeSlider(value=(0.0, span), min=0.0, max=max(span, interval), step=interval,
                                         description="window (s)", continuous_update=False,
                                         layout=w.Layout(width="60%"))
        self.smooth = w.FloatSlider(value=0.0, min=0.0, max=max(span / 5, interval), step=interval,
                                    description="smooth (s)", continuous_update=False)
        self.units = w.SelectMultiple(options=ids, value=tuple(ids), rows=min(len(ids), 8),
                                      description="GPUs" if unit == "gpu" else f"{unit}s")
        self.output = w.Output()
        self.view: pd.DataFrame | None = None
        self.figure = None
        for control in (self.metric, self.window, self.smooth, self.units):
            control.observe(self.update, names="value")
        self.widget = w.VBox([w.HBox([self.metric, self.smooth]), self.window, w.HBox([self.units, self.output])])
        self.update()

    def update(self, change: Any = None) -> None:
        """Recompute the view from the controls and redraw."""
        import matplotlib.pyplot as plt

        self.view = explorer_view(self.frame, self.metric.value, tuple(self.window.value), list(self.units.value),
                                  self.smooth.value, self.unit)
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), layout="constrained")
        if self.view.empty:
            top.text(0.5, 0.5, "no samples in this window / selection", ha="center", transform=top.transAxes)
        else:
            timeline.heatmap(self.view, self.metric.value, self.unit, ax=top)
            timeline.host_lines(self.view, self.metric.value, self.unit, ax=bottom)
        if self.figure is not None:
            plt.close(self.figure)
        self.figure = fig
        from IPython.display import clear_output, display

        with self.output:
            clear_output(wait=True)
            display(fig)
        plt.close(fig)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def explore(data: Any, metric: str | None = None, force: bool = False):
    """An Explorer over a Bundle (its telemetry, or the busy fraction from its steps when it has no GPU counters)
    or a telemetry-like frame; a one-line note in headless runs unless `force`."""
    if headless() and not force:
        return _skipped("Explorer")
    frame, unit = data, "gpu"
    if hasattr(data, "telemetry"):
        if len(data.telemetry):
            frame = data.telemetry
        else:
            from playbook.analysis.step_times import busy_timeline

            frame, unit = busy_timeline(data.steps), "rank"
    return Explorer(frame, metric, unit)


# ----------------------------------------------------------------------------------------------- live monitor
def default_probes(hz: float = 2.0) -> list[Any]:
    """Started probes for the monitor: the NVML sampler when a GPU answers, else the host probe."""
    host = socket.gethostname()
    try:
        from playbook.probes import NvmlSampler

        nvml = NvmlSampler(host=host, hz=hz)
        if nvml.start():
            return [nvml]
    except Exception:  # no NVML module or driver: fall back to the host probe
        pass
    from playbook.probes import HostProbe

    probe = HostProbe(host=host, hz=hz)
    return [probe] if probe.start() else []


class LiveMonitor:
    """A rolling window of live samples: GPU utilization per GPU (NVML), else host CPU mean and busiest core,
    plus the training loop's busy fraction when a StepTimer is given. `poll()` collects, `render()` draws,
    `start()` refreshes an Image widget every `refresh_s` seconds on a daemon thread until `stop()`."""

    SERIES = {"util_pct": "GPU {id} utilization", "cpu_pct": "CPU (all cores)",
              "cpu_max_core_pct": "CPU (busiest core)"}

    def __init__(self, probes: list[Any] | None = None, step_timer: Any = None, window_s: float = 120.0,
                 refresh_s: float = 1.0, hz: float = 2.0):
        self.probes = default_probes(hz) if probes is None else probes
        self.step_timer, self.window_s, self.refresh_s = step_timer, window_s, refresh_s
        self.samples = pd.DataFrame({"time": pd.Series([], dtype="datetime64[ns, UTC]"),
                                     "series": pd.Series([], dtype="string"), "value": pd.Series([], dtype=float)})
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._image = None

    @property
    def source(self) -> str:
        """What the monitor reads: "nvml", "host", "custom" (other probes) or "none"."""
        names = {type(p).__name__ for p in self.probes}
        if "NvmlSampler" in names:
            return "nvml"
        return "host" if "HostProbe" in names else ("custom" if names else "none")

    def poll(self) -> pd.DataFrame:
        """Drain every probe (and read the step timer) into `samples`, keep the last `window_s` seconds, return
        them (columns time, series, value in %)."""
        parts = []
        for probe in self.probes:
            rows = probe.drain()
            if not rows:
                continue
            frame = probe.to_frame(rows)
            if "util_pct" in frame:
                ids = timeline.unit_ids(frame, "gpu")
                parts.append(pd.DataFrame({"time": frame["time"], "value": frame["util_pct"],
                                           "series": ids.map(lambda i: f"GPU {i} utilization")}))
            for col in ("cpu_pct", "cpu_max_core_pct"):
                if col in frame:
                    parts.append(pd.DataFrame({"time": frame["time"], "value": frame[col],
                                               "series": self.SERIES[col]}))
        if self.step_timer is not None:
            busy = self.step_timer.busy_fraction()
            if np.isfinite(busy):
                parts.append(pd.DataFrame({"time": [pd.Timestamp.now(tz="UTC")], "value": [100.0 * busy],
                                           "series": "training busy (step phases)"}))
        if parts:
            new = pd.concat(parts, ignore_index=True)
            new["time"] = pd.to_datetime(new["time"], utc=True).dt.as_unit("ns")
            new["series"] = new["series"].astype("string")
            self.samples = pd.concat([self.samples, new], ignore_index=True) if len(self.samples) else new
        if len(self.samples):
            cutoff = self.samples["time"].max() - pd.Timedelta(seconds=self.window_s)
            self.samples = self.samples[self.samples["time"] >= cutoff].reset_index(drop=True)
        return self.samples

    def render(self) -> bytes:
        """The current window as a PNG (x: seconds before now, y: %)."""
        from matplotlib.figure import Figure

        from playbook.plots.style import apply

        apply()
        fig = Figure(figsize=(9, 3.2), layout="constrained")
        ax = fig.subplots()
        if len(self.samples):
            now = self.samples["time"].max()
            for name, part in self.samples.groupby("series", sort=True):
                ax.plot((part["time"] - now).dt.total_seconds(), part["value"], lw=1.3, label=str(name))
            ax.legend(fontsize=8, loc="upper left", ncol=2)
        else:
            ax.text(0.5, 0.5, "waiting for samples...", ha="center", transform=ax.transAxes)
        ax.set_xlim(-self.window_s, 0)
        ax.set_ylim(-2, 102)
        ax.set_xlabel("seconds before now (s)")
        ax.set_ylabel("%")
        ax.set_title(f"Live monitor ({self.source})")
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        return buf.getvalue()

    def widget(self):
        """A Start/Stop toggle and the refreshing image."""
        import ipywidgets as w

        self._image = w.Image(value=self.render(), format="png")
        toggle = w.ToggleButton(value=False, description="Start", icon="play")

        def on_toggle(change: dict) -> None:
            if change["new"]:
                toggle.description, toggle.icon = "Stop", "stop"
                self.start()
            else:
                toggle.description, toggle.icon = "Start", "play"
                self.stop()

        toggle.observe(on_toggle, names="value")
        return w.VBox([w.HBox([toggle, w.Label(f"source: {self.source}, window {self.window_s:.0f} s")]),
                       self._image])

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget())

    def start(self) -> None:
        """Refresh on a daemon thread every `refresh_s` seconds."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="playbook-live-monitor", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                self.poll()
                if self._image is not None:
                    self._image.value = self.render()
            except Exception:  # a display hiccup must not kill the monitor thread
                pass
            self._stop.wait(max(0.0, self.refresh_s - (time.monotonic() - t0)))

    def stop(self) -> None:
        """Stop refreshing (the probes keep their thread until `close()`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def close(self) -> None:
        """Stop refreshing and stop the probes."""
        self.stop()
        for probe in self.probes:
            try:
                probe.stop()
            except Exception:
                pass


def watch(step_timer: Any = None, window_s: float = 120.0, refresh_s: float = 1.0, force: bool = False):
    """A LiveMonitor that displays as its widget (press Start; `.close()` stops its probes); a one-line note in
    headless runs unless `force`."""
    if headless() and not force:
        return _skipped("Live monitor")
    return LiveMonitor(step_timer=step_timer, window_s=window_s, refresh_s=refresh_s)
