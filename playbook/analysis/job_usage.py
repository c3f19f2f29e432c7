"""A Slurm job's GPU usage figures (playbook.readers.slurm_usage: sacct TRESUsageInAve / Max, seff) → a summary for
`playbook diagnose`. No time axis: one figure per job step. The accounting (accounting.gpu_time.job_usage_accounting)
prices the idle share they imply; the figures name no cause, so they add no finding of their own."""

from __future__ import annotations

from typing import Any

from playbook.model.schema import meta_sections
from playbook.readers.slurm_usage import META_PREFIX


def jobs_of(bundle: Any) -> list[dict]:
    """Every job figure in `bundle.meta` ({job, stat, util_pct, mem_mib, gpus, elapsed_s, model}), with its source."""
    return [{**j, "source": src} for src, value in meta_sections(bundle.meta, META_PREFIX)
            for j in value.get("jobs") or [] if isinstance(j, dict)]


def summarize(bundle: Any) -> dict | None:
    """JSON-ready summary: jobs [{job, stat, util_pct, mem_mib, gpus, elapsed_s, model, source}], no findings;
    None without job figures."""
    jobs = jobs_of(bundle)
    return {"jobs": jobs, "findings": [], "warnings": []} if jobs else None
