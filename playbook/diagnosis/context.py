"""What the analyzers of one diagnosis share (`Run`): the inputs, and what earlier analyzers found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from playbook.analysis.gpus import GpuReport
from playbook.analysis.oscillation.fleet import OscillationResult
from playbook.analysis.series import GpuSeries
from playbook.model import schema

DERIVED_SIGNAL = "busy fraction derived from step phases"


# utilization.gpu counts any resident kernel, so a loop that keeps its GPUs fed sits at ≥ 90%; steadily below 80%
# the GPUs idle ≥ 20% of the time without a swing, a drop or a device finding: telemetry alone cannot say why
STEADY_BUSY_MIN = 80.0



@dataclass
class Run:
    """What the analyzers share while one diagnosis runs: the inputs, and what earlier analyzers found."""

    bundle: schema.Bundle
    interval_s: float | None
    warnings: list[str]
    findings: list = field(default_factory=list)  # ranking.Evidence readings of the analyzers' Findings
    healthy: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    osc: OscillationResult | None = None
    osc_derived: bool = False  # `osc` measures the ranks' busy share from step phases (DERIVED_SIGNAL), not GPUs
    gpu_report: GpuReport | None = None
    series: GpuSeries | None = None  # the telemetry split per GPU, built once and shared with the accounting
    steps_summary: dict = field(default_factory=dict)
    summaries: dict[str, dict | None] = field(default_factory=dict)
    busy_power: dict | None = None  # analysis.gpu_limits.busy_power of the job's GPUs, when no SM activity says more
    idle_windows: dict | None = None  # analysis.idle_windows: a steady level that is bursts between empty polls

