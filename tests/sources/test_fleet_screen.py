"""The fleet screen against a real Prometheus: a 64-GPU fleet (8 hosts × 8, 3 h at 15 s) backfilled with promtool,
with known culprits (promserver.culprit_fleet: two GPUs 25 points low, one with a 20% lower busy SM clock, four
swinging 97% ↔ 20%, one XID). The screen must flag exactly those, the same GPUs the full raw analysis names, with
a fraction of the rows a raw pull reads."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from promserver import (
    PROMETHEUS,
    PROMTOOL,
    SKIP_REASON,
    PromServer,
    backfill,
    culprit_fleet,
    write_openmetrics,
)

from playbook import cli
from playbook.core.errors import InputError
from playbook.diagnosis import diagnose
from playbook.labs.synthetic import simulate_telemetry
from playbook.sources import fleet_screen, prometheus

STEP = 15.0
SPAN = 3 * 3600.0
END = math.floor(pd.Timestamp.now(tz="UTC").timestamp() / STEP) * STEP - 3600.0  # an hour ago, on the grid
UNTIL = pd.Timestamp(END, unit="s", tz="UTC").isoformat()
SAMPLE = 16
PERIOD = 300.0
DCGM = 'job="dcgm"'

needs_server = pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=SKIP_REASON)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip(SKIP_REASON)
    frame, truth, xids = culprit_fleet(8, SPAN, STEP, END)
    start = pd.Timestamp(END - SPAN, unit="s", tz="UTC").isoformat()
    osc, _ = simulate_telemetry("oscillation", hosts=2, gpus_per_host=8, duration_s=SPAN, interval_s=STEP,
                                period_s=PERIOD, start=start)  # the whole fleet swings together
    osc["host"] = osc["host"].astype(str).str.replace("node", "osc")
    tmp = tmp_path_factory.mktemp("fleet")
    text = write_openmetrics(tmp / "fleet.om", [(frame, {"job": "dcgm", "namespace": "team-a"}),
                                                (osc, {"job": "osc"})], xids=xids,
                             columns=("util_pct", "power_w", "sm_clock_mhz"))
    backfill(text, tmp / "tsdb")
    prom = PromServer(tmp / "tsdb", tmp).start()
    yield prom, truth
    prom.stop()


def _window() -> prometheus.Window:
    return prometheus.Window.last(SPAN, STEP, END)


def _raw_culprits(bundle) -> set[str]:
    """What the full analysis names: GPUs not ok, swinging GPUs, GPUs with an XID event."""
    d = diagnose(bundle)
    bad = {g["id"] for g in d.gpus if g["status"] != "ok"} | set(d.detail["oscillation"].swinging)
    ev = bundle.events  # detail "gpu 2: XID 31"
    return bad | {f"{h}:{d.split(':')[0].split()[-1]}" for h, d in zip(ev["host"], ev["detail"], strict=True)}


@needs_server
def test_screen_flags_the_culprits_the_raw_analysis_names_with_a_fraction_of_the_rows(fleet):
    prom, truth = fleet
    client = prometheus._Client(prom.url)
    raw, raw_points = prometheus.pull(client, _window(), DCGM, prometheus.metric_names(client, _window(), DCGM))
    everyone = {i for ids in truth.values() for i in ids}
    assert _raw_culprits(raw) == everyone  # the raw analysis names the culprits the fleet was built with

    bundle, s, _wall = fleet_screen.measure(prom.url, _window(), DCGM, sample=SAMPLE)
    assert set(s.flagged) == everyone
    why = dict(zip(s.table["id"], s.table["why"], strict=True))
    assert all("mean utilization" in why[i] for i in truth["straggler"])
    assert all("busy SM clock" in why[i] for i in truth["clock"])
    assert all("swings" in why[i] and "below half" in why[i] for i in truth["swing"])
    assert why[truth["xid"][0]] == "XID 31"
    # ranked by suspected loss: the swinging GPUs (~19 points lost) and stragglers (25) before the clock (20% of
    # 97%) and the XID (no loss)
    assert s.flagged[-1] == truth["xid"][0] and set(s.flagged[:2]) == set(truth["straggler"])
    assert s.groups["job"] == [{"job": "team-a", "gpus": 64, "flagged": 8,
                                "loss_gpu_h": pytest.approx(float(s.table["loss_gpu_h"].sum()))}]
    assert s.groups["host"][0]["host"] == "node05" and s.groups["host"][0]["flagged"] == 4

    # the raw pull of the picked GPUs: the flagged ones and a seeded sample; its diagnosis names the same culprits
    pulled = set(bundle.telemetry["host"].astype(str) + ":" + bundle.telemetry["gpu"].astype(str))
    assert pulled == set(s.picked) and len(pulled) == len(everyone) + SAMPLE
    assert _raw_culprits(bundle) == everyone

    # the counts: rows the screen read (summaries + targeted raw) against the raw pull's points
    gpus, steps, metrics = 64, _window().steps, 4  # util, power, clock, XID (asked as != 0: only the XID GPU)
    assert s.rows == 6 * gpus + 1 + 4  # 6 summaries, XID and drops holding only the GPUs that have them
    assert raw_points == 3 * gpus * steps + steps // 2 + 1  # the XID gauge is non-zero from half-way
    assert s.raw_rows == gpus * (steps - 1) * (metrics - 1)  # samples the server counted, XID left out
    assert abs(s.raw_rows - raw_points) < 0.01 * raw_points  # the estimate of a raw pull, against the pull
    assert s.pull_rows == 3 * len(pulled) * steps + steps // 2 + 1
    assert s.rows + s.pull_rows < 0.45 * raw_points
    assert s.queries == 8 and s.pull_queries == 4 and s.raw_queries == 1 + 4


@needs_server
def test_drop_subquery_split_in_time_counts_the_same(fleet, monkeypatch):
    prom, _truth = fleet
    client = prometheus._Client(prom.url)
    names = prometheus.metric_names(client, _window(), DCGM)
    whole, _w, rows1 = fleet_screen.summarise(client, _window(), DCGM, names)
    monkeypatch.setattr(fleet_screen, "SUBQUERY_POINTS", 64 * 100)  # 100 steps a piece: 8 pieces
    split, _w, rows8 = fleet_screen.summarise(client, _window(), DCGM, names)
    assert split["drops"] == whole["drops"] and rows8 == rows1 + 7 * 4  # the 4 swinging GPUs drop in each
    assert len(whole["drops"]) == 4 and min(whole["drops"].values()) > 150  # 25% of 720 samples, give or take


@needs_server
def test_diagnose_screens_above_the_size_and_says_so(fleet, capsys, monkeypatch):
    prom, truth = fleet
    args = ["diagnose", prom.url, "--since", "3h", "--until", UNTIL, "--step", "15s", "--match", DCGM]
    assert cli.main([*args, "--json"]) == 0  # 64 × 720 samples × 3 gauges: below SCREEN_ABOVE, read raw
    d = json.loads(capsys.readouterr().out)
    assert "screen" not in d and len(d["gpus"]) == 64
    monkeypatch.setattr(fleet_screen, "SCREEN_ABOVE", 64 * 720 * 3 - 1)  # now the fleet is "large"
    monkeypatch.setattr(fleet_screen, "SAMPLE_GPUS", SAMPLE)
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("fleet screen:")]
    assert len(lines) == 1 and "64 GPUs summarised" in lines[0] and "8 flagged" in lines[0]
    assert cli.main([*args, "--json", "--screen", "off"]) == 0
    assert "screen" not in json.loads(capsys.readouterr().out)
    assert cli.main([*args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert sorted(d["screen"]["flagged"]) == sorted(i for ids in truth.values() for i in ids)
    assert len(d["gpus"]) == 8 + SAMPLE
    assert d["screen"]["queries"] == 8 and d["screen"]["rows"] == 6 * 64 + 1 + 4  # the count query first


@needs_server
def test_a_fleet_that_swings_together_flags_no_one_and_the_sample_shows_the_swing(fleet):
    prom, _truth = fleet
    bundle, s, _wall = fleet_screen.measure(prom.url, _window(), 'job="osc"', sample=6)
    assert s.flagged == [] and len(s.picked) == 6
    assert s.table["stddev_pct"].min() > 20  # every GPU swings: none stands out against the others
    screened = diagnose(bundle).oscillation
    full = diagnose(prometheus.read(prom.url, since_s=SPAN, step_s=STEP, match='job="osc"', until=END)).oscillation
    for d in (screened, full):
        assert d["periodic"] and d["synchrony"] == "synchronized" and abs(d["period_s"] - PERIOD) / PERIOD < 0.05


@needs_server
def test_auto_reads_everything_when_the_server_refuses_the_screen(fleet, monkeypatch):
    prom, _truth = fleet

    def refused(client, query, at):
        raise InputError(f"{client.display}: /api/v1/query refused (HTTP 422: subqueries disabled)")

    monkeypatch.setattr(fleet_screen, "_instant", refused)
    monkeypatch.setattr(fleet_screen, "SCREEN_ABOVE", 0)
    bundle = fleet_screen.read(prom.url, _window(), DCGM, mode="auto")
    assert bundle.telemetry.groupby(["host", "gpu"]).ngroups == 64 and "screen" not in bundle.meta
    assert any("fleet screen was refused" in w for w in bundle.warnings)
    with pytest.raises(InputError, match="refused"):
        fleet_screen.read(prom.url, _window(), DCGM, mode="on")


def test_flags_need_both_the_outlier_and_the_effect():
    n = 40
    table = pd.DataFrame({"id": [f"h:{i}" for i in range(n)], "host": "h", "gpu": range(n), "job": None,
                          "samples": 720.0, "mean_util_pct": 97.0 + 0.01 * np.arange(n), "stddev_pct": 3.0,
                          "low_decile_pct": 93.0, "drop_share": 0.0, "busy_clock_mhz": 1980.0, "power_w": 630.0,
                          "xid": 0.0})
    table.loc[3, "mean_util_pct"] = 95.0  # an outlier by z (MAD 0.1) but 2 points: not worth a raw pull
    table.loc[5, "mean_util_pct"] = 80.0  # both
    table.loc[7, "busy_clock_mhz"] = 1900.0  # 4% below: under the analysis' 5% deficit
    table.loc[9, "samples"] = 300.0  # a GPU that stopped reporting
    t = fleet_screen.flag(table, span_h=3.0)
    assert t.loc[t["flagged"], "id"].tolist() == ["h:9", "h:5"]  # by suspected loss: 58% missing, then 17 points
    assert t.loc[0, "loss_gpu_h"] == pytest.approx(3.0 * (1 - 300 / 720))


def test_selectors_by_uuid_else_whole_hosts_in_batches(monkeypatch):
    keys = {f"h.{i // 8}:{i % 8}": [(("Hostname", f"h.{i // 8}"), ("UUID", f"GPU-{i}"), ("gpu", str(i % 8)))]
            for i in range(20)}
    assert fleet_screen.selectors(["h.0:1", "h.1:0"], keys) == ['UUID=~"GPU-1|GPU-8"']
    no_uuid = {i: [tuple(kv for kv in k[0] if kv[0] != "UUID")] for i, k in keys.items()}
    monkeypatch.setattr(fleet_screen, "BATCH", 16)  # two hosts a batch
    got = fleet_screen.selectors(sorted(no_uuid), no_uuid)
    assert got == ['Hostname=~"h\\\\.0|h\\\\.1"', 'Hostname=~"h\\\\.2"']  # the dot escaped for RE2, then for PromQL
    assert fleet_screen.selectors(["h.0:1"], {"h.0:1": [(("gpu", "1"),)]}) is None
