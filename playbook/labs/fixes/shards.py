"""Stream training samples from compressed tar shards in an object store, fast enough to keep the GPU busy.

    from torch.utils.data import DataLoader
    from playbook.labs.fixes.shards import ShardStream, LoaderState

    ds = ShardStream("http://store/bucket/train", prefetch=4, shuffle_buffer=512, seed=0)
    loader = DataLoader(ds, batch_size=64, num_workers=4)
    state = LoaderState()
    for epoch in range(epochs):
        ds.set_epoch(epoch)
        for batch in loader:
            state.update(batch)                   # what this rank has consumed, per worker
            ...
            save({"loader": state.state_dict(), ...})   # with the model checkpoint
    # after a restart: ShardStream(url, ..., resume=saved["loader"]) yields exactly the samples not yet consumed

The bucket holds `index.json` and `*.tar.zst` shards (WebDataset layout; the lab writes them with
playbook.labs.workloads.objstore.write_shards).

Each epoch (seed, epoch) draws one permutation of the shards; consumer c = rank * num_workers + worker takes
every C-th shard of it (C = world_size * num_workers): the consumers' shard sets are disjoint and together cover
the dataset, and each epoch's permutation differs. Inside a consumer the sample order is a seeded function of
(seed, epoch, consumer): a permutation within each shard, then an optional shuffle buffer across shards. Because
that order is computed from the index alone (no data), resuming is exact: a consumer that had yielded k samples
skips the first k of its plan and fetches only the shards it still needs.

Fetching: a thread pool per worker keeps `prefetch` shards in flight (each as `range_parallel` concurrent range
GETs), in the order the plan first needs them, with retries on 5xx and connection errors. Decoding (zstd, tar,
fields) happens in the DataLoader worker process that consumes the shard. `prefetch=0` is the naive loader: one
blocking GET of the whole shard at the moment it is needed (`naive_stream`).

Size `prefetch` with `prefetch_depth(...)` (Little's law): shards in flight = shards consumed per second ×
seconds per fetch (latency + size / per-connection bandwidth), with headroom.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import hashlib
import io
import json
import math
import os
import random
import tarfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torch.utils.data import IterableDataset, get_worker_info

from playbook.core.errors import InputError, WorkloadError

META_KEYS = ("__key__", "__shard__", "__offset__", "__worker__", "__index__", "__epoch__")


MAX_SHARD_RAW_BYTES = 4 << 30  # decompressed size refused beyond this: shards are MBs to a few hundred MB
MAX_SHARD_SAMPLES = MAX_SHARD_RAW_BYTES // 1024  # a sample is at least a 512-byte tar header and one data block
MAX_INDEX_SAMPLES = 50_000_000  # an epoch's (shard, offset) plan is a list: ~100 bytes a sample


# ---------------------------------------------------------------- index and planning

@dataclass(frozen=True)
class ShardInfo:
    """One shard as the index lists it: object name, compressed bytes, sample count, sha256 (or "")."""

    name: str
    bytes: int
    samples: int
    sha256: str = ""


@dataclass
class ShardIndex:
    """The bucket's index: base URL and shards."""

    base_url: str
    shards: list[ShardInfo]

    @property
    def samples(self) -> int:
        return sum(s.samples for s in self.shards)

    def url(self, shard: int) -> str:
        return f"{self.base_url}/{self.shards[shard].name}"

    @classmethod
    def from_dict(cls, base_url: str, index: dict[str, Any], source: str = "index.json") -> ShardIndex:
        if not isinstance(index, dict) or not isinstance(index.get("shards"), list):
            raise InputError(f"{source}: not a shard index (an object with a list of shards)")
        shards = []
        for i, s in enumerate(index["shards"]):
            try:
                info = ShardInfo(str(s["name"]), int(s["bytes"]), int(s["samples"]), str(s.get("sha256") or ""))
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
                raise InputError(f"{source}: shard {i} ({_shard_name(s)}): needs name, bytes and samples "
                                 f"({type(e).__name__}: {e})"[:300]) from None
            if info.bytes < 0 or info.samples < 0 or not info.name:
                raise InputError(f"{source}: shard {i} ({info.name!r}): needs a name, and bytes and samples ≥ 0")
            if info.samples > MAX_SHARD_SAMPLES:
                raise InputError(f"{source}: shard {i} ({info.name!r}) claims {info.samples:,} samples; a shard of at "
                                 f"most {MAX_SHARD_RAW_BYTES >> 30} GiB holds at most {MAX_SHARD_SAMPLES:,} (a sample "
                                 "is at least one 1 KiB tar member)")
            shards.append(info)
        if not shards:
            raise InputError(f"{source}: the index lists no shards")
        total = sum(s.samples for s in shards)
        if total > MAX_INDEX_SAMPLES:
            raise InputError(f"{source}: the index claims {total:,} samples; an epoch's plan is built in memory "
                             f"from it, so at most {MAX_INDEX_SAMPLES:,} are read")
        unsummed = sum(not s.sha256 for s in shards)
        if unsummed:
            import warnings

            warnings.warn(f"{source}: {unsummed} of {len(shards)} shards have no sha256: a corrupt object is "
                          "caught only by its zstd checksum", RuntimeWarning, stacklevel=2)
        return cls(base_url.rstrip("/"), shards)

    @classmethod
    def fetch(cls, base_url: str, timeout_s: float = 30.0, retries: int = 4) -> ShardIndex:
        """GET {base_url}/index.json."""
        url = base_url.rstrip("/") + "/index.json"
        data = http_get(url, timeout_s=timeout_s, retries=retries)
        try:
            index = json.loads(data)
        except ValueError as e:
            raise InputError(f"{url}: not JSON ({e})") from e
        return cls.from_dict(base_url, index, url)


