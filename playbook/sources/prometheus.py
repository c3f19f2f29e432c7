"""dcgm-exporter series from a Prometheus HTTP API, into the telemetry table (schema.telemetry_frame).

    from playbook.sources import prometheus
    bundle = prometheus.read("prometheus://prom.example:9090", since_s=6 * 3600, step_s=15,
                             match='Hostname=~"node0[0-7]"')

`prometheus://HOST:PORT[/PREFIX]` means `http://HOST:PORT[/PREFIX]/api/v1/...` (`prometheus+https://` for TLS);
Thanos Query, Mimir / Cortex query frontends and VictoriaMetrics answer the same API. What is asked of the server:
  1. /api/v1/label/__name__/values over the range, to learn which exporter metrics exist (one cheap call; when
     the server refuses it, every known name is asked for);
  2. per metric, /api/v1/query_range of the bare selector `NAME{MATCH}` at `step_s`, start aligned to the step
     (so query frontends can cache the answer), split into chunks of at most MAX_POINTS points per series
     (Prometheus refuses more than 11,000), a few requests in parallel, each retried with back-off on a
     connection error, timeout, 429 or 5xx. Nothing is exported raw: the server downsamples to `step_s`.
Metric names and their columns are readers/dcgm.py's METRICS (dcgm-exporter 2.x/3.x `DCGM_FI_*`, 1.x `dcgm_*`,
nvidia_gpu_exporter's `nvidia_smi_*`), hosts from the `Hostname` label (then hostname, kubernetes_node, node,
instance), the GPU from `gpu` (else the UUID's order), a MIG instance (GPU_I_ID) a device of its own: the same
identity rules, and warning, as the file reader.
DCGM_FI_DEV_XID_ERRORS (the last XID, 0 on a healthy GPU) is asked as `NAME{MATCH} != 0`, so a fleet
without errors sends back nothing, and becomes `xid` events. Several series of one GPU and metric (e.g. differing `pod` or
`instance` labels) are merged, the first value kept, with a counted warning when they disagree.

Each answer is parsed as JSON (msgspec, any whitespace; each series' `values` kept as its JSON text and decoded one
series at a time, so the points never all exist as Python objects), value strings converted by numpy ("NaN", "+Inf"
included; a value that is not a number is a counted bad point), into a (GPU × step) grid per metric.
Bounds, checked before or while reading, each a one-line InputError: at most MAX_STEPS steps per series (asked
before any request), at most `max_bytes` (MAX_RESPONSE_BYTES) per answer counted on the decompressed bytes (a
gzip body is inflated in pieces), every request done within `timeout_s` and the whole command within `deadline_s`
(a watchdog closes a socket that drips past its deadline).
Errors are one line (playbook.core.errors.InputError): server unreachable, a query refused, no exporter series.
A large fleet is screened first (playbook.sources.fleet_screen: per-GPU summaries computed by the server, then
`pull` of the flagged GPUs and a sample only); `playbook diagnose` reads prometheus:// inputs through it.
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import msgspec
import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import dcgm, frames
from playbook.sources import SCHEMES

MAX_POINTS = 11_000  # Prometheus' hard limit on points per series in one range query (web/api/v1 maxPoints)
RETRIES = 3  # attempts after the first; back-off 1, 2, 4 s (a restarting server or a busy frontend recovers)
TIMEOUT_S = 120.0  # per request, all of it: a 512-GPU, 24 h answer takes a few seconds on an idle server
DEADLINE_S = 900.0  # per command (every request and retry of one read): then a one-line error
MAX_RESPONSE_BYTES = 256 << 20  # per answer, after decompression: ~8 M points (a 512-GPU chunk of 11k steps ~170 MB)
MAX_STEPS = 2_000_000  # evaluation steps per series in one read (23 days at 1 s); the grids are GPUs × steps
MAX_CELLS = 200_000_000  # GPUs × steps of one metric's grid (1.6 GB of float64)
READ_CHUNK = 1 << 16  # bytes per socket read
WORKERS = 3  # requests in flight: the server evaluates one while the client parses another
METRIC_NAMES: tuple[str, ...] = (*dcgm.METRICS, dcgm.FB_FREE, dcgm.XID)


def base_url(url: str) -> str:
    """The HTTP base of a prometheus:// URL (http://HOST:PORT[/PREFIX]); InputError when it names no host."""
    text = str(url)
    for scheme in SCHEMES:
        if text.startswith(scheme):
            rest = text[len(scheme):]
            http = "https://" if scheme == "prometheus+https://" else "http://"
            break
    else:
        if not text.startswith(("http://", "https://")):
            raise InputError(f"{url}: not a prometheus:// address (e.g. prometheus://localhost:9090)")
        http, rest = text.split("://", 1)[0] + "://", text.split("://", 1)[1]
    parts = urllib.parse.urlsplit(http + rest)
    if not parts.hostname:
        raise InputError(f"{url}: no host (e.g. prometheus://localhost:9090)")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise InputError(f"{url}: bad port") from None
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def matchers(match: str | None) -> str:
    """Label matchers as given to --match, without surrounding braces ('' for none)."""
    m = (match or "").strip()
    if m.startswith("{") and m.endswith("}"):
        m = m[1:-1].strip()
    return m


