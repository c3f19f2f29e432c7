"""Lab 11: the H2D-copy workload's knobs (CPU fallback; CUDA paths marked gpu) and the notebook's verdict."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from nbrun import run_notebook

from playbook.analysis.lab_verdict import variant_summary
from playbook.core.errors import WorkloadError
from playbook.labs.workloads import h2d_copies as lab

SMALL = dict(steps=6, warmup_steps=1, batch_size=8, image_size=16, hidden=32, sample_hz=2.0)
CUDA = torch.cuda.is_available()


def test_every_variant_trains_and_records_its_copy_phase(tmp_path):
    for v in ("no_fault", "fault", "pinned", "fix"):
        r = lab.run(tmp_path / v, v, **SMALL)
        assert r.steps == 6 and "h2d" in r.phase_s and r.extra["memory"] == lab.VARIANTS[v]["memory"]
        assert r.extra["batch_mib"] == pytest.approx(8 * 3 * 16 * 16 * 4 / 2**20 + 8 * 8 / 2**20)
        assert r.extra["bank_mib"] == pytest.approx(4 * r.extra["batch_mib"])
    assert lab.needed_gib_s(r) > 0
    with pytest.raises(WorkloadError):
        lab.run(tmp_path / "x", "fault", **{**SMALL, "steps": 0})


def test_verdict_on_cpu_is_inconclusive_by_construction():
    runs = pd.DataFrame({"variant": ["no_fault", "fault", "fix"] * 3, "repeat": [0, 0, 0, 1, 1, 1, 2, 2, 2],
                         "throughput": [100.0, 60.0, 99.0, 101.0, 61.0, 100.0, 100.5, 60.5, 99.5]})
    summary = variant_summary(runs)
    cpu = lab.verdict(summary, cuda=False)
    assert cpu.status == "inconclusive" and "no CUDA device" in cpu.summary
    assert lab.verdict(summary, cuda=True).status == "confirmed"


def test_host_bandwidth_measures_what_the_machine_has():
    bw = lab.host_bandwidth(4.0, repeats=3)
    assert bw["host_fresh_gib_s"] > 0 and bw["host_reused_gib_s"] > 0
    assert math.isnan(bw["h2d_pinned_gib_s"]) == (not CUDA)


@pytest.mark.gpu
def test_on_cuda_the_prefetcher_hides_pageable_copies(tmp_path):
    knobs = dict(steps=30, warmup_steps=3, sample_hz=2.0)
    res = {v: lab.run(tmp_path / v, v, **knobs) for v in ("no_fault", "fault", "fix")}
    assert res["fault"].phase_share["h2d"] > res["fix"].phase_share.get("h2d", 0.0)
    assert res["fix"].throughput > res["fault"].throughput
    assert res["fault"].extra["copy_gib_s"] > 0


def test_notebook_records_an_honest_verdict(tmp_path):
    rec = run_notebook("11_h2d_copies.ipynb", tmp_path, steps=6, repeats=2, bandwidth_mib=4.0,
                       out_dir=str(tmp_path / "runs"))
    assert rec["cuda"] == CUDA
    assert rec["verdict"]["status"] == ("confirmed" if CUDA else "inconclusive"), rec["verdict"]
    assert rec["bandwidth"]["host_fresh_gib_s"] > 0 and rec["loop_needs_gib_s"] > 0
