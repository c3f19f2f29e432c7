"""Probes on a real CUDA device and driver (skipped without one): CUDA-event timing, NVTX, real NVML."""

from __future__ import annotations

import time

import pytest

from playbook.readers import rundir

pytestmark = pytest.mark.gpu


def test_cuda_step_timer_measures_device_time_without_sync():
    import torch

    from playbook.probes.step_timer import StepTimer

    timer = StepTimer()
    assert timer.cuda and timer._nvtx_push is not None
    a = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(5):
        with timer.step(i):
            with timer.phase("fwd"):
                for _ in range(10):
                    a = (a @ a).clamp_(-1, 1)
    launch_s = time.perf_counter() - t0
    df = timer.frame()  # synchronises here, not in the loop
    fwd = df[df["phase"] == "fwd"]["duration_s"]
    steps = df[df["phase"] == "step"]["duration_s"]
    assert (fwd > 0).all() and (fwd <= steps.to_numpy() + 1e-4).all()
    # the loop only launched the work: the GPU time it measured exceeds the CPU time the loop took
    assert fwd.sum() > 0.5 * launch_s


def test_real_nvml_sampler_reports_every_gpu():
    import pynvml

    from playbook.probes.nvml import NvmlSampler

    s = NvmlSampler("gpu-node", hz=20.0)
    assert s.start()
    time.sleep(1.5)
    s.stop()
    df = s.to_frame(s.drain())
    pynvml.nvmlInit()
    n = pynvml.nvmlDeviceGetCount()
    pynvml.nvmlShutdown()
    polled = df[df["source"] == "probe:nvml"]
    assert set(polled["gpu"]) == set(range(n))
    assert polled["util_pct"].notna().all() and polled["mem_total_mib"].gt(1000).all()
    assert polled["power_w"].notna().any() and polled["pcie_link_width"].notna().any()


def test_recorder_on_gpu_round_trip(tmp_path):
    import torch

    from playbook.probes import Rates, Recorder

    with Recorder(tmp_path / "run", rates=Rates(sample_hz=20, flush_s=0.5)) as rec:
        x = torch.randn(2048, 2048, device="cuda")
        for i in range(20):
            with rec.timer.step(i):
                with rec.timer.phase("fwd"):
                    x = (x @ x).tanh_()
    b = rundir.read_run(tmp_path / "run")
    assert (b.steps["phase"] == "step").sum() == 20 and len(b.telemetry) > 0
    assert b.meta["parts"][rec.part.name]["step_timer"] == "cuda"
