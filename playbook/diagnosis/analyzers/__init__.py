"""The analyzers of a diagnosis, one per file, registered here explicitly in this order (later ones may discount
earlier readings they explain): GPU telemetry, memory held without work (held_memory), GPUs held and not used
(unused_gpus), the busy share derived from step phases, events against the drops,
fault events, host probes against the drops, step patterns, then the summaries of traces, stragglers, NCCL, nsys,
flight recorder and links. `run_all(run)` runs them."""

from __future__ import annotations

from playbook.diagnosis.analyzers.base import REGISTRY, Analyzer, register, run_all
from playbook.diagnosis.analyzers.derived_busy import DerivedBusy
from playbook.diagnosis.analyzers.event_coincidence import DipEvents
from playbook.diagnosis.analyzers.fault_events import FaultEvents
from playbook.diagnosis.analyzers.gpu_telemetry import GpuTelemetry
from playbook.diagnosis.analyzers.held_memory import HeldMemory
from playbook.diagnosis.analyzers.host_probe import HostInDips, HostSaturated
from playbook.diagnosis.analyzers.step_patterns import StepPatterns
from playbook.diagnosis.analyzers.summaries import SUMMARIES
from playbook.diagnosis.analyzers.unused_gpus import UnusedGpus

for _analyzer in (GpuTelemetry(), HeldMemory(), UnusedGpus(), DerivedBusy(), DipEvents(), FaultEvents(), HostInDips(), HostSaturated(), StepPatterns(), *SUMMARIES):
    register(_analyzer)

__all__ = ["REGISTRY", "Analyzer", "register", "run_all"]
