"""playbook.labs.fixes.shards: shard assignment guarantees, exact resume, fetching, decoding, and failure handling."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader

from playbook.core.errors import InputError, WorkloadError
from playbook.labs.fixes import shards
from playbook.labs.workloads.objstore import ObjectStore, write_shards


def _samples(n):
    for i in range(n):
        yield {"__key__": f"k{i:05d}", "npy": np.full((2, 3), i, dtype=np.int32), "cls": i}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("bucket")
    write_shards(_samples(300), root, samples_per_shard=12)  # 25 shards, the last one of 12 too
    with ObjectStore(root, mode="thread") as s:
        yield s


def _index(counts):
    return shards.ShardIndex("http://x", [shards.ShardInfo(f"s{i}", 100, n) for i, n in enumerate(counts)])


# ---------------------------------------------------------------- guarantees from the index alone

@settings(max_examples=60, deadline=None)
@given(n_shards=st.integers(1, 60), ranks=st.integers(1, 4), workers=st.integers(1, 4), epoch=st.integers(0, 50),
       seed=st.integers(0, 2**31))
def test_shards_across_ranks_and_workers_are_disjoint_and_cover(n_shards, ranks, workers, epoch, seed):
    consumers = ranks * workers
    parts = [shards.assign_shards(n_shards, epoch, seed, c, consumers) for c in range(consumers)]
    flat = [s for p in parts for s in p]
    assert sorted(flat) == list(range(n_shards))  # disjoint and covering
    assert max(map(len, parts)) - min(map(len, parts)) <= 1  # balanced to one shard


def test_each_epoch_draws_a_new_permutation_and_seeds_reproduce():
    orders = [[s for c in range(4) for s in shards.assign_shards(40, e, 7, c, 4)] for e in range(5)]
    assert len({tuple(o) for o in orders}) == 5
    assert shards.assign_shards(40, 3, 7, 1, 4) == shards.assign_shards(40, 3, 7, 1, 4)
    assert shards.assign_shards(40, 3, 8, 1, 4) != shards.assign_shards(40, 3, 7, 1, 4)
    assert shards.assign_shards(6, 0, 0, 0, 2, shuffle=False) == [0, 2, 4]
    with pytest.raises(WorkloadError):
        shards.assign_shards(6, 0, 0, 2, 2)


@pytest.mark.parametrize("buffer", [0, 1, 17])
def test_consumer_plans_cover_every_sample_once(buffer):
    index = _index([5, 9, 3, 12, 7, 1, 8])
    plans = [shards.consumer_plan(index, 2, 0, c, 3, shuffle_buffer=buffer) for c in range(3)]
    flat = [x for p in plans for x in p]
    assert sorted(flat) == sorted((s, o) for s, n in enumerate([5, 9, 3, 12, 7, 1, 8]) for o in range(n))
    assert plans == [shards.consumer_plan(index, 2, 0, c, 3, shuffle_buffer=buffer) for c in range(3)]


def test_shuffle_buffer_mixes_shards():
    index = _index([50] * 8)
    plain = shards.consumer_plan(index, 0, 0, 0, 1)
    mixed = shards.consumer_plan(index, 0, 0, 0, 1, shuffle_buffer=100)
    runs = lambda plan: sum(a[0] != b[0] for a, b in zip(plan, plan[1:], strict=False))  # noqa: E731
    assert runs(plain) == 7 and runs(mixed) > 50  # shard changes along the stream


def test_prefetch_depth_is_littles_law():
    # 10 shards/s, each fetch 0.1 s latency + 1 MiB at 10 MiB/s = 0.2 s -> 2 in flight, ×1.5 headroom -> 3, + 1
    assert shards.prefetch_depth(0.1, 10 * 2**20, 2**20, 10.0, headroom=1.5) == 4
    assert shards.prefetch_depth(0.0, None, 2**20, 10.0) == 1
    assert shards.prefetch_depth(1.0, None, 0, 100.0, headroom=1.0) == 101


# ---------------------------------------------------------------- streaming from the store

def _keys(ds, num_workers=0, batch=None):
    if batch is None:
        return [s["__key__"] for s in ds]
    return [k for b in DataLoader(ds, batch_size=batch, num_workers=num_workers) for k in b["__key__"]]


def test_stream_decodes_fields_and_meta(store):
    ds = shards.ShardStream(store.url, shuffle=False, rank=0, world_size=1)
    first = next(iter(ds))
    assert first["__key__"] == "k00000" and first["cls"] == 0 and first["npy"].shape == (2, 3)
    assert (first["__shard__"], first["__offset__"], first["__worker__"], first["__index__"]) == (0, 0, 0, 0)
    assert _keys(ds) == [f"k{i:05d}" for i in range(300)]


@pytest.mark.parametrize("prefetch,range_parallel", [(0, 1), (3, 1), (2, 3)])
def test_naive_and_prefetching_loaders_yield_the_same_epoch(store, prefetch, range_parallel):
    kw = dict(shuffle_buffer=20, seed=3, rank=0, world_size=1, epoch=1)
    ref = _keys(shards.naive_stream(store.url, **kw))
    got = _keys(shards.ShardStream(store.url, prefetch=prefetch, range_parallel=range_parallel, **kw))
    assert got == ref and sorted(got) == [f"k{i:05d}" for i in range(300)]


def test_dataloader_workers_across_ranks_are_disjoint_and_cover(store):
    seen = []
    for rank in range(2):
        ds = shards.ShardStream(store.url, rank=rank, world_size=2, shuffle_buffer=10, epoch=4)
        seen += _keys(ds, num_workers=2, batch=8)
    assert sorted(seen) == [f"k{i:05d}" for i in range(300)]


def test_resume_yields_exactly_the_remaining_samples_with_workers(store):
    kw = dict(shuffle_buffer=30, seed=5, rank=0, world_size=1, epoch=2)
    full = _keys(shards.ShardStream(store.url, **kw), num_workers=2, batch=7)
    state = shards.LoaderState()
    consumed = []
    for i, b in enumerate(DataLoader(shards.ShardStream(store.url, **kw), batch_size=7, num_workers=2)):
        if i == 9:
            break
        state.update(b)
        consumed += b["__key__"]
    saved = json.loads(json.dumps(state.state_dict()))  # survives a checkpoint round trip
    assert saved["epoch"] == 2 and saved["consumers"] == 2 and sum(saved["yielded"].values()) == 63
    rest = _keys(shards.ShardStream(store.url, resume=saved, **{k: v for k, v in kw.items() if k != "epoch"}),
                 num_workers=2, batch=7)
    assert not set(consumed) & set(rest)
    assert Counter(consumed + rest) == Counter(full)


def test_resume_in_one_process_continues_the_same_order(store):
    ds = shards.ShardStream(store.url, shuffle_buffer=16, seed=1, rank=0, world_size=1)
    full = _keys(ds)
    state = shards.LoaderState()
    for s, _ in zip(ds, range(101), strict=False):
        state.update(s)
    resumed = shards.ShardStream(store.url, shuffle_buffer=16, seed=1, rank=0, world_size=1, resume=state)
    assert _keys(resumed) == full[101:]
    epoch, name, offset = ds.position(0, 1, 101)
    assert epoch == 0 and name.endswith(".tar.zst") and offset >= 0
    assert ds.position(0, 1, 10**6) == (0, "", -1)


def test_resume_refuses_a_different_worker_count(store):
    state = shards.LoaderState(epoch=0, consumers=4, yielded={0: 3})
    with pytest.raises(WorkloadError, match="same world size"):
        next(iter(shards.ShardStream(store.url, rank=0, world_size=1, resume=state)))
    with pytest.raises(InputError, match="loader state"):
        shards.LoaderState.from_dict({"yielded": 3})


def test_set_epoch_changes_the_order_but_not_the_set(store):
    ds = shards.ShardStream(store.url, rank=0, world_size=1)
    a = _keys(ds)
    ds.set_epoch(1)
    b = _keys(ds)
    assert a != b and sorted(a) == sorted(b)
    assert sum(ds.consumer_counts(num_workers=3)) == 300


# ---------------------------------------------------------------- failures

def test_retries_transient_errors_then_names_the_url(tmp_path):
    write_shards(_samples(10), tmp_path, samples_per_shard=5)
    with ObjectStore(tmp_path, error_rate=0.5, seed=1, mode="thread") as s:
        ds = shards.ShardStream(s.url, rank=0, world_size=1, retries=8)
        assert len(_keys(ds)) == 10 and s.stats()["errors_injected"] > 0
        s.configure(error_rate=1.0)
        with pytest.raises(InputError, match=r"index\.json: failed after 2 tries \(HTTP 503"):
            shards.ShardIndex.fetch(s.url, retries=1)


def test_corrupt_or_missing_objects_raise_input_errors(tmp_path):
    index = write_shards(_samples(10), tmp_path, samples_per_shard=5)
    name = index["shards"][1]["name"]
    data = bytearray((tmp_path / name).read_bytes())
    data[-5] ^= 0xFF
    (tmp_path / name).write_bytes(bytes(data))
    with ObjectStore(tmp_path, mode="thread") as s:
        with pytest.raises(InputError, match=f"{name}: sha256 differs"):
            _keys(shards.ShardStream(s.url, rank=0, world_size=1, shuffle=False))
        (tmp_path / name).unlink()
        with pytest.raises(InputError, match="HTTP 404"):
            _keys(shards.ShardStream(s.url, rank=0, world_size=1, shuffle=False))
    with pytest.raises(InputError, match="not a zstd-compressed tar"):
        shards.decode_shard(b"garbage", "x.tar.zst")
    with pytest.raises(InputError, match="only http"):
        shards.http_get("ftp://host/x")
    with pytest.raises(InputError, match="no shards"):
        shards.ShardIndex.from_dict("http://x", {"shards": []})


def test_flipped_bit_is_caught_by_the_frame_checksum_alone(tmp_path):
    import io
    import tarfile
    import warnings

    import zstandard

    index = write_shards(_samples(10), tmp_path, samples_per_shard=5)
    data = bytearray((tmp_path / index["shards"][0]["name"]).read_bytes())
    assert zstandard.get_frame_parameters(bytes(data)).has_checksum
    assert len(shards.decode_shard(bytes(data), "s0")) == 5
    data[len(data) // 2] ^= 0x10  # one bit, no sha256 check: the zstd content checksum catches it
    with pytest.raises(InputError, match="s0: not a zstd-compressed tar shard.*checksum"):
        shards.decode_shard(bytes(data), "s0")
    buf = io.BytesIO()  # a shard written elsewhere without a checksum: read, with a warning
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("k0.cls")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"1"))
    plain = zstandard.ZstdCompressor().compress(buf.getvalue())
    with pytest.warns(RuntimeWarning, match="other: zstd frame without a content checksum"):
        assert shards.decode_shard(plain, "other") == [{"__key__": "k0", "cls": b"1"}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match="decompresses to more than"):
            shards.decode_shard(bytes((tmp_path / index["shards"][0]["name"]).read_bytes()), "s0",
                                max_raw_bytes=1 << 10)


def test_index_and_field_errors_name_the_shard_and_record():
    with pytest.raises(InputError, match=r"index.json: shard 1 \('b'\): needs name, bytes and samples"):
        shards.ShardIndex.from_dict("http://x", {"shards": [{"name": "a", "bytes": 1, "samples": 1, "sha256": "0"},
                                                            {"name": "b", "bytes": "many", "samples": 1}]})
    with pytest.raises(InputError, match=r"shard 0 \('a'\): needs a name, and bytes and samples ≥ 0"):
        shards.ShardIndex.from_dict("http://x", {"shards": [{"name": "a", "bytes": -1, "samples": 1}]})
    with pytest.raises(InputError, match="not a shard index"):
        shards.ShardIndex.from_dict("http://x", [1, 2])
    with pytest.warns(RuntimeWarning, match="1 of 1 shards have no sha256"):
        shards.ShardIndex.from_dict("http://x", {"shards": [{"name": "a", "bytes": 1, "samples": 1}]})
    with pytest.raises(InputError, match=r"s3 \(sample 7\): sample 'k7' field 'cls' does not decode \(ValueError"):
        shards.decode_fields({"__key__": "k7", "cls": b"seven"}, "s3 (sample 7)")


def test_index_sample_counts_are_checked_before_any_plan_is_built():
    with pytest.raises(InputError, match=r"shard 0 \('a'\) claims 1,000,000,000 samples; a shard of at most 4 GiB "
                                         r"holds at most 4,194,304"):
        shards.ShardIndex.from_dict("http://x", {"shards": [{"name": "a", "bytes": 1, "samples": 10**9,
                                                             "sha256": "0"}]})
    many = [{"name": f"s{k}", "bytes": 1, "samples": 4_000_000, "sha256": "0"} for k in range(13)]
    with pytest.raises(InputError, match=r"the index claims 52,000,000 samples; .* at most 50,000,000"):
        shards.ShardIndex.from_dict("http://x", {"shards": many})
