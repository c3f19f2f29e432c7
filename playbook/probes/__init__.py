"""Live probes: measure a running training job without disturbing it, and write a run directory.

    from playbook.probes import Rates, Recorder

    with Recorder("runs/r1", rates=Rates(sample_hz=10)) as rec:  # NVML sampler + host probe in background threads
        for step, batch in enumerate(rec.timed(loader)):     # time blocked in next() -> phase "data"
            with rec.timer.step(step, tokens=n_tokens):      # whole-step row (phase "step")
                with rec.timer.phase("fwd"):
                    loss = model(batch)
                ...
            if step % 100 == 0:
                with rec.event_span("checkpoint", step=step):
                    save(...)
    bundle = rec.bundle()                                     # = playbook.readers.rundir.read_run("runs/r1")

Every probe swallows its own errors: a failing probe records NaN or stops with one warning, never raising into
the training loop. torch and pynvml are imported lazily, only when a probe that needs them starts.

More of the API (all stable; see each module):
    Recorder(run_dir=None, rank=None, host=None, *, rates=Rates(), nvml=True, host_probe=True, interconnect=True,
             cuda=None, nvtx=True, gc=True, compile=True, command=None, meta=None, hooks=Hooks())
        Rates(sample_hz=10.0, host_hz=None, flush_s=30.0): sampling (Hz) and flush (s) rates, checked in one line.
        Hooks(nvml_module=None, sysfs_root="/sys", gpus=None, pid=None, sample_here=None): stand-ins for tests.
        run_dir None -> $PLAYBOOK_RUN_DIR; rank None -> $RANK. GPUs/host/IB are sampled only by LOCAL_RANK 0 and
        not at all under `playbook record` (which sets PLAYBOOK_SAMPLER=external and samples itself).
        rec.step(i, tokens) / rec.phase(name)   same as rec.timer.step / rec.timer.phase
        rec.event(kind, step=None, duration_s=None, detail="")     an instantaneous or pre-timed event
        rec.profiler(every=..., wait=1, warmup=1, active=3, trigger_util_pct=...)  profiler windows (traces/)
        rec.part                               this writer's folder RUN_DIR/<host>-rank<R>
        rec.sampler / rec.host_probe / rec.ib  the running probes (None when not running here)
    StepTimer(host=None, rank=None, cuda=None, nvtx=True, keep=True)
        .step(i, tokens=None), .phase(name), .frame() -> steps table, .busy_fraction(last=8),
        .on_step_end(fn), .current_step; CUDA events resolved without device sync; NVTX ranges named like phases.
    timed(iterable, timer, phase="data")       time blocked in next() as `phase` of the current/next step.
    EventLog(host=None, rank=None, step_of=None, gc_min_s=0.002)
        .event(...), .event_span(...), .watch_gc(), .watch_compile(), .frame() -> events table
        kinds written by the probes: "gc" (detail "generation G; ..."), "compile", "recompile" (detail
        "compile_id F/N; reason: <guard failure>"), plus whatever the caller passes (checkpoint, eval, ...).
        Other kinds the probes write: "gpu_lost" (detail "gpu G: ..."), "profiler" (a trace export's stall),
        "start" / "exit" (detail "exit status N", by `playbook record`).
    NvmlSampler(host, hz=10.0, nvml=None, gpus=None)   GPU telemetry rows (schema.telemetry_frame); rows from
        nvmlDeviceGetSamples have source "probe:nvml-samples" and only util_pct; polled rows "probe:nvml".
    HostProbe(host, hz=2.0, pid=None)           schema.host_frame rows.
    IbProbe(host, hz=1.0, root="/sys")          InfiniBand port counters as rates -> ib.parquet (interconnect.py).
    ProfilerWindows(out_dir, ...)               torch.profiler schedule windows, on demand or on a utilization drop;
        traces RUN_DIR/<part>/traces/<host>-rank<R>.step<a>-<b>.<trigger>.pt.trace.json.gz with top-level keys
        playbook_first_step / playbook_trigger / playbook_rank / playbook_host.
    fingerprint(command=None)                  environment dict stored as meta.json["env"] (fingerprint.py).
    fake_nvml.scenario(name, ...)               a fake pynvml module for tests (fake_nvml.py).
"""

from __future__ import annotations

__all__ = ["Recorder", "Rates", "Hooks", "StepTimer", "NvmlSampler", "HostProbe", "EventLog", "timed", "IbProbe",
           "ProfilerWindows", "fingerprint"]

_WHERE = {
    "Recorder": "recorder",
    "Rates": "recorder",
    "Hooks": "recorder",
    "StepTimer": "step_timer",
    "NvmlSampler": "nvml",
    "HostProbe": "host",
    "EventLog": "event_log",
    "timed": "loader",
    "IbProbe": "interconnect",
    "ProfilerWindows": "profiler",
    "fingerprint": "fingerprint",
}


def __getattr__(name: str):
    # Lazy: importing playbook.probes must not import torch or pynvml.
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"playbook.probes.{_WHERE[name]}"), name)
    raise AttributeError(name)