def selector(name: str, match: str | None) -> str:
    """The PromQL selector NAME{MATCH}; MATCH is label matchers with or without braces."""
    m = matchers(match)
    return f"{name}{{{m}}}" if m else name


@dataclass
class Window:
    """The time range asked for: start/end in epoch seconds (start aligned to the step), step in seconds."""

    start: float
    end: float
    step: float

    @classmethod
    def last(cls, since_s: float, step_s: float, until: float | None = None) -> Window:
        if not (math.isfinite(step_s) and step_s > 0):
            raise InputError(f"--step must be a positive duration, not {step_s}")
        if not (math.isfinite(since_s) and since_s > 0):
            raise InputError(f"--since must be a positive duration, not {since_s}")
        end = time.time() if until is None else float(until)
        start = math.floor((end - since_s) / step_s) * step_s
        return cls(start, end, float(step_s))

    @property
    def steps(self) -> int:
        return int(math.floor((self.end - self.start) / self.step + 1e-9)) + 1

    def check(self) -> None:
        """InputError when the window holds more than MAX_STEPS steps (asked before any request)."""
        span = self.end - self.start
        if span / self.step + 1 > MAX_STEPS:
            raise InputError(f"--since {_span(span)} at --step {_span(self.step)} is {span / self.step:,.0f} points "
                             f"per series, more than {MAX_STEPS:,}: use --step {math.ceil(span / MAX_STEPS)}s or more, "
                             "or a shorter --since")

    def chunks(self, max_points: int | None = None) -> list[tuple[float, float]]:
        """(start, end) pieces of at most `max_points` (default MAX_POINTS) evaluation steps each, back to back
        on one step grid."""
        max_points = max_points or MAX_POINTS
        out = []
        k, n = 0, self.steps
        while k < n:
            last = min(k + max_points - 1, n - 1)
            out.append((self.start + k * self.step, self.start + last * self.step))
            k = last + 1
        return out


