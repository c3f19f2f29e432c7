"""Gradient sync helpers and the overlap model (playbook.labs.fixes.overlap), on a one-rank gloo group in-process."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from playbook.labs.fixes import overlap as O
from playbook.labs.workloads.dist import free_port


@pytest.fixture
def group():
    if dist.is_initialized():
        pytest.skip("a process group already exists in this process")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_allreduce_gradients_divides_and_carries_extras(group):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 1))
    model(torch.randn(5, 4)).sum().backward()
    before = [p.grad.clone() for p in model.parameters()]
    extra = O.allreduce_gradients(model.parameters(), divisor=2.0, extra=[3.0, torch.tensor(5.0)])
    assert extra.tolist() == [3.0, 5.0]  # one rank: summed over ranks = itself
    for b, p in zip(before, model.parameters(), strict=True):
        torch.testing.assert_close(p.grad, b / 2)
    frozen = torch.nn.Linear(2, 2)
    O.allreduce_gradients(frozen.parameters())  # no grads yet: zeros, not an error
    assert all(float(p.grad.abs().sum()) == 0 for p in frozen.parameters())


def test_collective_matmul_chunks_match_serial_and_ddp_wrapper(group):
    x, w = torch.randn(8, 6), torch.randn(6, 5)
    torch.testing.assert_close(O.collective_matmul(x, w, chunks=1), x @ w)
    torch.testing.assert_close(O.collective_matmul(x, w, chunks=4), x @ w)  # one rank: no permutation
    model = O.ddp(torch.nn.Linear(6, 5), bucket_cap_mb=1)
    assert model.gradient_as_bucket_view and model.bucket_bytes_cap == 2**20


def test_bucket_count_and_overlap_model():
    model = torch.nn.Linear(1024, 1024)  # 4 MiB of gradient (+4 KiB bias)
    assert O.gradient_bytes(model) == (1024 * 1024 + 1024) * 4
    assert O.bucket_count(model, 1.0) == 5 and O.bucket_count(model, 100.0) == 2
    m = O.async_tp_model(compute_s=4.0, comm_s=2.0, chunks=4)
    assert m["serial_s"] == 6.0 and m["overlapped_s"] == pytest.approx(4.5)
    assert m["exposed_overlapped_s"] == pytest.approx(0.5) and m["speedup"] == pytest.approx(6 / 4.5)
    assert O.async_tp_model(1.0, 3.0, 1)["overlapped_s"] == 4.0  # one chunk: nothing overlaps
    assert O.exposed_s(1.2, 1.0) == pytest.approx(0.2) and O.exposed_s(0.9, 1.0) == 0.0
