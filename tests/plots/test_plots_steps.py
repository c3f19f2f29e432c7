"""playbook.plots.step_charts: figures from tidy frames, and the table-shaping helpers behind them."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from playbook.analysis.step_times import busy_timeline
from playbook.model import schema
from playbook.plots import step_charts as sp


def _steps(n=12, slow_every=4, t0="2026-01-01T00:00:00Z"):
    rows = {"time": [], "step": [], "phase": [], "duration_s": []}
    t = pd.Timestamp(t0).value
    for i in range(n):
        data = 0.05 if i % slow_every == 0 else 0.001
        for phase, d in (("data", data), ("fwd", 0.004), ("bwd", 0.006), ("step", data + 0.012)):
            rows["time"].append(t)
            rows["step"].append(i)
            rows["phase"].append(phase)
            rows["duration_s"].append(d)
        t += int((data + 0.012) * 1e9)
    return schema.steps_frame({**rows, "host": "h", "rank": 0})


def test_step_series_and_phase_table():
    s = sp.step_series(_steps())
    assert s["step"].tolist() == list(range(12))
    assert s["duration_ms"].iloc[0] == pytest.approx(62.0) and s["time_s"].iloc[0] == 0.0
    table = sp.phase_ms_per_step({"fault": _steps(), "fix": _steps(slow_every=100)})
    assert list(table.columns[:3]) == ["data", "fwd", "bwd"] and table.columns[-1] == "other"
    assert table.loc["fault", "data"] == pytest.approx((3 * 50 + 9 * 1) / 12)
    assert table.loc["fix", "fwd"] == pytest.approx(4.0)
    assert table.loc["fix", "other"] == pytest.approx(2.0, abs=1e-9)  # 13 ms step − 11 ms of phases


def test_figures_render_with_their_data():
    steps = {"fault": _steps(), "fix": _steps(slow_every=100)}
    events = schema.events_frame({"time": [0, 0], "host": "h", "rank": 0, "step": [4, 8],
                                  "kind": ["checkpoint", "gc"], "duration_s": [0.05, 0.001]})
    fig = sp.step_times(steps, events=events)
    ax = fig.axes[0]
    assert isinstance(fig, Figure) and len(ax.lines) == 2 + 2 and ax.get_ylabel() == "step time (ms)"
    fig = sp.step_times(steps["fault"], events=events, min_event_s=0.01)
    assert len(fig.axes[0].lines) == 1 + 1  # the 1 ms gc event is left out
    fig = sp.phase_bars(steps)
    assert len(fig.axes[0].patches) == 2 * 4  # data, fwd, bwd, other for both labels
    fig = sp.busy_over_time({k: busy_timeline(v, bin_s=0.05) for k, v in steps.items()})
    assert len(fig.axes[0].lines) == 2 and fig.axes[0].get_ylim()[1] > 1


def test_throughput_and_loss_figures():
    runs = pd.DataFrame({"variant": ["a", "a", "b", "b"], "repeat": [0, 1, 0, 1], "throughput": [1, 2, 3, 5]})
    fig = sp.throughput_by_variant(runs)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"] and len(ax.collections) >= 2
    curves = pd.DataFrame({"variant": ["a"] * 4 + ["b"] * 2, "repeat": [0, 0, 1, 1, 0, 0],
                           "step": [0, 1, 0, 1, 0, 1], "loss": np.linspace(2, 1, 6)})
    fig = sp.loss_curves(curves)
    assert len(fig.axes[0].lines) == 3 and fig.axes[0].get_legend() is not None


def test_step_stalls_marks_the_slow_steps_and_the_events():
    steps = _steps(n=48, slow_every=12)
    events = schema.events_frame({"time": [pd.Timestamp("2026-01-01", tz="UTC")], "host": ["h"], "rank": [0],
                                  "step": [12], "kind": ["checkpoint"], "duration_s": [0.04], "detail": [""]})
    ax = sp.step_stalls(steps, events).axes[0]
    stalls = ax.collections[0].get_offsets()
    assert sorted(int(x) for x in stalls[:, 0]) == [0, 12, 24, 36]  # the 62 ms steps among 13 ms ones
    assert ax.get_ylabel() == "step time (ms)" and ax.get_xlabel() == "step"
    labels = ax.get_legend_handles_labels()[1]
    assert "stall (4 slow steps)" in labels and "checkpoint event" in labels
    empty = sp.step_stalls(steps.iloc[:0]).axes[0]
    assert [t.get_text() for t in empty.texts] == ["no step times"]


def test_step_stalls_judges_a_step_by_the_time_its_own_work_takes():
    # multi-scale inputs (mmdetection#5993's YOLOX): a step on a large image is longer, not a stall; one real stall
    rng = np.random.default_rng(5)
    size = rng.choice([480, 544, 608, 672, 736, 800], 120).astype(float)
    dur = 0.3 * (size / 640) ** 2 * np.exp(0.02 * rng.standard_normal(120))
    dur[70] *= 3.0
    steps = schema.steps_frame({"step": np.arange(120), "phase": "step", "duration_s": dur, "work": size})
    ax = sp.step_stalls(steps).axes[0]
    assert [int(x) for x in ax.collections[0].get_offsets()[:, 0]] == [70]
    labels = ax.get_legend_handles_labels()[1]
    assert "stall (1 slow step for its work)" in labels and "expected for its work" in labels


def test_the_stall_plot_draws_a_persistently_slower_rank_apart():
    # LABELED SYNTHETIC: 3 ranks at 1.0 s and rank 1 at 1.3 s a step: the median over ranks hides it, its own line
    # shows the rank the others wait for; equal ranks draw one line
    def table(paces):
        n = 50
        return schema.steps_frame({"rank": np.repeat(np.arange(len(paces)), n), "step": np.tile(np.arange(n),
                                   len(paces)), "phase": "step", "duration_s": np.repeat(paces, n), "source": "synthetic"})

    def legend(paces):
        import matplotlib.pyplot as plt

        fig = sp.step_stalls(table(paces))
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        plt.close(fig)
        return labels

    assert any(x.startswith("rank 1 (slowest") for x in legend([1.0, 1.3, 1.0])), legend([1.0, 1.3, 1.0])
    assert not any("slowest" in x for x in legend([1.0, 1.0, 1.0]))


def test_the_stall_plot_shades_the_largest_wait_of_one_rank():
    # LABELED SYNTHETIC: 4 ranks at 0.36 s a step; rank 2 waits 0.2 s of it for its batches, the others 0.01 s (the
    # shape of traceml#252's input straggler): the wait is drawn for rank 2; waits of 1% of a step are not drawn
    def table(data_s):
        n, ranks = 40, len(data_s)
        rank, step = np.repeat(np.arange(ranks), n), np.tile(np.arange(n), ranks)
        whole = {"rank": rank, "step": step, "phase": "step", "duration_s": np.full(ranks * n, 0.36)}
        data = {"rank": rank, "step": step, "phase": "data", "duration_s": np.repeat(data_s, n)}
        return schema.steps_frame({k: np.r_[whole[k], data[k]] if k != "phase" else
                                   ["step"] * (ranks * n) + ["data"] * (ranks * n) for k in whole})

    def legend(data_s):
        import matplotlib.pyplot as plt

        fig = sp.step_stalls(table(data_s))
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        plt.close(fig)
        return labels

    assert "rank 2 data wait (median 200 ms)" in legend([0.01, 0.01, 0.2, 0.01]), legend([0.01, 0.01, 0.2, 0.01])
    assert not any("wait" in x for x in legend([0.004, 0.004, 0.004, 0.004]))


def test_epoch_times_are_drawn_as_epochs_on_a_readable_scale():
    """A per-epoch history (4.5 min an epoch, three of them 7 min) is drawn in seconds and named as epochs — it read
    "step time (ms)" with 274,000 ms; step times under 1 s stay in ms."""
    d = np.full(20, 270.0)
    d[[6, 12, 18]] = 420.0
    steps = schema.steps_frame({"step": np.arange(20), "phase": "step", "duration_s": d, "rank": 0})
    ax = sp.step_stalls(steps, record="epoch").axes[0]
    assert ax.get_ylabel() == "epoch time (s)" and ax.get_xlabel() == "epoch"
    assert ax.get_title() == "Time per epoch (red: stalls)"
    assert max(ax.lines[0].get_ydata()) == pytest.approx(420.0)
    assert sorted(int(x) for x in ax.collections[0].get_offsets()[:, 0]) == [6, 12, 18]
    import matplotlib.pyplot as plt

    plt.close("all")


def test_legend_amounts_read_without_an_exponent():
    """Epochs of 4.86 s with one of 45 s: the axis is in seconds and the legend says "median 4.86 s" — it read
    "median 4.86e+03 ms" (a 1 s to 10 s step was drawn in ms, and `.3g` writes 4,860 with an exponent)."""
    d = np.full(11, 4.86)
    d[0] = 45.0
    steps = schema.steps_frame({"step": np.arange(249, 260), "phase": "step", "duration_s": d, "rank": 0})
    ax = sp.step_stalls(steps, record="epoch").axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert ax.get_ylabel() == "epoch time (s)" and "median 4.86 s" in labels, labels
    assert sp._amount(4860.0) == "4,860" and sp._amount(0.0123) == "0.0123" and sp._amount(48.6) == "48.6"
    import matplotlib.pyplot as plt

    plt.close("all")


def test_one_step_is_drawn_as_a_point():
    """A log with one timed step (a DeepSpeed timer summary) drew an empty chart: a line needs two points."""
    steps = schema.steps_frame({"step": [1], "phase": "step", "duration_s": [42.5], "rank": 0})
    line = sp.step_stalls(steps).axes[0].lines[0]
    assert line.get_marker() == "o" and list(line.get_ydata()) == [42.5]
    ticks = sp.step_stalls(steps).axes[0].get_xticks()
    assert all(float(t).is_integer() for t in ticks), ticks  # no tick at step 0.96
    many = schema.steps_frame({"step": np.arange(100), "phase": "step", "duration_s": 0.5, "rank": 0})
    assert sp.step_stalls(many).axes[0].lines[0].get_marker() in (None, "None", "")
    import matplotlib.pyplot as plt

    plt.close("all")
