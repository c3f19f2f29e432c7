"""Live probes: measure a running training job without disturbing it, and write a run directory.

    from playbook.probes import Recorder

    with Recorder("runs/r1", sample_hz=10) as rec:          # NVML sampler + host probe in background threads
        for step, batch in enumerate(rec.timed(loader)):     # time blocked in next() -> phase "data"
            with rec.timer.step(step, tokens=n_tokens):      # whole-step row (phase "step")
                with rec.timer.phase("fwd"):
                    loss = model(batch)
                ...
            if step % 100 == 0:
                with rec.event_span("checkpoint", step=step):
                    save(...)

Every probe swallows its own errors: a failing probe records NaN or stops with one warning, never raising into
the training loop. torch and pynvml are imported lazily, only when a probe that needs them starts.
"""

from __future__ import annotations

__all__ = ["Recorder", "StepTimer", "NvmlSampler", "HostProbe", "EventLog", "timed"]


def __getattr__(name: str):
    # Lazy: importing playbook.probes must not import torch or pynvml.
    if name == "Recorder":
        from playbook.probes.recorder import Recorder
        return Recorder
    if name == "StepTimer":
        from playbook.probes.steps import StepTimer
        return StepTimer
    if name == "NvmlSampler":
        from playbook.probes.nvml import NvmlSampler
        return NvmlSampler
    if name == "HostProbe":
        from playbook.probes.host import HostProbe
        return HostProbe
    if name == "EventLog":
        from playbook.probes.events import EventLog
        return EventLog
    if name == "timed":
        from playbook.probes.loader import timed
        return timed
    raise AttributeError(name)
