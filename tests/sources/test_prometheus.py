"""The Prometheus source against a real server: a TSDB backfilled with promtool from OpenMetrics written here
(a 16-GPU oscillating fleet and a 16-GPU fleet with one straggler), served by `prometheus` on 127.0.0.1."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from promserver import PROMETHEUS, PROMTOOL, SKIP_REASON, PromServer, backfill, free_port, write_openmetrics

from playbook import cli
from playbook.core.errors import InputError
from playbook.labs.synthetic import simulate_telemetry
from playbook.sources import fleet_screen, prometheus

STEP = 15.0
SPAN = 3 * 3600.0
PERIOD = 300.0
END = math.floor(pd.Timestamp.now(tz="UTC").timestamp() / STEP) * STEP - 3600.0  # an hour ago, on the grid
UNTIL = pd.Timestamp(END, unit="s", tz="UTC").isoformat()
STRAGGLER = ("s00", 5)
XID_AT = END - SPAN / 2

needs_server = pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=SKIP_REASON)


def _fleet(scenario: str, hosts: dict[str, str]) -> pd.DataFrame:
    start = pd.Timestamp(END - SPAN, unit="s", tz="UTC").isoformat()
    frame, _truth = simulate_telemetry(scenario, hosts=2, gpus_per_host=8, duration_s=SPAN, interval_s=STEP,
                                       period_s=PERIOD, guilty_gpu=5, start=start)
    frame["host"] = frame["host"].astype(str).map(hosts)
    return frame


@pytest.fixture(scope="module")
def fleets():
    return {"osc": _fleet("oscillation", {"node00": "node00", "node01": "node01"}),
            "strag": _fleet("straggler", {"node00": "s00", "node01": "s01"})}


@pytest.fixture(scope="module")
def server(tmp_path_factory, fleets):
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip(SKIP_REASON)
    tmp = tmp_path_factory.mktemp("prom")
    text = write_openmetrics(tmp / "fleet.om", [(fleets["osc"], {"job": "osc"}), (fleets["strag"], {"job": "strag"})],
                             xids={STRAGGLER: [(XID_AT, 79)]})
    backfill(text, tmp / "tsdb")
    prom = PromServer(tmp / "tsdb", tmp).start()
    yield prom
    prom.stop()


def _diagnose(capsys, url: str, *extra: str) -> tuple[int, dict | None, str]:
    rc = cli.main(["diagnose", url, "--since", "3h", "--until", UNTIL, "--step", "15s", "--json", *extra])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if rc == 0 else None), err


@needs_server
def test_diagnose_names_the_fleet_oscillation(server, capsys):
    rc, d, err = _diagnose(capsys, server.url, "--match", 'job="osc"')
    assert rc == 0, err
    o = d["oscillation"]
    assert o["detected"] and o["periodic"] and o["synchrony"] == "synchronized"
    assert abs(o["period_s"] - PERIOD) / PERIOD < 0.05
    assert len(d["gpus"]) == 16 and {g["host"] for g in d["gpus"]} == {"node00", "node01"}
    assert d["hypotheses"][0]["id"] != "healthy"


@needs_server
def test_diagnose_names_the_straggler(server, capsys):
    rc, d, err = _diagnose(capsys, server.url, "--match", '{job="strag"}')  # braces or not
    assert rc == 0, err
    flagged = [g["id"] for g in d["gpus"] if g["status"] != "ok"]
    assert flagged == ["s00:5"]
    assert "collective_straggler" in [h["id"] for h in d["hypotheses"][:2]]


@needs_server
def test_table_matches_what_was_written_and_chunking_changes_nothing(server, fleets, monkeypatch):
    whole = prometheus.read(server.url, since_s=SPAN, step_s=STEP, match='job="strag"', until=END)
    monkeypatch.setattr(prometheus, "MAX_POINTS", 97)  # 720 steps: 8 chunks, the last one short
    chunked = prometheus.read(server.url, since_s=SPAN, step_s=STEP, match='job="strag"', until=END)
    pd.testing.assert_frame_equal(whole.telemetry, chunked.telemetry)
    got = whole.telemetry
    src = fleets["strag"]
    assert got.attrs["interval_s"] == STEP
    keys = ["host", "gpu", "time"]
    both = src.assign(host=src["host"].astype(str)).merge(got.assign(host=got["host"].astype(str)), on=keys,
                                                          suffixes=("_w", "_r"))
    assert len(both) == len(src)  # every written sample came back once (plus the lookback point at the end)
    for column in ("util_pct", "power_w", "sm_clock_mhz", "mem_used_mib", "throttle_reasons"):
        np.testing.assert_allclose(both[f"{column}_r"], both[f"{column}_w"], rtol=1e-5, equal_nan=True)
    ev = whole.events
    assert list(ev["kind"]) == ["xid"] and ev["detail"].iloc[0] == "gpu 5: XID 79"
    assert ev["host"].iloc[0] == "s00" and abs(ev["time"].iloc[0].timestamp() - XID_AT) <= STEP


@needs_server
def test_absent_series_is_one_line(server, capsys):
    rc, _d, err = _diagnose(capsys, server.url, "--match", 'job="nothing"')
    assert rc == 2
    assert err.count("\n") == 1 and "no dcgm-exporter series" in err and 'job="nothing"' in err


@needs_server
def test_bad_matcher_is_refused_in_one_line(server, capsys):
    rc, _d, err = _diagnose(capsys, server.url, "--match", "job=osc")
    assert rc == 2 and err.count("\n") == 1 and "refused" in err


def test_unreachable_server_is_one_line_after_retries():
    port = free_port()  # nothing listens there
    with pytest.raises(InputError, match=r"cannot reach the Prometheus API .* after 2 tries"):
        prometheus.read(f"prometheus://127.0.0.1:{port}", since_s=600, step_s=15, retries=1)


def test_addresses_and_windows():
    assert prometheus.base_url("prometheus://h:9090") == "http://h:9090"
    assert prometheus.base_url("prometheus+https://h/prom/") == "https://h/prom"
    with pytest.raises(InputError, match="no host"):
        prometheus.base_url("prometheus://")
    assert prometheus.selector("X", '{a="1"}') == 'X{a="1"}' and prometheus.selector("X", None) == "X"
    w = prometheus.Window.last(since_s=24 * 3600, step_s=15, until=1_700_000_007.0)
    assert w.start % 15 == 0 and w.steps == 5761
    chunks = w.chunks()
    assert len(chunks) == 1 and chunks[0] == (w.start, w.start + 5760 * 15)
    w = prometheus.Window(0.0, 15.0 * 25_000, 15.0)
    chunks = w.chunks()
    assert [round((b - a) / 15) + 1 for a, b in chunks] == [11_000, 11_000, 3_001]
    assert all(b2 - a1 == 15.0 for (_, a1), (b2, _) in zip(chunks, chunks[1:], strict=False))


@needs_server
def test_watch_reads_the_fleet_over_its_window(server):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "playbook", "watch", server.url, "--window", "3h", "--for", "1s",
                           "--match", 'job="strag"', "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert [g["id"] for g in d["gpus"] if g["status"] != "ok"] == ["s00:5"]


@needs_server
def test_report_inputs_are_saved_as_a_run_directory(server, tmp_path):
    import argparse

    from playbook.readers import read_paths

    args = argparse.Namespace(since=SPAN, step=STEP, until=UNTIL, match='job="strag"')
    paths = fleet_screen.save_inputs(["local.csv", server.url], args, tmp_path)
    assert paths[0] == "local.csv" and paths[1].startswith(str(tmp_path / "prometheus-127.0.0.1-"))
    saved = read_paths([paths[1]])
    direct = prometheus.read(server.url, since_s=SPAN, step_s=STEP, match='job="strag"', until=END)
    assert len(saved.telemetry) == len(direct.telemetry) and list(saved.events["kind"]) == ["xid"]
    np.testing.assert_array_equal(saved.telemetry["util_pct"].to_numpy(), direct.telemetry["util_pct"].to_numpy())