def _shard_name(s: Any) -> str:
    return repr(s.get("name"))[:80] if isinstance(s, dict) else type(s).__name__


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


def assign_shards(n_shards: int, epoch: int, seed: int, consumer: int, consumers: int,
                  shuffle: bool = True) -> list[int]:
    """Shard ids for one consumer (rank * num_workers + worker) out of `consumers`, in this epoch's order.

    One permutation per (seed, epoch), dealt round-robin: disjoint across consumers, covering all shards.
    """
    if not 0 <= consumer < consumers:
        raise WorkloadError(f"consumer {consumer} is not in 0..{consumers - 1}")
    order = np.random.default_rng(_seed(seed, epoch)).permutation(n_shards) if shuffle else np.arange(n_shards)
    return order[consumer::consumers].tolist()


def consumer_plan(index: ShardIndex, epoch: int, seed: int, consumer: int, consumers: int, shuffle: bool = True,
                  shuffle_buffer: int = 0) -> list[tuple[int, int]]:
    """The (shard id, sample offset) a consumer yields this epoch, in order; computed from the index alone."""
    rng = random.Random(_seed(seed, epoch, consumer, 1))
    stream: list[tuple[int, int]] = []
    for sid in assign_shards(len(index.shards), epoch, seed, consumer, consumers, shuffle):
        offsets = list(range(index.shards[sid].samples))
        if shuffle:
            rng.shuffle(offsets)
        stream.extend((sid, o) for o in offsets)
    if not shuffle or shuffle_buffer <= 1:
        return stream
    out, buf = [], []
    for item in stream:  # the usual streaming shuffle buffer: once full, emit a random slot and refill it
        if len(buf) < shuffle_buffer:
            buf.append(item)
            continue
        i = rng.randrange(shuffle_buffer)
        out.append(buf[i])
        buf[i] = item
    rng.shuffle(buf)
    out.extend(buf)
    return out


def prefetch_depth(latency_s: float, bandwidth_bytes_s: float | None, shard_bytes: float, shards_per_s: float,
                   headroom: float = 1.5) -> int:
    """Shards to keep in flight per worker (Little's law): consumption rate × time per fetch × headroom, + 1.

    latency_s: time to first byte; bandwidth_bytes_s: per connection (None = unlimited); shards_per_s: how many
    shards this worker must deliver per second (samples/s it must feed ÷ samples per shard).
    """
    fetch_s = latency_s + (shard_bytes / bandwidth_bytes_s if bandwidth_bytes_s else 0.0)
    return math.ceil(shards_per_s * fetch_s * headroom) + 1  # + the shard being decoded and consumed


# ---------------------------------------------------------------- HTTP

_local = threading.local()


