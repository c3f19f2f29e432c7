"""The Prometheus source against a hostile server on 127.0.0.1 (a threading http.server in the test): answers
pretty-printed or with odd separators, value strings holding JSON punctuation, bodies past the size budget, gzip
bombs, answers dripped a byte at a time, and an impossible range that must be refused before any request."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
import time

import numpy as np
import pytest

from playbook import cli
from playbook.core.errors import InputError
from playbook.sources import prometheus

END = 1_700_000_000.0
STEP = 15.0
UTIL = "DCGM_FI_DEV_GPU_UTIL"


def _answer(values: list, gpus: int = 1) -> dict:
    series = [{"metric": {"__name__": UTIL, "gpu": str(g), "Hostname": "n0"}, "values": values} for g in range(gpus)]
    return {"status": "success", "data": {"resultType": "matrix", "result": series}}


class _Hostile(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.body = b"{}"  # the query_range answer (to every metric asked)
        self.names = [UTIL]  # the metric names the server lists
        self.headers: dict[str, str] = {}
        self.drip = False  # send the answer one byte a second
        self.requests = 0
        self.stopped = threading.Event()

    @property
    def url(self) -> str:
        return f"prometheus://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Hostile

    def log_message(self, *args):  # quiet
        pass

    def _send(self, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if not self.server.drip:
            self.wfile.write(body)
            return
        for byte in body:
            if self.server.stopped.wait(1.0):
                return
            self.wfile.write(bytes([byte]))
            self.wfile.flush()

    def do_GET(self):  # noqa: N802 - http.server's name
        self.server.requests += 1
        self._send(json.dumps({"status": "success", "data": self.server.names}).encode(), {})

    def do_POST(self):  # noqa: N802
        self.server.requests += 1
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._send(self.server.body, self.server.headers)


@pytest.fixture
def hostile():
    server = _Hostile()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.stopped.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


def _read(server: _Hostile, **limits):
    return prometheus.read(server.url, since_s=4 * STEP, step_s=STEP, until=END, **limits)


POINTS = [[END - 3 * STEP, "10"], [END - 2 * STEP, "NaN"], [END - STEP, "+Inf"], [END, "-1e+01"]]


@pytest.mark.parametrize("dump", [lambda d: json.dumps(d, indent=2), lambda d: json.dumps(d, separators=(", ", ": ")),
                                  lambda d: json.dumps(d, separators=(",", ":"))])
def test_any_json_layout_is_read(hostile, dump):
    hostile.body = dump(_answer([[END - STEP, "42.5"], [END, "7"]], gpus=2)).encode()
    bundle = _read(hostile)
    tel = bundle.telemetry
    assert list(tel["gpu"]) == [0, 0, 1, 1]
    np.testing.assert_array_equal(tel["util_pct"].to_numpy(), [42.5, 7.0, 42.5, 7.0])


def test_special_values_parse_and_a_bad_value_is_counted_not_injected(hostile):
    t, v, bad = prometheus._points([tuple(p) for p in POINTS])
    assert list(t) == [p[0] for p in POINTS] and bad == 0
    assert v[0] == 10 and np.isnan(v[1]) and v[2] == np.inf and v[3] == -10
    hostile.body = json.dumps(_answer([[END - 2 * STEP, "5"], [END - STEP, '1"],["9'], [END, "6"]])).encode()
    bundle = _read(hostile)
    assert len(bundle.telemetry) == 2  # the step whose value is not a number holds nothing else
    np.testing.assert_array_equal(bundle.telemetry["util_pct"].to_numpy(), [5.0, 6.0])
    assert any("1 values that are not numbers" in w for w in bundle.warnings)


def test_a_body_past_the_budget_is_one_line(hostile):
    hostile.body = json.dumps(_answer([[END, "1" * 1000]] * 2000)).encode()  # ~2 MB
    with pytest.raises(InputError, match=r"answer larger than 1 MiB \(decompressed\)") as err:
        _read(hostile, max_bytes=1 << 20)
    assert "\n" not in str(err.value)


def test_a_gzip_bomb_is_stopped_at_the_budget(hostile):
    hostile.body = gzip.compress(b" " * (64 << 20), compresslevel=9)  # 64 KB on the wire, 64 MiB inflated
    hostile.headers = {"Content-Encoding": "gzip"}
    assert len(hostile.body) < 1 << 20
    with pytest.raises(InputError, match=r"answer larger than 4 MiB \(decompressed\)"):
        _read(hostile, max_bytes=4 << 20)


def test_a_gzip_answer_within_the_budget_is_read(hostile):
    hostile.body = gzip.compress(json.dumps(_answer([[END, "3"]])).encode())
    hostile.headers = {"Content-Encoding": "gzip"}
    assert list(_read(hostile).telemetry["util_pct"]) == [3.0]


def test_a_dripping_server_ends_at_the_deadline(hostile):
    hostile.body = json.dumps(_answer([[END, "3"]])).encode()
    hostile.drip = True
    began = time.monotonic()
    with pytest.raises(InputError, match="within the 3s deadline") as err:
        _read(hostile, timeout_s=2.0, deadline_s=3.0, retries=5)
    assert "\n" not in str(err.value)
    assert time.monotonic() - began < 60  # bounded-work guard: without a deadline the drip runs for minutes


def test_an_impossible_range_is_refused_before_any_request(hostile, capsys):
    rc = cli.main(["diagnose", hostile.url, "--since", "3650d", "--step", "1ms"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "points per series" in err and "--step" in err
    assert hostile.requests == 0


def test_mig_instances_from_a_live_server_are_devices_of_their_own_and_said(hostile):
    """Two MIG instances of GPU 0 (dcgm-exporter's GPU_I_ID, label set from dcgm-exporter#713) active 0.9 and 0.1:
    two devices (101, 102), as the file reader gives, and the same warning; their DCGM_FI_DEV_GPU_UTIL (0 on MIG
    by design, dcgm-exporter#216; here the server answers every metric alike) is not read. First try (review5): the
    devices were separate (the identity is the file reader's) but the page said nothing of the numbering."""
    def series(instance: int, value: float) -> dict:
        return {"metric": {"gpu": "0", "UUID": "GPU-06357e72", "GPU_I_ID": str(instance),
                           "GPU_I_PROFILE": "3g.40gb", "Hostname": "n0"},
                "values": [[END - k * STEP, str(value)] for k in range(4)]}

    hostile.names = [UTIL, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"]
    hostile.body = json.dumps({"status": "success", "data": {"resultType": "matrix",
                                                             "result": [series(1, 0.9), series(2, 0.1)]}}).encode()
    bundle = _read(hostile)
    assert bundle.telemetry.groupby("gpu")["util_pct"].mean().to_dict() == {101: 90.0, 102: 10.0}
    assert any("MIG instances read as devices of their own" in w for w in bundle.warnings)
