"""playbook.labs.fixes.compile: buckets, padding waste, warm-up before the loop, thread-safe compiled calls."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from playbook.core.errors import InputError
from playbook.labs.fixes import compile as fc
from playbook.labs.fixes import shapes


def test_even_buckets():
    assert shapes.even_buckets(512, 4) == [128, 256, 384, 512]
    assert shapes.even_buckets(64, 3, multiple=8) == [24, 48, 64]
    with pytest.raises(InputError):
        shapes.even_buckets(0)


def test_bucket_padder_pads_to_the_bucket_of_the_longest():
    pad = fc.BucketPadder([8, 16, 32])
    samples = [(torch.arange(1, 4), torch.tensor(0)), (torch.arange(1, 11), torch.tensor(1))]
    tokens, labels = pad(samples)
    assert tokens.shape == (2, 16) and labels.tolist() == [0, 1]
    assert tokens[0, 3:].eq(0).all() and tokens[1, :10].tolist() == list(range(1, 11))


def test_signature_covers_shape_dtype_and_grad():
    a = torch.zeros(2, 3)
    assert fc.signature((a,)) != fc.signature((torch.zeros(2, 4),))
    assert fc.signature((a,)) != fc.signature((a.requires_grad_(),))
    assert fc.signature((1,)) == ("int",)


def test_compile_guard_serialises_first_calls_only():
    lock, live, peak = threading.Lock(), [0], {"new": 0, "known": 0}
    phase = ["new"]

    def fn(x):
        with lock:
            live[0] += 1
            peak[phase[0]] = max(peak[phase[0]], live[0])
        time.sleep(0.03)
        with lock:
            live[0] -= 1
        return x

    guard = fc.CompileGuard(fn)
    shapes = [torch.zeros(i + 1) for i in range(4)]
    threads = [threading.Thread(target=guard, args=(s,)) for s in shapes]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert peak["new"] == 1 and guard.stats["compiles_serialised"] == 4
    phase[0] = "known"
    threads = [threading.Thread(target=guard, args=(s,)) for s in shapes]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert peak["known"] >= 2  # known signatures run concurrently


def test_warmup_compiles_every_shape_up_front():
    from playbook.probes import EventLog

    torch._dynamo.reset()
    model = torch.nn.Linear(4, 2)
    compiled = torch.compile(model, backend="eager", dynamic=False)
    times = fc.warmup(compiled, [torch.randn(3, 4), torch.randn(5, 4)], backward=True)
    assert len(times) == 2 and all(t > 0 for t in times)
    log = EventLog()
    assert log.watch_compile()
    for n in (3, 5, 3, 5):
        compiled(torch.randn(n, 4)).sum().backward()
    assert log.compile_stats()["compile"] + log.compile_stats()["recompile"] == 0
    compiled(torch.randn(7, 4))  # a shape the warm-up did not cover does compile
    assert log.compile_stats()["recompile"] >= 1
    log.close()
    assert fc.recompile_limit() >= 1
    x = fc.mark_dynamic(torch.zeros(2, 3), 1)
    assert x.shape == (2, 3)


def test_serving_threads_adopt_the_warmup_threads_count():
    mine = torch.get_num_threads()
    other = 2 if mine == 1 else 1
    adopt = fc.same_threads_as_warmup()
    seen = {}

    def serve():
        seen["before"] = torch.get_num_threads()
        adopt()
        seen["after"] = torch.get_num_threads()

    try:
        setter = threading.Thread(target=torch.set_num_threads, args=(other,))
        setter.start()
        setter.join()
        t = threading.Thread(target=serve)
        t.start()
        t.join()
    finally:
        torch.set_num_threads(mine)
    assert seen == {"before": other, "after": mine}