def _connection(host: str, port: int, timeout_s: float):
    import http.client

    conns = getattr(_local, "conns", None)
    if conns is None or getattr(_local, "pid", None) != os.getpid():  # never reuse a parent's socket after fork
        conns = _local.conns = {}
        _local.pid = os.getpid()
    conn = conns.get((host, port))
    if conn is None:
        conn = conns[(host, port)] = http.client.HTTPConnection(host, port, timeout=timeout_s)
    return conn


def _drop_connection(host: str, port: int) -> None:
    conn = getattr(_local, "conns", {}).pop((host, port), None)
    if conn is not None:
        conn.close()


def http_get(url: str, byte_range: tuple[int, int] | None = None, timeout_s: float = 30.0, retries: int = 4,
             backoff_s: float = 0.05) -> bytes:
    """GET `url` (bytes first..last inclusive when `byte_range`), over a keep-alive connection per thread.

    Retries 5xx answers and connection errors with exponential backoff; 4xx and exhausted retries raise
    InputError naming the URL.
    """
    import http.client

    u = urllib.parse.urlsplit(url)
    if u.scheme != "http" or not u.hostname:
        raise InputError(f"{url}: only http://host[:port]/path URLs are supported")
    host, port = u.hostname, u.port or 80
    path = u.path + (f"?{u.query}" if u.query else "")
    headers = {"Range": f"bytes={byte_range[0]}-{byte_range[1]}"} if byte_range else {}
    last = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))
        try:
            conn = _connection(host, port, timeout_s)
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException) as e:
            _drop_connection(host, port)
            last = f"{type(e).__name__}: {e}"
            continue
        if resp.status in (200, 206):
            want = None if byte_range is None else byte_range[1] - byte_range[0] + 1
            if want is not None and resp.status == 206 and len(body) != want:
                last = f"short range: {len(body)} of {want} bytes"
                continue
            if byte_range is not None and resp.status == 200:  # server ignored Range: cut it ourselves
                body = body[byte_range[0]:byte_range[1] + 1]
            return body
        last = f"HTTP {resp.status} {body[:80].decode(errors='replace')}"
        if resp.status < 500 and resp.status != 429:
            raise InputError(f"{url}: {last}")
    raise InputError(f"{url}: failed after {retries + 1} tries ({last})")


# ---------------------------------------------------------------- fetching and decoding

class ShardFetcher:
    """Delivers shard bytes in a fixed order: `prefetch` shards in flight on a thread pool, or, with prefetch=0,
    one blocking whole-object GET per `next()` (the naive loader)."""

    def __init__(self, index: ShardIndex, order: list[int], prefetch: int = 4, range_parallel: int = 1,
                 timeout_s: float = 30.0, retries: int = 4, verify: bool = True):
        self.index, self.order, self.prefetch = index, list(order), max(0, int(prefetch))
        self.range_parallel, self.timeout_s, self.retries, self.verify = max(1, range_parallel), timeout_s, retries, verify
        self._next = 0
        self._inflight: collections.deque = collections.deque()
        self._pool = (cf.ThreadPoolExecutor(self.prefetch * self.range_parallel, thread_name_prefix="shard-get")
                      if self.prefetch else None)
        self.wait_s = 0.0  # time next() spent blocked on the network
        self._top_up()

    def _ranges(self, sid: int) -> list[tuple[int, int] | None]:
        size = self.index.shards[sid].bytes
        n = min(self.range_parallel, max(1, size))
        if n == 1:
            return [None]
        edges = np.linspace(0, size, n + 1).astype(int)
        return [(int(a), int(b) - 1) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]

    def _get(self, sid: int, rng: tuple[int, int] | None) -> bytes:
        return http_get(self.index.url(sid), rng, self.timeout_s, self.retries)

    def _top_up(self) -> None:
        while self._pool is not None and len(self._inflight) < self.prefetch and self._next < len(self.order):
            sid = self.order[self._next]
            self._next += 1
            self._inflight.append((sid, [self._pool.submit(self._get, sid, r) for r in self._ranges(sid)]))

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        return self

    def __next__(self) -> tuple[int, bytes]:
        t0 = time.perf_counter()
        if self._pool is None:
            if self._next >= len(self.order):
                raise StopIteration
            sid = self.order[self._next]
            self._next += 1
            data = self._get(sid, None)
        else:
            if not self._inflight:
                raise StopIteration
            sid, futures = self._inflight.popleft()
            data = b"".join(f.result() for f in futures)
            self._top_up()
        self.wait_s += time.perf_counter() - t0
        info = self.index.shards[sid]
        if len(data) != info.bytes:
            raise InputError(f"{self.index.url(sid)}: got {len(data)} bytes, the index says {info.bytes}")
        if self.verify and info.sha256 and hashlib.sha256(data).hexdigest() != info.sha256:
            raise InputError(f"{self.index.url(sid)}: sha256 differs from the index (corrupt or replaced object)")
        return sid, data

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._inflight.clear()




