"""playbook.labs.workloads.objstore: the shard writer and the loopback HTTP object store with injected faults."""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import os
import tarfile
import time

import numpy as np
import pytest
import zstandard

from playbook.core.errors import InputError, PlaybookError
from playbook.labs.workloads.objstore import INDEX_NAME, ObjectStore, main, write_shards


def _samples(n, size=64):
    for i in range(n):
        yield {"__key__": f"s{i:04d}", "bin": bytes([i % 256]) * size, "cls": i % 3, "npy": np.arange(4) * i}


@pytest.fixture
def bucket(tmp_path):
    root = tmp_path / "bucket"
    index = write_shards(_samples(25), root, samples_per_shard=10)
    return root, index


def _get(url_port, path, headers=None, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", url_port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def test_write_shards_index_and_tar_layout(bucket, tmp_path):
    root, index = bucket
    assert [s["samples"] for s in index["shards"]] == [10, 10, 5] and index["samples"] == 25
    assert json.loads((root / INDEX_NAME).read_text()) == index
    first = index["shards"][0]
    data = (root / first["name"]).read_bytes()
    assert len(data) == first["bytes"] and hashlib.sha256(data).hexdigest() == first["sha256"]
    raw = zstandard.ZstdDecompressor().decompressobj().decompress(data)
    names = tarfile.open(fileobj=io.BytesIO(raw)).getnames()
    assert names[:3] == ["s0000.bin", "s0000.cls", "s0000.npy"] and len(names) == 30
    # deterministic: the same samples give byte-identical shards
    again = write_shards(_samples(25), tmp_path / "again", samples_per_shard=10)
    assert [s["sha256"] for s in again["shards"]] == [s["sha256"] for s in index["shards"]]


def test_write_shards_rejects_bad_keys(tmp_path):
    with pytest.raises(InputError, match="unique"):
        write_shards([{"__key__": "a", "x": b"1"}, {"__key__": "a", "x": b"2"}], tmp_path)
    with pytest.raises(InputError, match="without '.'"):
        write_shards([{"__key__": "a.b", "x": b"1"}], tmp_path)


def test_get_range_head_and_errors(bucket):
    root, index = bucket
    name = index["shards"][1]["name"]
    data = (root / name).read_bytes()
    with ObjectStore(root, mode="thread") as store:
        assert store.url.startswith("http://127.0.0.1:")
        status, _, body = _get(store.port, f"/{name}")
        assert status == 200 and body == data
        status, headers, body = _get(store.port, f"/{name}", {"Range": "bytes=10-29"})
        assert status == 206 and body == data[10:30] and headers["Content-Range"] == f"bytes 10-29/{len(data)}"
        status, _, body = _get(store.port, f"/{name}", {"Range": "bytes=-7"})
        assert status == 206 and body == data[-7:]
        assert _get(store.port, f"/{name}", {"Range": f"bytes={len(data)}-"})[0] == 416
        status, headers, body = _get(store.port, f"/{name}", method="HEAD")
        assert status == 200 and int(headers["Content-Length"]) == len(data) and body == b""
        assert _get(store.port, "/missing.tar.zst")[0] == 404
        assert _get(store.port, "/../../etc/passwd")[0] == 404  # no way out of the root
        stats = store.stats()
        assert stats["requests"] == 7 and stats["range_requests"] == 2 and stats["bytes_sent"] >= len(data) + 27


def test_injected_latency_bandwidth_and_errors(bucket):
    root, index = bucket
    name = index["shards"][0]["name"]
    size = index["shards"][0]["bytes"]
    with ObjectStore(root, latency_s=0.15, mode="thread") as store:
        t0 = time.perf_counter()
        assert _get(store.port, f"/{name}")[0] == 200
        assert time.perf_counter() - t0 >= 0.15
        bw = size / 0.3 / 2**20  # MiB/s that makes the shard take 0.3 s
        store.configure(latency_s=0.0, bandwidth_mib_s=bw)
        t0 = time.perf_counter()
        assert _get(store.port, f"/{name}")[2] == (root / name).read_bytes()
        assert time.perf_counter() - t0 >= 0.25
        store.configure(bandwidth_mib_s=None, error_rate=1.0)
        status, headers, body = _get(store.port, f"/{name}")
        assert status == 503 and body == b"SlowDown"
        assert store.stats()["errors_injected"] == 1
        with pytest.raises(InputError, match="unknown setting"):
            store.configure(latency=1)
        with pytest.raises(InputError, match="must be a number in 0..3600"):
            store.configure(latency_s=-1)


def test_process_mode_serves_and_stops(bucket):
    root, index = bucket
    store = ObjectStore(root, latency_s=0.01).start()
    try:
        proc = store._proc
        assert _get(store.port, f"/{index['shards'][2]['name']}")[0] == 200
        assert store.configure(latency_s=0.0)["latency_s"] == 0.0
    finally:
        store.stop()
    assert proc.poll() is not None  # the server process is gone
    with pytest.raises(PlaybookError, match="not running"):
        _ = store.url


def test_bad_construction(tmp_path):
    with pytest.raises(InputError, match="not a directory"):
        ObjectStore(tmp_path / "nope")
    with pytest.raises(InputError, match="mode"):
        ObjectStore(tmp_path, mode="fork")
    with pytest.raises(InputError):
        ObjectStore(tmp_path, error_rate=-0.5)


def test_cli_help_and_bad_root(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0 and "example:" in capsys.readouterr().out
    assert main([str(tmp_path / "missing")]) == 2


@pytest.mark.parametrize("value", [1e999, float("nan"), -1, True, "1"])
def test_settings_out_of_range_are_refused(bucket, value):
    root, _ = bucket
    with pytest.raises(InputError, match="latency_s must be a number in 0..3600"):
        ObjectStore(root, latency_s=value, mode="thread")
    with pytest.raises(InputError, match="error_rate must be a number in 0..1"):
        ObjectStore(root, error_rate=1.5, mode="thread")


def _raw(port: int, request: bytes) -> bytes:
    """Send raw bytes, return the whole reply (the server closes the connection after a 400)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_hostile_requests_get_400_and_never_stall_a_handler(bucket):
    root, index = bucket
    name = index["shards"][0]["name"]
    with ObjectStore(root, mode="thread") as store:
        assert _raw(store.port, f"GET /{name}\x00x HTTP/1.1\r\nHost: x\r\n\r\n".encode()).startswith(
            b"HTTP/1.1 400")
        auth = f"Authorization: Bearer {store.token}\r\n".encode()
        for length in ("-5", "abc", str(1 << 30)):  # rfile.read(-5) used to block until the client hung up
            reply = _raw(store.port, b"PUT /_config HTTP/1.1\r\n" + auth
                         + f"Content-Length: {length}\r\n\r\n{{}}".encode())
            assert reply.startswith(b"HTTP/1.1 400") and b"Content-Length" in reply
        reply = _raw(store.port, b"PUT /_config HTTP/1.1\r\n" + auth + b"Content-Length: 2\r\n\r\n[]")
        assert reply.startswith(b"HTTP/1.1 400")
        body = b'{"latency_s": 1e999}'
        reply = _raw(store.port, b"PUT /_config HTTP/1.1\r\n" + auth
                     + b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        assert reply.startswith(b"HTTP/1.1 400")
        assert _get(store.port, f"/{name}")[0] == 200  # and the store still serves
        assert store.stats()["latency_s"] == 0


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_configuration_needs_the_token(bucket, mode):
    root, index = bucket
    body = b'{"error_rate": 1}'
    with ObjectStore(root, mode=mode) as store:
        for auth in (b"", b"Authorization: Bearer guess\r\n", b"Authorization: " + store.token.encode() + b"\r\n"):
            reply = _raw(store.port, b"PUT /_config HTTP/1.1\r\n" + auth
                         + b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            assert reply.startswith(b"HTTP/1.1 403") and b"token" in reply
        assert store.stats()["error_rate"] == 0  # unchanged: any local process could have asked
        assert _get(store.port, f"/{index['shards'][0]['name']}")[0] == 200
        assert store.configure(latency_s=0.01)["latency_s"] == 0.01  # the owner still can


def test_the_cli_store_takes_its_faults_from_the_command_line_only(bucket):
    import subprocess
    import sys

    root, _ = bucket
    env = {k: v for k, v in os.environ.items() if k != "PLAYBOOK_OBJSTORE_TOKEN"}
    proc = subprocess.Popen([sys.executable, "-m", "playbook.labs.workloads.objstore", str(root), "--latency-s", "0"],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        port = int(proc.stdout.readline().rsplit(":", 1)[1])
        body = b'{"error_rate": 1}'
        reply = _raw(port, b"PUT /_config HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        assert reply.startswith(b"HTTP/1.1 403")
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