@dataclass
class _Fetch:
    """What came back: per metric, per GPU row, (step index, value) arrays; identities; warnings."""

    window: Window
    samples: dcgm.Samples
    rows: dict[tuple[str, int], int] = field(default_factory=dict)
    points: dict[str, list[tuple[int, np.ndarray, np.ndarray]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    unlabeled: int = 0
    series: int = 0
    bad: int = 0  # value strings that are not numbers
    outside: int = 0  # points with a time off the window asked for
    received: int = 0  # points in the answers (one per series and step)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def row(self, labels: dict[str, str]) -> int | None:
        with self.lock:  # answers are parsed on several threads; row numbers must stay unique
            ident = self.samples.identity(labels)
            if ident is None:
                return None
            return self.rows.setdefault(ident, len(self.rows))


class _Guard:
    """One request's socket, closed by a watchdog timer at the request's deadline."""

    def __init__(self):
        self.sock: socket.socket | None = None
        self.expired = False

    def attach(self, sock: socket.socket) -> None:
        self.sock = sock
        if self.expired:
            self.abort()

    def abort(self) -> None:
        self.expired = True
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)  # a blocked recv returns at once
            except OSError:
                pass


_CURRENT = threading.local()  # .guard: the _Guard of this thread's request in flight


class _Tracked:
    """An http.client connection that hands its socket to this thread's _Guard once connected."""

    def connect(self):
        super().connect()  # type: ignore[misc]
        guard = getattr(_CURRENT, "guard", None)
        if guard is not None:
            guard.attach(self.sock)  # type: ignore[attr-defined]


class _HTTPConnection(_Tracked, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_Tracked, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_HTTPSConnection, req)


class _TooBig(Exception):
    pass


class _Client:
    """urllib against one server: POST form queries, retries, one-line errors naming the server; every request
    done within `timeout_s` and all of them within `deadline_s`, each answer at most `max_bytes` decompressed."""

    def __init__(self, url: str, timeout_s: float = TIMEOUT_S, retries: int = RETRIES,
                 deadline_s: float = DEADLINE_S, max_bytes: int = MAX_RESPONSE_BYTES):
        self.display = url
        self.base = base_url(url)
        self.timeout_s, self.retries, self.max_bytes = timeout_s, retries, int(max_bytes)
        self.deadline_s, self.deadline = deadline_s, time.monotonic() + deadline_s
        self.opener = urllib.request.build_opener(_HTTPHandler, _HTTPSHandler)
        self.requests = 0  # answers received (what a screen and a raw pull are compared by)
        self.bytes_in = 0  # their bodies' bytes, decompressed
        self.lock = threading.Lock()

    def get(self, path: str, params: dict[str, str] | list[tuple[str, str]], post: bool = True) -> bytes:
        """The answer's body; POST (form-encoded) where the endpoint takes it, else GET."""
        query = urllib.parse.urlencode(params)
        last: str = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(2.0 ** (attempt - 1), 8.0, max(0.0, self.deadline - time.monotonic())))
            # gzip accepted but not asked for: compressing 50 MB of JSON costs the server more than sending it over
            # a LAN (measured 0.06 s plain vs 0.25-0.5 s gzip for 92k points on localhost)
            headers = {"User-Agent": "playbook"}
            if post:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            req = urllib.request.Request(self.base + path + ("" if post else "?" + query),
                                         data=query.encode() if post else None, method="POST" if post else "GET",
                                         headers=headers)
            try:
                body = self._fetch(req)
                with self.lock:
                    self.requests += 1
                    self.bytes_in += len(body)
                return body
            except urllib.error.HTTPError as exc:
                detail = _error_text(exc)
                if exc.code == 429 or exc.code >= 500:
                    last = f"HTTP {exc.code}{': ' + detail if detail else ''}"
                    continue
                raise InputError(f"{self.display}: {path} refused (HTTP {exc.code}"
                                 f"{': ' + detail if detail else ''})") from None
            except _TooBig:
                raise InputError(f"{self.display}: {path} answer larger than {self.max_bytes / 2**20:,.0f} MiB "
                                 "(decompressed); ask less (a larger --step, a shorter --since, a narrower --match) "
                                 "or raise --max-response") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, http.client.HTTPException,
                    zlib.error) as exc:
                if time.monotonic() >= self.deadline:
                    raise InputError(f"{self.display}: no complete answer from {path} within the "
                                     f"{_span(self.deadline_s)} deadline (--deadline)") from None
                reason = getattr(exc, "reason", exc)
                last = f"{type(reason).__name__}: {reason}" if not isinstance(reason, str) else reason
                continue
        raise InputError(f"{self.display}: cannot reach the Prometheus API at {self.base} after "
                         f"{self.retries + 1} tries ({last})")

    def _fetch(self, req: urllib.request.Request) -> bytes:
        """One request, read in pieces under the size budget, closed by a watchdog at its deadline."""
        left = min(self.timeout_s, self.deadline - time.monotonic())
        if left <= 0:
            raise TimeoutError("deadline passed")
        guard = _CURRENT.guard = _Guard()
        dog = threading.Timer(left, guard.abort)
        dog.daemon = True
        dog.start()
        try:
            with self.opener.open(req, timeout=left) as resp:
                body = _read_body(resp, self.max_bytes, resp.headers.get("Content-Encoding", ""))
            if guard.expired:
                raise TimeoutError(f"no complete answer within {_span(left)}")
            return body
        finally:
            dog.cancel()
            _CURRENT.guard = None