def decode_shard(data: bytes, source: str = "shard", max_raw_bytes: int = MAX_SHARD_RAW_BYTES
                 ) -> list[dict[str, bytes]]:
    """zstd-compressed tar bytes -> samples, each {"__key__": key, ext: bytes, ...} in tar order.

    Consecutive members sharing the key (the name before the first dot of the basename) form one sample. Every
    zstd frame's content checksum is verified (objstore.write_shards writes one); a frame without one is read
    with a warning (a flipped bit would pass unseen unless the index's sha256 is checked). More than
    `max_raw_bytes` decompressed is refused (a decompression bomb).
    """
    import warnings

    import zstandard

    try:
        if not zstandard.get_frame_parameters(data).has_checksum:
            warnings.warn(f"{source}: zstd frame without a content checksum: corruption is caught only by the "
                          "index's sha256 (rewrite with objstore.write_shards)", RuntimeWarning, stacklevel=2)
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
        chunks, total = [], 0
        while chunk := reader.read(1 << 20):  # by chunks: read(n) would allocate n bytes up front
            total += len(chunk)
            if total > max_raw_bytes:
                raise InputError(f"{source}: decompresses to more than {max_raw_bytes >> 20} MiB; not read")
            chunks.append(chunk)
        raw = b"".join(chunks)
        tar = tarfile.open(fileobj=io.BytesIO(raw), mode="r:")
        members = [(m, tar.extractfile(m)) for m in tar.getmembers() if m.isfile()]
    except (zstandard.ZstdError, tarfile.TarError, EOFError, ValueError, OSError) as e:
        raise InputError(f"{source}: not a zstd-compressed tar shard ({e})") from e
    samples: list[dict[str, bytes]] = []
    for m, f in members:
        base = m.name.rsplit("/", 1)[-1]
        key, _, ext = base.partition(".")
        prefix = m.name[: len(m.name) - len(base)] + key
        if not samples or samples[-1]["__key__"] != prefix:
            samples.append({"__key__": prefix})
        samples[-1][ext] = f.read()
    return samples


def decode_fields(sample: dict[str, Any], source: str = "shard") -> dict[str, Any]:
    """Default field decoding by extension: npy -> numpy array, cls/idx/label -> int, txt -> str, json -> object,
    anything else stays bytes. A field that does not decode is an InputError naming `source`, the sample's key
    and the field."""
    out: dict[str, Any] = {}
    for ext, value in sample.items():
        try:
            out[ext] = _decode_field(ext, value)
        except Exception as e:  # numpy, int(), utf-8 and json raise several types on damaged bytes
            raise InputError(f"{source}: sample {sample.get('__key__', '?')!r} field {ext!r} does not decode "
                             f"({type(e).__name__}: {e})"[:300]) from None
    return out


def _decode_field(ext: str, value: Any) -> Any:
    if ext.startswith("__"):
        return value
    if ext.endswith("npy"):
        return np.load(io.BytesIO(value), allow_pickle=False)
    if ext in ("cls", "idx", "label"):
        return int(value)
    if ext == "txt":
        return value.decode()
    if ext == "json":
        return json.loads(value)
    return value


# ---------------------------------------------------------------- the dataset

def _rank_world(rank: int | None, world_size: int | None) -> tuple[int, int]:
    if rank is not None and world_size is not None:
        return int(rank), int(world_size)
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:  # no distributed support compiled in
        pass
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


