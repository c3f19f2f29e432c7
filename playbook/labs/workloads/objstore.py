"""A local object store for loader experiments: a real HTTP server on loopback with injectable latency.

    from playbook.labs.workloads.objstore import ObjectStore, write_shards
    index = write_shards(samples, "data/shards", samples_per_shard=64)       # tar shards, zstd-compressed
    with ObjectStore("data/shards", latency_s=0.08, bandwidth_mib_s=32) as store:
        store.url                     # "http://127.0.0.1:PORT" ; GET {url}/index.json, GET {url}/shard-000000.tar.zst
        store.configure(latency_s=0)  # change the injected faults while it runs
        store.stats()                 # {"requests": ..., "bytes_sent": ..., "errors_injected": ...}

The server behaves like the parts of S3/GCS a loader touches: GET of a whole object or of one byte range
(`Range: bytes=a-b` → 206), HEAD (Content-Length), 404 for missing keys, 416 for unsatisfiable ranges, HTTP/1.1
keep-alive. Injected, per request: time to first byte `latency_s` (+ uniform `jitter_s`), a per-connection
bandwidth cap `bandwidth_mib_s` (MiB/s; connections do not share it, as with S3's per-connection throughput), and
`error_rate` (share of requests answered 503 SlowDown). It runs in its own process by default (mode="process"),
so serving bytes never competes with the measured training loop for the GIL; mode="thread" is for tests.
The faults are set on the command line, or changed by PUT /_config only with the store's token
(`Authorization: Bearer TOKEN`; ObjectStore makes a random one and hands it to its server through the
environment, TOKEN_ENV): any other local process gets 403.

Shards follow the WebDataset convention: a tar whose members are `<key>.<ext>`, consecutive members with the same
key forming one sample, here compressed as one zstd frame per shard (`.tar.zst`). `index.json` lists every shard
with its size, sample count and sha256, which is what a loader needs to plan an epoch without listing the bucket.
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import io
import json
import math
import os
import random
import secrets
import select
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from playbook.core.errors import InputError, PlaybookError

INDEX_NAME = "index.json"
INDEX_FORMAT = "playbook-shards/1"
CHUNK_BYTES = 64 * 1024  # write granularity of the bandwidth limiter


# ---------------------------------------------------------------- writer

def npy_bytes(array: Any) -> bytes:
    """A numpy array as .npy file bytes (the usual encoding of an array field in a tar shard)."""
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    return buf.getvalue()


def _field_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (int, float)):
        return str(value).encode()
    return npy_bytes(value)


def write_shards(samples: Iterable[dict[str, Any]], out_dir: str | os.PathLike, samples_per_shard: int = 64,
                 prefix: str = "shard", level: int = 3) -> dict[str, Any]:
    """Write samples into `<prefix>-NNNNNN.tar.zst` shards plus `index.json`; returns the index.

    Each sample is a dict with "__key__" (unique, no dots) and fields ext -> bytes | str | number | array
    (arrays are stored as .npy). Members are written in sorted ext order with mtime 0, so the same samples give
    byte-identical shards.
    """
    import zstandard

    if samples_per_shard < 1:
        raise InputError(f"write_shards: samples_per_shard must be ≥ 1, got {samples_per_shard}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cctx = zstandard.ZstdCompressor(level=level, write_checksum=True)  # a flipped bit fails decompression
    shards: list[dict[str, Any]] = []
    buf, tar, count = None, None, 0

    def close_shard() -> None:
        nonlocal buf, tar, count
        if tar is None:
            return
        tar.close()
        data = cctx.compress(buf.getvalue())
        name = f"{prefix}-{len(shards):06d}.tar.zst"
        (out / name).write_bytes(data)
        shards.append({"name": name, "bytes": len(data), "raw_bytes": len(buf.getvalue()), "samples": count,
                       "sha256": hashlib.sha256(data).hexdigest()})
        buf, tar, count = None, None, 0

    seen: set[str] = set()
    for sample in samples:
        key = str(sample.get("__key__", ""))
        if not key or "." in key or "/" in key or key in seen:
            raise InputError(f"write_shards: sample key {key!r} must be unique, non-empty, without '.' or '/'")
        seen.add(key)
        if tar is None:
            buf = io.BytesIO()
            tar = tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT)
        for ext in sorted(k for k in sample if k != "__key__"):
            try:
                data = _field_bytes(sample[ext])
            except (ValueError, TypeError) as e:  # e.g. an object array: not storable without pickle
                raise InputError(f"write_shards: sample {key!r} field {ext!r}: not bytes, text, a number or a "
                                 f"numeric array ({e})") from None
            info = tarfile.TarInfo(f"{key}.{ext}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
        count += 1
        if count >= samples_per_shard:
            close_shard()
    close_shard()
    index = {"format": INDEX_FORMAT, "compression": "zstd", "samples": sum(s["samples"] for s in shards),
             "shards": shards}
    (out / INDEX_NAME).write_text(json.dumps(index, indent=1))
    return index


# ---------------------------------------------------------------- server

# largest accepted settings: a delay over an hour is no test of a loader, an error rate is a probability,
# bandwidth beyond 1 TiB/s is no cap
MAX_SETTING = {"latency_s": 3600.0, "jitter_s": 3600.0, "bandwidth_mib_s": float(1 << 20), "error_rate": 1.0}
MAX_CONFIG_BYTES = 64 << 10  # a PUT /_config body: four numbers
TOKEN_ENV = "PLAYBOOK_OBJSTORE_TOKEN"  # the token PUT /_config needs (unset: configuration from the command line only)


class _Faults:
    """Injected faults, shared by the handler threads; changed at run time through PUT /_config."""

    KEYS = ("latency_s", "jitter_s", "bandwidth_mib_s", "error_rate")

    def __init__(self, latency_s: float = 0.0, jitter_s: float = 0.0, bandwidth_mib_s: float | None = None,
                 error_rate: float = 0.0, seed: int = 0, token: str | None = None):
        self.token = token  # PUT /_config needs it; None: refused
        self.lock = threading.Lock()
        self.rng = random.Random(seed)
        self.values: dict[str, Any] = {}
        self.stats = {"requests": 0, "bytes_sent": 0, "errors_injected": 0, "range_requests": 0}
        self.update(latency_s=latency_s, jitter_s=jitter_s, bandwidth_mib_s=bandwidth_mib_s, error_rate=error_rate)

    def update(self, **values: Any) -> dict[str, Any]:
        bad = set(values) - set(self.KEYS)
        if bad:
            raise InputError(f"object store: unknown setting(s) {sorted(bad)}; known: {', '.join(self.KEYS)}")
        for k, v in values.items():
            if v is None and k == "bandwidth_mib_s":
                continue
            top = MAX_SETTING.get(k, math.inf)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= top:  # NaN fails too
                raise InputError(f"object store: {k} must be a number in 0..{top:g}"
                                 + (" (or None: no cap)" if k == "bandwidth_mib_s" else "") + f", got {v!r}")
        with self.lock:
            self.values.update(values)
            return dict(self.values)

    def draw(self) -> tuple[float, float | None, bool]:
        """(delay s, bandwidth bytes/s or None, inject an error?) for one request."""
        with self.lock:
            v = self.values
            delay = v["latency_s"] + (self.rng.uniform(0, v["jitter_s"]) if v["jitter_s"] else 0.0)
            error = self.rng.random() < v["error_rate"]
            bw = v["bandwidth_mib_s"]
            self.stats["requests"] += 1
            self.stats["errors_injected"] += int(error)
        return delay, (bw * 2**20 if bw else None), error


def _byte_range(header: str, size: int) -> tuple[int, int]:
    """(first, last) byte of a single `Range: bytes=a-b` / `bytes=-n` header over a `size`-byte object (last
    clipped to the object); ValueError when the header is not one byte range."""
    unit, spec = header.split("=", 1)
    a, b = spec.split("-", 1)
    if unit.strip() != "bytes" or "," in spec:
        raise ValueError
    if a == "":  # suffix range: the last b bytes
        return max(0, size - int(b)), size - 1
    return int(a), min(int(b), size - 1) if b else size - 1


class _Handler(BaseHTTPRequestHandler):
    """Serves the files under `root` with `faults` applied; `_make_handler` binds both per server."""

    protocol_version = "HTTP/1.1"
    server_version = "playbook-objstore/1"
    root: Path
    faults: _Faults

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _reply(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _bad(self, why: str) -> None:
        """400, and the connection closed: an unparsed body must not be read as the next request."""
        self.close_connection = True
        self._reply(400, why.encode(), {"Connection": "close"})

    def _path(self) -> Path | None:
        key = self.path.split("?", 1)[0].lstrip("/")
        try:
            path = (self.root / key).resolve()
            return path if path.is_relative_to(self.root) and path.is_file() else None
        except (OSError, ValueError):  # a NUL byte, a name too long
            return None

    def _authorized(self) -> bool:
        token = self.faults.token
        given = self.headers.get("Authorization") or ""
        return token is not None and hmac.compare_digest(given.encode(), f"Bearer {token}".encode())

    def do_PUT(self) -> None:  # noqa: N802 (http.server naming)
        if self.path != "/_config":
            return self._reply(405)
        if not self._authorized():
            self.close_connection = True
            return self._reply(403, b"PUT /_config needs the store's token (Authorization: Bearer TOKEN); "
                                    b"set faults on the command line otherwise", {"Connection": "close"})
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return self._bad("bad Content-Length")
        if not 0 <= n <= MAX_CONFIG_BYTES:
            return self._bad(f"Content-Length must be 0..{MAX_CONFIG_BYTES}")
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
            if not isinstance(body, dict):
                raise TypeError("the body must be a JSON object")
            current = self.faults.update(**body)
        except (ValueError, TypeError, InputError, RecursionError) as e:
            return self._bad(str(e)[:300])
        self._reply(200, json.dumps(current).encode(), {"Content-Type": "application/json"})

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        faults = self.faults
        if self.path == "/_stats":
            with faults.lock:
                body = json.dumps({**faults.stats, **faults.values}).encode()
            return self._reply(200, body, {"Content-Type": "application/json"})
        delay, bandwidth, error = faults.draw()
        if delay:
            time.sleep(delay)
        if error:
            return self._reply(503, b"SlowDown", {"Retry-After": "0"})
        if "\x00" in self.path:
            return self._bad("NUL in the URL")
        path = self._path()
        if path is None:
            return self._reply(404, b"NoSuchKey")
        size = path.stat().st_size
        start, end, code = 0, size - 1, 200
        rng = self.headers.get("Range")
        if rng:
            try:
                start, end = _byte_range(rng, size)
            except ValueError:
                return self._bad("bad Range header")
            if start >= size or start > end:
                return self._reply(416, b"", {"Content-Range": f"bytes */{size}"})
            code = 206
        length = end - start + 1
        self.send_response(code)
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        if code == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if self.command == "HEAD":
            return
        with faults.lock:
            faults.stats["range_requests"] += int(code == 206)
        sent = self._send_body(path, start, length, bandwidth)
        with faults.lock:
            faults.stats["bytes_sent"] += sent

    def _send_body(self, path: Path, start: int, length: int, bandwidth: float | None) -> int:
        """Write `length` bytes of `path` from `start`, paced to `bandwidth` (bytes/s, None: unpaced); bytes sent."""
        t0, sent = time.perf_counter(), 0
        with open(path, "rb") as f:
            f.seek(start)
            while sent < length:
                chunk = f.read(min(CHUNK_BYTES, length - sent))
                if not chunk:
                    break
                if bandwidth:  # hold each chunk until the cap allows its last byte to have arrived
                    ahead = (sent + len(chunk)) / bandwidth - (time.perf_counter() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
                self.wfile.write(chunk)
                sent += len(chunk)
        return sent


def _make_handler(root: Path, faults: _Faults) -> type[_Handler]:
    """A handler class serving `root` (resolved) with `faults`, one per server."""
    return type("Handler", (_Handler,), {"root": root.resolve(), "faults": faults})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


class ObjectStore:
    """An HTTP object store serving the files under `root` on 127.0.0.1 (see the module docstring).

    latency_s: added time to first byte, per request (s). jitter_s: plus uniform [0, jitter_s). bandwidth_mib_s:
    per-connection cap (MiB/s, None = unlimited). error_rate: share of requests answered 503. mode: "process"
    (default) or "thread".
    """

    def __init__(self, root: str | os.PathLike, latency_s: float = 0.0, bandwidth_mib_s: float | None = None,
                 jitter_s: float = 0.0, error_rate: float = 0.0, mode: str = "process", seed: int = 0):
        self.root = Path(root)
        if not self.root.is_dir():
            raise InputError(f"{self.root}: object store root is not a directory")
        if mode not in ("process", "thread"):
            raise InputError(f"object store mode must be 'process' or 'thread', not {mode!r}")
        self.mode = mode
        self.settings = {"latency_s": latency_s, "jitter_s": jitter_s, "bandwidth_mib_s": bandwidth_mib_s,
                         "error_rate": error_rate, "seed": seed}
        _Faults(**self.settings)  # validate now, in the caller
        self.token = secrets.token_urlsafe(24)  # for PUT /_config: known to this object and its server only
        self.port: int | None = None
        self._proc = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise PlaybookError("object store is not running: call start() or use it as a context manager")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ObjectStore:
        if self.port is not None:
            return self
        if self.mode == "thread":
            self._server = _Server(("127.0.0.1", 0), _make_handler(self.root, _Faults(**self.settings,
                                                                                      token=self.token)))
            self.port = self._server.server_address[1]
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                            name="objstore", daemon=True)
            self._thread.start()
            return self
        # a fresh interpreter (not multiprocessing): works from notebooks and from scripts without a main guard
        cmd = [sys.executable, "-m", "playbook.labs.workloads.objstore", str(self.root),
               "--seed", str(self.settings["seed"]),
               "--parent-pid", str(os.getpid()),
               "--latency-s", str(self.settings["latency_s"]), "--jitter-s", str(self.settings["jitter_s"]),
               "--error-rate", str(self.settings["error_rate"])]
        if self.settings["bandwidth_mib_s"]:
            cmd += ["--bandwidth-mib-s", str(self.settings["bandwidth_mib_s"])]
        env = dict(os.environ)
        env[TOKEN_ENV] = self.token  # not on the command line, which every local user can read
        package_parent = Path(__file__).resolve().parents[3]  # the folder holding playbook/, for `-m` below
        env["PYTHONPATH"] = os.pathsep.join([str(package_parent), env.get("PYTHONPATH", "")])
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, text=True)
        ready, _, _ = select.select([self._proc.stdout], [], [], 30)
        line = self._proc.stdout.readline() if ready else ""
        if not line.startswith("listening "):
            self.stop()
            raise PlaybookError(f"object store process did not start within 30 s (said {line.strip()!r})")
        self.port = int(line.rsplit(":", 1)[1])
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout:
                self._proc.stdout.close()
            self._proc = None
        self.port = None

    def __enter__(self) -> ObjectStore:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _request(self, method: str, path: str, body: bytes | None = None) -> dict[str, Any]:
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            headers = {"Authorization": f"Bearer {self.token}"}
            if body:
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise InputError(f"object store {method} {path}: HTTP {resp.status} {data.decode(errors='replace')}")
            return json.loads(data)
        finally:
            conn.close()

    def configure(self, **settings: Any) -> dict[str, Any]:
        """Change latency_s / jitter_s / bandwidth_mib_s / error_rate while serving; returns the new settings."""
        _Faults().update(**settings)  # validate here, for a local error message
        return self._request("PUT", "/_config", json.dumps(settings).encode())

    def stats(self) -> dict[str, Any]:
        """Requests served, bytes sent, injected errors, range requests, and the current settings."""
        return self._request("GET", "/_stats")


def _exit_with_parent(pid: int, server: _Server) -> None:
    """Stop serving once `pid` is gone (a notebook kernel that died without stopping its store)."""
    while True:
        time.sleep(1.0)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            server.shutdown()
            return
        except PermissionError:  # alive, owned by someone else
            pass


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m playbook.labs.workloads.objstore",
        description="Serve DIR over HTTP on 127.0.0.1 like an object store, with injected latency, bandwidth "
                    "cap and errors. Prints 'listening http://127.0.0.1:PORT' once ready; Ctrl-C stops it. "
                    f"PUT /_config changes the faults only with the token in ${TOKEN_ENV} (Authorization: "
                    "Bearer TOKEN); without it the faults are the command line's.",
        epilog="example:\n  python -m playbook.labs.workloads.objstore data/shards --latency-s 0.08 --bandwidth-mib-s 32\n"
               "  curl -r 0-99 http://127.0.0.1:PORT/shard-000000.tar.zst | wc -c",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", help="directory whose files are served (keys are paths relative to it)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    p.add_argument("--latency-s", type=float, default=0.0, help="added time to first byte per request, s")
    p.add_argument("--jitter-s", type=float, default=0.0, help="plus uniform random [0, jitter) s")
    p.add_argument("--bandwidth-mib-s", type=float, default=None, help="per-connection cap, MiB/s (default none)")
    p.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered 503 (0-1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the jitter and error draws")
    p.add_argument("--parent-pid", type=int, default=None, help="exit when this process is gone (used by ObjectStore)")
    args = p.parse_args(argv)
    root = Path(args.root)
    if not root.is_dir():
        print(f"error: {root}: not a directory", file=sys.stderr)
        return 2
    try:
        faults = _Faults(args.latency_s, args.jitter_s, args.bandwidth_mib_s, args.error_rate, args.seed,
                         token=os.environ.pop(TOKEN_ENV, None) or None)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    server = _Server(("127.0.0.1", args.port), _make_handler(root, faults))
    if args.parent_pid:
        threading.Thread(target=_exit_with_parent, args=(args.parent_pid, server), daemon=True).start()
    print(f"listening http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sys.exit(main())