def _read_body(resp, max_bytes: int, encoding: str) -> bytes:
    """The body, inflated when gzip/deflate, read in READ_CHUNK pieces; _TooBig past `max_bytes` (either count)."""
    inflate = None
    if encoding.strip().lower() in ("gzip", "x-gzip", "deflate"):
        inflate = zlib.decompressobj(wbits=47)  # 32 + 15: gzip or zlib header, detected
    parts: list[bytes] = []
    size = raw = 0
    while True:
        piece = resp.read1(READ_CHUNK) if hasattr(resp, "read1") else resp.read(READ_CHUNK)
        if not piece:
            break
        raw += len(piece)
        if raw > max_bytes:
            raise _TooBig
        if inflate is None:
            parts.append(piece)
            size += len(piece)
            continue
        data = piece
        while data:
            out = inflate.decompress(data, max_bytes + 1 - size)
            size += len(out)
            parts.append(out)
            if size > max_bytes:
                raise _TooBig
            data = inflate.unconsumed_tail
    if inflate is not None:
        parts.append(inflate.flush())
        size += len(parts[-1])
    if size > max_bytes:
        raise _TooBig
    return b"".join(parts)


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        raw = _read_body(exc, 1 << 20, exc.headers.get("Content-Encoding", ""))
        doc = json.loads(raw)
        return str(doc.get("error", ""))[:200]
    except Exception:
        return ""


def _present_names(client: _Client, window: Window, match: str | None) -> list[str] | None:
    """Exporter metric names with data in the window (None when the server cannot say)."""
    pattern = "|".join(sorted({n.split("_")[0] for n in METRIC_NAMES}))  # DCGM, dcgm, nvidia
    m = matchers(match)
    params = [("match[]", f'{{__name__=~"({pattern})_.+"{"," + m if m else ""}}}'),
              ("start", repr(window.start)), ("end", repr(window.end))]
    try:
        doc = json.loads(client.get("/api/v1/label/__name__/values", params, post=False))  # GET only
    except InputError as exc:
        if "refused" in str(exc):
            return None
        raise
    except ValueError:
        return None
    names = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(names, list):
        return None
    return [n for n in METRIC_NAMES if n in set(names)]


class _Series(msgspec.Struct):
    metric: dict[str, str]
    values: msgspec.Raw = msgspec.Raw(b"[]")  # the JSON text of [[epoch s, "value"], ...]: decoded series by series


class _Data(msgspec.Struct):
    result: list[_Series]
    resultType: str = "matrix"  # noqa: N815 - the API's name


T = TypeVar("T")


class Answer(msgspec.Struct, Generic[T]):
    """The HTTP API's envelope: `data` a matrix (query_range, _Data) or a vector (instant query, fleet_screen)."""
    status: str
    data: T | None = None
    error: str | None = None
    warnings: list[str] = []


def _decode(raw: bytes, where: str) -> Answer[_Data]:
    try:
        return msgspec.json.decode(raw, type=Answer[_Data])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InputError(f"{where}: not a Prometheus API answer ({str(exc)[:120]})") from None


_VALUES = msgspec.json.Decoder(list[tuple[float, str]])


