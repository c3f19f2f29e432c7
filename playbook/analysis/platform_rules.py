"""What managed-training platforms' own profilers state about a run (readers/platform_rules_text.py) → findings for
`playbook diagnose`, by what each statement means:

  SageMaker profiler rules  a rule's IssuesFound says its condition held (smdebug rules/profiler); the rules that name
                            a cause give it: CPUBottleneck and IOBottleneck (their default threshold: the GPU below
                            10% while the CPU is above 90% / I/O wait high for more than 50% of the time) →
                            data_starvation, high, at that 50% floor; BatchSize (CPU, GPU utilization and GPU memory
                            all with p95 below 70%: the rule's own name for the cause) → launch_bound (too little work
                            per step: larger batches), high, no share; GPUMemoryIncrease → memory_pressure and
                            StepOutlier → periodic_stall, moderate (a status, no share). LowGPUUtilization (a GPU's
                            p95 below 70% or p5 below 10%) says the GPU is underused but not why, LoadBalancing that
                            GPUs' loads differ, Dataloader that the loader's workers do not match the CPUs (a
                            configuration, no measured wait): cautions saying what would tell, no cause.
                            NoIssuesFound clears only what that rule checked (a threshold, not a measured run): a
                            caution, never a healthy verdict; model rules (VanishingGradient, Overfit, ...) are not
                            about throughput and are left out.
  DLProf expert systems     "Only X% of the profiled time is spent on GPU kernel operations" is a measured idle share
                            (1 - X); the non-GPU category it names as the highest, with advice naming the data
                            loading, gives data_starvation at that category's share; other advice: a caution with the
                            idle share. "GPU Memory is underutilized ... increasing batch size": a caution.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from playbook.knowledge import ids as cause_ids

_BY_RULE = {"CPUBottleneck": cause_ids.DATA_STARVATION, "IOBottleneck": cause_ids.DATA_STARVATION,
            "BatchSize": cause_ids.LAUNCH_BOUND,
            "GPUMemoryIncrease": cause_ids.MEMORY_PRESSURE, "StepOutlier": cause_ids.PERIODIC_STALL}
_MEANS = {"CPUBottleneck": "the CPUs were busy while the GPU idled: host-side input work holds the GPU",
          "IOBottleneck": "I/O wait was high while the GPU idled: reading the data holds the GPU",
          "BatchSize": "CPU, GPU utilization and GPU memory were all low: too little work per step for the GPU "
                       "(a larger batch, or a smaller instance)",
          "GPUMemoryIncrease": "GPU memory use kept rising during training",
          "StepOutlier": "some step durations were outliers against the run's own"}
# the rule's default threshold: the condition held at least this share of the time (smdebug rules/profiler)
_FLOOR = {"CPUBottleneck": 0.5, "IOBottleneck": 0.5}
_HIGH = {"CPUBottleneck", "IOBottleneck", "BatchSize"}
_LOADING = re.compile(r"data\s?load|input pipeline|data pipeline|dataloader", re.IGNORECASE)


def findings(source: str, part: dict, out: list[dict], warnings: list[str],
             level: Callable[[float], str | None]) -> int:
    """Append the findings of one file's platform statements (`part`: PlatformRuleText.summary()) to `out`, its
    cautions to `warnings`; how many statements the file holds."""
    rules = [r for r in part.get("rules") or [] if r["rule"]]
    _rules(source, rules, out, warnings)
    for d in part.get("dlprof") or []:
        _dlprof(source, d, out, warnings, level)
    return len(rules) + len(part.get("dlprof") or [])


def _rules(source: str, rules: list[dict], out: list[dict], warnings: list[str]) -> None:
    found = {r["rule"] for r in rules if r["status"] == "IssuesFound"}
    named = found & _BY_RULE.keys()
    for rule in sorted(named):
        floor = (f"; with the rule's default threshold, for more than {_FLOOR[rule]:.0%} of the time"
                 if rule in _FLOOR else "")
        out.append({"hypothesis": _BY_RULE[rule], "level": "high" if rule in _HIGH else "moderate",
                    **({"share": _FLOOR[rule]} if rule in _FLOOR else {}), "evidence": (
            f"SageMaker profiler rule {rule} in {source}: IssuesFound — {_MEANS[rule]}{floor} (a rule's status: "
            "the profiler report's rule details give the figures)")})
    if "LowGPUUtilization" in found and not named:
        warnings.append(
            f"SageMaker's LowGPUUtilization rule found issues in {source}: some GPU's utilization had its 95th "
            "percentile below 70% or its 5th below 10% (the rule's defaults) — the GPU was underused, but the rule "
            "does not say why; the report's BatchSize, CPUBottleneck, IOBottleneck and Dataloader rules (or the "
            "system metrics beside the report) tell a too-small batch from a host that cannot feed the GPU")
    if "Dataloader" in found:
        warnings.append(f"SageMaker's Dataloader rule found issues in {source}: the data loader's workers do not "
                        "match the CPUs available (a configuration, not a measured wait); time the loop's wait for "
                        "its next batch to know what it cost")
    if "LoadBalancing" in found:
        warnings.append(f"SageMaker's LoadBalancing rule found issues in {source}: the GPUs' workloads differ; the "
                        "report's per-GPU utilization names the GPUs")
    clear = sorted({r["rule"] for r in rules if r["status"] == "NoIssuesFound"} - found)
    if clear and not found:
        warnings.append(
            f"SageMaker profiler rules in {source} found no issues ({', '.join(clear[:6])}): each rule checks one "
            "threshold, not what the run lost; read the system metrics or step times to call the run healthy")


def _dlprof(source: str, d: dict, out: list[dict], warnings: list[str],
            level: Callable[[float], str | None]) -> None:
    if d.get("gpu_share") is not None:
        idle = 1.0 - float(d["gpu_share"])
        top, share = d.get("top"), d.get("top_share")
        said = (f"DLProf's expert systems in {source}: only {d['gpu_share']:.1%} of the profiled time was spent on "
                f"GPU kernels ({idle:.0%} without one)")
        if top and share is not None and _LOADING.search(d.get("advice") or "") and (lvl := level(float(share))):
            out.append({"hypothesis": cause_ids.DATA_STARVATION, "level": lvl, "share": float(share), "evidence": (
                f"{said}; the highest non-GPU category, \"{top}\", took {share:.1%}, and DLProf's advice names the "
                "data loading: the input pipeline does not keep the GPU fed")})
        elif level(idle):
            warnings.append(f"{said}" + (f"; the highest non-GPU category is \"{top}\" at {share:.1%}" if top and
                                         share is not None else "")
                            + ": profile one step to see what holds the host between kernels")
    if d.get("memory_share") is not None:
        warnings.append(f"DLProf in {source}: only {d['memory_share']:.0%} of GPU memory was used — room for a larger "
                        "batch (more work per kernel and per step)")
