"""The GPU utilization playbook: probes, readers, diagnosis, labs and reports.

The facade: what a notebook or a script needs, imported lazily (importing this package neither initialises NVML
nor imports pandas or torch):

    from playbook import read_paths, diagnose      # tidy tables from any telemetry the readers know → the cause
    from playbook import Recorder                  # probes that write a run directory from inside train.py
    from playbook import compare_runs, watch       # GOOD vs BAD runs; a live view in JupyterLab
    from playbook.plots import timeline, step_charts, use_headless_backend
    from playbook.labs import data_starvation, run_variants   # the labs' workloads, fixes and helpers

Everything else lives in the folder of its layer (core, model, knowledge, readers, probes, analysis, diagnose, labs,
plots, report, sources, commands): see the README's Layout.
"""

from playbook.core.errors import PlaybookError
from playbook.core.lazy import exports

__version__ = "0.1.0"

EXPORTS = {
    # read, diagnose, compare
    "read_paths": "playbook.readers",
    "read_run": "playbook.readers.rundir",
    "rundir": "playbook.readers.rundir:",
    "schema": "playbook.model.schema:",
    "diagnose": "playbook.diagnosis",
    "compare_runs": "playbook.diagnosis.regression.verdict",
    "gap_closed": "playbook.diagnosis.regression.verdict",
    "injected_verdict": "playbook.diagnosis.regression.verdict",
    "comparison_text": "playbook.diagnosis.regression.text",
    # measure
    "Recorder": "playbook.probes",
    "Rates": "playbook.probes",
    "inductor_cache_dir": "playbook.probes.fingerprint",
    "watch": "playbook.plots.widgets",
    "explore": "playbook.plots.widgets",
    # analyses a notebook shows
    "busy_timeline": "playbook.analysis.step_times",
    "fleet_steps": "playbook.analysis.step_times",
    "periodic_slow_steps": "playbook.analysis.step_times",
    "phase_breakdown": "playbook.analysis.step_times",
    "fold_cycle": "playbook.analysis.oscillation.fleet",
    "period_spectrum": "playbook.analysis.oscillation.fleet",
    "lab_verdict": "playbook.analysis.lab_verdict",
    "paired": "playbook.analysis.lab_verdict",
    "period_text": "playbook.analysis.lab_verdict",
    "variant_summary": "playbook.analysis.lab_verdict",
    "collective_hangs": "playbook.analysis.collective_hangs:",
    "links": "playbook.analysis.links:",
    "nsys_profiles": "playbook.analysis.nsys_profiles:",
    # a notebook's outputs
    "record": "playbook.report.scrapbook",
    "verdict": "playbook.report.scrapbook",
    "as_text": "playbook.report.scrapbook",
    "readable": "playbook.report.tables",
    "hypotheses_view": "playbook.report.triage",
    "triage": "playbook.report.triage:",
    "verdict_rule": "playbook.report.verdict_rule:",
    "repo_root": "playbook.report.catalog",
}

__getattr__, __dir__ = exports(__name__, EXPORTS)
__all__ = ["PlaybookError", "__version__", *EXPORTS]