def _points(values: list[tuple[float, str]]) -> tuple[np.ndarray, np.ndarray, int]:
    """(times s, values, bad) of one series' points: value strings as Prometheus writes them ("NaN", "+Inf",
    "-1e+03"); `bad` counts strings that are not numbers (NaN in `values`)."""
    if not values:
        return np.zeros(0), np.zeros(0), 0
    t = np.fromiter((p[0] for p in values), dtype=np.float64, count=len(values))
    text = [p[1] for p in values]
    try:
        return t, np.array(text, dtype=np.float64), 0
    except (ValueError, OverflowError):
        v = pd.to_numeric(pd.Series(text, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
        bad = int(np.count_nonzero(np.isnan(v) & ~pd.Series(text).str.strip().str.lower().eq("nan").to_numpy()))
        return t, v, bad


def _query(client: _Client, fetch: _Fetch, name: str, match: str | None, chunk: tuple[float, float]) -> None:
    start, end = chunk
    query = selector(name, match) + (" != 0" if name == dcgm.XID else "")
    params = {"query": query, "start": repr(start), "end": repr(end), "step": repr(fetch.window.step)}
    where = f"{client.display} {name}"
    answer = _decode(client.get("/api/v1/query_range", params), where)
    if answer.status != "success" or answer.data is None:
        raise InputError(f"{where}: query failed ({answer.error or answer.status})")
    for w in answer.warnings:
        fetch.warnings.append(f"{client.display}: server warning: {w}")
    for series in answer.data.result:
        try:  # one series' points as Python objects at a time: the answer's memory stays its JSON text
            values = _VALUES.decode(series.values)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise InputError(f"{where}: not a Prometheus API answer ({str(exc)[:120]})") from None
        t, v, bad = _points(values)
        row = fetch.row(dict(series.metric))
        if row is None:
            fetch.unlabeled += 1
            continue
        k = np.rint((t - fetch.window.start) / fetch.window.step)
        ok = np.isfinite(k) & (k >= 0) & (k < fetch.window.steps)
        with fetch.lock:
            fetch.bad += bad
            fetch.outside += int(np.count_nonzero(~ok))
            fetch.received += len(t)
            fetch.points.setdefault(name, []).append((row, k[ok].astype(np.int32), v[ok]))  # 12 bytes a point
            fetch.series += 1


def read(url: str, since_s: float = 6 * 3600.0, step_s: float = 15.0, match: str | None = None,
         until: float | None = None, workers: int = WORKERS, **limits) -> schema.Bundle:
    """The last `since_s` seconds (ending `until`, epoch s; default now) of exporter telemetry at `step_s`
    resolution from the server at `url`, as a Bundle (telemetry; xid events). `limits`: timeout_s, retries,
    deadline_s, max_bytes of _Client. See the module docstring."""
    window = Window.last(since_s, step_s, until)
    return fetch(url, window, match=match, workers=workers, **limits)


def fetch(url: str, window: Window, match: str | None = None, workers: int = WORKERS, **limits) -> schema.Bundle:
    """Exporter telemetry in `window` from the server at `url` (see `read`)."""
    window.check()
    client = _Client(url, **limits)
    return pull(client, window, match, metric_names(client, window, match), workers)[0]


def metric_names(client: _Client, window: Window, match: str | None) -> list[str]:
    """The exporter metrics to ask for (every known name when the server cannot say); InputError when none."""
    names = _present_names(client, window, match)
    asked = list(METRIC_NAMES) if names is None else names
    if not asked:
        raise InputError(f"{client.display}: no dcgm-exporter series (DCGM_FI_*, dcgm_*, nvidia_smi_*) from "
                         f"{describe(window, match)}")
    return asked


def describe(window: Window, match: str | None) -> str:
    """The window and matchers in words, for messages."""
    return f"{_utc(window.start)} to {_utc(window.end)}" + (f" matching {{{matchers(match)}}}" if matchers(match)
                                                            else "")


def pull(client: _Client, window: Window, match: str | None, asked: list[str], workers: int = WORKERS,
         src: str | None = None) -> tuple[schema.Bundle, int]:
    """Every raw point of the metrics `asked` in `window` (query_range at the step) as a Bundle named `src`
    (default: the URL and matchers), and the number of points the answers held."""
    url = client.display
    src = src or (url if not matchers(match) else f"{url} {{{matchers(match)}}}")
    fetched = _Fetch(window, dcgm.Samples(src, client.base.split("//", 1)[1].split(":")[0]))
    tasks = [(name, chunk) for name in asked for chunk in window.chunks()]
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(tasks)))) as pool:
        jobs = [pool.submit(_query, client, fetched, name, match, chunk) for name, chunk in tasks]
        try:
            for job in jobs:
                job.result()
        except BaseException:
            for job in jobs:  # the first failure is the answer: no more requests
                job.cancel()
            raise
    bundle = _assemble(fetched, src)
    if not len(bundle.telemetry) and not len(bundle.events):
        raise InputError(f"{url}: no dcgm-exporter series with a gpu label from {describe(window, match)}")
    return bundle, fetched.received


