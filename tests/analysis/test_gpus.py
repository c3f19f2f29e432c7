"""GPU status and cross-signal straggler reasoning on LABELED SYNTHETIC telemetry and the real dflash poll."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from playbook.analysis.gpus import analyze_gpus, job_gpus
from playbook.analysis.series import gpu_series
from playbook.labs.synthetic import SCENARIOS, simulate_telemetry
from playbook.model import schema

ROOT = Path(__file__).resolve().parents[2]
NOISY = {"jitter": 0.3, "nan_frac": 0.05, "gaps": 2, "noise_pct": 8.0}


@pytest.mark.parametrize("noise", [{}, NOISY], ids=["clean", "noisy"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_statuses_match_truth(scenario, noise):
    frame, truth = simulate_telemetry(scenario, **noise)
    report = analyze_gpus(frame)
    got = dict(zip(report.table["id"], report.table["status"], strict=True))
    assert got == truth.statuses


def test_straggler_peers_wait_at_low_power():
    frame, truth = simulate_telemetry("straggler", hosts=2, gpus_per_host=4)
    report = analyze_gpus(frame)
    assert [s["gpu"] for s in report.stragglers] == truth.guilty
    s = report.stragglers[0]
    assert s["waiting"] is True and s["signal"] == "power_w"
    assert s["peer_util_pct"] > 95  # the peers read ~100% while waiting...
    assert s["peer_work_drop"] > 0.5  # ...at well under their busy power
    assert s["persistence_p"] < 1e-6 and s["share_of_all"] == 1.0


def test_straggler_without_power_cannot_tell_waiting():
    frame, truth = simulate_telemetry("straggler")
    frame = frame.assign(power_w=np.nan)
    s = analyze_gpus(frame).stragglers
    assert [x["gpu"] for x in s] == truth.guilty and s[0]["waiting"] is None and s[0]["signal"] is None


def test_power_cap_alone_at_full_load_is_not_throttling():
    frame, _ = simulate_telemetry("healthy")
    busy = frame["util_pct"] >= 50
    frame.loc[busy, "throttle_reasons"] = float(schema.THROTTLE_BITS["sw_power_cap"])
    assert set(analyze_gpus(frame).table["status"]) == {"ok"}


def test_slow_clock_without_bits_is_throttled():
    frame, _ = simulate_telemetry("healthy", hosts=1, gpus_per_host=8)
    g3 = (frame["gpu"] == 3) & (frame["util_pct"] >= 50)
    frame.loc[g3, "sm_clock_mhz"] = 1500.0
    frame["throttle_reasons"] = np.nan
    table = analyze_gpus(frame).table.set_index("id")
    assert table.loc["node00:3", "status"] == "throttled"
    assert "SM clock 1500 MHz" in table.loc["node00:3", "evidence"]
    assert (table.drop("node00:3")["status"] == "ok").all()


def test_lost_gpu_evidence_names_the_time():
    frame, truth = simulate_telemetry("lost", duration_s=600.0)
    table = analyze_gpus(frame).table.set_index("id")
    assert "stopped reporting at 2026-01-15 10:06:00" in table.loc[truth.guilty[0], "evidence"]


def test_random_missing_polls_are_not_a_lost_gpu():
    frame, _ = simulate_telemetry("healthy", duration_s=3600.0, nan_frac=0.08, seed=5)
    assert set(analyze_gpus(frame).table["status"]) == {"ok"}


def test_dflash_idle_drafters_and_saturated_gpu():
    from playbook.readers import read_paths

    bundle = read_paths([ROOT / "data/samples/dflash-8gpu/nvidia-smi-poll.txt"],
                        fields="index,utilization.gpu,memory.used", interval_s=2.0)
    table = analyze_gpus(bundle.telemetry).table.set_index("index")
    assert table.loc[5, "status"] == "underutilized" and table.loc[6, "status"] == "underutilized"
    assert table.loc[7, "status"] == "saturated"
    assert "too few polls to test" in table.loc[6, "evidence"]
    assert table.loc[6, "mem_swings"]  # 34.5 -> 81.8 GB between polls


def test_single_gpu_has_no_peers():
    frame, _ = simulate_telemetry("oscillation", hosts=1, gpus_per_host=1)
    report = analyze_gpus(frame)
    assert list(report.table["status"]) == ["ok"]
    assert any("one GPU only" in w for w in report.warnings)


def test_contract_entries():
    frame, _ = simulate_telemetry("throttled", hosts=1, gpus_per_host=3)
    entries = analyze_gpus(frame).contract()
    assert [set(e) for e in entries] == [{"id", "host", "index", "mean_util_pct", "status", "evidence"}] * 3
    assert all(isinstance(e["mean_util_pct"], float) and isinstance(e["index"], int) for e in entries)


def test_all_nan_gpu_is_lost():
    frame, _ = simulate_telemetry("healthy", hosts=1, gpus_per_host=4)
    frame.loc[frame["gpu"] == 2, "util_pct"] = np.nan
    frame = schema.telemetry_frame({c: frame[c].to_numpy() for c in ("time", "host", "gpu", "util_pct")})
    table = analyze_gpus(frame).table.set_index("id")
    assert table.loc["node00:2", "status"] == "lost"
    assert pd.isna(table.loc["node00:2", "mean_util_pct"])


def _two_hosts(stop_b_at=None, start_b_at=0.0, idle_gpu=None):
    rng = np.random.default_rng(0)
    t = np.arange(0, 1800.0, 1.0)
    rows = []
    for host in ("a", "b"):
        for g in range(4):
            keep = np.ones(len(t), dtype=bool)
            if host == "b":
                keep &= t >= start_b_at
                if stop_b_at is not None:
                    keep &= t < stop_b_at
            u = np.clip(97 + rng.normal(0, 2, len(t)), 0, 100)
            mem = np.full(len(t), 60000.0)
            if idle_gpu == (host, g):
                u, mem = np.zeros(len(t)), np.full(len(t), 3.0)
            rows.append(pd.DataFrame({"time": pd.Timestamp("2026-01-01", tz="UTC")
                                      + pd.to_timedelta(t[keep], unit="s"), "host": host, "gpu": g,
                                      "util_pct": u[keep], "mem_used_mib": mem[keep]}))
    df = pd.concat(rows)
    return schema.telemetry_frame({c: df[c].to_numpy() for c in df.columns})


def test_late_start_is_not_lost():
    table = analyze_gpus(_two_hosts(start_b_at=300.0)).table
    assert set(table["status"]) == {"ok"}


def test_whole_host_stopping_is_a_host_event():
    from playbook.diagnosis.evidence import from_telemetry as telemetry

    report = analyze_gpus(_two_hosts(stop_b_at=900.0))
    lost = report.table.loc[report.table["status"] == "lost", "host"]
    assert set(lost) == {"b"} and len(lost) == 4
    ev = telemetry.from_gpus(report)
    assert [e.hypothesis for e in ev] == ["hardware_fault"] and ev[0].strength < 0.5
    assert "all GPUs of b stop together" in ev[0].text


def test_unused_gpu_is_flagged_but_not_imbalance():
    from playbook.diagnosis.evidence import from_telemetry as telemetry

    report = analyze_gpus(_two_hosts(idle_gpu=("a", 3)))
    row = report.table.set_index("id").loc["a:3"]
    assert row["status"] == "underutilized" and "not used by this job" in row["evidence"]
    assert any("probably not used by this job" in w for w in report.warnings)
    assert not [e for e in telemetry.from_gpus(report) if e.hypothesis == "pipeline_imbalance"]


def test_imbalance_permutation_test_is_calibrated_and_grows_with_polls():
    from playbook.analysis.gpus import analyze_gpus
    from playbook.model import schema

    def fleet(polls, idle, seed):
        rng = np.random.default_rng(seed)
        level = np.full(8, 60.0)
        level[[5, 6]] = idle
        util = np.clip(level + rng.normal(0, 30, (polls, 8)), 0, 100).round()
        times = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(np.repeat(np.arange(polls) * 2.0, 8), "s")
        return schema.telemetry_frame({"time": times, "host": "h", "gpu": np.tile(np.arange(8), polls),
                                       "util_pct": util.ravel()})

    # GPUs that differ only by chance (exchangeable): the p-value is not small more often than it should be
    ps = [analyze_gpus(fleet(3, 60.0, s)).imbalance_p for s in range(30)]
    ps = [p for p in ps if np.isfinite(p)]
    assert ps and sum(p < 0.05 for p in ps) <= max(3, 0.2 * len(ps))
    # a real imbalance: weak evidence from 3 polls, overwhelming from 300
    few = analyze_gpus(fleet(3, 20.0, 1)).imbalance_p
    many = analyze_gpus(fleet(300, 20.0, 1)).imbalance_p
    assert many < 1e-6 and few > many


def test_one_error_reading_is_not_a_lost_gpu_and_one_poll_is_no_imbalance():
    # REAL-format fixture: dcgmi dmon, one poll, GPU 1's single reading is an error
    from playbook.readers import read_paths

    bundle = read_paths([ROOT / "tests/data/readers/dcgmi_dmon.txt"])
    table = analyze_gpus(bundle.telemetry).table.set_index("index")
    assert table.loc[1, "status"] == "ok" and "too few to call it lost" in table.loc[1, "evidence"]
    frame = schema.telemetry_frame({"time": [pd.Timestamp("2026-01-01", tz="UTC")] * 2, "host": "h",
                                    "gpu": [0, 1], "util_pct": [96.0, 3.0]})
    assert analyze_gpus(frame).imbalance_p == pytest.approx(1.0)  # one poll: every shuffle is as uneven


def _smi_q_text(limit_w: float, default_w: float, polls: int = 60) -> str:
    """`nvidia-smi -q -d MEMORY,UTILIZATION,POWER -l 1` text (535-series layout) of four busy H100s at `limit_w`
    of their `default_w` default, draw pinned just under the limit."""
    rng = np.random.default_rng(975)
    out = []
    for i in range(polls):
        out += ["==============NVSMI LOG==============", "",
                f"Timestamp                                 : Fri Jun 26 10:{i // 60:02d}:{i % 60:02d} 2026",
                "Driver Version                            : 535.104.05", "",
                "Attached GPUs                             : 4"]
        for g in range(4):
            draw = limit_w - abs(3.0 * rng.standard_normal())
            out += [f"GPU 00000000:{0x18 + g:02X}:00.0",
                    "    Product Name                          : NVIDIA H100 80GB HBM3",
                    f"    Minor Number                          : {g}",
                    "    FB Memory Usage",
                    "        Total                             : 81559 MiB",
                    "        Used                              : 70321 MiB",
                    "    Utilization",
                    f"        Gpu                               : {int(rng.integers(96, 101))} %",
                    "        Memory                            : 41 %",
                    "    GPU Power Readings",
                    f"        Power Draw                        : {draw:.2f} W",
                    f"        Current Power Limit               : {limit_w:.2f} W",
                    f"        Requested Power Limit             : {limit_w:.2f} W",
                    f"        Default Power Limit               : {default_w:.2f} W",
                    "        Min Power Limit                   : 200.00 W",
                    f"        Max Power Limit                   : {default_w:.2f} W"]
        out.append("")
    return "\n".join(out)


@pytest.mark.parametrize(("limit_w", "want"), [(500.0, "throttled"), (700.0, "ok")])
def test_whole_node_cap_read_against_default_limit(tmp_path, limit_w, want):
    # every GPU at the same lowered limit: no peer runs higher, the -q "Default Power Limit" is the reference
    from playbook.readers import read_paths

    path = tmp_path / "smi_q.txt"
    path.write_text(_smi_q_text(limit_w, 700.0))
    tele = read_paths([str(path)]).telemetry
    assert tele["power_default_limit_w"].eq(700.0).all() and tele["power_limit_w"].eq(limit_w).all()
    table = analyze_gpus(tele).table
    assert table["status"].tolist() == [want] * 4
    if want == "throttled":
        assert np.allclose(table["cap_deficit"], 1 - (500 / 700) ** (1 / 3))  # the DVFS estimate, ~10.6%
        assert table["cap_ref_w"].eq(700.0).all() and table["cap_limit_w"].eq(500.0).all()


def test_sustained_peak_is_the_highest_clock_held_three_polls_not_a_one_poll_spike():
    from playbook.analysis.gpu_limits import sustained_peak

    clock = np.array([[210, 1980, 500, 500, 1755, 1755, 1755, 520, 510, 530],  # a spike, then 3 polls at 1755
                      [1755, 1755, 500, 500, 500, 500, 500, 500, 500, 500]], dtype=float)  # only 2 polls high
    busy = np.ones_like(clock, dtype=bool)
    busy[0, 0] = False  # idle: not a working clock
    assert sustained_peak(clock, busy).tolist() == [1755.0, 500.0]
    assert np.isnan(sustained_peak(clock[:, :2], busy[:, :2])).all()  # fewer polls than the run


def test_window_min_equals_the_strided_window_reduce_it_replaced():
    """window_min (shifted element-wise minima) against numpy's sliding_window_view(...).min on random rows with
    NaN, ±inf and booleans: the same values, NaN where a window holds one."""
    from numpy.lib.stride_tricks import sliding_window_view

    from playbook.analysis.gpu_limits import window_min

    rng = np.random.default_rng(7)
    for _ in range(300):
        x = rng.normal(size=(int(rng.integers(1, 4)), int(rng.integers(3, 15))))
        x[rng.random(x.shape) < 0.1] = np.nan
        x[rng.random(x.shape) < 0.05] = -np.inf
        for run in (1, 2, 3):
            np.testing.assert_array_equal(window_min(x, run), sliding_window_view(x, run, axis=-1).min(axis=-1))
            ok = x > 0
            np.testing.assert_array_equal(window_min(ok, run), sliding_window_view(ok, run, axis=-1).all(axis=-1))


def test_sustained_peak_of_ragged_gpus_equals_one_gpu_at_a_time():
    from playbook.analysis.gpu_limits import sustained_peak, sustained_peak_segments

    rng = np.random.default_rng(7)
    lengths = [0, 2, 3, 10, 1, 57, 3, 40]  # GPUs with fewer polls than the run among them
    x = rng.uniform(200, 2000, sum(lengths))
    ok = rng.random(len(x)) > 0.2
    offsets = np.r_[0, np.cumsum(lengths)]
    one = [sustained_peak(x[a:b], ok[a:b]) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    np.testing.assert_array_equal(sustained_peak_segments(x, ok, offsets), np.array(one, dtype=float))
    np.testing.assert_array_equal(sustained_peak_segments(x[:2], ok[:2], np.array([0, 2])), [np.nan])


def _clock_csv(tmp_path, mhz_after: int, watts_after: float) -> Path:
    """One busy GPU (300 W limit) at 1755 MHz for 6 s, then at `mhz_after` for 120 s drawing `watts_after`."""
    lines = ["timestamp, index, utilization.gpu [%], clocks.sm [MHz], power.draw [W], power.limit [W]"]
    t0 = pd.Timestamp("2024-03-02 14:00:00")
    for k in range(126):
        clock, watts = (1755, 292.0) if k < 6 else (mhz_after, watts_after)
        lines.append(f"{t0 + pd.Timedelta(seconds=k):%Y/%m/%d %H:%M:%S}.000, 0, 100 %, {clock} MHz, {watts:.2f} W, "
                     "300.00 W")
    path = tmp_path / "clock.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_clock_held_down_seconds_after_a_clean_start_is_throttling_off_the_power_limit(tmp_path):
    # matt.sh/cloud-gpu-thermal-throttling: 1755 MHz for seconds, then 450-550 MHz at half power for the rest
    from playbook.diagnosis import diagnose
    from playbook.knowledge import ids
    from playbook.readers import read_paths

    d = diagnose(read_paths([str(_clock_csv(tmp_path, 500, 150.0))]))
    assert d.hypotheses[0]["id"] == ids.THROTTLING
    # 37% lower drawing at its (default) power limit: a heavier kernel mix at TDP (an H100 PCIe at 350 W runs
    # 1.1-1.75 GHz by load) is the limit's trade, not a clock held down by heat
    d = diagnose(read_paths([str(_clock_csv(tmp_path, 1100, 296.0))]))
    assert d.hypotheses[0]["id"] != ids.THROTTLING


def _one_idle_gpu(kind: str, detail: str):
    """Two GPUs on host "n0" (LABELED SYNTHETIC): GPU 0 busy with 27 GiB, GPU 1 idle with 300 MiB; one event."""
    n = 60
    t = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(np.tile(np.arange(n), 2), unit="s")
    frame = schema.telemetry_frame({"time": t, "host": ["n0"] * 2 * n, "gpu": np.repeat([0, 1], n),
                                    "util_pct": np.repeat([99.0, 0.0], n),
                                    "mem_used_mib": np.repeat([27315.0, 309.0], n)})
    events = schema.events_frame({"time": [t[0]], "host": ["n0"], "kind": [kind], "detail": [detail]})
    return frame, events


@pytest.mark.parametrize("kind, detail, unused", [
    ("ecc", "gpu 1: 1 volatile uncorrectable ECC error", False),
    ("xid", "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", False),  # no index: any GPU of the host
    ("ecc", "gpu 0: 1 volatile uncorrectable ECC error", True),  # another GPU's fault
    ("restart", "gpu 1: torchrun restarting workers", True),  # not a device fault
])
def test_a_gpu_with_a_fault_event_is_never_called_unused(kind, detail, unused):
    frame, events = _one_idle_gpu(kind, detail)
    series = gpu_series(frame, ("util_pct", "mem_used_mib"))
    assert job_gpus(series)[1] == ["n0:1"]  # without events: idle, little memory, left out
    assert job_gpus(series, events)[1] == (["n0:1"] if unused else [])
    report = analyze_gpus(frame, events=events)
    assert bool(report.table.set_index("id").loc["n0:1", "unused"]) is unused
    assert any("not used by this job" in w for w in report.warnings) is unused


@pytest.mark.parametrize(("mem_mib", "want"), [((8192.0, 11264.0), "ok"), ((11264.0, 11264.0), "throttled")])
def test_a_smaller_part_at_its_own_limit_is_no_cap(mem_mib, want):
    # tensorpack#447's node: a GTX 1080 (8 GB, 180 W) beside a 1080 Ti (11 GB, 250 W), each pinned at its own limit.
    # The clock path compared every limit with the run's highest; the parts are told apart by memory.total, as the
    # power-only path (gpu_limits.sku_limit_refs) does. The same 11 GB part held at 180 W, its clock 15% down, is a
    # cap; the smaller part's lower clock is its own.
    t = pd.date_range("2026-01-15 10:00", periods=120, freq="1s", tz="UTC")
    rows = [{"time": ts, "host": "n0", "gpu": g, "util_pct": 100.0, "power_w": lim - 2.0, "power_limit_w": lim,
             "sm_clock_mhz": 1450.0 if g == 0 else 1700.0, "mem_total_mib": mem_mib[g], "temp_c": 70.0}
            for ts in t for g, lim in enumerate((180.0, 250.0))]
    table = analyze_gpus(schema.telemetry_frame({k: [r[k] for r in rows] for k in rows[0]})).table.set_index("id")
    assert table.loc["n0:0", "status"] == want, table.loc["n0:0", "evidence"]
    assert table.loc["n0:1", "status"] == "ok"


def test_a_series_job_gpus_returned_is_returned_as_it_is():
    """The telemetry analyzer and the accounting both ask job_gpus; the second answer is the first one's series."""
    frame, events = _one_idle_gpu("restart", "gpu 1: torchrun restarting workers")
    series = gpu_series(frame, ("util_pct", "mem_used_mib"))
    assert not series.job_only
    kept, left_out = job_gpus(series, events)
    assert left_out == ["n0:1"] and kept.ids == ["n0:0"] and kept.job_only
    again, left_out = job_gpus(kept, events)
    assert again is kept and left_out == []