@dataclass
class LoaderState:
    """What one rank has consumed: the epoch and, per consumer, how many samples of its plan were used.

    update(batch) after each consumed batch; state_dict() into the checkpoint; pass it as `resume=` to
    ShardStream after a restart (same world size and num_workers: the shard assignment depends on them).
    """

    epoch: int = 0
    consumers: int = 0
    yielded: dict[int, int] = field(default_factory=dict)

    def update(self, batch: dict[str, Any]) -> None:
        """Account for one consumed sample or collated batch (it must keep the __epoch__/__worker__/__index__ keys)."""
        missing = [k for k in ("__epoch__", "__worker__", "__index__") if k not in batch]
        if missing:
            raise InputError(f"LoaderState.update: the batch lacks {missing}; keep ShardStream's meta keys in collate")
        epochs, workers, idx = (_as_list(batch[k]) for k in ("__epoch__", "__worker__", "__index__"))
        for e, c, k in zip(epochs, workers, idx, strict=True):
            if e != self.epoch:  # a new epoch started: forget the old one
                self.epoch, self.yielded = int(e), {}
            self.yielded[int(c)] = max(self.yielded.get(int(c), 0), int(k) + 1)
        if "__consumers__" in batch:
            self.consumers = int(_as_list(batch["__consumers__"])[0])

    @property
    def samples(self) -> int:
        return sum(self.yielded.values())

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "consumers": self.consumers,
                "yielded": {str(k): v for k, v in sorted(self.yielded.items())}}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | LoaderState) -> LoaderState:
        if isinstance(d, LoaderState):
            return d
        try:
            return cls(int(d["epoch"]), int(d.get("consumers", 0)), {int(k): int(v) for k, v in d["yielded"].items()})
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"loader state: expected {{epoch, consumers, yielded}}, got {d!r:.120}") from e


def _as_list(v: Any) -> list:
    if hasattr(v, "tolist"):
        v = v.tolist()
    return list(v) if isinstance(v, (list, tuple)) else [v]