def _assemble(f: _Fetch, src: str) -> schema.Bundle:
    """The (GPU × step) grids into a telemetry table sorted by host, gpu, time; XID changes into events."""
    bundle = schema.Bundle(inputs=[src], warnings=list(dict.fromkeys(f.warnings)))
    if f.unlabeled:
        bundle.warnings.append(f"{src}: {f.unlabeled} series without a gpu or UUID label were left out")
    if f.bad:
        bundle.warnings.append(f"{src}: {f.bad} values that are not numbers were read as missing")
    if f.outside:
        bundle.warnings.append(f"{src}: {f.outside} points with a time outside the window asked for were left out")
    if f.samples.mig:
        bundle.warnings.append(dcgm.mig_warning(src))
    if not f.rows:
        return bundle
    keys = sorted(f.rows, key=lambda hg: (hg[0], hg[1]))
    order = np.empty(len(keys), dtype=np.int64)  # fetch row -> sorted row
    for new, key in enumerate(keys):
        order[f.rows[key]] = new
    n_rows, n_steps = len(keys), f.window.steps
    if n_rows * n_steps > MAX_CELLS:
        raise InputError(f"{src}: {n_rows:,} GPUs × {n_steps:,} steps is too large a grid (at most {MAX_CELLS:,} "
                         "cells a metric); use a larger --step, a shorter --since or a narrower --match")
    grids: dict[str, np.ndarray] = {}
    conflicts = 0
    for name in list(f.points):
        grid = np.full((n_rows, n_steps), np.nan)
        for row, k, v in f.points.pop(name):  # freed metric by metric
            line = grid[order[row]]
            current = line[k]
            empty = np.isnan(current)
            conflicts += int(np.count_nonzero(~empty & np.isfinite(v) & (current != v)))
            line[k[empty]] = v[empty]
        if name == dcgm.XID:
            grid[np.isnan(grid)] = 0.0  # asked as `!= 0`: a missing point is a zero (asked as NAME != 0)
        grids[name] = grid
    if conflicts:
        bundle.warnings.append(f"{src}: {conflicts} points where two series of the same GPU and metric disagree "
                               "(labels such as pod or instance differ); the first was kept")
    hosts = np.array([h for h, _ in keys], dtype=object)
    gpus = np.array([g for _, g in keys], dtype=np.int64)
    step_ns = int(round(f.window.step * 1e9))
    start_ns = int(round(f.window.start * 1e9))
    xid = grids.pop(dcgm.XID, None)
    if xid is not None:
        bundle.events = _xid(xid, hosts, gpus, start_ns, step_ns, src)
    if grids:
        present = np.zeros((n_rows, n_steps), dtype=bool)
        for grid in grids.values():
            present |= np.isfinite(grid)
        idx = np.flatnonzero(present.ravel())
        del present
        r, k = np.divmod(idx, n_steps)
        values = {name: grid.ravel()[idx] for name, grid in grids.items()}
        grids.clear()
        columns = {"time": start_ns + k * step_ns, "gpu": gpus[r], **dcgm.metric_columns(values, gpus[r])}
        del values
        bundle.telemetry, warnings = schema.check_physics(
            frames.build_telemetry(columns, hosts[r], src, interval_s=f.window.step), src)
        bundle.warnings += warnings
    return bundle


def _xid(grid: np.ndarray, hosts: np.ndarray, gpus: np.ndarray, start_ns: int, step_ns: int,
         src: str) -> pd.DataFrame:
    """Only the points where a GPU's last-XID gauge changes go to dcgm.xid_events (which names new XIDs)."""
    finite = np.isfinite(grid)
    idx = np.where(finite, np.arange(grid.shape[1])[None, :], -1)
    np.maximum.accumulate(idx, axis=1, out=idx)
    filled = np.where(idx >= 0, np.take_along_axis(grid, np.maximum(idx, 0), axis=1), 0.0)
    prev = np.concatenate([np.zeros((grid.shape[0], 1)), filled[:, :-1]], axis=1)
    r, k = np.nonzero(finite & (grid != prev))
    if not len(r):
        return schema.events_frame()
    long = pd.DataFrame({"time": start_ns + k * step_ns, "host": hosts[r], "gpu": gpus[r], "value": grid[r, k]})
    return dcgm.xid_events(long, src)


def _utc(t: float) -> str:
    return pd.Timestamp(t, unit="s", tz="UTC").strftime("%Y-%m-%d %H:%M:%SZ")


def _span(seconds: float) -> str:
    """A duration as --since/--step take it: 1ms, 15s, 6h, 3650d."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0)):
        if seconds >= size:
            return f"{seconds / size:.4g}{unit}"
    return f"{seconds * 1000:.4g}ms"
