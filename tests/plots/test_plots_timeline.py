"""Timeline plots: binning is exact on known inputs, every figure has its units and draws what it should."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from playbook.model.schema import telemetry_frame  # noqa: E402
from playbook.plots import timeline as tl  # noqa: E402


def _telemetry(hosts=2, gpus=4, seconds=120, period=60, high_s=45, quiet=("h1", 2), step_s=1):
    """Utilization every `step_s` s: every GPU at 90% for `high_s` of each `period`, 20% otherwise; one GPU at
    5% always. `seconds` counts samples."""
    t = pd.date_range("2025-01-01", periods=seconds, freq=f"{step_s}s", tz="UTC")
    cycle = np.where((np.arange(seconds) * step_s) % period < high_s, 90.0, 20.0)
    rows = {"time": [], "host": [], "gpu": [], "util_pct": []}
    for h in range(hosts):
        for g in range(gpus):
            rows["time"].append(t)
            rows["host"] += [f"h{h}"] * seconds
            rows["gpu"] += [g] * seconds
            rows["util_pct"].append(np.full(seconds, 5.0) if (f"h{h}", g) == quiet else cycle)
    return telemetry_frame({"time": np.concatenate(rows["time"]), "host": rows["host"], "gpu": rows["gpu"],
                            "util_pct": np.concatenate(rows["util_pct"])})


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_binned_matrix_orders_gpus_and_averages_bins():
    tel = _telemetry()
    m = tl.binned_matrix(tel, max_bins=12)  # 120 s in bins of 10 s
    assert list(m.index) == [f"h{h}:{g}" for h in range(2) for g in range(4)]
    assert m.attrs["bin_s"] == pytest.approx(10.0)
    assert m.shape == (8, 12)
    # bin 40-50 s straddles the drop at 45 s: five samples at 90, five at 20
    assert m.loc["h0:0", 40.0] == pytest.approx(55.0)
    assert m.loc["h0:0", 0.0] == pytest.approx(90.0) and m.loc["h0:0", 50.0] == pytest.approx(20.0)
    assert (m.loc["h1:2"] == 5.0).all()


def test_binned_matrix_keeps_gaps_as_nan():
    tel = _telemetry()
    gap = tel[~((tel["host"] == "h0") & (tel["gpu"] == 1) & (tel["time"] >= tel["time"].min()
                                                               + pd.Timedelta(seconds=30)))]
    m = tl.binned_matrix(gap.reset_index(drop=True), max_bins=12)
    assert m.loc["h0:1", 0.0] == pytest.approx(90.0)
    assert m.loc["h0:1"].iloc[3:].isna().all()


def test_heatmap_has_a_row_per_gpu_and_a_labelled_colorbar():
    fig = tl.heatmap(_telemetry())
    ax, cbar = fig.axes
    assert cbar.get_ylabel() == "utilization.gpu (%)"
    assert ax.get_xlabel() == "time since start (s) · bins of 1 s"
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["h0:0", "h0:1"]
    mesh = ax.collections[0]
    assert mesh.get_array().shape == (8, 120)
    assert np.nanmax(mesh.get_array()) == 90.0 and np.nanmin(mesh.get_array()) == 5.0


def test_heatmap_of_many_gpus_labels_hosts_and_long_runs_in_hours():
    tel = _telemetry(hosts=8, gpus=5, seconds=4 * 360, period=600, high_s=450, step_s=10)  # 40 GPUs, 4 h
    fig = tl.heatmap(tel, figsize=(10, 4))  # too short for 40 labels: one per host block
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"h{h} (GPUs ok)" for h in range(8)]
    assert ax.get_xlabel().startswith("time since start (h)")
    assert ax.collections[0].get_array().shape[1] <= 400
    ax = tl.heatmap(tel).axes[0]  # tall enough: every row labelled host:index
    assert [t.get_text() for t in ax.get_yticklabels()][:6] == ["h0:0", "h0:1", "h0:2", "h0:3", "h0:4", "h1:0"]


def test_heatmap_puts_the_gpus_that_are_not_ok_first_marked_and_taller():
    tel = _telemetry(hosts=8, gpus=8)
    status = {"h3:5": "underutilized", "h0:2": "lost"}
    ax = tl.heatmap(tel, status=status, figsize=(10, 4)).axes[0]
    labels = ax.get_yticklabels()
    assert [t.get_text() for t in labels[:2]] == ["h0:2", "h3:5"]  # lost before underutilized
    assert all(t.get_color() == "#d62828" for t in labels[:2]) and labels[2].get_color() != "#d62828"
    h = tl.row_heights(["lost", "underutilized"] + ["ok"] * 62)
    assert h[0] == h[1] == 8  # capped at 8 rows each
    h = tl.row_heights(["lost"] * 8 + ["ok"] * 56)
    assert h[:8].sum() / h.sum() == pytest.approx(1 / 3)  # a third of the height at most


def test_heatmap_bins_keep_a_period_visible_over_a_long_run():
    assert tl.heatmap_bins(7200, 400, 60) == 960  # 8 bins per 60 s cycle, not 18 s bins
    assert tl.heatmap_bins(7200, 400, None) == 400
    assert tl.heatmap_bins(30 * 86400, 400, 60) == tl.MAX_HEATMAP_BINS


def test_spectrum_marks_a_period_only_where_it_is_significant():
    spec = pd.DataFrame({"period_s": [30.0, 60.0, 120.0], "power": [1.0, 2.0, 1.0],
                         "threshold": [3.0, 3.0, 3.0]})
    assert not tl.significant_at(spec, 60.0)
    assert tl.significant_at(spec.assign(power=[1.0, 5.0, 1.0]), 60.0)
    ax = tl.spectrum(spec, 60.0).axes[0]
    assert not any(str(ln.get_label()).startswith("period") for ln in ax.get_lines())


def test_host_series_band_spans_the_hosts_gpus():
    s = tl.host_series(_telemetry(), max_bins=120)
    h1 = s[(s["host"] == "h1") & (s["time_s"] == 0.0)].iloc[0]
    assert h1["lo"] == 5.0 and h1["hi"] == 90.0 and h1["mean"] == pytest.approx((3 * 90 + 5) / 4)


def test_host_lines_one_line_per_host_or_per_gpu_on_one_host():
    tel = _telemetry()
    ax = tl.host_lines(tel).axes[0]
    assert [ln.get_label() for ln in ax.get_lines()] == ["h0", "h1"]
    assert ax.get_ylabel() == "utilization.gpu (%)"
    single = tl.host_lines(tel[tel["host"] == "h0"]).axes[0]
    assert len(single.get_lines()) == 4


def test_spectrum_marks_the_period_and_greys_out_of_band():
    periods = np.linspace(2, 300, 300)
    spec = pd.DataFrame({"period_s": periods, "power": np.exp(-((periods - 60) / 5) ** 2),
                         "null": 0.05, "threshold": 0.2, "in_band": periods <= 100})
    ax = tl.spectrum(spec, period_s=60.0).axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "period (s)"
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert {"power", "noise background", "significance threshold", "period 60 s"} <= set(labels)
    power = next(ln for ln in ax.get_lines() if ln.get_label() == "power")
    assert np.isnan(power.get_ydata()[periods > 100]).all()  # out of band: only the grey line
    assert tl.spectrum(spec.iloc[:0]).axes[0].texts[0].get_text() == "too few samples for a spectrum"


def test_folded_cycle_draws_median_and_band():
    fold = pd.DataFrame({"time_in_cycle_s": np.arange(12) * 5 + 2.5, "median": [90.0] * 9 + [20.0] * 3,
                         "q25": [85.0] * 9 + [15.0] * 3, "q75": [95.0] * 9 + [25.0] * 3})
    ax = tl.folded_cycle(fold, period_s=60.0).axes[0]
    assert ax.get_xlim() == (0.0, 60.0) and "60 s cycle" in ax.get_xlabel()
    median = next(ln for ln in ax.get_lines() if ln.get_label() == "median")
    assert list(median.get_ydata()) == [90.0] * 9 + [20.0] * 3
    assert ax.get_ylabel() == "utilization.gpu (%)"
    fold["phase"] = fold["time_in_cycle_s"] / 60.0
    assert tl.folded_cycle(fold).axes[0].get_xlim() == (0.0, 60.0)  # period read from the frame
    assert tl.folded_cycle(fold.iloc[:0]).axes[0].texts[0].get_text() == "no period to fold on"
    fold["phase"] = fold["time_in_cycle_s"] / 60.0
    assert tl.folded_cycle(fold).axes[0].get_xlim() == (0.0, 60.0)  # period read from the frame
    assert tl.folded_cycle(fold.iloc[:0]).axes[0].texts[0].get_text() == "no period to fold on"


def test_status_table_colours_each_gpu_by_status():
    gpus = [{"id": f"n{h}:{g}", "host": f"n{h}", "index": g, "mean_util_pct": 70.0, "status": "ok"}
            for h in range(2) for g in range(3)]
    gpus[4]["status"], gpus[4]["mean_util_pct"] = "underutilized", 12.0
    ax = tl.status_table(gpus).axes[0]
    assert len(ax.patches) == 6
    colors = [matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches]
    assert colors.count(tl.STATUS_COLORS["underutilized"]) == 1
    assert "12%" in [t.get_text() for t in ax.texts]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ok", "underutilized"]
    # ids alone are enough
    assert len(tl.status_table([{"id": "a:0", "status": "lost"}]).axes[0].patches) == 1


def test_telemetry_without_timestamps_is_placed_at_the_interval_and_says_so():
    tel = _telemetry(seconds=10)
    tel["time"] = pd.NaT
    tel.attrs["interval_s"] = 2.0
    m = tl.binned_matrix(tel)
    assert m.shape == (8, 10) and m.attrs["assumed_interval_s"] == 2.0
    assert list(m.columns[:3]) == [0.0, 2.0, 4.0]
    ax = tl.heatmap(tel).axes[0]
    assert "no timestamps, samples placed 2 s apart" in ax.get_xlabel()
    assert "no timestamps" in tl.host_lines(tel).axes[0].get_xlabel()


def _jittered_poll_csv(path, seconds=300, gap=(), seed=0, every_s=1.0, whole_seconds=False):
    """An nvidia-smi --query-gpu CSV of a `-l 1` loop as written: a poll every `every_s` seconds whose timestamp
    jitters (normal, sd 150 ms, within ±400 ms; or none, stamped to the whole second, as dmon -o T and many
    wrappers print), 8 GPUs a poll, 3 ms apart; no poll in the seconds of `gap`."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2025-01-01 00:00:00")
    lines = ["timestamp, index, utilization.gpu [%]"]
    for i in range(seconds):
        if i in gap:
            continue
        jitter = 0.0 if whole_seconds else float(np.clip(rng.normal(0, 150), -400, 400))
        poll = t0 + pd.Timedelta(seconds=i * every_s) + pd.Timedelta(milliseconds=jitter)
        for g in range(8):
            ts = poll.floor("s") if whole_seconds else poll + pd.Timedelta(milliseconds=3 * g)
            lines.append(f"{ts.strftime('%Y/%m/%d %H:%M:%S.%f')[:-3]}, {g}, {90 if i % 60 < 45 else 20}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_1s_poll_leaves_no_empty_bin_and_a_real_gap_is_marked_no_sample(tmp_path):
    from playbook.readers import read_paths

    steady = read_paths([_jittered_poll_csv(tmp_path / "steady.csv")]).telemetry
    m = tl.binned_matrix(steady, max_bins=400)
    # ±400 ms of jitter: a bin of one interval would be skipped now and then (20 empty columns, "stripes", when
    # binned by the reader's nominal 0.998 s); bins of two intervals never are
    assert m.attrs["bin_s"] == pytest.approx(2.0, abs=0.01) and not m.isna().any().any()
    stamped = read_paths([_jittered_poll_csv(tmp_path / "stamped.csv", every_s=1.03, whole_seconds=True)]).telemetry
    assert not tl.binned_matrix(stamped, max_bins=400).isna().any().any()  # 1 s, 1 s, ..., 2 s: no stripe
    regular = tl.binned_matrix(_telemetry(), max_bins=400)
    assert regular.attrs["bin_s"] == pytest.approx(1.0) and not regular.isna().any().any()  # one bin a poll
    gappy = read_paths([_jittered_poll_csv(tmp_path / "gap.csv", gap=range(100, 110))]).telemetry
    g = tl.binned_matrix(gappy, max_bins=400)
    empty = g.columns[g.isna().all().to_numpy()]
    assert len(empty) >= 4 and all(99 <= t <= 110 for t in empty), list(empty)  # the 10 s gap, nothing else
    ax = tl.heatmap(gappy).axes[0]
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 1 and hatched[0].get_zorder() < ax.collections[0].get_zorder()  # behind the mesh
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["no sample"]
    assert tl.heatmap(steady).axes[0].get_legend() is None  # nothing to explain without a gap