class ShardStream(IterableDataset):
    """An IterableDataset over the shards at `url` (see the module docstring). Works with DataLoader workers.

    decode: sample dict (bytes fields) -> what to yield (default decode_fields); the meta keys __key__,
    __shard__ (shard id), __offset__, __worker__ (consumer id), __index__ (position in the consumer's plan),
    __epoch__ and __consumers__ are added afterwards. shuffle: permute shards per epoch and samples within shards.
    shuffle_buffer: samples in the cross-shard shuffle buffer (0: none). prefetch: shards in flight per worker
    (0: naive blocking fetch). range_parallel: concurrent range GETs per shard. rank/world_size: default from
    torch.distributed, else $RANK/$WORLD_SIZE. resume: a LoaderState (or its dict) to continue from.
    """

    def __init__(self, url: str | None = None, *, index: ShardIndex | None = None,
                 decode: Callable[[dict], dict] | None = decode_fields, shuffle: bool = True, shuffle_buffer: int = 0,
                 seed: int = 0, rank: int | None = None, world_size: int | None = None, prefetch: int = 4,
                 range_parallel: int = 1, timeout_s: float = 30.0, retries: int = 4, verify: bool = True,
                 resume: LoaderState | dict | None = None, epoch: int = 0):
        super().__init__()
        if index is None:
            if not url:
                raise InputError("ShardStream: give the bucket URL or an index")
            index = ShardIndex.fetch(url, timeout_s, retries)
        self.index = index
        self.decode, self.shuffle, self.shuffle_buffer, self.seed = decode, shuffle, int(shuffle_buffer), int(seed)
        self.rank, self.world_size = _rank_world(rank, world_size)
        if not 0 <= self.rank < self.world_size:
            raise WorkloadError(f"rank {self.rank} is not in 0..{self.world_size - 1}")
        if prefetch < 0 or range_parallel < 1:
            raise WorkloadError(f"prefetch must be ≥ 0 and range_parallel ≥ 1 (got {prefetch}, {range_parallel})")
        self.prefetch, self.range_parallel = int(prefetch), int(range_parallel)
        self.timeout_s, self.retries, self.verify = timeout_s, retries, verify
        self.resume = LoaderState.from_dict(resume) if resume is not None else None
        self.epoch = self.resume.epoch if self.resume is not None else int(epoch)
        self.last_fetch_wait_s = 0.0

    def set_epoch(self, epoch: int) -> None:
        """Use the shard permutation of `epoch` for the next iteration (call before each epoch). Workers started
        with DataLoader(persistent_workers=True) keep the epoch they started with: leave it False (the default)."""
        self.epoch = int(epoch)

    def consumer(self) -> tuple[int, int]:
        """(this process's consumer id, number of consumers) inside a DataLoader worker or the main process."""
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info is not None else (0, 1)
        return self.rank * nw + wid, self.world_size * nw

    def plan(self, consumer: int, consumers: int, epoch: int | None = None) -> list[tuple[int, int]]:
        return consumer_plan(self.index, self.epoch if epoch is None else epoch, self.seed, consumer, consumers,
                             self.shuffle, self.shuffle_buffer)

    def position(self, consumer: int, consumers: int, yielded: int) -> tuple[int, str, int]:
        """(epoch, shard name, sample offset) of the next sample a consumer yields after `yielded` samples
        ("" and -1 when its plan is done). Without a shuffle buffer shards are read in plan order, so this is
        also where reading resumes."""
        plan = self.plan(consumer, consumers)
        if yielded >= len(plan):
            return self.epoch, "", -1
        sid, off = plan[yielded]
        return self.epoch, self.index.shards[sid].name, off

    def __iter__(self) -> Iterator[dict[str, Any]]:
        consumer, consumers = self.consumer()
        plan = self.plan(consumer, consumers)
        skip = 0
        if self.resume is not None and self.resume.epoch == self.epoch:
            if self.resume.consumers and self.resume.consumers != consumers:
                raise WorkloadError(f"resume: the state was saved with {self.resume.consumers} consumers "
                                    f"(ranks × workers), this run has {consumers}; use the same world size and "
                                    "num_workers, or restart the epoch")
            skip = self.resume.yielded.get(consumer, 0)
        return self._stream(plan, skip, consumer, consumers)

    def _stream(self, plan: list[tuple[int, int]], skip: int, consumer: int,
                consumers: int) -> Iterator[dict[str, Any]]:
        todo = plan[skip:]
        order = list(dict.fromkeys(sid for sid, _ in todo))  # shards in the order the plan first needs them
        left = collections.Counter(sid for sid, _ in todo)
        fetcher = ShardFetcher(self.index, order, self.prefetch, self.range_parallel, self.timeout_s, self.retries,
                               self.verify)
        decoded: dict[int, list] = {}
        try:
            for i, (sid, off) in enumerate(todo, start=skip):
                while sid not in decoded:
                    got, data = next(fetcher)
                    decoded[got] = decode_shard(data, self.index.url(got))
                    if len(decoded[got]) != self.index.shards[got].samples:
                        raise InputError(f"{self.index.url(got)}: {len(decoded[got])} samples, the index says "
                                         f"{self.index.shards[got].samples}")
                raw = decoded[sid][off]
                decoded[sid][off] = None
                left[sid] -= 1
                if left[sid] == 0:
                    del decoded[sid]
                if self.decode is decode_fields:
                    sample = decode_fields(raw, f"{self.index.url(sid)} (sample {off})")
                else:
                    sample = self.decode(raw) if self.decode else dict(raw)
                sample.update({"__key__": raw["__key__"], "__shard__": sid, "__offset__": off,
                               "__worker__": consumer, "__index__": i, "__epoch__": self.epoch,
                               "__consumers__": consumers})
                yield sample
        finally:
            self.last_fetch_wait_s = fetcher.wait_s
            fetcher.close()

    def consumer_counts(self, num_workers: int = 1) -> list[int]:
        """Samples per consumer this epoch for `num_workers` workers per rank (all ranks): shows imbalance."""
        consumers = self.world_size * num_workers
        return [sum(self.index.shards[s].samples for s in
                    assign_shards(len(self.index.shards), self.epoch, self.seed, c, consumers, self.shuffle))
                for c in range(consumers)]


def naive_stream(url: str | None = None, **kwargs: Any) -> ShardStream:
    """The naive loader for comparison: each shard fetched whole, with one blocking GET, when first needed."""
    kwargs.update(prefetch=0, range_parallel=1)
    return ShardStream(url, **kwargs)
